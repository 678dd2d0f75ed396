// weft/when.hpp under load: many combinators (when_any, when_all, when_all_settled; variadic and vector forms) whose
// members finish together on the workers of two pools, released at once by a gate. Each combination's continuation
// runs exactly once, every member's value or exception lands exactly once where it belongs (when_any's losers are
// destroyed, never leaked), and no value outlives the test. Scaled down under the sanitizers.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "tests/support/stress.hpp"
#include "weft/when.hpp"

namespace {

using namespace weft::test;

std::uint64_t sized(std::uint64_t plain) {
  return stress_count(weft::test::reduced_runs() ? plain / 10 : kAddressSanitizer ? plain / 4 : plain);
}

// A member's value: its id, with a count of the values alive (copies and moved-from shells included), so that a
// value the combinators lost or kept would show at the end.
std::atomic<std::int64_t> g_alive{0};
struct Value {
  std::uint64_t id = ~std::uint64_t{0};
  explicit Value(std::uint64_t i) : id(i) { g_alive.fetch_add(1, std::memory_order_relaxed); }
  Value(const Value& other) : id(other.id) { g_alive.fetch_add(1, std::memory_order_relaxed); }
  Value(Value&& other) noexcept : id(other.id) { g_alive.fetch_add(1, std::memory_order_relaxed); }
  Value& operator=(const Value&) = default;
  Value& operator=(Value&&) noexcept = default;
  ~Value() { g_alive.fetch_sub(1, std::memory_order_relaxed); }
};

// A member's exception, naming the member.
struct MemberError : std::runtime_error {
  std::uint64_t id;
  explicit MemberError(std::uint64_t i) : std::runtime_error("member " + std::to_string(i)), id(i) {}
};

// Which member ids landed (values and exceptions alike), one counter each.
class Landed {
 public:
  explicit Landed(std::size_t n) : counts_(n) {}
  void land(std::uint64_t id) { counts_.ran(id); }
  [[nodiscard]] const RunCounts& counts() const { return counts_; }

 private:
  RunCounts counts_;
};

// The members of one batch wait at the gate (spinning, so that several finish at the same moment on the workers of
// both pools) and then return their Value, or throw if `throws` says so.
struct Batch {
  std::atomic<bool> gate{false};
  weft::Pool* pools[2] = {nullptr, nullptr};
  const std::vector<std::uint8_t>* throws = nullptr;

  weft::Future<Value> member(std::uint64_t id) {
    return pools[id % 2]->submit([this, id] {
      while (!gate.load(std::memory_order_acquire)) {
      }
      if ((*throws)[id] != 0) throw MemberError(id);
      return Value(id);
    });
  }
};

std::uint64_t id_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const MemberError& e) {
    return e.id;
  } catch (...) {
  }
  return ~std::uint64_t{0};  // not a member's exception: lands nowhere, so the checks below fail
}

// One combination's outcome as its continuation saw it, checked on the test thread after the batch.
struct Outcome {
  std::uint64_t base = 0;     // the first member's id
  std::uint64_t members = 0;  // how many
  int kind = 0;               // 0..5: all, any, settled; vector then variadic
  std::uint64_t bad = 0;      // mismatches the continuation found (a value in the wrong place, a wrong flag)
};

TEST_CASE("combinators whose members finish together: each continuation once, each outcome once, nothing kept") {
  constexpr std::uint64_t kVector = 6;     // members of a vector form
  constexpr std::uint64_t kVariadic = 3;   // members of a variadic form
  constexpr std::uint64_t kPerBatch = 12;  // combinations per batch
  const std::uint64_t batches = sized(2000);
  const Watchdog watchdog("when stress", patience(120));
  {
    weft::Pool pool_a{weft::PoolOptions{.threads = 3}};
    weft::Pool pool_b{weft::PoolOptions{.threads = 2}};
    const std::uint64_t combinations = batches * kPerBatch;
    RunCounts continuations(combinations);
    RunCounts landed(combinations * kVector);  // member ids: combination * kVector + index
    std::vector<std::uint8_t> throws(combinations * kVector, 0);
    std::vector<Outcome> outcomes(combinations);
    std::mt19937_64 random(seed_for("when stress"));
    std::uint64_t succeeded = 0;
    std::uint64_t failed = 0;

    for (std::uint64_t b = 0; b < batches; ++b) {
      Batch batch;
      batch.pools[0] = &pool_a;
      batch.pools[1] = &pool_b;
      batch.throws = &throws;
      std::vector<weft::Future<void>> done;  // each combination's continuation
      done.reserve(kPerBatch);
      for (std::uint64_t k = 0; k < kPerBatch; ++k) {
        const std::uint64_t c = b * kPerBatch + k;
        Outcome& out = outcomes[c];
        out.base = c * kVector;
        out.kind = static_cast<int>(random() % 6);
        out.members = out.kind < 3 ? kVector : kVariadic;
        for (std::uint64_t i = 0; i < out.members; ++i) throws[out.base + i] = random() % 4 == 0 ? 1 : 0;
        auto m = [&batch, &out](std::uint64_t i) { return batch.member(out.base + i); };
        // What every continuation does first: count itself (exactly once is checked below).
        auto ran = [&continuations, c] { continuations.ran(c); };
        // A value lands if it is in its own place; anything else is a mismatch.
        auto land_value = [&landed, &out](std::uint64_t index, const Value& v) {
          if (v.id != out.base + index) ++out.bad;
          landed.ran(v.id);
        };
        auto land_error = [&landed, &out, &throws](std::uint64_t index, const std::exception_ptr& e) {
          const std::uint64_t id = id_of(e);
          if (id != out.base + index || throws[id] == 0) {
            ++out.bad;
          } else {
            landed.ran(id);
          }
        };
        switch (out.kind) {
          case 0: {
            std::vector<weft::Future<Value>> v;
            for (std::uint64_t i = 0; i < kVector; ++i) v.push_back(m(i));
            done.push_back(weft::when_all(std::move(v)).then([=, &out](std::vector<Value>&& values) {
              ran();
              for (std::uint64_t i = 0; i < values.size(); ++i) land_value(i, values[i]);
            }));
            break;
          }
          case 1: {
            std::vector<weft::Future<Value>> v;
            for (std::uint64_t i = 0; i < kVector; ++i) v.push_back(m(i));
            done.push_back(weft::when_any(std::move(v)).then([=, &out](weft::WhenAnyResult<Value>&& first) {
              ran();
              land_value(first.index, first.value);
            }));
            break;
          }
          case 2: {
            std::vector<weft::Future<Value>> v;
            for (std::uint64_t i = 0; i < kVector; ++i) v.push_back(m(i));
            done.push_back(
                weft::when_all_settled(std::move(v)).then([=, &out](std::vector<weft::Settled<Value>>&& all) {
                  ran();
                  for (std::uint64_t i = 0; i < all.size(); ++i) {
                    if (all[i].has_value() == static_cast<bool>(all[i].error)) ++out.bad;  // exactly one is set
                    if (all[i].has_value()) {
                      land_value(i, *all[i].value);
                    } else {
                      land_error(i, all[i].error);
                    }
                  }
                }));
            break;
          }
          case 3:
            done.push_back(weft::when_all(m(0), m(1), m(2)).then([=, &out](std::tuple<Value, Value, Value>&& values) {
              ran();
              land_value(0, std::get<0>(values));
              land_value(1, std::get<1>(values));
              land_value(2, std::get<2>(values));
            }));
            break;
          case 4:
            done.push_back(weft::when_any(m(0), m(1), m(2))
                               .then([=, &out](weft::WhenAnyResult<std::variant<Value, Value, Value>>&& first) {
                                 ran();
                                 if (first.value.index() != first.index) ++out.bad;
                                 std::visit([&](const Value& v) { land_value(first.index, v); }, first.value);
                               }));
            break;
          default:
            done.push_back(
                weft::when_all_settled(m(0), m(1), m(2))
                    .then(
                        [=, &out](std::tuple<weft::Settled<Value>, weft::Settled<Value>, weft::Settled<Value>>&& all) {
                          ran();
                          std::apply(
                              [&](auto&... settled) {
                                std::uint64_t i = 0;
                                for (auto* s : {&settled...}) {
                                  if (s->has_value() == static_cast<bool>(s->error)) ++out.bad;
                                  if (s->has_value()) {
                                    land_value(i, *s->value);
                                  } else {
                                    land_error(i, s->error);
                                  }
                                  ++i;
                                }
                              },
                              all);
                        }));
            break;
        }
      }
      batch.gate.store(true, std::memory_order_release);  // the members finish together on five workers
      for (std::uint64_t k = 0; k < kPerBatch; ++k) {
        const std::uint64_t c = b * kPerBatch + k;
        const Outcome& out = outcomes[c];
        try {
          done[k].get();
          ++succeeded;
          CHECK(continuations.count(c) == 1);
        } catch (const MemberError& e) {
          // The combination failed (when_all, or when_any whose first member threw): with a member's own
          // exception, one that throws, and the continuation never ran.
          ++failed;
          CHECK(out.kind != 2);
          CHECK(out.kind != 5);
          CHECK(e.id >= out.base);
          CHECK(e.id < out.base + out.members);
          CHECK(throws[e.id] == 1);
          CHECK(continuations.count(c) == 0);
          landed.ran(e.id);
        }
      }
      // The batch's losers (when_any's, when_all's after its first exception) may still be finishing: their
      // results are dropped where they finish. Wait for them, so that the next batch starts from idle workers.
      pool_a.wait_idle();
      pool_b.wait_idle();
    }

    // Every combination's continuation ran at most once, and exactly once when it succeeded (checked above).
    std::uint64_t mismatches = 0;
    std::uint64_t twice = 0;
    std::uint64_t missing = 0;
    for (std::uint64_t c = 0; c < combinations; ++c) {
      const Outcome& out = outcomes[c];
      mismatches += out.bad;
      if (continuations.count(c) > 1) ++twice;
      // when_all_settled's and a successful when_all's members each landed exactly once; when_any one member.
      std::uint64_t landed_here = 0;
      for (std::uint64_t i = 0; i < out.members; ++i) {
        const unsigned n = landed.count(out.base + i);
        if (n > 1) ++twice;
        landed_here += n;
      }
      const bool settled = out.kind == 2 || out.kind == 5;
      const bool any = out.kind == 1 || out.kind == 4;
      if (settled && landed_here != out.members) ++missing;
      if (any && landed_here != 1) ++missing;
      if (!settled && !any && landed_here != out.members && landed_here != 1) ++missing;
    }
    CHECK(mismatches == 0);
    CHECK(twice == 0);
    CHECK(missing == 0);
    MESSAGE(combinations << " combinations: " << succeeded << " succeeded, " << failed << " failed");
  }
  // Both pools are gone, with every loser's state: no member's value is left anywhere.
  CHECK(g_alive.load() == 0);
}

}  // namespace
