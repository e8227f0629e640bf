#!/usr/bin/env bash
# Spillway's cpu backend against llama.cpp's llama-bench (the peer of issue
# 12), side by side on one machine and one model file: both tools run
# interleaved, llama-bench then `spillway bench`, per round and thread
# count (A B A B ...), so drift in the machine (other tenants, clocks) hits
# both alike. Each round gives each tool's mean over REPS repetitions; the
# table is the median over rounds and the ratio Spillway / llama.cpp.
# Not a test: machines are noisy; compare medians of interleaved rounds.
#
# usage: bench/peer.sh [-m FILE] [--out FILE.md] [--build DIR]
#   -m FILE     model (default: the default model in the spillway cache)
#   --out FILE  also write a markdown record (date, CPU, commands, raw
#               per-round figures, medians)
#   --build DIR Spillway build folder, configured and built if needed
#               (default: build)
# env: ROUNDS (3), THREADS ("1 2"), PP (128), TG (64), REPS per round (3),
#      SPILLWAY_FLAGS (more flags for spillway bench, e.g. "--cpu-dots bf16"),
#      PEER_SCRIPT (default: ../shared/peer/build-llama-bench.sh from the
#      repository root; it builds llama-bench once, cached).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model="${XDG_CACHE_HOME:-$HOME/.cache}/spillway/gemma-3-270m-q4_k_m.gguf"
out="" build="build"
while [ $# -gt 0 ]; do
  case "$1" in
    -m) model=${2:?-m needs a file}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "peer.sh: unknown option '$1' (see bench/peer.sh --help)" >&2; exit 2 ;;
  esac
done
rounds=${ROUNDS:-3} threads=${THREADS:-1 2} pp=${PP:-128} tg=${TG:-64} reps=${REPS:-3}
[ "$rounds" -ge 1 ] 2>/dev/null || { echo "peer.sh: ROUNDS must be >= 1, got '$rounds'" >&2; exit 2; }
[ -f "$model" ] || { echo "peer.sh: no model at $model (run 'spillway fetch' or pass -m FILE)" >&2; exit 2; }
case "$build" in /*) ;; *) build="$root/$build" ;; esac
case "$out" in ""|/*) ;; *) out="$PWD/$out" ;; esac

peer_script=${PEER_SCRIPT:-$root/../shared/peer/build-llama-bench.sh}
if [ ! -f "$peer_script" ]; then
  echo "peer.sh: the peer's build script is not at $peer_script; it lives in the" \
       "shared folder next to the repository (../shared/peer/build-llama-bench.sh)," \
       "or set PEER_SCRIPT" >&2
  exit 1
fi
echo "peer.sh: building llama-bench (cached; the first build takes minutes)" >&2
llama_bench=$(bash "$peer_script" | tail -n 1)
[ -x "$llama_bench" ] || { echo "peer.sh: $peer_script did not give a llama-bench binary" >&2; exit 1; }
echo "peer.sh: building spillway in $build" >&2
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" >&2
cmake --build "$build" --target spillway_cli -j"$(nproc)" >&2
spillway="$build/spillway"

raw=$(mktemp -d); trap 'rm -rf "$raw"' EXIT
peer_cmd="$llama_bench -m $model -p $pp -n $tg -r $reps -o json -t"
ours_cmd="$spillway bench -m $model ${SPILLWAY_FLAGS:-}${SPILLWAY_FLAGS:+ }-p $pp -n $tg -r $reps --json -t"
for r in $(seq "$rounds"); do
  for t in $threads; do
    echo "peer.sh: round $r/$rounds, -t $t: llama-bench, then spillway bench" >&2
    $peer_cmd "$t" >"$raw/llama.cpp-$r-$t.json" 2>"$raw/llama.cpp-$r-$t.log" ||
      { echo "peer.sh: llama-bench failed:" >&2; tail -n 5 "$raw/llama.cpp-$r-$t.log" >&2; exit 1; }
    $ours_cmd "$t" >"$raw/spillway-$r-$t.json"
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
# The SIMD the kernels can use decides much of the outcome: name it.
isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
      grep -E '^(avx2|fma|avx512f|avx512bw|avx512_vnni|avx512_bf16|avx_vnni|amx_tile)$' |
      tr '\n' ' ' | sed 's/ $//')
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$root" diff --quiet HEAD 2>/dev/null; then commit="$commit+changes"; fi
cd "$root"
python3 - "$raw" "$rounds" "$out" "$cpu" "$(nproc) CPUs; ${isa:-no AVX2}" "$model" "$commit" \
  "$peer_cmd N" "$ours_cmd N" "${LLAMA_CPP_PYTHON_VERSION:-0.3.36}" <<'PY'
import datetime, glob, json, os, statistics, sys
raw, rounds, out, cpu, ncpu, model, commit, peer_cmd, ours_cmd, peer_ver = sys.argv[1:]
home, root = os.path.expanduser("~"), os.getcwd()
peer_cmd, ours_cmd = (c.replace(root + "/", "").replace(home + "/", "~/")
                      for c in (peer_cmd, ours_cmd))

def test_name(n_prompt, n_gen):
    return f"pp{n_prompt}" if n_gen == 0 else f"tg{n_gen}" if n_prompt == 0 else f"pp{n_prompt}+tg{n_gen}"

# rows[(tool, threads, test)] = [per-round mean t/s]; bound[(threads, test)]
rows, bound, build = {}, {}, "?"
for path in sorted(glob.glob(os.path.join(raw, "*.json"))):
    tool, rnd, _ = os.path.basename(path)[:-5].rsplit("-", 2)
    for t in json.load(open(path)):
        if tool == "llama.cpp":   # llama-bench -o json field names
            th, ts = t["n_threads"], t["avg_ts"]
            kv = f"KV {t.get('type_k', '?')}, n_batch {t.get('n_batch')}, n_ubatch {t.get('n_ubatch')}"
            if t.get("build_commit", "unknown") != "unknown":
                kv += f", build {t.get('build_number')} ({t['build_commit']})"
            build = kv
        else:
            th, ts = t["threads"], t["tokens_per_s"]
            if "bound_tokens_per_s" in t:
                bound.setdefault((th, test_name(t["n_prompt"], t["n_gen"])), []).append(
                    (t["bound_tokens_per_s"], t["read_bandwidth_Bps"], t["bytes_per_token"]))
        rows.setdefault((tool, th, test_name(t["n_prompt"], t["n_gen"])), []).append((int(rnd), ts))

keys = sorted({(th, test) for _, th, test in rows}, key=lambda k: (k[0], k[1][:2] != "pp", k[1]))
med = {k: statistics.median(v for _, v in vals) for k, vals in rows.items()}
lines = ["| threads | test | llama.cpp t/s | Spillway t/s | Spillway / llama.cpp | decode bound t/s (Spillway's share) |",
         "|---:|---|---:|---:|---:|---|"]
for th, test in keys:
    a, b = med.get(("llama.cpp", th, test)), med.get(("spillway", th, test))
    ratio = f"{b / a:.2f}" if a and b else "-"
    bd = ""
    if (th, test) in bound:
        bt = statistics.median(x[0] for x in bound[(th, test)])
        bd = f"{bt:.1f} ({100 * b / bt:.0f}%; llama.cpp {100 * a / bt:.0f}%)" if a and b else f"{bt:.1f}"
    lines.append(f"| {th} | {test} | {a or 0:.2f} | {b or 0:.2f} | {ratio} | {bd} |")
table = "\n".join(lines)
print(f"medians over {rounds} interleaved rounds, {os.path.basename(model)}, {cpu} ({ncpu})")
print(table)
if not out:
    sys.exit(0)

raw_lines = ["| round | threads | test | llama.cpp t/s | Spillway t/s |", "|---:|---:|---|---:|---:|"]
for th, test in keys:
    a = dict(rows.get(("llama.cpp", th, test), []))
    b = dict(rows.get(("spillway", th, test), []))
    for r in sorted(set(a) | set(b)):
        raw_lines.append(f"| {r} | {th} | {test} | {a.get(r, 0):.2f} | {b.get(r, 0):.2f} |")
bw_lines = []
for (th, test), vals in sorted(bound.items()):
    bt, bw, bpt = (statistics.median(x[i] for x in vals) for i in range(3))
    bw_lines.append(f"- {test} at -t {th}: {bpt / 1e6:.1f} MB of weights per token, "
                    f"read bandwidth {bw / 1e9:.2f} GB/s (median of rounds) -> bound {bt:.1f} t/s")
doc = f"""# CPU speed: Spillway vs llama.cpp's llama-bench (issue 12)

{datetime.date.today().isoformat()}, {cpu} ({ncpu}), model {os.path.basename(model)},
Spillway {commit} (cpu backend, KV f16, 8-bit activations, the down projection's
per 32; n_batch = min(prompt, 512)), peer
llama-bench of the llama.cpp that llama-cpp-python {peer_ver} vendors ({build};
built by `../shared/peer/build-llama-bench.sh`, AMX off). {rounds} rounds,
each running llama-bench then `spillway bench` at each thread count
(interleaved A B A B); each figure is one tool's mean over its repetitions
in that round; the tables give the median over rounds and every round.

Commands (N = threads):

    {peer_cmd}
    {ours_cmd}

## Medians

{table}

Decode bound (from `spillway bench --json`: the weight bytes per token the
plan holds, layers + LM head, over a 1 GiB load-only sweep at the same
thread count, best of 3):

{chr(10).join(bw_lines)}

## Per round

{chr(10).join(raw_lines)}
"""
os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
open(out, "w").write(doc)
print(f"wrote {out}")
PY
