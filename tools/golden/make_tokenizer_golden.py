#!/usr/bin/env python3
"""make_tokenizer_golden.py — golden ids for tests/test_tokenizer_golden.c.

Reads tools/golden/tokenizer_corpus.json (make_tokenizer_corpus.py) and
tokenizes every string with llama.cpp (through llama-cpp-python, vocab only)
using the default model's vocabulary, for BOS on/off x special-token parsing
on/off; detokenizes the plain (no BOS, no special) ids back; and detokenizes
the corpus's decode-only id lists. Writes tests/data/tokenizer_golden.bin,
which the C test must reproduce id for id and byte for byte.

Run:  /work/refenv/bin/python tools/golden/make_tokenizer_golden.py \
          --model ~/.cache/spillway/gemma-3-270m-q4_k_m.gguf \
          [--llama-cpp-commit SHA] [--out tests/data/tokenizer_golden.bin]

Decoding uses the C function llama_detokenize(remove_special=False,
unparse_special=False) directly: llama-cpp-python's Llama.detokenize() reads
pieces through a 32-byte buffer and drops a leading space after BOS, neither
of which is llama.cpp's behaviour.

File format (all little-endian), version 1:
  char magic[4] = "SWTK"; u32 version = 1;
  u32 info_len; char info[info_len]     JSON: generator, versions, model
  u32 n_entries; then per entry:
    u32 kind                            0 = encode, 1 = decode only
    u32 name_len; char name[name_len]
    kind 0:
      u32 text_len; u8 text[text_len]   exact bytes
      4 id lists, in the order (bos, special) = (0,0), (0,1), (1,0), (1,1):
        u32 n; i32 ids[n]               or n is a marker with no ids:
          0xFFFFFFFF  same as the (0, special) list with BOS in front
          0xFFFFFFFE  same as the (bos, 0) list
          0xFFFFFFFD  llama.cpp refused to tokenize the text
      u32 rt_len; u8 rt[rt_len]         detokenized (0,0) ids; rt_len 0xFFFFFFFF
                                        (no bytes): identical to the text
    kind 1:
      u32 n_ids; i32 ids[n_ids]
      u32 out_len; u8 out[out_len]      detokenized ids
"""
import argparse
import ctypes
import hashlib
import json
import struct
from pathlib import Path

import llama_cpp

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MAGIC = b"SWTK"
FORMAT_VERSION = 1
SAME_WITH_BOS = 0xFFFFFFFF
SAME_AS_NO_SPECIAL = 0xFFFFFFFE
REFUSED = 0xFFFFFFFD
RT_IS_TEXT = 0xFFFFFFFF


def tokenize(vocab, text: bytes, add_bos: bool, special: bool):
    cap = len(text) + 8
    buf = (llama_cpp.llama_token * cap)()
    n = llama_cpp.llama_tokenize(vocab, text, len(text), buf, cap, add_bos, special)
    if n < 0:
        return None
    return list(buf[:n])


def detokenize(vocab, ids) -> bytes:
    arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
    cap = 64 + 64 * len(ids)
    out = ctypes.create_string_buffer(cap)
    n = llama_cpp.llama_detokenize(vocab, arr, len(ids), out, cap, False, False)
    assert 0 <= n <= cap, n
    return out.raw[:n]


def entry_bytes(e) -> bytes:
    return bytes.fromhex(e["hex"]) if "hex" in e else e["text"].encode("utf-8")


def pack_ids(ids) -> bytes:
    return struct.pack("<I", len(ids)) + struct.pack("<%di" % len(ids), *ids)


def pack_blob(b: bytes) -> bytes:
    return struct.pack("<I", len(b)) + b


def encode_entry(vocab, bos: int, e, stats) -> bytes:
    text = entry_bytes(e)
    lists = {(b, s): tokenize(vocab, text, bool(b), bool(s)) for b in (0, 1) for s in (0, 1)}
    out = struct.pack("<I", 0) + pack_blob(e["name"].encode()) + pack_blob(text)
    for b, s in ((0, 0), (0, 1), (1, 0), (1, 1)):
        ids = lists[(b, s)]
        if ids is None:
            out += struct.pack("<I", REFUSED)
            stats["refused"] += 1
        elif b == 1 and lists[(0, s)] is not None and ids == [bos] + lists[(0, s)]:
            out += struct.pack("<I", SAME_WITH_BOS)
        elif s == 1 and ids == lists[(b, 0)]:
            out += struct.pack("<I", SAME_AS_NO_SPECIAL)
        else:
            out += pack_ids(ids)
    plain = lists[(0, 0)] or []
    rt = detokenize(vocab, plain)
    if rt == text:
        stats["exact_rt"] += 1
        return out + struct.pack("<I", RT_IS_TEXT)
    return out + pack_blob(rt)


def decode_entry(vocab, texts, e) -> bytes:
    ids = []
    for t in e["decode"]:
        assert t in texts, f"{e['name']}: no token {t!r} in the vocabulary"
        ids.append(texts[t])
    out = struct.pack("<I", 1) + pack_blob(e["name"].encode()) + pack_ids(ids)
    return out + pack_blob(detokenize(vocab, ids))


def token_texts(vocab) -> dict:
    n = llama_cpp.llama_vocab_n_tokens(vocab)
    return {llama_cpp.llama_vocab_get_text(vocab, i).decode("utf-8", "surrogateescape"): i
            for i in range(n)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--corpus", default=str(HERE / "tokenizer_corpus.json"))
    ap.add_argument("--out", default=str(ROOT / "tests/data/tokenizer_golden.bin"))
    ap.add_argument("--llama-cpp-commit", default="unknown",
                    help="commit of the llama.cpp vendored by llama-cpp-python")
    args = ap.parse_args()

    corpus = json.loads(Path(args.corpus).read_text(encoding="utf-8"))
    llm = llama_cpp.Llama(model_path=args.model, vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    bos = llama_cpp.llama_vocab_bos(vocab)
    texts = token_texts(vocab)
    model_bytes = Path(args.model).read_bytes()
    info = {
        "generator": "tools/golden/make_tokenizer_golden.py",
        "llama_cpp_python": llama_cpp.__version__,
        "llama_cpp_commit": args.llama_cpp_commit,
        "model": Path(args.model).name,
        "model_sha256": hashlib.sha256(model_bytes).hexdigest(),
        "n_vocab": llama_cpp.llama_vocab_n_tokens(vocab),
        "corpus_entries": len(corpus["entries"]),
    }
    stats = {"refused": 0, "exact_rt": 0}
    body = b""
    for e in corpus["entries"]:
        if "decode" in e:
            body += decode_entry(vocab, texts, e)
        else:
            body += encode_entry(vocab, bos, e, stats)
    head = MAGIC + struct.pack("<I", FORMAT_VERSION)
    head += pack_blob(json.dumps(info, sort_keys=True).encode())
    head += struct.pack("<I", len(corpus["entries"]))
    Path(args.out).write_bytes(head + body)
    n_enc = sum(1 for e in corpus["entries"] if "decode" not in e)
    print(f"wrote {args.out}: {n_enc} strings ({stats['exact_rt']} round-trip exactly, "
          f"{stats['refused']} lists refused), {len(corpus['entries']) - n_enc} decode lists")
    print(json.dumps(info, indent=1))


if __name__ == "__main__":
    main()
