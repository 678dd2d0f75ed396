// Long multi-threaded runs of MSQueue with both reclamation domains: exactly-once delivery, per-producer
// order at each consumer, and (hazard pointers) the reclamation bound checked at every retire.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/queue/queue_test_support.hpp"
#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"

namespace {

using weft::lockfree::MSQueue;

constexpr unsigned kProducers = 4;
constexpr unsigned kConsumers = 4;
constexpr int kSeqBits = 40;

template <class Domain>
void announce_if_qsbr(typename Domain::ThreadRef t) {
  if constexpr (requires { t.quiescent(); }) t.quiescent();
}

// 4 producers x 4 consumers. Items are producer << 40 | sequence number.
template <class Domain>
void run_mpmc(Domain& domain, const char* name, std::uint64_t total_items) {
  const std::uint64_t per_producer = total_items / kProducers;
  const std::uint64_t seed = weft::test::seed_for(name);
  MSQueue<std::uint64_t, Domain> q(domain);
  auto received = std::make_unique<std::atomic<std::uint8_t>[]>(per_producer * kProducers);
  std::atomic<unsigned> producers_left{kProducers};
  std::atomic<std::uint64_t> popped{0};
  std::atomic<bool> order_ok{true};

  std::vector<std::thread> threads;
  for (unsigned p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      auto handle = domain.register_thread();  // workers-style registration for producers
      std::mt19937_64 rng(seed + p);
      for (std::uint64_t i = 0; i < per_producer; ++i) {
        q.push(handle.ref(), std::uint64_t{p} << kSeqBits | i);
        if ((rng() & 1023) == 0) std::this_thread::yield();
        if ((i & 63) == 0) announce_if_qsbr<Domain>(handle.ref());
      }
      producers_left.fetch_sub(1);
    });
  }
  for (unsigned c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      std::mt19937_64 rng(seed + 100 + c);
      std::vector<std::uint64_t> next_seq(kProducers, 0);  // per producer: the smallest sequence still allowed
      std::uint64_t mine = 0;
      // Consumers 0-1 use explicit registrations, 2-3 the implicit one (submitter-style threads).
      // (An explicit QSBR registration is online: it must announce, or it would stall reclamation.)
      const bool implicit = c >= 2;
      std::optional<typename Domain::Handle> handle;
      if (!implicit) handle.emplace(domain.register_thread());
      for (std::uint64_t iteration = 1;; ++iteration) {
        const bool done = producers_left.load() == 0;
        auto v = implicit ? q.try_pop() : q.try_pop(handle->ref());
        if (!implicit && (iteration & 63) == 0) announce_if_qsbr<Domain>(handle->ref());
        if (!v) {
          if (done) break;
          if ((rng() & 7) == 0) std::this_thread::yield();
          continue;
        }
        const std::uint64_t p = *v >> kSeqBits;
        const std::uint64_t s = *v & ((std::uint64_t{1} << kSeqBits) - 1);
        if (p >= kProducers || s >= per_producer || s < next_seq[p]) {
          order_ok.store(false);
        } else {
          next_seq[p] = s + 1;
          received[p * per_producer + s].fetch_add(1, std::memory_order_relaxed);
        }
        ++mine;
      }
      popped.fetch_add(mine);
      if (implicit) domain.unregister_current_thread();
    });
  }
  for (auto& t : threads) t.join();

  std::uint64_t drained = 0;
  while (auto v = q.try_pop()) {
    const std::uint64_t p = *v >> kSeqBits;
    const std::uint64_t s = *v & ((std::uint64_t{1} << kSeqBits) - 1);
    received[p * per_producer + s].fetch_add(1, std::memory_order_relaxed);
    ++drained;
  }
  domain.unregister_current_thread();
  CHECK(order_ok.load());
  CHECK(popped.load() + drained == per_producer * kProducers);
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < per_producer * kProducers; ++i) wrong += received[i].load() != 1 ? 1 : 0;
  CHECK(wrong == 0);
  MESSAGE(std::string(name), ": ", per_producer * kProducers, " items, ", popped.load(), " popped by consumers, ",
          drained, " drained");
}

TEST_CASE("MSQueue + hazard pointers: 4 producers x 4 consumers, exactly once, in order per producer") {
  weft::test::HpDomain domain({.check_bounds = true});
  run_mpmc(domain, "queue_mpmc_hp", weft::test::stress_count(weft::test::reduced_runs() ? 400'000 : 4'000'000));
  const auto s = domain.stats();
  MESSAGE("HP: records ", s.records, ", peak retired per thread ", s.peak_retired_per_thread,
          " (R = ", 2 * s.hazard_slots, "), peak unreclaimed ", s.peak_unreclaimed,
          " (N*R = ", s.records * 2 * s.hazard_slots, "), bound checks ", s.bound_checks);
  CHECK(s.bound_checks > 0);
}

TEST_CASE("MSQueue + QSBR: 4 producers x 4 consumers, exactly once, in order per producer") {
  weft::test::QsbrDomain domain;
  run_mpmc(domain, "queue_mpmc_qsbr", weft::test::stress_count(weft::test::reduced_runs() ? 400'000 : 4'000'000));
  const auto s = domain.stats();
  MESSAGE("QSBR: records ", s.records, ", peak retired per thread ", s.peak_retired_per_thread, ", reclaimed ",
          s.reclaimed, ", passes ", s.passes);
}

TEST_CASE("hazard-pointer bound holds at every retire over 10M operations") {
  weft::test::HpDomain domain({.check_bounds = true});
  MSQueue<std::uint64_t, weft::test::HpDomain> q(domain);
  // 1M where runs are reduced (sanitizers, an emulator): the bound is checked at every retire all the same.
  const std::uint64_t total_ops = weft::test::stress_count(weft::test::reduced_runs() ? 1'000'000 : 10'000'000);
  constexpr unsigned kThreads = 4;
  const std::uint64_t seed = weft::test::seed_for("queue_hp_bound");
  std::atomic<std::uint64_t> pops{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      std::uint64_t mine = 0;
      for (std::uint64_t i = 0; i < total_ops / kThreads; ++i) {
        if (rng() & 1) {
          q.push(i);
        } else if (q.try_pop()) {
          ++mine;
        }
      }
      pops.fetch_add(mine);
      domain.unregister_current_thread();
    });
  }
  for (auto& th : threads) th.join();
  const auto s = domain.stats();
  const std::size_t r = 2 * s.hazard_slots;
  MESSAGE("HP bound over ", total_ops, " operations (", pops.load(), " successful pops): peak retired per thread ",
          s.peak_retired_per_thread, " < R = ", r, "; peak unreclaimed ", s.peak_unreclaimed,
          " <= N*R = ", s.records * r, "; ", s.bound_checks, " checks, ", s.scans, " scans");
  CHECK(s.bound_checks == pops.load());  // every retire was checked (one retire per successful pop)
  CHECK(s.peak_retired_per_thread < r);
  CHECK(s.peak_unreclaimed <= s.records * r);
}

}  // namespace
