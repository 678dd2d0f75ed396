#!/usr/bin/env bash
# Installs weft as a user would and links a program against the installed copy with compilers other than the one
# that built it: g++ without LTO and without its linker plugin (so LTO bytecode alone cannot satisfy the link,
# as for another GCC) and, when it is on PATH, clang++. Two inner builds, each into its own prefix:
#   static: the defaults (default_library=static, b_lto=true): the installed archive must hold plain objects, no
#           LTO sections (install_lto is off), so that an ordinary g++ link (its linker plugin on) runs no LTO over
#           weft; the time of that link of the one-file consumer is printed (not checked: the machine may be busy);
#   shared: default_library=shared, so libweft.so (and no archive) must be installed and found at run time; built
#           by clang++ when it is on PATH (docs/guide.md states the oldest clang weft builds with: the one here),
#           else by the outer build's compiler.
# The consumer finds weft through pkg-config only (`pkg-config --libs` and `--libs --static` must both link; weft.pc
# must name no library by absolute path and leak no dependency's -I or -D flags), must use the Pool, a Future and a
# TaskGraph, and must print ok with the project's version (<weft/version.hpp>, installed). The same program is then
# built by CMake twice: through the installed CMake package (cmake/CMakeLists.txt: find_package(weft 0.1 CONFIG),
# the target weft::weft) and through weft.pc (cmake_pkgconfig/CMakeLists.txt: pkg_check_modules(... IMPORTED_TARGET
# weft), the target PkgConfig::WEFT); each must link the library of the prefix's kind.
#
# usage: install_test.sh SOURCE_ROOT B_SANITIZE WERROR MESON NINJA CXX...
#   B_SANITIZE: the outer build's b_sanitize; anything but 'none' skips (77): this rebuilds weft twice.
#   CXX...: the compiler that builds the inner weft (the outer build's), as meson runs it.
# WEFT_OUTER_BUILD (optional): the outer build's directory. The static build then sits beside it rather than in a
# temporary directory, so that its compile commands, source paths relative to the build directory included, are
# the outer build's library's to the byte when their options agree (the defaults: .ci/test's release build), and
# ccache (.ci/common.sh) gives back the outer build's objects instead of compiling the library again.
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
for tool in pkg-config g++ cmake readelf python3; do
  command -v "$tool" >/dev/null || { echo "install_test: $tool not found on PATH" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-install-test.XXXXXX")
static_build=
trap 'rm -rf "$work" ${static_build:+"$static_build"}' EXIT
if [ -n "${WEFT_OUTER_BUILD:-}" ]; then
  static_build=$(mktemp -d "$(dirname "$WEFT_OUTER_BUILD")/weft-install-static.XXXXXX" 2>/dev/null) || static_build=
fi

consumers=(g++)
if command -v clang++ >/dev/null; then
  consumers+=(clang++)
else
  echo "install_test: clang++ not found on PATH: linking with g++ only"
fi

fail() { echo "install_test: FAILED: $*" >&2; exit 1; }

# build_and_install KIND CXX MESON_OPTIONS...: configure with compiler CXX, build and install weft into
# $work/prefix-KIND.
build_and_install() {
  local kind=$1 cxx=$2; shift 2
  local build=$work/build-$kind prefix=$work/prefix-$kind
  [ "$kind" = static ] && [ -n "$static_build" ] && build=$static_build
  echo "install_test: [$kind] building weft ($*) with $cxx: $($cxx --version | head -n 1)"
  CXX=$cxx "$meson" setup "$build" "$src" --prefix "$prefix" --wrap-mode=nodownload -Dwerror="$werror" \
    -Dtests=disabled -Dbenchmarks=disabled -Dmodel_tests=disabled -Dcmake_package=enabled "$@" \
    >"$work/setup-$kind.log" 2>&1 \
    || { cat "$work/setup-$kind.log" >&2; fail "[$kind] meson setup"; }
  "$ninja" -C "$build" -j 2 >"$work/build-$kind.log" 2>&1 \
    || { cat "$work/build-$kind.log" >&2; fail "[$kind] build"; }
  "$meson" install -C "$build" --quiet >"$work/install-$kind.log" 2>&1 \
    || { cat "$work/install-$kind.log" >&2; fail "[$kind] meson install"; }
  version=$("$meson" introspect "$build" --projectinfo \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
}

# run_consumer KIND WHO EXE: run the consumer; it must print ok with the project's version.
run_consumer() {
  local kind=$1 who=$2 exe=$3 out
  out=$("$exe") || fail "[$kind] the consumer built by $who exited with $?: $out"
  echo "$out"
  [ "$out" = "consumer: ok (weft $version)" ] \
    || fail "[$kind] the consumer built by $who printed '$out'; expected 'consumer: ok (weft $version)'"
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
  local includedir
  includedir=$(pkg-config --variable=includedir weft)
  [ -f "$includedir/weft/version.hpp" ] || fail "[$kind] include/weft/version.hpp was not installed"
  if [ -e "$includedir/weft/version.hpp.in" ] || [ -e "$includedir/weft/meson.build" ]; then
    fail "[$kind] include/weft/ holds build files: $(ls "$includedir/weft")"
  fi
  # weft.pc: libraries as -l (an absolute path is taken as a flag by CMake's pkg_check_modules and put before the
  # objects), nothing from Boost in Cflags (no public header includes it; -foptimize-sibling-calls is weft's own:
  # ../../meson.build, weft_coro_args), and libweft first in Libs.
  echo "install_test: [$kind] weft.pc: Libs: $(pkg-config --libs weft); static: $(pkg-config --libs --static weft);" \
    "Cflags: $(pkg-config --cflags weft)"
  local word
  for word in $(pkg-config --libs --static weft) $(pkg-config --cflags weft); do
    case "$word" in
      -L*|-l*|-pthread|-foptimize-sibling-calls) ;;
      -I*) [ "$word" = "-I$includedir" ] || fail "[$kind] weft.pc gives an include directory not its own: $word" ;;
      *) fail "[$kind] weft.pc gives '$word': libraries must be -l names," \
           "and Cflags only weft's -I, -pthread and -foptimize-sibling-calls" ;;
    esac
  done
  [ "$(pkg-config --libs-only-l weft | awk '{print $1}')" = -lweft ] \
    || fail "[$kind] weft.pc's Libs must start with -lweft, before what it needs: $(pkg-config --libs weft)"
  if [ "$kind" = static ]; then
    # install_lto is off: plain objects, so that no consumer's link runs LTO over weft.
    local lto_sections
    lto_sections=$(readelf -S --wide "$libdir/libweft.a" | grep -c '\.gnu\.lto_' || true)
    [ "$lto_sections" = 0 ] || fail "[$kind] libweft.a holds $lto_sections LTO sections (.gnu.lto_*)"
  fi
}

# link_and_run KIND CXX: compile the consumer against the installed weft, link it as a user would (the compiler's
# defaults, `pkg-config --libs`) and print how long that link took; then, for g++, link it again without LTO and
# without the linker plugin, with `pkg-config --libs --static`; run what was linked.
link_and_run() {
  local kind=$1 cxx=$2
  local exe=$work/consumer-$kind-$cxx obj=$work/consumer-$kind-$cxx.o
  local -a rpath=()
  [ "$kind" = shared ] && rpath=("-Wl,-rpath,$(pkg-config --variable=libdir weft)")
  echo "install_test: [$kind] $cxx: compiling and linking the consumer"
  # shellcheck disable=SC2046  # pkg-config's output is a list of words
  "$cxx" -std=c++20 -Wall -Wextra -Werror $(pkg-config --cflags weft) -c "$here/consumer.cpp" -o "$obj" \
    >"$work/compile.log" 2>&1 || { head -c 4000 "$work/compile.log" >&2; fail "[$kind] $cxx could not compile"; }
  local start end
  start=$(date +%s%N)
  # shellcheck disable=SC2046
  "$cxx" "$obj" -o "$exe" "${rpath[@]}" $(pkg-config --libs weft) >"$work/link.log" 2>&1 \
    || { head -c 4000 "$work/link.log" >&2; fail "[$kind] $cxx could not link the consumer (pkg-config --libs)"; }
  end=$(date +%s%N)
  echo "install_test: [$kind] $cxx: the one-file consumer linked in" \
    "$(awk -v ns=$((end - start)) 'BEGIN { printf "%.2f", ns / 1e9 }') s" \
    "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  run_consumer "$kind" "$cxx" "$exe"
  if [ "$cxx" = g++ ]; then
    # Machine code must be there without the plugin, as for another GCC; --static: Libs.private too.
    # shellcheck disable=SC2046
    "$cxx" -fno-lto -fno-use-linker-plugin "$obj" -o "$exe-static-flags" "${rpath[@]}" \
      $(pkg-config --libs --static weft) >"$work/link.log" 2>&1 \
      || { head -c 4000 "$work/link.log" >&2
           fail "[$kind] $cxx -fno-lto -fno-use-linker-plugin could not link the consumer" \
             "(pkg-config --libs --static)"; }
    run_consumer "$kind" "$cxx --static flags" "$exe-static-flags"
  fi
}

# cmake_consumer KIND WAY: build the same consumer with CMake against the prefix, WAY being `package` (weft's CMake
# package alone: cmake/CMakeLists.txt) or `pkgconfig` (weft.pc alone: cmake_pkgconfig/CMakeLists.txt), and run
# it; a shared weft must be what the program loads, a static one must not be loaded at all.
cmake_consumer() {
  local kind=$1 way=$2 prefix=$work/prefix-$1 build=$work/cmake-$1-$2
  local project=$here/cmake
  local -a found_by=(-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
  local config=
  if [ "$way" = package ]; then
    config=$(find "$prefix" -name weftConfig.cmake -print -quit)
    [ -n "$config" ] || fail "[$kind] no weftConfig.cmake installed under $prefix"
    [ -f "$(dirname "$config")/weftConfigVersion.cmake" ] || fail "[$kind] no weftConfigVersion.cmake beside $config"
    echo "install_test: [$kind] cmake: find_package(weft 0.1 CONFIG), building the consumer"
  else
    project=$here/cmake_pkgconfig
    found_by=()  # PKG_CONFIG_PATH (check_prefix) is all it has
    echo "install_test: [$kind] cmake: pkg_check_modules(WEFT REQUIRED IMPORTED_TARGET weft), building the consumer"
  fi
  cmake -S "$project" -B "$build" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" "${found_by[@]}" \
    >"$work/cmake-$kind-$way.log" 2>&1 \
    || { cat "$work/cmake-$kind-$way.log" >&2; fail "[$kind] cmake could not configure the consumer ($way)"; }
  if [ "$way" = package ]; then
    grep -q "^weft_DIR:PATH=$(dirname "$config")\$" "$build/CMakeCache.txt" \
      || fail "[$kind] cmake found weft elsewhere: $(grep '^weft_DIR' "$build/CMakeCache.txt")"
  fi
  cmake --build "$build" >"$work/cmake-build-$kind-$way.log" 2>&1 \
    || { head -c 4000 "$work/cmake-build-$kind-$way.log" >&2
         fail "[$kind] cmake could not build the consumer ($way)"; }
  local needed
  needed=$(readelf -d "$build/consumer" | grep -c 'NEEDED.*libweft\.so' || true)
  case "$kind" in
    static) [ "$needed" = 0 ] || fail "[$kind] the CMake consumer ($way) needs libweft.so" ;;
    shared) [ "$needed" = 1 ] || fail "[$kind] the CMake consumer ($way) does not need libweft.so" ;;
  esac
  run_consumer "$kind" "cmake ($way)" "$build/consumer"
}

build_and_install static "$inner_cxx"
check_prefix static
for cxx in "${consumers[@]}"; do link_and_run static "$cxx"; done
cmake_consumer static package
cmake_consumer static pkgconfig

shared_cxx=$inner_cxx
command -v clang++ >/dev/null && shared_cxx=clang++
# In unity files (a third of the CPU): every source still goes through clang++, and the static build above builds
# source by source.
build_and_install shared "$shared_cxx" -Ddefault_library=shared -Dlibrary_unity=true
check_prefix shared
for cxx in "${consumers[@]}"; do link_and_run shared "$cxx"; done
cmake_consumer shared package
cmake_consumer shared pkgconfig

echo "install_test: ok (weft $version, static built by $inner_cxx and shared by $shared_cxx, linked by:" \
  "${consumers[*]}; and by cmake through weft::weft and through weft.pc)"
