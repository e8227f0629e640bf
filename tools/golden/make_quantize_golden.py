#!/usr/bin/env python3
"""make_quantize_golden.py — golden data for tests/test_quantize.c.

Writes tests/data/quantize_golden.bin: f32 inputs and the bytes the
official `gguf` package's quantizers make of them (gguf.quants.quantize)
for F16, BF16 and Q8_0, the types `--weights` converts to at load.
quant_quantize() must reproduce them byte for byte. Deterministic (fixed
seed).

Inputs: rows of 256 random values at magnitudes from 1e-6 to 1e4 (weights,
activations, outliers), plus edge rows: all zeros (Q8_0 scale 0), values
that land exactly on .5 after scaling (Q8_0 rounds half away from zero),
signed zeros, f16 overflow (>= 65520 -> inf), f16/bf16 subnormals and
rounding ties, inf and NaN (F16/BF16 only: Q8_0 of a NaN is not defined).

Run:  /work/venv/bin/python tools/golden/make_quantize_golden.py [out.bin]
(or /work/refenv/bin/python; needs gguf 0.19 and numpy)

File format (all little-endian), version 1:
  char magic[4] = "SWQZ"; u32 version = 1;
  u32 text_len; char text[text_len]   generator, gguf, numpy versions, seed
  u32 n_records; then per record:
    u32 type      ggml type id of the output (1 F16, 30 BF16, 8 Q8_0)
    u64 n_elems   f32 inputs (a multiple of 32)
    u8  src[4 * n_elems]                f32 input
    u64 dst_bytes; u8 dst[dst_bytes]    gguf's bytes
"""
import struct
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

SEED = 20251202
ROW = 256
MAGIC = b"SWQZ"
FORMAT_VERSION = 1


def random_rows(rng: np.random.Generator, n_rows: int) -> np.ndarray:
    """Rows of normal values, each row at its own magnitude."""
    mags = 10.0 ** rng.uniform(-6.0, 4.0, size=(n_rows, 1))
    return (rng.standard_normal((n_rows, ROW)) * mags).astype(np.float32)


def tie_row() -> np.ndarray:
    """Q8_0 blocks whose amax is 127, so d = 1 and every x.5 is a tie."""
    row = np.zeros(ROW, dtype=np.float32)
    for b in range(ROW // 32):
        block = np.arange(32, dtype=np.float32) - 15.5 + 0.25 * (b % 2)
        block[0] = 127.0 if b % 2 == 0 else -127.0
        row[32 * b:32 * b + 32] = block
    return row


def bits(u: list) -> np.ndarray:
    return np.array(u, dtype=np.uint32).view(np.float32)


def edge_rows() -> list:
    zeros = np.zeros(ROW, dtype=np.float32)
    signed_zero = np.where(np.arange(ROW) % 2 == 0, 0.0, -0.0).astype(np.float32)
    # f16: 65504 max, 65519.99 rounds down, 65520 rounds to inf; 2^-24
    # (smallest subnormal) and ties around it; bf16 ties (0x3f808000).
    special = np.concatenate([
        np.array([65504.0, 65519.99, 65520.0, -65520.0, 1e6, 2.0 ** -24, 2.0 ** -25,
                  3 * 2.0 ** -26, 2.0 ** -14, 6.1e-5, 1.0009765625, 1.00048828125],
                 dtype=np.float32),
        bits([0x3f808000, 0x3f818000, 0x3f80ffff, 0x00000001, 0x807fffff, 0x7f7fffff]),
    ])
    special_row = np.resize(special, ROW).astype(np.float32)
    return [zeros, signed_zero, tie_row(), special_row]


def nonfinite_row() -> np.ndarray:
    vals = bits([0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffc00123, 0x7fbfffff])
    return np.resize(np.concatenate([vals, np.linspace(-3, 3, 26, dtype=np.float32)]), ROW)


def records(rng: np.random.Generator) -> list:
    out = []
    finite = np.concatenate([random_rows(rng, 24), np.stack(edge_rows())])
    for qtype in (T.F16, T.BF16, T.Q8_0):
        data = finite
        if qtype != T.Q8_0:
            data = np.concatenate([finite, nonfinite_row()[None, :]])
        with np.errstate(over="ignore"):  # FLT_MAX rows: an inf f16 scale, on purpose
            q = gguf.quants.quantize(data, qtype)
        out.append((int(qtype), data.astype(np.float32), np.ascontiguousarray(q).tobytes()))
    return out


def main() -> None:
    out_path = Path(sys.argv[1]) if len(sys.argv) > 1 else \
        Path(__file__).resolve().parents[2] / "tests" / "data" / "quantize_golden.bin"
    rng = np.random.default_rng(SEED)
    text = (f"make_quantize_golden.py gguf {version('gguf')} numpy {np.__version__} "
            f"seed {SEED}").encode()
    recs = records(rng)
    buf = bytearray(MAGIC + struct.pack("<II", FORMAT_VERSION, len(text)) + text)
    buf += struct.pack("<I", len(recs))
    for qtype, src, dst in recs:
        buf += struct.pack("<IQ", qtype, src.size) + src.tobytes()
        buf += struct.pack("<Q", len(dst)) + dst
    out_path.write_bytes(bytes(buf))
    print(f"wrote {out_path} ({len(buf)} bytes, {len(recs)} records)")


if __name__ == "__main__":
    main()
