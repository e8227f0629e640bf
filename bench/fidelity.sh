#!/usr/bin/env bash
# Numerical fidelity (issue 22): how far each faster path's next-token
# distributions are from the f32 reference, beside llama.cpp's on the same
# base. One base of log-probabilities is saved by `spillway perplexity
# --cpu-dots f32` (the path bit-exact to transformers); then every run is
# compared with it — llama-perplexity (the CPU peer, the same model file)
# and Spillway's paths — with llama.cpp's own figures: mean KL divergence,
# its 99th percentile, same top token, RMS dp, ln(PPL/PPL(base)). The base
# is in llama.cpp's .kld format, so both tools read the very same bytes.
# Not a test: a measurement; the record says the CPU, text and commands.
#
# usage: bench/fidelity.sh [-m FILE] [-f TEXT] [-c 512] [--chunks 8]
#                          [--also 'LABEL=FLAGS']... [--out FILE.md] [--build DIR]
#   -m FILE      model (default: the default model in the spillway cache)
#   -f TEXT      text (default /usr/share/common-licenses/GPL-3)
#   --also L=F   one more Spillway run, e.g. --also 'cuda=--backend cuda'
#   --out FILE   also write a markdown record
# env: THREADS (default: nproc), PEER_SCRIPT (../shared/peer/build-llama-bench.sh;
#      builds llama-perplexity beside llama-bench), KEEP (keep the base and logs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model="${XDG_CACHE_HOME:-$HOME/.cache}/spillway/gemma-3-270m-q4_k_m.gguf"
text=/usr/share/common-licenses/GPL-3 ctx=512 chunks=8 out="" build="build"
also=()
while [ $# -gt 0 ]; do
  case "$1" in
    -m) model=${2:?-m needs a file}; shift 2 ;;
    -f) text=${2:?-f needs a file}; shift 2 ;;
    -c) ctx=${2:?-c needs a number}; shift 2 ;;
    --chunks) chunks=${2:?--chunks needs a number}; shift 2 ;;
    --also) case "${2:-}" in *=*) also+=("$2") ;; *) echo "fidelity.sh: --also needs LABEL=FLAGS" >&2; exit 2 ;; esac; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fidelity.sh: unknown option '$1' (see bench/fidelity.sh --help)" >&2; exit 2 ;;
  esac
done
threads=${THREADS:-$(nproc)}
[ -f "$model" ] || { echo "fidelity.sh: no model at $model (run 'spillway fetch' or pass -m FILE)" >&2; exit 2; }
[ -f "$text" ] || { echo "fidelity.sh: no text at $text (pass -f FILE)" >&2; exit 2; }
case "$build" in /*) ;; *) build="$root/$build" ;; esac
case "$out" in ""|/*) ;; *) out="$PWD/$out" ;; esac

peer_script=${PEER_SCRIPT:-$root/../shared/peer/build-llama-bench.sh}
[ -f "$peer_script" ] || { echo "fidelity.sh: no peer build script at $peer_script (set PEER_SCRIPT)" >&2; exit 1; }
echo "fidelity.sh: building llama.cpp's tools (cached; the first build takes minutes)" >&2
peer=$(dirname "$(bash "$peer_script" | tail -n 1)")/llama-perplexity
[ -x "$peer" ] || { echo "fidelity.sh: $peer_script did not build llama-perplexity" >&2; exit 1; }
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" >&2
cmake --build "$build" --target spillway_cli -j"$(nproc)" >&2
spillway="$build/spillway"

raw=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "fidelity.sh: keeping $raw" >&2 || trap 'rm -rf "$raw"' EXIT
base="$raw/base.kld"
ours() { "$spillway" perplexity -m "$model" -t "$threads" "$@"; }

echo "fidelity.sh: the f32 base ($chunks chunks of $ctx)" >&2
ours -f "$text" -c "$ctx" --chunks "$chunks" --cpu-dots f32 --save-logits "$base" --json \
  >"$raw/base.json"
# Rows: label, then flags for Spillway ("peer" for llama-perplexity).
rows=("spillway --cpu-dots f32 (the base, against itself)=--cpu-dots f32"
      "llama.cpp llama-perplexity (its default CPU path, f16 KV)=peer"
      "spillway (default: --cpu-dots q8, f16 KV)="
      "spillway --kv-type f32=--kv-type f32"
      "spillway --kv-type bf16=--kv-type bf16"
      "spillway --cpu-dots f32 --kv-type f16 (f16 KV alone)=--cpu-dots f32 --kv-type f16"
      "${also[@]}")
i=0
for row in "${rows[@]}"; do
  label=${row%%=*} flags=${row#*=}
  i=$((i + 1))
  echo "fidelity.sh: $label" >&2
  if [ "$flags" = peer ]; then
    "$peer" -m "$model" -c "$ctx" --chunks "$chunks" -t "$threads" --kl-divergence-base "$base" \
      --kl-divergence >"$raw/$i.log" 2>&1 ||
      { echo "fidelity.sh: llama-perplexity failed:" >&2; tail -n 5 "$raw/$i.log" >&2; exit 1; }
  else
    # shellcheck disable=SC2086  # flags are words
    ours $flags --kl-divergence-base "$base" --json >"$raw/$i.json" 2>"$raw/$i.err" ||
      { echo "fidelity.sh: spillway failed:" >&2; tail -n 5 "$raw/$i.err" >&2; exit 1; }
  fi
  printf '%s\n' "$label" >"$raw/$i.label"
  printf '%s\n' "$flags" >"$raw/$i.flags"
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
      grep -E '^(avx2|fma|avx512f|avx512bw|avx512_vnni|avx512_bf16|avx_vnni)$' | tr '\n' ' ' | sed 's/ $//')
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$root" diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
python3 - "$raw" "$i" "$out" "$cpu ($(nproc) CPUs; ${isa:-no AVX2}), -t $threads" "$model" \
  "$text" "$ctx" "$chunks" "$commit" "${LLAMA_CPP_PYTHON_VERSION:-0.3.36}" <<'PY'
import datetime, json, os, re, sys
raw, n, out, cpu, model, text, ctx, chunks, commit, peer_ver = sys.argv[1:]

def peer_figures(log):
    """llama-perplexity's summary lines -> our JSON field names."""
    s = open(log, encoding="utf-8", errors="replace").read()
    def num(label, scale=1.0):
        m = re.search(r"^" + re.escape(label) + r"\s*:\s*([-0-9.e]+)(?:\s*±\s*([-0-9.e]+))?", s, re.M)
        return (float(m.group(1)) * scale, float(m.group(2) or 0) * scale) if m else (float("nan"), 0)
    f = {}
    f["ppl"], f["ppl_unc"] = num("Mean PPL(Q)")
    f["ppl_base"], _ = num("Mean PPL(base)")
    f["ln_ppl_ratio"], f["ln_ppl_ratio_unc"] = num("Mean ln(PPL(Q)/PPL(base))")
    f["kld_mean"], f["kld_unc"] = num("Mean    KLD")
    f["kld_p99"], _ = num("99.0%   KLD")
    f["kld_median"], _ = num("Median  KLD")
    f["same_top"], f["same_top_unc"] = num("Same top p", 0.01)
    f["dp_rms"], f["dp_rms_unc"] = num("RMS Δp", 0.01)
    return f

lines = ["| run | PPL | ln(PPL/PPL(base)) | mean KLD | median KLD | 99% KLD | same top | RMS dp |",
         "|---|---:|---:|---:|---:|---:|---:|---:|"]
base = json.load(open(os.path.join(raw, "base.json")))
for i in range(1, int(n) + 1):
    label = open(os.path.join(raw, f"{i}.label")).read().strip()
    path = os.path.join(raw, f"{i}.json")
    f = json.load(open(path)) if os.path.exists(path) else peer_figures(os.path.join(raw, f"{i}.log"))
    lines.append(f"| {label} | {f['ppl']:.4f} | {f['ln_ppl_ratio']:.6f} ± {f['ln_ppl_ratio_unc']:.6f} "
                 f"| {f['kld_mean']:.6f} ± {f['kld_unc']:.6f} | {f['kld_median']:.6f} | {f['kld_p99']:.6f} "
                 f"| {100 * f['same_top']:.3f} ± {100 * f['same_top_unc']:.3f}% "
                 f"| {100 * f['dp_rms']:.3f} ± {100 * f['dp_rms_unc']:.3f}% |")
table = "\n".join(lines)
head = (f"{os.path.basename(model)}, {os.path.basename(text)}, {chunks} chunks of {ctx} "
        f"({base['n_scored']} positions scored), base: spillway --cpu-dots f32 (PPL {base['ppl']:.4f}); {cpu}")
print(head)
print(table)
if out:
    home = os.path.expanduser("~")
    doc = f"""# Fidelity against the f32 base (issue 22)

{datetime.date.today().isoformat()}, {cpu}. Model {os.path.basename(model)}, text {text.replace(home, "~")}
({base['n_chunks']} chunks of {ctx} tokens, {base['n_scored']} positions scored). Spillway {commit};
peer llama-perplexity of the llama.cpp that llama-cpp-python {peer_ver} vendors (built by
`../shared/peer/build-llama-bench.sh`, AMX off). Base: `spillway perplexity --cpu-dots f32
--save-logits` (PPL {base['ppl']:.4f}), in llama.cpp's .kld format; every row is compared with
those same bytes (`--kl-divergence-base`), KL(base || run). Made by `bench/fidelity.sh`.

{table}
"""
    open(out, "w").write(doc)
    print(f"fidelity.sh: wrote {out}", file=sys.stderr)
PY
