#!/usr/bin/env bash
# pjrt_report_test.sh SPILLWAY — a streamed plan on the PJRT backend (CPU
# plugin) reports what it moved: --report-json has the bytes copied host ->
# device (every streamed layer once per forward), copy time busy and
# stalled (stall <= busy: the rest was hidden behind compute), and a device
# peak (our accounting) within the plan; at least half the layers stream.
set -uo pipefail
. "$(dirname "$0")/check.sh"
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin" plan --backend pjrt --device-mem 480M --place all=streamed,lm_head=resident --json \
    >"$tmp/plan.json" 2>"$tmp/plan.err"
check "plan exits 0 ($(tail -1 "$tmp/plan.err"))" [ $? -eq 0 ]
"$bin" run --backend pjrt --device-mem 480M --place all=streamed,lm_head=resident \
    -p "The three laws of thermodynamics are" -n 8 --temp 0 \
    --report-json "$tmp/report.json" >"$tmp/out.txt" 2>"$tmp/err.txt"
check "run exits 0 ($(tail -1 "$tmp/err.txt"))" [ $? -eq 0 ]
python3 - "$tmp/plan.json" "$tmp/report.json" >"$tmp/facts.txt" 2>&1 <<'PY'
import json, sys
plan, rep = (json.load(open(p)) for p in sys.argv[1:3])
layers = plan.get("layers", [])
streamed = sum(1 for l in layers if l.get("place") == "streamed")
print("layers", len(layers), "streamed", streamed)
print("bytes_to_device", rep["bytes_to_device"])
print("busy", rep["copy_busy_s"], "stall", rep["copy_stall_s"])
print("peak", rep["peak_device_bytes"], "plan", rep["plan_device_bytes"])
ok = (len(layers) > 0 and 2 * streamed >= len(layers) and rep["bytes_to_device"] > 0
      and 0 <= rep["copy_stall_s"] <= rep["copy_busy_s"] + 1e-9 and rep["copy_busy_s"] > 0
      and 0 < rep["peak_device_bytes"] <= rep["plan_device_bytes"])
print("ok" if ok else "BAD")
PY
cat "$tmp/facts.txt"
check "report facts hold" contains "$(cat "$tmp/facts.txt")" $'\nok'
check_summary pjrt_report_test
