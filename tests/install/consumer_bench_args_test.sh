#!/usr/bin/env bash
# bench/consumer/consumer_bench.sh and compare.py refuse bad input with a clear message (exit 2 / non-zero), and
# before they build or write anything: no arguments, a directory that is no meson build, a ROUNDS that is not a
# positive number, and an own build that is not weft's default (static, LTO), here a tiny meson project set up
# as a shared library without LTO (configured, never compiled).
#
# usage: consumer_bench_args_test.sh SOURCE_ROOT MESON
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 SOURCE_ROOT MESON" >&2
  exit 2
fi
src=$1 meson=$2
script=$src/bench/consumer/consumer_bench.sh
export PATH="$(dirname "$meson"):$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-consumer-args.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0

# expect_refusal WHAT EXPECTED_TEXT COMMAND...: the command exits non-zero, says EXPECTED_TEXT on stderr, and
# leaves $work/out uncreated.
expect_refusal() {
  local what=$1 text=$2
  shift 2
  local status=0
  "$@" >"$work/stdout" 2>"$work/stderr" || status=$?
  if [ "$status" -eq 0 ]; then
    echo "FAILED: $what: accepted (exit 0)"; failures=$((failures + 1))
  elif ! grep -qF -- "$text" "$work/stderr"; then
    echo "FAILED: $what: exit $status without '$text'; it said: $(cat "$work/stderr")"; failures=$((failures + 1))
  elif [ -e "$work/out" ]; then
    echo "FAILED: $what: wrote $work/out before refusing"; failures=$((failures + 1))
  else
    echo "ok: $what: $(head -c 200 "$work/stderr")"
  fi
}

mkdir -p "$work/not_a_build" "$work/tiny"
printf "project('tiny', 'cpp')\n" >"$work/tiny/meson.build"
"$meson" setup "$work/tiny_build" "$work/tiny" -Ddefault_library=shared -Db_lto=false >/dev/null

expect_refusal "no arguments" "usage:" bash "$script"
expect_refusal "no meson build" "is not a configured meson build directory" \
  bash "$script" "$work/not_a_build" "$work/out"
expect_refusal "ROUNDS not a number" "ROUNDS 'three' is not a positive number" \
  bash "$script" "$work/tiny_build" "$work/out" three
expect_refusal "ROUNDS zero" "ROUNDS '0' is not a positive number" bash "$script" "$work/tiny_build" "$work/out" 0
expect_refusal "not weft's default build" "default_library=shared, b_lto=False" \
  bash "$script" "$work/tiny_build" "$work/out"
expect_refusal "compare.py, no results" "no weft row measured by both builds" \
  /usr/bin/python3 "$src/bench/consumer/compare.py" "$work/not_a_build"

[ "$failures" -eq 0 ] || exit 1
