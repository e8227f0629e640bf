#!/usr/bin/env bash
# pjrt_doctor_test.sh — `spillway doctor --backend pjrt`: one diagnosis per
# failure class, each with its exit status, and the working CPU plugin.
#
# usage: tests/pjrt_doctor_test.sh path/to/spillway pjrt CC PJRT_INCLUDE_DIR
#        tests/pjrt_doctor_test.sh path/to/spillway nopjrt
# ($PYTHON, default python3, reads the JSON reports.)
#
# pjrt (a build with the PJRT backend): a missing file, a text file, a
# shared library without GetPjrtApi (libm), the CUDA plugin on a machine
# without a GPU, the CPU plugin, libtpu's lock file held by another process,
# and, with a fake plugin compiled here from PJRT_INCLUDE_DIR's header, a
# wrong C API version and an out-of-memory client. The CPU and CUDA plugins
# must be installed (`spillway fetch pjrt-cpu`, `spillway fetch pjrt-cuda`;
# CI does): a missing one fails the test, it is not skipped.
# nopjrt (a build without it): doctor says so and exits non-zero.
# "not out of memory" is the advice's own negation; any other mention of
# out of memory outside the OOM case is a failure.
set -u

BIN=${1:?usage: pjrt_doctor_test.sh path/to/spillway pjrt|nopjrt [CC PJRT_INCLUDE_DIR]}
MODE=${2:?usage: pjrt_doctor_test.sh path/to/spillway pjrt|nopjrt [CC PJRT_INCLUDE_DIR]}
CC=${3:-cc}
PJRT_INCLUDE=${4:-}
PY=${PYTHON:-python3}
TMP=$(mktemp -d)
HOLDER=
cleanup() {
    [ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

# The installed plugins, found before XDG_CACHE_HOME is pointed elsewhere.
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/spillway
CPU_PLUGIN=$CACHE/pjrt-cpu/fastatomstruct_xla_cpu/libpjrt_cpu.so
CUDA_PLUGIN=$CACHE/pjrt-cuda/jax_plugins/xla_cuda13/xla_cuda_plugin.so
unset SPILLWAY_PJRT_PLUGIN SPILLWAY_PJRT_MEMORY_FRACTION SPILLWAY_TPU_LOCKFILE
export XDG_CACHE_HOME=$TMP/empty-cache   # no plugin here: the default path is missing

. "$(dirname "$0")/check.sh"
has() { grep -qi -- "$2" "$1"; }
lacks() { ! grep -qi -- "$2" "$1"; }
# No "out of memory" except inside "not out of memory".
no_oom() { ! grep -i 'out of memory' "$1" | grep -vqi 'not out of memory'; }

# run NAME ARGS...: doctor's stdout in $TMP/NAME.out, stderr in .err, exit in $rc.
run() {
    local name=$1
    shift
    "$BIN" doctor "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
    rc=$?
    cat "$TMP/$name.out" "$TMP/$name.err" >"$TMP/$name.all"
}
# json_field NAME KEY: the top-level KEY of $TMP/NAME.out as JSON ($PY).
json_field() {
    "$PY" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))[sys.argv[2]]))' \
        "$TMP/$1.out" "$2" 2>/dev/null
}

if [ "$MODE" = nopjrt ]; then
    run nobuild --backend pjrt
    check "no PJRT build: non-zero exit (got $rc)" [ "$rc" -ne 0 ]
    check "no PJRT build: says so" has "$TMP/nobuild.all" "this build has no PJRT backend"
    check "no PJRT build: never out of memory" no_oom "$TMP/nobuild.all"
    echo "pjrt_doctor_test (nopjrt): $checks checks, $failures failures"
    [ "$failures" -eq 0 ]
    exit
fi

# --- 1. missing -----------------------------------------------------------------
run missing --pjrt-plugin "$TMP/no-such-plugin.so"
check "missing file: exit 3 (IO) (got $rc)" [ "$rc" -eq 3 ]
check "missing file: says missing" has "$TMP/missing.out" "plugin missing"
check "missing file: says how to get one" has "$TMP/missing.out" "spillway fetch pjrt-cpu"
check "missing file: mentions --pjrt-plugin" has "$TMP/missing.out" "--pjrt-plugin"
check "missing file: never out of memory" no_oom "$TMP/missing.all"
run missing_default --backend pjrt   # nothing in the (empty) cache folder
check "no plugin in the cache: exit 3 (got $rc)" [ "$rc" -eq 3 ]
check "no plugin in the cache: names the cache path" \
    has "$TMP/missing_default.out" "$TMP/empty-cache/spillway/pjrt-cpu"
check "no plugin in the cache: says how to get one" \
    has "$TMP/missing_default.out" "spillway fetch pjrt-cpu"
run missing_json --pjrt-plugin "$TMP/no-such-plugin.so" --json
check "missing file, JSON: status missing" [ "$(json_field missing_json status)" = '"missing"' ]

# --- 2. not a plugin ------------------------------------------------------------
echo "this is text, not ELF" >"$TMP/plugin.txt"
run text --pjrt-plugin "$TMP/plugin.txt"
check "text file: exit 4 (FORMAT) (got $rc)" [ "$rc" -eq 4 ]
check "text file: says not a shared library" has "$TMP/text.out" "not a shared library"
check "text file: never out of memory" no_oom "$TMP/text.all"

LIBM=$(ldconfig -p 2>/dev/null | awk '/libm\.so\.6 .*x86-64/ {print $NF; exit}')
[ -n "$LIBM" ] || LIBM=$(ldconfig -p 2>/dev/null | awk '/libm\.so\.6/ {print $NF; exit}')
[ -n "$LIBM" ] || LIBM=/lib/x86_64-linux-gnu/libm.so.6
checks=$((checks + 1))
if [ -r "$LIBM" ]; then
    run libm --pjrt-plugin "$LIBM"
    check "libm: exit 4 (FORMAT) (got $rc)" [ "$rc" -eq 4 ]
    check "libm: says not a PJRT plugin" has "$TMP/libm.out" "not a PJRT plugin"
    check "libm: names GetPjrtApi" has "$TMP/libm.out" "GetPjrtApi"
    check "libm: does not call it not a shared library" lacks "$TMP/libm.out" "not a shared library"
else
    fail "no libm.so.6 found (ldconfig -p) to use as a non-plugin library"
fi

# --- 3. the CUDA plugin without a GPU ------------------------------------------------
checks=$((checks + 1))
if [ ! -r "$CUDA_PLUGIN" ]; then
    fail "the CUDA PJRT plugin is not installed at $CUDA_PLUGIN: install it with" \
         "'spillway fetch pjrt-cuda' (CI does), then run the tests again"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; then
    run cuda --pjrt-plugin "$CUDA_PLUGIN"   # a GPU is here: the plugin must work
    check "CUDA plugin with a GPU: exit 0 (got $rc: $(tail -n 3 "$TMP/cuda.all"))" [ "$rc" -eq 0 ]
else
    run cuda --pjrt-plugin "$CUDA_PLUGIN"
    check "CUDA plugin, no GPU: exit 6 (NO_DEVICE) (got $rc)" [ "$rc" -eq 6 ]
    check "CUDA plugin, no GPU: says no device, no GPU" \
        has "$TMP/cuda.out" "no device — the runtime found no GPU; this is not out of memory"
    check "CUDA plugin, no GPU: never out of memory" no_oom "$TMP/cuda.all"
    check "CUDA plugin, no GPU: shows the plugin's C API version" has "$TMP/cuda.out" "C API"
    run cuda_json --pjrt-plugin "$CUDA_PLUGIN" --json
    check "CUDA plugin, no GPU, JSON: status no_device" \
        [ "$(json_field cuda_json status)" = '"no_device"' ]
    check "CUDA plugin, no GPU, JSON: exit 6 (got $rc)" [ "$rc" -eq 6 ]
fi

# --- 4. the CPU plugin works -----------------------------------------------------------
checks=$((checks + 1))
if [ ! -r "$CPU_PLUGIN" ]; then
    fail "the CPU PJRT plugin is not installed at $CPU_PLUGIN: install it with" \
         "'spillway fetch pjrt-cpu' (CI does), then run the tests again"
else
    run cpu --pjrt-plugin "$CPU_PLUGIN"
    check "CPU plugin: exit 0 (got $rc: $(tail -n 3 "$TMP/cpu.all"))" [ "$rc" -eq 0 ]
    check "CPU plugin: platform cpu" grep -q "^  platform       cpu" "$TMP/cpu.out"
    for kind in device pinned_host unpinned_host; do
        check "CPU plugin: memory kind $kind listed" grep -q "^  $kind " "$TMP/cpu.out"
    done
    check "CPU plugin: sizes not reported, so --device-mem" has "$TMP/cpu.out" "--device-mem"
    check "CPU plugin: both C API versions" grep -q "(plugin); .*(pjrt_c_api.h" "$TMP/cpu.out"
    check "CPU plugin: client options shown" grep -q "^  options  " "$TMP/cpu.out"
    check "CPU plugin: no pre-allocation line" has "$TMP/cpu.out" "never lets the runtime grab"
    check "CPU plugin: diagnosis ok" has "$TMP/cpu.out" "ok — the plugin works"
    check "CPU plugin: never out of memory" no_oom "$TMP/cpu.all"
    run cpu_json --pjrt-plugin "$CPU_PLUGIN" --json
    check "CPU plugin, JSON: exit 0 (got $rc)" [ "$rc" -eq 0 ]
    check "CPU plugin, JSON: platform, memory kinds, status" "$PY" - "$TMP/cpu_json.out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
kinds = [m["kind"] for m in r["memories"]]
bad = []
if r["status"] != "ok" or r["message"] is not None: bad.append("status %r" % r["status"])
if r["platform"] != "cpu": bad.append("platform %r" % r["platform"])
if r["n_devices"] < 1: bad.append("n_devices %r" % r["n_devices"])
for k in ("device", "pinned_host", "unpinned_host"):
    if k not in kinds: bad.append("no memory kind %s in %r" % (k, kinds))
if not r["plugin"]["api_version"] or not r["plugin"]["header_api_version"]: bad.append("versions")
if not r["client_options"]: bad.append("no client options")
for b in bad: print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PYEOF
    # The default path, found through XDG_CACHE_HOME, is the same plugin.
    mkdir -p "$TMP/cpu-cache/spillway/pjrt-cpu/fastatomstruct_xla_cpu"
    ln -s "$CPU_PLUGIN" "$TMP/cpu-cache/spillway/pjrt-cpu/fastatomstruct_xla_cpu/libpjrt_cpu.so"
    XDG_CACHE_HOME=$TMP/cpu-cache run cpu_default --backend pjrt
    check "CPU plugin from the cache folder: exit 0 (got $rc)" [ "$rc" -eq 0 ]

    # --- 5. busy: libtpu's lock file held by another process ----------------------------
    mkdir -p "$TMP/tpu"
    ln -s "$CPU_PLUGIN" "$TMP/tpu/libtpu.so"
    LOCK=$TMP/tpu/libtpu_lockfile
    : >"$LOCK"
    SPILLWAY_TPU_LOCKFILE=$LOCK run tpu_free --pjrt-plugin "$TMP/tpu/libtpu.so"
    check "lock file present, not held: exit 0 (got $rc)" [ "$rc" -eq 0 ]
    # The holder execs into sleep with the lock on fd 9: killing it frees the lock.
    ( exec 9>"$LOCK" && flock -x 9 && : >"$TMP/tpu/held" && exec sleep 60 ) &
    HOLDER=$!
    for _ in $(seq 100); do [ -e "$TMP/tpu/held" ] && break; sleep 0.05; done
    checks=$((checks + 1))
    [ -e "$TMP/tpu/held" ] || fail "could not hold $LOCK with flock"
    SPILLWAY_TPU_LOCKFILE=$LOCK run busy --pjrt-plugin "$TMP/tpu/libtpu.so"
    check "busy: exit 6 (NO_DEVICE) (got $rc)" [ "$rc" -eq 6 ]
    check "busy: says busy" has "$TMP/busy.out" "busy"
    check "busy: names the lock file" has "$TMP/busy.out" "$LOCK"
    check "busy: never out of memory" no_oom "$TMP/busy.all"
    SPILLWAY_TPU_LOCKFILE=$LOCK run busy_json --pjrt-plugin "$TMP/tpu/libtpu.so" --json
    check "busy, JSON: status busy" [ "$(json_field busy_json status)" = '"busy"' ]
    kill "$HOLDER" 2>/dev/null
    wait "$HOLDER" 2>/dev/null
    HOLDER=
    SPILLWAY_TPU_LOCKFILE=$LOCK run tpu_after --pjrt-plugin "$TMP/tpu/libtpu.so"
    check "lock released: exit 0 again (got $rc)" [ "$rc" -eq 0 ]
fi

# --- 6. a fake plugin: wrong C API version, out of memory ----------------------------------
cat >"$TMP/fake.c" <<'CEOF'
/* A PJRT "plugin" whose version and client creation the test chooses with
 * FAKE_PJRT_MODE: "version" (C API major + 1) or "oom" (the client fails
 * with RESOURCE_EXHAUSTED). */
#include <stdlib.h>
#include <string.h>
#include "pjrt_c_api.h"
struct PJRT_Error { PJRT_Error_Code code; const char *msg; };
static PJRT_Error oom = {PJRT_Error_Code_RESOURCE_EXHAUSTED,
                         "Out of memory while trying to allocate 17179869184 bytes."};
static void error_destroy(PJRT_Error_Destroy_Args *a) { (void)a; }
static void error_message(PJRT_Error_Message_Args *a) {
    a->message = a->error->msg;
    a->message_size = strlen(a->error->msg);
}
static PJRT_Error *error_code(PJRT_Error_GetCode_Args *a) { a->code = a->error->code; return NULL; }
static PJRT_Error *client_create(PJRT_Client_Create_Args *a) { a->client = NULL; return &oom; }
static PJRT_Api api;
const PJRT_Api *GetPjrtApi(void) {
    const char *mode = getenv("FAKE_PJRT_MODE");
    api.struct_size = PJRT_Api_STRUCT_SIZE;
    api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
    api.pjrt_api_version.major_version = PJRT_API_MAJOR + (mode && !strcmp(mode, "version"));
    api.pjrt_api_version.minor_version = PJRT_API_MINOR;
    api.PJRT_Error_Destroy = error_destroy;
    api.PJRT_Error_Message = error_message;
    api.PJRT_Error_GetCode = error_code;
    api.PJRT_Client_Create = client_create;
    return &api;
}
CEOF
checks=$((checks + 1))
if ! "$CC" -shared -fPIC -I"$PJRT_INCLUDE" -o "$TMP/libfake_pjrt.so" "$TMP/fake.c" \
        2>"$TMP/cc.err"; then
    fail "cannot build the fake plugin with $CC -I$PJRT_INCLUDE: $(cat "$TMP/cc.err")"
else
    FAKE_PJRT_MODE=version run version --pjrt-plugin "$TMP/libfake_pjrt.so"
    check "wrong C API version: exit 4 (FORMAT) (got $rc)" [ "$rc" -eq 4 ]
    check "wrong C API version: says so" has "$TMP/version.out" "wrong PJRT C API version"
    check "wrong C API version: names both majors" \
        grep -q "the plugin has [0-9]*\.[0-9]*, this build speaks [0-9]*\.x" "$TMP/version.out"
    check "wrong C API version: never out of memory" no_oom "$TMP/version.all"
    FAKE_PJRT_MODE=oom run oom --pjrt-plugin "$TMP/libfake_pjrt.so"
    check "out of memory: exit 7 (OOM_DEVICE) (got $rc)" [ "$rc" -eq 7 ]
    check "out of memory: says out of device memory" has "$TMP/oom.out" "out of device memory"
    check "out of memory: gives the numbers" has "$TMP/oom.out" "17179869184 bytes"
    check "out of memory: not called no device" lacks "$TMP/oom.out" "no device"
fi

# --- flags ---------------------------------------------------------------------------------
run badname --backend no-such-backend
check "unknown backend: usage exit 2 (got $rc)" [ "$rc" -eq 2 ]
run novalue --pjrt-plugin
check "--pjrt-plugin without a path: usage exit 2 (got $rc)" [ "$rc" -eq 2 ]

check_summary pjrt_doctor_test
