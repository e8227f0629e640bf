#!/usr/bin/env bash
# bench_cli_test.sh — `spillway bench --json` on the default model: one
# object per test with the llama-bench figures and, for tg, the decode
# bound, every number positive; bad flags exit 2 with a message; the KV
# type and the host dots can be chosen.
set -u
bin="${1:?usage: bench_cli_test.sh SPILLWAY}"
fail=0
out="$("$bin" bench -p 16 -n 4 -t 1 -r 1 --json)"; rc=$?
if [ "$rc" != 0 ]; then
  echo "FAIL: spillway bench -p 16 -n 4 -t 1 -r 1 --json -> $rc"; fail=1
elif ! python3 - "$out" <<'PY'
import json, sys
tests = json.loads(sys.argv[1])
assert isinstance(tests, list) and len(tests) == 2, f"want 2 tests, got {tests!r}"
by = {(t["n_prompt"], t["n_gen"]): t for t in tests}
assert set(by) == {(16, 0), (0, 4)}, f"tests {sorted(by)}"
for t in tests:
    assert t["model"].endswith(".gguf") and t["threads"] == 1, t
    assert t["tokens_per_s"] > 0 and t["stddev"] >= 0, t
    assert len(t["samples"]) == 1 and all(s > 0 for s in t["samples"]), t
tg = by[(0, 4)]
for k in ("bytes_per_token", "read_bandwidth_Bps", "bound_tokens_per_s"):
    assert isinstance(tg[k], (int, float)) and tg[k] > 0, (k, tg.get(k))
# The 270M model reads ~247 MB of weights per token (layers + tied LM head).
assert 200e6 < tg["bytes_per_token"] < 300e6, tg["bytes_per_token"]
bound = tg["read_bandwidth_Bps"] / tg["bytes_per_token"]
assert abs(tg["bound_tokens_per_s"] - bound) <= 1e-3 * bound, (tg["bound_tokens_per_s"], bound)
print("ok   json:", ", ".join(f"{t['test']} {t['tokens_per_s']:.1f} t/s" for t in tests))
PY
then
  echo "FAIL: the JSON above lacks fields or numbers"; echo "$out"; fail=1
fi
expect_usage() {   # expect_usage PATTERN ARGS...
  local pat="$1"; shift
  local msg rc
  msg="$("$bin" bench "$@" 2>&1 >/dev/null)"; rc=$?
  if [ "$rc" != 2 ] || ! grep -q -- "$pat" <<< "$msg"; then
    echo "FAIL: spillway bench $* -> $rc (want 2, message '$pat'): $msg"; fail=1
  else
    echo "ok   2  $*"
  fi
}
expect_usage "unknown option '--frobnicate'" --frobnicate
expect_usage "expects an integer" -p 16x
expect_usage "expects comma-separated" -t 1,,2
expect_usage "needs a value" -r
expect_usage "expects one of f16, bf16, f32" --kv-type f8
expect_usage "expects one of q8, bf16, f32" --cpu-dots f64
if ! "$bin" bench -p 8 -n 2 -t 1 -r 1 --kv-type f32 --cpu-dots f32 >/dev/null 2>&1; then
  echo "FAIL: spillway bench --kv-type f32 --cpu-dots f32"; fail=1
else
  echo "ok   0  --kv-type f32 --cpu-dots f32"
fi
exit $fail
