#!/usr/bin/env bash
# plan_run_test.sh — `spillway plan` and `spillway run` with the same flags
# print and execute the same plan: run --plan-json writes the plan its
# engine executes, compared byte for byte with plan --json (splits over
# several devices too, whose text must be the cpu backend's). Default model;
# --host-mem is given so MemAvailable moving between the two runs cannot
# change the host budget.
set -u
bin="${1:?usage: plan_run_test.sh SPILLWAY}"
fail=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cases=(
  "--host-mem 2G -t 2"
  "--backend cpu --host-mem 2G -t 2 --kv-type f16 -c 1024"
  "--backend sim --device-mem 40M --host-mem 4G -t 2 -c 512"
  "--backend sim --device-mem 64M --sim-link-bw 2G --place all=streamed -np 8 -c 128 --host-mem 4G -t 2"
  "--backend sim --device-mem 200M -ngl 6 --host-mem 4G -t 2 -b 32"
  "--backend sim --device-mem 24M --host-mem 4G -t 2 --kv-type bf16 -np 2"
  "--backend sim --device-mem 60M,60M,60M --host-mem 4G -t 2 -c 256"
  "--backend sim --device-mem 20M,200M --host-mem 4G -t 2 -c 256 -np 2"
)
for c in "${cases[@]}"; do
  # shellcheck disable=SC2086
  "$bin" plan $c --json > "$tmp/plan.json" 2> "$tmp/plan.err"; rc1=$?
  # shellcheck disable=SC2086
  "$bin" run $c -p "Hello" -n 1 --temp 0 --plan-json "$tmp/run.json" > /dev/null 2> "$tmp/run.err"; rc2=$?
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
    echo "FAIL: $c: plan exit $rc1, run exit $rc2"; cat "$tmp/plan.err" "$tmp/run.err"; fail=1; continue
  fi
  if cmp -s "$tmp/plan.json" "$tmp/run.json"; then
    echo "ok   same plan ($(wc -c < "$tmp/plan.json") bytes): $c"
  else
    echo "FAIL: plan and run differ: $c"; diff <(tr ',' '\n' < "$tmp/plan.json") <(tr ',' '\n' < "$tmp/run.json") | head -20; fail=1
  fi
done
# A split over three simulated devices writes what the cpu backend writes.
args=(-p "The three laws of thermodynamics are" -n 12 --temp 0 -t 2 -c 256 --host-mem 4G)
"$bin" run --backend cpu "${args[@]}" > "$tmp/cpu.txt" 2> "$tmp/cpu.err"
"$bin" run --backend sim --device-mem 60M,60M,60M "${args[@]}" > "$tmp/split.txt" 2> "$tmp/split.err"
"$bin" run --backend sim --device-mem 60M,60M,60M --report "${args[@]}" -n 1 > "$tmp/report.txt" 2>&1
if cmp -s "$tmp/cpu.txt" "$tmp/split.txt" && grep -q "device 2 (layers" "$tmp/report.txt"; then
  echo "ok   a split over 3 sim devices writes the cpu backend's text"
else
  echo "FAIL: split run differs from cpu"; diff "$tmp/cpu.txt" "$tmp/split.txt" | head; cat "$tmp/split.err"; fail=1
fi
# n-gram drafts verified over a split: greedy text unchanged
"$bin" run --backend sim --device-mem 60M,60M --draft-ngram --draft-max 4 "${args[@]}" \
  > "$tmp/split_ngram.txt" 2> "$tmp/split_ngram.err"
if cmp -s "$tmp/cpu.txt" "$tmp/split_ngram.txt" &&
   grep -q "speculative decoding: n-gram drafts" "$tmp/split_ngram.err"; then
  echo "ok   n-gram drafts over a split of 2 sim devices write the cpu backend's text"
else
  echo "FAIL: n-gram drafts over a split"; diff "$tmp/cpu.txt" "$tmp/split_ngram.txt" | head
  cat "$tmp/split_ngram.err"; fail=1
fi
# a draft model (the model itself: every greedy draft kept) on the split's
# first device, its share off that device's budget: greedy text unchanged
model="${XDG_CACHE_HOME:-$HOME/.cache}/spillway/gemma-3-270m-q4_k_m.gguf"
if [ -f "$model" ]; then
  "$bin" run --backend sim --device-mem 400M,100M --draft-model "$model" --draft-max 4 \
    --report "${args[@]}" > "$tmp/split_dm.txt" 2> "$tmp/split_dm.err"
  if cmp -s "$tmp/cpu.txt" "$tmp/split_dm.txt" &&
     grep -q "draft-model drafts" "$tmp/split_dm.err" &&
     grep -q "speculative: .* accepted (100.0%)" "$tmp/split_dm.err"; then
    echo "ok   a draft model on a split's first device writes the cpu backend's text"
  else
    echo "FAIL: a draft model over a split"; diff "$tmp/cpu.txt" "$tmp/split_dm.txt" | head
    tail -n 5 "$tmp/split_dm.err"; fail=1
  fi
else
  echo "FAIL: the default model is not at $model (spillway fetch)"; fail=1
fi
# verify over a split: the plan's logits against the all-host plan's
if "$bin" verify --backend sim --device-mem 60M,60M -t 2 --host-mem 4G > "$tmp/verify.txt" 2>&1 &&
   grep -q "outputs agree" "$tmp/verify.txt"; then
  echo "ok   verify over a split of 2 sim devices: outputs agree"
else
  echo "FAIL: verify over a split"; tail -n 5 "$tmp/verify.txt"; fail=1
fi
exit $fail
