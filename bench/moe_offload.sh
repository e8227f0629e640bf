#!/usr/bin/env bash
# Decode speed of a mixture-of-experts model whose experts do not fit the
# device (issue 23): the same file run with a device budget — the plan
# keeps attention, the dense MLP and the router on the device and puts
# the experts of as many layers as needed on the host — and all on the
# host, interleaved (A B A B), each against what the planner predicted
# for it. Not a test: machines are noisy; compare medians of rounds.
#
# usage: bench/moe_offload.sh -m FILE [--backend B] [--device-mem SIZE]
#                             [--out FILE.md] [--build DIR]
#   -m FILE         a Gemma 4 MoE GGUF (spillway synth --shape
#                   gemma4-26b-a4b --type q4_k makes one)
#   --backend B     the device backend (default sim)
#   --device-mem S  its budget (default 8G)
#   --out FILE      also write a markdown record
#   --build DIR     Spillway build folder (default build)
# env: ROUNDS (3), THREADS (2), N (decoded tokens per run, 128), CTX (4096)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model="" backend=sim devmem=8G out="" build=build
while [ $# -gt 0 ]; do
  case "$1" in
    -m) model=${2:?-m needs a file}; shift 2 ;;
    --backend) backend=${2:?--backend needs a name}; shift 2 ;;
    --device-mem) devmem=${2:?--device-mem needs a size}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "moe_offload.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -f "$model" ] || { echo "moe_offload.sh: pass -m FILE (a Gemma 4 MoE GGUF)" >&2; exit 2; }
rounds=${ROUNDS:-3} threads=${THREADS:-2} n=${N:-128} ctx=${CTX:-4096}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
spillway="$build/spillway"
[ -x "$spillway" ] || { echo "moe_offload.sh: no $spillway; build first" >&2; exit 2; }

prompt="The history of the river valley begins with"
offload=(--backend "$backend" --device-mem "$devmem")
host=(--backend cpu)
common=(-m "$model" -c "$ctx" -t "$threads")
raw=$(mktemp -d); trap 'rm -rf "$raw"' EXIT
"$spillway" plan "${common[@]}" "${offload[@]}" >"$raw/plan-offload.txt"
"$spillway" plan "${common[@]}" "${host[@]}" >"$raw/plan-host.txt"
for r in $(seq "$rounds"); do
  for side in offload host; do
    echo "moe_offload.sh: round $r/$rounds, $side" >&2
    if [ "$side" = offload ]; then flags=("${offload[@]}"); else flags=("${host[@]}"); fi
    /usr/bin/time -f "maxrss_kb %M" "$spillway" run "${common[@]}" "${flags[@]}" -p "$prompt" \
      -n "$n" --temp 0 >"$raw/$side-$r.out" 2>"$raw/$side-$r.err" ||
      { echo "moe_offload.sh: $side run failed:" >&2; tail -n 5 "$raw/$side-$r.err" >&2; exit 1; }
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$root" diff --quiet HEAD 2>/dev/null; then commit="$commit+changes"; fi
python3 - "$raw" "$rounds" "$out" "$cpu ($(nproc) CPUs)" "$model" "$commit" "$backend" \
  "$devmem" "$n" "$threads" "$ctx" <<'PY'
import datetime, os, re, statistics, sys
raw, rounds, out, cpu, model, commit, backend, devmem, n, threads, ctx = sys.argv[1:]
rounds = int(rounds)

def figures(side):
    dec, pre, rss = [], [], []
    for r in range(1, rounds + 1):
        err = open(os.path.join(raw, f"{side}-{r}.err")).read()
        m = re.search(r"prompt (\d+) tokens in [\d.]+ s \(([\d.]+) tok/s\); "
                      r"generated (\d+) tokens in [\d.]+ s \(([\d.]+) tok/s\)", err)
        if not m:
            sys.exit(f"moe_offload.sh: no timing line in {side} round {r}")
        pre.append(float(m.group(2)))
        dec.append(float(m.group(4)))
        rss.append(int(re.search(r"maxrss_kb (\d+)", err).group(1)) / 2**20)
    return dec, pre, rss

def plan_lines(side):
    text = open(os.path.join(raw, f"plan-{side}.txt")).read()
    pred = re.search(r"decode ([\d.]+) tok/s", text)
    return text, float(pred.group(1)) if pred else None

rows, plans = [], {}
for side, what in (("offload", f"{backend}, --device-mem {devmem}"),
                   ("host", "cpu, all on the host")):
    dec, pre, rss = figures(side)
    text, pred = plan_lines(side)
    plans[side] = text
    med = statistics.median(dec)
    rows.append(f"| {what} | {pred if pred is not None else '-'} | {med:.2f} | "
                f"{' / '.join(f'{d:.2f}' for d in dec)} | "
                f"{statistics.median(pre):.2f} | {max(rss):.1f} |")
table = "\n".join(["| plan | predicted decode tok/s | measured decode tok/s (median) | rounds | "
                   "prefill tok/s (median) | peak RSS GiB |",
                   "|---|---:|---:|---|---:|---:|"] + rows)
print(table)
if not out:
    sys.exit(0)
doc = f"""# Gemma 4 MoE with experts on the host: measured against the plan (issue 23)

{datetime.date.today().isoformat()}, {cpu}, model {os.path.basename(model)},
Spillway {commit}, -t {threads}, -c {ctx}, {n} tokens decoded greedily per run
after the prompt, {rounds} rounds interleaved (offload, then all-host).
Peak RSS counts the model file's pages the process touched (mapped) and,
for the simulated device, its memory (host RAM standing in for the card).

{table}

## The plans

```
{plans['offload'].rstrip()}
```

```
{plans['host'].rstrip()}
```
"""
open(out, "w").write(doc)
print(f"wrote {out}")
PY
