"""serve_util.py — what the `spillway serve` tests share: failure counting,
a free loopback port, and stopping a server the way an operator would.
"""
import json
import signal
import socket
import subprocess
import time

failures = 0


def check(cond, what):
    """Counts and prints a failure when cond is false; returns cond."""
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, flush=True)
    return cond


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc):
    """SIGTERM, then the exit status (killed after a minute)."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def wait_healthy(proc, health, limit_s, poll_s):
    """Polls health() -> (status, body) until /health says ok or busy (True),
    proc exits or limit_s passes (False)."""
    t0 = time.time()
    while time.time() - t0 < limit_s:
        if proc.poll() is not None:
            return False
        try:
            status, body = health()
            if status == 200 and json.loads(body)["status"] in ("ok", "busy"):
                return True
        except OSError:
            pass
        time.sleep(poll_s)
    return False
