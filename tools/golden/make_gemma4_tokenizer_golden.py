#!/usr/bin/env python3
"""make_gemma4_tokenizer_golden.py — ids that transformers' tokenizer gives
for probe texts with the tiny Gemma 4 vocabulary (tests/data/tiny/
gemma4-ple-hf, made by make_tiny_gemma4.py), for tests/test_tokenizer_gemma4.c:
Spillway's encoder on the GGUF copy of that vocabulary (llama.cpp's
converter wrote it) must give the same ids.

Writes tests/data/tokenizer/gemma4_tiny.json:
  {"reference": "...versions...", "cases": [{"text": ..., "ids": [...]}]}
The ids include the BOS the tokenizer adds; special tokens in the text
(<|turn>, <turn|>) are parsed, as transformers does by default.

Run:  /work/refenv/bin/python tools/golden/make_gemma4_tokenizer_golden.py
"""
import json
import sys
from pathlib import Path

import tokenizers
import transformers
from transformers import AutoTokenizer

REPO = Path(__file__).resolve().parents[2]
PROBES = [
    "the people of the water",
    "Hello, world!\n\nNew  line",
    "<|turn>user\nwhat time is it<turn|>\n<|turn>model\n",
    "caf\u00e9 \u2014 \u65e5\u672c",
    "",
    " ",
    "   leading and trailing   ",
    "\n",
    "\n\n\n",
    "a\n\n\nb\n",
    "tabs\tand\r\nreturns",
    "emoji \U0001F600 and \u20ac",
    "the the the the the",
    "<turn|><|turn>",
    "water.water,water!",
]


def main() -> int:
    hf_dir = REPO / "tests/data/tiny/gemma4-ple-hf"
    tok = AutoTokenizer.from_pretrained(hf_dir)
    raw = tokenizers.Tokenizer.from_file(str(hf_dir / "tokenizer.json"))
    cases = []
    for text in PROBES:
        ids = tok(text)["input_ids"]
        if raw.encode(text).ids != ids:
            raise SystemExit(f"transformers and tokenizers differ on {text!r}")
        cases.append({"text": text, "ids": ids})
    out = REPO / "tests/data/tokenizer/gemma4_tiny.json"
    doc = {"reference": f"transformers {transformers.__version__}, tokenizers "
                        f"{tokenizers.__version__}, {hf_dir.relative_to(REPO)}",
           "cases": cases}
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out} ({len(cases)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
