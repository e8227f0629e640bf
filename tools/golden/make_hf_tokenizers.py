#!/usr/bin/env python3
"""make_hf_tokenizers.py — Hugging Face tokenizer files for test_tokenizer_hf.

Converts Gemma GGUF vocabularies into the `tokenizers` format with
transformers' own GGUF -> fast-tokenizer conversion (the tokenizer class's
from_pretrained(dir, gguf_file=...), then save_pretrained), which writes
tokenizer.json + tokenizer_config.json the way Hugging Face does:

  (a) the default model (Gemma 3 270M Q4_K_M) ->
        tests/data/hf_tokenizer/gemma3-270m-tokenizer.json.xz  (~33 MB raw)
        tests/data/hf_tokenizer/tokenizer_config.json
  (b) the tiny models tests/data/tiny/gemma{1,2,3}.gguf ->
        tests/data/tiny/gemma{1,2,3}-hf/{tokenizer.json,tokenizer_config.json}
      (next to the config.json + model.safetensors already there).

AutoTokenizer is used where transformers can read the GGUF's config
(gemma2, gemma3); for architecture "gemma" it refuses the config, so
GemmaTokenizer.from_pretrained (the same conversion code) is called directly.

Then it checks the converted tokenizers' own ids (the `tokenizers` library
on the saved tokenizer.json) against llama.cpp's on the tokenizer corpus
(tools/golden/tokenizer_corpus.json) and prints the agreement, per mode:
BOS on/off (add_special_tokens) x special tokens parsed or not
(tokenizers' encode_special_tokens = not parse_special). llama.cpp's ids
come from tests/data/tokenizer_golden.bin for the real model and from
llama-cpp-python (vocab only) for the tiny ones. Texts that are not valid
UTF-8 cannot be given to `tokenizers` and are counted apart.

Run:  /work/refenv/bin/python tools/golden/make_hf_tokenizers.py \
          [--model ~/.cache/spillway/gemma-3-270m-q4_k_m.gguf] [--only real|tiny]
          [--check-only]   (compare the committed files only, write nothing)
Deterministic: a rerun rewrote the same bytes. The real model takes a few
minutes (conversion ~1 min, xz -9 ~1 min), the tiny ones seconds.

Known differences between the converted tokenizer.json and a Hub Gemma
tokenizer.json (spillway's reader accepts both):
  - merges are written as ["a", "b"] pairs (older Hub files: "a b" strings);
  - tokenizer_config.json has no add_bos_token / added_tokens_decoder (BOS
    comes from the TemplateProcessing post-processor);
  - runs of 2..31 "▁" are plain vocabulary pieces, not added tokens
    (Hub files list them as non-special added tokens);
  - for the tiny vocabularies, GemmaTokenizer's default mask token "<mask>"
    is not in the vocabulary, so it is added as id 512 (one past the model's
    512-row embedding).
"""
import argparse
import json
import lzma
import os
import shutil
import struct
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only, before transformers loads

import tokenizers  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from transformers.models.gemma.tokenization_gemma import GemmaTokenizer  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEFAULT_MODEL = Path.home() / ".cache/spillway/gemma-3-270m-q4_k_m.gguf"
MODES = ((0, 0), (0, 1), (1, 0), (1, 1))  # (bos, parse_special), golden order
SAME_WITH_BOS, SAME_AS_NO_SPECIAL, REFUSED, RT_IS_TEXT = (0xFFFFFFFF, 0xFFFFFFFE,
                                                          0xFFFFFFFD, 0xFFFFFFFF)


def convert(gguf: Path, out_dir: Path) -> str:
    """Writes tokenizer.json + tokenizer_config.json for gguf into out_dir."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            how = "AutoTokenizer"
        except ValueError as e:  # "GGUF model with architecture gemma is not supported yet."
            if "architecture" not in str(e):
                raise
            tok = GemmaTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            how = "GemmaTokenizer (AutoTokenizer: %s)" % e
        tok.save_pretrained(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(Path(tmp) / name, out_dir / name)
    return how


def corpus_texts():
    corpus = json.loads((HERE / "tokenizer_corpus.json").read_text(encoding="utf-8"))
    for e in corpus["entries"]:
        if "decode" in e:
            continue
        yield e["name"], bytes.fromhex(e["hex"]) if "hex" in e else e["text"].encode("utf-8")


def read_golden(path: Path) -> dict:
    """llama.cpp's ids per corpus entry name: {name: {(bos, sp): ids or None}}."""
    data = path.read_bytes()
    pos = 0

    def u32():
        nonlocal pos
        v = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        return v

    def blob():
        nonlocal pos
        n = u32()
        pos += n
        return data[pos - n:pos]

    assert data[:4] == b"SWTK" and struct.unpack_from("<I", data, 4)[0] == 1
    pos = 8
    blob()
    out = {}
    for _ in range(u32()):
        kind, name = u32(), blob().decode()
        if kind == 1:
            n = u32()
            pos += 4 * n
            blob()
            continue
        blob()
        lists = {}
        for b, s in MODES:
            k = u32()
            if k == REFUSED:
                lists[(b, s)] = None
            elif b == 1 and k == SAME_WITH_BOS:
                prev = lists[(0, s)]
                lists[(b, s)] = None if prev is None else [2] + prev
            elif s == 1 and k == SAME_AS_NO_SPECIAL:
                lists[(b, s)] = lists[(b, 0)]
            else:
                lists[(b, s)] = list(struct.unpack_from("<%di" % k, data, pos))
                pos += 4 * k
        if u32() != RT_IS_TEXT:
            pos -= 4
            blob()
        out[name] = lists
    return out


def llama_cpp_ids(gguf: Path) -> dict:
    import llama_cpp
    llm = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    out = {}
    for name, text in corpus_texts():
        lists = {}
        for b, s in MODES:
            cap = len(text) + 8
            buf = (llama_cpp.llama_token * cap)()
            n = llama_cpp.llama_tokenize(vocab, text, len(text), buf, cap, bool(b), bool(s))
            lists[(b, s)] = None if n < 0 else list(buf[:n])
        out[name] = lists
    return out


def first_difference(a, b):
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return k


def agreement(tok_json: Path, reference: dict, label: str) -> None:
    """Prints how often the tokenizers library agrees with llama.cpp."""
    tok = tokenizers.Tokenizer.from_file(str(tok_json))
    same = {m: 0 for m in MODES}
    compared = invalid = 0
    differing = {}
    for name, text in corpus_texts():
        try:
            s = text.decode("utf-8")
        except UnicodeDecodeError:
            invalid += 1
            continue
        compared += 1
        for b, sp in MODES:
            tok.encode_special_tokens = not sp
            ids = tok.encode(s, add_special_tokens=bool(b)).ids
            want = reference[name][(b, sp)]
            if ids == want:
                same[(b, sp)] += 1
            elif b == 0 and want is not None:
                k = first_difference(want, ids)
                differing.setdefault(name, []).append(
                    f"parse_special={sp}: from id {k}: llama.cpp {want[k:k + 4]} "
                    f"{[tok.id_to_token(i) for i in want[k:k + 4]]}, tokenizers {ids[k:k + 4]} "
                    f"{[tok.id_to_token(i) for i in ids[k:k + 4]]}")
    print(f"{label}: tokenizers {tokenizers.__version__} vs llama.cpp on {compared} corpus "
          f"strings ({invalid} not valid UTF-8, not comparable):")
    for (b, sp), k in same.items():
        print(f"  bos={b} parse_special={sp}: {k}/{compared} identical")
    for name, lines in differing.items():
        for line in lines:
            print(f"  differs: {name}: {line}")


def write_real(model: Path) -> None:
    out = ROOT / "tests/data/hf_tokenizer"
    with tempfile.TemporaryDirectory() as tmp:
        how = convert(model, Path(tmp))
        raw = (Path(tmp) / "tokenizer.json").read_bytes()
        out.mkdir(parents=True, exist_ok=True)
        packed = lzma.compress(raw, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=9)
        (out / "gemma3-270m-tokenizer.json.xz").write_bytes(packed)
        shutil.copyfile(Path(tmp) / "tokenizer_config.json", out / "tokenizer_config.json")
        print(f"real model {model.name} via {how}: tokenizer.json {len(raw):,} bytes, "
              f"xz {len(packed):,} bytes")


def check_real() -> None:
    packed = ROOT / "tests/data/hf_tokenizer/gemma3-270m-tokenizer.json.xz"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "tokenizer.json").write_bytes(lzma.decompress(packed.read_bytes()))
        agreement(Path(tmp) / "tokenizer.json",
                  read_golden(ROOT / "tests/data/tokenizer_golden.bin"), "gemma3-270m")


def write_tiny() -> None:
    for g in (1, 2, 3):
        gguf = ROOT / f"tests/data/tiny/gemma{g}.gguf"
        out = ROOT / f"tests/data/tiny/gemma{g}-hf"
        how = convert(gguf, out)
        print(f"tiny gemma{g} via {how}: {(out / 'tokenizer.json').stat().st_size:,} bytes")


def check_tiny() -> None:
    for g in (1, 2, 3):
        gguf = ROOT / f"tests/data/tiny/gemma{g}.gguf"
        agreement(ROOT / f"tests/data/tiny/gemma{g}-hf/tokenizer.json", llama_cpp_ids(gguf),
                  f"tiny gemma{g}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--only", choices=("real", "tiny"))
    ap.add_argument("--check-only", action="store_true",
                    help="only compare the committed files with llama.cpp")
    args = ap.parse_args()
    print(f"transformers {transformers.__version__}, tokenizers {tokenizers.__version__}")
    if args.only != "tiny":
        if not args.check_only:
            write_real(Path(args.model).expanduser())
        check_real()
    if args.only != "real":
        if not args.check_only:
            write_tiny()
        check_tiny()


if __name__ == "__main__":
    main()
