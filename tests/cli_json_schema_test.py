#!/usr/bin/env python3
"""cli_json_schema_test.py — `spillway run --json-schema FILE` and `chat
--json-schema FILE` (issue 41, item 2): greedy and sampled outputs of the
tiny Gemma 3 parse as JSON with the schema's keys and bounds; a schema with
an unsupported keyword exits 2 naming it; other commands refuse the flag.

usage: cli_json_schema_test.py SPILLWAY MODEL
"""
import json
import os
import subprocess
import sys
import tempfile

BIN, MODEL = sys.argv[1], sys.argv[2]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, flush=True)


SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string", "maxLength": 10},
    "temp_c": {"type": "integer", "minimum": -50, "maximum": 60},
    "sky": {"enum": ["clear", "cloudy", "rain"]}},
    "required": ["city", "temp_c", "sky"], "additionalProperties": False}


def valid(text):
    try:
        v = json.loads(text)
    except ValueError:
        return False
    return set(v) == {"city", "temp_c", "sky"} and isinstance(v["city"], str) and \
        len(v["city"]) <= 10 and isinstance(v["temp_c"], int) and \
        -50 <= v["temp_c"] <= 60 and v["sky"] in ("clear", "cloudy", "rain")


with tempfile.TemporaryDirectory() as d:
    good, bad = os.path.join(d, "s.json"), os.path.join(d, "bad.json")
    with open(good, "w") as f:
        json.dump(SCHEMA, f)
    with open(bad, "w") as f:
        json.dump({"type": "string", "pattern": "^x+$"}, f)
    common = ["-m", MODEL, "-t", "2", "-c", "256", "-n", "120"]
    for extra in (["--temp", "0"], ["--temp", "1", "--seed", "5"]):
        p = subprocess.run([BIN, "run", *common, *extra, "-p", "Weather:", "--json-schema", good],
                           capture_output=True, timeout=300)
        out = p.stdout.decode("utf-8", "replace")
        check(p.returncode == 0 and valid(out), "run %s: exit %d, %r" % (extra, p.returncode, out))
    p = subprocess.run([BIN, "chat", *common, "--temp", "0", "--json-schema", good],
                       input=b"Weather?\nAnd tomorrow?\n", capture_output=True, timeout=300)
    lines = [x for x in p.stdout.decode("utf-8", "replace").splitlines() if x.strip()]
    check(p.returncode == 0 and len(lines) == 2 and all(valid(x) for x in lines),
          "chat: exit %d, %r" % (p.returncode, lines))
    p = subprocess.run([BIN, "run", *common, "-p", "x", "--json-schema", bad],
                       capture_output=True, timeout=60)
    check(p.returncode == 2 and b"pattern" in p.stderr, "bad schema: exit %d, %r" %
          (p.returncode, p.stderr))
    p = subprocess.run([BIN, "batch", "-m", MODEL, "--json-schema", good], capture_output=True,
                       timeout=60)
    check(p.returncode == 2, "batch took --json-schema: exit %d" % p.returncode)
print("cli_json_schema_test: %s" % ("ok" if failures == 0 else "%d failures" % failures))
sys.exit(1 if failures else 0)
