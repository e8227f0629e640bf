#!/usr/bin/env bash
# pjrt_gpu_check.sh — one prepared check of the PJRT backend on a lent GPU
# machine (an H200 with CUDA 13, PyTorch and JAX's jax-cuda13-pjrt plugin),
# made to finish in about 8 minutes (BUDGET_S, default 450 s; each step
# gets what is left and is skipped, saying so, when too little is):
#   1. find the CUDA PJRT plugin ($SPILLWAY_PJRT_PLUGIN, else
#      ~/.cache/spillway/pjrt-cuda/jax_plugins/xla_cuda13/xla_cuda_plugin.so,
#      else the installed jax_plugins.xla_cuda13 package) and print
#      `spillway doctor --backend pjrt` (tolerated when missing or failing);
#   2. check the carried binaries run (--build DIR; default build-gpu, made
#      here by --pack, else build), else build them there with cmake;
#   3. test_pjrt (PJRT vs the cpu backend: argmax, logits, greedy text,
#      resident/streamed/mixed/per-op plans) on the tiny Gemma 1/2/3 golden
#      files, and on the default model when it is on the machine (it is not
#      carried: 241 MiB), within TESTS_S seconds (default 180);
#   4. PyTorch bounds: device-to-device copy (HBM, bytes read + written),
#      pinned and pageable host-to-device (medians of several reps), and a
#      host memcpy;
#   5. a bf16 synthetic model of Gemma 2 9B's shape (`spillway synth`; a
#      smaller official shape when the 9B would not fit the time left,
#      printed), decode timed resident and streamed (--device-mem = a
#      quarter of the weights: as many layers resident as fit, the rest
#      streamed, never computed on the host), with --report-json; against
#        resident bound = weight bytes per token / HBM rate
#        streamed bound = streamed bytes / pinned rate + resident bytes / HBM
#   6. a short table, printed last; everything (raw JSON, logs) under $OUT
#      (or build-pjrt-gpu-out/ when OUT is unset).
# Decode is run twice per plan (a short and a long -n) so that
#   steady = (tokens_long - tokens_short) / (seconds_long - seconds_short)
# cancels the first-use compile of the programs that the reported rate
# includes.
#
# usage: bash bench/pjrt_gpu_check.sh [--dry-run] [--build DIR] [--shape NAME]
#        bash bench/pjrt_gpu_check.sh --pack [BUILD_DIR] [DEST]
#   --dry-run  the same steps on this machine with XLA's CPU plugin, no CUDA
#              measurements (host memcpy stands in for both rates), a
#              gemma3-270m-shaped model, --device-mem given, ~3 minutes
#   --pack     copy what the device run needs from BUILD_DIR (default build)
#              into DEST (default build-gpu, ignored by git, a few MiB:
#              spillway, tests/test_pjrt, libjson-c, pjrt_c_api.h), so that
#              it can travel: run(command="bash bench/pjrt_gpu_check.sh",
#              carry=["build-gpu"], timeout_s=540). A whole build folder is
#              over the device tool's 64 MiB.
#   BUDGET_S=N seconds for the whole script; TESTS_S=N for the tests;
#   SYNTH_DIR=DIR where the model is written (default /tmp/spillway-synth,
#   removed at the end); RESIDENT_MEM=SIZE --device-mem of the resident
#   runs (default: none on a GPU, the plugin reports its memory).
# $(devmem_args ...) is unquoted on purpose below: zero or two words.
# shellcheck disable=SC2046
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 2

# ---- --pack ------------------------------------------------------------------
if [ "${1:-}" = "--pack" ]; then
  src=${2:-build}
  dest=${3:-build-gpu}
  [ -x "$src/spillway" ] && [ -x "$src/tests/test_pjrt" ] ||
    { echo "pack: $src/spillway or $src/tests/test_pjrt missing (build first)" >&2; exit 2; }
  rm -rf "$dest" && mkdir -p "$dest/tests" "$dest/lib" "$dest/include" || exit 3
  cp "$src/spillway" "$dest/" && cp "$src/tests/test_pjrt" "$dest/tests/" || exit 3
  for lib in $(ldd "$src/spillway" | awk '/json-c/ {print $3}'); do cp -L "$lib" "$dest/lib/"; done
  inc=$(sed -n 's/^SPILLWAY_PJRT_INCLUDE:[A-Z]*=//p' "$src/CMakeCache.txt" 2>/dev/null)
  [ -n "$inc" ] && [ -f "$inc/pjrt_c_api.h" ] && cp "$inc/pjrt_c_api.h" "$dest/include/"
  git -C "$here" rev-parse HEAD >"$dest/commit" 2>/dev/null
  git -C "$here" status --short >>"$dest/commit" 2>/dev/null
  echo "packed $src into $dest ($(du -sh "$dest" | cut -f1)); then, with the device tool:"
  echo "  run(command=\"bash bench/pjrt_gpu_check.sh\", carry=[\"$dest\"], timeout_s=540)"
  exit 0
fi

dry=0
build=
shape_arg=
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry=1; shift ;;
    --build) build=$2; shift 2 ;;
    --shape) shape_arg=$2; shift 2 ;;
    -h|--help) sed -n '2,47p' "$0"; exit 0 ;;
    *) echo "pjrt_gpu_check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

budget=${BUDGET_S:-$([ $dry = 1 ] && echo 200 || echo 450)}
outdir=${OUT:-$here/build-pjrt-gpu-out}
synth_dir=${SYNTH_DIR:-/tmp/spillway-synth}
STEP_RESERVE=20
# shellcheck source=bench/check_lib.sh
. "$here/bench/check_lib.sh"
check_init

say "pjrt_gpu_check: $([ $dry = 1 ] && echo "DRY RUN (CPU plugin)" || echo "GPU run")," \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(cat /proc/sys/kernel/hostname), budget $budget s, out $outdir"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
    "$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
command -v nvidia-smi >/dev/null &&
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>&1 |
  sed 's/^/gpu: /' | tee -a "$log"

# ---- 1. the plugin ---------------------------------------------------------------
py=python3
cache=${XDG_CACHE_HOME:-$HOME/.cache}/spillway
if [ $dry = 1 ]; then
  plugin=${SPILLWAY_PJRT_PLUGIN:-$cache/pjrt-cpu/fastatomstruct_xla_cpu/libpjrt_cpu.so}
  plugin_from="dry run: XLA's CPU plugin"
else
  plugin_from=
  if [ -n "${SPILLWAY_PJRT_PLUGIN:-}" ]; then
    plugin=$SPILLWAY_PJRT_PLUGIN; plugin_from="\$SPILLWAY_PJRT_PLUGIN"
  elif [ -f "$cache/pjrt-cuda/jax_plugins/xla_cuda13/xla_cuda_plugin.so" ]; then
    plugin=$cache/pjrt-cuda/jax_plugins/xla_cuda13/xla_cuda_plugin.so; plugin_from="spillway's cache"
  else
    d=$($py - 2>>"$log" <<'PY'
import importlib.util, os
try:
    s = importlib.util.find_spec("jax_plugins.xla_cuda13")
    f = s.origin if s and s.origin else (list(s.submodule_search_locations)[0] + "/__init__.py")
except Exception:
    import jax_plugins.xla_cuda13 as m
    f = m.__file__
print(os.path.dirname(f))
PY
)
    plugin=${d:+$d/xla_cuda_plugin.so}; plugin_from="python3's jax_plugins.xla_cuda13"
  fi
  # The plugin loads CUDA from the nvidia-* wheels beside it; jax points
  # XLA at their ptxas/libdevice the same way when it is not told.
  site=$($py -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
  if [ -n "$site" ] && [ -d "$site/nvidia" ]; then
    nvlibs=$(find "$site/nvidia" -maxdepth 3 -type d -name lib | tr '\n' ':')
    export LD_LIBRARY_PATH="${nvlibs}${LD_LIBRARY_PATH:-}"
    case "${XLA_FLAGS:-}" in *cuda_data_dir*) ;; *)
      for c in "$site/nvidia/cu13" "$site/nvidia/cuda_nvcc" /usr/local/cuda; do
        if [ -e "$c/bin/ptxas" ] || [ -d "$c/nvvm/libdevice" ]; then
          export XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_gpu_cuda_data_dir=$c"; break
        fi
      done ;;
    esac
  fi
fi
export SPILLWAY_PJRT_PLUGIN=$plugin
if [ -n "$plugin" ] && [ -f "$plugin" ]; then
  say "plugin: $plugin ($plugin_from)"
  put plugin "$plugin"
else
  say "plugin: NOT FOUND (looked at \$SPILLWAY_PJRT_PLUGIN, $cache/pjrt-cuda/..., python3's jax_plugins.xla_cuda13: '${plugin:-}')"
  put plugin "not found"
fi
say "XLA_FLAGS=${XLA_FLAGS:-}"

# ---- 2. the binaries ---------------------------------------------------------------
if [ -z "$build" ]; then
  if [ $dry = 1 ]; then build="build-bench"; elif [ -x build-gpu/spillway ]; then build="build-gpu"; else build="build"; fi
fi
case $build in /*) ;; *) build=$here/$build ;; esac
[ -d "$build/lib" ] && export LD_LIBRARY_PATH="$build/lib:${LD_LIBRARY_PATH:-}"
bin_ok=0
if [ -x "$build/spillway" ] && "$build/spillway" version >>"$log" 2>&1 &&
   [ -x "$build/tests/test_pjrt" ]; then
  bin_ok=1
  say "binaries: $build/spillway runs ($("$build/spillway" version 2>&1 | head -1))"
else
  say "binaries: $build/spillway or $build/tests/test_pjrt missing or not running here; building"
  ldd "$build/spillway" >>"$log" 2>&1
  inc=
  for c in "$build/include" "$cache/pjrt-cpu/xla_plugins/xla_cpu_pjrt/include"; do
    [ -f "$c/pjrt_c_api.h" ] && { inc=$c; break; }
  done
  if [ -z "$inc" ]; then
    site=${site:-$($py -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)}
    # shellcheck disable=SC2086
    h=$(timeout 30 find ${site:+"$site"} /usr/local/include /usr/include -name pjrt_c_api.h 2>/dev/null | head -1)
    [ -n "$h" ] && inc=$(dirname "$h")
  fi
  say "binaries: pjrt_c_api.h from '${inc:-nowhere}'"
  build=$here/build-pjrt-gpu
  if step cmake_configure 120 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSPILLWAY_PJRT=ON \
       ${inc:+-DSPILLWAY_PJRT_INCLUDE="$inc"} &&
     step cmake_build 240 cmake --build "$build" -j "$(nproc)" --target spillway test_pjrt; then
    bin_ok=1
    say "binaries: built in $build"
  else
    say "binaries: build FAILED (see raw/cmake_*.log)"
  fi
fi
sw="$build/spillway"
put build "$build"
put bin_ok "$bin_ok"

if [ $bin_ok = 1 ]; then
  dhelp=$("$sw" doctor --help 2>&1)
  if grep -q -- '--backend pjrt' <<<"$dhelp"; then
    step doctor 60 "$sw" doctor --backend pjrt
    sed 's/^/  /' "$raw/doctor.log" | tee -a "$log"
    step doctor_json 60 "$sw" doctor --backend pjrt --json >/dev/null
  else
    say "doctor: 'spillway doctor --backend pjrt' is not in this build"
    put doctor.rc "absent"
  fi
fi

# ---- 3. correctness: test_pjrt -------------------------------------------------------
# gemma3 first (the default model's architecture); the tests share TESTS_S
# seconds (default 180), the rest are skipped, saying so. The dry run runs
# gemma3 alone: on 2 busy cores a tiny test takes 25-50 s and the default
# model 90 s (ctest -L pjrt runs them all here).
model_default="$cache/gemma-3-270m-q4_k_m.gguf"
tests_end=$(( $(date +%s) + ${TESTS_S:-180} ))
if [ $bin_ok = 1 ]; then
  for a in gemma3 gemma2 gemma1 default; do
    if [ $dry = 1 ] && [ $a != gemma3 ]; then
      put "test.$a" "skipped in the dry run (time)"
      say "test_pjrt $a: $(get "test.$a")"
      continue
    fi
    if [ $a = default ]; then
      if [ ! -f "$model_default" ]; then
        put test.default "not run: no default model at $model_default (not carried)"
        say "test_pjrt default: $(get test.default)"
        continue
      fi
      args=(tests/data/golden/gemma3-270m-q4km.swgold --default-model)
    else
      args=("tests/data/golden/$a.swgold" "tests/data/tiny/$a.gguf")
    fi
    cap=$(( tests_end - $(date +%s) ))
    [ $a = default ] && [ $cap -gt 150 ] && cap=150
    [ $a != default ] && [ $cap -gt 120 ] && cap=120
    if [ $cap -lt 15 ]; then
      put "test.$a" "skipped: the tests' time (TESTS_S) is spent"
      say "test_pjrt $a: $(get "test.$a")"
      continue
    fi
    step "test_pjrt_$a" "$cap" "$build/tests/test_pjrt" "${args[@]}"
    put "test.$a" "$(verdict $?)"
    say "test_pjrt $a: $(get "test.$a") ($(get "test_pjrt_$a.s") s;"         "$(grep -m1 -E '^test_pjrt: [0-9]+ checks' "$raw/test_pjrt_$a.log" || echo 'no summary line'))"
  done
fi

# ---- 4. bounds ---------------------------------------------------------------------
# host memcpy (both modes): bytes read + written over the time of a copy
$py - "$raw/host_memcpy.json" <<'PY' 2>>"$log"
import json, statistics, sys, time
n = 512 << 20
src = bytearray(b"\x5a\xa5\x3c\xc3" * (n // 4)); dst = bytearray(n)
mv = memoryview(dst)
ts = []
for i in range(6):
    t0 = time.perf_counter(); mv[:] = src; ts.append(time.perf_counter() - t0)
t = statistics.median(ts[1:])
json.dump({"bytes": n, "reps": len(ts) - 1, "median_s": t, "rate_Bps": 2 * n / t}, open(sys.argv[1], "w"))
PY
host_bps=$($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["rate_Bps"])' "$raw/host_memcpy.json" 2>/dev/null)
put host_Bps "${host_bps:-nan}"
say "host memcpy: $(awk -v r="${host_bps:-0}" 'BEGIN {printf "%.1f GB/s", r / 1e9}') (read + written, median of 5)"
if [ $dry = 1 ]; then
  say "torch CUDA bounds: skipped: no CUDA (dry run); host memcpy stands in for HBM and for the link"
  put hbm_Bps "$host_bps"; put pinned_Bps "$host_bps"; put pageable_Bps "$host_bps"; put bounds_from "host memcpy (dry run)"
else
  cat >"$work/bw.py" <<'PY'
import json, statistics, sys
out = {}
try:
    import torch
    assert torch.cuda.is_available(), "torch sees no CUDA device"
except Exception as e:
    json.dump({"error": str(e)}, open(sys.argv[1], "w")); sys.exit(0)
dev = torch.device("cuda")
out["device"] = torch.cuda.get_device_name(); out["torch"] = torch.__version__
def timed(fn, reps, warm=2):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) / 1e3)
    return statistics.median(ts), ts
n = 4 << 30
x = torch.empty(n, dtype=torch.uint8, device=dev); x.random_(0, 256)
y = torch.empty_like(x)
t, ts = timed(lambda: y.copy_(x), 10)
out["d2d"] = {"bytes": n, "median_s": t, "rate_Bps": 2 * n / t, "note": "read + written", "runs_s": ts}
del y
m = 2 << 30
hp = torch.empty(m, dtype=torch.uint8, pin_memory=True); hp.copy_(x[:m])
hq = torch.empty(m, dtype=torch.uint8); hq.copy_(x[:m])
d = torch.empty(m, dtype=torch.uint8, device=dev)
t, ts = timed(lambda: d.copy_(hp, non_blocking=True), 6)
out["h2d_pinned"] = {"bytes": m, "median_s": t, "rate_Bps": m / t, "runs_s": ts}
t, ts = timed(lambda: d.copy_(hq), 5, warm=1)
out["h2d_pageable"] = {"bytes": m, "median_s": t, "rate_Bps": m / t, "runs_s": ts}
t, ts = timed(lambda: hp.copy_(d, non_blocking=True), 5)
out["d2h_pinned"] = {"bytes": m, "median_s": t, "rate_Bps": m / t, "runs_s": ts}
json.dump(out, open(sys.argv[1], "w"), indent=1)
PY
  step torch_bw 120 $py "$work/bw.py" "$raw/torch_bw.json"
  hbm='' pinned='' pageable='' d2h='' gpu='' bw_err=''
  eval "$($py - "$raw/torch_bw.json" <<'PY' 2>>"$log"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    d = {"error": "no output (%s)" % e}
if "error" in d:
    print("bw_err=%r" % d["error"])
else:
    print("hbm=%r pinned=%r pageable=%r d2h=%r gpu=%r" % (d["d2d"]["rate_Bps"], d["h2d_pinned"]["rate_Bps"],
          d["h2d_pageable"]["rate_Bps"], d["d2h_pinned"]["rate_Bps"], d["device"]))
PY
)"
  if [ -n "${hbm:-}" ]; then
    put hbm_Bps "$hbm"; put pinned_Bps "$pinned"; put pageable_Bps "$pageable"; put d2h_Bps "$d2h"
    put bounds_from "PyTorch on $gpu"
    say "torch: d2d $(awk -v r="$hbm" 'BEGIN {printf "%.0f", r / 1e9}') GB/s (read + written)," \
        "h2d pinned $(awk -v r="$pinned" 'BEGIN {printf "%.1f", r / 1e9}') GB/s," \
        "pageable $(awk -v r="$pageable" 'BEGIN {printf "%.1f", r / 1e9}') GB/s," \
        "d2h pinned $(awk -v r="$d2h" 'BEGIN {printf "%.1f", r / 1e9}') GB/s"
  else
    say "torch CUDA bounds: FAILED (${bw_err:-see log}); bounds below will read nan"
    put hbm_Bps nan; put pinned_Bps nan; put pageable_Bps nan; put bounds_from "none (torch failed)"
  fi
fi

# ---- 5. synthetic model, resident and streamed decode ----------------------------------
pj() { $py -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }
ctx=1024
prompt="The river valley and the old stone bridge"
devmem_args() {  # extra flags a plan on this plugin needs: the CPU plugin reports no memory
  if [ $dry = 1 ]; then echo "--device-mem $1"; elif [ -n "$1" ]; then echo "--device-mem $1"; fi
}
if [ $bin_ok = 1 ]; then
  if [ -n "$shape_arg" ]; then shapes=("$shape_arg")
  elif [ $dry = 1 ]; then shapes=(gemma3-270m)
  else shapes=(gemma2-9b gemma3-4b gemma2-2b gemma3-1b gemma3-270m); fi
  mkdir -p "$synth_dir"
  if [ $dry = 0 ] && [ "$(df -B1 --output=avail "$synth_dir" | tail -1)" -lt 25000000000 ]; then
    rm -rf "$synth_dir"; synth_dir=$here/build-pjrt-gpu-synth; mkdir -p "$synth_dir"
    say "synth: /tmp has under 25 GB free; writing to $synth_dir"
  fi
  # synth rate: one layer of the first shape, tiny vocabulary
  step synth_calibrate 60 "$sw" synth --shape "${shapes[0]}" --layers 1 --vocab 512 -o "$synth_dir/cal.gguf" --force -q
  cal_b=$(stat -c %s "$synth_dir/cal.gguf" 2>/dev/null || echo 0)
  synth_bps=$(awk -v b="$cal_b" -v t="$(get synth_calibrate.s)" 'BEGIN {print (t > 0 && b > 0) ? b / t : 2e8}')
  rm -f "$synth_dir/cal.gguf"
  free_b=$(df -B1 --output=avail "$synth_dir" | tail -1)
  shape=
  for s in "${shapes[@]}"; do
    wb=$("$sw" plan -m "$s" --weights bf16 --backend sim --device-mem 1T --json 2>/dev/null |
         $py -c 'import json,sys; print(json.load(sys.stdin)["model"]["weights_bytes"])' 2>/dev/null)
    [ -z "$wb" ] && continue
    # synth + four runs (a model load from the page cache at ~2 GB/s, and
    # ~10 s of compile and decode each) + plans
    need=$(awk -v b="$wb" -v r="$synth_bps" 'BEGIN {printf "%d", b / r + 4 * (b / 2e9 + 10) + 20}')
    say "shape $s: $(awk -v b="$wb" 'BEGIN {printf "%.2f GB", b / 1e9}') bf16; synth at" \
        "$(awk -v r="$synth_bps" 'BEGIN {printf "%.0f MB/s", r / 1e6}') + runs ~ $need s; $(left) s left," \
        "$(awk -v b="$free_b" 'BEGIN {printf "%.0f GB", b / 1e9}') free in $synth_dir"
    if [ "$need" -lt $(( $(left) - 15 )) ] && [ "$free_b" -gt $(( wb + wb / 10 )) ]; then shape=$s; break; fi
    say "shape $s: too slow or too big for what is left; trying a smaller official shape"
  done
  if [ -z "$shape" ]; then
    say "synth: no shape fits the time left; decode skipped"
    put shape "none (out of time)"
  else
    [ "$shape" != "${shapes[0]}" ] && say "NOTE: using $shape instead of ${shapes[0]} (time)"
    put shape "$shape"
    model="$synth_dir/$shape-bf16.gguf"
    step synth 400 "$sw" synth --shape "$shape" --type bf16 -o "$model" --force
    say "$(head -c 300 "$raw/synth.log") (step $(get synth.s) s)"
    put synth_s "$(get synth.s)"
  fi
  if [ -n "$shape" ] && [ -f "$model" ]; then
    # resident: everything on the device
    wbytes=$(stat -c %s "$model")
    res_mem=${RESIDENT_MEM:-$([ $dry = 1 ] && awk -v b="$wbytes" 'BEGIN {printf "%dM", 2 * b / 1048576 + 1024}')}
    declare -A place mem
    place[resident]="all=resident,lm_head=resident"
    mem[resident]=$res_mem
    "$sw" plan -m "$model" --backend pjrt -c $ctx $(devmem_args "$res_mem") --place "${place[resident]}" --json \
      >"$raw/plan_resident.json" 2>"$raw/plan_resident.err"
    # streamed: a quarter of the weights; as many layers resident as fit, the rest streamed
    wq=$("$sw" plan -m "$model" --backend sim --device-mem 1T -c $ctx --json 2>>"$log" |
         $py -c 'import json,sys; d=json.load(sys.stdin)["model"]; print(d["weights_bytes"], d["n_layer"])' 2>>"$log")
    read -r wts nl <<<"$wq"
    q=$(( wts / 4 ))
    mem[streamed]="$(( q / 1048576 ))M"
    fits() {  # fits K LMHEAD: K first layers resident, the rest streamed
      local spec
      if [ "$1" = 0 ]; then spec="all=streamed,lm_head=$2"; else spec="0-$(( $1 - 1 ))=resident,$1-=streamed,lm_head=$2"; fi
      "$sw" plan -m "$model" --backend pjrt -c $ctx --device-mem "${mem[streamed]}" --place "$spec" \
        --json >"$raw/plan_streamed.json" 2>"$raw/plan_streamed.err" && echo "$spec"
    }
    spec=
    for lh in resident host; do
      lo=0; hi=$(( nl - 1 ))
      fits 0 $lh >/dev/null || continue
      while [ $lo -lt $hi ]; do  # largest K that fits
        mid=$(( (lo + hi + 1) / 2 ))
        if fits $mid $lh >/dev/null; then lo=$mid; else hi=$(( mid - 1 )); fi
      done
      spec=$(fits $lo $lh); break
    done
    place[streamed]=$spec
    say "plans: resident --place ${place[resident]}${res_mem:+ --device-mem $res_mem};" \
        "streamed --device-mem ${mem[streamed]} (a quarter of $(awk -v b="$wts" 'BEGIN {printf "%.2f GB", b / 1e9}'))" \
        "--place ${spec:-(none fits)}"
    for mode in resident streamed; do
      [ -z "${place[$mode]}" ] && { say "$mode: no plan fits; skipped"; continue; }
      "$sw" plan -m "$model" --backend pjrt -c $ctx $(devmem_args "${mem[$mode]}") --place "${place[$mode]}" \
        >"$raw/plan_$mode.txt" 2>&1
      "$sw" plan -m "$model" --backend pjrt -c $ctx $(devmem_args "${mem[$mode]}") --place "${place[$mode]}" \
        --json >"$raw/plan_$mode.json" 2>/dev/null
      sed -n '1,12p' "$raw/plan_$mode.txt" | sed "s/^/  [$mode] /" >>"$log"
      nshort=4
      # shellcheck disable=SC2046
      step "run_${mode}_short" 150 "$sw" run -m "$model" --backend pjrt -c $ctx $(devmem_args "${mem[$mode]}") \
        --place "${place[$mode]}" -p "$prompt" -n $nshort --temp 0 --report-json "$raw/run_${mode}_short.json" ||
        { say "$mode short run failed: $(tail -3 "$raw/run_${mode}_short.log" | tr '\n' ' ')"; continue; }
      rshort=$(pj "$raw/run_${mode}_short.json" 'd["decode_tokens_per_s"]')
      # The long run: ~15 s of decode at the short run's rate, which counts the
      # compile, so the real rate is higher: at least 64 tokens resident, 24
      # streamed, but never more than that rate allows in the time left (less
      # a reserve for what follows), and at most 256.
      reserve=$([ "$mode" = resident ] && echo 100 || echo 30)
      floor=$([ "$mode" = resident ] && echo 64 || echo 24)
      nlong=$(awk -v r="${rshort:-0}" -v l="$(left)" -v z="$reserve" -v f="$floor" 'BEGIN {
               n = int(r * 15); if (n < f) n = f; m = int(r * (l - z));
               if (m < n) n = (m > 8 ? m : 8); if (n > 256) n = 256; print n}')
      step "run_${mode}_long" 200 "$sw" run -m "$model" --backend pjrt -c $ctx $(devmem_args "${mem[$mode]}") \
        --place "${place[$mode]}" -p "$prompt" -n "$nlong" --temp 0 --report-json "$raw/run_${mode}_long.json" ||
        say "$mode long run failed: $(tail -3 "$raw/run_${mode}_long.log" | tr '\n' ' ')"
      say "$mode: -n $nshort: $(tail -2 "$raw/run_${mode}_short.log" | head -c 200 | tr '\n' ' ')"
      say "$mode: -n $nlong: $(tail -2 "$raw/run_${mode}_long.log" | head -c 200 | tr '\n' ' ')"
      dm=${mem[$mode]}
      [ -z "$dm" ] && dm="(none: the plugin reports its memory)"
      put "mem.$mode" "$dm"
      put "place.$mode" "${place[$mode]}"
    done
  fi
fi

# ---- 6. the table --------------------------------------------------------------------
say "total $(( $(date +%s) - t_start )) s; files in $outdir: log.txt summary.txt results.json results.tsv raw.tar.gz"
$py - "$raw" "$res" "$outdir" "$dry" <<'PY' 2>>"$log" | tee -a "$log"
import json, math, os, sys
raw, res, outdir, dry = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
R = {}
for line in open(res):
    k, _, v = line.rstrip("\n").partition("\t")
    R[k] = v
def num(k):
    try: return float(R.get(k, "nan"))
    except ValueError: return float("nan")
def load(p):
    try: return json.load(open(os.path.join(raw, p)))
    except Exception: return None
hbm, pinned, pageable, host = num("hbm_Bps"), num("pinned_Bps"), num("pageable_Bps"), num("host_Bps")
G = 1e9
rows, summary = [], {"dry_run": dry, "results": R, "modes": {}}
for mode in ("resident", "streamed"):
    plan = load("plan_%s.json" % mode)
    s, l = load("run_%s_short.json" % mode), load("run_%s_long.json" % mode)
    if plan is None or l is None:
        rows.append((mode, "not run", "", "", "", "", "", "", ""))
        continue
    layers = plan["layers"]
    by = {"resident": 0, "streamed": 0, "host": 0}
    for x in layers:
        by[x["place"]] = by.get(x["place"], 0) + x["bytes"]
    lm = plan["model"]["output_bytes"]
    lm_place = plan["lm_head"]
    by["resident" if lm_place in ("resident", "device") else lm_place] += lm
    t_tok = by["streamed"] / pinned + by["resident"] / hbm + by["host"] / host
    bound = 1 / t_tok if t_tok > 0 else float("nan")
    rep = l["decode_tokens_per_s"]
    steady = float("nan")
    ns, nl = (s["n_decode_tokens"] if s else 0), l["n_decode_tokens"]
    if s is not None:
        ts = ns / s["decode_tokens_per_s"] if s["decode_tokens_per_s"] > 0 else float("nan")
        tl = nl / l["decode_tokens_per_s"] if l["decode_tokens_per_s"] > 0 else float("nan")
        if tl > ts and nl > ns:
            steady = (nl - ns) / (tl - ts)
    busy, stall = l["copy_busy_s"], l["copy_stall_s"]
    per_tok, link = float("nan"), float("nan")
    if s is not None and nl > ns:
        per_tok = (l["bytes_to_device"] - s["bytes_to_device"]) / (nl - ns)
        db = l["copy_busy_s"] - s["copy_busy_s"]
        if db > 0:
            link = (l["bytes_to_device"] - s["bytes_to_device"]) / db
    n_res = sum(1 for x in layers if x["place"] == "resident")
    n_str = sum(1 for x in layers if x["place"] == "streamed")
    n_host = sum(1 for x in layers if x["place"] == "host")
    where = "%d res / %d str%s, lm %s" % (n_res, n_str, " / %d host" % n_host if n_host else "", lm_place)
    best = steady if not math.isnan(steady) else rep
    rows.append((mode, where, "%.2f / %.2f" % (rep, steady), "%.1f" % bound,
                 "%.0f%%" % (100 * best / bound) if bound > 0 else "nan",
                 "%.2f / %.2f / %.2f" % (busy, max(busy - stall, 0), stall),
                 "%.1f (%.1f)" % (per_tok / 1e6, by["streamed"] / 1e6),
                 "%.1f" % (link / G) if per_tok > 1e5 else "-",
                 "%.2f / %.2f GiB" % (l["peak_device_bytes"] / 2**30, l["plan_device_bytes"] / 2**30)))
    summary["modes"][mode] = {"plan_bytes_per_token": by, "bound_tok_s": bound, "decode_reported": rep,
                              "decode_steady": steady, "to_device_per_decode_token": per_tok,
                              "link_Bps": link, "report_long": l, "report_short": s,
                              "place": R.get("place." + mode), "device_mem": R.get("mem." + mode)}
json.dump(summary, open(os.path.join(outdir, "results.json"), "w"), indent=1, default=str)
o = []
o.append("")
o.append("== pjrt GPU check%s: plugin %s" % (" (DRY RUN, CPU plugin)" if dry else "", R.get("plugin", "?")))
o.append("correctness (test_pjrt vs cpu backend): gemma1 %s | gemma2 %s | gemma3 %s | default model %s"
         % (R.get("test.gemma1", "not run"), R.get("test.gemma2", "not run"), R.get("test.gemma3", "not run"),
            R.get("test.default", "not run")))
o.append("doctor --backend pjrt: rc %s" % R.get("doctor.rc", "not run"))
o.append("bounds (%s): HBM d2d %.1f GB/s (read+written), h2d pinned %.1f GB/s, pageable %.1f GB/s; host memcpy %.1f GB/s"
         % (R.get("bounds_from", "?"), hbm / G, pinned / G, pageable / G, host / G))
o.append("model: synthetic %s bf16, synth %s s, -c 1024, greedy" % (R.get("shape", "none"), R.get("synth_s", "-")))
hdr = ("mode", "layers", "decode tok/s reported / steady", "bound tok/s", "steady/bound",
       "copy busy / hidden / stalled s (long run)", "to device MB/decode token (plan)",
       "link GB/s", "device peak / plan")
w = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
fmt = " | ".join("%%-%ds" % x for x in w)
o.append(fmt % hdr)
o.append("-+-".join("-" * x for x in w))
for r in rows:
    o.append(fmt % r)
for mode in ("resident", "streamed"):
    if R.get("place." + mode):
        o.append("%s: --place %s --device-mem %s" % (mode, R["place." + mode], R.get("mem." + mode)))
text = "\n".join(o) + "\n"
open(os.path.join(outdir, "summary.txt"), "w").write(text)
sys.stdout.write(text)
PY
