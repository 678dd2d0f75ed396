#!/usr/bin/env bash
# Installs weft as a user would and links a program against the installed copy with compilers other than the one
# that built it: g++ without LTO and without its linker plugin (so LTO bytecode alone cannot satisfy the link,
# as for another GCC) and, when it is on PATH, clang++. Two inner builds, each into its own prefix:
#   static: the defaults (default_library=static, b_lto=true), the case whose archive must hold machine code;
#   shared: default_library=shared, so libweft.so (and no archive) must be installed and found at run time.
# The consumer finds weft through pkg-config only, must use the Pool, a Future and a TaskGraph, and must print ok.
# The same program is then built by CMake (cmake/CMakeLists.txt) through the installed CMake package,
# find_package(weft 0.1 CONFIG) and the target weft::weft, and must link the library of the prefix's kind.
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
for tool in pkg-config g++ cmake readelf; do
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
    -Dtests=disabled -Dbenchmarks=disabled -Dmodel_tests=disabled -Dcmake_package=enabled "$@" \
    >"$work/setup-$kind.log" 2>&1 \
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

# cmake_consumer KIND: build cmake/CMakeLists.txt (the same consumer) against the prefix through weft's CMake
# package alone, and run it; a shared weft must be what the program loads, a static one must not be loaded at all.
cmake_consumer() {
  local kind=$1 prefix=$work/prefix-$1 build=$work/cmake-$1
  local config
  config=$(find "$prefix" -name weftConfig.cmake -print -quit)
  [ -n "$config" ] || fail "[$kind] no weftConfig.cmake installed under $prefix"
  [ -f "$(dirname "$config")/weftConfigVersion.cmake" ] || fail "[$kind] no weftConfigVersion.cmake beside $config"
  echo "install_test: [$kind] cmake: find_package(weft 0.1 CONFIG), building the consumer"
  cmake -S "$here/cmake" -B "$build" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$work/cmake-$kind.log" 2>&1 \
    || { cat "$work/cmake-$kind.log" >&2; fail "[$kind] cmake could not configure the consumer"; }
  grep -q "^weft_DIR:PATH=$(dirname "$config")\$" "$build/CMakeCache.txt" \
    || fail "[$kind] cmake found weft elsewhere: $(grep '^weft_DIR' "$build/CMakeCache.txt")"
  cmake --build "$build" >"$work/cmake-build-$kind.log" 2>&1 \
    || { head -c 4000 "$work/cmake-build-$kind.log" >&2; fail "[$kind] cmake could not build the consumer"; }
  local needed
  needed=$(readelf -d "$build/consumer" | grep -c 'NEEDED.*libweft\.so' || true)
  case "$kind" in
    static) [ "$needed" = 0 ] || fail "[$kind] the CMake consumer needs libweft.so" ;;
    shared) [ "$needed" = 1 ] || fail "[$kind] the CMake consumer does not need libweft.so" ;;
  esac
  "$build/consumer" || fail "[$kind] the consumer built by cmake exited with $?"
}

build_and_install static
check_prefix static
for cxx in "${consumers[@]}"; do link_and_run static "$cxx"; done
cmake_consumer static

build_and_install shared -Ddefault_library=shared
check_prefix shared
for cxx in "${consumers[@]}"; do link_and_run shared "$cxx"; done
cmake_consumer shared

echo "install_test: ok (static and shared, linked by: ${consumers[*]}; and by cmake through weft::weft)"
