# Shared by .ci/test, .ci/demo and .ci/run: install what the build needs, configure a build directory.
# Sourced, not run.

WEFT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WEFT_PACKAGES=(meson ninja-build g++ clang pkg-config cmake libboost-dev libboost-context-dev doctest-dev
  libbenchmark-dev libtbb-dev relacy-dev graphviz python3-matplotlib clang-format-16 clang-tidy)

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

# weft_configure DIR [meson options...]: set up DIR (or reconfigure it with these options) with warnings as errors.
weft_configure() {
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" --werror "$@" >/dev/null
  else
    meson setup "$dir" "$WEFT_ROOT" --werror "$@"
  fi
}
