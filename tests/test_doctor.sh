#!/usr/bin/env bash
# test_doctor.sh — end-to-end checks of `spillway doctor --quick`.
#
# usage: tests/test_doctor.sh path/to/spillway [python3]
#
# Runs with a private XDG_CACHE_HOME (so no model is found and the disk is
# measured with a temp file) and checks: exit 0 even without a device; the
# JSON parses and holds positive rates; the cache file is one flat object
# with the planner's numeric keys, which a plan then uses, and no temp files
# are left behind; with no device the report says "no CUDA device visible"
# and never "out of memory"; an unwritable cache folder fails with a
# message naming it.
set -u

BIN=${1:?usage: test_doctor.sh path/to/spillway [python3]}
PY=${2:-python3}
TMP=$(mktemp -d)
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT

. "$(dirname "$0")/check.sh"

# --- JSON report and cache file -------------------------------------------
export XDG_CACHE_HOME=$TMP/cache
"$BIN" doctor --quick --json >"$TMP/out.json" 2>"$TMP/err.txt"
rc=$?
check "doctor --quick --json exits 0 (got $rc: $(cat "$TMP/err.txt"))" [ "$rc" -eq 0 ]

check "report JSON and cache file are valid and complete" "$PY" - "$TMP/out.json" \
    "$XDG_CACHE_HOME/spillway/doctor.json" <<'PYEOF'
import json, math, sys
report = json.load(open(sys.argv[1]))
cache = json.load(open(sys.argv[2]))
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
keys = ["h2d_pinned_Bps", "h2d_pageable_Bps", "host_mem_Bps", "device_mem_Bps",
        "disk_read_Bps", "host_flops", "device_flops"]
for k in keys + ["measured_at"]:
    want(number(cache.get(k)), "cache %s is not a number: %r" % (k, cache.get(k)))
want(isinstance(cache.get("host"), str) and cache["host"], "cache has no host name")
want(all(not isinstance(v, (dict, list)) for v in cache.values()), "cache is not flat")
for k in ["host_mem_Bps", "host_flops"]:
    want(number(cache.get(k)) and cache[k] > 0, "cache %s not positive" % k)
for sec in ["build", "devices", "host", "measurements", "rates", "cache"]:
    want(sec in report, "report has no section %s" % sec)
m, rates, dev = report["measurements"], report["rates"], report["devices"]
for k in ["host_mem_Bps", "host_flops", "memcpy_Bps", "sim_h2d_Bps"]:
    want(number(m.get(k)) and m[k] > 0, "measurements.%s not positive" % k)
for k in keys:
    want(number(rates.get(k)), "rates.%s is not a number" % k)
    want(abs(rates[k] - cache[k]) <= 1e-5 * max(1.0, abs(rates[k])),
         "rates.%s %r differs from the cache's %r" % (k, rates[k], cache[k]))
if m["disk"]["message"] is None:
    want(m["disk"]["read_Bps"] > 0 and m["disk"]["temp_file"], "disk not measured")
host = report["host"]
want(host["mem_total_bytes"] > 0 and 0 < host["mem_available_bytes"] <= host["mem_total_bytes"],
     "host memory facts: %r" % host)
want(host["memlock_unlimited"] or number(host["memlock_limit_bytes"]), "memlock limit")
want(report["cache"]["written"] is True, "cache not written: %r" % report["cache"])
if dev["status"] == "no_device":
    want(dev["message"].startswith("no CUDA device visible"), "message: %r" % dev["message"])
    want(rates["from_sim"] is True and rates["device"] == "sim", "rates not the sim's")
    want(rates["h2d_pinned_Bps"] == m["memcpy_Bps"], "sim h2d is not memcpy")
    want(rates["device_flops"] == m["host_flops"], "sim device flops is not host flops")
    for k in keys:
        if k != "disk_read_Bps":
            want(rates[k] > 0, "rates.%s not positive without a device" % k)
elif dev["status"] == "ok":
    want(len(dev["list"]) >= 1, "status ok but no devices")
    for d in dev["list"]:
        want(d["measured"] and d["h2d_pinned_Bps"] > 0 and d["device_flops"] > 0,
             "device %r not measured" % d)
for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PYEOF

# The planner reads the cache doctor wrote (sw_doctor_load under plan_rates_load_cache).
"$BIN" plan -m gemma3-270m --backend cpu --json >"$TMP/plan.json" 2>"$TMP/err.txt"
check "plan after doctor: exit 0 ($(cat "$TMP/err.txt"))" [ "$?" -eq 0 ]
check "plan after doctor uses the cached rates" "$PY" - "$TMP/plan.json" \
    "$XDG_CACHE_HOME/spillway/doctor.json" <<'PYEOF'
import json, sys
rates = json.load(open(sys.argv[1]))["rates"]
cache = json.load(open(sys.argv[2]))
ok = rates["measured"] is True and rates["host_mem_Bps"] == cache["host_mem_Bps"] and \
    rates["host_decode_Bps"]["Q4_K"] == cache["host_decode_q4_k_Bps"]
sys.exit(0 if ok else 1)
PYEOF

leftovers=$(find "$XDG_CACHE_HOME/spillway" -name '.*' -type f | wc -l)
check "no temp files left in the cache folder ($leftovers)" [ "$leftovers" -eq 0 ]

# --- text report ------------------------------------------------------------
"$BIN" doctor --quick >"$TMP/out.txt" 2>&1
rc=$?
check "doctor --quick exits 0 (got $rc)" [ "$rc" -eq 0 ]
for section in build devices host measurements cache; do
    check "text report has a '$section' section" grep -q "^$section" "$TMP/out.txt"
done
if grep -q '"status": *"no_device"' "$TMP/out.json"; then
    check "text report says no CUDA device visible" grep -q "no CUDA device visible" "$TMP/out.txt"
fi
check "text report never says out of memory" bash -c "! grep -qi 'out of memory' '$TMP/out.txt'"
check "JSON report never says out of memory" bash -c "! grep -qi 'out of memory' '$TMP/out.json'"

# --- failures -----------------------------------------------------------------
touch "$TMP/not-a-folder"
XDG_CACHE_HOME=$TMP/not-a-folder "$BIN" doctor --quick >/dev/null 2>"$TMP/err.txt"
rc=$?
check "cache under a file: non-zero exit" [ "$rc" -ne 0 ]
check "cache under a file: the error names the path ($(cat "$TMP/err.txt"))" \
    grep -q "$TMP/not-a-folder/spillway" "$TMP/err.txt"

if [ "$(id -u)" -ne 0 ]; then  # root ignores folder permissions
    mkdir -p "$TMP/ro/spillway" && chmod 555 "$TMP/ro/spillway"
    XDG_CACHE_HOME=$TMP/ro "$BIN" doctor --quick >/dev/null 2>"$TMP/err.txt"
    rc=$?
    check "read-only cache folder: non-zero exit" [ "$rc" -ne 0 ]
    check "read-only cache folder: the error names it" grep -q "$TMP/ro/spillway" "$TMP/err.txt"
fi

"$BIN" doctor --no-such-flag >/dev/null 2>&1
check "unknown flag: usage exit status 2" [ "$?" -eq 2 ]
"$BIN" doctor --quick -m "$TMP/missing.gguf" >/dev/null 2>&1
check "unreadable -m file: non-zero exit" [ "$?" -ne 0 ]

echo "test_doctor: $checks checks, $failures failures"
[ "$failures" -eq 0 ]
