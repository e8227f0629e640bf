#!/usr/bin/env bash
# The whole test suite, as the README and CI run it:
#   1. release build (CUDA when nvcc is present), warnings as errors, ctest;
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build, ctest (without
#      the tests labelled "slow": whole-model runs and timing checks, which
#      the release stage covers and which teach a sanitizer nothing new);
#   3. the Python package built by pip into a venv, and its pytest suite;
#   4. bounded libFuzzer runs of every untrusted reader (tools/fuzz.sh: GGUF,
#      safetensors, tokenizer.json, config.json, the tokenizer's encoder and
#      decoder, serve's request bodies; 105 s in all, SW_FUZZ_SECONDS for each
#      and a knob per harness).
# Tests read the real default model; it is fetched first if missing, and so
# are the PJRT plugins (pjrt-cpu, whose header makes the release build again
# with the PJRT backend, and pjrt-cuda, which doctor's tests use) and the
# `openai` Python client (serve's tests, into ~/.cache/spillway/test-pydeps).
# Every stage runs even if an earlier one failed; the last line sums up.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
passed=0
failed=0

# stage NAME CMD... — runs one stage, counting it.
stage() {
    local name=$1; shift
    echo "=== $name"
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "=== $name FAILED"; fi
}

build() { # build DIR CMAKE_ARGS...
    local dir=$1; shift
    cmake -S . -B "$dir" -DSPILLWAY_WERROR=ON "$@" >/dev/null && cmake --build "$dir" -j"$jobs"
}

pjrt_plugins() { ./build/spillway fetch pjrt-cpu && ./build/spillway fetch pjrt-cuda; }

# The Python packages the tests drive the server with (the `openai` client;
# Selenium, which drives headless Chromium for the web page's test;
# prometheus_client, whose parser reads /metrics as a gateway would;
# kubernetes-validate, Kubernetes' schemas offline for deploy/kubernetes/),
# pinned, into a folder of their own that tests/serve_openai_test.py,
# tests/webui_browser_test.py, tests/gateway_test.py and
# tests/k8s_manifests_test.py read.
test_pydeps() {
    local dir=${SW_TEST_PYDEPS:-$HOME/.cache/spillway/test-pydeps}
    PYTHONPATH=$dir python3 -c 'import openai, selenium, prometheus_client, kubernetes_validate' \
        2>/dev/null && return 0
    python3 -m pip install --quiet --disable-pip-version-check --target "$dir" "openai==3.60.0" \
        "selenium==4.51.0" "prometheus_client==0.26.0" "kubernetes-validate==1.37.0"
}

# The Python package (python/): pip builds it from the sources into a fresh
# venv (scikit-build-core, pinned, from PyPI), then its pytest suite runs,
# comparing it with the release build's command on the tiny test model.
python_package() {
    local venv=build/python-venv
    rm -rf "$venv" && python3 -m venv "$venv" &&
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "./python[test]" &&
        SPILLWAY_CLI="$PWD/build/spillway" SW_TEST_DATA="$PWD/tests/data" \
            "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests
}

stage "release build" build build
stage "default model" ./build/spillway fetch
stage "pjrt plugins" pjrt_plugins
stage "release build with pjrt" build build
stage "test python packages" test_pydeps
stage "release tests" ctest --test-dir build --output-on-failure -j"$jobs"
stage "python package" python_package
stage "sanitizer build" build build-san -DSPILLWAY_SANITIZE=ON -DSPILLWAY_CUDA=OFF
stage "sanitizer tests" ctest --test-dir build-san --output-on-failure -j"$jobs" -LE slow
stage "fuzz every untrusted reader" tools/fuzz.sh

echo "test stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
