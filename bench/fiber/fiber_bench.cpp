// Fiber costs: a switch round trip (resume + suspend) through weft::fiber::Fiber against Boost.Context's bare
// `fiber` resume round trip, the floor (the goal: at most 2x the floor; LTO build, where resume() is
// inlined into the resuming loop); a stack from the
// FiberStackPool (acquire + release) against protected_fixedsize_stack (allocate + deallocate: an mmap and an
// mprotect each time); and a whole fiber's life (create, run to its end, destroy) on each kind of stack.
//
// Run: fiber_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <cstdint>
#include <utility>

#include "scheduler/fiber/fiber.hpp"
#include "scheduler/fiber/fiber_stack.hpp"

namespace {

namespace ctx = boost::context;
using weft::fiber::Fiber;
using weft::fiber::FiberStackOptions;
using weft::fiber::FiberStackPool;
using weft::fiber::ThisFiber;

constexpr std::size_t kStackSize = 64 * 1024;

FiberStackOptions bench_stacks() {
  return FiberStackOptions{.stack_size = kStackSize, .max_stacks = 4, .keep_free = 4};
}

// The floor: one round trip into a Boost.Context fiber and back (two jumps), nothing else.
void boost_fiber_round_trip(benchmark::State& state) {
  std::uint64_t count = 0;
  ctx::fiber fiber(std::allocator_arg, ctx::protected_fixedsize_stack(kStackSize), [&count](ctx::fiber&& caller) {
    for (;;) {
      ++count;
      caller = std::move(caller).resume();
    }
    return std::move(caller);
  });
  for (auto _ : state) {
    fiber = std::move(fiber).resume();
  }
  benchmark::DoNotOptimize(count);
  state.SetItemsProcessed(state.iterations());
  // `fiber` is destroyed suspended: Boost unwinds it.
}
BENCHMARK(boost_fiber_round_trip)->Name("switch_round_trip/boost_fiber_floor");

// The floor again, resumed through a function that is not inlined: the `ret` after the switch mispredicts once
// per round trip (fcontext switches by `jmp`, leaving the return stack out of step). What weft's round trip costs
// where Fiber::resume() is not inlined (a build without LTO, or a caller too large to inline it into).
[[gnu::noinline]] ctx::fiber resume_out_of_line(ctx::fiber&& fiber) { return std::move(fiber).resume(); }

void boost_fiber_round_trip_out_of_line(benchmark::State& state) {
  std::uint64_t count = 0;
  ctx::fiber fiber(std::allocator_arg, ctx::protected_fixedsize_stack(kStackSize), [&count](ctx::fiber&& caller) {
    for (;;) {
      ++count;
      caller = std::move(caller).resume();
    }
    return std::move(caller);
  });
  for (auto _ : state) {
    fiber = resume_out_of_line(std::move(fiber));
  }
  benchmark::DoNotOptimize(count);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(boost_fiber_round_trip_out_of_line)->Name("switch_round_trip/boost_fiber_resumed_out_of_line");

// weft's round trip: Fiber::resume() into the fiber, ThisFiber::suspend() back.
void weft_fiber_round_trip(benchmark::State& state) {
  FiberStackPool pool(bench_stacks());
  std::uint64_t count = 0;
  Fiber fiber(pool.acquire(), [&count](ThisFiber& self) {
    for (;;) {
      ++count;
      self.suspend();
    }
  });
  for (auto _ : state) {
    benchmark::DoNotOptimize(fiber.resume());
  }
  benchmark::DoNotOptimize(count);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(weft_fiber_round_trip)->Name("switch_round_trip/weft_fiber");

// The same with a suspend_then hook (the save-then-publish path), the hook doing nothing.
void weft_fiber_round_trip_hook(benchmark::State& state) {
  FiberStackPool pool(bench_stacks());
  std::uint64_t count = 0;
  auto hook = [](Fiber&) noexcept {};
  Fiber fiber(pool.acquire(), [&count, &hook](ThisFiber& self) {
    for (;;) {
      ++count;
      self.suspend_then(hook);
    }
  });
  for (auto _ : state) {
    benchmark::DoNotOptimize(fiber.resume());
  }
  benchmark::DoNotOptimize(count);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(weft_fiber_round_trip_hook)->Name("switch_round_trip/weft_fiber_suspend_then");

void pool_stack_acquire_release(benchmark::State& state) {
  FiberStackPool pool(bench_stacks());
  for (auto _ : state) {
    weft::fiber::FiberStack stack = pool.acquire();
    benchmark::DoNotOptimize(stack.bottom());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(pool_stack_acquire_release)->Name("stack/weft_pool_acquire_release");

void protected_stack_allocate_deallocate(benchmark::State& state) {
  ctx::protected_fixedsize_stack allocator(kStackSize);
  for (auto _ : state) {
    ctx::stack_context stack = allocator.allocate();
    benchmark::DoNotOptimize(stack.sp);
    allocator.deallocate(stack);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(protected_stack_allocate_deallocate)->Name("stack/boost_protected_fixedsize_allocate_deallocate");

// A whole fiber: create, run to its end, destroy.
void weft_fiber_life(benchmark::State& state) {
  FiberStackPool pool(bench_stacks());
  std::uint64_t count = 0;
  for (auto _ : state) {
    Fiber fiber(pool.acquire(), [&count](ThisFiber&) { ++count; });
    benchmark::DoNotOptimize(fiber.resume());
  }
  benchmark::DoNotOptimize(count);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(weft_fiber_life)->Name("fiber_life/weft_fiber_pool_stack");

void boost_fiber_life_protected(benchmark::State& state) {
  std::uint64_t count = 0;
  for (auto _ : state) {
    ctx::fiber fiber(std::allocator_arg, ctx::protected_fixedsize_stack(kStackSize), [&count](ctx::fiber&& caller) {
      ++count;
      return std::move(caller);
    });
    fiber = std::move(fiber).resume();
  }
  benchmark::DoNotOptimize(count);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(boost_fiber_life_protected)->Name("fiber_life/boost_fiber_protected_fixedsize_stack");

}  // namespace

BENCHMARK_MAIN();
