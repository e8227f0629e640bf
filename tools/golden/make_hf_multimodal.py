#!/usr/bin/env python3
"""make_hf_multimodal.py — a tiny Gemma3ForConditionalGeneration checkpoint.

Wraps the tiny Gemma 3 text model (tests/data/tiny/gemma3-hf) in
transformers' multimodal Gemma 3 class with a tiny random SigLIP vision
tower, copies the text weights in, and saves it (transformers names the
text tensors model.language_model.*, the vision ones model.vision_tower.*
and model.multi_modal_projector.*) to tests/data/tiny/gemma3-mm-hf/. The
text weights are unchanged, so the gemma3 golden logits apply to the text
part (tests: forward_gemma3_mm_hf); the script checks that transformers'
own text logits from the saved folder equal the text-only model's.

Run:  /work/refenv/bin/python tools/golden/make_hf_multimodal.py
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
from transformers import (AutoModelForCausalLM, Gemma3Config, Gemma3ForConditionalGeneration,
                          SiglipVisionConfig)

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "tests/data/tiny/gemma3-hf"
DST = REPO / "tests/data/tiny/gemma3-mm-hf"


def main() -> int:
    torch.manual_seed(7)
    text = AutoModelForCausalLM.from_pretrained(SRC, dtype=torch.float32)
    text.config._name_or_path = "gemma3-hf"  # not this machine's path
    vision = SiglipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                num_attention_heads=2, image_size=28, patch_size=14)
    cfg = Gemma3Config(text_config=text.config.to_dict(), vision_config=vision.to_dict(),
                       mm_tokens_per_image=4, image_token_index=500, boi_token_index=498,
                       eoi_token_index=499)
    mm = Gemma3ForConditionalGeneration(cfg).to(torch.float32)
    missing, unexpected = mm.model.language_model.load_state_dict(
        text.model.state_dict(), strict=True)
    assert not missing and not unexpected
    mm = mm.to(torch.bfloat16)
    if DST.exists():
        shutil.rmtree(DST)
    mm.save_pretrained(DST)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if (SRC / name).exists():
            shutil.copy(SRC / name, DST / name)
    ids = torch.tensor([[2, 17, 99, 301, 5, 42, 7, 256, 1, 3]])
    again = Gemma3ForConditionalGeneration.from_pretrained(DST, dtype=torch.float32).eval()
    with torch.no_grad():
        a = text.eval()(ids).logits
        b = again(input_ids=ids).logits
    diff = (a - b).abs().max().item()
    print(f"{DST.relative_to(REPO)}: text logits vs the text-only model: max |diff| {diff:g}")
    return 0 if diff == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
