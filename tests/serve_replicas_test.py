#!/usr/bin/env python3
"""serve_replicas_test.py SPILLWAY MODEL — `serve --replicas 2` (issue 39,
section 2): two engines, each with its own simulated device and plan,
behind one server. Under concurrent load (streamed and whole answers) no
request is lost or fails; both replicas take requests; greedy answers to
one prompt are the same whichever replica ran them; /metrics' per-replica
series add up to the totals the server reports; SIGTERM exits 0 (clean
under the sanitizers). Flags the replicas cannot take are refused with
exit 2.
"""
import http.client
import json
import re
import subprocess
import sys
import threading
import time

from serve_util import check, free_port, stop, wait_healthy
import serve_util

N_CLIENTS, PER_CLIENT, N_GREEDY = 8, 2, 4


def request(port, body, timeout=300):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", "/v1/completions", body=json.dumps(body).encode(),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        return r.status, data
    finally:
        c.close()


def streamed_ok(data):
    """(text, ended with [DONE]) of a server-sent event stream."""
    text, done = "", False
    for event in data.split(b"\n\n"):
        if not event.startswith(b"data: "):
            continue
        payload = event[6:]
        if payload == b"[DONE]":
            done = True
            continue
        obj = json.loads(payload)
        if "error" in obj:
            return None, False
        text += obj["choices"][0]["text"]
    return text, done


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics")
    body = c.getresponse().read().decode()
    c.close()
    out = {}
    for line in body.splitlines():
        m = re.match(r'^([a-z_:]+)(\{[^}]*\})? ([0-9.e+-]+)$', line)
        if m:
            rep = re.search(r'replica="(\d+)"', m.group(2) or "")
            key = (m.group(1), int(rep.group(1))) if rep else m.group(1)
            out[key] = float(m.group(3))
    return out


def health(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/health")
    r = c.getresponse()
    return r.status, r.read()


def refused(binary, model, extra, want):
    p = subprocess.run([binary, "serve", "-m", model, "--port", str(free_port()), *extra],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 2, "%s: exit %d (want 2)" % (" ".join(extra), p.returncode))
    check(want in p.stderr, "%s: the message says %r: %s" % (" ".join(extra), want,
                                                              p.stderr.strip()[-300:]))


def main():
    binary, model = sys.argv[1], sys.argv[2]
    # one replica per GPU: more than any CI machine has
    refused(binary, model, ["--replicas", "8", "--backend", "cuda"], "GPU per replica")
    refused(binary, model, ["--replicas", "0"], "--replicas")
    refused(binary, model, ["--replicas", "9"], "--replicas")
    port = free_port()
    proc = subprocess.Popen([binary, "serve", "-m", model, "--port", str(port), "--replicas",
                             "2", "--backend", "sim", "--device-mem", "64M", "-np", "2",
                             "-c", "256", "-t", "1"], stderr=subprocess.PIPE)
    try:
        ok = wait_healthy(proc, lambda: health(port), 120, 0.2)
        check(ok, "serve --replicas 2 came up")
        if not ok:
            return
        results, lock = [], threading.Lock()

        def client(i):
            for j in range(PER_CLIENT):
                stream = (i + j) % 2 == 0
                body = {"prompt": "the river runs past the old mill %d" % (i * 10 + j),
                        "max_tokens": 12 + 4 * (i % 3), "temperature": 0.8, "seed": i * 7 + j,
                        "stream": stream}
                status, data = request(port, body)
                good = status == 200
                if good and stream:
                    good = streamed_ok(data)[1]
                elif good:
                    good = json.loads(data)["choices"][0]["finish_reason"] in ("stop", "length")
                with lock:
                    results.append(good)

        greedy = []

        def greedy_client():
            status, data = request(port, {"prompt": "the water turns the wheel",
                                          "max_tokens": 16, "temperature": 0})
            with lock:
                greedy.append(json.loads(data)["choices"][0]["text"] if status == 200 else None)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(N_CLIENTS)]
        threads += [threading.Thread(target=greedy_client) for _ in range(N_GREEDY)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sent = N_CLIENTS * PER_CLIENT + N_GREEDY
        check(len(results) == N_CLIENTS * PER_CLIENT and all(results),
              "every request answered whole: %d of %d" % (sum(results), len(results)))
        check(len(greedy) == N_GREEDY and greedy[0] is not None and
              all(g == greedy[0] for g in greedy),
              "greedy answers agree across replicas: %r" % greedy)
        m = {}
        for _ in range(50):   # the totals settle once the last request is released
            m = metrics(port)
            if m.get("spillway_running_requests") == 0 and m.get("spillway_queue_depth") == 0:
                break
            time.sleep(0.1)
        per = [m.get(("spillway_replica_requests_total", i), -1) for i in range(2)]
        print("requests per replica:", per, "total", m.get("spillway_requests_total"))
        check(m.get("spillway_requests_total") == sent,
              "spillway_requests_total %s (sent %d)" % (m.get("spillway_requests_total"), sent))
        check(sum(per) == sent and min(per) > 0,
              "both replicas took requests, adding up to the total: %s" % per)
        gen = [m.get(("spillway_replica_generated_tokens_total", i), -1) for i in range(2)]
        check(sum(gen) == m.get("spillway_generated_tokens_total") and min(gen) > 0,
              "generated tokens per replica %s add up to %s" % (
                  gen, m.get("spillway_generated_tokens_total")))
        fw = [m.get(("spillway_replica_forwards_total", i), -1) for i in range(2)]
        check(sum(fw) == m.get("spillway_forwards_total"),
              "forwards per replica %s add up to %s" % (fw, m.get("spillway_forwards_total")))
        check(all(m.get(("spillway_replica_up", i)) == 1 for i in range(2)),
              "both replicas up")
        check(m.get("spillway_requests_failed_total") == 0, "no request failed")
        check(m.get("vllm:num_requests_running") == 0 and m.get("vllm:num_requests_waiting") == 0,
              "the gateway's series are the totals, idle at the end")
    finally:
        rc = stop(proc)
        err = proc.stderr.read().decode("utf-8", "replace")
        check(rc == 0 and "Sanitizer" not in err, "SIGTERM: exit %d\n%s" % (rc, err[-2000:]))
        check("2 replicas, 4 sequences in all" in err, "the start-up line names the replicas")
    print("serve_replicas_test: %d failures" % serve_util.failures)
    sys.exit(1 if serve_util.failures else 0)


if __name__ == "__main__":
    main()
