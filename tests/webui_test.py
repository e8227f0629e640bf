#!/usr/bin/env python3
"""webui_test.py — `spillway serve`'s web page over plain HTTP (issue 41).

With an API key: "/" is the page (text/html, an ETag, Cache-Control:
no-cache, nosniff, a Content-Security-Policy) and loads without the key;
every file it names (/ui/...) comes with its own Content-Type; If-None-Match
with the ETag gives 304 and no body; HEAD gives the headers alone; POST is
405, an unknown /ui/ file 404. GET /v1/plan needs the key and returns the
plan `spillway plan --json` prints for the same model and flags (the host's
free memory, which moves between the two, left out). With --no-webui, "/"
and the files are 404 and the API is unchanged. The tests/webui_browser_test.py
drives the page itself in Chromium.

usage: webui_test.py SPILLWAY MODEL
"""
import http.client
import json
import re
import subprocess
import sys

import serve_util
from serve_util import check, free_port, stop, wait_healthy

BIN, MODEL = sys.argv[1], sys.argv[2]
KEY = "webui-key"
# A simulated device small enough that the layers land in three places.
FLAGS = ["-m", MODEL, "--backend", "sim", "--device-mem", "900K", "-t", "2", "-c", "256",
         "-b", "16", "-np", "2"]
TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".svg": "image/svg+xml"}


def request(port, method, path, key=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    h = dict(headers or {})
    if key:
        h["Authorization"] = "Bearer " + key
    c.request(method, path, headers=h)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body, r


def start(extra):
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", *FLAGS, "--port", str(port), *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    health = lambda: request(port, "GET", "/health")[:2]  # noqa: E731
    if not check(wait_healthy(proc, health, 60, 0.05), "the server did not come up"):
        stop(proc)
        print(proc.stderr.read().decode(errors="replace"))
        sys.exit(1)
    return port, proc


def without_host_free(plan):
    """The plan less what follows the host's free memory at planning time."""
    plan["budget"].pop("host_bytes", None)
    plan["tiers"]["host"].pop("budget", None)
    return plan


def check_page(port):
    status, body, r = request(port, "GET", "/")
    check(status == 200, "GET /: status %d" % status)
    check(r.getheader("Content-Type") == "text/html; charset=utf-8",
          "GET /: Content-Type %r" % r.getheader("Content-Type"))
    etag = r.getheader("ETag") or ""
    check(re.fullmatch(r'"[0-9a-f]{20}"', etag) is not None, "GET /: ETag %r" % etag)
    check(r.getheader("Cache-Control") == "no-cache", "GET /: Cache-Control %r"
          % r.getheader("Cache-Control"))
    check(r.getheader("X-Content-Type-Options") == "nosniff", "GET /: no nosniff")
    check("default-src 'self'" in (r.getheader("Content-Security-Policy") or ""),
          "GET /: Content-Security-Policy %r" % r.getheader("Content-Security-Policy"))
    page = body.decode()
    check(page.lower().startswith("<!doctype html>"), "GET /: not an HTML page")
    files = sorted(set(re.findall(r'(?:src|href)="(/ui/[^"]+)"', page)))
    check({"/ui/app.js", "/ui/style.css"} <= set(files), "the page names %s" % files)
    for f in files:
        status, body, r = request(port, "GET", f)
        want = TYPES.get(f[f.rfind("."):])
        check(status == 200 and len(body) > 0, "GET %s: status %d" % (f, status))
        check(r.getheader("Content-Type") == want,
              "GET %s: Content-Type %r, want %r" % (f, r.getheader("Content-Type"), want))
        check(r.getheader("ETag") not in (None, etag), "GET %s: ETag %r" % (f, r.getheader("ETag")))
    status, body, r = request(port, "GET", "/", headers={"If-None-Match": etag})
    check(status == 304 and body == b"", "If-None-Match: status %d, %d bytes" % (status, len(body)))
    check(r.getheader("ETag") == etag, "304: ETag %r" % r.getheader("ETag"))
    status, body, _ = request(port, "GET", "/", headers={"If-None-Match": '"0000"'})
    check(status == 200 and len(body) > 0, "a stale ETag: status %d" % status)
    status, body, r = request(port, "HEAD", "/")
    check(status == 200 and body == b"", "HEAD /: status %d, %d bytes" % (status, len(body)))
    status, _, _ = request(port, "POST", "/")
    check(status == 405, "POST /: status %d" % status)
    status, body, _ = request(port, "GET", "/ui/nope.js")
    check(status == 404 and b'"error"' in body, "GET /ui/nope.js: status %d" % status)


def check_plan(port):
    status, _, _ = request(port, "GET", "/v1/plan")
    check(status == 401, "GET /v1/plan without the key: status %d" % status)
    status, body, r = request(port, "GET", "/v1/plan", key=KEY)
    check(status == 200, "GET /v1/plan: status %d" % status)
    check(r.getheader("Content-Type") == "application/json", "GET /v1/plan: Content-Type %r"
          % r.getheader("Content-Type"))
    p = subprocess.run([BIN, "plan", *FLAGS, "--json"], capture_output=True, timeout=60)
    check(p.returncode == 0, "plan --json: exit %d" % p.returncode)
    served, printed = json.loads(body), json.loads(p.stdout)
    places = {layer["place"] for layer in printed["layers"]}
    check(places == {"resident", "streamed", "host"}, "the flags' plan has places %s" % places)
    check(without_host_free(served) == without_host_free(printed),
          "GET /v1/plan differs from plan --json:\n%s\n%s" % (served, printed))


def main():
    port, proc = start(["--api-key", KEY])
    try:
        check_page(port)
        check_plan(port)
    finally:
        check(stop(proc) == 0, "serve: exit status")
    port, proc = start(["--api-key", KEY, "--no-webui"])
    try:
        for path in ("/", "/ui/app.js", "/ui/style.css"):
            status, _, _ = request(port, "GET", path)
            check(status == 404, "--no-webui: GET %s: status %d" % (path, status))
        status, _, _ = request(port, "GET", "/v1/plan", key=KEY)
        check(status == 200, "--no-webui: GET /v1/plan: status %d" % status)
    finally:
        check(stop(proc) == 0, "serve --no-webui: exit status")
    if serve_util.failures:
        print("webui_test: %d failures" % serve_util.failures)
        return 1
    print("webui_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
