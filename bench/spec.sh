#!/usr/bin/env bash
# Speculative decoding's speed points (issue 36), greedy, on one machine:
#  1. every layer streamed over a slow simulated link (--backend sim
#     --device-mem 64M --place all=streamed --sim-link-bw 250M): plain
#     decoding vs the model drafting for itself, resident on the same sim
#     (-md MODEL --draft-device-mem 1G) at --draft-max 4, 8, 16; the issue's
#     target is >= 3x plain at 8. The resident plan alone (--device-mem 1G)
#     is run too: it is the drafter's speed.
#  2. --draft-ngram on text-rewriting prompts (rewrite, repeat, rename a
#     variable), on --backend cpu and on the streamed plan.
#  3. one forward of W tokens on the streamed plan (a prefill of W tokens
#     with -b W), W = 1 .. 17, and from it the textbook prediction of the
#     speed-up: E = (1 - a^(k+1)) / (1 - a) tokens per verify, costing
#     t(k+1) + k t_draft, against t(1) per plain token.
# Rounds interleave every configuration (A B A B ...); tables give medians.
# Greedy, so drafted output must equal plain output: each run is checked.
# Acceptance comes from --report-json's speculative counters when it has
# them, else it is derived: the streamed plan moves a fixed number of bytes
# per forward, so bytes_to_device counts the target's forwards, and the
# engine counts every multi-token forward's tokens as prefill (see the
# results file). Not a test: machines are noisy; compare medians.
#
# usage: bench/spec.sh [-m FILE] [--out FILE.md] [--build DIR] [--quick | --dry-run]
#   -m FILE     target and draft model (default: the spillway cache's default)
#   --out FILE  the markdown record (default bench/results/spec_DATE.md;
#               --quick writes none unless given)
#   --build DIR Spillway build folder, configured and built if needed
#               (default: build)
#   --quick     a smoke test well under a minute: 1 round, 8 tokens, k 8,
#               widths 1 and 9, the repeat prompt only
#   --dry-run   print the commands of one round, run nothing (the prompt
#               files they name are written to --keep DIR if given)
#   --keep DIR  keep every run's stdout, stderr and report in DIR (new or
#               empty), for bench/spec_report.py to read again
# env: ROUNDS (3), THREADS (2), N tokens per run (64), KS ("4 8 16"),
#      WIDTHS ("1 2 4 5 8 9 16 17"), LINK_BW (250M),
#      LOAD_MAX (1.5) and LOAD_WAIT_S (600): before round 1, wait up to
#      LOAD_WAIT_S for the 1-minute load average to fall to LOAD_MAX.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model="${XDG_CACHE_HOME:-$HOME/.cache}/spillway/gemma-3-270m-q4_k_m.gguf"
out="" build="build" mode=full keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    -m) model=${2:?-m needs a file}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --quick) mode=quick; shift ;;
    --dry-run) mode=dry; shift ;;
    --keep) keep=${2:?--keep needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "spec.sh: unknown option '$1' (see bench/spec.sh --help)" >&2; exit 2 ;;
  esac
done
rounds=${ROUNDS:-3} threads=${THREADS:-2} n=${N:-64} ks=${KS:-4 8 16}
widths=${WIDTHS:-1 2 4 5 8 9 16 17} link=${LINK_BW:-250M}
load_max=${LOAD_MAX:-1.5} load_wait=${LOAD_WAIT_S:-600}
prompts="rewrite repeat code"
if [ "$mode" = quick ]; then
  rounds=1 n=8 ks=8 widths="1 9" prompts=repeat load_wait=0
fi
[ "$rounds" -ge 1 ] 2>/dev/null || { echo "spec.sh: ROUNDS must be >= 1, got '$rounds'" >&2; exit 2; }
[ "$n" -ge 2 ] 2>/dev/null || { echo "spec.sh: N must be >= 2, got '$n'" >&2; exit 2; }
case "$build" in /*) ;; *) build="$root/$build" ;; esac
case "$out" in ""|/*) ;; *) out="$PWD/$out" ;; esac
[ -z "$out" ] && [ "$mode" = full ] && out="$root/bench/results/spec_$(date -u +%Y-%m-%d).md"
spillway="$build/spillway"
if [ "$mode" != dry ]; then
  [ -f "$model" ] || { echo "spec.sh: no model at $model (run 'spillway fetch' or pass -m FILE)" >&2; exit 2; }
  echo "spec.sh: building spillway in $build" >&2
  [ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" >&2
  cmake --build "$build" --target spillway_cli -j"$(nproc)" >&2
fi

stream="--backend sim --device-mem 64M --place all=streamed --sim-link-bw $link"
resident="--backend sim --device-mem 1G"
# shellcheck disable=SC2034 # read as ${!b}
cpu="--backend cpu"
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  [ -z "$(ls -A "$keep")" ] || { echo "spec.sh: --keep $keep is not empty" >&2; exit 2; }
  raw=$(cd "$keep" && pwd)
else
  raw=$(mktemp -d); trap 'rm -rf "$raw"' EXIT
fi

# The prompts, in Gemma's chat turns (the 270M model answers only inside
# them). story: free text for the draft model; the rest quote their input.
turn() { printf '<start_of_turn>user\n%s<end_of_turn>\n<start_of_turn>model\n' "$1" >"$raw/$2.txt"; }
para="The river rises three feet overnight, and by morning the old stone bridge at \
Millbrook is closed to traffic. Engineers from the county arrive at nine to inspect the \
arches, while farmers on the east bank wait with their trucks for news. By noon the water \
starts to fall, and the bridge opens again before dark."
turn "Write a short story about a river, a bridge and an engineer." story
turn "Rewrite the following paragraph in the past tense, changing nothing else:

$para" rewrite
turn "Repeat the following text exactly, word for word:

$para" repeat
# shellcheck disable=SC2016 # backquotes are the prompt's text
turn 'Rename the variable `tmp` to `total` in this C function. Reply with the whole function only.

```c
int sum_positive(const int *xs, int n) {
    int tmp = 0;
    for (int i = 0; i < n; i++) {
        if (xs[i] > 0)
            tmp += xs[i];
    }
    return tmp;
}
```' code
# W tokens with BOS: "the" and W - 2 more " the" (one token each here);
# W = 1 is BOS alone. The analysis checks the count run reports.
for w in $widths; do
  if [ "$w" -le 1 ]; then printf '' >"$raw/w$w.txt"
  else { printf 'the'; for _ in $(seq 3 "$w"); do printf ' the'; done; } >"$raw/w$w.txt"; fi
done

# go ROUND PART CONFIG PROMPT PLAN [FLAGS...]: one `spillway run`, its
# stdout, stderr and --report-json kept under $raw, listed in runs.tsv.
go() {
  local r=$1 part=$2 cfg=$3 p=$4 plan=$5; shift 5
  local id="$part-$cfg-$p-$r" nt=$n
  case "$cfg" in prefill|bytes1) nt=1 ;; esac
  # shellcheck disable=SC2206 # $plan is words
  local cmd=("$spillway" run -m "$model" -f "$raw/$p.txt" -n "$nt" --temp 0 -t "$threads" $plan "$@")
  if [ "$mode" = dry ]; then
    printf '%s\n' "${cmd[*]/#$raw\//}"
    return 0
  fi
  echo "spec.sh: ${SECONDS}s: round $r: $part $cfg $p" >&2
  "${cmd[@]}" --report-json "$raw/$id.json" >"$raw/$id.out" 2>"$raw/$id.err" ||
    { echo "spec.sh: failed: ${cmd[*]}" >&2; tail -n 5 "$raw/$id.err" >&2; exit 1; }
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$part" "$cfg" "$p" "$id" "$*" >>"$raw/runs.tsv"
}

wait_quiet() {
  local waited=0 load
  while :; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    awk -v l="$load" -v m="$load_max" 'BEGIN { exit !(l <= m) }' && return 0
    if [ "$waited" -ge "$load_wait" ]; then
      echo "spec.sh: 1-minute load $load still > $load_max after ${waited}s; running anyway" >&2
      return 0
    fi
    echo "spec.sh: 1-minute load $load > $load_max; waiting ($waited/${load_wait}s)" >&2
    sleep 30; waited=$((waited + 30))
  done
}

[ "$mode" = dry ] || wait_quiet
# Bytes of the prompt's prefill alone on the streamed plan (deterministic):
# what the derived counts subtract.
for p in story $prompts; do go 0 bytes1 bytes1 "$p" "$stream"; done
[ "$mode" = dry ] && rounds=1
for r in $(seq "$rounds"); do
  [ "$mode" = dry ] || echo "$r $(cut -d' ' -f1-3 /proc/loadavg)" >>"$raw/load"
  go "$r" p1 plain story "$stream"
  for k in $ks; do go "$r" p1 "md$k" story "$stream" -md "$model" --draft-device-mem 1G --draft-max "$k"; done
  go "$r" p1 resident story "$resident"
  for p in $prompts; do
    for b in cpu stream; do
      go "$r" "p2$b" plain "$p" "${!b}"
      go "$r" "p2$b" ngram "$p" "${!b}" --draft-ngram --draft-max 8
    done
  done
  for w in $widths; do go "$r" p3 prefill "w$w" "$stream" -b "$w"; done
done
[ "$mode" = dry ] && exit 0
echo "$(( rounds + 1 )) $(cut -d' ' -f1-3 /proc/loadavg)" >>"$raw/load"

cpu_name=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
[ -n "$cpu_name" ] || cpu_name=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$root" diff --quiet HEAD 2>/dev/null; then commit="$commit+changes"; fi
python3 -c 'import json, sys; a = sys.argv[1:]; print(json.dumps(dict(zip(a[::2], a[1::2]))))' \
  cpu "$cpu_name ($(nproc) CPUs)" model "$model" commit "$commit" threads "$threads" n "$n" \
  rounds "$rounds" stream "$stream" resident "$resident" mode "$mode" >"$raw/meta.json"
python3 "$root/bench/spec_report.py" "$raw" "$out"
