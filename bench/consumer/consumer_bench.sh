#!/usr/bin/env bash
# weft's speed as a consumer project gets it, beside weft's own build.
#
# Builds a consumer meson project that takes weft as a subproject (`dependency('weft')`, weft a symlink under its
# subprojects/) with the options a consumer writes for a fast build and no more: `buildtype=release` and meson's
# defaults otherwise, so no LTO (`b_lto` is project-wide and false by default). The consumer compiles the same
# benchmark sources as weft's own bench/ (pool_bench, graph_bench: weft and oneTBB interleaved in one process).
# Then it runs weft's own build of those binaries (LTO, the default of weft's meson.build) and the consumer's in
# alternating rounds, and compare.py prints each row's medians: weft's own, the consumer's, and oneTBB's in each.
#
# usage: consumer_bench.sh OWN_BUILD_DIR OUT_DIR [ROUNDS]
#   OWN_BUILD_DIR: a configured weft build with benchmarks (.ci/demo's build/demo); its pool_bench and
#                  graph_bench are built here if needed.
#   OUT_DIR:       where the consumer project, its build, the JSON of every run and the table go.
#   ROUNDS:        alternating rounds of the two builds (default 3); each run takes medians of 5 repetitions.
#   WEFT_BENCH_FILTER (environment): the rows to run, a Google Benchmark regex (default: the overhead-bound rows).
set -euo pipefail

fail() { echo "consumer_bench: $*" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 3 ] || fail "usage: $0 OWN_BUILD_DIR OUT_DIR [ROUNDS]"
[ -f "$1/meson-private/coredata.dat" ] || fail "OWN_BUILD_DIR '$1' is not a configured meson build directory"
own=$(cd "$1" && pwd)
rounds=${3:-3}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || fail "ROUNDS '$rounds' is not a positive number of rounds"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)

# build_option DIR NAME: the value of meson option NAME in build directory DIR.
build_option() {
  meson introspect --buildoptions "$1" | /usr/bin/python3 -c \
    'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]][0])' "$2"
}
# weft's own default build: a static library, linked into each benchmark with LTO (the benchmarks' own LTO copy of
# it: bench/meson.build). A shared library would keep LTO from inlining weft's code into the benchmark's, and the
# comparison would mean nothing.
own_library=$(build_option "$own" default_library)
own_lto=$(build_option "$own" b_lto)
if [ "$own_library" != static ] || [ "$own_lto" != True ]; then
  fail "OWN_BUILD_DIR $own must be weft's default build (default_library=static, b_lto=true); it has" \
    "default_library=$own_library, b_lto=$own_lto"
fi
mkdir -p "$2"
out=$(cd "$2" && pwd)
pool_rows='^(noop_1M|fib28|submit_wait_x1000)/(weft|oneTBB)/|^fib28_subflow'
graph_rows='^(chain_1k|layered_10x5|tree_20|random_dag_100k)/run/'
filter=${WEFT_BENCH_FILTER:-"$pool_rows|$graph_rows"}

# The consumer: its own copy of the benchmark sources (a project may not take files from a subproject's tree),
# and weft as a subproject, found by `dependency('weft')` through the directory of that name.
app=$out/app
rm -rf "$app"
mkdir -p "$app/subprojects" "$app/bench" "$app/src"
ln -s "$src" "$app/subprojects/weft"
cp -r "$src/bench/common" "$src/bench/pool" "$src/bench/graph" "$app/bench/"
rm -f "$app/bench/pool/meson.build" "$app/bench/graph/meson.build"
# pool_workloads.hpp asks weft's OS layer for the CPU count (a symbol of the library, declared in this header).
cp "$src/src/os_thread.hpp" "$app/src/"
cat >"$app/meson.build" <<'EOF'
project('weft_consumer_bench', 'cpp', default_options: ['cpp_std=c++20', 'buildtype=release'])
weft_dep = dependency('weft')
deps = [weft_dep, dependency('benchmark'), dependency('tbb'), dependency('threads')]
foreach name : ['pool', 'graph']
  executable(name + '_bench', 'bench' / name / name + '_bench.cpp', cpp_args: ['-DWEFT_BENCH_HAVE_TBB=1'],
    dependencies: deps)
endforeach
EOF

build=$out/build
rm -rf "$build"
meson setup "$build" "$app" --wrap-mode=nodownload >"$out/setup.log"
lto=$(build_option "$build" b_lto)
echo "weft: consumer build in $build (buildtype=release, b_lto=$lto)"
ninja -C "$build" >"$out/build.log"
ninja -C "$own" bench/pool/pool_bench bench/graph/graph_bench >/dev/null

rm -f "$out"/own_*.json "$out"/consumer_*.json "$out/runs.log"
for round in $(seq 1 "$rounds"); do
  for side in own consumer; do
    for bench in pool graph; do
      binary=$own/bench/$bench/${bench}_bench
      [ "$side" = consumer ] && binary=$build/${bench}_bench
      echo "weft: round $round of $rounds, $side build, ${bench}_bench"
      "$binary" --benchmark_filter="$filter" --benchmark_repetitions=5 \
        --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true \
        --benchmark_out="$out/${side}_${bench}_$round.json" --benchmark_out_format=json >>"$out/runs.log" 2>&1
    done
  done
done
/usr/bin/python3 "$here/compare.py" "$out" | tee "$out/consumer_vs_own.md"
