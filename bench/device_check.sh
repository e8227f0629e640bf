#!/usr/bin/env bash
# device_check.sh — the one prepared check of Spillway on a lent GPU
# machine (an H200 with CUDA 13, PyTorch, accelerate and JAX's CUDA PJRT
# plugin, no network), made to end within BUDGET_S seconds (default 400;
# each step gets what is left, capped, and is skipped, saying so, when too
# little is). In order of what matters most:
#   1. binaries: the carried build (--pack made it; default build-gpu) runs
#      there, else it is built there with cmake;
#   2. spillway doctor: the device, its free memory, and the measured
#      rates (pinned/pageable link, HBM copy, f32 compute), cached for the
#      planner the runs below use;
#   3. correctness: test_cuda_math and test_cuda_q8 (kernel math and the
#      integer decode path's dots on the CPU, issue 37), test_cuda_ops
#      (every op and weight type against the cpu kernels, memory, OOM
#      paths), test_cuda on the tiny Gemma 1/2/3 goldens (teacher-forced
#      argmax and logits against the cpu f32 path, plans bit-identical,
#      peak memory) and on a synthetic model of the default model's shape
#      in Q4_K (random ids; the real default model is 241 MiB, past the
#      64 MiB that travels); test_assist cuda (Gemma 4 assistants: drafter
#      logits against transformers', assisted generation's acceptance);
#      a split over two GPUs and two replicas, one per GPU (issue 39),
#      where two are visible;
#   4. speed, on synthetic models of official shapes (`spillway synth`):
#      resident decode at batch 1 against the HBM bound (weight bytes per
#      token / measured copy rate) — for Q4_K also with the f32 decode
#      kernels (SPILLWAY_CUDA_DOTS=f32) beside the integer path —, prefill, streamed decode with
#      --device-mem a quarter of the weights against streamed bytes / pinned
#      rate + resident bytes / HBM rate, the planner's choice between host
#      and streamed layers against the other one forced, and batched decode
#      over streamed weights at -np 16 against -np 1; each with the
#      planner's prediction beside it. Decode is run twice (short, long) so
#      steady = (n_long - n_short) / (t_long - t_short) drops start-up;
#   4b. speculative decoding's verify forward: W = 9 tokens against W = 1
#      on a synthetic Gemma 3 27B bf16 with a quarter on the device, and
#      the speed-up predicted at acceptance 0.6 and 0.8 (issue 36);
#   4d. the expert cache (issue 38): Gemma 4 26B-A4B Q4_K at 8 GiB, the
#      static split, the cache and cache + prefetch, against llama.cpp's
#      -ncmoe at the static plan's count (time permitting);
#   4c. the peer (issue 37): llama.cpp's llama-bench with its CUDA backend,
#      built there in the background while step 3 runs (gpu_peer_lib.sh,
#      from the source --pack carries), on the same synthetic files:
#      pp512 and tg128 resident (-ngl 99), and at the quarter budget with
#      a quarter of the layers (-ngl n_layer / 4); rows into
#      gpu_peer_<date>_<card>.json under $OUT;
#   5. PyTorch + accelerate on the same checkpoint and budget (device_map=
#      "auto", max_memory) when time is left, and bench/pjrt_gpu_check.sh
#      (the PJRT CUDA plugin) with what remains;
#   6. a short table, printed last; everything under $OUT (or
#      build-device-check-out/ when OUT is unset).
#
# usage: bash bench/device_check.sh [--dry-run] [--build DIR]
#        bash bench/device_check.sh --pack [DEST]
#   --dry-run  every step this machine can run (no GPU: the CUDA tests must
#              report "skipped", the speed steps say why they cannot run),
#              a small synthetic model; tests the script itself
#   --pack     build for sm_90 (Release, build-gpu-src/) and copy what the
#              device run needs into DEST (default build-gpu, ignored by
#              git): the binaries, stripped, and their non-system libraries;
#              then compress it into build-gpu-pack/ (~20 MB: a whole build
#              is over the 64 MiB that travels), which this script unpacks.
#              Then: run(command="bash bench/device_check.sh",
#              carry=["build-gpu-pack"], timeout_s=460)
#   BUDGET_S=N  seconds for the whole script; SHAPES="gemma2-9b ..." the
#   speed shapes (default: gemma3-270m q4_k, gemma2-9b bf16 and q4_k,
#   gemma3-12b q4_k, gemma3-27b q4_k as time allows); SYNTH_DIR=DIR.
# shellcheck disable=SC2046
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 2

# ---- --pack ----------------------------------------------------------------------------
if [ "${1:-}" = "--pack" ]; then
  dest=${2:-build-gpu}
  src=build-gpu-src
  cmake -S . -B "$src" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DSPILLWAY_CUDA=ON >/dev/null || exit 3
  cmake --build "$src" -j "$(nproc)" --target spillway_cli test_cuda test_cuda_ops \
        test_cuda_math test_cuda_q8 test_assist test_expert_cache >/dev/null ||
    { echo "pack: build failed" >&2; exit 3; }
  cmake --build "$src" -j "$(nproc)" --target test_pjrt >/dev/null 2>&1 || true
  rm -rf "$dest" && mkdir -p "$dest/tests" "$dest/lib" "$dest/include" || exit 3
  cp "$src/spillway" "$dest/" || exit 3
  for t in test_cuda test_cuda_ops test_cuda_math test_cuda_q8 test_assist test_expert_cache test_pjrt; do
    [ -x "$src/tests/$t" ] && cp "$src/tests/$t" "$dest/tests/"
  done
  strip "$dest/spillway" "$dest"/tests/* 2>/dev/null
  # every shared library but the C/C++ runtime, which the device image has
  for lib in $(ldd "$src/spillway" | awk '$3 ~ /^\// {print $3}'); do
    case $(basename "$lib") in
      libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*) ;;
      *) cp -L "$lib" "$dest/lib/" ;;
    esac
  done
  inc=$(sed -n 's/^SPILLWAY_PJRT_INCLUDE:[A-Z]*=//p' "$src/CMakeCache.txt" 2>/dev/null)
  [ -n "$inc" ] && [ -f "$inc/pjrt_c_api.h" ] && cp "$inc/pjrt_c_api.h" "$dest/include/"
  git -C "$here" rev-parse HEAD >"$dest/commit" 2>/dev/null
  git -C "$here" status --short >>"$dest/commit" 2>/dev/null
  # what travels: the folder compressed (the binaries' kernels shrink 3x),
  # and llama.cpp's source for the peer built there (gpu_peer_lib.sh)
  mkdir -p build-gpu-pack && tar -cJf "build-gpu-pack/$(basename "$dest").tar.xz" "$dest" || exit 3
  # shellcheck source=bench/gpu_peer_lib.sh
  . "$here/bench/gpu_peer_lib.sh" && peer_pack build-gpu-pack
  echo "packed $dest ($(du -sh "$dest" | cut -f1)) into build-gpu-pack/" \
       "($(du -sh build-gpu-pack | cut -f1)); then, with the device tool:"
  echo "  run(command=\"bash bench/device_check.sh\", carry=[\"build-gpu-pack\"], timeout_s=460)"
  exit 0
fi

dry=0
build=
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry=1; shift ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "device_check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

budget=${BUDGET_S:-$([ $dry = 1 ] && echo 300 || echo 400)}
outdir=${OUT:-$here/build-device-check-out}
synth_dir=${SYNTH_DIR:-/tmp/spillway-device-check}
# shellcheck source=bench/check_lib.sh
. "$here/bench/check_lib.sh"
# shellcheck source=bench/gpu_peer_lib.sh
. "$here/bench/gpu_peer_lib.sh"
check_init
py=python3
pj() { $py -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }

say "device_check: $([ $dry = 1 ] && echo "DRY RUN (no GPU expected)" || echo "GPU run")," \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ), budget $budget s, out $outdir"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
    "$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
gpu_line=$(nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version,clocks.sm,clocks.mem \
           --format=csv,noheader 2>/dev/null)
say "gpu: ${gpu_line:-none visible (nvidia-smi)}"
put gpu "${gpu_line:-none}"

# ---- 1. binaries -------------------------------------------------------------------------
if [ ! -x build-gpu/spillway ] && [ -f build-gpu-pack/build-gpu.tar.xz ]; then
  tar -xJf build-gpu-pack/build-gpu.tar.xz && say "binaries: unpacked build-gpu-pack/build-gpu.tar.xz"
fi
if [ -z "$build" ]; then
  if [ $dry = 1 ]; then build=build; elif [ -x build-gpu/spillway ]; then build=build-gpu; else build=build; fi
fi
case $build in /*) ;; *) build=$here/$build ;; esac
[ -d "$build/lib" ] && export LD_LIBRARY_PATH="$build/lib:${LD_LIBRARY_PATH:-}"
sw="$build/spillway"
if [ -x "$sw" ] && "$sw" version >>"$log" 2>&1 && [ -x "$build/tests/test_cuda_ops" ]; then
  say "binaries: $build ($(cat "$build/commit" 2>/dev/null | head -1))"
else
  say "binaries: $build does not run here; building (Release, sm_90)"
  ldd "$sw" >>"$log" 2>&1
  build=$here/build-device-check
  sw="$build/spillway"
  step cmake_configure 90 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_CUDA_ARCHITECTURES=90 &&
  step cmake_build 240 cmake --build "$build" -j "$(nproc)" --target spillway_cli test_cuda \
       test_cuda_ops test_cuda_math test_cuda_q8 test_assist test_expert_cache ||
    say "binaries: build FAILED (raw/cmake_*.log)"
fi
put build "$build"
if ! [ -x "$sw" ]; then
  say "no spillway binary: nothing more can run"
  exit 1
fi

# ---- 2. doctor -----------------------------------------------------------------------------
step doctor 90 "$sw" doctor --json
cp "$raw/doctor.log" "$raw/doctor.json" 2>/dev/null
eval "$($py - "$raw/doctor.json" <<'PY' 2>>"$log"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("dev_status=%r" % ("doctor gave no JSON: %s" % e)); sys.exit()
r = d.get("rates", {})
devs = d.get("devices", {})
print("dev_status=%r" % devs.get("status", "?"))
print("dev_msg=%r" % (devs.get("message") or ""))
print("hbm=%r pinned=%r pageable=%r host_bw=%r" % (r.get("device_mem_Bps", 0), r.get("h2d_pinned_Bps", 0),
      r.get("h2d_pageable_Bps", 0), r.get("host_mem_Bps", 0)))
lst = devs.get("list") or [{}]
print("dev_name=%r" % lst[0].get("name", ""))
PY
)"
say "doctor: device ${dev_status:-?} ${dev_name:-} ${dev_msg:-}"
say "rates: HBM copy $(awk -v r="${hbm:-0}" 'BEGIN {printf "%.0f", r / 1e9}') GB/s (read + written)," \
    "h2d pinned $(awk -v r="${pinned:-0}" 'BEGIN {printf "%.1f", r / 1e9}') GB/s," \
    "pageable $(awk -v r="${pageable:-0}" 'BEGIN {printf "%.1f", r / 1e9}') GB/s," \
    "host memory $(awk -v r="${host_bw:-0}" 'BEGIN {printf "%.1f", r / 1e9}') GB/s"
put hbm_Bps "${hbm:-0}"; put pinned_Bps "${pinned:-0}"; put pageable_Bps "${pageable:-0}"
put host_Bps "${host_bw:-0}"; put device "${dev_name:-none}"
have_gpu=0
[ "${dev_status:-}" = ok ] && have_gpu=1
# llama.cpp's CUDA llama-bench builds on the machine's other cores while
# the correctness steps run (issue 37's peer)
peer_build_start

# ---- 3. correctness ------------------------------------------------------------------------
step test_cuda_math 60 "$build/tests/test_cuda_math"
put test.math "$(verdict "$(get test_cuda_math.rc)")"
step test_cuda_q8 60 "$build/tests/test_cuda_q8"
put test.q8 "$(verdict "$(get test_cuda_q8.rc)")"
step test_cuda_ops 120 "$build/tests/test_cuda_ops"
put test.ops "$(verdict "$(get test_cuda_ops.rc)")"
say "test_cuda_math: $(get test.math); test_cuda_q8: $(get test.q8); test_cuda_ops: $(get test.ops)" \
    "($(grep -m1 -E 'checks' "$raw/test_cuda_ops.log" || true))"
for a in gemma3 gemma4-moe gemma4-ple gemma4-kv gemma2 gemma1; do
  step "test_cuda_$a" 90 "$build/tests/test_cuda" "tests/data/golden/$a.swgold" "tests/data/tiny/$a.gguf"
  put "test.$a" "$(verdict "$(get "test_cuda_$a.rc")")"
  say "test_cuda $a: $(get "test.$a") ($(grep -m1 -E '^test_cuda: [0-9]+ checks' "$raw/test_cuda_$a.log" || echo 'no summary'))"
done
grep -hE 'argmax agrees|bit-identical|device peak|greedy' "$raw"/test_cuda_gemma*.log 2>/dev/null |
  sed 's/^/  /' >>"$log"
# Gemma 4 assistants (issue 36) on the GPU: drafter logits against transformers'
# and assisted generation's rounds and acceptance, on the two tiny pairs
step test_assist_cuda 90 "$build/tests/test_assist" cuda
put test.assist "$(verdict "$(get test_assist_cuda.rc)")"
say "test_assist cuda: $(get test.assist) ($(grep -m1 -E 'checks|skipped' "$raw/test_assist_cuda.log" || echo 'no summary'))"
grep -hE 'drafter logits|assisted generation' "$raw/test_assist_cuda.log" 2>/dev/null | sed 's/^/  /' >>"$log"
# the expert cache (issue 38) on the GPU: the cached kernel against the
# experts computed on the host, same greedy tokens, logits within 2^-8
step test_expert_cache_cuda 90 "$build/tests/test_expert_cache" tests/data/tiny/gemma4-moe.gguf --cuda
put test.xcache "$(verdict "$(get test_expert_cache_cuda.rc)")"
say "test_expert_cache cuda: $(get test.xcache) ($(grep -m1 -E 'checks|skipped' "$raw/test_expert_cache_cuda.log" || echo 'no summary'))"
# a split over two GPUs (issue 39): one CUDA engine per device, each on its
# own context and within its budget, the same greedy text as one GPU; only
# where two are visible (the lent machines have one)
n_gpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
split_args=(-m tests/data/tiny/gemma3.gguf -p "The river" -n 16 --temp 0 -c 128)
if [ "${n_gpu:-0}" -ge 2 ]; then
  step split_one 60 "$sw" run --backend cuda "${split_args[@]}"
  step split_two 60 "$sw" run --backend cuda --device-mem 1G,1G --report "${split_args[@]}"
  gen_text() { grep -v -E 'tok/s|MiB|^note|^report|^spillway|^load' "$1"; }
  if [ "$(get split_one.rc)" = 0 ] && [ "$(get split_two.rc)" = 0 ] &&
     cmp -s <(gen_text "$raw/split_one.log") <(gen_text "$raw/split_two.log"); then
    put test.split "ok (same text on 2 GPUs as on 1; device 1's input $(grep -o 'its input [a-z ]*' "$raw/split_two.log" | head -n 1 | cut -d' ' -f3-))"
  else
    put test.split "FAILED (text differs, or a run failed)"
  fi
  grep -E '^  device [0-9]' "$raw/split_two.log" 2>/dev/null | sed 's/^/  /' >>"$log"
  # two replicas, one per GPU (replica i on cuda:i): batch's texts are run's
  printf '{"id":"a","prompt":"The river"}\n{"id":"b","prompt":"One two three"}\n' >"$raw/rep.jsonl"
  step replicas_two 90 "$sw" batch --backend cuda --replicas 2 -m tests/data/tiny/gemma3.gguf \
    -n 16 --temp 0 -c 128 -f "$raw/rep.jsonl" -o "$raw/rep_out.jsonl"
  step replicas_one 60 "$sw" run --backend cuda -m tests/data/tiny/gemma3.gguf -p "One two three" \
    -n 16 --temp 0 -c 128
  if [ "$(get replicas_two.rc)" = 0 ] && python3 -c 'import json,sys
got = {r["id"]: r["text"] for r in map(json.loads, open(sys.argv[1]))}
sys.exit(0 if got.get("b") and got["b"] in open(sys.argv[2]).read() else 1)' \
       "$raw/rep_out.jsonl" "$raw/replicas_one.log"; then
    put test.replicas "ok (2 replicas on 2 GPUs; run's text)"
  else
    put test.replicas "FAILED (a replica failed, or its text differs from run's)"
  fi
else
  put test.split "skipped (${n_gpu:-0} GPU visible; a split needs 2)"
  put test.replicas "skipped (${n_gpu:-0} GPU visible; one replica per GPU)"
fi
say "split over 2 GPUs: $(get test.split)"
say "replicas on 2 GPUs: $(get test.replicas)"

# ---- 4. speed ----------------------------------------------------------------------------
peer_wait
mkdir -p "$synth_dir"
prompt="The river valley and the old stone bridge"
long_prompt="$work/long_prompt.txt"
for i in $(seq 1 6); do printf '%s ' "In the year $i the river rose over the old stone bridge, and the village council met to decide"; done >"$long_prompt"
ctx=2048

# synth SHAPE TYPE [CAP]: the model's path on stdout (written once), or
# nothing; the step's own lines go to stderr.
synth() {
  local m="$synth_dir/$1-$2.gguf" cap=${3:-120}
  if [ ! -f "$m" ]; then
    step "synth_$1_$2" "$cap" "$sw" synth --shape "$1" --type "$2" -o "$m" --force -q >&2 ||
      { rm -f "$m"; return 1; }
  fi
  echo "$m"
}
# plan_bytes MODEL PLANARGS...: "resident streamed host lm lm_place" bytes per token
plan_bytes() {
  local m=$1; shift
  "$sw" plan -m "$m" -c $ctx "$@" --json 2>>"$log" | $py -c '
import json, sys
d = json.load(sys.stdin)
by = {"resident": 0, "streamed": 0, "host": 0}
for x in d["layers"]:
    by[x["place"]] = by.get(x["place"], 0) + x["bytes"]
lm = d["model"]["output_bytes"]
p = d["lm_head"]
by["resident" if p in ("resident", "device") else "host"] += lm
pr = d.get("predictions", {})
print(by["resident"], by["streamed"], by["host"], p, pr.get("decode_tokens_per_s", 0), pr.get("prefill_tokens_per_s", 0))
' 2>>"$log"
}
# decode NAME MODEL NSHORT NLONG RUNARGS...: two runs, steady tok/s into results
decode() {
  local name=$1 m=$2 ns=$3 nl=$4; shift 4
  step "${name}_short" 120 "$sw" run -m "$m" -c $ctx -p "$prompt" -n "$ns" --temp 0 \
       --report-json "$raw/${name}_short.json" "$@" || { say "$name: short run failed: $(tail -2 "$raw/${name}_short.log" | tr '\n' ' ')"; return 1; }
  step "${name}_long" 150 "$sw" run -m "$m" -c $ctx -p "$prompt" -n "$nl" --temp 0 \
       --report-json "$raw/${name}_long.json" "$@" || { say "$name: long run failed: $(tail -2 "$raw/${name}_long.log" | tr '\n' ' ')"; return 1; }
  local steady
  steady=$($py - "$raw/${name}_short.json" "$raw/${name}_long.json" <<'PY' 2>>"$log"
import json, sys
s, l = (json.load(open(p)) for p in sys.argv[1:3])
ns, nl = s["n_decode_tokens"], l["n_decode_tokens"]
ts = ns / s["decode_tokens_per_s"] if s["decode_tokens_per_s"] > 0 else 0
tl = nl / l["decode_tokens_per_s"] if l["decode_tokens_per_s"] > 0 else 0
print((nl - ns) / (tl - ts) if tl > ts and nl > ns else l["decode_tokens_per_s"])
PY
)
  put "$name.steady" "${steady:-nan}"
  put "$name.pred" "$(pj "$raw/${name}_long.json" 'd["predicted_decode_tokens_per_s"]')"
  put "$name.peak" "$(pj "$raw/${name}_long.json" 'd["peak_device_bytes"]')"
  put "$name.driver_peak" "$(pj "$raw/${name}_long.json" 'd.get("peak_device_driver_bytes", 0)')"
  put "$name.plan_dev" "$(pj "$raw/${name}_long.json" 'd["plan_device_bytes"]')"
  say "$name: steady decode $(awk -v r="${steady:-0}" 'BEGIN {printf "%.1f", r}') tok/s" \
      "(predicted $(awk -v r="$(get "$name.pred")" 'BEGIN {printf "%.1f", r}'))"
}
# prefill NAME MODEL RUNARGS...: a ~600-token prompt, one token out
prefill() {
  local name=$1 m=$2; shift 2
  step "$name" 120 "$sw" run -m "$m" -c $ctx -b 512 -f "$long_prompt" -n 1 --temp 0 \
       --report-json "$raw/$name.json" "$@" || return 1
  put "$name.tps" "$(pj "$raw/$name.json" 'd["prefill_tokens_per_s"]')"
  put "$name.pred" "$(pj "$raw/$name.json" 'd["predicted_prefill_tokens_per_s"]')"
  say "$name: prefill $(get "$name.tps") tok/s (predicted $(get "$name.pred"))"
}

# PyTorch + accelerate on the same checkpoint (a Hugging Face folder of
# Gemma 2 2B in bf16) and budget (a quarter of the weights on the GPU,
# device_map="auto" offloading the rest), beside spillway's own plan.
run_accelerate() {
  [ "$(left)" -gt 150 ] && [ -z "${SKIP_ACCELERATE:-}" ] || { say "accelerate: skipped (time)"; return; }
  hf="$synth_dir/gemma2-2b-hf"
  if step synth_hf 90 "$sw" synth --shape gemma2-2b --type bf16 --format hf -o "$hf" --force -q; then
    wts=$("$sw" plan -m "$hf" --backend sim --device-mem 1T --json 2>>"$log" | $py -c \
          'import json,sys; print(json.load(sys.stdin)["model"]["weights_bytes"])')
    q=$(( wts / 4 ))
    cat >"$work/acc.py" <<'PY'
import json, sys, time, torch
from transformers import AutoModelForCausalLM
path, budget, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
m = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16, device_map="auto",
                                         max_memory={0: budget, "cpu": 100 << 30})
ids = torch.randint(10, 1000, (1, 9)).to(0)
def gen(n):
    torch.cuda.synchronize(); t = time.perf_counter()
    m.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False)
    torch.cuda.synchronize(); return time.perf_counter() - t
gen(2)
a, b = gen(4), gen(12)
json.dump({"steady_tok_s": 8 / (b - a) if b > a else 0, "t4": a, "t12": b,
           "peak_cuda_bytes": torch.cuda.max_memory_allocated()}, open(out, "w"))
PY
    step accelerate 150 $py "$work/acc.py" "$hf" "$q" "$raw/accelerate.json"
    put accelerate.tps "$(pj "$raw/accelerate.json" 'd["steady_tok_s"]')"
    decode g2b_quarter "$hf" 4 12 "${dev[@]}" --device-mem "$(( q / 1048576 ))M"
    say "gemma2-2b bf16 (hf), device budget a quarter ($(( q / 1048576 )) MiB): accelerate" \
        "$(get accelerate.tps) tok/s, spillway $(get g2b_quarter.steady) tok/s"
  fi
  rm -rf "$hf"
}

# The dry run exercises the same steps on the simulated device (a small
# model, the host's speed), so the script itself is tested.
if [ $have_gpu = 1 ]; then
  dev=(--backend cuda); res_mem=(); shapes=${SHAPES:-gemma2-9b:bf16 gemma2-9b:q4_k gemma3-12b:q4_k gemma3-27b:q4_k gemma3-12b:bf16}
  quarter_key=gemma2-9b_bf16
else
  say "speed: no CUDA device (${dev_msg:-doctor found none}): the dry run uses the simulated device"
  dev=(--backend sim); res_mem=(--device-mem 4G); shapes=${SHAPES:-gemma3-270m:bf16}
  quarter_key=gemma3-270m_bf16
fi
# the default model's shape with Q4_K (and Q8_0 where rows are 640) through
# the test (random ids), then its speed
m270=$(synth gemma3-270m q4_k 60)
if [ -n "$m270" ]; then
  step test_cuda_synth 90 "$build/tests/test_cuda" --ids 96 "$m270"
  put test.synth "$(verdict "$(get test_cuda_synth.rc)")"
  say "test_cuda gemma3-270m-shaped q4_k: $(get test.synth)"
  read -r rb sb hb lmp pd pp <<<"$(plan_bytes "$m270" "${dev[@]}" "${res_mem[@]}" --place all=resident,lm_head=resident)"
  put gemma3-270m_q4_k.res_bytes "$rb"
  decode gemma3-270m_q4_k "$m270" 8 $([ $have_gpu = 1 ] && echo 200 || echo 24) "${dev[@]}" "${res_mem[@]}" \
         --place all=resident,lm_head=resident
  SPILLWAY_CUDA_DOTS=f32 decode gemma3-270m_q4_k_f32dots "$m270" 8 $([ $have_gpu = 1 ] && echo 200 || echo 24) \
         "${dev[@]}" "${res_mem[@]}" --place all=resident,lm_head=resident
  prefill gemma3-270m_q4_k_prefill "$m270" "${dev[@]}" "${res_mem[@]}" --place all=resident,lm_head=resident
  peer_bench gemma3-270m_q4_k "$m270"
fi
for spec in $shapes; do
  shape=${spec%%:*}; type=${spec##*:}; key="${shape}_$type"
  [ "$(left)" -lt 60 ] && { say "$key: skipped: out of time"; continue; }
  m=$(synth "$shape" "$type" 150) || { say "$key: synth failed or out of time"; continue; }
  [ -n "$m" ] || continue
  read -r rb sb hb lmp pd pp <<<"$(plan_bytes "$m" "${dev[@]}" "${res_mem[@]}" --place all=resident,lm_head=resident)"
  put "$key.res_bytes" "$rb"
  decode "$key" "$m" 4 $([ $have_gpu = 1 ] && echo 48 || echo 12) "${dev[@]}" "${res_mem[@]}" \
         --place all=resident,lm_head=resident
  # the integer decode path (issue 37) against the f32 kernels it replaced
  [ "$type" = q4_k ] && [ "$(left)" -gt 90 ] &&
    SPILLWAY_CUDA_DOTS=f32 decode "${key}_f32dots" "$m" 4 $([ $have_gpu = 1 ] && echo 48 || echo 12) \
           "${dev[@]}" "${res_mem[@]}" --place all=resident,lm_head=resident
  prefill "${key}_prefill" "$m" "${dev[@]}" "${res_mem[@]}" --place all=resident,lm_head=resident
  peer_bench "$key" "$m"
  if [ "$key" = "$quarter_key" ] && [ $have_gpu = 1 ]; then
    # the prefill kernels' other modes: one TF32 product, and f32 SIMT
    for mode in tf32 simt; do
      SPILLWAY_CUDA_GEMM=$mode prefill "${key}_prefill_$mode" "$m" "${dev[@]}" --place all=resident,lm_head=resident
    done
  fi
  if [ "$key" = "$quarter_key" ]; then
    # a quarter of the weights on the device: the planner's plan, then the
    # other of host/streamed forced for the layers it did not keep resident
    wts=$("$sw" plan -m "$m" --backend sim --device-mem 1T --json 2>>"$log" | $py -c \
          'import json,sys; print(json.load(sys.stdin)["model"]["weights_bytes"])')
    q="$(( wts / 4 / 1048576 ))M"
    put quarter "$q"
    put quarter.key "$key"
    "$sw" plan -m "$m" -c $ctx "${dev[@]}" --device-mem "$q" >"$raw/plan_quarter.txt" 2>&1
    "$sw" plan -m "$m" -c $ctx "${dev[@]}" --device-mem "$q" --json >"$raw/plan_quarter.json" 2>>"$log"
    read -r rb sb hb lmp pd pp <<<"$(plan_bytes "$m" "${dev[@]}" --device-mem "$q")"
    put quarter.bytes "$rb $sb $hb $lmp"
    say "quarter budget $q: planner keeps $(awk -v b="$rb" 'BEGIN {printf "%.2f GB", b / 1e9}') resident," \
        "streams $(awk -v b="$sb" 'BEGIN {printf "%.2f GB", b / 1e9}'), host $(awk -v b="$hb" 'BEGIN {printf "%.2f GB", b / 1e9}')"
    decode quarter_planner "$m" 2 6 "${dev[@]}" --device-mem "$q"
    # llama.cpp at the same budget: the layers that fit in a quarter of the
    # weights (-ngl n_layer / 4; its output matrix and KV ride along)
    nl=$(pj "$raw/plan_quarter.json" 'len(d["layers"])')
    [ -n "$nl" ] && peer_bench quarter_planner "$m" -ngl $(( nl / 4 ))
    alt=$($py - "$raw/plan_quarter.json" <<'PY' 2>>"$log"
import json, sys
d = json.load(open(sys.argv[1]))
places = [x["place"] for x in d["layers"]]
other = "host" if "streamed" in places else "streamed"
# the layers the planner did not keep resident, pinned to the other choice;
# the planner then decides again how many of the rest fit on the device
spec = ",".join("%d=%s" % (i, other) for i, p in enumerate(places) if p != "resident")
print(spec or "all=" + other, other)
PY
)
    read -r altspec altname <<<"$alt"
    put quarter.alt "$altname"
    [ -n "$altspec" ] && decode "quarter_$altname" "$m" 2 4 "${dev[@]}" --device-mem "$q" --place "$altspec"
    # batched decode over streamed weights: -np 1 and -np 16, same plan
    # shape, 32 tokens each so that decode forwards dominate the prefill one
    for np in 1 16; do
      for i in $(seq 1 "$np"); do echo "{\"id\": $i, \"prompt\": \"$prompt number $i\", \"n_predict\": 32}"; done >"$work/np$np.jsonl"
      step "batch_np$np" 120 "$sw" batch -m "$m" -c 128 --kv-type f16 -np "$np" -f "$work/np$np.jsonl" --temp 0 \
           "${dev[@]}" --device-mem "$q" --place all=streamed \
           --report-json "$raw/batch_np$np.json" -o "$raw/batch_np$np.out"
      put "batch_np$np.tps" "$(pj "$raw/batch_np$np.json" 'd["decode_tokens_per_s"]')"
      put "batch_np$np.overall" "$(sed -n 's/.* in \([0-9.]*\) s: \([0-9.]*\) tok\/s generated overall.*/\2/p' "$raw/batch_np$np.log" | tail -1)"
    done
    say "batched streamed decode: -np 1 $(get batch_np1.tps) tok/s, -np 16 $(get batch_np16.tps) tok/s" \
        "(generated overall: $(get batch_np1.overall), $(get batch_np16.overall))"
    [ $have_gpu = 1 ] && run_accelerate
  fi
  rm -f "$m"
done

# ---- 4b. speculative decoding (issue 36): the verify forward's cost --------------------------
# A forward of W = 1 and W = 9 tokens (8 drafts behind the last token) over
# a model with a quarter of its weights on the device: a W-token prompt with
# -b W is one such forward. The goal: W = 9 costs <= 1.3x W = 1. With the
# drafter's per-token time (the 270M's steady decode above), the speed-up
# predicted at acceptance a and 8 drafts: E(a) * t1 / (t9 + 8 * t_draft),
# E(a) = (1 - a^9) / (1 - a) tokens per verify.
spec_widths() {
  local spec key m q
  spec=${SPEC_SHAPE:-$([ $have_gpu = 1 ] && echo gemma3-27b:bf16 || echo gemma3-270m:bf16)}
  key="spec_${spec%%:*}_${spec##*:}"
  [ "$(left)" -gt $([ $have_gpu = 1 ] && echo 150 || echo 45) ] ||
    { say "$key: skipped: out of time"; return; }
  m=$(synth "${spec%%:*}" "${spec##*:}" 240) || { say "$key: synth failed or out of time"; return; }
  [ -n "$m" ] || return
  q="$(( $("$sw" plan -m "$m" --backend sim --device-mem 1T --json 2>>"$log" | $py -c \
          'import json,sys; print(json.load(sys.stdin)["model"]["weights_bytes"])') / 4 / 1048576 ))M"
  for w in 1 9; do
    $py -c "import sys; print(' '.join(['word'] * int(sys.argv[1])))" $(( w > 1 ? w - 1 : 1 )) >"$work/w$w.txt"
    step "${key}_w$w" 150 "$sw" run -m "$m" -c 256 -b 16 -f "$work/w$w.txt" -n 1 --temp 0 \
         "${dev[@]}" --device-mem "$q" --report-json "$raw/${key}_w$w.json" ||
      { say "$key: width $w failed"; rm -f "$m"; return; }
    put "$key.w$w" "$(pj "$raw/${key}_w$w.json" 'd["n_prefill_tokens"] / d["prefill_tokens_per_s"] if d["prefill_tokens_per_s"] > 0 else 0')"
  done
  rm -f "$m"
  $py - "$(get "$key.w1")" "$(get "$key.w9")" "$(get gemma3-270m_q4_k.steady)" <<'PY' 2>>"$log" | tee -a "$log"
import sys
t1, t9 = float(sys.argv[1] or 0), float(sys.argv[2] or 0)
try:
    td = 1.0 / float(sys.argv[3])
except (ValueError, ZeroDivisionError):
    td = 0.0
if t1 <= 0 or t9 <= 0:
    print("speculative verify: widths not measured")
    sys.exit(0)
line = "speculative verify: width 9 costs %.2fx width 1 (%.3f s vs %.3f s; goal <= 1.3x)" % (t9 / t1, t9, t1)
for a in (0.6, 0.8):
    e = (1 - a ** 9) / (1 - a)
    line += "; predicted speed-up at acceptance %.1f: %.2fx" % (a, e * t1 / (t9 + 8 * td))
print(line + ("" if td else " (no drafter time: n-gram drafts)"))
PY
}
spec_widths

# ---- 4d. the expert cache (issue 38): Gemma 4 26B-A4B at 8 GiB ------------------------------
# The static split (the planner's experts on the host), the cache, and the
# cache with prefetch, against llama.cpp with as many layers' experts on
# the CPU (-ncmoe) as Spillway's static plan puts on the host. Random
# weights route almost uniformly: the hit rates are not real ones.
moe_cache() {
  local m nh v
  [ $have_gpu = 1 ] && [ "$(left)" -gt 240 ] && [ -z "${SKIP_MOE:-}" ] ||
    { say "moe cache: skipped ($([ $have_gpu = 1 ] && echo time || echo 'no GPU'))"; return; }
  m=$(synth gemma4-26b-a4b q4_k 200) || { say "moe cache: synth failed or out of time"; return; }
  [ -n "$m" ] || return
  "$sw" plan -m "$m" -c $ctx "${dev[@]}" --device-mem 8G --json >"$raw/plan_moe.json" 2>>"$log"
  nh=$(pj "$raw/plan_moe.json" 'sum(1 for x in d["layers"] if x.get("experts") == "host")')
  for v in static cache prefetch; do
    case $v in
      static) set -- ;;
      cache) set -- --expert-cache auto ;;
      prefetch) set -- --expert-cache auto --expert-prefetch on ;;
    esac
    decode "moe_$v" "$m" 2 8 "${dev[@]}" --device-mem 8G "$@"
    put "moe_$v.hit_rate" "$(pj "$raw/moe_${v}_long.json" '(lambda x: x["hits"] / max(x["needed"], 1))(d.get("expert_cache", {"hits": 0, "needed": 0}))')"
    # where the copies came from: the mapping registered, or pinned staging
    put "moe_$v.copy" "$(pj "$raw/moe_${v}_long.json" 'd.get("expert_cache", {}).get("copy_source", "-")')"
  done
  [ -n "$nh" ] && peer_bench moe_ncmoe "$m" -ngl 99 -ncmoe "$nh"
  say "gemma4-26b-a4b q4_k at 8G: static $(get moe_static.steady), cache $(get moe_cache.steady)" \
      "(hits $(get moe_cache.hit_rate), copies $(get moe_cache.copy)), cache + prefetch $(get moe_prefetch.steady) tok/s" \
      "(hits $(get moe_prefetch.hit_rate)); llama.cpp -ncmoe ${nh:-?}: $(get moe_ncmoe.llama_tg) tok/s"
  rm -f "$m"
}
moe_cache

# ---- 5. peers: PJRT (accelerate ran beside the 9B above) --------------------------------------------------------------
if [ $have_gpu = 1 ] && [ "$(left)" -gt 90 ] && [ -z "${SKIP_PJRT:-}" ]; then
  step pjrt_check $(( $(left) - 20 )) env BUDGET_S=$(( $(left) - 25 )) TESTS_S=60 \
       bash bench/pjrt_gpu_check.sh --build "$build" --shape gemma3-1b
  tail -n 12 "$raw/pjrt_check.log" | sed 's/^/  [pjrt] /' | tee -a "$log"
fi

# ---- 6. the table --------------------------------------------------------------------------------
say "total $(( $(date +%s) - t_start )) s"
$py - "$res" "$outdir" "$dry" <<'PY' 2>>"$log" | tee -a "$log"
import json, math, os, sys
res, outdir, dry = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
R = {}
for line in open(res):
    k, _, v = line.rstrip("\n").partition("\t")
    R[k] = v
def num(k):
    try: return float(R.get(k, "nan"))
    except ValueError: return float("nan")
G = 1e9
hbm, pin = num("hbm_Bps"), num("pinned_Bps")
o = ["", "== device check%s: %s" % (" (DRY RUN)" if dry else "", R.get("gpu", "?"))]
o.append("correctness: math %s | q8 dots %s | ops %s | gemma3 %s | gemma2 %s | gemma1 %s | 270m-shape q4_k %s"
         " | gemma4 assistants %s | expert cache %s | split over 2 GPUs %s | replicas on 2 GPUs %s"
         % tuple(R.get(k, "not run") for k in ("test.math", "test.q8", "test.ops", "test.gemma3", "test.gemma2",
                                               "test.gemma1", "test.synth", "test.assist", "test.xcache",
                                               "test.split", "test.replicas")))
o.append("rates (doctor): HBM copy %.0f GB/s, h2d pinned %.1f GB/s, pageable %.1f GB/s, host %.1f GB/s"
         % (hbm / G, pin / G, num("pageable_Bps") / G, num("host_Bps") / G))
rows = [("model", "decode tok/s", "HBM bound", "of bound", "predicted", "prefill tok/s", "peak / plan MiB")]
for key in sorted({k[:-len(".res_bytes")] for k in R if k.endswith(".res_bytes")}):
    if key + ".steady" not in R:
        continue
    b = num(key + ".res_bytes")
    bound = hbm / b if b > 0 else float("nan")
    st = num(key + ".steady")
    rows.append((key, "%.1f" % st, "%.1f" % bound, "%.0f%%" % (100 * st / bound) if bound > 0 else "-",
                 "%.1f" % num(key + ".pred"), "%.0f (pred %.0f)" % (num(key + "_prefill.tps"), num(key + "_prefill.pred")),
                 "%.0f / %.0f (driver %.0f)" % (num(key + ".peak") / 2**20, num(key + ".plan_dev") / 2**20,
                                                num(key + ".driver_peak") / 2**20)))
w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
for r in rows:
    o.append(" | ".join(c.ljust(w[i]) for i, c in enumerate(r)))
for key in sorted(k[:-len("_f32dots.steady")] for k in R if k.endswith("_f32dots.steady")):
    a, b = num(key + ".steady"), num(key + "_f32dots.steady")
    o.append("%s decode: integer path %.1f tok/s, f32 kernels %.1f tok/s (%.2fx)%s"
             % (key, a, b, a / b if b > 0 else float("nan"),
                " (DRY RUN: the sim ignores SPILLWAY_CUDA_DOTS: the two are the same run, noise)"
                if dry else ""))
if "quarter_planner.steady" in R:
    rb, sb, hb, lm = (R.get("quarter.bytes", "0 0 0 ?").split() + ["?"])[:4]
    rb, sb, hb = float(rb), float(sb), float(hb)
    bound = 1 / (sb / pin + rb / hbm + hb / max(num("host_Bps"), 1)) if sb + rb > 0 else float("nan")
    st = num("quarter_planner.steady")
    o.append("%s, --device-mem %s: planner's plan (%.2f GB resident, %.2f GB streamed, %.2f GB host) "
             "%.2f tok/s, predicted %.2f; link+HBM bound %.2f tok/s (%.0f%%)"
             % (R.get("quarter.key"), R.get("quarter"), rb / G, sb / G, hb / G, st, num("quarter_planner.pred"),
                bound, 100 * st / bound))
    alt = R.get("quarter.alt", "?")
    o.append("  the other choice (%s layers forced): %.2f tok/s, predicted %.2f"
             % (alt, num("quarter_%s.steady" % alt), num("quarter_%s.pred" % alt)))
if "batch_np1.tps" in R:
    a, b = num("batch_np1.tps"), num("batch_np16.tps")
    o.append("batched decode over streamed weights: -np 1 %.2f tok/s, -np 16 %.2f tok/s aggregate (%.1fx); "
             "generated overall %.2f and %.2f tok/s" % (a, b, b / a if a > 0 else float("nan"),
                                                         num("batch_np1.overall"), num("batch_np16.overall")))
k = R.get("quarter.key", "")
if k + "_prefill_tf32.tps" in R:
    o.append("%s prefill by kernel: tf32x3 %.0f, tf32 %.0f, simt %.0f tok/s" % (
        k, num(k + "_prefill.tps"), num(k + "_prefill_tf32.tps"), num(k + "_prefill_simt.tps")))
if "accelerate.tps" in R:
    a, b = num("accelerate.tps"), num("g2b_quarter.steady")
    o.append("gemma2-2b bf16, a quarter on the device: accelerate %.2f tok/s, spillway %.2f tok/s (%.1fx)"
             % (a, b, b / a if a > 0 else float("nan")))
rows_peer = []
clean = lambda x: None if isinstance(x, float) and math.isnan(x) else x
for key in sorted(k[:-len(".llama_tg")] for k in R if k.endswith(".llama_tg")):
    # keys are SHAPE_TYPE: shapes use '-', types may hold '_' (q4_k)
    model, _, typ = (R.get("quarter.key", "?_?") if key == "quarter_planner" else key).partition("_")
    budget = R.get("quarter", "") if key == "quarter_planner" else "all"
    bound = hbm / num(key + ".res_bytes") if num(key + ".res_bytes") > 0 else float("nan")
    for test, ours, theirs, pred in (("tg128", key + ".steady", key + ".llama_tg", key + ".pred"),
                                     ("pp512", key + "_prefill.tps", key + ".llama_pp", key + "_prefill.pred")):
        rows_peer.append({"model": model, "type": typ, "test": test, "budget": budget,
                          "spillway_tps": num(ours), "llama_cpp_tps": num(theirs),
                          "bound_tps": bound if test == "tg128" else float("nan"),
                          "predicted_tps": num(pred)})
if rows_peer:
    o.append("beside llama.cpp (%s, same files):" % ("DRY RUN: its cpu llama-bench against the simulated "
             "device, which says nothing of speed" if dry else "CUDA llama-bench, same card"))
    for r in rows_peer:
        ratio = r["spillway_tps"] / r["llama_cpp_tps"] if r["llama_cpp_tps"] > 0 else float("nan")
        o.append("  %s %s %s budget %s: spillway %.1f, llama.cpp %.1f tok/s (%.2fx)"
                 % (r["model"], r["type"], r["test"], r["budget"], r["spillway_tps"], r["llama_cpp_tps"], ratio))
    card = (R.get("gpu", "none").split(",")[0].strip() or "none").replace(" ", "-")
    json.dump([{k: clean(v) for k, v in r.items()} for r in rows_peer],
              open(os.path.join(outdir, "gpu_peer_%s_%s.json"
                                % (__import__("time").strftime("%Y-%m-%d"), card)), "w"), indent=1)
text = "\n".join(o) + "\n"
open(os.path.join(outdir, "summary.txt"), "w").write(text)
json.dump(R, open(os.path.join(outdir, "results.json"), "w"), indent=1)
sys.stdout.write(text)
PY
