#!/usr/bin/env bash
# plan_cli_test.sh — `spillway plan` exit statuses and messages: fits (0),
# device short (7), host short (8), bad flags and names (2), and splits over
# several devices (--device-mem A,B). Catalog models only, so no model file
# is needed.
set -u
bin="${1:?usage: plan_cli_test.sh SPILLWAY}"
fail=0
expect() {   # expect STATUS PATTERN ARGS...
  local want="$1" pat="$2"; shift 2
  local out rc
  out="$("$bin" plan "$@" 2>&1)"; rc=$?
  if [ "$rc" != "$want" ] || ! grep -q -- "$pat" <<< "$out"; then
    echo "FAIL: spillway plan $* -> $rc (want $want, pattern '$pat')"; echo "$out" | head -5
    fail=1
  else
    echo "ok   $want  $*"
  fi
}
sim=(--backend sim --host-mem 16G -t 4 --rates defaults)
expect 0 "layers" -m gemma3-1b --device-mem 2G "${sim[@]}"
expect 0 '"decode_tokens_per_s"' -m gemma-3-1b --device-mem 300M "${sim[@]}" --json
expect 0 "streamed" -m gemma3-12b --device-mem 4G "${sim[@]}" --place 20-29=streamed
expect 7 "device memory (sim) is short by" -m gemma3-27b --weights bf16 --device-mem 100M "${sim[@]}"
expect 7 "changes that fit" -m gemma3-27b --weights bf16 --device-mem 100M "${sim[@]}"
expect 8 "host memory is short by" -m gemma3-27b --backend cpu --host-mem 64M -c 32768 -t 4
expect 2 "neither a model file nor a catalog model" -m no-such-model --device-mem 1G "${sim[@]}"
expect 2 "needs a capacity" -m gemma3-1b --backend sim --rates defaults
expect 2 "unknown unit" -m gemma3-1b --device-mem 12Q "${sim[@]}"
expect 2 "unknown placement" -m gemma3-1b --device-mem 1G "${sim[@]}" --place 0-3=gpu
expect 2 "cannot hold" -m gemma3-1b --device-mem 200M "${sim[@]}" --place all=resident
expect 2 "unknown weight type" -m gemma3-1b --weights q3_k --device-mem 1G "${sim[@]}"
expect 2 "exceeds" -m gemma2-2b --device-mem 1G "${sim[@]}" -c 100000
expect 2 "unknown option" -m gemma3-1b --frobnicate 1
# several --device-mem budgets: a split over devices (plan/split.h)
expect 0 "device 1 (sim:1): layers 31-61 and the LM head" -m gemma3-27b --device-mem 16G,16G "${sim[@]}"
expect 0 '"first_layer":31' -m gemma3-27b --device-mem 16G,16G "${sim[@]}" --json
expect 0 "only a split runs it" -m gemma3-27b --device-mem 7G,7G --backend sim --host-mem 3G -c 131072 --rates defaults
expect 7 "device 0: .* short for layers" -m gemma3-27b --device-mem 100M,100M "${sim[@]}"
expect 2 "backend with devices" -m gemma3-27b --device-mem 16G,16G --backend cpu
expect 0 "device 0 (sim:0): layers 0-40" -m gemma3-27b --device-mem 16G,16G "${sim[@]}" --place 0-40=dev0
expect 0 "device 1 (sim:3): layers" -m gemma3-27b --device-mem 16G,16G --devices 2,3 "${sim[@]}"
expect 2 "a device of a split" -m gemma3-27b --device-mem 16G "${sim[@]}" --place 3=dev1
expect 2 "one contiguous range, in order" -m gemma3-27b --device-mem 16G,16G "${sim[@]}" --place 0-9=dev1,10-=dev0
expect 2 "one each" -m gemma3-27b --device-mem 16G,16G --devices 1 "${sim[@]}"
expect 2 "give 2 to 8 sizes" -m gemma3-27b --device-mem 16G,,16G "${sim[@]}"
expect 2 "device 1: size .12Q.: unknown unit" -m gemma3-27b --device-mem 16G,12Q "${sim[@]}"
if out="$("$bin" run --backend cpu --device-mem 1G,2G -p Hi -n 1 2>&1)" || ! grep -q "backend with devices" <<< "$out"; then
  echo "FAIL: run on the cpu backend with several --device-mem budgets: $out"; fail=1
else
  echo "ok   2  run --backend cpu --device-mem 1G,2G"
fi
# replicas of a split take their devices in order: --devices is refused
if out="$(timeout 60 "$bin" serve --backend sim --device-mem 1G,1G --devices 0,1 --replicas 2 2>&1)" ||
   ! grep -q "drop --devices" <<< "$out"; then
  echo "FAIL: serve --replicas 2 with a split and --devices: $out"; fail=1
else
  echo "ok   2  serve --replicas 2 --device-mem 1G,1G --devices 0,1"
fi
expect 0 "usage: spillway plan" --help
exit $fail
