#!/usr/bin/env bash
# The expert cache (issue 38) measured against its plan: a Gemma 4 MoE
# whose experts stay on the host, run with the planner's static split,
# with every layer's experts on the host and no cache, and with the cache
# (copy auto, copy always — from the mapping registered, and through the
# pinned staging — and copy always + prefetch) — interleaved rounds,
# medians — each beside the plan's predicted prefill and decode tok/s.
# The cached plans predict at the hit rate a replay of the first run's
# routing trace gives for the planned slots (spillway bench
# --expert-trace), which is how a user with a real checkpoint would do it.
# Not a test: machines are noisy; compare medians.
#
# usage: bench/expert_cache.sh -m FILE [--device-mem SIZE] [--ncmoe N]
#                              [--link R] [--out FILE.md] [--build DIR]
#   -m FILE         a Gemma 4 MoE GGUF (spillway synth --shape gemma4-26b-a4b
#                   --type q4_k_m --layers 6 makes one with real shapes)
#   --device-mem S  the simulated device's budget (default 1638M: 8 GiB
#                   scaled to 6 of 30 layers)
#   --ncmoe N       layers whose experts stay on the host (default 6)
#   --link R        the sim's link (default 25GB/s)
#   --out FILE      also write a markdown record
#   --build DIR     Spillway build folder (default build)
# env: ROUNDS (3), THREADS (2), N (decoded tokens, 63), CTX (4096)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model="" devmem=1638M ncmoe=6 link=25GB/s out="" build=build
while [ $# -gt 0 ]; do
  case "$1" in
    -m) model=${2:?-m needs a file}; shift 2 ;;
    --device-mem) devmem=${2:?--device-mem needs a size}; shift 2 ;;
    --ncmoe) ncmoe=${2:?--ncmoe needs a count}; shift 2 ;;
    --link) link=${2:?--link needs a rate}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "expert_cache.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -f "$model" ] || { echo "expert_cache.sh: pass -m FILE (a Gemma 4 MoE GGUF)" >&2; exit 2; }
rounds=${ROUNDS:-3} threads=${THREADS:-2} n=${N:-63} ctx=${CTX:-4096}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
sw="$build/spillway"
[ -x "$sw" ] || { echo "expert_cache.sh: no $sw; build first" >&2; exit 2; }
prompt="The history of the river valley begins with the first farmers who came down from the hills"
raw=$(mktemp -d); trap 'rm -rf "$raw"' EXIT
common=(-m "$model" -c "$ctx" -b 64 -t "$threads" --backend sim --device-mem "$devmem"
        --sim-link-bw "$link")
cached=(-ncmoe "$ncmoe" --expert-cache auto)

# the hit rate to predict with: the routing of one run replayed against
# the planned slot count
slots=$("$sw" plan "${common[@]}" "${cached[@]}" --json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["predictions"]["expert_cache"]["slots"])')
"$sw" run "${common[@]}" -ncmoe "$ncmoe" -p "$prompt" -n "$n" --temp 0 \
  --expert-trace "$raw/trace.jsonl" >/dev/null 2>"$raw/trace.err"
"$sw" bench --expert-trace "$raw/trace.jsonl" --cache-slots "$slots" --policy lru --json \
  >"$raw/replay.json"
hit=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round(d["caches"][0]["hit_rate"], 4))' "$raw/replay.json")
echo "expert_cache.sh: $slots slots per layer; the trace replays at a $hit LRU hit rate" >&2

variants=(static ncmoe auto always staged prefetch)
flags_of() {
  case $1 in
    static) echo "" ;;
    ncmoe) echo "-ncmoe $ncmoe" ;;
    auto) echo "${cached[*]} --expert-hit-rate $hit" ;;
    always|staged) echo "${cached[*]} --expert-copy always --expert-hit-rate $hit" ;;
    prefetch) echo "${cached[*]} --expert-copy always --expert-prefetch on --expert-hit-rate $hit" ;;
  esac
}
for v in "${variants[@]}"; do
  # shellcheck disable=SC2046
  "$sw" plan "${common[@]}" $(flags_of "$v") >"$raw/plan-$v.txt"
done
for r in $(seq "$rounds"); do
  for v in "${variants[@]}"; do
    echo "expert_cache.sh: round $r/$rounds, $v" >&2
    # staged: the copies through the plan's pinned buffers, not the mapping
    stage=0; [ "$v" = staged ] && stage=1
    # shellcheck disable=SC2046
    SPILLWAY_EXPERT_STAGING=$stage "$sw" run "${common[@]}" $(flags_of "$v") -p "$prompt" -n "$n" --temp 0 \
      --report-json "$raw/$v-$r.json" >"$raw/$v-$r.out" 2>"$raw/$v-$r.err" ||
      { echo "expert_cache.sh: $v run failed:" >&2; tail -n 5 "$raw/$v-$r.err" >&2; exit 1; }
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$root" diff --quiet HEAD 2>/dev/null; then commit="$commit+changes"; fi
python3 - "$raw" "$rounds" "$out" "$cpu ($(nproc) CPUs)" "$model" "$commit" "$devmem" \
  "$ncmoe" "$link" "$n" "$threads" "$ctx" "$slots" "$hit" "${variants[@]}" <<'PY'
import datetime, json, os, statistics, sys
(raw, rounds, out, cpu, model, commit, devmem, ncmoe, link, n, threads, ctx, slots,
 hit) = sys.argv[1:15]
variants = sys.argv[15:]
rounds = int(rounds)
what = {"static": "static split (the planner's)", "ncmoe": f"-ncmoe {ncmoe}, no cache",
        "auto": "cache, copy auto", "always": "cache, copy always",
        "staged": "cache, copy always, through the staging",
        "prefetch": "cache, copy always + prefetch"}
rows = []
for v in variants:
    reps = [json.load(open(os.path.join(raw, f"{v}-{r}.json"))) for r in range(1, rounds + 1)]
    med = lambda k: statistics.median(x[k] for x in reps)
    x = reps[0].get("expert_cache")
    toks = reps[0]["n_prefill_tokens"] + reps[0]["n_decode_tokens"]
    if x:
        hits = f"{100 * x['hits'] / max(x['needed'], 1):.1f}%"
        moved = f"{x['copied_bytes'] / toks / 2**20:.1f}"
        src = x["copy_source"]
    else:
        hits, moved, src = "-", "0", "-"
    each = " / ".join("%.2f" % r["decode_tokens_per_s"] for r in reps)
    rows.append(f"| {what[v]} | {med('predicted_prefill_tokens_per_s'):.1f} | "
                f"{med('prefill_tokens_per_s'):.1f} | {med('predicted_decode_tokens_per_s'):.2f} | "
                f"{med('decode_tokens_per_s'):.2f} | "
                f"{each} | {hits} | "
                f"{moved} | {src} |")
table = "\n".join([
    "| setting | predicted prefill tok/s | measured prefill (median) | predicted decode tok/s "
    "| measured decode (median) | decode rounds | hits (run 1) | MiB copied per token | copies from |",
    "|---|---:|---:|---:|---:|---|---:|---:|---|"] + rows)
print(table)
if not out:
    sys.exit(0)
plans = {v: open(os.path.join(raw, f"plan-{v}.txt")).read().rstrip() for v in variants}
doc = f"""# The expert cache against its plan on the simulated device (issue 38)

{datetime.date.today().isoformat()}, {cpu}, model {os.path.basename(model)}, Spillway {commit},
`--backend sim --device-mem {devmem} --sim-link-bw {link} -c {ctx} -b 64 -t {threads}`,
{n} tokens decoded greedily after the prompt, {rounds} rounds interleaved in the table's
order; medians.
The cached plans predict at the {float(hit) * 100:.1f}% hit rate that replaying the first
run's routing trace against {slots} LRU slots per layer gives (`--expert-hit-rate {hit}`).
Random weights route almost uniformly, and greedy decoding of them repeats itself: these
hit rates are not a real checkpoint's. On the sim the device computes with this CPU, so the
cache cannot make it faster; what is compared is the prediction against the measurement.

{table}

## The plans

""" + "\n\n".join(f"{what[v]}:\n\n```\n{plans[v]}\n```" for v in variants) + "\n"
open(out, "w").write(doc)
print(f"wrote {out}")
PY
