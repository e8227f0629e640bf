#!/usr/bin/env python3
"""synth_verify.py — check `spillway synth` output with the reference tools
(not part of CI: it needs transformers / gguf, which CI does not install).

  # a Hugging Face folder, with transformers (e.g. /work/refenv/bin/python):
  python tools/synth_verify.py hf  DIR  [--gguf TWIN.gguf --spillway build/spillway]
  # a GGUF file, with the gguf package (e.g. /work/venv/bin/python):
  python tools/synth_verify.py gguf FILE

hf: AutoModelForCausalLM.from_pretrained loads DIR with no missing,
unexpected or mismatched keys; logits of a short prompt are finite and not
all equal; AutoTokenizer loads; with --gguf, tokenizers' ids for a corpus
equal `spillway tokenize` ids on the GGUF twin (same vocabulary).
gguf: GGUFReader opens FILE; every tensor dequantizes to finite values;
matrices have std ~ 1/sqrt(row length); norms are ~1 (they hold 1 + w).
Exit status 0 when every check passes.
"""
import json
import subprocess
import sys

FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)


def verify_hf(folder, twin=None, spillway=None):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, info = AutoModelForCausalLM.from_pretrained(folder, output_loading_info=True)
    for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        check(not info.get(k), f"from_pretrained: no {k} ({info.get(k)})")
    tok = AutoTokenizer.from_pretrained(folder)
    ids = tok("The quick brown fox", return_tensors="pt").input_ids
    check(int(ids[0, 0]) == 2, "tokenizer adds <bos>")
    with torch.no_grad():
        logits = model(ids).logits.float()
    check(bool(torch.isfinite(logits).all()), f"logits finite ({type(model).__name__})")
    check(float(logits[0, -1].std()) > 0, "logits not all equal")
    if twin and spillway:
        texts = ["hello world", "Hello, World! 123", "tabs\tand\nnewlines", "ünïcödé ✓ 漢字",
                 "  two  spaces  ", "<start_of_turn>user\nhi<end_of_turn>"]
        for text in texts:
            hf_ids = tok(text).input_ids
            cmd = [spillway, "tokenize", "-m", twin, "--json", "-p", text]
            out = subprocess.run(cmd, capture_output=True, text=True, check=False)
            ours = json.loads(out.stdout) if out.returncode == 0 else None
            check(ours == hf_ids, f"same ids from tokenizer.json and GGUF: {text!r}")


def verify_gguf(path):
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(path)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    check(arch in ("gemma", "gemma2", "gemma3"), f"architecture {arch}")
    names = [t.name for t in reader.tensors]
    check("token_embd.weight" in names and "output.weight" not in names, "tied embedding")
    bad = 0
    for t in reader.tensors:
        a = np.asarray(gguf.dequantize(t.data, t.tensor_type), dtype=np.float32)
        if not np.isfinite(a).all():
            bad += 1
        elif t.name.endswith("norm.weight"):
            bad += not (0.85 < float(a.mean()) < 1.15)
        else:
            sd, want = float(a.std()), 1.0 / np.sqrt(float(t.shape[0]))
            bad += not (0.8 * want < sd < 1.2 * want)
    check(bad == 0, f"{len(reader.tensors)} tensors finite and scaled ({bad} off)")


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("hf", "gguf"):
        print(__doc__)
        return 2
    if sys.argv[1] == "hf":
        args = sys.argv[3:]
        twin = args[args.index("--gguf") + 1] if "--gguf" in args else None
        exe = args[args.index("--spillway") + 1] if "--spillway" in args else None
        verify_hf(sys.argv[2], twin, exe)
    else:
        verify_gguf(sys.argv[2])
    print(f"{len(FAILS)} failed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
