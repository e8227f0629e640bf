#!/usr/bin/env python3
"""serve_fuzz.py — random and mutated requests against `spillway serve`.

For a bounded time ($SW_SERVE_FUZZ_SECONDS, default 15) it sends request
bodies mutated from valid ones (bytes flipped, inserted, deleted,
truncated; JSON values swapped for other types, huge numbers, deep
nesting, long strings, invalid UTF-8), plain random bytes, odd methods
and paths, wrong and missing keys, and streams it abandons halfway. Every
answer must be HTTP with an expected status and, for errors, an
OpenAI-shaped JSON body; the server must stay up, and exit 0 on SIGTERM
with no sanitizer report (the sanitizer build runs this too). The seed
makes a run repeatable ($SW_SERVE_FUZZ_SEED).

usage: serve_fuzz.py SPILLWAY MODEL
"""
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import time

import serve_util
from serve_util import check, free_port, stop

BIN, MODEL = sys.argv[1], sys.argv[2]
SECONDS = float(os.environ.get("SW_SERVE_FUZZ_SECONDS", "15"))
SEED = int(os.environ.get("SW_SERVE_FUZZ_SEED", "1234"))
KEY = "fuzz-key"
OK_STATUS = {200, 400, 401, 404, 405, 413, 503}
rng = random.Random(SEED)

SEEDS = [
    {"prompt": "Hello there", "max_tokens": 4, "temperature": 0},
    {"prompt": ["One string"], "max_tokens": 3, "stream": True, "stop": ["\n", "x"]},
    {"prompt": "p", "max_tokens": 2, "temperature": 0.7, "top_p": 0.9, "seed": 5, "n": 1},
    {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
     "max_tokens": 3},
    {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                  {"role": "user", "content": "c"}], "stream": True, "max_tokens": 2},
]
PATHS = ["/v1/completions", "/v1/chat/completions", "/v1/models", "/health", "/metrics",
         "/v1/nothing", "/", "/v1/completions?x=1", "/v1//completions"]
ODD_VALUES = [None, True, False, 0, -1, 1e308, -1e308, 2 ** 63, -(2 ** 63), 1.5, "", "x" * 5000,
              [], {}, [[[[[]]]]], {"a": {"b": {}}}, "\u0000", "\ud7ff\ue000", 9007199254740993]


def mutate_json(obj):
    obj = json.loads(json.dumps(obj))
    for _ in range(rng.randint(1, 3)):
        target = obj
        if "messages" in obj and rng.random() < 0.4 and isinstance(obj["messages"], list) \
                and obj["messages"]:
            target = rng.choice(obj["messages"])
            if not isinstance(target, dict):
                continue
        keys = list(target.keys()) + ["model", "stop", "stream", "max_tokens", "extra"]
        key = rng.choice(keys)
        if rng.random() < 0.2:
            target.pop(key, None)
        else:
            target[key] = rng.choice(ODD_VALUES)
    return json.dumps(obj).encode()


def mutate_bytes(data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(4)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        elif op == 1:
            data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op == 2 and data:
            del data[pos:pos + rng.randint(1, 8)]
        else:
            data = data[:pos]
    return bytes(data)


def body():
    r = rng.random()
    seed = rng.choice(SEEDS)
    if r < 0.35:
        return mutate_json(seed)
    if r < 0.7:
        return mutate_bytes(json.dumps(seed).encode())
    if r < 0.8:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
    if r < 0.9:
        depth = rng.randint(10, 5000)
        return b"[" * depth + b"]" * depth
    return json.dumps(seed).encode()


def one(port):
    path = rng.choice(PATHS)
    method = rng.choice(["POST"] * 6 + ["GET", "PUT", "DELETE"])
    headers = {"Content-Type": "application/json"}
    r = rng.random()
    if r < 0.85:
        headers["Authorization"] = "Bearer " + KEY
    elif r < 0.93:
        headers["Authorization"] = "Bearer " + KEY[:-1]
    data = body() if method != "GET" else None
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        c.request(method, path, body=data, headers=headers)
        resp = c.getresponse()
        if rng.random() < 0.15:  # leave mid-answer
            resp.read(rng.randint(0, 64))
            return
        out = resp.read()
    finally:
        c.close()
    check(resp.status in OK_STATUS, "%s %s -> %d (%r)" % (method, path, resp.status, data[:80]
                                                           if data else None))
    if resp.status >= 400:
        try:
            ok = "message" in json.loads(out)["error"]
        except (ValueError, KeyError, TypeError):
            ok = False
        check(ok, "%s %s -> %d with body %r" % (method, path, resp.status, out[:120]))


def main():
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", "-m", MODEL, "-t", "1", "-c", "128", "-np", "2",
                             "--port", str(port), "--api-key", KEY, "--max-body", "65536"],
                            stderr=subprocess.PIPE)
    n = 0
    try:
        t0 = time.time()
        while time.time() - t0 < 120:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if not check(proc.poll() is None, "the server died while starting"):
                    return
                time.sleep(0.1)
        t0 = time.time()
        while time.time() - t0 < SECONDS and proc.poll() is None:
            try:
                one(port)
            except (http.client.HTTPException, OSError) as e:
                check(proc.poll() is None, "the server died: %s" % e)
            n += 1
        check(proc.poll() is None, "the server died after %d requests" % n)
    finally:
        rc = stop(proc)
        err = proc.stderr.read().decode("utf-8", "replace")
        check(rc == 0, "serve exited %d: %s" % (rc, err[-1500:]))
        check("Sanitizer" not in err and "runtime error" not in err,
              "sanitizer report: %s" % err[-1500:])
    print("serve_fuzz: %d requests in %.0f s, seed %d: %s" %
          (n, SECONDS, SEED, "ok" if serve_util.failures == 0 else
           "%d failures" % serve_util.failures))


main()
sys.exit(1 if serve_util.failures else 0)
