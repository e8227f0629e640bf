#!/usr/bin/env bash
# Gemma 4 assistants' speed points (issue 36), greedy, on one machine: the
# tiny Gemma 4 targets with their distilled tiny assistants
# (tools/golden/make_tiny_assistant.py; no real Gemma 4 checkpoint is on
# these machines, and a synthetic assistant's random drafts are never
# accepted), plain decoding against `-md ASSISTANT --draft-max K`:
#   - on --backend cpu (the assistant beside host caches);
#   - every layer streamed over a slow simulated link (--backend sim
#     --device-mem 1M --place all=streamed --sim-link-bw LINK_BW), where a
#     forward costs its crossing and the assistant runs on the device
#     beside the target's caches, reserved in the plan.
# Rounds interleave every configuration (A B A B ...); the table gives
# medians of decode tok/s (with drafting: the report's speculative decode
# rate, drafting time included), acceptance and tokens per verify from
# --report-json. Each drafted output is checked equal to the plain one.
# Not a test: machines are noisy; compare medians.
#
# usage: bench/spec_assist.sh [--out FILE.md] [--build DIR] [--quick]
# env: ROUNDS (3), THREADS (2), N tokens per run (96), KS ("2 4 8"),
#      LINK_BW (20M)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="" build="build" quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "spec_assist.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
rounds=${ROUNDS:-3} threads=${THREADS:-2} n=${N:-96} ks=${KS:-2 4 8} link=${LINK_BW:-20M}
[ $quick = 1 ] && rounds=1 n=16 ks=4
sw=$root/$build/spillway
[ -x "$sw" ] || { echo "spec_assist.sh: no $sw (build first)" >&2; exit 2; }
data=$root/tests/data/tiny
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prompts=("Once upon a time there was a little fox who lived in a forest. The fox liked to run. Once upon a time"
         "one two three four five six seven eight nine ten, one two three four five six seven eight nine ten, one two"
         "the people of the water and the people of the hills met by the river")
declare -A plan=([cpu]="--backend cpu"
                 [streamed]="--backend sim --device-mem 1M --place all=streamed --sim-link-bw $link")
for r in $(seq 1 "$rounds"); do
  for pair in gemma4-kv gemma4-ple; do
    for be in cpu streamed; do
      for p in "${!prompts[@]}"; do
        base=(-m "$data/$pair.gguf" -p "${prompts[$p]}" -n "$n" --temp 0 -t "$threads" -c 256 ${plan[$be]})
        "$sw" run "${base[@]}" --report-json "$tmp/plain.json" >"$tmp/plain.txt" 2>/dev/null
        cp "$tmp/plain.json" "$tmp/$r-$pair-$be-$p-plain.json"
        for k in $ks; do
          j=$tmp/$r-$pair-$be-$p-$k.json
          "$sw" run "${base[@]}" -md "$data/$pair-assistant-hf" --draft-max "$k" \
               --report-json "$j" >"$tmp/out.txt" 2>/dev/null
          cmp -s "$tmp/plain.txt" "$tmp/out.txt" ||
            { echo "spec_assist.sh: $pair $be prompt $p k $k: output differs from plain" >&2; exit 1; }
        done
      done
    done
  done
  echo "round $r done" >&2
done
python3 - "$tmp" "$rounds" "$ks" "$link" "$n" "$out" <<'PY'
import json, os, statistics, sys, platform
tmp, rounds, ks, link, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4], sys.argv[5], sys.argv[6]
def load(path):
    with open(path) as f:
        return json.load(f)
cpu = "?"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
lines = ["# Gemma 4 assistants: tiny pairs, plain vs -md ASSISTANT (bench/spec_assist.sh)", "",
         "CPU: %s, %d vCPU; %d rounds interleaved, medians; %s tokens per run, greedy, three "
         "prompts; streamed: --backend sim --device-mem 1M --place all=streamed "
         "--sim-link-bw %s. Drafted output equal to plain in every run." % (cpu, os.cpu_count(), rounds, n, link), "",
         "| pair | plan | drafts | decode tok/s | vs plain | acceptance | tokens / verify |",
         "|---|---|---|---|---|---|---|"]
for pair in ("gemma4-kv", "gemma4-ple"):
    for be in ("cpu", "streamed"):
        base = []
        for r in range(1, rounds + 1):
            for p in range(3):
                base.append(load("%s/%d-%s-%s-%d-plain.json" % (tmp, r, pair, be, p))["decode_tokens_per_s"])
        b = statistics.median(base)
        lines.append("| %s | %s | none | %.0f | 1.00x | - | 1.00 |" % (pair, be, b))
        for k in ks:
            tps, acc, tpv = [], [], []
            for r in range(1, rounds + 1):
                for p in range(3):
                    s = load("%s/%d-%s-%s-%d-%s.json" % (tmp, r, pair, be, p, k)).get("speculative", {})
                    tps.append(s.get("decode_tokens_per_s", 0.0))
                    acc.append(s.get("acceptance_rate", 0.0))
                    tpv.append(s.get("tokens_per_verify", 0.0))
            m = statistics.median(tps)
            lines.append("| %s | %s | %s | %.0f | %.2fx | %.0f%% | %.2f |"
                         % (pair, be, k, m, m / b if b else 0, 100 * statistics.median(acc), statistics.median(tpv)))
text = "\n".join(lines) + "\n"
print(text)
if out:
    with open(out, "w") as f:
        f.write(text)
PY
