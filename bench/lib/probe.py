#!/usr/bin/python3
"""Time to the first answered request.

  probe.py wait PORT PATH --pid PID [--timeout S]
      Poll until GET PATH answers 200; exit 1 if the process dies or time
      runs out. Used to know a server is ready before measuring it.

  probe.py startup PORT PATH --runs N [--cpu C] [--timeout S] -- CMD ...
      N times: start CMD (pinned to CPU C), poll GET PATH as fast as the
      loop goes, and record the wall time from just before the exec to the
      first 200; then stop the process. Prints one line:
      "startup_ms=M1,M2,..." (milliseconds, in run order)."""

import argparse
import os
import signal
import subprocess
import sys
import time

from http_client import connect, exchange, get_request

RETRY_S = 0.0005


def try_get(port, path):
    """The status of one GET, or None when nothing answers yet."""
    try:
        with connect(port, timeout=2) as sock:
            return exchange(sock, get_request(path, port), 1, timeout=2)[0].status
    except (OSError, ValueError):
        return None


def alive(pid):
    try:
        finished, _ = os.waitpid(pid, os.WNOHANG)
        if finished:
            return False
    except ChildProcessError:
        pass  # not our child: fall back to a signal probe
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0): look at its state.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def poll(port, path, pid, timeout):
    """Return once GET `path` answers 200; raise if `pid` dies or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = try_get(port, path)
        if status == 200:
            return
        if status is not None:
            raise RuntimeError(f"GET {path} on 127.0.0.1:{port} answered {status}, want 200")
        if pid is not None and not alive(pid):
            raise RuntimeError(f"process {pid} exited before answering")
        time.sleep(RETRY_S)
    raise RuntimeError(f"no answer from 127.0.0.1:{port}{path} within {timeout} s")


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def startup(args):
    samples = []
    cpu = {args.cpu} if args.cpu is not None else None
    for _ in range(args.runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            args.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpu)) if cpu else None)
        try:
            poll(args.port, args.path, proc.pid, args.timeout)
            samples.append((time.perf_counter() - t0) * 1000)
        finally:
            stop(proc)
    print("startup_ms=" + ",".join(f"{ms:.2f}" for ms in samples))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    w = sub.add_parser("wait")
    w.add_argument("port", type=int)
    w.add_argument("path")
    w.add_argument("--pid", type=int)
    w.add_argument("--timeout", type=float, default=30)
    s = sub.add_parser("startup")
    s.add_argument("port", type=int)
    s.add_argument("path")
    s.add_argument("--runs", type=int, default=5)
    s.add_argument("--cpu", type=int)
    s.add_argument("--timeout", type=float, default=30)
    s.add_argument("cmd", nargs="+")
    args = parser.parse_args()
    try:
        if args.mode == "wait":
            poll(args.port, args.path, args.pid, args.timeout)
        else:
            startup(args)
    except RuntimeError as e:
        print(f"probe: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
