#!/usr/bin/env python3
"""`spillway info --json` on the default model must list every tensor with
the name, type, shape, size and offset that the `gguf` Python package sees
(tests/data/model_tensor_table.tsv, made by tools/golden/make_model_info.py),
and the text output must list them too. Usage: info_test.py SPILLWAY_BINARY"""
import json
import subprocess
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "data/model_tensor_table.tsv"


def main() -> int:
    exe = sys.argv[1]
    expected, n_meta = [], None
    for line in TABLE.read_text().splitlines():
        if line.startswith("# n_meta "):
            n_meta = int(line.split()[2])
        if line.startswith("#"):
            continue
        name, typ, shape, nbytes, offset = line.split("\t")
        expected.append((name, typ, [int(d) for d in shape.split(",")], int(nbytes), int(offset)))

    run = subprocess.run([exe, "info", "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"spillway info --json failed ({run.returncode}): {run.stderr}")
        return 1
    info = json.loads(run.stdout)
    got = [(t["name"], t["type"], t["shape"], t["bytes"], t["offset"]) for t in info["tensors"]]
    failures = 0
    if len(got) != len(expected):
        print(f"tensor count {len(got)} != {len(expected)}")
        failures += 1
    for g, e in zip(got, expected):
        if g != e:
            print(f"mismatch: spillway {g} vs gguf {e}")
            failures += 1
    checks = {
        "architecture": ("gemma3", info["architecture"]),
        "n_meta": (n_meta, len(info["metadata"])),
        "n_vocab": (262144, info["tokenizer"]["n_vocab"]),
        "n_layer": (18, info["hparams"]["n_layer"]),
        "file_type": ("Q4_K_M", info["file_type"]),
        "total bytes": (sum(e[3] for e in expected), info["tensor_bytes"]),
    }
    for what, (want, have) in checks.items():
        if want != have:
            print(f"{what}: expected {want}, got {have}")
            failures += 1

    text = subprocess.run([exe, "info"], capture_output=True, text=True)
    listed = sum(1 for e in expected if f"  {e[0]} " in text.stdout)
    if text.returncode != 0 or listed != len(expected):
        print(f"text output lists {listed} of {len(expected)} tensors (exit {text.returncode})")
        failures += 1
    print(f"info_test: {len(expected)} tensors compared, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
