#!/usr/bin/env python3
"""The soak with faults, run by bench/soak/run (see bench/README.md).

    soak.py MOONPORT ROOT WORK REDIS_PORT MINUTES RATE > raw.json

Starts an upstream moonport (scripts/hello.lua, one worker) and the soaked
moonport (bench/soak/app.lua over a copy of scripts/api.lua, 2 workers,
access and error logs, --stats) in WORK, then for MINUTES keeps on it:

- wrk, 16 connections at about RATE requests per second in all
  (bench/soak/load.lua), in back-to-back runs of 10 s, each run's requests
  and errors recorded;
- the mixed clients of clients.py (slow, pipelined, uploads, dropped
  connections, the upstream and Redis routes);

and these faults, from the start of the load:

- every 30 s (at 30, 60, ...) worker 1 is SIGKILLed: stopped first
  (SIGSTOP) so that `ss` can list, unchanged, the connections it holds and
  the ones waiting in its accept queue, then killed; then the master's
  replacement is waited for. Worker 2 is never killed: its memory and
  open files over the whole run are what shows a leak in a worker;
- every 20 s (at 25, 45, ...) the app file is saved, a new file renamed
  over it (as editors do): identical every other time, else with the next
  SAVE number; the reload is waited for in the stats endpoint, and a new
  number in GET /version on every worker;
- every 60 s (at 75, 135, ...) the access and error logs are renamed, as
  logrotate does, and the master gets SIGUSR1; then no process may still
  hold a renamed file, and the renamed access log is removed;
- every 120 s (at 100, 220, ...) the upstream is stopped (SIGTERM, which
  drains it) and started again on its port.

Every 10 s it records the RSS and open files of every moonport process
(/proc/PID), and the connections on the port by state and the pooled
connections to the upstream and to Redis (ss). At the end: every worker
must answer, the last save be served, the master reload on SIGHUP, each
process's open files be read again with the load stopped, and the master
stop with status 0 on SIGTERM. Prints everything as JSON for report.py.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from clients import Mix  # noqa: E402

WRK_CONNECTIONS = 16
WRK_RUN_S = 10
SAMPLE_S = 10
KILL_EVERY, KILL_AT = 30, 30
SAVE_EVERY, SAVE_AT = 20, 25
USR1_EVERY, USR1_AT = 60, 75
UPSTREAM_EVERY, UPSTREAM_AT = 120, 100
QUIET_S = 4  # longer than the app's 2 s pool idle time


def log(msg):
    print(f"soak: {msg}", file=sys.stderr, flush=True)


# --- processes -------------------------------------------------------------

def start_moonport(cmd, env, out_path):
    """Starts a moonport command line; returns (Popen, port), or (None, why)."""
    out = open(out_path, "a")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=out, text=True)
    line = proc.stdout.readline()
    if "listening on http://" not in line:
        proc.kill()
        proc.wait()
        out.close()
        with open(out_path) as f:
            return None, line + f.read()[-2000:]
    port = int(line.split("listening on http://")[1].split(" ")[0].rsplit(":", 1)[1])
    # The rest of stdout (the access log goes to a file) is drained.
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    return proc, port


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def worker_pids(master):
    """{worker id: pid} of a master's workers (their MOONPORT_WORKER)."""
    out = {}
    for pid in children(master):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        for kv in env:
            if kv.startswith(b"MOONPORT_WORKER="):
                out[int(kv.split(b"=", 1)[1].split(b":")[0])] = pid
    return out


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def fd_links(pid):
    """{fd: link} of a process, or None when it is gone."""
    out = {}
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                out[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                pass
    except OSError:
        return None
    return out


def fd_kinds(links):
    """Open files by kind: socket, pipe, anon (eventfd, epoll, inotify),
    file."""
    kinds = {"socket": 0, "pipe": 0, "anon": 0, "file": 0}
    for link in links.values():
        if link.startswith("socket:"):
            kinds["socket"] += 1
        elif link.startswith("pipe:"):
            kinds["pipe"] += 1
        elif link.startswith("anon_inode:"):
            kinds["anon"] += 1
        else:
            kinds["file"] += 1
    return kinds


SS_LINE = re.compile(r"^(\S+)\s+\d+\s+\d+\s+(\S+):(\d+)\s+(\S+):(\d+|\*)\s*(.*)$")


def ss(ports):
    """The TCP sockets from or to any of `ports`: (state, local port, peer
    port, inode). A connection waiting in an accept queue has inode 0 (no
    process holds it yet). The filter runs in the kernel, and sockets are
    matched to processes by inode (/proc/PID/fd) rather than with ss -p,
    which reads every process's files: on a busy machine that takes long
    enough to matter while a worker is held stopped."""
    expr = " or ".join(f"sport = :{p} or dport = :{p}" for p in ports)
    out = subprocess.run(["ss", "-tanHe", f"( {expr} )"], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        m = SS_LINE.match(line.strip())
        if not m:
            continue
        peer = int(m.group(5)) if m.group(5) != "*" else 0
        ino = re.search(r"\bino:(\d+)", m.group(6))
        rows.append((m.group(1), int(m.group(3)), peer, int(ino.group(1)) if ino else 0))
    return rows


def socket_inodes(pid):
    """The inodes of the sockets process `pid` holds."""
    return {int(link[8:-1]) for link in (fd_links(pid) or {}).values()
            if link.startswith("socket:[")}


def http_get(port, path, timeout=3):
    """GET on a fresh connection: (status, body) or (None, error)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return None, str(e).encode()


def stats(port):
    status, body = http_get(port, "/__moonport/stats")
    if status != 200:
        return None
    return json.loads(body)


def wait_until(pred, timeout, step=0.05):
    """pred() until true or timeout; returns the seconds taken, or None."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        if pred():
            return time.time() - t0
        time.sleep(step)
    return None


# --- the soak ---------------------------------------------------------------

class Soak:
    def __init__(self, binary, root, work, redis_port, minutes, rate):
        self.binary, self.root, self.work = binary, root, work
        self.redis_port, self.minutes, self.rate = redis_port, minutes, rate
        self.app = os.path.join(work, "app", "app.lua")
        self.access = os.path.join(work, "logs", "access.log")
        self.errors = os.path.join(work, "logs", "error.log")
        self.events = {"kill": [], "save": [], "usr1": [], "upstream": []}
        self.samples = []
        self.wrk_runs = []
        self.wrk_pid = None
        self.error_log_text = []
        self.access_lines = 0
        self.save_n = 0
        self.version = 0
        self.problems = []  # things that went wrong outside requests

    # processes

    def start(self):
        os.makedirs(os.path.dirname(self.app), exist_ok=True)
        shutil.copy(os.path.join(self.root, "scripts", "api.lua"),
                    os.path.join(os.path.dirname(self.app), "api.lua"))
        with open(os.path.join(HERE, "app.lua")) as f:
            self.template = f.read()
        with open(self.app, "w") as f:
            f.write(self.template)
        self.start_upstream(0)
        env = dict(os.environ, UPSTREAM_PORT=str(self.up_port), REDIS_PORT=str(self.redis_port))
        self.proc, self.port = start_moonport(
            [self.binary, "--listen", "127.0.0.1:0", "--workers", "2", "--stats",
             "--access-log", self.access, "--error-log", self.errors, self.app],
            env, os.path.join(self.work, "logs", "moonport.out"))
        if self.proc is None:
            sys.exit(f"soak: moonport did not start: {self.port}")
        self.master = self.proc.pid

    def start_upstream(self, port):
        for _ in range(50):
            proc, got = start_moonport(
                [self.binary, "--listen", f"127.0.0.1:{port}",
                 os.path.join(self.root, "scripts", "hello.lua")],
                dict(os.environ), os.path.join(self.work, "logs", "upstream.out"))
            if proc:
                self.up, self.up_port = proc, got
                return
            time.sleep(0.1)
        sys.exit(f"soak: the upstream did not start: {got}")

    def roles(self):
        """{role: pid} of every moonport process now."""
        out = {"master": self.master, "upstream": self.up.pid}
        for wid, pid in worker_pids(self.master).items():
            out[f"worker{wid}"] = pid
        for wid, pid in worker_pids(self.up.pid).items():
            out["upstream-worker"] = pid
        return out

    # records

    def sample(self, t):
        rows = ss((self.port, self.up_port, self.redis_port))
        conns = {}
        pool_up = pool_redis = 0
        for state, local, peer, _ in rows:
            if local == self.port and state != "LISTEN":
                conns[state] = conns.get(state, 0) + 1
            if state == "ESTAB" and peer == self.up_port and local != self.up_port:
                pool_up += 1
            if state == "ESTAB" and peer == self.redis_port:
                pool_redis += 1
        procs = {}
        held = []
        for role, pid in self.roles().items():
            links = fd_links(pid)
            if links is None:
                continue
            procs[role] = {"pid": pid, "rss_kb": rss_kb(pid), "fds": len(links),
                           **fd_kinds(links)}
            held += [f"{role} fd {fd}: {link}" for fd, link in links.items()
                     if ".rotated" in link
                     or (link.endswith("(deleted)") and not link.startswith("/memfd:"))]
        self.samples.append({"t": t, "procs": procs, "conns": conns, "pool_upstream": pool_up,
                             "pool_redis": pool_redis, "held": held})

    def quiet(self):
        """Open files of the long-lived processes, and the connections on
        the port other than TIME-WAIT, with nothing going on."""
        time.sleep(QUIET_S)
        out = {"open_connections": [
            f"{state} {local}<-{peer}" for state, local, peer, _ in ss((self.port,))
            if local == self.port and state not in ("LISTEN", "TIME-WAIT")]}
        for role in ("master", "worker2"):
            pid = self.roles().get(role)
            links = fd_links(pid) if pid else None
            if links is not None:
                out[role] = {"pid": pid, "fds": len(links), **fd_kinds(links),
                             "links": sorted(f"{fd} {l}" for fd, l in links.items())}
        return out

    # load

    def wrk_loop(self, deadline):
        script = os.path.join(HERE, "load.lua")
        pause_ms = max(0, round(WRK_CONNECTIONS * 1000 / self.rate))
        while True:
            left = int(deadline - time.time())
            if left < 1:
                return
            d = min(WRK_RUN_S, left)
            start = time.time()
            p = subprocess.Popen(
                ["wrk", "-t1", f"-c{WRK_CONNECTIONS}", f"-d{d}s", "--timeout", "5s", "-s", script,
                 f"http://127.0.0.1:{self.port}/", "--", str(pause_ms)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.wrk_pid = p.pid
            self.wrk_proc = p
            out = p.communicate()[0]
            line = next((l for l in out.splitlines() if l.startswith("RESULT ")), None)
            if line is None:
                self.problems.append(f"wrk printed no result: {out[-300:]}")
                continue
            kv = {k: int(v) for k, v in (p.split("=") for p in line.split()[1:])}
            self.wrk_runs.append({"start": start, "end": time.time(), **kv})

    # faults

    def kill_worker(self):
        pid = worker_pids(self.master).get(1)
        if pid is None:
            self.problems.append("no worker 1 to kill")
            return
        t_stop = time.time()
        os.kill(pid, signal.SIGSTOP)
        held = socket_inodes(pid)
        rows = ss((self.port,))
        # Read before the kill: wrk and the clients close their sockets as
        # soon as the resets arrive.
        wrk_socks = socket_inodes(self.wrk_pid) if self.wrk_pid else set()
        mix_socks = socket_inodes(os.getpid())
        t_kill = time.time()
        os.kill(pid, signal.SIGKILL)
        # The killed worker's connections: those it holds, and those waiting
        # in an accept queue (no inode yet; the other worker takes its own
        # at once, so those still waiting are, nearly all, the stopped
        # one's). By the client's port, and whose client they are.
        victim_ports = set()
        for state, local, peer, ino in rows:
            if local != self.port or state in ("LISTEN", "TIME-WAIT"):
                continue
            if ino in held or (ino == 0 and state == "ESTAB"):
                victim_ports.add(peer)
        owner_of = {}
        for state, local, peer, ino in rows:
            if peer == self.port and local in victim_ports:
                owner_of[local] = "wrk" if ino in wrk_socks else "mix" if ino in mix_socks else None
        wrk_conns = sum(1 for p in victim_ports if owner_of.get(p) == "wrk")
        mix_conns = sum(1 for p in victim_ports if owner_of.get(p) == "mix")
        replaced = wait_until(lambda: worker_pids(self.master).get(1) not in (None, pid), 5)
        self.events["kill"].append({
            "t_stop": t_stop, "t": t_kill, "pid": pid, "ports": sorted(victim_ports),
            "wrk_conns": wrk_conns, "mix_conns": mix_conns,
            "other_conns": len(victim_ports) - wrk_conns - mix_conns,
            "replaced_s": replaced, "new_pid": worker_pids(self.master).get(1)})

    def save(self):
        self.save_n += 1
        identical = self.save_n % 2 == 1
        if not identical:
            self.version += 1
        text = self.template.replace("local SAVE = 0", f"local SAVE = {self.version}")
        before = (stats(self.port) or {}).get("reload", {}).get("reloads")
        tmp = self.app + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        t = time.time()
        os.rename(tmp, self.app)

        def reloaded():
            s = stats(self.port)
            r = (s or {}).get("reload", {})
            return before is not None and r.get("reloads", 0) > before and r.get("last_ok")

        reload_s = wait_until(reloaded, 10)
        served_s = None
        if reload_s is not None:
            want = str(self.version).encode()
            served_s = wait_until(lambda: all(http_get(self.port, "/version")[1] == want
                                              for _ in range(8)), 10)
        self.events["save"].append({"t": t, "n": self.save_n, "identical": identical,
                                    "version": self.version, "reload_s": reload_s,
                                    "served_s": served_s})

    def rotate(self):
        n = len(self.events["usr1"]) + 1
        moved = []
        for path in (self.access, self.errors):
            dest = f"{path}.rotated{n}"
            os.rename(path, dest)
            moved.append(dest)
        t = time.time()
        os.kill(self.master, signal.SIGUSR1)

        def reopened():
            if not os.path.exists(self.access) or not os.path.exists(self.errors):
                return False
            for pid in (self.master, *worker_pids(self.master).values()):
                links = fd_links(pid) or {}
                if any(link in moved for link in links.values()):
                    return False
            return True

        reopen_s = wait_until(reopened, 5)
        held = []
        for role, pid in self.roles().items():
            held += [f"{role} (pid {pid})" for link in (fd_links(pid) or {}).values()
                     if link in moved]
        with open(moved[0], "rb") as f:
            self.access_lines += sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        os.remove(moved[0])
        with open(moved[1], errors="replace") as f:
            self.error_log_text.append(f.read())
        os.remove(moved[1])
        self.events["usr1"].append({"t": t, "reopen_s": reopen_s, "held": held})

    def restart_upstream(self):
        t = time.time()
        self.up.send_signal(signal.SIGTERM)
        try:
            code = self.up.wait(20)
        except subprocess.TimeoutExpired:
            self.up.kill()
            code = self.up.wait()
        t_down = time.time()
        self.start_upstream(self.up_port)
        self.events["upstream"].append({"t": t, "t_down": t_down, "t_ready": time.time(),
                                        "exit": code})

    def faults(self, t0, deadline):
        plan = []
        end = deadline - t0 - 5
        for every, at, fn in ((KILL_EVERY, KILL_AT, self.kill_worker),
                              (SAVE_EVERY, SAVE_AT, self.save),
                              (USR1_EVERY, USR1_AT, self.rotate),
                              (UPSTREAM_EVERY, UPSTREAM_AT, self.restart_upstream)):
            s = at
            while s <= end:
                plan.append((s, fn))
                s += every
        plan.sort(key=lambda p: p[0])
        for at, fn in plan:
            delay = t0 + at - time.time()
            if delay > 0:
                time.sleep(delay)
            try:
                fn()
            except Exception as e:  # a fault that could not be applied is a finding
                self.problems.append(f"{fn.__name__} at {at} s: {e!r}")

    def sampler(self, t0, deadline):
        k = 0
        while True:
            at = t0 + k * SAMPLE_S
            if at > deadline + 0.5:
                return
            delay = at - time.time()
            if delay > 0:
                time.sleep(delay)
            self.sample(round(time.time() - t0, 1))
            k += 1

    # the end

    def final_checks(self):
        out = {}
        want = set(worker_pids(self.master).values())
        seen = set()
        for _ in range(200):
            s = stats(self.port)
            if s:
                seen.add(s["worker"]["pid"])
            if want <= seen:
                break
        out["workers"] = len(want)
        out["workers_answered"] = len(want & seen)
        version = str(self.version).encode()
        answers = [http_get(self.port, "/version")[1] for _ in range(20)]
        out["version_served"] = sum(1 for a in answers if a == version)
        out["upstream_route"] = http_get(self.port, "/upstream")[0]
        out["redis_route"] = http_get(self.port, "/redis")[0]
        out["upstream_direct"] = http_get(self.up_port, "/hello")[0]
        before = (stats(self.port) or {}).get("reload", {}).get("reloads")
        os.kill(self.master, signal.SIGHUP)
        out["sighup_reload_s"] = wait_until(
            lambda: ((stats(self.port) or {}).get("reload", {}).get("reloads") or 0) > (before or 0), 10)
        return out

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = "killed after 20 s"
        self.up.send_signal(signal.SIGTERM)
        try:
            self.up.wait(20)
        except subprocess.TimeoutExpired:
            self.up.kill()
        return code

    def run(self):
        self.start()
        # Every route once, then the open files with nothing going on.
        checks = {path: http_get(self.port, path)[0]
                  for path in ("/health", "/users/1", "/search?q=a", "/version", "/upstream",
                               "/redis", "/blob/10")}
        bad = {p: s for p, s in checks.items() if s != 200}
        if bad:
            sys.exit(f"soak: wrong answers before the load: {bad}")
        quiet_start = self.quiet()
        t0 = time.time()
        deadline = t0 + self.minutes * 60
        mix = Mix(self.port, t0, deadline)
        # Daemon threads: an interrupted soak exits without waiting for them.
        threads = [threading.Thread(target=self.wrk_loop, args=(deadline,), daemon=True),
                   threading.Thread(target=mix.run, daemon=True),
                   threading.Thread(target=self.faults, args=(t0, deadline), daemon=True),
                   threading.Thread(target=self.sampler, args=(t0, deadline), daemon=True)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        log("load over; final checks")
        final = self.final_checks()
        quiet_end = self.quiet()
        final["stop_exit"] = self.stop()
        for path in (self.errors,):
            with open(path, errors="replace") as f:
                self.error_log_text.append(f.read())
        with open(self.access, "rb") as f:
            self.access_lines += f.read().count(b"\n")
        return {
            "t0": t0, "minutes": self.minutes, "rate": self.rate, "port": self.port,
            "wrk_connections": WRK_CONNECTIONS,
            "samples": self.samples, "wrk_runs": self.wrk_runs, "events": self.events,
            "mix": {"counts": [[b, k, n] for (b, k), n in sorted(mix.counts.items())],
                    "failures": mix.failures, "dropped": mix.dropped},
            "quiet_start": quiet_start, "quiet_end": quiet_end, "final": final,
            "error_log": "".join(self.error_log_text), "access_lines": self.access_lines,
            "problems": self.problems,
        }


def main():
    binary, root, work, redis_port, minutes, rate = sys.argv[1:7]
    soak = Soak(binary, root, work, int(redis_port), float(minutes), int(rate))
    # SIGTERM (bench/soak/run stopping) ends the soak like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("soak: stopped"))
    try:
        result = soak.run()
    finally:
        # Killing a master kills its workers too (PR_SET_PDEATHSIG).
        for p in (getattr(soak, "proc", None), getattr(soak, "up", None),
                  getattr(soak, "wrk_proc", None)):
            if p and p.poll() is None:
                p.kill()
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
