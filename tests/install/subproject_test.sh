#!/usr/bin/env bash
# weft as a subproject of a consumer's meson project, in one of the ways meson offers (STYLE), built offline with
# warnings as errors (-Dwerror=true -Dwarning_level=3) and run. The consumer is consumer.cpp beside this script.
# Before building, `meson introspect` of the consumer's build must show that weft's options passed through and
# that weft built its library and nothing else: none of its tests or benchmarks.
#
#   dependency     `dependency('weft')`, weft a symlink at subprojects/weft: meson falls back to the directory of
#                  that name, and weft's meson.override_dependency('weft', ...) answers. The default options, and
#                  -Dweft:tests=enabled -Dweft:benchmarks=enabled on the command line: weft builds neither as a
#                  subproject, and the consumer's configure output must carry weft's warning saying so.
#   fallback       `dependency('weft', fallback: 'weft', default_options: ['fibers=disabled',
#                  'default_library=static'])`: a static library, fibers disabled.
#   fallback_pair  `dependency('weft', fallback: ['weft', 'weft_dep'], default_options: ['default_library=shared'])`:
#                  a shared library, which the consumer finds at run time.
#   get_variable   `subproject('weft').get_variable('weft_dep')`, in a release build with b_lto=true (what the
#                  docs/building.md recommends for speed).
#   wrap_file      `dependency('weft')` through subprojects/weft.wrap, a [wrap-file] that tools/make_wrap.py made
#                  from the tarball of `meson dist` (of the committed tree: meson dist archives git's HEAD),
#                  with --wrap-mode=nodownload and the tarball in subprojects/packagecache: its source_url (a
#                  file: URL) must not be needed. Skipped (77) when SOURCE_ROOT is not a git work tree.
# fallback, get_variable and wrap_file also pass -Dweft:library_unity=true on the consumer's command line (an
# option of weft's passed through): weft's library then compiles in unity files, a third of the CPU, and these
# three check how meson finds weft, not how its sources compile; dependency, fallback_pair, readme_test.sh and
# install_test.sh's static build build it source by source, as users do.
#
# usage: subproject_test.sh STYLE SOURCE_ROOT B_SANITIZE MESON NINJA CXX...
#   B_SANITIZE: the outer build's b_sanitize; anything but 'none' skips (77): this rebuilds weft.
#   CXX...: the compiler for the consumer project (the outer build's), as meson runs it.
set -euo pipefail

if [ $# -lt 6 ]; then
  echo "usage: $0 STYLE SOURCE_ROOT B_SANITIZE MESON NINJA CXX..." >&2
  exit 2
fi
style=$1 src=$2 sanitize=$3 meson=$4 ninja=$5
shift 5
cxx="$*"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name="subproject_test [$style]"

if [ "$sanitize" != none ]; then
  echo "$name: skipped under b_sanitize=$sanitize (it rebuilds weft; the release build runs it)"
  exit 77
fi
fail() { echo "$name: FAILED: $*" >&2; exit 1; }

# What the consumer's meson.build says, and what its build must then show: the kind of weft's library and the
# value of weft's fibers option.
setup_options=()
expect_warnings=()
case "$style" in
  dependency)
    get_weft="weft_dep = dependency('weft')"
    expect_library='static library' expect_fibers=auto
    setup_options=(-Dweft:tests=enabled -Dweft:benchmarks=enabled)
    expect_warnings=("weft: tests=enabled is ignored" "weft: benchmarks=enabled is ignored") ;;
  fallback)
    get_weft="weft_dep = dependency('weft', fallback: 'weft',
  default_options: ['fibers=disabled', 'default_library=static'])"
    expect_library='static library' expect_fibers=disabled
    setup_options=(-Dweft:library_unity=true) ;;
  fallback_pair)
    get_weft="weft_dep = dependency('weft', fallback: ['weft', 'weft_dep'],
  default_options: ['default_library=shared'])"
    expect_library='shared library' expect_fibers=auto ;;
  get_variable)
    get_weft="weft_dep = subproject('weft').get_variable('weft_dep')"
    expect_library='static library' expect_fibers=auto
    setup_options=(-Dbuildtype=release -Db_lto=true -Dweft:library_unity=true) ;;
  wrap_file)
    get_weft="weft_dep = dependency('weft')"
    expect_library='static library' expect_fibers=auto
    setup_options=(-Dweft:library_unity=true) ;;
  *) echo "$name: unknown style (dependency, fallback, fallback_pair, get_variable, wrap_file)" >&2; exit 2 ;;
esac

expect_unity=false
for option in "${setup_options[@]}"; do
  [ "$option" != -Dweft:library_unity=true ] || expect_unity=true
done

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-subproject-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
app=$work/app
mkdir -p "$app/subprojects"
cp "$here/consumer.cpp" "$app/consumer.cpp"
cat >"$app/meson.build" <<EOF
project('consumer', 'cpp', default_options: ['cpp_std=c++20'])
$get_weft
executable('consumer', 'consumer.cpp', dependencies: weft_dep)
EOF

if [ "$style" = wrap_file ]; then
  git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 || {
    echo "$name: skipped: $src is not a git work tree, and meson dist archives git's HEAD"
    exit 77
  }
  if [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ]; then
    echo "$name: note: $src has uncommitted changes; the tarball holds HEAD without them"
  fi
  # A configured (not built) weft is all meson dist needs; --no-tests: the consumer's build below is the test.
  "$meson" setup "$work/weft-dist" "$src" -Dtests=disabled -Dbenchmarks=disabled -Dmodel_tests=disabled \
    -Dcmake_package=disabled >"$work/dist-setup.log" 2>&1 || { cat "$work/dist-setup.log" >&2; fail "meson setup"; }
  "$meson" dist -C "$work/weft-dist" --no-tests --allow-dirty >"$work/dist.log" 2>&1 \
    || { cat "$work/dist.log" >&2; fail "meson dist"; }
  tarball=$(find "$work/weft-dist/meson-dist" -name 'weft-*.tar.xz' -print -quit)
  [ -n "$tarball" ] || fail "meson dist made no weft-*.tar.xz: $(ls "$work/weft-dist/meson-dist")"
  mkdir -p "$app/subprojects/packagecache"
  cp "$tarball" "$app/subprojects/packagecache/"
  python3 "$src/tools/make_wrap.py" "$tarball" --url "file://$tarball" >"$app/subprojects/weft.wrap" \
    || fail "tools/make_wrap.py $tarball"
  rm "$tarball"  # so that the file: URL leads nowhere: the cached copy must be what meson unpacks
  echo "$name: subprojects/weft.wrap:"
  sed 's/^/  /' "$app/subprojects/weft.wrap"
else
  ln -s "$src" "$app/subprojects/weft"
fi

echo "$name: meson.build:"
sed 's/^/  /' "$app/meson.build"
build=$app/build
CXX=$cxx "$meson" setup "$build" "$app" --wrap-mode=nodownload -Dwerror=true -Dwarning_level=3 \
  "${setup_options[@]}" >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2; fail "meson setup of the consumer"; }
for warning in "${expect_warnings[@]}"; do
  grep -F "WARNING: $warning" "$work/setup.log" \
    || { cat "$work/setup.log" >&2; fail "meson setup (${setup_options[*]}) did not warn '$warning'"; }
done

# weft's targets in the consumer's build: its library alone, of the kind asked for; no tests at all (the consumer
# has none, so any would be weft's); weft's fibers option as asked.
"$meson" introspect "$build" --targets >"$work/targets.json"
"$meson" introspect "$build" --tests >"$work/tests.json"
"$meson" introspect "$build" --buildoptions >"$work/options.json"
python3 - "$work" "$expect_library" "$expect_fibers" "$expect_unity" <<'PY' || fail "the consumer's build is not as expected"
import json, sys
work, expect_library, expect_fibers, expect_unity = sys.argv[1:]
targets = json.load(open(work + '/targets.json'))
weft = sorted((t['name'], t['type']) for t in targets if t.get('subproject') == 'weft')
tests = json.load(open(work + '/tests.json'))
options = json.load(open(work + '/options.json'))
fibers = [o['value'] for o in options if o['name'] == 'weft:fibers']
unity = [o['value'] for o in options if o['name'] == 'weft:library_unity']
errors = []
if weft != [('weft', expect_library)]:
    errors.append('weft built %d targets, %s; expected its library alone, a %s'
                  % (len(weft), ', '.join('%s (%s)' % w for w in weft[:8]) + (', ...' if len(weft) > 8 else ''),
                     expect_library))
if tests:
    errors.append('the build has tests, so weft defined its own: %s' % [t['name'] for t in tests][:10])
if fibers != [expect_fibers]:
    errors.append("weft's fibers option is %s; expected %s" % (fibers, expect_fibers))
if unity != [expect_unity == 'true']:
    errors.append("weft's library_unity option is %s; expected %s" % (unity, expect_unity))
for e in errors:
    print('  ' + e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY

"$ninja" -C "$build" -j 2 >"$work/build.log" 2>&1 \
  || { head -c 6000 "$work/build.log" >&2; fail "the consumer's build"; }
"$build/consumer" || fail "the consumer exited with $?"
echo "$name: ok ($expect_library, fibers=$expect_fibers)"
