// The pools every coroutine test runs on: 1 and 8 workers, each with fibers on and off (a coroutine must not
// depend on either: it suspends as a frame, and a blocking wait inside it takes whichever path the pool has).
#pragma once

#include <doctest/doctest.h>

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

// Runs body(pool) once on a fresh pool of each configuration; a failure inside names the configuration.
template <class Body>
void on_each_pool(Body body) {
  for (const Config& config : kConfigs) {
    CAPTURE(config.threads);
    CAPTURE(config.fibers);
    weft::Pool pool(options_of(config));
    body(pool);
  }
}

}  // namespace weft::test::coro
