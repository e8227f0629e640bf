#!/usr/bin/env bash
# plan_cli_test.sh — `spillway plan` exit statuses and messages: fits (0),
# device short (7), host short (8), bad flags and names (2). Catalog models
# only, so no model file is needed.
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
expect 0 "usage: spillway plan" --help
exit $fail
