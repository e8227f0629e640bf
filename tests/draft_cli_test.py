#!/usr/bin/env python3
"""draft_cli_test.py — speculative decoding through every generating
command: with greedy sampling `run`, `chat` and `batch` give the same text
with --draft-ngram and with a draft model (the tiny model drafting for
itself) as without; the drafts show in run's stats line, in --report and
--report-json, and in batch's summary; `plan` prints the draft model's
plan after the target's (text and JSON) and refuses two drafters. The
tiny Gemma 4 with its assistant through run, chat, batch and plan.

usage: draft_cli_test.py SPILLWAY MODEL
"""
import json
import os
import subprocess
import sys
import tempfile

import serve_util
from serve_util import check

BIN, MODEL = sys.argv[1], sys.argv[2]
COMMON = ["-m", MODEL, "-c", "256", "-t", "1", "--backend", "cpu", "--temp", "0"]
DRAFTERS = [["--draft-ngram", "--draft-max", "6"], ["-md", MODEL, "--draft-max", "3"]]
PROMPTS = ["1, 2, 3, 1, 2, 3, 1, 2,", "the cat sat on the mat and the cat", "Once upon a time"]


def spillway(*args, stdin=None):
    p = subprocess.run([BIN, *args], input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def spec_keys(obj):
    return {"drafted_tokens", "accepted_tokens", "acceptance_rate", "tokens_per_verify",
            "verify_forwards", "verify_tokens"} <= set(obj)


def test_run(tmp):
    for prompt in PROMPTS:
        rc, plain, _ = spillway("run", *COMMON, "-n", "24", "-p", prompt)
        check(rc == 0, "run %r: exit %d" % (prompt, rc))
        for d in DRAFTERS:
            path = os.path.join(tmp, "report.json")
            rc, out, err = spillway("run", *COMMON, *d, "-n", "24", "-p", prompt, "--report",
                                    "--report-json", path)
            check(rc == 0 and out == plain, "run %s %r: %r != %r" % (d[0], prompt, out, plain))
            check("speculative: " in err and "tokens per verify over" in err,
                  "run --report %s: %s" % (d[0], err[-400:]))
            try:
                with open(path) as f:
                    ok = spec_keys(json.load(f).get("speculative", {}))
            except (OSError, ValueError):
                ok = False
            check(ok, "run --report-json %s: no speculative keys" % d[0])
    _, _, err = spillway("run", *COMMON, *DRAFTERS[1], "-n", "24", "-p", PROMPTS[0])
    check("drafts accepted" in err, "run's stats line: %s" % err[-300:])
    _, _, err = spillway("run", *COMMON, "-n", "4", "-p", PROMPTS[0], "--report")
    check("speculative" not in err, "run --report without a drafter: %s" % err[-300:])


def test_chat():
    turns = "hello there\nthe cat sat on the mat\n".encode()
    rc, plain, _ = spillway("chat", *COMMON, "-n", "16", stdin=turns)
    check(rc == 0, "chat: exit %d" % rc)
    for d in DRAFTERS:
        rc, out, err = spillway("chat", *COMMON, *d, "-n", "16", "--report", stdin=turns)
        check(rc == 0 and out == plain, "chat %s: %r != %r" % (d[0], out, plain))
        check("speculative: " in err, "chat --report %s: %s" % (d[0], err[-300:]))


def test_batch(tmp):
    path = os.path.join(tmp, "prompts.jsonl")
    with open(path, "w") as f:
        for i, p in enumerate(PROMPTS * 2):
            f.write(json.dumps({"id": i, "prompt": p}) + "\n")

    def texts(out):
        return [json.loads(line)["text"] for line in out.decode().splitlines()]
    rc, plain, _ = spillway("batch", *COMMON, "-n", "20", "-np", "2", "-f", path)
    check(rc == 0, "batch: exit %d" % rc)
    for d in DRAFTERS:
        rc, out, err = spillway("batch", *COMMON, *d, "-n", "20", "-np", "2", "-f", path)
        check(rc == 0 and texts(out) == texts(plain), "batch %s: texts differ" % d[0])
        check("speculative: " in err, "batch summary %s: %s" % (d[0], err[-300:]))


def test_plan():
    rc, out, _ = spillway("plan", *COMMON[:-2], "-md", MODEL, "--draft-max", "3")
    text = out.decode()
    check(rc == 0 and "drafter: %s (speculative decoding, --draft-max 3)" % MODEL in text and
          text.count("tier ") == 2, "plan -md: exit %d\n%s" % (rc, text[-600:]))
    rc, out, _ = spillway("plan", *COMMON[:-2], "-md", MODEL, "--json")
    try:
        doc = json.loads(out)
        ok = "layers" in doc and doc["drafter"]["model"] == MODEL and \
            "layers" in doc["drafter"]["plan"] and 1 <= doc["drafter"]["draft_max"] <= 16
    except (ValueError, KeyError, TypeError):
        ok = False
    check(rc == 0 and ok, "plan -md --json: exit %d %s" % (rc, out[-300:]))
    # one budget: on a device the draft model is planned first and its share
    # reserved in the target's plan (its device row), the drafter planned in it
    rc, out, _ = spillway("plan", "-m", MODEL, "-c", "256", "--backend", "sim",
                          "--device-mem", "64M", "-md", MODEL)
    text = out.decode()
    row = [l for l in text.splitlines() if l.startswith("device ")]
    check(rc == 0 and len(row) == 2 and "| drafter %s " % os.path.basename(MODEL) in row[0],
          "plan -md on sim: exit %d\n%s" % (rc, text[-800:]))
    # a device too small for both at the draft's first wish: it gives back
    # until the target (every layer streamed) fits, and the two still run
    small = ["-c", "256", "--backend", "sim", "--device-mem", "1M", "--place", "all=streamed"]
    rc, out, err = spillway("plan", "-m", MODEL, *small, "-md", MODEL)
    text = out.decode()
    check(rc == 0 and "| drafter %s " % os.path.basename(MODEL) in text,
          "plan -md on a 1M sim: exit %d %s\n%s" % (rc, err[-300:], text[-600:]))
    run = ["run", "-m", MODEL, *small, "-t", "1", "--temp", "0", "-n", "16", "-p", PROMPTS[2]]
    rc, plain, _ = spillway(*run)
    rc2, out, err = spillway(*run, "-md", MODEL, "--draft-max", "3")
    check(rc == 0 and rc2 == 0 and out == plain, "run -md on a 1M sim: %d %d %s" %
          (rc, rc2, err[-300:]))
    rc, _, err = spillway("plan", *COMMON[:-2], "-md", MODEL, "--draft-ngram")
    check(rc == 2 and "one drafter" in err, "plan with two drafters: exit %d %s" % (rc, err))


def test_assistant(tmp):
    """The tiny Gemma 4 with its assistant (a folder beside MODEL): run, chat
    and batch as without; plan's device row reserves it (text and JSON)."""
    tiny = os.path.dirname(MODEL)
    target, asst = os.path.join(tiny, "gemma4-kv.gguf"), os.path.join(tiny, "gemma4-kv-assistant-hf")
    common = ["-m", target, "-c", "256", "-t", "1", "--temp", "0", "--backend", "sim",
              "--device-mem", "64M"]
    draft = ["-md", asst, "--draft-max", "4"]
    for prompt in PROMPTS:
        rc, plain, _ = spillway("run", *common, "-n", "24", "-p", prompt)
        rc2, out, err = spillway("run", *common, *draft, "-n", "24", "-p", prompt, "--report")
        check(rc == 0 and rc2 == 0 and out == plain,
              "run -md assistant %r: %r != %r (%s)" % (prompt, out, plain, err[-300:]))
        check("Gemma 4 assistant drafts" in err and "speculative: " in err,
              "run -md assistant: %s" % err[-300:])
    turns = "hello there\nthe cat sat on the mat\n".encode()
    rc, plain, _ = spillway("chat", *common, "-n", "16", stdin=turns)
    rc2, out, _ = spillway("chat", *common, *draft, "-n", "16", stdin=turns)
    check(rc == 0 and rc2 == 0 and out == plain, "chat -md assistant: %r != %r" % (out, plain))
    path = os.path.join(tmp, "prompts4.jsonl")
    with open(path, "w") as f:
        for i, p in enumerate(PROMPTS * 2):
            f.write(json.dumps({"id": i, "prompt": p}) + "\n")
    rc, plain, _ = spillway("batch", *common, "-n", "20", "-np", "2", "-f", path)
    rc2, out, err = spillway("batch", *common, *draft, "-n", "20", "-np", "2", "-f", path)

    def texts(out):
        return [json.loads(line)["text"] for line in out.decode().splitlines()]
    check(rc == 0 and rc2 == 0 and texts(out) == texts(plain),
          "batch -md assistant: %s" % err[-300:])
    plan = ["plan", "-m", target, "-c", "256", "--backend", "sim", "--device-mem", "64M"]
    rc, out, _ = spillway(*plan, *draft)
    text = out.decode()
    check(rc == 0 and "| drafter gemma4-kv-assistant-hf " in text and
          "a Gemma 4 assistant over the target's caches" in text,
          "plan -md assistant: exit %d\n%s" % (rc, text[-800:]))
    rc, out, _ = spillway(*plan, *draft, "--json")
    try:
        doc = json.loads(out)
        ok = doc["budget"]["drafter_bytes"] > 0 and doc["drafter"]["model"] == asst and \
            doc["budget"]["device_bytes"] + doc["budget"]["drafter_bytes"] == 64 << 20
    except (ValueError, KeyError, TypeError):
        ok = False
    check(rc == 0 and ok, "plan -md assistant --json: exit %d %s" % (rc, out[-400:]))


with tempfile.TemporaryDirectory() as tmp:
    test_run(tmp)
    test_chat()
    test_batch(tmp)
    test_plan()
    test_assistant(tmp)
failures = serve_util.failures
print("draft_cli_test: %s" % ("ok" if failures == 0 else "%d failures" % failures))
sys.exit(1 if failures else 0)
