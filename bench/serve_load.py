#!/usr/bin/env python3
"""serve_load.py — a bounded load test of `spillway serve` on loopback.

Per plan: starts the server, measures one client alone (the single-request
figure), then CLIENTS concurrent streaming clients for SECONDS, each
sending request after request with mixed prompt lengths (short, medium,
long) and lengths to generate. Reports requests, failures (any status but
200, an error event, a stream without [DONE]), aggregate generated tokens/s,
time to first token p50/p99, and each request's own decode rate. The server
must exit 0 on SIGTERM (no leak when the binary is a sanitizer build).

Not a test: loopback on a shared machine is noisy; compare plans run side
by side in one invocation.

usage: bench/serve_load.py [--bin build/spillway] [-m MODEL] [--seconds 60]
         [--clients 32] [-np 8] [-c 512] [-t 2] [--plans cpu,resident,streamed]
         [--replicas 1,2] [--rounds R] [--out FILE.md]
  plans: cpu (the cpu backend), resident (sim device, every layer resident),
         streamed (sim device, every layer streamed over a 2 GB/s link)
  --replicas: each plan at each count (serve --replicas N: N engines, each
         with -np and -t of its own), rounds interleaved; the summary gives
         each count's median aggregate tok/s against one replica's
"""
import argparse
import datetime
import http.client
import json
import platform
import random
import signal
import socket
import statistics
import subprocess
import threading
import time

PLANS = {
    "cpu": ["--backend", "cpu"],
    "resident": ["--backend", "sim", "--device-mem", "2G"],
    "streamed": ["--backend", "sim", "--device-mem", "256M", "--place", "all=streamed",
                 "--sim-link-bw", "2G"],
}
WORDS = ("the river runs past the old mill where the miller keeps his stones and the "
         "water turns the wheel all day long while the village sleeps").split()


def prompt_of(rng):
    n = rng.choice([4, 40, 160])  # words: short, medium, long prompts
    return " ".join(rng.choice(WORDS) for _ in range(n))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_request(port, rng):
    """(ok, ttft_s, n_tokens, decode_s) of one streamed completion."""
    body = {"prompt": prompt_of(rng), "max_tokens": rng.choice([16, 32, 64]),
            "temperature": 0.8, "seed": rng.randrange(1 << 30), "stream": True}
    t0 = time.time()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        c.request("POST", "/v1/completions", body=json.dumps(body).encode(),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            r.read()
            return False, 0, 0, 0
        first, n, done, buf = None, 0, False, b""
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                data = event[6:]
                if data == b"[DONE]":
                    done = True
                    continue
                obj = json.loads(data)
                if "error" in obj:
                    return False, 0, 0, 0
                ch = obj["choices"][0]
                if ch["text"] and first is None:
                    first = time.time()
                if ch["finish_reason"] is not None:
                    n = obj["usage"]["completion_tokens"]
        t1 = time.time()
        if not done or first is None:
            return n == 0 and done, (first or t1) - t0, n, 0
        return True, first - t0, n, t1 - first
    except (OSError, http.client.HTTPException, ValueError):
        return False, 0, 0, 0
    finally:
        c.close()


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def load(port, clients, seconds):
    results, lock = [], threading.Lock()
    t_end = time.time() + seconds

    def client(i):
        rng = random.Random(i)
        while time.time() < t_end:
            res = one_request(port, rng)
            with lock:
                results.append(res)
    t0 = time.time()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.time() - t0


def summarize(results, wall):
    ok = [r for r in results if r[0]]
    tokens = sum(r[2] for r in ok)
    rates = [r[2] / r[3] for r in ok if r[3] > 0 and r[2] > 1]
    return {"requests": len(results), "failed": len(results) - len(ok), "tokens": tokens,
            "tok_s": tokens / wall if wall > 0 else 0, "wall": wall,
            "ttft_p50": pct([r[1] for r in ok], 50), "ttft_p99": pct([r[1] for r in ok], 99),
            "per_req_tok_s": statistics.median(rates) if rates else float("nan")}


def run_plan(args, name, replicas):
    port = free_port()
    cmd = [args.bin, "serve", *(["-m", args.model] if args.model else []), "--port", str(port),
           "-np", str(args.np), "-c", str(args.ctx), "-t", str(args.threads), *PLANS[name],
           *(["--replicas", str(replicas)] if replicas > 1 else [])]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
    try:
        t0 = time.time()
        while time.time() - t0 < 300:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        rng = random.Random(99)
        single = [one_request(port, rng) for _ in range(args.single)]
        one = summarize(single, sum(r[1] + r[3] for r in single))
        many, wall = load(port, args.clients, args.seconds)
        return cmd, one, summarize(many, wall)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        err = proc.stderr.read().decode("utf-8", "replace")
        if rc != 0 or "Sanitizer" in err:
            print("serve_load: %s: server exited %d\n%s" % (name, rc, err[-2000:]))
            raise SystemExit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/spillway")
    ap.add_argument("-m", dest="model")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("-np", dest="np", type=int, default=8)
    ap.add_argument("-c", dest="ctx", type=int, default=512)
    ap.add_argument("-t", dest="threads", type=int, default=2)
    ap.add_argument("--single", type=int, default=5, help="requests of the single client")
    ap.add_argument("--plans", default="cpu,resident,streamed")
    ap.add_argument("--replicas", default="1")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    counts = [int(x) for x in args.replicas.split(",")]
    for rnd in range(args.rounds):
        for name in args.plans.split(","):
            for n in counts:
                label = name if n == 1 else "%s x%d replicas" % (name, n)
                print("serve_load: round %d, plan %s: one client, then %d clients for %.0f s" %
                      (rnd + 1, label, args.clients, args.seconds), flush=True)
                cmd, one, many = run_plan(args, name, n)
                rows.append((label, cmd, one, many))
    head = ("| plan | clients | requests | failed | generated tok/s | TTFT p50 / p99 (s) "
            "| per-request decode tok/s |\n|---|---:|---:|---:|---:|---|---:|")
    lines = [head]
    for name, _, one, many in rows:
        for label, s in (("1", one), (str(args.clients), many)):
            lines.append("| %s | %s | %d | %d | %.1f | %.2f / %.2f | %.1f |" % (
                name, label, s["requests"], s["failed"], s["tok_s"], s["ttft_p50"],
                s["ttft_p99"], s["per_req_tok_s"]))
    if len(counts) > 1:   # each count's median aggregate against one replica's
        lines.append("")
        lines.append("| plan | replicas | median generated tok/s (%d clients) | against 1 |"
                     % args.clients)
        lines.append("|---|---:|---:|---:|")
        for name in args.plans.split(","):
            med = {}
            for n in counts:
                label = name if n == 1 else "%s x%d replicas" % (name, n)
                med[n] = statistics.median(m["tok_s"] for l, _, _, m in rows if l == label)
            for n in counts:
                lines.append("| %s | %d | %.1f | %s |" % (
                    name, n, med[n], "%.2fx" % (med[n] / med[1]) if 1 in med else "-"))
    table = "\n".join(lines)
    print(table)
    if args.out:
        cpu = platform.processor() or "?"
        try:
            with open("/proc/cpuinfo") as f:
                cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
        except (OSError, StopIteration):
            pass
        with open(args.out, "w") as f:
            f.write("# `spillway serve` under load (issues 14, 39)\n\n%s, %s, bench/serve_load.py "
                    "--seconds %.0f --clients %d -np %d -c %d -t %d --replicas %s --rounds %d"
                    ".\n\n" % (datetime.date.today().isoformat(), cpu, args.seconds,
                                 args.clients, args.np, args.ctx, args.threads, args.replicas,
                                 args.rounds))
            f.write("Each client streams completion after completion (prompts of 4, 40 or "
                    "160 words; 16, 32 or 64 tokens at temperature 0.8); the row with 1 "
                    "client is %d requests alone, before the load. TTFT counts queueing; "
                    "per-request decode is a request's tokens over the time from its first "
                    "to its last token (median).\n\n%s\n\nServers:\n\n" % (args.single, table))
            seen = set()
            for name, cmd, _, _ in rows:
                if name not in seen:
                    seen.add(name)
                    f.write("    %s\n" % " ".join(cmd))
        print("wrote", args.out)


main()
