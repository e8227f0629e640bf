#!/usr/bin/env bash
# test_synth.sh — `spillway synth` on the command line: bad flags exit 2
# with one error line, file-system problems exit 3 and leave nothing, a
# small synthetic model is described by `info` and generates with `run`,
# and a synthetic Gemma 4 assistant drafts for its target without changing
# its greedy output.
#   bash tests/test_synth.sh build/spillway
set -u
S=${1:?usage: test_synth.sh path/to/spillway}
base=/tmp
[ -w /dev/shm ] && base=/dev/shm
dir=$(mktemp -d "$base/sw_synth_cli.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fails=0 checks=0

# expect STATUS "what" command...: exit status and, on failure, one line.
expect() {
    local want=$1 what=$2
    shift 2
    checks=$((checks + 1))
    "$@" >"$dir/out" 2>"$dir/err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL: $what: exit $rc, want $want"; cat "$dir/err"; fails=$((fails + 1))
    elif [ "$want" -ne 0 ] && [ "$(grep -c 'spillway: error:' "$dir/err")" -ne 1 ]; then
        echo "FAIL: $what: want one error line, got:"; cat "$dir/err"; fails=$((fails + 1))
    fi
}

# expect_err "what" PATTERN: the last command's stderr matches.
expect_err() {
    checks=$((checks + 1))
    if ! grep -q -- "$2" "$dir/err"; then
        echo "FAIL: $1: stderr lacks '$2':"; cat "$dir/err"; fails=$((fails + 1))
    fi
}

small=(--layers 1 --vocab 512)
expect 0 "help" "$S" synth --help
expect 2 "no flags" "$S" synth
expect 2 "no -o" "$S" synth --shape gemma3-270m
expect 2 "unknown shape" "$S" synth --shape gemma4-1b -o "$dir/x.gguf"
expect_err "unknown shape lists the catalog" "gemma2-9b"
expect 2 "a Gemma 4 HF folder ending on a sliding layer" "$S" synth --shape gemma4-e2b \
    --format hf --layers 6 -o "$dir/x"
expect_err "... says which counts work" "choose a multiple of 5"
expect 2 "unknown type" "$S" synth --shape gemma3-270m --type q5_k -o "$dir/x.gguf"
expect 2 "hf quantized" "$S" synth --shape gemma3-270m --type q4_k --format hf -o "$dir/x"
expect_err "hf quantized says why" "float weights"
expect 2 "unknown format" "$S" synth --shape gemma3-270m --format onnx -o "$dir/x"
expect 2 "layers 0" "$S" synth --shape gemma3-270m --layers 0 -o "$dir/x.gguf"
expect 2 "layers too many" "$S" synth --shape gemma3-270m --layers 19 -o "$dir/x.gguf"
expect_err "layers range" "1..18"
expect 2 "layers not a number" "$S" synth --shape gemma3-270m --layers two -o "$dir/x.gguf"
expect 2 "vocab too small" "$S" synth --shape gemma3-270m --vocab 12 -o "$dir/x.gguf"
expect 2 "bad seed" "$S" synth --shape gemma3-270m --seed -1 -o "$dir/x.gguf"
expect 2 "bad chunk" "$S" synth --shape gemma3-270m --chunk lots -o "$dir/x.gguf"
expect 2 "unknown option" "$S" synth --shape gemma3-270m --colour red -o "$dir/x.gguf"
expect 2 "stray argument" "$S" synth --shape gemma3-270m -o "$dir/x.gguf" extra
expect 3 "missing folder" "$S" synth --shape gemma3-270m "${small[@]}" -o "$dir/no/x.gguf"
expect_err "missing folder named" "does not exist"

m="$dir/m.gguf"
expect 0 "write gguf" "$S" synth --shape gemma2-2b --type q8_0 "${small[@]}" -o "$m"
checks=$((checks + 1))
grep -q "gemma2-2b q8_0 gguf, 1/26 layers, 512 tokens" "$dir/out" ||
    { echo "FAIL: summary line:"; cat "$dir/out"; fails=$((fails + 1)); }
expect 3 "exists" "$S" synth --shape gemma2-2b "${small[@]}" -o "$m"
expect_err "exists says --force" "--force"
expect 0 "force" "$S" synth --shape gemma3-270m --type q4_k "${small[@]}" --force -q -o "$m"
expect_err "q4_k fallback is reported" "Q8_0"
expect 0 "info" "$S" info -m "$m"
checks=$((checks + 1))
grep -q "synthetic gemma3-270m" "$dir/out" || { echo "FAIL: info name"; fails=$((fails + 1)); }
expect 0 "run" "$S" run -m "$m" -p hello -n 4 --temp 0 -c 64 -t 2
expect 0 "write gemma4" "$S" synth --shape gemma4-e2b --type q8_0 --layers 2 --vocab 512 \
    -q -o "$dir/g4.gguf"
expect 0 "run gemma4" "$S" run -m "$dir/g4.gguf" -p hello -n 4 --temp 0 -c 64 -t 2
rm -f "$dir/g4.gguf"
expect 0 "write hf" "$S" synth --shape gemma-2b --format hf --type f16 "${small[@]}" -o "$dir/hf"
checks=$((checks + 1))
for f in config.json model.safetensors tokenizer.json tokenizer_config.json; do
    [ -f "$dir/hf/$f" ] || { echo "FAIL: hf/$f missing"; fails=$((fails + 1)); }
done
rm -rf "$dir/hf"

# Gemma 4 assistants: Hugging Face folders of 4 layers, no tokenizer. The
# E2B one drafts for a 5-layer E2B target (ending on its full layer, as an
# HF folder must): greedy output is the target's, exactly, on the CPU and
# on the simulated device. A 31B target's smallest HF folder (6 layers) is
# ~4 GB, too slow here, so the mismatched pair is the 31B assistant beside
# the E2B target.
expect 2 "assistant as gguf" "$S" synth --shape gemma4-e2b-assistant --vocab 512 -o "$dir/a.gguf"
expect_err "... says --format hf" "--format hf"
expect 2 "assistant with --layers" "$S" synth --shape gemma4-e2b-assistant --format hf \
    --layers 2 -o "$dir/a"
expect 2 "unknown assistant" "$S" synth --shape gemma3-1b-assistant --format hf -o "$dir/a"
expect_err "... lists the assistants" "gemma4-31b-assistant"
expect 0 "write e2b assistant" "$S" synth --shape gemma4-e2b-assistant --format hf --vocab 512 \
    -o "$dir/a2"
checks=$((checks + 1))
grep -q "gemma4-e2b-assistant bf16 hf, 4/4 layers, 512 tokens" "$dir/out" &&
    [ -f "$dir/a2/config.json" ] && [ -f "$dir/a2/model.safetensors" ] &&
    [ ! -e "$dir/a2/tokenizer.json" ] ||
    { echo "FAIL: assistant folder:"; cat "$dir/out"; ls "$dir/a2"; fails=$((fails + 1)); }
expect 0 "write 31b assistant" "$S" synth --shape gemma4-31b-assistant --format hf --vocab 512 \
    -q -o "$dir/a31"
expect 0 "write e2b target" "$S" synth --shape gemma4-e2b --format hf --vocab 512 --layers 5 \
    -q -o "$dir/t2"
gen=(-p Hello -n 8 --temp 0 -t 2 -c 256)
expect 0 "target alone" "$S" run -m "$dir/t2" "${gen[@]}" --backend cpu
cp "$dir/out" "$dir/alone"
for be in "--backend cpu" "--backend sim --device-mem 2G"; do
    # shellcheck disable=SC2086 # $be is two or four words
    expect 0 "target + assistant ($be)" "$S" run -m "$dir/t2" -md "$dir/a2" "${gen[@]}" $be
    checks=$((checks + 1))
    if ! cmp -s "$dir/alone" "$dir/out" || ! grep -qi "draft" "$dir/err"; then
        echo "FAIL: $be: with the assistant, output differs or nothing was drafted:"
        cat "$dir/alone" "$dir/out" "$dir/err"; fails=$((fails + 1))
    fi
done
expect 2 "mismatched pair" "$S" run -m "$dir/t2" -md "$dir/a31" "${gen[@]}" --backend cpu
expect_err "... not its assistant" "not its assistant"
rm -rf "$dir/a2" "$dir/a31" "$dir/t2"

checks=$((checks + 1))
left=$(find "$dir" -name '*.tmp.*' | wc -l)
[ "$left" -eq 0 ] || { echo "FAIL: $left temporary files left"; fails=$((fails + 1)); }

echo "synth_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
