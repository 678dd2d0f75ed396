# Shared by .ci/test, .ci/demo and .ci/run: install what the build needs, configure a build directory.
# Sourced, not run.

WEFT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WEFT_PACKAGES=(meson ninja-build g++ clang pkg-config cmake libboost-dev libboost-context-dev doctest-dev
  libbenchmark-dev libtbb-dev libhwloc-dev relacy-dev graphviz python3-matplotlib clang-format-16 clang-tidy ccache)

# The ARM64 cross build's (`.ci/test arm64`): Debian's cross compiler, qemu-user to run what it builds, and the
# target's libraries through multiarch: Boost.Context for fibers (doctest is header-only, in WEFT_PACKAGES), and
# the loader, libc and libstdc++ qemu runs the tests with (tools/cross/aarch64-linux-gnu.ini says why these).
WEFT_ARM64_PACKAGES=(g++-aarch64-linux-gnu qemu-user libboost-context1.74-dev:arm64 libc6:arm64 libstdc++6:arm64)

# The Windows cross build's (`.ci/test windows`): MinGW-w64's GCC with posix threads (std::thread and friends) and
# Wine to run what it builds (tools/cross/wine64-run). doctest is header-only, in WEFT_PACKAGES.
WEFT_WINDOWS_PACKAGES=(g++-mingw-w64-x86-64-posix wine64)

# weft_install_dependencies [PACKAGE...]: apt-get install the packages named, or all of WEFT_PACKAGES. A package
# named for another architecture (`name:arm64`) first adds that architecture to dpkg (multiarch).
weft_install_dependencies() {
  local packages=("$@")
  [ "$#" -gt 0 ] || packages=("${WEFT_PACKAGES[@]}")
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "weft: need root (or sudo) to apt-get install: ${packages[*]}" >&2; return 1
    fi
  fi
  echo "weft: installing build dependencies (apt-get)"
  local package arch
  for package in "${packages[@]}"; do
    [[ "$package" == *:* ]] || continue
    arch=${package##*:}
    if [ "$arch" != "$(dpkg --print-architecture)" ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
      $sudo dpkg --add-architecture "$arch"
    fi
  done
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
}

# weft_use_ccache: compile through ccache (meson puts it before the compiler when it finds it at setup; the
# install tests pass the same compiler command to their inner builds) with its cache in the checkout's
# build/ccache, never the user's: a fresh clone starts cold, as CI's timings assume, and a second run of the same
# checkout reuses what the first compiled. What it pays for is the install suite (tests/install/), whose inner
# builds compile the same library sources with the same flags in different temporary directories: hash_dir off,
# so that their debug builds (-g) hit although the directory differs (the debug info then names the directory of
# the build that filled the cache). Between the stages, the nofibers build takes the release build's objects
# wherever a source does not depend on WEFT_FIBERS (.ci/test); the sanitizer builds' flags differ from every other.
weft_use_ccache() {
  export CCACHE_DIR="$WEFT_ROOT/build/ccache"
  export CCACHE_NOHASHDIR=1
  # Paths under the checkout are hashed relative to the build directory, so that two build directories at the same
  # depth (build/release, build/nofibers) can share objects (tests/meson.build says what else that needs).
  export CCACHE_BASEDIR="$WEFT_ROOT"
}

# weft_configure DIR [meson options...]: set up DIR (or reconfigure it with these options) with warnings as errors.
# WEFT_SETUP_ARGS (an array, may be unset): what only `meson setup` takes, such as --cross-file.
# The setup runs from inside DIR: meson's cmake module runs `cmake --system-information` in the working directory,
# which makes and removes __cmake_systeminformation there, and two setups at once from one directory (CI's release
# stage and its background lane's first build) broke each other's ("CMAKE_CXX_COMPILER not set").
weft_configure() {
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" --werror "$@" >/dev/null
  else
    mkdir -p "$dir"
    (cd "$dir" && meson setup "$dir" "$WEFT_ROOT" --werror ${WEFT_SETUP_ARGS[@]+"${WEFT_SETUP_ARGS[@]}"} "$@")
  fi
}

# weft_cross_ccache_file FILE COMPILER: writes a meson cross file that puts ccache before COMPILER, when ccache is
# installed (meson puts it before native compilers itself, never before a cross file's); prints FILE, or nothing.
weft_cross_ccache_file() {
  command -v ccache >/dev/null 2>&1 || return 0
  mkdir -p "$(dirname "$1")"
  printf "[binaries]\ncpp = ['ccache', '%s']\n" "$2" >"$1"
  echo "$1"
}
