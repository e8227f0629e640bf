#!/usr/bin/env bash
# replicas_pjrt_test.sh SPILLWAY MODEL — `batch --replicas 2` on the PJRT
# backend (XLA's CPU plugin, which has several devices): replica i runs on
# the client's device i, or, with --device-mem A,B, is a split over
# devices 2i and 2i + 1; every request's greedy text is what `run` writes
# on one device; more replicas than the client's devices are refused
# naming the replica and its device.
set -uo pipefail
. "$(dirname "$0")/check.sh"
bin=$1
model=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(-m "$model" --backend pjrt --device-mem 256M -n 6 --temp 0 -t 2)
prompts=("one two three" "the river rose" "seven eight" "a b c d")
: >"$tmp/req.jsonl"
for i in "${!prompts[@]}"; do
  "$bin" run "${common[@]}" -p "${prompts[$i]}" >"$tmp/want$i.txt" 2>"$tmp/run.err"
  check "run $i exits 0 ($(tail -1 "$tmp/run.err"))" [ $? -eq 0 ]
  python3 -c 'import json,sys; print(json.dumps({"id": "r" + sys.argv[1], "prompt": sys.argv[2]}))' \
    "$i" "${prompts[$i]}" >>"$tmp/req.jsonl"
done
"$bin" batch "${common[@]}" --replicas 2 -f "$tmp/req.jsonl" -o "$tmp/out.jsonl" \
  2>"$tmp/batch.err"
check "batch --replicas 2 exits 0 ($(tail -1 "$tmp/batch.err"))" [ $? -eq 0 ]
check "both replicas start" grep -q "replica 2 of 2" "$tmp/batch.err"
same_texts() { # same_texts OUT.jsonl: every request's text is run's
  python3 - "$tmp" "${#prompts[@]}" "$1" >"$tmp/cmp.txt" 2>&1 <<'PY'
import json, sys
tmp, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
got = {r["id"]: r["text"] for r in map(json.loads, open(out))}
for i in range(n):
    want = open("%s/want%d.txt" % (tmp, i), encoding="utf-8", errors="replace").read()
    want = want[:-1] if want.endswith("\n") else want
    print("r%d" % i, "same" if got.get("r%d" % i) == want else "DIFFERS %r %r" % (got.get("r%d" % i), want))
PY
  [ "$(grep -c ' same$' "$tmp/cmp.txt")" -eq "${#prompts[@]}" ]
}
check "every text equals run's on one device ($(same_texts "$tmp/out.jsonl"; tr '\n' ' ' <"$tmp/cmp.txt"))" \
  same_texts "$tmp/out.jsonl"
# two replicas, each a split over two of the client's devices (0-1, 2-3)
"$bin" batch "${common[@]/256M/256M,256M}" --replicas 2 -f "$tmp/req.jsonl" \
  -o "$tmp/out_split.jsonl" 2>"$tmp/batch_split.err"
check "batch --replicas 2 of a split exits 0 ($(tail -1 "$tmp/batch_split.err"))" [ $? -eq 0 ]
check "every text of the split replicas equals run's ($(same_texts "$tmp/out_split.jsonl"; tr '\n' ' ' <"$tmp/cmp.txt"))" \
  same_texts "$tmp/out_split.jsonl"
"$bin" batch "${common[@]}" --replicas 8 -f "$tmp/req.jsonl" -o "$tmp/out8.jsonl" \
  2>"$tmp/batch8.err"
check "8 replicas on the plugin's devices are refused" [ $? -ne 0 ]
check "... naming the replica's device ($(tail -1 "$tmp/batch8.err"))" \
  grep -q "replica [0-9] (device [0-9]): no device" "$tmp/batch8.err"
check_summary replicas_pjrt
