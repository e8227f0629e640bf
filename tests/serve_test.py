#!/usr/bin/env python3
"""serve_test.py — `spillway serve` end to end over plain HTTP (http.client).

Starts the server on a free loopback port with an API key, waits for
/health, then checks: /v1/models; greedy completions equal `spillway run`
for the same prompt, non-streamed and streamed (server-sent events ending
`data: [DONE]`, the deltas adding up to the same text), alone and while 7
other requests run; chat requests equal `run` over Gemma's turn format;
stop strings cut the text and say "stop"; every bad-input class gets its
4xx in OpenAI's error shape (malformed, non-object and huge bodies, wrong
types, unknown model, a prompt longer than the context, max_tokens over
what fits, invalid UTF-8, a missing or wrong key, unknown endpoint, wrong
method); a client that leaves mid-stream frees its sequence; /metrics
counts; SIGTERM stops the server with exit status 0. A second server
drafting from n-grams (speculative decoding) gives the same greedy texts,
counts its drafts in /metrics, and honours a request's "draft_max"
(0: none; out of range: 400).

usage: serve_test.py SPILLWAY [MODEL]   (MODEL: default = the fetched one)
"""
import http.client
import json
import socket
import subprocess
import sys
import threading
import time

import serve_util
from serve_util import check, free_port, stop, wait_healthy

BIN = sys.argv[1]
MODEL = ["-m", sys.argv[2]] if len(sys.argv) > 2 else []
KEY = "test-key-123"
CTX = 256
N = 16
COMMON = MODEL + ["-t", "2", "-c", str(CTX), "-b", "16"]
PROMPTS = [
    "The three laws of thermodynamics are",
    "Once upon a time, in a village by the sea,",
    "def fibonacci(n):",
    "春天来了，",
]


PORT = free_port()


def request(method, path, body=None, key=KEY, raw=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=300)
    h = {"Content-Type": "application/json"}
    if key is not None:
        h["Authorization"] = "Bearer " + key
    h.update(headers or {})
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, out, r


def post(path, body, **kw):
    status, out, _ = request("POST", path, body, **kw)
    try:
        return status, json.loads(out)
    except ValueError:
        return status, {"unparsed": out[:200]}


def stream(path, body):
    """The events' JSON objects and whether [DONE] ended them."""
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=300)
    c.request("POST", path, body=json.dumps(dict(body, stream=True)).encode(),
              headers={"Content-Type": "application/json", "Authorization": "Bearer " + KEY})
    r = c.getresponse()
    check(r.status == 200, "stream %s: status %d" % (path, r.status))
    check(r.getheader("Content-Type", "").startswith("text/event-stream"),
          "stream content type %r" % r.getheader("Content-Type"))
    events, done = [], False
    for block in r.read().decode("utf-8").split("\n\n"):
        if not block.strip():
            continue
        check(block.startswith("data: "), "event %r" % block[:80])
        data = block[6:]
        if data == "[DONE]":
            done = True
            continue
        check(not done, "event after [DONE]")
        events.append(json.loads(data))
    c.close()
    return events, done


def run_text(prompt, n):
    p = subprocess.run([BIN, "run", *COMMON, "--temp", "0", "-p", prompt, "-n", str(n)],
                       capture_output=True, timeout=300)
    check(p.returncode == 0, "run %r: exit %d: %s" % (prompt, p.returncode, p.stderr[-300:]))
    # the server sends JSON, so valid UTF-8: ill-formed bytes as U+FFFD,
    # the maximal-subpart rule that Python's "replace" also follows
    return p.stdout.decode("utf-8", "replace")


def completion(prompt, n=N, **extra):
    status, body = post("/v1/completions", dict(prompt=prompt, max_tokens=n, temperature=0,
                                                **extra))
    check(status == 200, "completion %r: status %d %s" % (prompt, status, body))
    return body


def chat_prompt(messages):
    text, system = "", None
    for m in messages:
        if m["role"] == "system":
            system = m["content"]
        elif m["role"] == "user":
            text += "<start_of_turn>user\n" + (system + "\n\n" if system else "") + \
                m["content"] + "<end_of_turn>\n"
            system = None
        else:
            text += "<start_of_turn>model\n" + m["content"] + "<end_of_turn>\n"
    return text + "<start_of_turn>model\n"


def wait_ready(proc):
    return wait_healthy(proc, lambda: request("GET", "/health", key=None)[:2], 300, 0.2)


def test_models():
    status, body, _ = request("GET", "/v1/models")
    body = json.loads(body)
    check(status == 200 and body["object"] == "list" and len(body["data"]) == 1,
          "models: %d %s" % (status, body))
    # both models served here are base models: no chat template, no -it tune
    check(body["data"][0].get("meta", {}).get("instruction_tuned") is False,
          "models: instruction_tuned should be false: %s" % body)
    return body["data"][0]["id"]


def test_completions(want):
    for prompt in PROMPTS:
        body = completion(prompt)
        ch = body["choices"][0]
        check(ch["text"] == want[prompt], "completion %r: %r != run's %r" %
              (prompt, ch["text"], want[prompt]))
        check(body["object"] == "text_completion" and ch["finish_reason"] in ("length", "stop"),
              "completion fields %s" % body)
        u = body["usage"]
        check(u["completion_tokens"] <= N and u["total_tokens"] ==
              u["prompt_tokens"] + u["completion_tokens"], "usage %s" % u)
        events, done = stream("/v1/completions", dict(prompt=prompt, max_tokens=N,
                                                      temperature=0))
        text = "".join(e["choices"][0]["text"] for e in events)
        check(done, "stream %r: no [DONE]" % prompt)
        check(text == want[prompt], "stream %r: %r != %r" % (prompt, text, want[prompt]))
        check(events and events[-1]["choices"][0]["finish_reason"] == ch["finish_reason"],
              "stream %r: last event %s" % (prompt, events[-1:]))


def test_concurrent(want):
    """One request's text is unchanged while 7 others run beside it."""
    results = {}

    def worker(i):
        prompt = PROMPTS[i % len(PROMPTS)]
        if i % 2:
            events, _ = stream("/v1/completions", dict(prompt=prompt, max_tokens=N,
                                                       temperature=0))
            results[i] = (prompt, "".join(e["choices"][0]["text"] for e in events))
        else:
            results[i] = (prompt, completion(prompt)["choices"][0]["text"])
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (prompt, text) in sorted(results.items()):
        check(text == want[prompt], "concurrent %d %r: %r != %r" % (i, prompt, text,
                                                                     want[prompt]))
    check(len(results) == 8, "concurrent: %d of 8 answered" % len(results))


def test_chat():
    messages = [{"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": "What is the capital of France?"}]
    want = run_text(chat_prompt(messages), N)
    status, body = post("/v1/chat/completions", dict(messages=messages, max_tokens=N,
                                                     temperature=0))
    check(status == 200, "chat: %d %s" % (status, body))
    msg = body["choices"][0]["message"]
    check(msg["role"] == "assistant" and msg["content"] == want,
          "chat: %r != run's %r" % (msg, want))
    check(body["object"] == "chat.completion", "chat object %s" % body["object"])
    events, done = stream("/v1/chat/completions", dict(messages=messages, max_tokens=N,
                                                       temperature=0))
    check(done and events[0]["choices"][0]["delta"].get("role") == "assistant",
          "chat stream start %s" % events[:1])
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events)
    check(text == want, "chat stream: %r != %r" % (text, want))


def test_stop(want):
    prompt = PROMPTS[0]
    full = want[prompt]
    # two ASCII characters past the start (the server matches bytes; text
    # decoded with U+FFFD would not match them)
    cut = next((i for i in range(1, len(full) - 1) if full[i:i + 2].isascii()), -1)
    if not check(cut > 0, "nothing ASCII in %r to stop at" % full):
        return
    stop_at = full[cut:cut + 2]
    body = completion(prompt, stop=[stop_at, "never-seen-text"])
    ch = body["choices"][0]
    check(ch["text"] == full[:full.find(stop_at)] and ch["finish_reason"] == "stop",
          "stop %r: %s" % (stop_at, ch))
    events, _ = stream("/v1/completions", dict(prompt=prompt, max_tokens=N, temperature=0,
                                               stop=stop_at))
    text = "".join(e["choices"][0]["text"] for e in events)
    check(text == ch["text"], "stop streamed: %r != %r" % (text, ch["text"]))


def expect_error(status_want, what, **kw):
    status, out, r = request(**kw)
    try:
        body = json.loads(out)
        ok = isinstance(body["error"]["message"], str) and "type" in body["error"]
    except (ValueError, KeyError, TypeError):
        ok, body = False, out[:200]
    check(status == status_want and ok, "%s: status %d (want %d), body %s" %
          (what, status, status_want, body))
    return body


def test_errors(name):
    c = "/v1/completions"
    expect_error(400, "malformed JSON", method="POST", path=c, raw=b'{"prompt": ')
    expect_error(400, "not an object", method="POST", path=c, raw=b'[1, 2]')
    expect_error(400, "no prompt", method="POST", path=c, body={})
    expect_error(400, "prompt type", method="POST", path=c, body={"prompt": 7})
    expect_error(400, "max_tokens type", method="POST", path=c,
                 body={"prompt": "x", "max_tokens": "many"})
    expect_error(400, "temperature range", method="POST", path=c,
                 body={"prompt": "x", "temperature": -1})
    expect_error(400, "stream type", method="POST", path=c, body={"prompt": "x", "stream": 1})
    expect_error(400, "n = 2", method="POST", path=c, body={"prompt": "x", "n": 2})
    expect_error(400, "stop type", method="POST", path=c, body={"prompt": "x", "stop": [1]})
    expect_error(404, "unknown model", method="POST", path=c,
                 body={"prompt": "x", "model": "not-" + name})
    long_prompt = "word " * (CTX * 2)
    body = expect_error(400, "prompt over the context", method="POST", path=c,
                        body={"prompt": long_prompt})
    check(str(CTX) in json.dumps(body), "the context size in %s" % body)
    expect_error(400, "max_tokens over the context", method="POST", path=c,
                 body={"prompt": "x", "max_tokens": CTX * 4})
    expect_error(400, "invalid UTF-8", method="POST", path=c,
                 raw=b'{"prompt": "\xff\xfe"}')
    expect_error(413, "huge body", method="POST", path=c,
                 raw=b'{"prompt": "' + b"a" * (2 << 20) + b'"}')
    expect_error(401, "no key", method="POST", path=c, body={"prompt": "x"}, key=None)
    expect_error(401, "wrong key", method="POST", path=c, body={"prompt": "x"}, key=KEY + "x")
    expect_error(401, "wrong key, models", method="GET", path="/v1/models", key="nope")
    expect_error(404, "unknown endpoint", method="GET", path="/v2/nothing")
    expect_error(405, "GET completions", method="GET", path=c)
    expect_error(400, "chat without messages", method="POST", path="/v1/chat/completions",
                 body={"messages": []})
    expect_error(400, "chat bad role", method="POST", path="/v1/chat/completions",
                 body={"messages": [{"role": "tool", "content": "x"}]})


def running():
    status, body, _ = request("GET", "/health", key=None)
    return json.loads(body)["running"]


def metric(name):
    _, body, _ = request("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    return -1


def gateway_gauges():
    """The vLLM-named gauges of /metrics, without their model_name label."""
    _, body, _ = request("GET", "/metrics")
    out = {}
    for line in body.decode().splitlines():
        if line.startswith("vllm:"):
            name, value = line.rsplit(" ", 1)
            check('{model_name="' in name, "gauge without its model label: %r" % line)
            out[name.split("{", 1)[0]] = float(value)
    return out


def test_disconnect():
    cancelled = metric("spillway_requests_cancelled_total")
    s = socket.create_connection(("127.0.0.1", PORT))
    body = json.dumps({"prompt": PROMPTS[1], "max_tokens": CTX // 2, "temperature": 0,
                       "stream": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
              KEY.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: " +
              str(len(body)).encode() + b"\r\n\r\n" + body)
    got = s.recv(4096)
    check(b"200" in got.split(b"\r\n")[0], "disconnect: %r" % got[:60])
    # streaming: it runs and holds cache rows, which the gateway gauges show
    # (the headers may come before its first forward: wait for that)
    t0 = time.time()
    gauges = gateway_gauges()
    while gauges.get("vllm:kv_cache_usage_perc", 0) == 0 and time.time() - t0 < 30:
        time.sleep(0.05)
        gauges = gateway_gauges()
    check(gauges.get("vllm:num_requests_running", 0) >= 1 and
          0 < gauges.get("vllm:kv_cache_usage_perc", 0) <= 1 and
          gauges.get("vllm:gpu_cache_usage_perc") == gauges.get("vllm:kv_cache_usage_perc"),
          "gateway gauges while streaming: %s" % gauges)
    s.close()
    # The headers come before the request is scheduled, so "nothing
    # running" alone could be seen before it starts: wait for the count.
    t0 = time.time()
    while (metric("spillway_requests_cancelled_total") == cancelled or running() > 0) and \
            time.time() - t0 < 30:
        time.sleep(0.05)
    check(running() == 0, "the sequence of a client that left is still running")
    check(metric("spillway_requests_cancelled_total") == cancelled + 1,
          "the request of a client that left was not cancelled")


def test_disconnect_slow():
    """test_disconnect on a server slow enough that the request cannot
    finish before the server sees the client leave (on a busy machine the
    client may not run for a while after the first event arrives): every
    forward streams the model over a throttled simulated link (the tiny
    model, 1.2 MB, at 50 MB/s: about 25 ms a token; the default one, 241
    MB, at 1 GB/s: about 0.25 s)."""
    global PORT
    main_port, PORT = PORT, free_port()
    proc = subprocess.Popen([BIN, "serve", *COMMON, "--port", str(PORT), "-np", "1",
                             "--api-key", KEY, "--backend", "sim", "--device-mem", "64M",
                             "--place", "all=streamed", "--sim-link-bw",
                             "50M" if MODEL else "1G"], stderr=subprocess.PIPE)
    try:
        if check(wait_ready(proc), "the slow server did not become ready"):
            test_disconnect()
    finally:
        rc = stop(proc)
        err = proc.stderr.read().decode("utf-8", "replace")
        check(rc == 0, "slow serve exited %d after SIGTERM: %s" % (rc, err[-500:]))
        PORT = main_port


def test_metrics():
    status, body, r = request("GET", "/metrics")
    text = body.decode()
    check(status == 200 and r.getheader("Content-Type", "").startswith("text/plain"),
          "metrics status %d" % status)
    values = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and line[0] != "#")
    check(int(values.get("spillway_requests_total", 0)) > 10 and
          int(values.get("spillway_generated_tokens_total", 0)) > 0,
          "metrics counts: %s" % text[:300])
    # idle: nothing waiting, running or cached; the capacity is -np x -c
    # (the *_info series, and every type and range: gateway_test.py)
    gauges = {k: v for k, v in gateway_gauges().items() if not k.endswith("_info")}
    check(gauges == {"vllm:num_requests_waiting": 0, "vllm:num_requests_running": 0,
                     "vllm:kv_cache_usage_perc": 0, "vllm:gpu_cache_usage_perc": 0},
          "idle gateway gauges: %s" % gauges)
    check(int(values.get("spillway_kv_cache_capacity_tokens", 0)) > 0,
          "kv capacity: %s" % values.get("spillway_kv_cache_capacity_tokens"))


def metric_values():
    _, body, _ = request("GET", "/metrics")
    return dict(line.rsplit(" ", 1) for line in body.decode().splitlines()
                if line and line[0] != "#")


def test_draft(want):
    """A server drafting from n-grams: greedy texts equal run's, alone and
    two at once; a request's draft_max 0 drafts nothing; "draft_max" and
    llama-server's "speculative.n_max" out of 0..16 are 400s naming the
    field; the spillway_spec_* series count the drafts."""
    global PORT
    main_port, PORT = PORT, free_port()
    proc = subprocess.Popen([BIN, "serve", *COMMON, "--port", str(PORT), "-np", "2",
                             "--api-key", KEY, "--draft-ngram", "--draft-max", "6"],
                            stderr=subprocess.PIPE)
    try:
        if not check(wait_ready(proc), "the drafting server did not become ready"):
            return
        for prompt in PROMPTS:
            text = completion(prompt)["choices"][0]["text"]
            check(text == want[prompt], "drafted %r: %r != run's %r" % (prompt, text,
                                                                      want[prompt]))
        got = {}
        threads = [threading.Thread(target=lambda p=p: got.__setitem__(p, completion(p)))
                   for p in PROMPTS[:2]]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        for p in PROMPTS[:2]:
            check(p in got and got[p]["choices"][0]["text"] == want[p],
                  "drafted, two at once %r" % p)
        before = metric_values()
        completion(PROMPTS[0], draft_max=0)
        after = metric_values()
        check(after["spillway_spec_drafted_tokens_total"] ==
              before["spillway_spec_drafted_tokens_total"], "draft_max 0 drafted")
        check(int(after["spillway_spec_verify_forwards_total"]) > 0 and
              int(after["spillway_spec_drafted_tokens_total"]) >=
              int(after["spillway_spec_accepted_tokens_total"]) and
              float(after["spillway_spec_tokens_per_verify"]) >= 1.0 and
              0.0 <= float(after["spillway_spec_acceptance_rate"]) <= 1.0,
              "spec metrics: %s" % {k: v for k, v in after.items() if "spec" in k})
        check(completion(PROMPTS[1], **{"speculative.n_max": 2})["choices"][0]["text"] ==
              want[PROMPTS[1]], "speculative.n_max 2")
        for field, value in (("draft_max", 17), ("draft_max", -1), ("speculative.n_max", 99),
                             ("draft_max", "4")):
            body = expect_error(400, "%s %r" % (field, value), method="POST",
                                path="/v1/chat/completions",
                                body={"messages": [{"role": "user", "content": "x"}],
                                      field: value})
            check(field in json.dumps(body), "the field in %s" % body)
    finally:
        rc = stop(proc)
        err = proc.stderr.read().decode("utf-8", "replace")
        check(rc == 0, "drafting serve exited %d after SIGTERM: %s" % (rc, err[-500:]))
        PORT = main_port


def test_queue_full_and_shutdown():
    """A second server, one sequence and a queue of one, made slow by a
    throttled simulated link (about a second per forward: the tiny model is
    1.2 MB, the default one 241 MB): a third request is refused with 503 and
    Retry-After; SIGTERM then ends the running one ("cancelled") and the
    queued one (an error event), and exits 0."""
    global PORT
    main_port, PORT = PORT, free_port()
    proc = subprocess.Popen([BIN, "serve", *COMMON, "--port", str(PORT), "-np", "1",
                             "--queue", "1", "--api-key", KEY, "--backend", "sim",
                             "--device-mem", "64M", "--place", "all=streamed",
                             "--sim-link-bw", "1M" if MODEL else "200M"],
                            stderr=subprocess.PIPE)
    got = {}

    def worker(i):
        got[i] = stream("/v1/completions", dict(prompt=PROMPTS[0], max_tokens=64,
                                                temperature=0))
    threads = []
    try:
        if not check(wait_ready(proc), "the slow server did not become ready"):
            return
        for i, field in enumerate(("running", "queued")):
            threads.append(threading.Thread(target=worker, args=(i,)))
            threads[-1].start()
            t0 = time.time()
            while time.time() - t0 < 30:
                _, body, _ = request("GET", "/health", key=None)
                if json.loads(body)[field] >= 1:
                    break
                time.sleep(0.02)
        status, body, r = request("POST", "/v1/completions", {"prompt": "x"})
        check(status == 503 and r.getheader("Retry-After") is not None and
              "busy" in body.decode(), "queue full: %d %s %s" % (status, r.getheaders(), body))
        _, body, _ = request("GET", "/health", key=None)
        check(json.loads(body)["status"] == "busy", "health while full: %s" % body)
    finally:
        rc = stop(proc)
        for t in threads:
            t.join(timeout=60)
        err = proc.stderr.read().decode("utf-8", "replace")
        check(rc == 0, "slow serve exited %d after SIGTERM: %s" % (rc, err[-500:]))
        PORT = main_port
    if len(got) == 2:
        (ev0, done0), (ev1, done1) = got[0], got[1]
        check(done0 and ev0 and ev0[-1]["choices"][0]["finish_reason"] == "cancelled",
              "the running request at shutdown: %s" % ev0[-1:])
        check(done1 and ev1 and "error" in ev1[-1], "the queued request at shutdown: %s" %
              ev1[-1:])
    check(len(got) == 2, "shutdown: %d of 2 streams ended" % len(got))


def main():
    want = {p: run_text(p, N) for p in PROMPTS}
    proc = subprocess.Popen([BIN, "serve", *COMMON, "--port", str(PORT), "-np", "4",
                             "--api-key", KEY], stderr=subprocess.PIPE)
    try:
        if not check(wait_ready(proc), "the server did not become ready"):
            return
        name = test_models()
        test_completions(want)
        test_concurrent(want)
        test_chat()
        test_stop(want)
        test_errors(name)
        test_disconnect_slow()
        test_metrics()
        test_draft(want)
        test_queue_full_and_shutdown()
    finally:
        rc = stop(proc)
        err = proc.stderr.read().decode("utf-8", "replace")
        check(rc == 0, "serve exited %d after SIGTERM: %s" % (rc, err[-500:]))
        check("ERROR: AddressSanitizer" not in err and "runtime error" not in err,
              "sanitizer report: %s" % err[-1500:])


main()
failures = serve_util.failures
print("serve_test: %s" % ("ok" if failures == 0 else "%d failures" % failures))
sys.exit(1 if failures else 0)
