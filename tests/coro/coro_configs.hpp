// The pools every coroutine test runs on: 1 and 8 workers, each with fibers on and off (a coroutine must not
// depend on either: it suspends as a frame, and a blocking wait inside it takes whichever path the pool has).
#pragma once

#include "weft/pool.hpp"

namespace weft::test::coro {

struct Config {
  unsigned threads;
  bool fibers;
};
inline constexpr Config kConfigs[] = {{1, true}, {1, false}, {8, true}, {8, false}};

inline weft::PoolOptions options_of(const Config& config) {
  weft::PoolOptions options;
  options.threads = config.threads;
  options.fibers = config.fibers;
  return options;
}

}  // namespace weft::test::coro
