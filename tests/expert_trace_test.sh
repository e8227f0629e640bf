#!/usr/bin/env bash
# expert_trace_test.sh SPILLWAY DATA_DIR — issue 38's routing trace and its
# replay: `run --expert-trace` on the tiny Gemma 4 MoE writes one line per
# (forward, layer, token) with k distinct experts in range, the same on
# cpu and on the simulated device (resident and streamed); `bench
# --expert-trace` replays it (as many slots as experts: only first
# touches miss; hit rates grow with the slots); bad input is refused.
set -uo pipefail
. "$(dirname "$0")/check.sh"
bin=${1:?usage: expert_trace_test.sh SPILLWAY DATA_DIR}
data=${2:?usage: expert_trace_test.sh SPILLWAY DATA_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
m=$data/tiny/gemma4-moe.gguf
run=(run -m "$m" -p "the people of the water and the hills" -n 12 --temp 0 -t 2 -c 256)
"$bin" "${run[@]}" --expert-trace "$tmp/cpu.jsonl" >"$tmp/cpu.txt" 2>"$tmp/err"
check "cpu run with a trace exits 0 ($(tail -1 "$tmp/err"))" [ $? -eq 0 ]
"$bin" "${run[@]}" >"$tmp/plain.txt" 2>/dev/null
check "tracing changes no output" cmp -s "$tmp/cpu.txt" "$tmp/plain.txt"
for place in resident streamed; do
    "$bin" "${run[@]}" --backend sim --device-mem 64M --place all=$place \
        --expert-trace "$tmp/$place.jsonl" >/dev/null 2>&1
    check "sim $place: the same trace as cpu" cmp -s "$tmp/cpu.jsonl" "$tmp/$place.jsonl"
done
python3 - "$tmp/cpu.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
layers = sorted({d["layer"] for d in lines})
assert layers == list(range(5)), layers
per = {}
for d in lines:
    e = d["experts"]
    assert len(e) == 2 and len(set(e)) == 2 and all(0 <= x < 4 for x in e), d
    per.setdefault(d["step"], set()).add((d["layer"], d["seq"], d["pos"]))
# one line per layer and token of each forward: the prompt's, then 11 decodes of one
sizes = sorted(len(v) // 5 for v in per.values())
assert sizes[:-1] == [1] * 11 and sizes[-1] > 1, sizes
assert all(len(v) % 5 == 0 for v in per.values())
print("trace ok: %d lines, %d forwards" % (len(lines), len(per)))
PY
check "the trace has a line per forward, layer and token" [ $? -eq 0 ]
"$bin" bench --expert-trace "$tmp/cpu.jsonl" --cache-slots 1,2,4 --json >"$tmp/r.json" 2>"$tmp/err"
check "replay exits 0 ($(tail -1 "$tmp/err"))" [ $? -eq 0 ]
python3 - "$tmp/r.json" "$tmp/cpu.jsonl" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = {(x["slots"], x["policy"]): x for x in r["caches"]}
assert r["experts"] == 4 and r["layers"] == 5 and r["k"] == 2, r
for p in ("lru", "lfu-decay"):
    assert c[(1, p)]["hit_rate"] <= c[(2, p)]["hit_rate"] <= c[(4, p)]["hit_rate"], p
# four slots of four experts: only each layer's first touch of an expert misses
steps = r["layer_steps"]
first = {(d["layer"], e) for d in map(json.loads, open(sys.argv[2])) for e in d["experts"]}
assert round(c[(4, "lru")]["misses_per_step"] * steps) == len(first), (c[(4, "lru")], len(first))
assert c[(4, "static (hindsight)")]["hit_rate"] == 1.0
print("replay ok")
PY
check "the replay's hit rates" [ $? -eq 0 ]
"$bin" bench --expert-trace "$tmp/cpu.jsonl" >/dev/null 2>"$tmp/err"
check "replay without --cache-slots: exit 2 ($?)" [ $? -eq 2 ]
printf '{"step":0,"layer":0}\n' >"$tmp/bad.jsonl"
"$bin" bench --expert-trace "$tmp/bad.jsonl" --cache-slots 2 >/dev/null 2>"$tmp/err"
rc=$?
check "a line without experts: exit 2 ($rc)" [ $rc -eq 2 ]
check "the message names the line" contains "$(cat "$tmp/err")" "bad.jsonl:1"
"$bin" run -m "$data/tiny/gemma3.gguf" -p hi -n 2 -t 2 -c 256 --expert-trace "$tmp/x.jsonl" \
    >/dev/null 2>"$tmp/err"
rc=$?
check "a model without experts: exit 2 ($rc)" [ $rc -eq 2 ]
check "the message says so" contains "$(cat "$tmp/err")" "no experts"
check_summary expert_trace_test
