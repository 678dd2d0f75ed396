#!/usr/bin/env bash
# The README's consumer instructions, taken as written: a meson project whose meson.build is the README's meson
# snippet (below a bare `project('app', 'cpp')` when the snippet has no project() of its own, as when pasted into
# an existing meson.build), with weft as a symlink at subprojects/weft, builds with warnings as errors a program
# made of the README's C++ blocks (their #includes first, the rest pasted into one function) and runs it.
#
# usage: readme_test.sh SOURCE_ROOT B_SANITIZE MESON NINJA CXX...
#   B_SANITIZE: the outer build's b_sanitize; anything but 'none' skips (77): this rebuilds weft.
#   CXX...: the compiler for the consumer project (the outer build's), as meson runs it.
set -euo pipefail

if [ $# -lt 5 ]; then
  echo "usage: $0 SOURCE_ROOT B_SANITIZE MESON NINJA CXX..." >&2
  exit 2
fi
src=$1 sanitize=$2 meson=$3 ninja=$4
shift 4
cxx="$*"
readme=$src/README.md

if [ "$sanitize" != none ]; then
  echo "readme_test: skipped under b_sanitize=$sanitize (it rebuilds weft; the release build runs it)"
  exit 77
fi
fail() { echo "readme_test: FAILED: $*" >&2; exit 1; }
[ -f "$readme" ] || fail "no README.md in $src"

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-readme-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
app=$work/app
mkdir -p "$app/subprojects"
ln -s "$src" "$app/subprojects/weft"

snippet=$(awk '/^```meson$/ { inside = 1; next } /^```$/ { inside = 0 } inside' "$readme")
[ -n "$snippet" ] || fail "README.md has no \`\`\`meson block"
if ! grep -q '^project(' <<<"$snippet"; then
  echo "project('app', 'cpp')" >"$app/meson.build"
fi
printf '%s\n' "$snippet" >>"$app/meson.build"
grep -q "'app.cpp'" "$app/meson.build" || fail "the README's meson snippet no longer builds app.cpp"

code=$(awk '/^```cpp$/ { inside = 1; next } /^```$/ { inside = 0 } inside' "$readme")
[ -n "$code" ] || fail "README.md has no \`\`\`cpp block"
{
  grep '^#include' <<<"$code" | sort -u
  echo
  echo "void readme_examples() {"
  grep -v '^#include' <<<"$code" | sed 's/^/  /'
  echo "}"
  echo
  echo "int main() { readme_examples(); }"
} >"$app/app.cpp"

echo "readme_test: meson.build:"
sed 's/^/  /' "$app/meson.build"
CXX=$cxx "$meson" setup "$app/build" "$app" --wrap-mode=nodownload --werror -Dwarning_level=3 \
  >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2; fail "meson setup of the README's consumer"; }
"$ninja" -C "$app/build" -j 2 >"$work/build.log" 2>&1 || {
  head -c 6000 "$work/build.log" >&2
  echo "app.cpp, from the README's C++ blocks:" >&2
  cat -n "$app/app.cpp" >&2
  fail "the README's consumer did not build"
}
"$app/build/app" || fail "the README's examples exited with $?"
echo "readme_test: ok"
