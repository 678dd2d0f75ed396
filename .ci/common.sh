# Shared by .ci/test, .ci/demo and .ci/run: install what the build needs, configure a build directory.
# Sourced, not run.

WEFT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WEFT_PACKAGES=(meson ninja-build g++ clang pkg-config cmake libboost-dev libboost-context-dev doctest-dev
  libbenchmark-dev libtbb-dev relacy-dev graphviz python3-matplotlib clang-format-16 clang-tidy ccache)

# weft_install_dependencies [PACKAGE...]: apt-get install the packages named, or all of WEFT_PACKAGES.
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
weft_configure() {
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" --werror "$@" >/dev/null
  else
    meson setup "$dir" "$WEFT_ROOT" --werror "$@"
  fi
}
