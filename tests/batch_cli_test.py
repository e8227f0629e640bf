#!/usr/bin/env python3
"""batch_cli_test.py — `spillway batch` end to end.

With greedy sampling every output text must equal `spillway run`'s for the
same prompt, for every -np and every plan (resident, streamed, host layers
on the simulated device, and the cpu backend), also spread over 2 and 3
replicas (--replicas: engines of their own); results come in input
order; bad lines are reported with their line number and skipped while the
rest still run; per-request n_predict and stop strings are honoured (the
text cut where the stop string starts, "stop": "stop"); a summary with the
aggregate tokens/s ends the run.

usage: batch_cli_test.py SPILLWAY [MODEL]   (MODEL: default = the fetched one)
"""
import json
import os
import subprocess
import sys
import tempfile

BIN = sys.argv[1]
MODEL = ["-m", sys.argv[2]] if len(sys.argv) > 2 else []
N = 12
PROMPTS = [
    "The three laws of thermodynamics are",
    "Once upon a time, in a village by the sea,",
    "def fibonacci(n):",
    "春天来了，",
    "A",
    "The quick brown fox jumps over the lazy dog because it wanted to see what was on the "
    "other side of the river that ran through the valley",
]
PLANS = {
    "cpu": ["--backend", "cpu"],
    "resident": ["--backend", "sim", "--device-mem", "1G"],
    "streamed": ["--backend", "sim", "--device-mem", "1G", "--place", "all=streamed"],
    "host": ["--backend", "sim", "--device-mem", "1G", "--place", "all=host,lm_head=resident"],
    # a split over two simulated devices (x2: each replica its own pair)
    "split": ["--backend", "sim", "--device-mem", "1G,1G"],
}
COMMON = MODEL + ["-t", "2", "-c", "256", "-b", "16", "--temp", "0"]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)
    return cond


def run_text(prompt, n):
    p = subprocess.run([BIN, "run", *COMMON, "-p", prompt, "-n", str(n)],
                       capture_output=True, timeout=300)
    check(p.returncode == 0, "run %r: exit %d: %s" % (prompt, p.returncode, p.stderr[-300:]))
    return p.stdout.decode("utf-8", "replace")


def write_requests(path, stop):
    lines = []
    for i, text in enumerate(PROMPTS):
        req = {"id": "p%d" % i, "prompt": text}
        if i == 2:
            req["n_predict"] = 5
        lines.append(json.dumps(req, ensure_ascii=False))
        if i == 1:
            lines.append("{not json")                      # line 3: reported, skipped
            lines.append(json.dumps({"id": 7}))            # line 4: no prompt
            lines.append("")                               # blank: ignored
    # a stop string: the first one's text, cut where `stop` starts
    lines.append(json.dumps({"id": "s0", "prompt": PROMPTS[0], "stop": ["never-seen", stop]},
                            ensure_ascii=False))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main():
    want = {}
    for i, text in enumerate(PROMPTS):
        want["p%d" % i] = run_text(text, 5 if i == 2 else N)
    # two ASCII characters past the first (the tiny model's text may hold
    # bytes that are not UTF-8, shown as U+FFFD, which no stop string matches)
    full = want["p0"]
    at = next((i for i in range(1, len(full) - 1)
               if full[i].isascii() and full[i + 1].isascii()), None)
    if not check(at is not None, "nothing ASCII in %r to stop at" % full):
        return 1
    stop = full[at:at + 2]
    want["s0"] = full[:full.find(stop)]
    with tempfile.TemporaryDirectory() as tmp:
        req = os.path.join(tmp, "req.jsonl")
        out = os.path.join(tmp, "out.jsonl")
        write_requests(req, stop)
        # --replicas: engines of their own; on cuda one per GPU, refused by
        # count where fewer are visible (every machine CI runs on)
        p = subprocess.run([BIN, "batch", *COMMON, "--backend", "cuda", "--replicas", "8",
                            "-f", req, "-o", out], capture_output=True, timeout=60)
        check(p.returncode == 2 and b"GPU per replica" in p.stderr,
              "--replicas 8 on cuda: exit %d: %s" % (p.returncode, p.stderr[-300:]))
        for plan, flags in PLANS.items():
            for np_, reps in ((1, 1), (4, 1), (8, 1), (2, 2)) + (((1, 3),) if plan == "resident"
                                                               else ()):
                p = subprocess.run([BIN, "batch", *COMMON, *flags, "-np", str(np_), "-n", str(N),
                                    "--replicas", str(reps), "-f", req, "-o", out],
                                   capture_output=True, timeout=600)
                err = p.stderr.decode("utf-8", "replace")
                tag = "%s -np %d x%d" % (plan, np_, reps)
                if not check(p.returncode == 0, "%s: exit %d: %s" % (tag, p.returncode, err)):
                    continue
                check("line 3:" in err and "line 4:" in err, "%s: bad lines not reported "
                      "with their numbers: %s" % (tag, err))
                check("tok/s" in err.splitlines()[-1], "%s: no summary line: %s" % (tag, err))
                with open(out, encoding="utf-8") as f:
                    got = [json.loads(line) for line in f]
                check([g["id"] for g in got] == list(want), "%s: ids/order %s" %
                      (tag, [g["id"] for g in got]))
                same = 0
                for g in got:
                    if check(g["text"] == want.get(g["id"]), "%s: %s text %r != run's %r" %
                             (tag, g["id"], g["text"], want.get(g["id"]))):
                        same += 1
                    check(g["n_generated"] <= (5 if g["id"] == "p2" else N) and
                          g["n_prompt"] > 0, "%s: %s counts %s" % (tag, g["id"], g))
                    check((g["stop"] == "stop") == (g["id"] == "s0"),
                          "%s: %s ended %s" % (tag, g["id"], g["stop"]))
                print("ok   %-9s -np %d x%d: %d/%d texts equal run's; %s" %
                      (plan, np_, reps, same, len(want), err.splitlines()[-1][:110]))
    print("batch_cli: %d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
