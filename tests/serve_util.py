"""serve_util.py — what the `spillway serve` tests share: failure counting,
a free loopback port, and stopping a server the way an operator would.
"""
import signal
import socket
import subprocess

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
