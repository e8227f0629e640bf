# gpu_peer_lib.sh — llama.cpp's CUDA llama-bench beside Spillway in the
# device check (issue 37), sourced by bench/device_check.sh after
# check_lib.sh. The peer is llama.cpp as the shared peer script caches it
# (../shared/peer/build-llama-bench.sh: the source llama-cpp-python
# vendors), built on the device machine with its CUDA backend
# (GGML_CUDA=ON, sm_90, CUDA graphs on, as llama.cpp builds by default)
# while Spillway's correctness steps run, from a source tarball that
# travels in build-gpu-pack/ (a built libggml-cuda is past what travels).
#
#   peer_pack DIR          (here) llama.cpp's source, without what a
#                          llama-bench build never reads, into DIR/llama-src.tar.xz
#   peer_build_start       (there) unpack and build llama-bench in the
#                          background, PEER_BUILD_S seconds at most (300)
#   peer_wait              wait for that build (bounded by the time left)
#   peer_bench KEY MODEL [LLAMA-BENCH ARGS]
#                          pp512 and tg128 of MODEL: KEY.llama_pp, KEY.llama_tg
# The dry run (no GPU) uses the peer script's cpu llama-bench where the
# cache has one, with a short test, so the parsing is exercised here.

peer_src_dir() {
  echo "${PEER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spillway-peer/llama.cpp-${LLAMA_CPP_PYTHON_VERSION:-0.3.36}}"
}

peer_pack() {
  local dest=$1 src
  src="$(peer_src_dir)/src"
  if [ ! -f "$src/CMakeLists.txt" ]; then
    echo "pack: no llama.cpp source at $src (run ../shared/peer/build-llama-bench.sh once);" \
         "the device check will run without its peer" >&2
    return 0
  fi
  tar -C "$src/.." -cJf "$dest/llama-src.tar.xz" \
      --exclude=src/docs --exclude=src/models --exclude=src/tests --exclude=src/examples \
      --exclude=src/.git --exclude=src/media --exclude=src/benches \
      --exclude='src/ggml/src/ggml-sycl' --exclude='src/ggml/src/ggml-vulkan' \
      --exclude='src/ggml/src/ggml-opencl' --exclude='src/ggml/src/ggml-metal' \
      --exclude='src/ggml/src/ggml-cann' --exclude='src/ggml/src/ggml-webgpu' src &&
    cp "$(peer_src_dir)/llama.cpp-commit" "$dest/llama-commit" 2>/dev/null
  echo "packed llama.cpp's source ($(du -sh "$dest/llama-src.tar.xz" | cut -f1))"
}

peer_bench_bin=
peer_pid=

peer_build_start() {
  local tarball=$here/build-gpu-pack/llama-src.tar.xz dir=$work/llama cap=${PEER_BUILD_S:-300}
  if [ "$have_gpu" != 1 ]; then
    local cpu
    cpu="$(peer_src_dir)/build/bin/llama-bench"
    [ -x "$cpu" ] && peer_bench_bin=$cpu
    say "peer: dry run: $([ -n "$peer_bench_bin" ] && echo "the cpu llama-bench ($cpu)" ||
         echo "no llama-bench cached; peer rows stay empty")"
    return 0
  fi
  if [ ! -f "$tarball" ]; then
    say "peer: no build-gpu-pack/llama-src.tar.xz (bench/device_check.sh --pack makes it): no llama.cpp"
    return 0
  fi
  mkdir -p "$dir" && tar -xJf "$tarball" -C "$dir" || { say "peer: cannot unpack llama.cpp"; return 0; }
  say "peer: building llama.cpp's llama-bench with CUDA in the background ($cap s at most," \
      "commit $(cat "$here/build-gpu-pack/llama-commit" 2>/dev/null || echo unknown))"
  (
    timeout "$cap" cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release \
      -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
      -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_SERVER=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF &&
      timeout "$cap" cmake --build "$dir/build" -j "$(nproc)" --target llama-bench
  ) >"$raw/llama_build.log" 2>&1 &
  peer_pid=$!
}

peer_wait() {
  [ -n "$peer_pid" ] || return 0
  local t0 waited
  t0=$(date +%s)
  while kill -0 "$peer_pid" 2>/dev/null && [ "$(left)" -gt 60 ]; do sleep 2; done
  kill -0 "$peer_pid" 2>/dev/null && { kill "$peer_pid" 2>/dev/null; say "peer: build stopped: out of time"; }
  wait "$peer_pid" 2>/dev/null
  waited=$(( $(date +%s) - t0 ))
  peer_pid=
  if [ -x "$work/llama/build/bin/llama-bench" ]; then
    peer_bench_bin=$work/llama/build/bin/llama-bench
    say "peer: llama-bench (CUDA) built (waited $waited s)"
  else
    say "peer: llama-bench build FAILED or timed out: $(tail -3 "$raw/llama_build.log" | tr '\n' ' ')"
  fi
}

# peer_bench KEY MODEL [ARGS]: llama-bench's pp512 and tg128 (avg_ts) on
# MODEL, -ngl 99 unless ARGS says otherwise; the dry run a short cpu test.
peer_bench() {
  local key=$1 m=$2; shift 2
  [ -n "$peer_bench_bin" ] || return 0
  local args=(-m "$m" -p 512 -n 128 -r 2 -o json)
  [ "$have_gpu" = 1 ] || args=(-m "$m" -p 16 -n 8 -r 1 -o json -t "$(nproc)")
  [ $# -gt 0 ] && args+=("$@") || { [ "$have_gpu" = 1 ] && args+=(-ngl 99); }
  [ "$(left)" -gt 60 ] || { say "$key: peer skipped: out of time"; return 0; }
  step "peer_$key" 120 "$peer_bench_bin" "${args[@]}" || { say "$key: llama-bench failed: $(tail -2 "$raw/peer_$key.log" | tr '\n' ' ')"; return 0; }
  read -r pp tg <<<"$($py - "$raw/peer_$key.log" <<'PY' 2>>"$log"
import json, sys
text = open(sys.argv[1]).read()
rows, dec = [], json.JSONDecoder()
for i, ch in enumerate(text):  # the first '[' that opens llama-bench's array
    if ch != "[":
        continue
    try:
        got, _ = dec.raw_decode(text[i:])
    except ValueError:
        continue
    if isinstance(got, list) and got and isinstance(got[0], dict) and "avg_ts" in got[0]:
        rows = got
        break
pp = [r["avg_ts"] for r in rows if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0]
tg = [r["avg_ts"] for r in rows if r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0]
print(pp[0] if pp else "nan", tg[0] if tg else "nan")
PY
)"
  put "$key.llama_pp" "${pp:-nan}"
  put "$key.llama_tg" "${tg:-nan}"
  say "$key: llama.cpp pp $(printf '%.1f' "${pp:-0}" 2>/dev/null) tok/s, tg $(printf '%.1f' "${tg:-0}" 2>/dev/null) tok/s"
}
