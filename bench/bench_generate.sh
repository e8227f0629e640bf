#!/usr/bin/env bash
# Generation speed of the default model: Spillway against llama.cpp (the
# llama-cpp-python package, installed in a venv outside the repo), side by
# side on the same machine, same prompt, same thread count. Prints medians
# of REPS runs and the ratios. Not a test: machines are noisy.
#
# usage: bench/bench_generate.sh [BUILD_DIR] [THREADS] [REPS]
#   PEER_PYTHON=/path/to/venv/bin/python (a python with llama_cpp)
set -euo pipefail
build=${1:-build}
threads=${2:-2}
reps=${3:-5}
n_predict=64
peer_python=${PEER_PYTHON:-python3}
model="${XDG_CACHE_HOME:-$HOME/.cache}/spillway/gemma-3-270m-q4_k_m.gguf"
here=$(cd "$(dirname "$0")" && pwd)
prompt=$(mktemp)
trap 'rm -f "$prompt"' EXIT
python3 -c "print('The history of the river valley is long and complicated. ' * 12)" >"$prompt"

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

ours=$(for _ in $(seq "$reps"); do
    "$build/spillway" run -m "$model" -f "$prompt" -n $n_predict --temp 0 -t "$threads" 2>&1 >/dev/null |
        sed -n 's/^prompt .*(\(.*\) tok\/s); generated .*(\(.*\) tok\/s)$/\1 \2/p'
done)
peer=$("$peer_python" "$here/peer_llamacpp.py" "$model" "$prompt" $n_predict "$threads" "$reps" 2>/dev/null |
    awk '{print $2, $4}' 2>/dev/null)

our_pf=$(echo "$ours" | awk '{print $1}' | median)
our_dc=$(echo "$ours" | awk '{print $2}' | median)
peer_pf=$(echo "$peer" | awk '{print $1}' | median)
peer_dc=$(echo "$peer" | awk '{print $2}' | median)
echo "gemma-3-270m Q4_K_M, -t $threads, prompt 135 tokens, $n_predict generated, median of $reps"
printf "%-10s %12s %12s\n" "" "prefill t/s" "decode t/s"
printf "%-10s %12.1f %12.1f\n" spillway "$our_pf" "$our_dc"
printf "%-10s %12.1f %12.1f\n" llama.cpp "$peer_pf" "$peer_dc"
awk -v a="$our_pf" -v b="$peer_pf" -v c="$our_dc" -v d="$peer_dc" \
    'BEGIN {printf "%-10s %12.2f %12.2f\n", "ratio", a / b, c / d}'
