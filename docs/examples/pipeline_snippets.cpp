// The pipeline examples of docs/pipelines.md, compiled and run: each function builds one pipeline, runs it and
// checks what it did; main() exits with 1 if any check fails. docs/pipelines.md quotes these lines verbatim
// (check_quotes.py, run by the suite, fails when a quoted block is no longer here).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <weft/pool.hpp>
#include <weft/task_scope.hpp>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "pipeline_snippets: FAILED: %s\n", what);
    ++failures;
  }
}

std::vector<std::string> split(std::string_view line) {
  std::vector<std::string> words;
  std::size_t at = 0;
  while (at < line.size()) {
    const std::size_t end = std::min(line.find(' ', at), line.size());
    if (end > at) words.emplace_back(line.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

// fan_out and a filter: the words of some lines, those of five letters or more, in the lines' order.
void fan_out_and_filter(weft::Pool& pool) {
  const std::vector<std::string> text = {"the quick brown fox", "jumps over the lazy dog", "", "pack my box with",
                                         "five dozen liquor jugs"};
  weft::TaskScope scope{pool};
  std::size_t next = 0;
  weft::Stream<std::string> lines = scope.source([&]() -> std::optional<std::string> {
    if (next == text.size()) return std::nullopt;
    return text[next++];
  });
  // One line in, its words out: each word goes on as an item of its own. Serial and in order (concurrency 1,
  // Order::Input), so the words leave in the order of the lines.
  weft::Stream<std::string> words = scope.fan_out(lines, [](const std::string& line) { return split(line); },
                                                  {.order = weft::Order::Input});
  // A filter: returning std::nullopt drops the item; the Order::Input stages after it skip its place.
  weft::Stream<std::string> long_words = scope.stage(words,
                                                     [](std::string word) -> std::optional<std::string> {
                                                       if (word.size() < 5) return std::nullopt;
                                                       return word;
                                                     },
                                                     {.concurrency = weft::kUnlimited});
  std::vector<std::string> kept;
  scope.sink(long_words, [&kept](std::string word) { kept.push_back(std::move(word)); }, {.order = weft::Order::Input});
  scope.run_and_wait();
  // kept: quick brown jumps dozen liquor

  check(kept == std::vector<std::string>{"quick", "brown", "jumps", "dozen", "liquor"},
        "fan_out and filter: the long words, in order");
}

// A stage's exception: it stops the pipeline, fails the sink's job and skips the jobs after it.
void errors(weft::Pool& pool) {
  const std::vector<std::string> records = {"1", "2", "three", "4"};
  weft::TaskScope scope{pool};
  std::size_t next = 0;
  auto texts = scope.source([&]() -> std::optional<std::string> {
    if (next == records.size()) return std::nullopt;
    return records[next++];
  });
  auto numbers = scope.stage(texts, [](const std::string& text) { return std::stoi(text); },
                             {.concurrency = weft::kUnlimited});
  int sum = 0;
  weft::Job<void> summed = scope.sink(numbers, [&sum](int n) { sum += n; });
  weft::Job<void> reported = scope.then(summed, [&sum] { std::printf("sum: %d\n", sum); });
  try {
    scope.run_and_wait();  // rethrows std::stoi's std::invalid_argument for "three"
  } catch (const std::invalid_argument& error) {
    std::printf("a record is not a number: %s\n", error.what());
  }
  // summed.get() rethrows the same exception; reported.get() throws weft::job_cancelled: it never ran.

  bool rethrown = false;
  try {
    summed.get();
  } catch (const std::invalid_argument&) {
    rethrown = true;
  }
  check(rethrown, "errors: the sink's job rethrows the stage's exception");
  bool skipped = false;
  try {
    reported.get();
  } catch (const weft::job_cancelled&) {
    skipped = true;
  }
  check(skipped, "errors: the job after the sink did not run");
}

// Overflow::Drop: a stage that cannot keep up drops items instead of holding the source back.
void drop(weft::Pool& pool) {
  weft::TaskScope scope{pool};
  constexpr int kSamples = 10'000;
  int produced = 0;
  auto samples = scope.source(
      [&]() -> std::optional<int> {
        if (produced == kSamples) return std::nullopt;
        return produced++;
      },
      {.name = "sensor"});
  long long handled = 0;
  scope.sink(samples, [&handled](int) { ++handled; },
             {.name = "display", .capacity = 4, .overflow = weft::Overflow::Drop});
  scope.run_and_wait();
  const weft::RunStats stats = scope.stats();
  // handled + stats.dropped == kSamples; stats.dropped_by_stage: {"sensor/display", stats.dropped} if any

  check(handled + static_cast<long long>(stats.dropped) == kSamples, "drop: every sample handled or dropped");
  check(stats.dropped == 0 ||
            (stats.dropped_by_stage.size() == 1 && stats.dropped_by_stage[0].first == "sensor/display" &&
             stats.dropped_by_stage[0].second == stats.dropped),
        "drop: counted for its stage");
}

// StageOptions::live_tokens: one number for the whole pipeline, as oneTBB's parallel_pipeline(8, ...).
void tokens(weft::Pool& pool) {
  weft::TaskScope scope{pool};
  std::atomic<int> alive{0};
  std::atomic<int> most{0};
  int next = 0;
  // At most 8 items alive at once, from the source's return to the sink's end, whatever the stages allow.
  auto requests = scope.source(
      [&]() -> std::optional<int> {
        if (next == 1000) return std::nullopt;
        const int now = alive.fetch_add(1) + 1;  // counted from here to the sink
        if (now > most.load()) most.store(now);
        return next++;
      },
      {.name = "requests", .live_tokens = 8});
  auto replies = scope.stage(requests, [](int request) { return 2 * request; },
                             {.concurrency = weft::kUnlimited, .capacity = 64});
  long long total = 0;
  scope.sink(replies, [&](int reply) {
    total += reply;
    alive.fetch_sub(1);
  });
  scope.run_and_wait();
  // most <= 8, though the stages alone would allow 1 + (64 + workers + 1) + (16 + 1) items

  check(most.load() <= 8, "tokens: at most 8 items alive");
  check(total == 999'000, "tokens: every item through");
}

// A pipeline among other jobs: its source waits for a job, and a job waits for its sink.
void composition(weft::Pool& pool) {
  weft::TaskScope scope{pool};
  weft::Job<std::vector<int>> loaded = scope.submit([] {
    std::vector<int> values(1000);
    std::iota(values.begin(), values.end(), 1);
    return values;
  });
  std::size_t next = 0;
  // Starts once `loaded` has finished, so the source may read its value.
  auto values = scope.source(weft::after(loaded), [&]() -> std::optional<int> {
    const std::vector<int>& all = loaded.get();
    if (next == all.size()) return std::nullopt;
    return all[next++];
  });
  auto squares = scope.stage(values, [](int v) { return static_cast<long long>(v) * v; },
                             {.concurrency = weft::kUnlimited});
  long long total = 0;
  weft::Job<void> summed = scope.sink(squares, [&total](long long s) { total += s; });
  weft::Job<int> other = scope.submit([] { return 7; });
  weft::Job<long long> result = scope.when_all(std::tuple{summed, other}, [&total](int seven) {
    return total + seven;  // runs after the whole pipeline and `other`
  });
  scope.run_and_wait();

  check(result.get() == 333'833'500LL + 7, "composition: the sum of squares, after the pipeline");
}

}  // namespace

int main() {
  try {
    weft::Pool pool;
    fan_out_and_filter(pool);
    errors(pool);
    drop(pool);
    tokens(pool);
    composition(pool);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "pipeline_snippets: unexpected exception: %s\n", error.what());
    return 1;
  }
  if (failures != 0) return 1;
  std::printf("ok: every pipeline snippet did what docs/pipelines.md says\n");
  return 0;
}
