"""golden_format.py — writer (and a checking reader) for .swgold files.

A .swgold file is a flat list of named arrays, read in C by tests/golden.c.
Format, all little-endian (the authoritative copy is tools/golden/README.md):
  magic   8 bytes  "SWGOLD" 0x00 0x01      (the last byte is the version, 1)
  u32     n_entries
  n_entries times:
    u32   name_len;  name_len bytes of UTF-8 name (no NUL, unique, non-empty)
    u32   dtype      0 = f32, 1 = i32, 2 = utf8 text
    u32   n_dims     0..4 (text: exactly 1)
    u64   dims[n_dims]   outermost first (C order)
    data  product(dims) * 4 bytes (f32/i32; a 0-dim entry holds 1 element),
          or dims[0] bytes for text (no NUL)
Nothing follows the last entry.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

MAGIC = b"SWGOLD\x00\x01"
F32, I32, TEXT = 0, 1, 2
MAX_DIMS = 4


class GoldenWriter:
    """Collects entries in insertion order; write() emits the file."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, int, tuple[int, ...], bytes]] = []
        self.names: set[str] = set()

    def _add(self, name: str, dtype: int, dims: tuple[int, ...], data: bytes) -> None:
        if not name or name in self.names:
            raise ValueError(f"golden entry name {name!r} empty or repeated")
        if len(dims) > MAX_DIMS:
            raise ValueError(f"{name}: {len(dims)} dims > {MAX_DIMS}")
        self.names.add(name)
        self.entries.append((name, dtype, dims, data))

    def add_text(self, name: str, text: str) -> None:
        raw = text.encode("utf-8")
        self._add(name, TEXT, (len(raw),), raw)

    def add_f32(self, name: str, array) -> None:
        # np.array, not ascontiguousarray: the latter turns 0-dim into 1-dim.
        a = np.array(array, dtype=np.float32, order="C")
        self._add(name, F32, a.shape, a.astype("<f4").tobytes())

    def add_i32(self, name: str, array) -> None:
        a = np.asarray(array)
        if a.size and (a.min() < -2**31 or a.max() >= 2**31):
            raise ValueError(f"{name}: value out of i32 range")
        a = np.array(a, dtype=np.int32, order="C")
        self._add(name, I32, a.shape, a.astype("<i4").tobytes())

    def to_bytes(self) -> bytes:
        out = [MAGIC, struct.pack("<I", len(self.entries))]
        for name, dtype, dims, data in self.entries:
            raw = name.encode("utf-8")
            out.append(struct.pack("<I", len(raw)) + raw)
            out.append(struct.pack("<II", dtype, len(dims)))
            out.append(struct.pack(f"<{len(dims)}Q", *dims))
            out.append(data)
        return b"".join(out)

    def write(self, path) -> int:
        blob = self.to_bytes()
        Path(path).write_bytes(blob)
        return len(blob)


def read_golden(path) -> dict:
    """Parses a .swgold file into {name: str | np.ndarray}, checking every
    length; used to verify what the writer produced."""
    blob = Path(path).read_bytes()
    if blob[:8] != MAGIC:
        raise ValueError(f"{path}: bad magic")
    (n,) = struct.unpack_from("<I", blob, 8)
    pos, out = 12, {}
    for _ in range(n):
        (name_len,) = struct.unpack_from("<I", blob, pos)
        name = blob[pos + 4:pos + 4 + name_len].decode("utf-8")
        pos += 4 + name_len
        dtype, n_dims = struct.unpack_from("<II", blob, pos)
        pos += 8
        dims = struct.unpack_from(f"<{n_dims}Q", blob, pos)
        pos += 8 * n_dims
        if dtype == TEXT:
            out[name] = blob[pos:pos + dims[0]].decode("utf-8")
            pos += dims[0]
        else:
            count = int(np.prod(dims, dtype=np.int64))
            np_type = "<f4" if dtype == F32 else "<i4"
            out[name] = np.frombuffer(blob, np_type, count, pos).reshape(dims)
            pos += 4 * count
        if pos > len(blob):
            raise ValueError(f"{path}: entry {name!r} runs past the end")
    if pos != len(blob):
        raise ValueError(f"{path}: {len(blob) - pos} trailing bytes")
    return out
