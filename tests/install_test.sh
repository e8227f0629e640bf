#!/usr/bin/env bash
# install_test.sh — the installed library, used as another program would:
# `cmake --install` into a temporary prefix, then examples/generate.c
# built against it twice, with pkg-config and with find_package(spillway),
# each run on a tiny model and giving the very text `spillway run` gives
# (greedy); libspillway.so exports every SW_API function of the installed
# header and no symbol but sw_*; sw_version() is the project's version.
# usage: install_test.sh BUILD_DIR SOURCE_DIR SPILLWAY_BINARY TINY_MODEL [--sanitize]
set -u
build=$1 src=$2 exe=$3 model=$4
san=""
[ "${5:-}" = "--sanitize" ] && san="-fsanitize=address,undefined"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check.sh"
prefix="$tmp/prefix"

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1
rc=$?; check "cmake --install ($(tail -1 "$tmp/install.log"))" [ $rc -eq 0 ]
libdir=$(dirname "$(find "$prefix" -name 'libspillway.so' | head -1)")
check "libspillway.so, libspillway.a and spillway.h installed" \
    [ -f "$libdir/libspillway.so" -a -f "$libdir/libspillway.a" -a -f "$prefix/include/spillway.h" ]
check "spillway.pc and the CMake package installed" \
    [ -f "$libdir/pkgconfig/spillway.pc" -a -f "$libdir/cmake/spillway/spillwayConfig.cmake" ]

# exports: nothing but sw_*, and every function the header declares
nm -D --defined-only "$libdir/libspillway.so" | awk '$2 ~ /^[TtWDdBbRr]$/ {print $3}' |
    sort -u >"$tmp/exported"
grep -v '^sw_' "$tmp/exported" >"$tmp/foreign"
check "only sw_* exported ($(wc -l <"$tmp/exported") symbols; others: $(head -3 "$tmp/foreign" | tr '\n' ' '))" \
    [ ! -s "$tmp/foreign" ]
sed -n 's/^SW_API .*[ *]\(sw_[a-z0-9_]*\)(.*/\1/p' "$prefix/include/spillway.h" \
    "$prefix/include/spillway_grammar.h" "$prefix/include/spillway_doctor.h" |
    sort -u >"$tmp/declared"
comm -23 "$tmp/declared" "$tmp/exported" >"$tmp/missing"
check "every SW_API function exported ($(wc -l <"$tmp/declared") declared; missing: $(head -3 "$tmp/missing" | tr '\n' ' '))" \
    [ -s "$tmp/declared" -a ! -s "$tmp/missing" ]

want=$("$exe" run -m "$model" -p "hello world" -n 12 --temp 0 -c 256 2>/dev/null)

# pkg-config
# shellcheck disable=SC2046
PKG_CONFIG_PATH="$libdir/pkgconfig" cc $san -o "$tmp/gen_pc" "$src/examples/generate.c" \
    $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs spillway) 2>"$tmp/cc.log"
rc=$?; check "examples/generate.c builds with pkg-config ($(head -1 "$tmp/cc.log"))" [ $rc -eq 0 ]
got=$(LD_LIBRARY_PATH="$libdir" "$tmp/gen_pc" "$model" "hello world" 12 2>"$tmp/run.log")
rc=$?; check "the pkg-config build runs ($(tail -1 "$tmp/run.log"))" [ $rc -eq 0 ]
check "its text is spillway run's ('$got' vs '$want')" [ "$got" = "$want" -a -n "$want" ]

# find_package(spillway)
mkdir -p "$tmp/cm"
cat >"$tmp/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(generate C)
find_package(spillway 0.1 REQUIRED)
add_executable(generate $src/examples/generate.c)
target_link_libraries(generate PRIVATE spillway::spillway)
CM
cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$san" \
    >"$tmp/cm.log" 2>&1 && cmake --build "$tmp/cm/b" >>"$tmp/cm.log" 2>&1
rc=$?; check "examples/generate.c builds with find_package(spillway) ($(tail -1 "$tmp/cm.log"))" \
    [ $rc -eq 0 ]
got=$(LD_LIBRARY_PATH="$libdir" "$tmp/cm/b/generate" "$model" "hello world" 12 2>/dev/null)
check "the CMake build gives the same text" [ "$got" = "$want" ]

# the version the library reports
cat >"$tmp/v.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <spillway.h>
int main(void) { puts(sw_version()); return strcmp(sw_version(), SW_VERSION_STRING) != 0; }
C
cc $san -o "$tmp/v" "$tmp/v.c" -I"$prefix/include" -L"$libdir" -lspillway &&
    LD_LIBRARY_PATH="$libdir" "$tmp/v" >"$tmp/v.out"
rc=$?; check "sw_version() is the header's version ($(cat "$tmp/v.out"))" [ $rc -eq 0 ]
check_summary install_test
