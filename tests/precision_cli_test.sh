#!/usr/bin/env bash
# The precision flags end to end on a tiny model (no download needed):
# --kv-type and --weights on run/chat/verify/plan, their usage errors
# (exit 2), the plan's conversion lines, and every --kv-type/--weights
# change the planner suggests (on failure or as "better") is a command
# `spillway run` accepts and that fits the same budget.
# Gemma 4's experts (3-D tensors) converted whole, streamed or resident,
# give the cpu's text (MOE_MODEL, the tiny MoE); pinning converted experts
# to the host is refused by name (not supported yet).
# usage: precision_cli_test.sh SPILLWAY_BINARY TINY_MODEL.gguf [MOE_MODEL.gguf]
set -u
exe=$1
model=$2
moe=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() { # check NAME STATUS
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
expect_usage() { # expect_usage SUBCOMMAND FLAG VALUE
    "$exe" "$1" -m "$model" -p x "$2" "$3" >/dev/null 2>"$tmp/err"; rc=$?
    [ $rc -eq 2 ] && grep -q -- "$2 expects one of" "$tmp/err"
    check "$1 $2 $3 is a usage error naming the choices ($rc: $(head -1 "$tmp/err"))" $?
}

for sub in run chat verify; do
    expect_usage $sub --kv-type f8
    expect_usage $sub --weights q4_k_m
done

gen() { "$exe" run -m "$model" -t 2 -c 256 -p "hello there" -n 4 --temp 0 "$@"; }
gen --kv-type f16 --weights q8_0 >/dev/null 2>"$tmp/e1"; rc=$?
check "run --kv-type f16 --weights q8_0 ($rc: $(tail -1 "$tmp/e1"))" $rc
gen --kv-type bf16 --weights bf16 --backend sim --device-mem 600K --report >/dev/null 2>"$tmp/e2"
rc=$?
check "run on the sim with bf16 KV and weights ($rc: $(tail -1 "$tmp/e2"))" $rc
grep -q "converted weights" "$tmp/e2"; check "--report shows the converted weights" $?
# --cpu-dots bf16 on bf16 weights: the same text on every kernel set (the
# portable emulation and, where the CPU has it, vdpbf16ps) and on the sim.
gen --weights bf16 --cpu-dots bf16 >"$tmp/b1" 2>"$tmp/e3"; rc=$?
check "run --weights bf16 --cpu-dots bf16 ($rc: $(tail -1 "$tmp/e3"))" $rc
SPILLWAY_CPU_ISA=ref gen --weights bf16 --cpu-dots bf16 >"$tmp/b2" 2>/dev/null
cmp -s "$tmp/b1" "$tmp/b2"; check "--cpu-dots bf16: the portable kernels give the same text" $?
gen --weights bf16 --cpu-dots bf16 --backend sim --device-mem 600K >"$tmp/b3" 2>/dev/null
cmp -s "$tmp/b1" "$tmp/b3"; check "--cpu-dots bf16: the sim gives the same text" $?
"$exe" plan -m "$model" -t 2 --cpu-dots bf16 --json 2>/dev/null | grep -q '"cpu_dots":"bf16"'
check "plan --json names --cpu-dots bf16" $?
"$exe" verify -m "$model" -t 2 --backend sim --device-mem 400K --kv-type f16 --weights q8_0 \
    >"$tmp/v" 2>&1
check "verify with f16 KV and q8_0 weights agrees ($(tail -1 "$tmp/v"))" $?

"$exe" plan -m "$model" -t 2 --weights q8_0 --backend sim --device-mem 400K >"$tmp/p" 2>&1
check "plan --weights q8_0 on a file ($(head -1 "$tmp/p"))" $?
grep -q "F32 -> Q8_0" "$tmp/p" && grep -q "converted at load to Q8_0: .* (saves " "$tmp/p"
check "the plan names the conversion and the bytes saved" $?
"$exe" plan -m "$model" -t 2 --weights q8_0 --json >"$tmp/pj" 2>&1 &&
    grep -q '"convert":{"type":"Q8_0","stored_bytes":[0-9]*,"saved_bytes":[1-9]' "$tmp/pj"
check "plan --json carries the conversion" $?

# Every --kv-type/--weights change the planner prints, over budgets from
# "nothing fits" to "fits with room", must run at that budget with the
# flags it was suggested for (the default f16 KV, and an f32 KV, where the
# planner suggests f16).
n_tried=0
for base in "" "--kv-type f32"; do
    for budget in 200K 215K 250K 302K 320K 400K; do
        # shellcheck disable=SC2086
        "$exe" plan -m "$model" -t 2 --backend sim --device-mem $budget $base >"$tmp/plan" 2>&1
        sed -n -e 's/^  \(--kv-type [a-z0-9_]*\) (.*/\1/p' -e 's/^  \(--weights [a-z0-9_]*\) (.*/\1/p' \
            -e 's/^better *\(--kv-type [a-z0-9_]*\) frees.*/\1/p' \
            -e 's/^better *\(--weights [a-z0-9_]*\) frees.*/\1/p' "$tmp/plan" >"$tmp/changes"
        while read -r change; do
            # shellcheck disable=SC2086
            gen --backend sim --device-mem $budget $base $change >/dev/null 2>"$tmp/e3"; rc=$?
            check "suggested '$change' at $budget (with '$base') runs ($rc: $(tail -1 "$tmp/e3"))" $rc
            n_tried=$((n_tried + 1))
            echo "$change" >>"$tmp/all_changes"
        done <"$tmp/changes"
    done
done
grep -q -- "--kv-type" "$tmp/all_changes" 2>/dev/null && grep -q -- "--weights" "$tmp/all_changes"
check "suggestions of both kinds were tried ($n_tried)" $?

if [ -n "$moe" ]; then
    moe_gen() { "$exe" run -m "$moe" -t 2 -c 128 -p "hello there" -n 6 --temp 0 "$@"; }
    for w in bf16 q8_0; do
        moe_gen --weights $w >"$tmp/m_cpu" 2>"$tmp/em"; rc=$?
        check "MoE --weights $w on cpu ($rc: $(tail -1 "$tmp/em"))" $rc
        for place in "all=resident" "all=streamed" "0=host,1-=streamed"; do
            moe_gen --weights $w --backend sim --device-mem 64M --place "$place" >"$tmp/m_sim" \
                2>"$tmp/em"; rc=$?
            check "MoE --weights $w on the sim, $place ($rc: $(tail -1 "$tmp/em"))" $rc
            cmp -s "$tmp/m_cpu" "$tmp/m_sim"
            check "MoE --weights $w, $place: the cpu's text" $?
        done
        moe_gen --weights $w --backend sim --device-mem 64M --place "experts:all=host" \
            >/dev/null 2>"$tmp/em"; rc=$?
        [ $rc -eq 2 ] && grep -q "experts on the host do not take yet" "$tmp/em"
        check "MoE --weights $w with experts pinned to the host: refused ($rc)" $?
    done
fi

echo "precision_cli_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
