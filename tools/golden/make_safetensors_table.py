#!/usr/bin/env python3
"""make_safetensors_table.py — reference table of the tiny HF safetensors files.

Reads tests/data/tiny/{gemma1,gemma2,gemma3}-hf/model.safetensors with the
`safetensors` package (the format's reference reader) and writes
tests/data/safetensors_table.tsv, which tests/test_safetensors.c checks
Spillway's reader against: every tensor's name, dtype, shape and the sha256
of its raw bytes as the reference returns them, and every __metadata__
entry. Lines:

    tensor<TAB>model<TAB>name<TAB>dtype<TAB>shape<TAB>sha256   (shape "2,3"; "" for a scalar)
    meta<TAB>model<TAB>key<TAB>value

Header lines start with '#' and record the versions and each file's sha256.
Deterministic: same files and versions give the same bytes.

Run:  /work/refenv/bin/python tools/golden/make_safetensors_table.py
"""
import hashlib
import sys
from importlib.metadata import version
from pathlib import Path

import torch
from safetensors import safe_open

MODELS = ["gemma1-hf", "gemma2-hf", "gemma3-hf"]


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tensor_sha256(t: torch.Tensor) -> str:
    raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return hashlib.sha256(raw).hexdigest()


def rows_for(model: str, path: Path) -> list[str]:
    rows = []
    with safe_open(str(path), framework="pt") as f:
        for key, value in sorted((f.metadata() or {}).items()):
            rows.append(f"meta\t{model}\t{key}\t{value}")
        for name in sorted(f.keys()):
            s = f.get_slice(name)
            shape = ",".join(str(d) for d in s.get_shape())
            digest = tensor_sha256(f.get_tensor(name))
            rows.append(f"tensor\t{model}\t{name}\t{s.get_dtype()}\t{shape}\t{digest}")
    return rows


def main() -> None:
    root = Path(__file__).resolve().parents[2]
    out = root / "tests" / "data" / "safetensors_table.tsv"
    lines = [
        "# safetensors reference table (tools/golden/make_safetensors_table.py)",
        f"# generator safetensors {version('safetensors')} torch {torch.__version__}",
    ]
    rows = []
    for model in MODELS:
        path = root / "tests" / "data" / "tiny" / model / "model.safetensors"
        lines.append(f"# file {model}/model.safetensors sha256 {file_sha256(path)}")
        rows += rows_for(model, path)
    lines.append("# tensor<TAB>model<TAB>name<TAB>dtype<TAB>shape<TAB>sha256 | "
                 "meta<TAB>model<TAB>key<TAB>value")
    out.write_text("\n".join(lines + rows) + "\n")
    print(f"wrote {out} ({len(rows)} rows)", file=sys.stderr)


if __name__ == "__main__":
    main()
