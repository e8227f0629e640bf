#!/usr/bin/env bash
# make_plan_golden.sh — writes (or, with --check, compares against) the
# `spillway plan --json` snapshots in tests/data/plan/.
#
# These files are a REGRESSION SNAPSHOT of Spillway's own planner: the
# reviewed output of our plan_build() for fixed inputs, not an external
# reference. They catch unintended changes to placements, byte accounting
# and predictions; after a deliberate planner change, regenerate them and
# review the diff. (tests/test_plan.c checks the invariants independently.)
#
# Every run pins what would otherwise depend on the machine: --backend sim
# with an explicit --device-mem, an explicit --host-mem (taken as given on
# sim), -t 4 (scratch size), and --rates defaults (no doctor cache).
#
# usage: make_plan_golden.sh [--check] catalog|model|all SPILLWAY [OUT_DIR]
#   catalog  gemma2-27b, gemma3-27b, gemma4-e2b and gemma4-26b-a4b by name
#            (no file needed)
#   model    the default model file (needs `spillway fetch`); label "model"
#   OUT_DIR  default: tests/data/plan next to this script's repository
# Exit: 0 ok, 1 mismatch or failure, 77 skipped (default model absent).
set -u
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
which="${1:?usage: make_plan_golden.sh [--check] catalog|model|all SPILLWAY [OUT_DIR]}"
bin="${2:?need the spillway binary}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
out="${3:-$here/tests/data/plan}"
common=(--backend sim -t 4 --rates defaults --json)

# name | arguments
catalog_cases=(
  "gemma2-27b-12g|-m gemma2-27b --device-mem 12G --host-mem 32G -c 8192"
  "gemma2-27b-4g|-m gemma2-27b --device-mem 4G --host-mem 32G -c 8192 --sim-link-bw 25GB/s"
  "gemma3-27b-16g|-m gemma3-27b --device-mem 16G --host-mem 32G -c 32768 --kv-type f16"
  "gemma3-27b-6g|-m gemma3-27b --device-mem 6G --host-mem 24G -c 32768 --kv-type f16 --sim-link-bw 25GB/s"
  "gemma4-e2b-2g|-m gemma4-e2b --device-mem 2G --host-mem 8G -c 8192"
  "gemma4-26b-a4b-8g|-m gemma4-26b-a4b --device-mem 8G --host-mem 32G -c 8192"
)
model_cases=(
  "gemma3-270m-512m|--device-mem 512M --host-mem 8G"
  "gemma3-270m-160m|--device-mem 160M --host-mem 8G"
  "gemma3-270m-24m|--device-mem 24M --host-mem 8G --sim-link-bw 25GB/s"
)

if [ "$which" = model ] || [ "$which" = all ]; then
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/spillway/gemma-3-270m-q4_k_m.gguf"
  if [ ! -f "$cache" ]; then
    echo "default model not found at $cache (run spillway fetch): skipped"
    [ "$which" = model ] && exit 77
    model_cases=()
  fi
fi
cases=()
case "$which" in
  catalog) cases=("${catalog_cases[@]}") ;;
  model) cases=("${model_cases[@]}") ;;
  all) cases=("${catalog_cases[@]}" "${model_cases[@]}") ;;
  *) echo "unknown set '$which' (catalog, model or all)" >&2; exit 1 ;;
esac

status=0
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
mkdir -p "$out"
for c in "${cases[@]}"; do
  name="${c%%|*}"
  read -r -a args <<< "${c#*|}"
  if ! "$bin" plan "${args[@]}" "${common[@]}" > "$tmp"; then
    echo "FAIL $name: spillway plan ${args[*]} exited non-zero" >&2
    status=1
    continue
  fi
  if [ $check = 1 ]; then
    if cmp -s "$tmp" "$out/$name.json"; then
      echo "ok   $name"
    else
      echo "FAIL $name: output differs from $out/$name.json" >&2
      diff <(tr ',' '\n' < "$out/$name.json") <(tr ',' '\n' < "$tmp") | head -20 >&2
      status=1
    fi
  else
    cat "$tmp" > "$out/$name.json"
    echo "wrote $out/$name.json"
  fi
done
exit $status
