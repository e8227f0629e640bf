#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages that building Spillway and
# `spillway fetch` need (README command 1 runs it first), skipping every one
# that is already installed: cmake (>= 3.25), make, gcc, libc6-dev,
# libjson-c-dev, libmicrohttpd-dev and pkg-config (serve), ca-certificates,
# and python3 with pip. `--test` adds what
# scripts/test.sh needs on top (clang and libclang-rt-14-dev: libFuzzer and
# the sanitizers; python3-venv: the Python package's test venv; chromium and
# chromium-driver: the headless browser serve's web page is tested in);
# .ci/run uses that. Runs apt-get as root, or through sudo
# when not root. When everything is present it prints one line and takes well
# under a second; otherwise it prints one line per step it takes.
set -euo pipefail

say() { echo "spillway deps: $*"; }
die() { echo "spillway deps: error: $*" >&2; exit 1; }

packages=(cmake make gcc libc6-dev libjson-c-dev libmicrohttpd-dev pkg-config ca-certificates)
for arg in "$@"; do
    case $arg in
        --test) packages+=(clang libclang-rt-14-dev python3-venv chromium chromium-driver) ;;
        -h|--help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) die "unknown argument '$arg' (usage: $0 [--test])" ;;
    esac
done

# Debian 12 and Ubuntu 23.04 ship CMake >= 3.25; older releases need a newer one.
check_cmake_version() {
    local version major minor
    version=$(cmake --version 2>/dev/null | sed -n '1s/^cmake version \([0-9][0-9.]*\).*/\1/p')
    IFS=. read -r major minor _ <<<"${version:-0.0}"
    if ((major < 3 || (major == 3 && minor < 25))); then
        die "CMake ${version:-(none on PATH)} is too old: Spillway needs 3.25 or newer
(this release's cmake package is older; get one from https://apt.kitware.com or 'python3 -m pip install cmake')."
    fi
}

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
    die "this is not a Debian/Ubuntu-like system (no apt-get/dpkg-query), so nothing was installed.
Install by hand: CMake >= 3.25, make, a C11 compiler (gcc or clang) with the C library headers,
json-c with its development files and CMake package (json-c-config.cmake), python3 with pip,
and CA certificates$( [[ " ${packages[*]} " == *" clang "* ]] && echo "; for the tests also clang with libFuzzer and the sanitizer runtimes" ).
Then run README command 1 without this first step."
fi

missing=()
for pkg in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    case $status in
        *" ok installed"|*" ok triggers-awaiting"|*" ok triggers-pending") ;;
        *) missing+=("$pkg") ;;
    esac
done
# `python3 -m pip` needs python3 on PATH and pip's __main__ module. Importing
# that module (it runs nothing on import) takes 0.1 s where
# `python3 -m pip --version` takes most of a second; that full check runs
# after installing.
if ! python3 -c 'import pip.__main__' >/dev/null 2>&1; then
    missing+=(python3-pip)
fi

if ((${#missing[@]} > 0)); then
    command_text="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
    if [[ $(id -u) -eq 0 ]]; then
        as_root=(env DEBIAN_FRONTEND=noninteractive)
    elif command -v sudo >/dev/null 2>&1; then
        as_root=(sudo env DEBIAN_FRONTEND=noninteractive)
    else
        die "missing packages: ${missing[*]}
You are not root and sudo is not installed; as root, run:
    $command_text"
    fi
    apt_log=$(mktemp)
    trap 'rm -f "$apt_log"' EXIT
    # run_apt ARGS... — apt-get as root, quiet unless it fails.
    run_apt() {
        if ! "${as_root[@]}" apt-get -q "$@" >"$apt_log" 2>&1; then
            tail -n 20 "$apt_log" >&2
            die "'apt-get $*' failed (output above). Missing packages: ${missing[*]}
To install them yourself, as root run:
    $command_text"
        fi
    }
    say "updating package lists (apt-get update)"
    run_apt update
    say "installing: ${missing[*]}"
    run_apt install -y --no-install-recommends "${missing[@]}"
    if ! python3 -m pip --version >"$apt_log" 2>&1; then
        die "python3 -m pip still does not work for $(command -v python3 || echo 'python3 (not on PATH)'):
$(tail -n 3 "$apt_log")
Give that python3 pip (python3 -m ensurepip), or put /usr/bin first on PATH."
    fi
    check_cmake_version
else
    check_cmake_version
    say "all present"
fi
