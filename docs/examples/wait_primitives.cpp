// Tasks that wait for each other through weft::Event, weft::WaitGroup and weft::ConditionVariable. On a pool with
// fibers (the default where weft was built with them) a waiting task suspends and its worker runs other tasks;
// this program runs everything on a pool of ONE worker, which works only because of that: a task that blocked
// its thread would leave nobody to signal it.
//
// It checks its results and exits with 1 if one is wrong. Built and run by weft's test suite (suite 'examples').
#include <cstdio>
#include <deque>
#include <mutex>
#include <numeric>
#include <vector>

#include <weft/condition_variable.hpp>
#include <weft/event.hpp>
#include <weft/pool.hpp>
#include <weft/wait_group.hpp>

namespace {

bool ok = true;

void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "wait_primitives: wrong: %s\n", what);
    ok = false;
  }
}

// A task waits for a setting that a later task produces.
void event(weft::Pool& pool) {
  weft::Event ready;  // manual reset: stays set once signalled
  int setting = 0;
  int seen = 0;
  pool.post([&] {
    ready.wait();  // suspends: the one worker goes on to the next task
    seen = setting;
  });
  pool.post([&] {
    setting = 42;
    ready.signal();  // the waiting task resumes
  });
  pool.wait_idle();
  check(seen == 42, "the waiting task saw the setting");
}

// A task fans work out and waits for all of it.
void wait_group(weft::Pool& pool) {
  std::vector<int> items(100);
  std::iota(items.begin(), items.end(), 1);
  long long total = 0;
  auto job = pool.submit([&] {
    weft::WaitGroup pending;
    std::vector<long long> squares(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      pending.add();
      pool.post([&, i] {
        squares[i] = static_cast<long long>(items[i]) * items[i];
        pending.done();
      });
    }
    pending.wait();  // suspends until every square is in
    total = std::accumulate(squares.begin(), squares.end(), 0LL);
  });
  job.get();
  check(total == 338350, "the sum of the first 100 squares");
}

// A producer task and a consumer task hand items over through a mutex-protected queue.
void condition_variable(weft::Pool& pool) {
  std::mutex mutex;
  weft::ConditionVariable cv;
  std::deque<int> queue;
  bool closed = false;
  long long consumed = 0;
  pool.post([&] {  // consumer
    std::unique_lock lock(mutex);
    for (;;) {
      cv.wait(lock, [&] { return !queue.empty() || closed; });  // suspends with the mutex released
      if (queue.empty()) return;
      consumed += queue.front();
      queue.pop_front();
    }
  });
  pool.post([&] {  // producer
    for (int i = 1; i <= 1000; ++i) {
      {
        const std::lock_guard lock(mutex);
        queue.push_back(i);
      }
      cv.notify_one();
    }
    {
      const std::lock_guard lock(mutex);
      closed = true;
    }
    cv.notify_all();
  });
  pool.wait_idle();
  check(consumed == 500500, "every item consumed once");
}

}  // namespace

int main() {
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  if (!weft::fibers_available()) {
    std::printf("wait_primitives: this weft has no fibers; one worker cannot wait for itself, nothing to show\n");
    return 0;
  }
  event(pool);
  wait_group(pool);
  condition_variable(pool);
  if (ok) std::printf("wait_primitives: ok\n");
  return ok ? 0 : 1;
}
