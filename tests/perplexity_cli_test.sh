#!/usr/bin/env bash
# `spillway perplexity` end to end on one model and text: a base saved with
# --cpu-dots f32, the same engine against it (KLD ~ 0, the same top token
# everywhere), 8-bit weights against it (a small, non-zero KLD), the chunk
# length taken from the base without -c, and the errors a user meets
# (usage: exit 2; a missing base: 3; a file that is not one: 4).
# usage: perplexity_cli_test.sh SPILLWAY_BINARY MODEL TEXT CTX [EXTRA_FLAGS...]
#   EXTRA_FLAGS are given to the run judged against the f32 base (e.g.
#   --weights q8_0 on an F32 model, nothing on a quantized one).
set -u
exe=$1 model=$2 text=$3 ctx=$4
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check.sh"
ppl() { "$exe" perplexity ${model:+-m "$model"} -t 2 "$@"; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# holds FILE EXPR: a Python expression over the JSON's fields is true
holds() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2], {}, d) else 1)' "$1" "$2"; }

ppl -f "$text" -c "$ctx" --chunks 2 --cpu-dots f32 --save-logits "$tmp/base.kld" --json \
    >"$tmp/save.json" 2>"$tmp/err"
rc=$?; check "save a base ($(tail -1 "$tmp/err"))" [ $rc -eq 0 ]
holds "$tmp/save.json" "n_chunks == 2 and n_ctx == $ctx and ppl > 1 and 'kld_mean' not in dir()"
rc=$?; check "the base run's figures: $(cat "$tmp/save.json")" [ $rc -eq 0 ]
[ -s "$tmp/base.kld" ] && [ "$(head -c 8 "$tmp/base.kld")" = "_logits_" ]
rc=$?; check "the base is a llama.cpp _logits_ file" [ $rc -eq 0 ]

ppl --cpu-dots f32 --kl-divergence-base "$tmp/base.kld" --json >"$tmp/self.json" 2>"$tmp/err"
rc=$?; check "compare with its own base, -c from the base ($(tail -1 "$tmp/err"))" [ $rc -eq 0 ]
holds "$tmp/self.json" "n_ctx == $ctx and kld_mean < 1e-4 and same_top == 1 and \
abs(ppl_base - $(field "$tmp/save.json" ppl)) < 1e-3 * ppl_base"
rc=$?; check "own base: KLD ~ 0, same top everywhere: $(cat "$tmp/self.json")" [ $rc -eq 0 ]

ppl "$@" --kl-divergence-base "$tmp/base.kld" --json >"$tmp/q.json" 2>"$tmp/err"
rc=$?; check "8-bit run against the f32 base ($(tail -1 "$tmp/err"))" [ $rc -eq 0 ]
holds "$tmp/q.json" "0 < kld_mean < 0.05 and kld_p99 >= kld_median and same_top > 0.8"
rc=$?; check "8-bit against f32: a small KLD: $(cat "$tmp/q.json")" [ $rc -eq 0 ]
ppl "$@" --kl-divergence-base "$tmp/base.kld" >"$tmp/q.txt" 2>/dev/null &&
    grep -q "^KLD mean" "$tmp/q.txt" && grep -q "^same top token" "$tmp/q.txt"
rc=$?; check "the table names the figures" [ $rc -eq 0 ]

expect() { # expect CODE PATTERN ARGS...: exit status and message
    local code=$1 pattern=$2 rc
    shift 2
    ppl "$@" >/dev/null 2>"$tmp/err"
    rc=$?
    check "perplexity $* -> $rc, want $code: $(head -1 "$tmp/err")" [ $rc -eq "$code" ]
    check "perplexity $* says '$pattern': $(head -1 "$tmp/err")" grep -q -- "$pattern" "$tmp/err"
}
expect 2 "needs a text" -c "$ctx"
expect 2 "two runs" -f "$text" --save-logits "$tmp/x.kld" --kl-divergence-base "$tmp/base.kld"
expect 2 "--chunks" -f "$text" --chunks 0
expect 2 "needs a value" --kl-divergence-base
expect 2 "give a longer text" -p "a short text" -c "$ctx"
expect 2 "raise -c" --kl-divergence-base "$tmp/base.kld" -c 8
expect 3 "cannot read the base" --kl-divergence-base "$tmp/missing.kld"
head -c 1000 "$tmp/base.kld" >"$tmp/cut.kld"
expect 4 "truncated" --kl-divergence-base "$tmp/cut.kld"
printf 'not a base at all, not at all' >"$tmp/junk.kld"
expect 4 "not a log-probability base" --kl-divergence-base "$tmp/junk.kld"
expect 3 "cannot write the base" -f "$text" -c "$ctx" --save-logits "$tmp/no/dir.kld"
check "no base written when the flags are refused" [ ! -e "$tmp/x.kld" ]

check_summary perplexity_cli
