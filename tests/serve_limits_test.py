#!/usr/bin/env python3
"""serve_limits_test.py — `spillway serve` under a client that hoards
connections (issue 25): its caps, its request deadline, IPv6.

One server (--timeout 5, the default caps: 512 open, 64 per address).
From 127.0.0.1 a client opens 1000 connections that each send part of a
request's headers and wait: the 64 the cap admits are held, every other
one gets a 503 with Retry-After and Connection: close (never a reset);
meanwhile /health and a completion from 127.0.0.2 answer. The held ones
are dropped about --timeout after they opened; /metrics counts the
refusals and the time-outs. A slowloris from 127.0.0.3
trickling a byte a second is dropped at the deadline all the same. A
streaming client that reads nothing does not hold up other requests'
completions. A server of 8 connections refuses a third address with the
503 that names the total, and serves it once one closes. Then a server on
::1 serves /health, and one on :: (every interface, no key) warns and
answers over IPv6 and IPv4 (skipped without IPv6 loopback); SIGTERM exits
0 each time (clean under the sanitizers). About 20 s.

usage: serve_limits_test.py SPILLWAY MODEL
"""
import http.client
import json
import resource
import selectors
import socket
import subprocess
import sys
import time

import serve_util
from serve_util import check, free_port, stop, wait_healthy

BIN, MODEL = sys.argv[1], sys.argv[2]
TIMEOUT = 5
N_HOARD = 1000
PER_ADDR = 64                    # serve's default --max-conns-per-addr
COMMON = ["-m", MODEL, "-t", "2", "-c", "256", "-b", "16", "-np", "4"]
PARTIAL = b"GET /health HTTP/1.1\r\nHost: x\r\nUser-Agent: hoarder\r\n"


def raise_fd_limit(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        print("skipped: RLIMIT_NOFILE's hard limit %d is under the %d descriptors this test "
              "needs" % (hard, need))
        sys.exit(77)
    if soft == resource.RLIM_INFINITY or soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


class Server:
    def __init__(self, host, *extra):
        self.host, self.port = host, free_port()
        self.proc = subprocess.Popen([BIN, "serve", *COMMON, "--host", host, "--port",
                                      str(self.port), *extra], stderr=subprocess.PIPE)

    def request(self, method, path, body=None, source=None, timeout=60, host=None):
        c = http.client.HTTPConnection(host or self.host, self.port, timeout=timeout,
                                       source_address=(source, 0) if source else None)
        data = json.dumps(body).encode() if body is not None else None
        c.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        out = r.read()
        c.close()
        return r.status, out

    def wait_ready(self):
        return wait_healthy(self.proc, lambda: self.request("GET", "/health", timeout=5), 120,
                            0.1)

    def stop(self):
        rc = stop(self.proc)
        err = self.proc.stderr.read().decode("utf-8", "replace")
        check(rc == 0, "serve --host %s exited %d after SIGTERM: %s" % (self.host, rc,
                                                                       err[-2000:]))
        return err


def connect(port, source="127.0.0.1", rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((source, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s


def hoard(srv):
    """1000 half-open connections from 127.0.0.1 while another address is
    served; the refusals and the drop of the held ones."""
    socks, resets = [], 0
    t_open = time.time()
    for _ in range(N_HOARD):
        s = connect(srv.port)
        try:
            s.sendall(PARTIAL)
        except OSError:
            resets += 1
        socks.append(s)
    t_opened = time.time()
    # another address, while the hoard is held
    t0 = time.time()
    status, body = srv.request("GET", "/health", source="127.0.0.2", timeout=10)
    check(status == 200 and json.loads(body)["status"] in ("ok", "busy"),
          "/health from 127.0.0.2 during the hoard: %d %r" % (status, body[:200]))
    status, body = srv.request("POST", "/v1/completions", source="127.0.0.2", timeout=30,
                               body={"prompt": "Hello there", "max_tokens": 8,
                                     "temperature": 0})
    ok = status == 200 and json.loads(body)["usage"]["completion_tokens"] > 0
    check(ok, "a completion from 127.0.0.2 during the hoard: %d %r" % (status, body[:200]))
    t_served = time.time() - t0
    check(time.time() - t_opened < TIMEOUT - 1,
          "the other address was served only %.1f s after the hoard opened (the held "
          "connections may have been dropped already)" % (time.time() - t_opened))
    # every connection: a 503 (refused) or the end (held, then dropped)
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, bytearray())
    n_503, n_retry, n_held, drop_times, bad = 0, 0, 0, [], []
    pending = len(socks)
    deadline = time.time() + TIMEOUT + 10
    while pending and time.time() < deadline:
        for key, _ in sel.select(timeout=1):
            s, buf = key.fileobj, key.data
            try:
                chunk = s.recv(4096)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                chunk = None
            if chunk:
                buf += chunk
                continue
            # the end: a whole 503 before it, or nothing (a held one dropped)
            sel.unregister(s)
            pending -= 1
            if buf.startswith(b"HTTP/1.1 503"):
                n_503 += 1
                head = buf.split(b"\r\n\r\n", 1)[0].lower()
                n_retry += b"retry-after:" in head and b"connection: close" in head
                body = buf.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in buf else b""
                try:
                    json.loads(body)["error"]["message"]
                except (ValueError, KeyError, TypeError):
                    bad.append("503 body %r" % body[:100])
            elif chunk is None:
                resets += 1
            elif not buf:
                n_held += 1
                drop_times.append(time.time() - t_open)
            else:
                bad.append("unexpected answer %r" % bytes(buf[:100]))
    for s in socks:
        s.close()
    sel.close()
    check(pending == 0, "%d of the hoard's connections never ended" % pending)
    check(resets == 0, "%d of the hoard's connections were reset, not refused" % resets)
    check(not bad, "answers: %s" % bad[:3])
    check(n_held + n_503 + pending + resets + len(bad) == N_HOARD, "connections lost")
    check(PER_ADDR - 2 <= n_held <= PER_ADDR + 8, "%d held, want about %d (the per-address "
          "cap; a few more if some were dropped before the hoard was all open)" %
          (n_held, PER_ADDR))
    check(n_retry == n_503, "%d of %d 503s without Retry-After and Connection: close" %
          (n_503 - n_retry, n_503))
    late = [t for t in drop_times if not TIMEOUT - 0.5 <= t <= TIMEOUT + 3 + (t_opened - t_open)]
    check(not late, "held connections dropped at %s s, want about %d s after they opened" %
          (["%.1f" % t for t in late[:5]], TIMEOUT))
    print("hoard: %d connections opened in %.2f s; %d refused with 503, %d held, dropped "
          "%.1f-%.1f s after the first opened; 127.0.0.2 served in %.2f s" %
          (N_HOARD, t_opened - t_open, n_503, n_held, min(drop_times or [0]),
           max(drop_times or [0]), t_served), flush=True)
    # the hoarder's address is free again
    status, _ = srv.request("GET", "/health", source="127.0.0.1")
    check(status == 200, "/health from 127.0.0.1 after the hoard: %d" % status)
    # /metrics counts what the hoard met
    m = metrics(srv)
    refused = m.get('spillway_connections_refused_total{cap="max_conns_per_addr"}', -1)
    check(n_503 <= refused <= n_503 + pending, "/metrics: %s refusals at the per-address cap, "
          "the client saw %d 503s" % (refused, n_503))
    check(m.get('spillway_connections_refused_total{cap="max_conns"}', -1) == 0,
          "/metrics: refusals at --max-conns during the hoard: %r" % m)
    timed_out = m.get("spillway_connections_timed_out_total", -1)
    check(timed_out >= len(drop_times), "/metrics: %s timed out, %d held connections were "
          "dropped" % (timed_out, len(drop_times)))
    print("metrics: %d refused at the per-address cap, %d timed out" % (refused, timed_out),
          flush=True)


def metrics(srv):
    """/metrics as {'name{labels}': value}."""
    status, body = srv.request("GET", "/metrics")
    check(status == 200, "/metrics: %d" % status)
    out = {}
    for line in body.decode("utf-8", "replace").splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def slowloris(srv):
    """A byte a second from 127.0.0.3: dropped at the deadline, not later."""
    before = metrics(srv).get("spillway_connections_timed_out_total", -1)
    s = connect(srv.port, source="127.0.0.3")
    t0 = time.time()
    data = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"x" * 100
    dropped = None
    for b in data:
        try:
            s.sendall(bytes([b]))
            s.settimeout(1.0)
            got = s.recv(4096)
            if not got:
                dropped = time.time() - t0
                break
        except socket.timeout:
            continue
        except OSError:
            dropped = time.time() - t0
            break
        if time.time() - t0 > TIMEOUT + 10:
            break
    s.close()
    check(dropped is not None and TIMEOUT - 0.5 <= dropped <= TIMEOUT + 2,
          "slowloris dropped after %s s, want about %d" % (dropped, TIMEOUT))
    after = metrics(srv).get("spillway_connections_timed_out_total", -1)
    check(after == before + 1, "/metrics: timed out %s before the slowloris, %s after" %
          (before, after))
    print("slowloris: dropped after %.1f s" % (dropped or -1), flush=True)


def stalled_stream(srv):
    """Two connections, each with three streamed requests pipelined, whose
    client reads nothing (a small receive buffer: the events outgrow what
    the sockets hold) beside completions from another client: the
    completions are not held up, and a stalled stream is dropped once it
    made no progress for --timeout."""
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 240, "temperature": 0,
                       "stream": True}).encode()
    one = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    stalled = []
    for _ in range(2):
        s = connect(srv.port, source="127.0.0.4", rcvbuf=4096)
        s.sendall(one * 3)
        stalled.append(s)
    t_stall = time.time()
    time.sleep(0.5)  # they run, and fill the buffers
    t0 = time.time()
    for i in range(3):
        status, out = srv.request("POST", "/v1/completions", source="127.0.0.5", timeout=30,
                                  body={"prompt": "Hello %d" % i, "max_tokens": 16,
                                        "temperature": 0})
        check(status == 200, "completion beside stalled streams: %d %r" % (status, out[:200]))
    took = time.time() - t0
    check(took < 20, "3 completions beside stalled streams took %.1f s" % took)
    # read them now: a stream the server could not finish sending was cut
    time.sleep(max(0.0, t_stall + TIMEOUT + 1.5 - time.time()))
    ends = []
    for s in stalled:
        got = b""
        s.settimeout(5)
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except OSError:
            pass
        ends.append("%d bytes, %d of 3 streams whole" % (len(got), got.count(b"data: [DONE]")))
        s.close()
    print("stalled streams: 3 completions beside them in %.2f s; read after %.0f s: %s" %
          (took, TIMEOUT + 1.5, "; ".join(ends)), flush=True)


def total_cap():
    """A server of 8 connections in all, 4 per address: 4 from each of two
    addresses are held, and a third address gets the 503 that names the
    total; once one closes, it is served."""
    srv = Server("127.0.0.1", "--timeout", str(TIMEOUT), "--max-conns", "8",
                 "--max-conns-per-addr", "4")
    held = []
    try:
        if not check(srv.wait_ready(), "the capped server did not become ready"):
            return
        time.sleep(0.3)  # the server sees wait_ready's connection close
        for source in ("127.0.0.10", "127.0.0.11"):
            for _ in range(4):
                held.append(connect(srv.port, source=source))
                held[-1].sendall(PARTIAL)
        time.sleep(0.2)  # accepted
        s = connect(srv.port, source="127.0.0.12")
        got = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except OSError as e:
            got += b" (%s)" % str(e).encode()
        s.close()
        check(got.startswith(b"HTTP/1.1 503") and b"8 connections open" in got,
              "past --max-conns: %r" % got[:300])
        held.pop().close()
        t0 = time.time()
        status = 0
        while status != 200 and time.time() - t0 < 3:
            try:
                status, _ = srv.request("GET", "/health", source="127.0.0.12", timeout=5)
            except OSError:
                time.sleep(0.05)
        check(status == 200, "/health once a slot is free: %d" % status)
    finally:
        for s in held:
            s.close()
        srv.stop()


def has_ipv6_loopback():
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def ipv6():
    if not has_ipv6_loopback():
        print("skipped: IPv6 (no ::1 on this machine)", flush=True)
        return
    srv = Server("::1", "--timeout", str(TIMEOUT))
    try:
        if check(srv.wait_ready(), "serve --host ::1 did not become ready"):
            status, _ = srv.request("GET", "/health", host="::1")
            check(status == 200, "/health over ::1: %d" % status)
    finally:
        err = srv.stop()
    check("http://[::1]:" in err and "warning" not in err,
          "serve --host ::1: its stderr %r" % err[-500:])
    srv = Server("::", "--timeout", str(TIMEOUT))
    try:
        if check(srv.wait_ready(), "serve --host :: did not become ready"):
            status, _ = srv.request("GET", "/health", host="::1")
            check(status == 200, "/health over ::1 from --host ::: %d" % status)
            status, _ = srv.request("GET", "/health", host="127.0.0.1")
            check(status == 200, "/health over 127.0.0.1 from --host ::: %d" % status)
    finally:
        err = srv.stop()
    check("warning" in err and "--api-key" in err,
          "serve --host :: without a key does not warn: %r" % err[-500:])
    print("ipv6: --host ::1 and --host :: answer /health; :: without a key warns", flush=True)


def main():
    raise_fd_limit(N_HOARD + 256)
    t0 = time.time()
    srv = Server("127.0.0.1", "--timeout", str(TIMEOUT))
    try:
        if not check(srv.wait_ready(), "the server did not become ready"):
            return 1
        print("ready in %.1f s" % (time.time() - t0), flush=True)
        time.sleep(0.3)  # the server sees wait_ready's connection close
        hoard(srv)
        slowloris(srv)
        stalled_stream(srv)
        status, body = srv.request("GET", "/health")
        check(status == 200, "/health at the end: %d %r" % (status, body))
    finally:
        err = srv.stop()
    check("refused" in err and "503" in err, "no line about the refusals: %r" % err[-1000:])
    total_cap()
    ipv6()
    print("%s in %.1f s" % ("FAILED" if serve_util.failures else "passed", time.time() - t0))
    return 1 if serve_util.failures else 0


if __name__ == "__main__":
    sys.exit(main())
