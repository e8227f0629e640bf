#!/usr/bin/env bash
# The decode step's integer kernels over stored rows (one token against
# many rows, idot.h's `rows`), AVX-512 against the AVX2 set they replace,
# on one core with the rows streaming from memory: bench_matmul per type and
# form, the two kernel sets interleaved per round (A B A B) through the
# SPILLWAY_CPU_ISA cap, medians over rounds, beside each run's read of the
# same weight bytes with the kernels' prefetch (one core; the yardstick of
# issue 40). Not a test: machines are noisy; compare medians of
# interleaved rounds.
#
# usage: bench/decode_kernels.sh [--out FILE.md] [--build DIR]
# env: ROUNDS (5), ROWS (10240), COLS (10240: 59 MB of Q4_K, 111 MB of
#      Q8_0; past the L3 of most CPUs, not of every Xeon: choose more where
#      lscpu's L3 is larger), REPS per run (20),
#      TYPES (default: every stored type Gemma files use — Q8_0 Q5_0 Q5_1
#      Q4_0 Q4_1 Q4_K Q5_K Q6_K F16 BF16; the fine form, activations
#      with a scale per 32, is timed for the K types only: the others
#      have one kernel for both),
#      BASE (the set to compare against: avx2, the one the AVX-512 set
#      starts from and replaces; avxvnni on CPUs that have it)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="" build="build"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "decode_kernels.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
rounds=${ROUNDS:-5} rows=${ROWS:-10240} cols=${COLS:-10240} reps=${REPS:-20}
types=${TYPES:-Q8_0 Q5_0 Q5_1 Q4_0 Q4_1 Q4_K Q5_K Q6_K F16 BF16}
forms() { case "$1" in *_K) echo coarse fine ;; *) echo coarse ;; esac; }
case "$build" in /*) ;; *) build="$root/$build" ;; esac
case "$out" in ""|/*) ;; *) out="$PWD/$out" ;; esac
grep -qw avx512_vnni /proc/cpuinfo || {
  echo "decode_kernels.sh: this CPU has no AVX-512 VNNI; nothing to compare" >&2; exit 1; }
base=${BASE:-avx2}
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" >&2
cmake --build "$build" --target bench_matmul -j"$(nproc)" >&2
bm="$build/bench/bench_matmul"

raw=$(mktemp); trap 'rm -f "$raw"' EXIT
# one run: GB/s of the rows read, then GB/s of the same bytes read with
# the kernels' prefetch just before ("-" from a bench_matmul without it)
gbs() { # ISA TYPE [--fine]
  SPILLWAY_CPU_ISA=$1 "$bm" -r "$rows" -c "$cols" -k 1 -t 1 -n "$reps" ${3:-} "$2" |
    awk -v t="$2" '$1 == t { g = ""; pf = "-"
      for (i = 1; i < NF; i++) { if (g == "" && $(i + 1) == "GB/s") g = $i; if ($i == "prefetched:") pf = $(i + 1) }
      print g, pf; exit }'
}
for r in $(seq "$rounds"); do
  echo "decode_kernels.sh: round $r/$rounds" >&2
  for t in $types; do
    for form in $(forms "$t"); do
      flag=""; [ "$form" = fine ] && flag=--fine
      for isa in "$base" avx512; do
        echo "$r $t $form $isa $(gbs "$isa" "$t" "$flag")" >>"$raw"
      done
    done
  done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
table=$(
  echo "| type | form | $base GB/s | avx512 GB/s | avx512 / $base | prefetched read GB/s | avx512 / read |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  for t in $types; do
    for form in $(forms "$t"); do
      a=$(awk -v t="$t" -v f="$form" -v i="$base" '$2 == t && $3 == f && $4 == i { print $5 }' "$raw" | median)
      b=$(awk -v t="$t" -v f="$form" '$2 == t && $3 == f && $4 == "avx512" { print $5 }' "$raw" | median)
      # the read just before each AVX-512 run, and the median of the runs' ratios
      p=- r=-
      if awk -v t="$t" -v f="$form" '$2 == t && $3 == f && $4 == "avx512" && $6 > 0 { n++ } END { exit !n }' "$raw"; then
        p=$(awk -v t="$t" -v f="$form" '$2 == t && $3 == f && $4 == "avx512" && $6 > 0 { print $6 }' "$raw" | median)
        r=$(awk -v t="$t" -v f="$form" '$2 == t && $3 == f && $4 == "avx512" && $6 > 0 { print $5 / $6 }' "$raw" |
            median | awk '{ printf "%.0f%%", 100 * $1 }')
      fi
      echo "| $t | $form | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }') | $p | $r |"
    done
  done)
echo "medians over $rounds interleaved rounds, $rows x $cols, one token, one thread, $cpu"
echo "$table"
if [ -n "$out" ]; then
  {
    echo "# Decode kernels over stored rows: AVX-512 against $base"
    echo
    echo "$(date -u +%Y-%m-%d), $cpu ($(nproc) CPUs), Spillway $(git -C "$root" rev-parse --short HEAD)."
    echo "\`bench/decode_kernels.sh\`: \`bench_matmul -r $rows -c $cols -k 1 -t 1 -n $reps TYPE [--fine]\`"
    echo "under SPILLWAY_CPU_ISA=$base and =avx512, interleaved per round; GB/s of weight rows"
    echo "read; L3: $(lscpu | awk -F: '/^L3/ { gsub(/^ +/, "", $2); print $2 }')."
    echo "Medians over $rounds rounds."
    echo
    echo "$table"
    echo
    echo "## Per round"
    echo
    echo "| round | type | form | set | GB/s | prefetched read GB/s |"
    echo "|---:|---|---|---|---:|---:|"
    awk '{ printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6 }' "$raw"
  } >"$out"
  echo "wrote $out"
fi
