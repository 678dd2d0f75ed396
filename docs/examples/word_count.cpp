// Word frequencies with a weft pipeline: read a text line by line, split it into words and count them on every
// worker, merge the counts in the text's order, then print the ten most frequent words.
//
//   source    "read"      serial            kChunkLines lines of the text at a time     -> Chunk
//   stage     "tokenize"  parallel          the chunk's words, lower case               -> Words
//   stage     "count"     parallel          how often each word occurs in the chunk     -> Tally
//   sink      "merge"     serial, in order  adds the chunk's tally to the total
//   then                                    prints the top 10 once the last chunk is merged
//
// The text is generated (fixed words, a fixed seed), so every run counts the same words. The program
// counts them a second time with a plain loop and exits with 1 if the two counts differ in any way: a word, a
// count, or the order in which words first appear. Built and run by weft's test suite (suite 'examples').
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <weft/pool.hpp>
#include <weft/task_scope.hpp>

namespace {

// ---------------------------------------------------------------------------------------------------------------
// The text: kLines lines of words, some capitalised, some followed by punctuation. Three words in four are
// common words; the rest are rare made-up words, many of which first appear late in the text.

constexpr std::size_t kLines = 200'000;
constexpr std::uint64_t kSeed = 0x5eed'1234'abcd'0001;

// A small pseudo-random generator (xorshift64*) written out in full, so that the text is the same with every
// compiler and standard library (std::uniform_int_distribution's algorithm is left to each library).
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545'F491'4F6C'DD1DULL;
  }
  // A number in [0, n).
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }

 private:
  std::uint64_t state_;
};

constexpr std::array<std::string_view, 48> kCommonWords = {"the",  "of",   "and",  "to",    "in",    "a",    "is",
                                                           "that", "for",  "it",   "as",    "was",   "with", "be",
                                                           "by",   "on",   "not",  "he",    "this",  "are",  "or",
                                                           "his",  "from", "at",   "which", "but",   "have", "an",
                                                           "had",  "they", "you",  "were",  "their", "one",  "all",
                                                           "we",   "can",  "her",  "has",   "there", "been", "if",
                                                           "more", "when", "will", "would", "who",   "so"};
constexpr std::array<std::string_view, 16> kSyllables = {"ka", "lo", "mi",  "nu",  "pe",  "ri",  "sa",  "ti",
                                                         "vo", "zu", "bra", "dre", "gli", "kro", "plu", "stu"};

std::string next_word(Random& random) {
  if (random.below(4) != 0) {
    // Earlier common words are drawn more often (the smaller of two draws), as "the" is in real text.
    return std::string(kCommonWords[std::min(random.below(kCommonWords.size()), random.below(kCommonWords.size()))]);
  }
  // A rare word: a number below 2^k for a random k, spelt in syllables. Small numbers recur often, large ones
  // seldom, so new words keep appearing until the end of the text.
  std::size_t number = random.below(std::size_t{1} << random.below(21));
  std::string word;
  do {
    word += kSyllables[number % kSyllables.size()];
    number /= kSyllables.size();
  } while (number != 0);
  return word;
}

// The whole text, lines separated by '\n'.
std::string make_text() {
  Random random(kSeed);
  std::string text;
  for (std::size_t line = 0; line < kLines; ++line) {
    const std::size_t words = 1 + random.below(16);
    for (std::size_t w = 0; w < words; ++w) {
      std::string word = next_word(random);
      if (random.below(8) == 0) word[0] = static_cast<char>(word[0] - 'a' + 'A');
      if (w > 0) text += ' ';
      text += word;
      if (random.below(10) == 0) text += random.below(2) == 0 ? "," : ".";
    }
    text += '\n';
  }
  return text;
}

// ---------------------------------------------------------------------------------------------------------------
// The work of each stage, written as plain functions: the pipeline only decides where and when they run.

// The items the pipeline carries. Items are moved from stage to stage, never copied.
struct Chunk {
  std::vector<std::string> lines;
};
using Words = std::vector<std::string>;

// Appends the words of `line` to `words`: runs of ASCII letters, in lower case.
void split_words(std::string_view line, Words& words) {
  std::string word;
  for (char c : line) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c >= 'a' && c <= 'z') {
      word += c;
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
}

struct Entry {
  std::string word;
  std::size_t count = 0;
  bool operator==(const Entry&) const = default;
};

// How often each word occurs, with the words in the order of their first appearance. Used for one chunk, for
// the total, and for the sequential check.
class Tally {
 public:
  void add(const std::string& word, std::size_t count) {
    const auto [at, inserted] = index_.try_emplace(word, entries_.size());
    if (inserted) entries_.push_back(Entry{word, 0});
    entries_[at->second].count += count;
  }
  // Adds another tally that comes after this one in the text: its new words go at the end, in its order.
  void merge(const Tally& later) {
    for (const Entry& entry : later.entries_) add(entry.word, entry.count);
  }
  [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::unordered_map<std::string, std::size_t> index_;  // word -> its position in entries_
  std::vector<Entry> entries_;
};

// The `n` most frequent words; of words with the same count, the one that appeared first comes first.
std::vector<Entry> top_words(const Tally& tally, std::size_t n) {
  std::vector<Entry> sorted = tally.entries();
  std::ranges::stable_sort(sorted, [](const Entry& a, const Entry& b) { return a.count > b.count; });
  sorted.resize(std::min(n, sorted.size()));
  return sorted;
}

// The reference: the same text counted by one thread, line by line. It splits words with the same function as the
// pipeline: what it checks is the pipeline (every line counted once, the chunks merged in order).
Tally count_sequentially(const std::string& text) {
  std::istringstream in(text);
  Tally tally;
  Words words;
  for (std::string line; std::getline(in, line);) {
    words.clear();
    split_words(line, words);
    for (const std::string& word : words) tally.add(word, 1);
  }
  return tally;
}

// ---------------------------------------------------------------------------------------------------------------
// The pipeline.

// Lines per item. One item per line would spend more time handing items between stages than counting; a chunk
// of lines gives each stage call enough work to be worth a hand-off.
constexpr std::size_t kChunkLines = 1000;

struct Result {
  Tally total;
  std::vector<Entry> top;
};

Result count_with_pipeline(weft::Pool& pool, const std::string& text) {
  // A TaskScope is a one-shot graph of jobs; a pipeline is one of its jobs. Everything below only describes
  // the work: nothing runs before run_and_wait().
  weft::TaskScope scope{pool};

  // The source is called again and again until it returns std::nullopt. Never two calls at once (so it may read
  // a stream without a lock), though not always on the same thread. It reads ahead only while the pipeline has
  // room: the items alive at once are bounded by the stages' options (see docs/pipelines.md).
  std::istringstream in(text);  // a std::ifstream would do the same for a file
  weft::Stream<Chunk> chunks = scope.source(
      [&in]() -> std::optional<Chunk> {
        Chunk chunk;
        std::string line;
        while (chunk.lines.size() < kChunkLines && std::getline(in, line)) chunk.lines.push_back(std::move(line));
        if (chunk.lines.empty()) return std::nullopt;  // the end of the text
        return chunk;
      },
      {.name = "read"});

  // A parallel stage: kUnlimited lets as many chunks be split at once as the pool has workers free. `capacity`
  // is how many chunks may wait in front of it; a chunk is large (a thousand lines), so keep that small.
  weft::Stream<Words> words = scope.stage(chunks,
                                          [](Chunk chunk) {
                                            Words out;
                                            for (const std::string& line : chunk.lines) split_words(line, out);
                                            return out;
                                          },
                                          {.name = "tokenize", .concurrency = weft::kUnlimited, .capacity = 4});

  // Another parallel stage: each chunk's words become a tally, much smaller than the words.
  weft::Stream<Tally> tallies = scope.stage(words,
                                            [](const Words& chunk_words) {
                                              Tally tally;
                                              for (const std::string& word : chunk_words) tally.add(word, 1);
                                              return tally;
                                            },
                                            {.name = "count", .concurrency = weft::kUnlimited, .capacity = 4});

  // The sink: concurrency 1 (the default), so `total` needs no lock. The two parallel stages finish chunks in
  // any order; Order::Input makes the sink take them in the order the source read them. The counts alone would
  // not need that (addition does not care about order), but the order in which words first appear does: it is
  // what breaks ties in the top 10, so in-order merging gives the same top 10 on every run.
  Result result;
  weft::Job<void> merged = scope.sink(tallies, [&result](const Tally& chunk_tally) { result.total.merge(chunk_tally); },
                                      {.name = "merge", .order = weft::Order::Input});

  // The sink's Job<void> finishes when the last item has left the sink: a job after it sees every merge.
  scope.then(merged, [&result] {
    result.top = top_words(result.total, 10);
    std::printf("top %zu of %zu distinct words:\n", result.top.size(), result.total.entries().size());
    for (const Entry& entry : result.top) std::printf("  %-8s %zu\n", entry.word.c_str(), entry.count);
  });

  // Runs the pipeline and the job after it; rethrows the first exception of any stage or job.
  scope.run_and_wait();
  return result;
}

// Says where the pipeline's tally first differs from the sequential one.
void report_difference(const std::vector<Entry>& got, const std::vector<Entry>& expected) {
  std::fprintf(stderr,
               "word_count: FAILED: the pipeline's counts differ from the sequential count (%zu words, "
               "expected %zu)\n",
               got.size(), expected.size());
  const std::size_t n = std::min(got.size(), expected.size());
  const auto at = static_cast<std::size_t>(std::ranges::mismatch(got, expected).in1 - got.begin());
  if (at < n) {
    std::fprintf(stderr,
                 "  first difference at word %zu (in order of first appearance): '%s' %zu times, "
                 "expected '%s' %zu times\n",
                 at, got[at].word.c_str(), got[at].count, expected[at].word.c_str(), expected[at].count);
  }
}

}  // namespace

int main() {
  try {
    const std::string text = make_text();
    weft::Pool pool;  // one worker per CPU
    const Result result = count_with_pipeline(pool, text);

    const Tally expected = count_sequentially(text);
    if (result.total.entries() != expected.entries()) {
      report_difference(result.total.entries(), expected.entries());
      return 1;
    }
    if (result.top != top_words(expected, 10)) {
      std::fprintf(stderr, "word_count: FAILED: the pipeline's top 10 differs from the sequential one\n");
      return 1;
    }
    std::printf("ok: %zu lines, the same counts as a sequential loop\n", kLines);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "word_count: FAILED: %s\n", error.what());
    return 1;
  }
}
