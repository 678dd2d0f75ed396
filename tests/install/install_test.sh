#!/usr/bin/env bash
# Installs weft as a user would and links a program against the installed copy with compilers other than the one
# that built it: g++ without LTO and without its linker plugin (so LTO bytecode alone cannot satisfy the link,
# as for another GCC) and, when it is on PATH, clang++. Two inner builds, each into its own prefix:
#   static: the defaults (default_library=static, b_lto=true), the case whose archive must hold machine code;
#   shared: default_library=shared, so libweft.so (and no archive) must be installed and found at run time.
# The consumer finds weft through pkg-config only, must use the Pool, a Future and a TaskGraph, and must print ok.
#
# usage: install_test.sh SOURCE_ROOT B_SANITIZE WERROR MESON NINJA CXX...
#   B_SANITIZE: the outer build's b_sanitize; anything but 'none' skips (77): this rebuilds weft twice.
#   CXX...: the compiler that builds the inner weft (the outer build's), as meson runs it.
set -euo pipefail

if [ $# -lt 6 ]; then
  echo "usage: $0 SOURCE_ROOT B_SANITIZE WERROR MESON NINJA CXX..." >&2
  exit 2
fi
src=$1 sanitize=$2 werror=$3 meson=$4 ninja=$5
shift 5
inner_cxx="$*"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ "$sanitize" != none ]; then
  echo "install_test: skipped under b_sanitize=$sanitize (it rebuilds weft; the release build runs it)"
  exit 77
fi
for tool in pkg-config g++; do
  command -v "$tool" >/dev/null || { echo "install_test: $tool not found on PATH" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

consumers=(g++)
if command -v clang++ >/dev/null; then
  consumers+=(clang++)
else
  echo "install_test: clang++ not found on PATH: linking with g++ only"
fi

fail() { echo "install_test: FAILED: $*" >&2; exit 1; }

# build_and_install KIND MESON_OPTIONS...: configure, build and install weft into $work/prefix-KIND.
build_and_install() {
  local kind=$1; shift
  local build=$work/build-$kind prefix=$work/prefix-$kind
  echo "install_test: [$kind] building weft ($*) with $inner_cxx"
  CXX=$inner_cxx "$meson" setup "$build" "$src" --prefix "$prefix" --wrap-mode=nodownload -Dwerror="$werror" \
    -Dtests=disabled -Dbenchmarks=disabled -Dmodel_tests=disabled "$@" >"$work/setup-$kind.log" 2>&1 \
    || { cat "$work/setup-$kind.log" >&2; fail "[$kind] meson setup"; }
  "$ninja" -C "$build" -j 2 >"$work/build-$kind.log" 2>&1 \
    || { cat "$work/build-$kind.log" >&2; fail "[$kind] build"; }
  "$meson" install -C "$build" --quiet >"$work/install-$kind.log" 2>&1 \
    || { cat "$work/install-$kind.log" >&2; fail "[$kind] meson install"; }
}

# check_prefix KIND: the installed files are those of KIND, and the TSan suppressions are installed.
check_prefix() {
  local kind=$1 prefix=$work/prefix-$1
  local pc
  pc=$(find "$prefix" -name weft.pc -print -quit)
  [ -n "$pc" ] || fail "[$kind] no weft.pc installed under $prefix"
  PKG_CONFIG_PATH=$(dirname "$pc")
  export PKG_CONFIG_PATH
  local libdir
  libdir=$(pkg-config --variable=libdir weft)
  local archives shared_libs
  archives=$(find "$libdir" -maxdepth 1 -name 'libweft.a' | wc -l)
  shared_libs=$(find "$libdir" -maxdepth 1 -name 'libweft.so*' | wc -l)
  case "$kind" in
    static) if [ "$archives" != 1 ] || [ "$shared_libs" != 0 ]; then
              fail "[$kind] expected libweft.a and no libweft.so in $libdir: $(ls "$libdir")"
            fi ;;
    shared) if [ "$archives" != 0 ] || [ "$shared_libs" = 0 ]; then
              fail "[$kind] expected libweft.so and no libweft.a in $libdir: $(ls "$libdir")"
            fi ;;
  esac
  [ -f "$prefix/share/weft/tsan.supp" ] || fail "[$kind] share/weft/tsan.supp was not installed"
}

# link_and_run KIND CXX: compile the consumer against the installed weft, run it.
link_and_run() {
  local kind=$1 cxx=$2
  local exe=$work/consumer-$kind-$cxx
  local -a extra=()
  # g++ would otherwise hand LTO bytecode to its own linker plugin and hide a library without machine code.
  [ "$cxx" = g++ ] && extra+=(-fno-lto -fno-use-linker-plugin)
  [ "$kind" = shared ] && extra+=("-Wl,-rpath,$(pkg-config --variable=libdir weft)")
  echo "install_test: [$kind] $cxx: compiling and linking the consumer"
  # shellcheck disable=SC2046  # pkg-config's output is a list of words
  "$cxx" -std=c++20 -Wall -Wextra -Werror $(pkg-config --cflags weft) "${extra[@]}" "$here/consumer.cpp" \
    -o "$exe" $(pkg-config --libs weft) >"$work/link.log" 2>&1 \
    || { head -c 4000 "$work/link.log" >&2; fail "[$kind] $cxx could not build the consumer"; }
  "$exe" || fail "[$kind] the consumer built by $cxx exited with $?"
}

build_and_install static
check_prefix static
for cxx in "${consumers[@]}"; do link_and_run static "$cxx"; done

build_and_install shared -Ddefault_library=shared
check_prefix shared
for cxx in "${consumers[@]}"; do link_and_run shared "$cxx"; done

echo "install_test: ok (static and shared, linked by: ${consumers[*]})"
