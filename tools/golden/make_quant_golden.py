#!/usr/bin/env python3
"""make_quant_golden.py — golden data for tests/test_quant.c.

Writes tests/data/quant_golden.bin: for every type Spillway dequantizes,
random blocks and the f32 output of the official `gguf` package
(gguf.quants.dequantize), which tests/test_quant.c must reproduce bit for
bit; plus f32 -> f16 / bf16 conversions (numpy astype(float16), gguf's BF16
quantizer) for quant/half.h. Deterministic (fixed seed).

Run:  /work/venv/bin/python tools/golden/make_quant_golden.py [out.bin]

gguf has no Q8_K class, so Q8_K's expected output is computed here with
numpy from ggml's block layout (f32 d, int8 qs[256], int16 bsums[16];
y = d * q in float32).

File format (all little-endian), version 1:
  char magic[4] = "SWQG"; u32 version = 1;
  u32 text_len; char text[text_len]   generator, gguf, numpy versions, seed
  u32 n_records; then per record:
    u32 kind      0 = dequantize, 1 = f32 -> f16, 2 = f32 -> bf16
    u32 type      ggml type id (kind 0), else 0
    u64 n_elems
    u64 src_bytes; u8 src[src_bytes]
    u64 dst_bytes; u8 dst[dst_bytes]  kind 0: f32[n_elems]; else u16[n_elems]
"""
import struct
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

SEED = 20240611
N_BLOCKS = 64
MAGIC = b"SWQG"
FORMAT_VERSION = 1

# Byte offsets of the f16 scale fields (d, m, dmin) inside each block; the
# rest of the block (quantized values, packed scale indices) stays random.
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2],
    T.Q6_K: [208],
}
Q8_K_ID, Q8_K_BYTES = 15, 292


def f16_scale(rng: np.random.Generator, i: int) -> int:
    """Bits of a finite f16 scale; every few blocks an edge case."""
    kind = i % 8
    if kind == 0:
        return 0x0000 if rng.integers(2) else 0x8000           # +-0
    if kind == 1:
        return int(rng.integers(1, 0x400)) | (int(rng.integers(2)) << 15)  # subnormal
    if kind == 2:
        return 0x7BFF if rng.integers(2) else 0xFBFF           # +-65504
    mag = 10.0 ** rng.uniform(-5.0, 0.0)                       # realistic
    sign = -1.0 if rng.integers(2) else 1.0
    return int(np.array([sign * mag], dtype=np.float16).view(np.uint16)[0])


def quant_blocks(rng: np.random.Generator, qtype: T) -> np.ndarray:
    _, type_size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(N_BLOCKS, type_size), dtype=np.uint8)
    for slot, off in enumerate(F16_FIELDS[qtype]):
        for b in range(N_BLOCKS):
            # Offset the edge-case cycle per field so d and dmin/m edges
            # land in different blocks and mix with ordinary values.
            bits = f16_scale(rng, b + 3 * slot)
            raw[b, off:off + 2] = np.array([bits], dtype="<u2").view(np.uint8)
    return raw


def q8_k_record(rng: np.random.Generator):
    raw = rng.integers(0, 256, size=(N_BLOCKS, Q8_K_BYTES), dtype=np.uint8)
    edges = [0.0, -0.0, 1e-40, -1e-45, 3.4028234663852886e38, -1.0, 2.5e-3]
    for b in range(N_BLOCKS):
        if b < len(edges):
            d = edges[b]                                       # incl. f32 subnormals, FLT_MAX
        else:
            d = (-1.0 if rng.integers(2) else 1.0) * 10.0 ** rng.uniform(-6.0, 0.0)
        raw[b, 0:4] = np.array([d], dtype="<f4").view(np.uint8)
    d = raw[:, 0:4].copy().view("<f4").astype(np.float32)       # (n, 1)
    q = raw[:, 4:260].copy().view(np.int8).astype(np.float32)  # (n, 256)
    with np.errstate(over="ignore"):
        y = (d * q).astype(np.float32)                        # FLT_MAX*q -> inf, as in C
    return raw, y.reshape(-1)


def special_f32() -> np.ndarray:
    """f32 bit patterns around every f16/bf16 rounding boundary."""
    base = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
            0x7F800001, 0x7F802000, 0x7F801FFF, 0x7FBFFFFF, 0xFF800001, 0x7FFFFFFF,
            0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF,
            0x33000000, 0x33000001, 0x32FFFFFF, 0x33800000, 0x33C00000, 0x33C00001,
            0x387FC000, 0x387FE000, 0x387FF000, 0x38800000, 0x38801000, 0x38803000,
            0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x47800000, 0x3F801000,
            0x3F803000, 0x3F800FFF, 0x3F807FFF, 0x3F808000, 0x3F818000, 0x3F80FFFF]
    bits = np.array(base, dtype=np.uint32)
    return np.concatenate([bits, bits | np.uint32(0x80000000)])


def conversion_inputs(rng: np.random.Generator) -> np.ndarray:
    rand = rng.integers(0, 2**32, size=4096, dtype=np.uint64).astype(np.uint32)
    # Values in the f16 range (exponents 100..145) exercise rounding more.
    near = rng.integers(0, 2**23, size=4096, dtype=np.uint64).astype(np.uint32)
    near |= rng.integers(100, 146, size=4096).astype(np.uint32) << np.uint32(23)
    near |= rng.integers(0, 2, size=4096).astype(np.uint32) << np.uint32(31)
    return np.concatenate([special_f32(), rand, near]).view(np.float32)


def record(kind: int, type_id: int, n_elems: int, src: bytes, dst: bytes) -> bytes:
    return (struct.pack("<IIQ", kind, type_id, n_elems) + struct.pack("<Q", len(src)) + src
            + struct.pack("<Q", len(dst)) + dst)


def dequant_record(qtype: T, raw: np.ndarray) -> bytes:
    y = gguf.quants.dequantize(raw.reshape(-1), qtype)
    y = np.ascontiguousarray(y, dtype=np.float32).astype("<f4")
    return record(0, int(qtype), y.size, raw.tobytes(), y.tobytes())


def build_records(rng: np.random.Generator) -> list[bytes]:
    recs = []
    f32 = np.concatenate([special_f32(), rng.integers(0, 2**32, size=1024, dtype=np.uint64)
                          .astype(np.uint32)]).astype("<u4")
    recs.append(dequant_record(T.F32, f32.view(np.uint8)))
    every16 = np.arange(65536, dtype="<u2").view(np.uint8)   # all values, NaNs included
    recs.append(dequant_record(T.F16, every16))
    recs.append(dequant_record(T.BF16, every16))
    for qtype in F16_FIELDS:
        recs.append(dequant_record(qtype, quant_blocks(rng, qtype)))
    raw, y = q8_k_record(rng)
    recs.append(record(0, Q8_K_ID, y.size, raw.tobytes(), y.astype("<f4").tobytes()))

    x = conversion_inputs(rng)
    with np.errstate(over="ignore", invalid="ignore"):
        h = x.astype(np.float16).view(np.uint16).astype("<u2")
    recs.append(record(1, 0, x.size, x.astype("<f4").tobytes(), h.tobytes()))
    b = gguf.quants.quantize(x.reshape(1, -1), T.BF16).reshape(-1).view(np.uint16)
    recs.append(record(2, 0, x.size, x.astype("<f4").tobytes(), b.astype("<u2").tobytes()))
    return recs


def main() -> None:
    root = Path(__file__).resolve().parents[2]
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "tests/data/quant_golden.bin"
    rng = np.random.default_rng(SEED)
    recs = build_records(rng)
    text = (f"generator=tools/golden/make_quant_golden.py format={FORMAT_VERSION} "
            f"gguf={version('gguf')} numpy={np.__version__} seed={SEED} "
            f"n_blocks={N_BLOCKS}").encode()
    blob = MAGIC + struct.pack("<II", FORMAT_VERSION, len(text)) + text
    blob += struct.pack("<I", len(recs)) + b"".join(recs)
    out.write_bytes(blob)
    print(f"wrote {out} ({len(blob)} bytes, {len(recs)} records): {text.decode()}")


if __name__ == "__main__":
    main()
