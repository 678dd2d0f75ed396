// Shared by the BoundedQueue tests: item types that count their lives or throw on copy, and a watchdog that
// turns a hang into a failure with a message (the Pool tests' one lives with the Pool; this one needs no Pool).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace weft::test {

#if defined(__SANITIZE_THREAD__)
inline constexpr int kSanitizerSlowdown = 10;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr int kSanitizerSlowdown = 4;
#else
inline constexpr int kSanitizerSlowdown = 1;
#endif

// Counts constructions and destructions (moved-from objects included: each is destroyed once).
struct Counted {
  static inline std::atomic<std::int64_t> constructed{0};
  static inline std::atomic<std::int64_t> destroyed{0};
  static void reset() noexcept {
    constructed.store(0);
    destroyed.store(0);
  }
  [[nodiscard]] static std::int64_t live() noexcept { return constructed.load() - destroyed.load(); }

  explicit Counted(std::uint64_t v) noexcept : value(v) { constructed.fetch_add(1, std::memory_order_relaxed); }
  Counted(Counted&& other) noexcept : value(std::exchange(other.value, ~std::uint64_t{0})) {
    constructed.fetch_add(1, std::memory_order_relaxed);
  }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  Counted& operator=(Counted&&) = delete;
  ~Counted() { destroyed.fetch_add(1, std::memory_order_relaxed); }

  std::uint64_t value;
};

// Its copy constructor throws when `throw_on_copy` is set; its move never throws.
struct ThrowingCopy {
  int value = 0;
  bool throw_on_copy = false;

  ThrowingCopy(int v, bool t) noexcept : value(v), throw_on_copy(t) {}
  ThrowingCopy(const ThrowingCopy& other) : value(other.value), throw_on_copy(other.throw_on_copy) {
    if (throw_on_copy) throw std::runtime_error("ThrowingCopy: copy refused");
  }
  ThrowingCopy(ThrowingCopy&&) noexcept = default;
  ThrowingCopy& operator=(const ThrowingCopy&) = default;
  ThrowingCopy& operator=(ThrowingCopy&&) noexcept = default;
  ~ThrowingCopy() = default;
};

// Kills the process with a message if it is still alive after `limit` (scaled for sanitizers), so a lost item
// that leaves a consumer spinning fails at once, naming the test, instead of running into meson's timeout.
class Watchdog {
 public:
  Watchdog(std::string what, std::chrono::seconds limit) : what_(std::move(what)) {
    const auto scaled = limit * kSanitizerSlowdown;
    thread_ = std::thread([this, scaled] {
      std::unique_lock lock(mutex_);
      if (!done_changed_.wait_for(lock, scaled, [this] { return done_; })) {
        std::fflush(stdout);
        std::fprintf(stderr, "\nWATCHDOG: '%s' did not finish within %llds: lost item or livelock\n",
                     what_.c_str(), static_cast<long long>(scaled.count()));
        std::fflush(stderr);
        std::_Exit(86);
      }
    });
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() {
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_changed_.notify_one();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace weft::test
