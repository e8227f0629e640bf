#!/usr/bin/env bash
# Two Spillway builds side by side on the cpu backend, per kernel set: an
# old commit's binary (A) against a new one's (B), `spillway bench` on one
# model, interleaved A B A B per round and per SPILLWAY_CPU_ISA cap, so a
# change's gain and the absence of a regression on the narrower sets (e.g.
# AVX2-only machines, issue 40) are read from the same runs. Medians of the
# rounds' means. Not a test: machines are noisy.
#
# usage: bench/ab_builds.sh A_SPILLWAY B_SPILLWAY [-m FILE] [--out FILE.md]
# env: ROUNDS (3), ISAS ("avx512 avx2": caps this CPU must have), THREADS
#      (1), PP (512), TG (128), REPS per run (2)
set -euo pipefail
a_bin=${1:?usage: ab_builds.sh A_SPILLWAY B_SPILLWAY [-m FILE] [--out FILE.md]}
b_bin=${2:?usage: ab_builds.sh A_SPILLWAY B_SPILLWAY [-m FILE] [--out FILE.md]}
shift 2
model="${XDG_CACHE_HOME:-$HOME/.cache}/spillway/gemma-3-270m-q4_k_m.gguf" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -m) model=${2:?-m needs a file}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    *) echo "ab_builds.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
for b in "$a_bin" "$b_bin"; do
  [ -x "$b" ] || { echo "ab_builds.sh: '$b' is not an executable" >&2; exit 2; }
done
[ -f "$model" ] || { echo "ab_builds.sh: model '$model' not found (spillway fetch)" >&2; exit 2; }
rounds=${ROUNDS:-3} isas=${ISAS:-avx512 avx2} threads=${THREADS:-1}
pp=${PP:-512} tg=${TG:-128} reps=${REPS:-2}

raw=$(mktemp); trap 'rm -f "$raw"' EXIT
# one run: "test t/s" lines from bench --json
run() { # BIN ISA
  SPILLWAY_CPU_ISA=$2 "$1" bench -m "$model" -p "$pp" -n "$tg" -r "$reps" -t "$threads" --json |
    python3 -c 'import json, sys
for r in json.load(sys.stdin): print(r["test"], r["tokens_per_s"])'
}
for r in $(seq "$rounds"); do
  echo "ab_builds.sh: round $r/$rounds" >&2
  for isa in $isas; do
    run "$a_bin" "$isa" | sed "s/^/$r $isa A /" >>"$raw"
    run "$b_bin" "$isa" | sed "s/^/$r $isa B /" >>"$raw"
  done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
table=$(
  echo "| set | test | A t/s | B t/s | B / A |"
  echo "|---|---|---:|---:|---:|"
  for isa in $isas; do
    for t in $(awk '{ print $4 }' "$raw" | sort -u); do
      a=$(awk -v i="$isa" -v t="$t" '$2 == i && $3 == "A" && $4 == t { print $5 }' "$raw" | median)
      b=$(awk -v i="$isa" -v t="$t" '$2 == i && $3 == "B" && $4 == t { print $5 }' "$raw" | median)
      echo "| $isa | $t | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }') |"
    done
  done)
echo "medians over $rounds interleaved rounds, -t $threads, $cpu"
echo "$table"
if [ -n "$out" ]; then
  {
    echo "# Two builds side by side: A = $a_bin, B = $b_bin"
    echo
    echo "$(date -u +%Y-%m-%d), $cpu ($(nproc) CPUs), model $(basename "$model")."
    echo "\`bench/ab_builds.sh\`: \`spillway bench -p $pp -n $tg -r $reps -t $threads --json\` under"
    echo "SPILLWAY_CPU_ISA in {$isas}, A then B, per round; medians of $rounds rounds' means."
    echo
    echo "$table"
    echo
    echo "## Per round"
    echo
    echo "| round | set | build | test | t/s |"
    echo "|---:|---|---|---|---:|"
    awk '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }' "$raw"
  } >"$out"
  echo "wrote $out"
fi
