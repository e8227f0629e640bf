#!/usr/bin/env bash
# Spillway's perplexity against llama.cpp's llama-perplexity on the default
# model, each reading the other's base (the .kld file): the two tools cut
# the text into the same tokens (identical headers and token sections),
# llama-perplexity's PPL(base) of our base is our perplexity, and the
# figures that do not depend on which side is the base — the share of
# positions with the same top token, the RMS of dp, |ln(PPL ratio)| — agree
# when our f32 run is compared with its base and its run with ours.
# Skips (77) where the peer has not been built (../shared/peer/
# build-llama-bench.sh builds llama-perplexity beside llama-bench; CI does
# not build it).
# usage: perplexity_peer_test.sh SPILLWAY_BINARY TEXT
#   env SW_LLAMA_PERPLEXITY: the peer binary (default: the newest build in
#   ${XDG_CACHE_HOME:-~/.cache}/spillway-peer)
set -u
exe=$1 text=$2
peer=${SW_LLAMA_PERPLEXITY:-$(ls -d "${XDG_CACHE_HOME:-$HOME/.cache}"/spillway-peer/llama.cpp-*/build/bin/llama-perplexity 2>/dev/null | tail -1)}
model="${XDG_CACHE_HOME:-$HOME/.cache}/spillway/gemma-3-270m-q4_k_m.gguf"
if [ -z "$peer" ] || [ ! -x "$peer" ]; then
    echo "perplexity_peer: llama-perplexity not built (../shared/peer/build-llama-bench.sh): skipped"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check.sh"
ctx=128
llama() { "$peer" -m "$model" -c $ctx --chunks 2 -t 2 "$@" >"$tmp/llama.log" 2>&1; }
# the number after "LABEL:" in llama-perplexity's summary
peer_figure() { sed -n "s/^$1 *: *\([-0-9.]*\).*/\1/p" "$tmp/llama.log" | head -1; }
json() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
close() { python3 -c 'import sys; a,b,t=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b) <= t else 1)' "$@"; }

"$exe" perplexity -f "$text" -c $ctx --chunks 2 -t 2 --cpu-dots f32 --save-logits "$tmp/ours.kld" \
    --json >"$tmp/ours.json" 2>"$tmp/err"
rc=$?; check "our f32 base ($(tail -1 "$tmp/err"))" [ $rc -eq 0 ]
llama -f "$text" --kl-divergence-base "$tmp/peer.kld"
rc=$?; check "llama-perplexity saves its base ($(tail -1 "$tmp/llama.log"))" [ $rc -eq 0 ]
n=$((20 + 4 * 2 * ctx))
cmp -n $n "$tmp/ours.kld" "$tmp/peer.kld" >/dev/null
rc=$?; check "both bases start with the same header and tokens (the same tokenization)" [ $rc -eq 0 ]
[ "$(stat -c %s "$tmp/ours.kld")" = "$(stat -c %s "$tmp/peer.kld")" ]
rc=$?; check "both bases have the same size" [ $rc -eq 0 ]

llama --kl-divergence-base "$tmp/ours.kld" --kl-divergence
rc=$?; check "llama-perplexity reads our base ($(tail -1 "$tmp/llama.log"))" [ $rc -eq 0 ]
ppl_base=$(peer_figure "Mean PPL(base)") top=$(peer_figure "Same top p")
dp=$(peer_figure "RMS Δp") lnr=$(peer_figure "Mean ln(PPL(Q)\/PPL(base))")
"$exe" perplexity -t 2 --cpu-dots f32 --kl-divergence-base "$tmp/peer.kld" --json \
    >"$tmp/cmp.json" 2>"$tmp/err"
rc=$?; check "we read llama-perplexity's base ($(tail -1 "$tmp/err"))" [ $rc -eq 0 ]
ours_ppl=$(json "$tmp/ours.json" ppl)
close "$ppl_base" "$ours_ppl" "$(python3 -c "print(2e-4 * $ours_ppl)")"
rc=$?; check "llama-perplexity's PPL(base) of our base $ppl_base = our perplexity $ours_ppl" [ $rc -eq 0 ]
# One position of 2 x 63 moves the share by 0.79%; the records round the
# base's log-probabilities, so a near tie may fall either way.
close "$top" "$(python3 -c "print(100 * $(json "$tmp/cmp.json" same_top))")" 0.8
rc=$?; check "same top token: peer $top%, ours $(json "$tmp/cmp.json" same_top)" [ $rc -eq 0 ]
close "$dp" "$(python3 -c "print(100 * $(json "$tmp/cmp.json" dp_rms))")" 0.01
rc=$?; check "RMS dp: peer $dp%, ours $(json "$tmp/cmp.json" dp_rms)" [ $rc -eq 0 ]
close "$lnr" "$(python3 -c "print(-$(json "$tmp/cmp.json" ln_ppl_ratio))")" 1e-4
rc=$?; check "ln(PPL ratio): peer $lnr, ours -$(json "$tmp/cmp.json" ln_ppl_ratio)" [ $rc -eq 0 ]

check_summary perplexity_peer
