#!/usr/bin/env bash
# bench_pjrt_cpu.sh — prefill and decode tokens/s of `spillway run
# --backend pjrt` on XLA's CPU plugin against Spillway's own cpu backend,
# same machine, default model (Gemma 3 270M Q4_K_M), greedy:
#   cpu q4_k_m       --backend cpu (weights as stored)
#   cpu bf16         --backend cpu --weights bf16-dequant (the BF16 weights
#                    pjrt computes on)
#   pjrt resident    --backend pjrt --device-mem 2G (planner: every layer
#                    and the LM head on the device)
#   pjrt streamed    --backend pjrt --device-mem 480M
#                    --place all=streamed,lm_head=resident (all 18 layers
#                    cross the ring every forward; without the pins the
#                    planner, on default rates, keeps layers on the host
#                    rather than stream them, whatever the budget)
# Figures come from --report-json. pjrt compiles each program (prefill
# chunk shapes, the decode step) on first use, inside the timed prefill and
# decode, so besides the reported tok/s the script gives "steady" rates:
# every configuration runs twice per round, a short case (~70-token prompt,
# -n 8) and a long one (~530-token prompt, -n 96), and
#   steady = (tokens_long - tokens_short) / (seconds_long - seconds_short),
# which cancels the one-off compile (the same programs serve both).
# Runs are interleaved (round, configuration, case) and medians of REPS
# rounds reported. Not a test: machines are noisy.
#
# usage: bench/bench_pjrt_cpu.sh [--build DIR] [--reps N] [--out FILE.md]
#   THREADS=N (default 2) host threads (-t); SPILLWAY_PJRT_PLUGIN as for run;
#   BENCH_KEEP=1 keeps the raw JSON (the temporary folder is printed).
set -euo pipefail
build=build
reps=3
out=
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "bench_pjrt_cpu.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
threads=${THREADS:-2}
sw="$build/spillway"
[ -x "$sw" ] || { echo "bench_pjrt_cpu.sh: no $sw (build first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap '[ -n "${BENCH_KEEP:-}" ] && echo "kept $tmp" >&2 || rm -rf "$tmp"' EXIT

sentence='The history of the river valley is long and complicated. '
python3 -c "import sys; print(sys.argv[1] * 6)" "$sentence" >"$tmp/short.txt"
python3 -c "import sys; print(sys.argv[1] * 48)" "$sentence" >"$tmp/long.txt"
declare -A n_of=([short]=8 [long]=96)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
cfgs=(cpu_q4 cpu_bf16 pjrt_resident pjrt_streamed)
declare -A flags=(
  [cpu_q4]="--backend cpu"
  [cpu_bf16]="--backend cpu --weights bf16-dequant"
  [pjrt_resident]="--backend pjrt --device-mem 2G"
  [pjrt_streamed]="--backend pjrt --device-mem 480M --place all=streamed,lm_head=resident"
)

# The plans, once (what each pjrt configuration puts where).
for c in pjrt_resident pjrt_streamed; do
  # shellcheck disable=SC2086
  "$sw" plan ${flags[$c]} -t "$threads" >"$tmp/plan_$c.txt" 2>&1
  "$sw" plan ${flags[$c]} -t "$threads" --json >"$tmp/plan_$c.json" 2>/dev/null
done
"$sw" doctor --backend pjrt --json >"$tmp/doctor.json" 2>/dev/null || true

for rep in $(seq "$reps"); do
  for c in "${cfgs[@]}"; do
    for case in short long; do
      j="$tmp/r_${rep}_${c}_${case}.json"
      t0=$(date +%s.%N)
      # shellcheck disable=SC2086
      "$sw" run -f "$tmp/$case.txt" -n "${n_of[$case]}" --temp 0 -t "$threads" ${flags[$c]} \
        --report-json "$j" >"$tmp/o_${rep}_${c}_${case}.txt" 2>"$tmp/e_${rep}_${c}_${case}.txt"
      t1=$(date +%s.%N)
      echo "$rep $c $case $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')" >>"$tmp/runs"
      python3 - "$j" "$rep" "$c" "$case" "$t0" "$t1" >&2 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("round %s %-13s %-5s prefill %6.1f tok/s  decode %5.2f tok/s  wall %.1f s"
      % (sys.argv[2], sys.argv[3], sys.argv[4], d["prefill_tokens_per_s"],
         d["decode_tokens_per_s"], float(sys.argv[6]) - float(sys.argv[5])))
PY
    done
  done
done

python3 - "$tmp" "$reps" "$threads" "$sw" "$out" "$load0" <<'PY'
import datetime, glob, json, math, os, re, statistics, sys
tmp, reps, threads, sw, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
load0 = sys.argv[6]
cfgs = ["cpu_q4", "cpu_bf16", "pjrt_resident", "pjrt_streamed"]
label = {"cpu_q4": "cpu, Q4_K_M as stored", "cpu_bf16": "cpu, --weights bf16-dequant",
         "pjrt_resident": "pjrt, resident", "pjrt_streamed": "pjrt, streamed"}
flags = {"cpu_q4": "--backend cpu", "cpu_bf16": "--backend cpu --weights bf16-dequant",
         "pjrt_resident": "--backend pjrt --device-mem 2G",
         "pjrt_streamed": "--backend pjrt --device-mem 480M --place all=streamed,lm_head=resident"}
walls = {}
for line in open(os.path.join(tmp, "runs")):
    r, c, k, w = line.split()
    walls[(int(r), c, k)] = float(w)
R = {}
for r in range(1, reps + 1):
    for c in cfgs:
        for k in ("short", "long"):
            R[(r, c, k)] = json.load(open(os.path.join(tmp, "r_%d_%s_%s.json" % (r, c, k))))

def secs(d, what):
    n, tps = d["n_%s_tokens" % what], d["%s_tokens_per_s" % what]
    return n, (n / tps if tps > 0 else float("nan"))

def steady(r, c, what):
    ns, ts = secs(R[(r, c, "short")], what)
    nl, tl = secs(R[(r, c, "long")], what)
    return (nl - ns) / (tl - ts) if tl > ts else float("nan")

def med(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else float("nan")
def f1(x): return "%.1f" % x
def f2(x): return "%.2f" % x
rows = {}
for c in cfgs:
    L = [R[(r, c, "long")] for r in range(1, reps + 1)]
    rows[c] = dict(
        pf=[d["prefill_tokens_per_s"] for d in L], dc=[d["decode_tokens_per_s"] for d in L],
        pfs=[steady(r, c, "prefill") for r in range(1, reps + 1)],
        dcs=[steady(r, c, "decode") for r in range(1, reps + 1)],
        todev=[d["bytes_to_device"] for d in L],
        busy=[d["copy_busy_s"] for d in L], stall=[d["copy_stall_s"] for d in L],
        peak=L[0]["peak_device_bytes"], plan=L[0]["plan_device_bytes"],
        wall=[walls[(r, c, "long")] for r in range(1, reps + 1)])
base_s = med(rows["cpu_bf16"]["dcs"])
base_q = med(rows["cpu_q4"]["dcs"])

cpu = "?"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
flags_line = ""
for line in open("/proc/cpuinfo"):
    if line.startswith("flags"):
        fl = line.split()
        flags_line = ", ".join(x for x in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if x in fl)
        break
doc = {}
try:
    doc = json.load(open(os.path.join(tmp, "doctor.json")))
except Exception:
    pass
plugin = (doc.get("plugin") or {}).get("path", "?")
pkg = "?"
meta = glob.glob(os.path.join(os.path.dirname(os.path.dirname(plugin)),
                              os.path.basename(os.path.dirname(plugin)) + "-*.dist-info", "METADATA"))
if meta:
    kv = dict(l.split(": ", 1) for l in open(meta[0]).read().split("\n\n")[0].splitlines() if ": " in l)
    pkg = "%s %s" % (kv.get("Name", "?"), kv.get("Version", "?"))
load = open("/proc/loadavg").read().split()[:3]
def plan_line(c):
    t = open(os.path.join(tmp, "plan_%s.txt" % c)).read()
    m = re.search(r"^layers\s+(.*)$", t, re.M)
    h = re.search(r"^lm head\s+(.*)$", t, re.M)
    return "layers %s; lm head %s" % (m.group(1).strip() if m else "?", h.group(1).strip() if h else "?")
def mib(b): return "%.1f MiB" % (b / 1048576)

o = []
o.append("# PJRT backend on XLA's CPU plugin vs the cpu backend: prefill and decode tokens/s")
o.append("")
o.append("%s, %s (%s), %d cores, -t %s, default model (Gemma 3 270M Q4_K_M), greedy; "
         "plugin %s (%s, PJRT C API %s, platform %s %s); medians of %d interleaved rounds; "
         "load average %s at the start, %s at the end (other work on the machine)."
         % (datetime.date.today().isoformat(), cpu, flags_line or "-", os.cpu_count(), threads, pkg,
            plugin, (doc.get("plugin") or {}).get("api_version", "?"), doc.get("platform", "?"),
            doc.get("platform_version", ""), reps, load0, " ".join(load)))
o.append("")
o.append("Each round runs every configuration on a short case (%d-token prompt, `-n 8`) "
         "and a long one (%d-token prompt, `-n 96`). *reported* is `--report-json`'s "
         "tok/s of the long case, which on pjrt includes compiling each program on first "
         "use; *steady* is (long - short tokens) / (long - short seconds), which cancels "
         "that one-off cost (nan: the long case was not slower, noise). Ratios are of "
         "steady decode." % (R[(1, "cpu_bf16", "short")]["n_prefill_tokens"],
                              R[(1, "cpu_bf16", "long")]["n_prefill_tokens"]))
o.append("")
o.append("| configuration | prefill reported | prefill steady | decode reported | decode steady "
         "| vs cpu bf16 | vs cpu q4 | to device (long case) | copy busy / stalled (long case) "
         "| device peak / plan | wall, long case |")
o.append("|---|---|---|---|---|---|---|---|---|---|---|")
for c in cfgs:
    w = rows[c]
    pj = c.startswith("pjrt")
    o.append("| %s | %s | %s | %s | %s | %.2fx | %.2fx | %s | %s | %s | %s s |" % (
        label[c], f1(med(w["pf"])), f1(med(w["pfs"])), f2(med(w["dc"])), f2(med(w["dcs"])),
        med(w["dcs"]) / base_s, med(w["dcs"]) / base_q,
        "%.2f GiB" % (med(w["todev"]) / 2**30) if pj else "-",
        "%.2f / %.2f s" % (med(w["busy"]), med(w["stall"])) if pj else "-",
        "%s / %s" % (mib(w["peak"]), mib(w["plan"])) if pj else "-", f1(med(w["wall"]))))
o.append("")
o.append("Commands (PROMPT: `python3 -c \"print('%s' * 6)\"`, `* 48` for the long case):"
         % "The history of the river valley is long and complicated. ")
o.append("")
o.append("```")
for c in cfgs:
    o.append("%s run -f PROMPT -n 8|96 --temp 0 -t %s %s --report-json R.json" % (sw, threads, flags[c]))
o.append("```")
o.append("")
o.append("Plans (`spillway plan` with the same flags):")
o.append("")
for c in ("pjrt_resident", "pjrt_streamed"):
    o.append("- %s: %s" % (label[c], plan_line(c)))
# Same greedy text? (long case, first round, vs cpu bf16-dequant)
ref = open(os.path.join(tmp, "o_1_cpu_bf16_long.txt")).read()
same = [c for c in cfgs if open(os.path.join(tmp, "o_1_%s_long.txt" % c)).read() == ref]
o.append("")
o.append("Greedy text of the long case identical to cpu bf16-dequant's: %s."
         % "; ".join(label[c] for c in same))
o.append("")
o.append("Raw runs (round, configuration: prefill / decode tok/s reported, short case then long "
         "case; steady prefill / decode):")
o.append("")
o.append("```")
for r in range(1, reps + 1):
    for c in cfgs:
        s, l = R[(r, c, "short")], R[(r, c, "long")]
        o.append("round %d %-13s short %6.1f / %5.2f  long %6.1f / %5.2f  steady %6.1f / %5.2f" % (
            r, c, s["prefill_tokens_per_s"], s["decode_tokens_per_s"], l["prefill_tokens_per_s"],
            l["decode_tokens_per_s"], steady(r, c, "prefill"), steady(r, c, "decode")))
o.append("```")
text = "\n".join(o) + "\n"
sys.stdout.write(text)
if out:
    with open(out, "w") as f:
        f.write(text)
        f.write("\nGenerated by bench/bench_pjrt_cpu.sh --reps %d --out %s.\n" % (reps, out))
PY
