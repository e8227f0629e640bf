#!/usr/bin/env bash
# End-to-end checks of `spillway run` and `spillway chat` on the default
# model: greedy is deterministic, the same seed gives the same sample, a
# prompt longer than the context is a clear error (or --truncate), chat
# keeps a multi-turn conversation and says when the model is a base model,
# bad flags are usage errors.
# usage: cli_run_test.sh SPILLWAY_BINARY
set -u
exe=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() { # check NAME CONDITION-EXIT-STATUS
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}

run() { "$exe" run -t 2 -c 256 "$@"; }

run -p "The capital of France is" -n 12 --temp 0 >"$tmp/g1" 2>"$tmp/e1"; rc=$?
check "greedy run exits 0 ($rc: $(tail -1 "$tmp/e1"))" $rc
run -p "The capital of France is" -n 12 --temp 0 >"$tmp/g2" 2>/dev/null
cmp -s "$tmp/g1" "$tmp/g2"; check "greedy is deterministic" $?
[ "$(wc -c <"$tmp/g1")" -gt 10 ]; check "greedy produced text" $?
grep -q "tok/s" "$tmp/e1"; check "speed is reported on stderr" $?

run -p "Once upon a time" -n 16 --temp 0.9 --seed 42 >"$tmp/s1" 2>/dev/null
run -p "Once upon a time" -n 16 --temp 0.9 --seed 42 >"$tmp/s2" 2>/dev/null
cmp -s "$tmp/s1" "$tmp/s2"; check "same seed, same sample" $?
for seed in 1 2 3 4; do run -p "Once upon a time" -n 16 --temp 1.5 --seed $seed 2>/dev/null; echo; done >"$tmp/seeds"
[ "$(sort -u "$tmp/seeds" | grep -c .)" -gt 1 ]; check "different seeds differ" $?

python3 -c "print('word ' * 400)" >"$tmp/long.txt"
run -f "$tmp/long.txt" -n 4 >/dev/null 2>"$tmp/e3"; rc=$?
[ $rc -eq 2 ] && grep -q "context" "$tmp/e3"; check "too-long prompt is a usage error naming the context ($rc)" $?
[ "$(wc -l <"$tmp/e3")" -eq 1 ]; check "one line of error" $?
run -f "$tmp/long.txt" -n 4 --truncate --temp 0 >/dev/null 2>"$tmp/e4"; rc=$?
[ $rc -eq 0 ] && grep -q "truncated" "$tmp/e4"; check "--truncate keeps the tail ($rc)" $?

run -p "x" -n abc >/dev/null 2>&1; [ $? -eq 2 ]; check "bad -n is a usage error" $?
run -p "x" --top-p 2 >/dev/null 2>&1; [ $? -eq 2 ]; check "bad --top-p is a usage error" $?
run -f "$tmp/missing" >/dev/null 2>&1; [ $? -eq 3 ]; check "missing prompt file is an I/O error" $?
run -m "$tmp/long.txt" -p x >/dev/null 2>&1; rc=$?; [ $rc -eq 4 ]; check "a non-model file is a format error ($rc)" $?

printf 'What is two plus two?\nAnd three plus three?\n' |
    "$exe" chat -t 2 -c 512 -n 24 --temp 0 --system "Answer briefly." >"$tmp/chat" 2>"$tmp/echat"; rc=$?
check "chat exits 0 ($rc: $(tail -1 "$tmp/echat"))" $rc
[ "$(grep -c . "$tmp/chat")" -ge 2 ]; check "chat answered two turns" $?
! grep -q "start_of_turn\|end_of_turn" "$tmp/chat"; check "control tokens are not printed" $?
# the default model is a base model (no chat template, no -it tune): said once, by name
[ "$(grep -c "does not look instruction-tuned" "$tmp/echat")" -eq 1 ] &&
    grep -q "'Gemma 3 270m'" "$tmp/echat"
check "chat says once that the default model is not instruction-tuned" $?
"$exe" synth --shape gemma3-270m --vocab 512 --layers 1 -o "$tmp/tuned.gguf" -q &&
    echo hi | "$exe" chat -m "$tmp/tuned.gguf" -t 2 -c 64 -n 2 >/dev/null 2>"$tmp/echat2" &&
    ! grep -q "instruction-tuned" "$tmp/echat2"
check "a model with a chat template (synth writes one) gets no such note" $?

echo "cli_run_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
