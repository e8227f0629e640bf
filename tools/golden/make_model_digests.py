#!/usr/bin/env python3
"""make_model_digests.py — per-tensor f32 digests of the default model.

Opens the default model (Gemma 3 270M Q4_K_M GGUF) with gguf.GGUFReader,
dequantizes every tensor to float32 with gguf.quants.dequantize, and writes
tests/data/model_tensor_digests.tsv, which tests/test_model_dequant.c checks
Spillway's sw_model_tensor_to_f32 against: one line per tensor in file
order, "name<TAB>type<TAB>n_elements<TAB>sha256 of the little-endian f32
bytes". Header lines start with '#' and record the model's sha256 and the
gguf and numpy versions. Refuses a model whose sha256 is not the pinned one.

Run:  /work/venv/bin/python tools/golden/make_model_digests.py [model.gguf] [out.tsv]
      (default model: ${XDG_CACHE_HOME:-$HOME/.cache}/spillway/gemma-3-270m-q4_k_m.gguf)
"""
import hashlib
import os
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import gguf

MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
MODEL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def default_model_path() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ["HOME"], ".cache")
    return Path(cache) / "spillway" / MODEL_FILE


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def tensor_digest(t) -> str:
    y = gguf.quants.dequantize(t.data, t.tensor_type)
    y = np.ascontiguousarray(y, dtype="<f4").reshape(-1)
    if y.size != int(t.n_elements):
        raise SystemExit(f"{t.name}: dequantized {y.size} values, want {t.n_elements}")
    return hashlib.sha256(memoryview(y).cast("B")).hexdigest()


def main() -> None:
    root = Path(__file__).resolve().parents[2]
    model = Path(sys.argv[1]) if len(sys.argv) > 1 else default_model_path()
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else root / "tests/data/model_tensor_digests.tsv"
    digest = file_sha256(model)
    if digest != MODEL_SHA256:
        raise SystemExit(f"{model}: sha256 {digest}, want {MODEL_SHA256} (run `spillway fetch`)")
    reader = gguf.GGUFReader(model)
    lines = [
        "# per-tensor sha256 of gguf.quants.dequantize(...) as little-endian float32",
        f"# model {MODEL_FILE} sha256 {MODEL_SHA256}",
        f"# generator tools/golden/make_model_digests.py gguf {version('gguf')} numpy {np.__version__}",
        "# name\ttype\tn_elements\tsha256_f32_le",
    ]
    for t in reader.tensors:
        lines.append(f"{t.name}\t{t.tensor_type.name}\t{int(t.n_elements)}\t{tensor_digest(t)}")
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}: {len(reader.tensors)} tensors")


if __name__ == "__main__":
    main()
