#!/usr/bin/env bash
# A split over several simulated devices (issue 39) measured against its
# plan: one device holding the whole model, then splits over 2 and 3
# devices with the stages on threads of their own (a long prompt's chunks
# go through the devices at once) and in turn (SPILLWAY_SPLIT_PIPELINE=0);
# interleaved rounds, medians, each beside the plan's predicted prefill and
# decode tok/s and each device's busy share; then decode of 16 sequences
# (batch -np 16) with the forwards in micro-batches as planned and whole
# (SPILLWAY_SPLIT_PARTS=0). On the sim every device
# computes with this CPU's cores, so the stages' threads share them: -t 1
# per stage leaves one core to each of two stages.
# Not a test: machines are noisy; compare medians.
#
# usage: bench/split.sh [-m FILE] [--out FILE.md] [--build DIR]
#   -m FILE     model (default: the fetched Gemma 3 270M)
#   --out FILE  also write a markdown record
#   --build DIR Spillway build folder (default build)
# env: ROUNDS (3), THREADS (1, per stage), N (decoded tokens, 32), PROMPT_REPEAT (12:
#      the prompt's sentence repeated, ~250 tokens: 4 chunks of -b 64)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model="" out="" build=build
while [ $# -gt 0 ]; do
  case "$1" in
    -m) model=${2:?-m needs a file}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "split.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
rounds=${ROUNDS:-3} threads=${THREADS:-1} n=${N:-32} repeat=${PROMPT_REPEAT:-12}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
sw="$build/spillway"
[ -x "$sw" ] || { echo "split.sh: no $sw; build first" >&2; exit 2; }
raw=$(mktemp -d); trap 'rm -rf "$raw"' EXIT
for _ in $(seq "$repeat"); do
  printf 'The river rose all night, and by morning the spillway carried more water than the old engineers had ever planned for. '
done >"$raw/prompt.txt"
common=(-c 1024 -b 64 -t "$threads" --backend sim --host-mem 8G)
[ -n "$model" ] && common+=(-m "$model")

variants=(one two two_turn three three_turn)
mem_of() {
  case $1 in
    one) echo 1G ;;
    two|two_turn) echo 1G,1G ;;
    three|three_turn) echo 1G,1G,1G ;;
  esac
}
pipe_of() { case $1 in *_turn) echo 0 ;; *) echo 1 ;; esac; }
for v in "${variants[@]}"; do
  "$sw" plan "${common[@]}" --device-mem "$(mem_of "$v")" >"$raw/plan-$v.txt"
done
for r in $(seq "$rounds"); do
  for v in "${variants[@]}"; do
    echo "split.sh: round $r/$rounds, $v" >&2
    SPILLWAY_SPLIT_PIPELINE=$(pipe_of "$v") "$sw" run "${common[@]}" --device-mem "$(mem_of "$v")" \
      -f "$raw/prompt.txt" -n "$n" --temp 0 --report --report-json "$raw/$v-$r.json" \
      >"$raw/$v-$r.out" 2>"$raw/$v-$r.err" ||
      { echo "split.sh: $v run failed:" >&2; tail -n 5 "$raw/$v-$r.err" >&2; exit 1; }
  done
done

# decode of many sequences: `batch -np 16`, whole forwards against micro-batches
python3 - "$raw/req.jsonl" <<'PY2'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(16):
        f.write(json.dumps({"id": i, "prompt": "Write a short story about a river, a bridge "
                            "and an engineer called number %d." % i}) + "\n")
PY2
bvariants=(b_one b_two b_two_whole)
for v in "${bvariants[@]}"; do
  mem=1G,1G; [ "$v" = b_one ] && mem=1G
  "$sw" plan "${common[@]}" -c 256 -np 16 --device-mem "$mem" >"$raw/plan-$v.txt"
done
for r in $(seq "$rounds"); do
  for v in "${bvariants[@]}"; do
    echo "split.sh: round $r/$rounds, $v" >&2
    mem=1G,1G; [ "$v" = b_one ] && mem=1G
    parts=1; [ "$v" = b_two_whole ] && parts=0
    SPILLWAY_SPLIT_PARTS=$parts "$sw" batch "${common[@]}" -c 256 -np 16 --device-mem "$mem" \
      -f "$raw/req.jsonl" -n "$n" --temp 0 --report-json "$raw/$v-$r.json" \
      >"$raw/$v-$r.out" 2>"$raw/$v-$r.err" ||
      { echo "split.sh: $v run failed:" >&2; tail -n 5 "$raw/$v-$r.err" >&2; exit 1; }
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$root" diff --quiet HEAD 2>/dev/null; then commit="$commit+changes"; fi
python3 - "$raw" "$rounds" "$out" "$cpu ($(nproc) CPUs)" "${model:-default}" "$commit" "$n" \
  "$threads" "${variants[@]}" <<'PY'
import datetime, json, os, re, statistics, sys
raw, rounds, out, cpu, model, commit, n, threads = sys.argv[1:9]
variants = sys.argv[9:]
rounds = int(rounds)
what = {"one": "one device, 1G", "two": "2 devices, 1G,1G, at once",
        "two_turn": "2 devices, in turn", "three": "3 devices, 1G,1G,1G, at once",
        "three_turn": "3 devices, in turn"}
rows = []
for v in variants:
    reps = [json.load(open(os.path.join(raw, f"{v}-{r}.json"))) for r in range(1, rounds + 1)]
    med = lambda k: statistics.median(x[k] for x in reps)
    text = open(os.path.join(raw, f"{v}-1.err")).read()  # --report goes to stderr
    busy = re.findall(r"device (\d+) \(layers ([0-9-]+)\).*?busy [0-9.]+ s, (\d+)%", text)
    shares = ", ".join(f"{d} ({l}): {p}%" for d, l, p in busy) or "-"
    rows.append(f"| {what[v]} | {med('predicted_prefill_tokens_per_s'):.1f} | "
                f"{med('prefill_tokens_per_s'):.1f} | "
                f"{' / '.join('%.1f' % x['prefill_tokens_per_s'] for x in reps)} | "
                f"{med('predicted_decode_tokens_per_s'):.2f} | {med('decode_tokens_per_s'):.2f} | "
                f"{shares} |")
table = "\n".join([
    "| setting | predicted prefill tok/s | measured prefill (median) | prefill rounds "
    "| predicted decode tok/s | measured decode (median) | busy share (run 1) |",
    "|---|---:|---:|---|---:|---:|---|"] + rows)
print(table)
bwhat = {"b_one": "one device, 1G", "b_two": "2 devices, micro-batches as planned",
         "b_two_whole": "2 devices, whole forwards (SPILLWAY_SPLIT_PARTS=0)"}
brows = []
for v in ("b_one", "b_two", "b_two_whole"):
    reps = [json.load(open(os.path.join(raw, f"{v}-{r}.json"))) for r in range(1, rounds + 1)]
    med = lambda k: statistics.median(x[k] for x in reps)
    plan = open(os.path.join(raw, f"plan-{v}.txt")).read()
    parts = re.search(r"a decode step in (\d+)", plan)
    brows.append(f"| {bwhat[v]} | {parts.group(1) if parts else 1} | "
                 f"{med('predicted_decode_tokens_per_s'):.1f} | {med('decode_tokens_per_s'):.1f} | "
                 f"{' / '.join('%.1f' % x['decode_tokens_per_s'] for x in reps)} |")
btable = "\n".join([
    "| -np 16, decode | micro-batches planned | predicted decode tok/s | measured (median) "
    "| rounds |", "|---|---:|---:|---:|---|"] + brows)
print()
print(btable)
if not out:
    sys.exit(0)
doc = f"""# A split over simulated devices against its plan (issue 39)

{datetime.date.today().isoformat()}, {cpu}, model {model}, Spillway {commit},
`--backend sim -c 1024 -b 64 -t {threads}` (threads per stage), a ~250-token prompt (4
chunks) then {n} tokens decoded greedily, {rounds} rounds interleaved in the table's order;
medians. "At once": the later stages on threads of their own, so consecutive chunks are in
different devices at the same time; "in turn": SPILLWAY_SPLIT_PIPELINE=0. The predicted
prefill of a split is the pipelined one (the slowest stage per chunk); its decode is the
stages in turn plus the hops. On the sim every device computes with this machine's cores.

{table}

Decode of 16 sequences (`batch -np 16 -c 256`, 16 requests, {n} tokens each, the same
rounds): aggregate decode tok/s, with the forwards cut into micro-batches where the plan
finds that faster, and kept whole.

{btable}
"""
with open(out, "w") as f:
    f.write(doc)
PY
