"""Starting moonport for the benchmark helpers: the port comes from its
startup line, and its output is drained so that it never blocks on a
full pipe."""

import subprocess
import sys
import threading


def start(cmd):
    """Starts `cmd`, a moonport command line with --listen 127.0.0.1:0.
    Returns the process and the port it listens on; exits with the
    server's output when it does not start."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on http://" not in line:
        proc.kill()
        sys.exit(f"moonport did not start: {line}{proc.stderr.read()}")
    port = int(line.split("listening on http://")[1].split(" ")[0].rsplit(":", 1)[1])
    # Keep draining both pipes so the server never blocks on them.
    for stream in (proc.stdout, proc.stderr):
        threading.Thread(target=lambda s=stream: s.read(), daemon=True).start()
    return proc, port
