#!/usr/bin/env bash
# bench_batch.sh — aggregate decode tokens/s of `spillway batch` at
# -np 1, 2, 4 and 8 on the default model, for a streamed plan on the
# simulated device (--device-mem 64M --sim-link-bw 2G --place all=streamed:
# every layer crosses a 2 GiB/s link every forward) and an all-resident one
# (--device-mem 1G). Eight requests of equal length, greedy, 64 tokens each;
# -c 128 so eight sequences' KV fits the 64 MiB device beside the ring.
# "decode" is the tokens sampled in forwards that were all decode steps
# divided by their time (batch's summary line). Runs are interleaved
# (rep, -np, plan) and medians of REPS are reported; not a test: machines
# are noisy.
#
# usage: bench/bench_batch.sh [BUILD_DIR] [REPS] [OUT.md]
set -euo pipefail
build=${1:-build}
reps=${2:-3}
out=${3:-}
threads=${THREADS:-2}
n_predict=64
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp/req.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(8):
        f.write(json.dumps({"id": i, "prompt": "Write a short story about a river, a bridge "
                            "and an engineer called number %d." % i}) + "\n")
PY
declare -A plan=(
  [streamed]="--backend sim --device-mem 64M --sim-link-bw 2G --place all=streamed"
  [resident]="--backend sim --device-mem 1G --place all=resident,lm_head=resident"
)
nps=(1 2 4 8)
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
for rep in $(seq "$reps"); do
  for np in "${nps[@]}"; do
    for mode in streamed resident; do
      # shellcheck disable=SC2086
      line=$("$build/spillway" batch -f "$tmp/req.jsonl" -o "$tmp/out.jsonl" -np "$np" \
             -n $n_predict --temp 0 -t "$threads" -c 128 ${plan[$mode]} 2>&1 >/dev/null | tail -1)
      dec=$(sed -n 's/.*decode \([0-9.]*\) tok\/s aggregate.*/\1/p' <<< "$line")
      all=$(sed -n 's/.* \([0-9.]*\) tok\/s generated overall.*/\1/p' <<< "$line")
      echo "$mode $np $dec $all" >> "$tmp/runs"
      echo "rep $rep $mode -np $np: decode $dec tok/s, overall $all tok/s" >&2
    done
  done
done
{
  echo "# spillway batch: aggregate decode tokens/s by -np"
  echo
  echo "$(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
       "$(nproc) cores, -t $threads, default model (Gemma 3 270M Q4_K_M), 8 requests x" \
       "$n_predict tokens, greedy, -c 128; medians of $reps interleaved runs."
  echo
  echo "| plan | -np 1 | -np 2 | -np 4 | -np 8 | np8 / np1 |"
  echo "|---|---|---|---|---|---|"
  for mode in streamed resident; do
    row="| $mode (${plan[$mode]})"
    first=""
    for np in "${nps[@]}"; do
      m=$(awk -v a="$mode" -v n="$np" '$1 == a && $2 == n {print $3}' "$tmp/runs" | median)
      [ -z "$first" ] && first=$m
      last=$m
      row="$row | $m"
    done
    echo "$row | $(awk -v a="$last" -v b="$first" 'BEGIN {printf "%.2fx", a / b}') |"
  done
  echo
  echo "Overall generated tokens/s (prefill included):"
  echo
  for mode in streamed resident; do
    row="- $mode:"
    for np in "${nps[@]}"; do
      row="$row -np $np $(awk -v a="$mode" -v n="$np" '$1 == a && $2 == n {print $4}' "$tmp/runs" | median);"
    done
    echo "$row"
  done
} | tee ${out:+"$out"}
