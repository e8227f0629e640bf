#!/usr/bin/env python3
"""Writes tests/data/model_tensor_table.tsv: the default model's tensor table
(name, type, shape with ne[0] first, byte size, absolute data offset) as the
official `gguf` Python package (gguf.GGUFReader) sees the file, plus its key
metadata. tests/info_test.py checks `spillway info --json` against it.

Run (outside CI): /path/to/venv-with-gguf/bin/python tools/golden/make_model_info.py MODEL.gguf
"""
import hashlib
from importlib import metadata
import sys
from pathlib import Path

import gguf

EXPECTED_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def main() -> None:
    path = Path(sys.argv[1])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != EXPECTED_SHA256:
        sys.exit(f"{path}: sha256 {digest} is not the default model's")
    reader = gguf.GGUFReader(str(path))
    out = Path(__file__).resolve().parents[2] / "tests/data/model_tensor_table.tsv"
    with out.open("w") as f:
        f.write(f"# tensor table of gemma-3-270m-q4_k_m.gguf (sha256 {digest})\n")
        f.write(f"# generator tools/golden/make_model_info.py, gguf {metadata.version('gguf')}\n")
        # GGUFReader lists the header's version and counts as pseudo-fields.
        n_meta = sum(1 for k in reader.fields if not k.startswith("GGUF."))
        f.write(f"# n_meta {n_meta}\n")
        f.write("# name\ttype\tshape(ne0,...)\tbytes\toffset\n")
        for t in reader.tensors:
            shape = ",".join(str(int(d)) for d in t.shape)
            f.write(f"{t.name}\t{t.tensor_type.name}\t{shape}\t{int(t.n_bytes)}\t{int(t.data_offset)}\n")
    print(f"wrote {out} ({len(reader.tensors)} tensors)")


if __name__ == "__main__":
    main()
