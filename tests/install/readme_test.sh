#!/usr/bin/env bash
# The README's consumer instructions, taken as written: a meson project whose meson.build is the README's meson
# snippet (below a bare `project('app', 'cpp')` when the snippet has no project() of its own, as when pasted into
# an existing meson.build), with weft as a symlink at subprojects/weft, builds with warnings as errors a program
# made of the C++ blocks of the README and of docs/tour.md (the one-page tour the README links to): their
# #includes first, then each file's other lines pasted into one function of its own; and runs it.
# weft compiles source by source, as users build it, with the flags of subproject_test.sh's dependency style: under
# ccache, whichever of the two runs second takes the other's objects (unity files here cost CI more, not less).
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
tour=$src/docs/tour.md

if [ "$sanitize" != none ]; then
  echo "readme_test: skipped under b_sanitize=$sanitize (it rebuilds weft; the release build runs it)"
  exit 77
fi
fail() { echo "readme_test: FAILED: $*" >&2; exit 1; }
[ -f "$readme" ] || fail "no README.md in $src"
[ -f "$tour" ] || fail "no docs/tour.md in $src"

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

cpp_blocks() { awk '/^```cpp$/ { inside = 1; next } /^```$/ { inside = 0 } inside' "$1"; }
code=$(cpp_blocks "$readme")
[ -n "$code" ] || fail "README.md has no \`\`\`cpp block"
tour_code=$(cpp_blocks "$tour")
[ -n "$tour_code" ] || fail "docs/tour.md has no \`\`\`cpp block"
{
  printf '%s\n%s\n' "$code" "$tour_code" | grep '^#include' | sort -u
  echo
  echo "void readme_examples() {"
  grep -v '^#include' <<<"$code" | sed 's/^/  /'
  echo "}"
  echo
  echo "void tour_examples() {"
  grep -v '^#include' <<<"$tour_code" | sed 's/^/  /'
  echo "}"
  echo
  echo "int main() {"
  echo "  readme_examples();"
  echo "  tour_examples();"
  echo "}"
} >"$app/app.cpp"

echo "readme_test: meson.build:"
sed 's/^/  /' "$app/meson.build"
CXX=$cxx "$meson" setup "$app/build" "$app" --wrap-mode=nodownload --werror -Dwarning_level=3 \
  >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2; fail "meson setup of the README's consumer"; }
"$ninja" -C "$app/build" -j 2 >"$work/build.log" 2>&1 || {
  head -c 6000 "$work/build.log" >&2
  echo "app.cpp, from the C++ blocks of the README and docs/tour.md:" >&2
  cat -n "$app/app.cpp" >&2
  fail "the README's consumer did not build"
}
"$app/build/app" || fail "the README's examples exited with $?"
echo "readme_test: ok"
