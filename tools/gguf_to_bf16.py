#!/usr/bin/env python3
"""Rewrite a GGUF model with every matrix in bf16, for measuring the bf16
weight paths on real weights (bench/results, --cpu-dots bf16) with both
Spillway and llama.cpp reading the very same file.

Matrices (2-D tensors) of any type are dequantized by the `gguf` package
(llama.cpp's own Python reader) and rounded to bf16, to nearest even;
1-D tensors (norms) are kept as they are. Every metadata key is copied
with its type; general.file_type becomes MOSTLY_BF16.

usage: python tools/gguf_to_bf16.py IN.gguf OUT.gguf
needs: pip install gguf==0.19.0 numpy (a venv outside the repository)
"""
import sys

import gguf
import numpy as np


def to_bf16_bits(x):
    """f32 array -> uint16 bf16 bits, to nearest even (NaN kept quiet)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def copy_fields(reader, writer):
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == "general.architecture":
            continue
        vtype = field.types[0]
        if field.name == "general.file_type":
            writer.add_uint32(field.name, int(gguf.LlamaFileType.MOSTLY_BF16))
            continue
        sub = field.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gguf_to_bf16.py IN.gguf OUT.gguf")
    reader = gguf.GGUFReader(sys.argv[1])
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(sys.argv[2], arch)
    copy_fields(reader, writer)
    for t in reader.tensors:
        shape = [int(d) for d in reversed(t.shape)]  # numpy order: rows first
        if len(shape) == 2:
            values = gguf.quants.dequantize(t.data, t.tensor_type).reshape(shape)
            writer.add_tensor(t.name, to_bf16_bits(values), raw_shape=shape,
                              raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            writer.add_tensor(t.name, np.asarray(t.data), raw_shape=shape,
                              raw_dtype=t.tensor_type)
        print(f"{t.name}: {t.tensor_type.name} -> "
              f"{'BF16' if len(shape) == 2 else t.tensor_type.name}", file=sys.stderr)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
