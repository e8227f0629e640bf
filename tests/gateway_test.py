#!/usr/bin/env python3
"""gateway_test.py — `spillway serve` as a model server behind a Kubernetes
inference gateway (issue 39, section 4).

usage: gateway_test.py metrics|drain SPILLWAY MODEL

metrics: /metrics parsed by the Prometheus project's own Python parser
(prometheus_client.parser.text_string_to_metric_families, from the test's
package folder: $SW_TEST_PYDEPS, default ~/.cache/spillway/test-pydeps,
which scripts/test.sh fills; exit 77, skipped, without it), checking every
series the endpoint picker reads from a vLLM-compatible server, with its
type, help, labels and range: vllm:num_requests_waiting and
vllm:num_requests_running (gauges, whole numbers, 0 when idle, at most -np
running), vllm:kv_cache_usage_perc and vllm:gpu_cache_usage_perc (gauges in
[0, 1], 0 when idle, above 0 while requests run), vllm:cache_config_info
(gauge 1; block_size -c and num_gpu_blocks -np, integers) and
vllm:lora_requests_info (gauge: the time of its update; max_lora 0, no
adapters). While idle, while requests run and queue (a server made slow by
a throttled simulated link), and after. With --public-metrics the scrape
needs no key (the picker sends none) while /v1/* still does.

drain: SIGTERM with --drain-timeout while a request streams: the stream
runs to its end ("length", every token), a new request gets 503, /health
says "draining" (503), and the process exits 0; with a drain shorter than
the request, the request ends "cancelled" at the bound and the process
still exits 0.
"""
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.environ.get("SW_TEST_PYDEPS") or
                os.path.expanduser("~/.cache/spillway/test-pydeps"))
import serve_util  # noqa: E402 - after the path of the test's packages
from serve_util import check, free_port, stop, wait_healthy  # noqa: E402

MODE, BIN, MODEL = sys.argv[1], sys.argv[2], sys.argv[3]
KEY = "gateway-test-key"
CTX, NP = 256, 2
PROMPT = "Once upon a time, in a village by the sea,"
# the tiny model (1.2 MB) streamed over a 50 MB/s simulated link: about
# 25 ms a token, so requests are seen running and a drain has work to do
SLOW = ["-m", MODEL, "-t", "2", "-c", str(CTX), "-np", str(NP), "--backend", "sim",
        "--device-mem", "64M", "--place", "all=streamed", "--sim-link-bw", "50M"]


def request(port, method, path, body=None, key=KEY):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    h = {"Content-Type": "application/json"}
    if key is not None:
        h["Authorization"] = "Bearer " + key
    c.request(method, path, body=json.dumps(body).encode() if body is not None else None,
              headers=h)
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, out


def start(port, *extra):
    proc = subprocess.Popen([BIN, "serve", *SLOW, "--port", str(port), "--api-key", KEY,
                             *extra], stderr=subprocess.PIPE)
    ok = wait_healthy(proc, lambda: request(port, "GET", "/health", key=None), 120, 0.1)
    return proc, ok


class Stream:
    """A streamed completion read event by event on its own thread."""

    def __init__(self, port, max_tokens):
        self.events, self.done, self.status = [], False, None
        self.first = threading.Event()
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        body = dict(prompt=PROMPT, max_tokens=max_tokens, temperature=0, stream=True)
        self.c.request("POST", "/v1/completions", body=json.dumps(body).encode(),
                       headers={"Content-Type": "application/json",
                                "Authorization": "Bearer " + KEY})
        self.t = threading.Thread(target=self.read)
        self.t.start()

    def read(self):
        try:
            r = self.c.getresponse()
            self.status = r.status
            for line in r:
                line = line.decode("utf-8").strip()
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    self.done = True
                    break
                self.events.append(json.loads(line[6:]))
                self.first.set()
        except (OSError, ValueError) as e:
            print("stream:", e)
        finally:
            self.first.set()
            self.c.close()

    def join(self):
        self.t.join(timeout=120)
        return self

    def finish(self):
        last = [e for e in self.events if e["choices"][0].get("finish_reason")]
        return last[-1]["choices"][0]["finish_reason"] if last else None

    def usage(self):
        last = [e for e in self.events if e.get("usage")]
        return last[-1]["usage"] if last else {}


# ---- metrics ---------------------------------------------------------------

def scrape(port, parser):
    """The families by name, from a scrape without the key."""
    status, body = request(port, "GET", "/metrics", key=None)
    check(status == 200, "GET /metrics without the key (--public-metrics): %d" % status)
    fams = {}
    for f in parser(body.decode("utf-8")):  # raises on text that is not the format
        fams[f.name] = f
    return fams


def one(fams, name, model):
    """The family's single sample, checked: a gauge with help, one sample
    labelled model_name."""
    f = fams.get(name)
    if not check(f is not None, "/metrics has no %s" % name):
        return None
    check(f.type == "gauge", "%s is a %s, not a gauge" % (name, f.type))
    check(bool(f.documentation.strip()), "%s has no # HELP" % name)
    if not check(len(f.samples) == 1, "%s: %d samples" % (name, len(f.samples))):
        return None
    s = f.samples[0]
    check(s.name == name, "%s: sample named %s" % (name, s.name))
    check(s.labels.get("model_name") == model, "%s: model_name %r, not %r" %
          (name, s.labels.get("model_name"), model))
    return s


def picker_series(fams, model):
    """Every series the picker reads, checked; returns their values."""
    v = {}
    for name in ("vllm:num_requests_waiting", "vllm:num_requests_running"):
        s = one(fams, name, model)
        if s is not None:
            check(s.value >= 0 and s.value == int(s.value), "%s = %r" % (name, s.value))
            v[name] = s.value
    check(v.get("vllm:num_requests_running", 0) <= NP, "more running than -np: %s" % v)
    for name in ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"):
        s = one(fams, name, model)
        if s is not None:
            check(0.0 <= s.value <= 1.0, "%s = %r, outside [0, 1]" % (name, s.value))
            v[name] = s.value
    check(v.get("vllm:kv_cache_usage_perc") == v.get("vllm:gpu_cache_usage_perc"),
          "the two KV names differ: %s" % v)
    s = one(fams, "vllm:cache_config_info", model)
    if s is not None:
        check(s.value == 1.0, "cache_config_info = %r, not 1" % s.value)
        # the picker reads both labels with Go's strconv.Atoi
        bs, nb = s.labels.get("block_size", ""), s.labels.get("num_gpu_blocks", "")
        check(bs.isdigit() and int(bs) == CTX, "block_size %r, not -c %d" % (bs, CTX))
        check(nb.isdigit() and int(nb) == NP, "num_gpu_blocks %r, not -np %d" % (nb, NP))
    s = one(fams, "vllm:lora_requests_info", model)
    if s is not None:
        check(s.labels.get("max_lora") == "0" and s.labels.get("running_lora_adapters") == ""
              and s.labels.get("waiting_lora_adapters") == "", "lora labels %s" % s.labels)
        check(abs(s.value - time.time()) < 120, "lora_requests_info = %r, not the time now"
              % s.value)
    # every family declared: an untyped sample reads as 0 in the picker
    untyped = [f.name for f in fams.values() if f.type == "unknown"]
    check(not untyped, "families without # TYPE: %s" % untyped)
    return v


def test_metrics():
    try:
        from prometheus_client.parser import text_string_to_metric_families as parser
    except ImportError:
        print("gateway_test: the prometheus_client package is missing (scripts/test.sh "
              "installs it into ~/.cache/spillway/test-pydeps); skipped")
        sys.exit(77)
    port = free_port()
    proc, ok = start(port, "--public-metrics")
    streams = []
    try:
        if not check(ok, "the server did not become ready"):
            return
        status, body = request(port, "GET", "/v1/models")
        model = json.loads(body)["data"][0]["id"]
        check(request(port, "GET", "/v1/models", key=None)[0] == 401,
              "--public-metrics opened /v1/models too")
        check(request(port, "GET", "/metrics")[0] == 200, "/metrics with the key")
        idle = picker_series(scrape(port, parser), model)
        check(idle.get("vllm:num_requests_waiting") == 0 and
              idle.get("vllm:num_requests_running") == 0 and
              idle.get("vllm:kv_cache_usage_perc") == 0, "idle: %s" % idle)
        # -np + 1 requests: NP run, one waits
        streams = [Stream(port, 120) for _ in range(NP + 1)]
        seen_full, seen_kv, t0 = False, False, time.time()
        while time.time() - t0 < 60 and not (seen_full and seen_kv):
            v = picker_series(scrape(port, parser), model)
            seen_full = seen_full or (v.get("vllm:num_requests_running") == NP and
                                      v.get("vllm:num_requests_waiting") == 1)
            seen_kv = seen_kv or v.get("vllm:kv_cache_usage_perc", 0) > 0
            if serve_util.failures:
                break
            time.sleep(0.02)
        check(seen_full, "never saw %d running and 1 waiting" % NP)
        check(seen_kv, "KV cache use stayed 0 while requests ran")
        for st in streams:
            st.join()
            check(st.status == 200 and st.done and st.finish() == "length",
                  "stream: status %s done %s finish %s" % (st.status, st.done, st.finish()))
        t0 = time.time()
        while time.time() - t0 < 30:
            after = picker_series(scrape(port, parser), model)
            if after.get("vllm:num_requests_running") == 0:
                break
            time.sleep(0.05)
        check(after.get("vllm:num_requests_waiting") == 0 and
              after.get("vllm:num_requests_running") == 0 and
              after.get("vllm:kv_cache_usage_perc") == 0, "after: %s" % after)
    finally:
        rc = stop(proc)
        for st in streams:
            st.join()
        err = proc.stderr.read().decode("utf-8", "replace")
        check(rc == 0, "serve exited %d after SIGTERM: %s" % (rc, err[-500:]))
    # without --public-metrics the key guards /metrics as before
    port = free_port()
    proc, ok = start(port)
    try:
        if check(ok, "the second server did not become ready"):
            check(request(port, "GET", "/metrics", key=None)[0] == 401,
                  "/metrics without the key and without --public-metrics")
    finally:
        check(stop(proc) == 0, "second serve's exit status")
        proc.stderr.read()


# ---- drain -----------------------------------------------------------------

def drained_run(drain_s, max_tokens):
    """A server with --drain-timeout drain_s, a stream of max_tokens, SIGTERM
    after its first event: (stream, exit status, seconds to exit, stderr,
    (status, body) of a request made while draining, /health then)."""
    port = free_port()
    proc, ok = start(port, "--drain-timeout", str(drain_s))
    st, late, health, rc, took = None, None, None, None, None
    try:
        if not check(ok, "the server did not become ready"):
            return None
        st = Stream(port, max_tokens)
        check(st.first.wait(60) and st.events, "no first event")
        t0 = time.time()
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)  # the main loop polls the signal every 100 ms
        try:  # a short drain may have ended already: then these stay None
            late = request(port, "POST", "/v1/completions", dict(prompt="x", max_tokens=2))
            health = request(port, "GET", "/health", key=None)
        except OSError:
            pass
        st.join()
        rc = proc.wait(timeout=drain_s + 60)
        took = time.time() - t0
    finally:
        if rc is None:
            rc = stop(proc)
        if st is not None:
            st.join()
    return st, rc, took, proc.stderr.read().decode("utf-8", "replace"), late, health


def test_drain():
    got = drained_run(30, 80)
    if got is not None:
        st, rc, took, err, late, health = got
        check("draining: 1 requests" in err, "the request was not running at SIGTERM: %s"
              % err[-500:])
        check(st.status == 200 and st.done and st.finish() == "length" and
              st.usage().get("completion_tokens") == 80,
              "drained stream: done %s finish %s usage %s" % (st.done, st.finish(), st.usage()))
        check(late is not None and late[0] == 503 and b"error" in late[1],
              "a request while draining: %s" % (late,))
        check(health is not None and health[0] == 503 and
              json.loads(health[1]).get("status") == "draining",
              "/health while draining: %s" % (health,))
        check(rc == 0, "exit status %s after a drain: %s" % (rc, err[-500:]))
    # a drain shorter than the request: cut at the bound, still exit 0
    got = drained_run(1, 200)
    if got is not None:
        st, rc, took, err, _, _ = got
        check(st.done and st.finish() == "cancelled",
              "a request past the drain: done %s finish %s" % (st.done, st.finish()))
        check(took is not None and took < 20, "exit took %s s with --drain-timeout 1" % took)
        check(rc == 0, "exit status %s after a cut drain: %s" % (rc, err[-500:]))


if __name__ == "__main__":
    {"metrics": test_metrics, "drain": test_drain}[MODE]()
    print("gateway_test %s: %s" % (MODE, "ok" if serve_util.failures == 0 else
                                   "%d failures" % serve_util.failures))
    sys.exit(1 if serve_util.failures else 0)
