#!/usr/bin/env bash
# expert_cache_test.sh SPILLWAY DATA_DIR — issue 38's expert cache from the
# command line, on the tiny Gemma 4 MoE: `plan` shows the cache beside the
# fixed part (device row, experts row, JSON); `run --report`,
# `--report-json` and serve's /metrics give its counters (hits + misses = needed, misses =
# copied + host with --expert-copy always; prefetch counted); the text is
# the cpu backend's; bad words are refused with exit 2; pjrt refuses the
# cache by name.
set -uo pipefail
. "$(dirname "$0")/check.sh"
bin=${1:?usage: expert_cache_test.sh SPILLWAY DATA_DIR}
data=${2:?usage: expert_cache_test.sh SPILLWAY DATA_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
m=$data/tiny/gemma4-moe.gguf
sim=(--backend sim --device-mem 64M -ncmoe 5)
out=$("$bin" plan -m "$m" "${sim[@]}" --expert-cache 2 --expert-policy lfu-decay -c 256 2>&1)
check "plan exits 0" [ $? -eq 0 ]
check "the device row has the cache" contains "$out" "| expert cache 2 x 5 layers"
check "the experts row" contains "$out" "cache 2 of 4 slots/layer x 5 layers"
check "the policy" contains "$out" "lfu-decay"
check "the pinned row has the copies' staging" contains "$out" "expert copy staging"
check "copy auto on the sim never copies: no hits predicted" contains "$out" "no miss is ever copied"
out=$("$bin" plan -m "$m" "${sim[@]}" --expert-cache 2 --expert-hit-rate 90% --expert-copy always -c 256 2>&1)
check "--expert-hit-rate is taken" contains "$out" "predictions take 90% of needed experts to be cached (--expert-hit-rate)"
"$bin" plan -m "$m" "${sim[@]}" --expert-cache 2 --expert-hit-rate 1.5 >/dev/null 2>"$tmp/err"
rc=$?
check "a hit rate over 1: exit 2 ($rc)" [ $rc -eq 2 ]
out=$("$bin" plan -m "$m" "${sim[@]}" --expert-cache auto -c 256 --json 2>&1)
check "plan --json has the cache" contains "$out" '"expert_cache":{"slots":4,"layers":5'
check "plan --json has the predictions' hit rate" contains "$out" '"hit_rate":1'
run=(run -m "$m" -p "the people of the water and the hills" -n 8 --temp 0 -t 2 -c 256)
"$bin" "${run[@]}" >"$tmp/cpu.txt" 2>/dev/null
"$bin" "${run[@]}" "${sim[@]}" --expert-cache 1 --expert-copy always --expert-prefetch on \
    --report --report-json "$tmp/r.json" >"$tmp/sim.txt" 2>"$tmp/err"
check "a run with the cache exits 0 ($(tail -1 "$tmp/err"))" [ $? -eq 0 ]
check "the cache changes no output" cmp -s "$tmp/cpu.txt" "$tmp/sim.txt"
check "--report says the hits" contains "$(cat "$tmp/err")" "expert cache           1 slots x 5"
check "--report says the prefetch" contains "$(cat "$tmp/err")" "expert prefetch"
python3 - "$tmp/r.json" <<'PY'
import json, sys
x = json.load(open(sys.argv[1]))["expert_cache"]
assert x["hits"] + x["misses"] == x["needed"] > 0, x
assert x["copied"] + x["host_experts"] == x["misses"], x
assert x["routings"] >= x["host_expert_tokens"], x
assert 0 < x["prefetch_hits"] <= x["prefetched"], x
# the sim registers the mapping, as a card that can page-lock it does
assert x["copy_source"] == "registered" and x["staging_bytes"] == 0, x
print("report ok:", x)
PY
check "the report's counters add up" [ $? -eq 0 ]
SPILLWAY_EXPERT_STAGING=1 "$bin" "${run[@]}" "${sim[@]}" --expert-cache 1 --expert-copy always \
    --report >"$tmp/staged.txt" 2>"$tmp/err"
check "copies through the pinned staging: exit 0" [ $? -eq 0 ]
check "the staging changes no output" cmp -s "$tmp/cpu.txt" "$tmp/staged.txt"
check "--report says the copies were staged" contains "$(cat "$tmp/err")" "through"
"$bin" plan -m "$m" "${sim[@]}" --expert-copy sometimes --expert-cache 2 >/dev/null 2>"$tmp/err"
rc=$?
check "a bad --expert-copy: exit 2 ($rc)" [ $rc -eq 2 ]
check "the message lists the words" contains "$(cat "$tmp/err")" "auto, always or never"
"$bin" plan -m "$m" "${sim[@]}" --expert-prefetch maybe >/dev/null 2>"$tmp/err"
rc=$?
check "a bad --expert-prefetch: exit 2 ($rc)" [ $rc -eq 2 ]
out=$("$bin" plan -m "$m" --backend cpu --expert-cache 2 -c 256 2>&1)
check "cpu: a note, no cache" contains "$out" "nothing is cached"
# serve's /metrics carries the counters
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve -m "$m" --port "$port" "${sim[@]}" --expert-cache 2 --expert-copy always -c 256 \
    -t 2 >"$tmp/serve.out" 2>&1 &
srv=$!
python3 - "$port" >"$tmp/metrics" <<'PY'
import json, sys, time, urllib.request
base = "http://127.0.0.1:%s" % sys.argv[1]
for _ in range(100):
    try:
        urllib.request.urlopen(base + "/health", timeout=1)
        break
    except Exception:
        time.sleep(0.1)
req = urllib.request.Request(base + "/v1/completions", json.dumps(
    {"prompt": "the people of the water", "max_tokens": 4, "temperature": 0}).encode(),
    {"Content-Type": "application/json"})
urllib.request.urlopen(req, timeout=30).read()
print(urllib.request.urlopen(base + "/metrics", timeout=10).read().decode())
PY
kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
metrics=$(cat "$tmp/metrics")
check "/metrics: the cache's hits" contains "$metrics" "spillway_expert_cache_hits_total"
check "/metrics: bytes copied" contains "$metrics" "spillway_expert_cache_copied_bytes_total"
check "/metrics: expert-tokens on the host" contains "$metrics" "spillway_expert_cache_host_expert_tokens_total"
# pjrt refuses by name (where this build and machine have a PJRT plugin)
"$bin" plan -m "$m" --backend pjrt --device-mem 64M -ncmoe 5 --expert-cache 2 -c 256 \
    >/dev/null 2>"$tmp/err"
rc=$?
if contains "$(cat "$tmp/err")" "expert" 2>/dev/null; then
    check "pjrt: exit 2 ($rc)" [ $rc -eq 2 ]
    check "pjrt: refused by name" contains "$(cat "$tmp/err")" "the pjrt backend cannot hold an expert cache"
else
    echo "pjrt: no plugin here, its refusal not checked ($(tail -1 "$tmp/err"))"
fi
check_summary expert_cache_test
