#!/usr/bin/env python3
"""requant_gguf.py — a copy of a GGUF file with its layer matrices stored in
another 32-element block type (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0), through the
`gguf` package's own reader, writer and quantizers (the reference for those
formats). Spillway's kernels for a type are measured on real weights this
way (issue 40: KL divergence of Q4_1/Q5_1's integer dots against the f32
path) when no published file of that type exists.

Every 2-D `blk.*` weight whose rows are whole 32-element blocks is
dequantized (gguf.quants) and quantized again into TYPE; everything else —
metadata, the embedding / tied LM head, norms — is copied as it is. The
result is a re-quantization of already quantized weights: fit for
comparing kernels on one file, not for judging the type's quality.

usage: requant_gguf.py IN.gguf OUT.gguf TYPE    (needs: pip install gguf numpy)
"""
import sys

import gguf
import numpy as np
from gguf import quants

TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0")


def copy_metadata(reader, writer):
    for field in reader.fields.values():
        # the architecture is the writer's own field; GGUF.* are virtual
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)


def converted(tensor, qtype):
    """(data, type) to write for one tensor: requantized or as read."""
    dims = [int(d) for d in tensor.shape]  # ggml order: ne0 (row length) first
    wanted = (tensor.name.startswith("blk.") and len(dims) == 2 and dims[0] % 32 == 0
              and tensor.tensor_type != qtype)
    if not wanted:
        return tensor.data, tensor.tensor_type
    f32 = quants.dequantize(tensor.data, tensor.tensor_type).reshape(dims[1], dims[0])
    return quants.quantize(np.ascontiguousarray(f32, dtype=np.float32), qtype), qtype


def main(argv):
    if len(argv) != 4 or argv[3] not in TYPES:
        sys.stderr.write(__doc__.split("usage: ")[1].split("\n")[0] + "\n")
        sys.stderr.write("TYPE: one of " + ", ".join(TYPES) + "\n")
        return 2
    qtype = getattr(gguf.GGMLQuantizationType, argv[3])
    reader = gguf.GGUFReader(argv[1])
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(argv[2], arch)
    copy_metadata(reader, writer)
    n_changed = 0
    out = []
    for tensor in reader.tensors:
        data, ttype = converted(tensor, qtype)
        n_changed += ttype != tensor.tensor_type
        out.append((tensor.name, data, ttype))
        writer.add_tensor_info(tensor.name, data.shape, data.dtype, data.nbytes, ttype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for name, data, _ in out:
        writer.write_tensor_data(data)
    writer.close()
    print(f"requant_gguf: {argv[2]}: {n_changed} of {len(out)} tensors now {argv[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
