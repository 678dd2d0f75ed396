// The differential test: thousands of random DAGs with random options, run 2-3 times each (sometimes changed
// between runs), checked against a sequential reference:
// - every node ran exactly `tokens` times under Overflow::Block, each token index once; under Drop,
//   executions + dropped_by_node == tokens, at least min(capacity, tokens) ran, and the drops add up;
// - every execution started after the last execution of every predecessor ended (a global sequence number,
//   taken with relaxed RMWs so it adds no happens-before of its own), and each node's value, computed from its
//   predecessors' plain (non-atomic) outputs, equals the reference's: under TSan this checks the graph's
//   happens-before edges themselves;
// - no node ever had more than `concurrency` executions in flight.
// Replay a failure with WEFT_SEED=<seed>, and optionally WEFT_GRAPH=<index> WEFT_WORKERS=<n> to run one graph.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;

constexpr std::size_t kMaxTokens = 6;

[[nodiscard]] std::uint64_t mix(std::uint64_t x) noexcept {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

[[nodiscard]] std::optional<std::uint64_t> env_number(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return std::strtoull(text, nullptr, 0);
}

struct Spec {
  weft::NodeOptions options;
  double rank = 0;                   // edges go from lower to higher rank: acyclic by construction
  unsigned work = 0;                 // busy_work per execution
  std::vector<std::uint32_t> preds;  // distinct
};

// What the executions of one node leave behind. Counters are relaxed: see the file comment.
struct Record {
  std::atomic<std::uint64_t> executions{0};
  std::atomic<std::uint64_t> mask{0};       // token indices seen
  std::atomic<std::uint64_t> repeated{0};   // token indices seen twice
  std::atomic<std::uint64_t> bad_token{0};  // indices >= tokens
  std::atomic<std::uint64_t> first_start{std::numeric_limits<std::uint64_t>::max()};
  std::atomic<std::uint64_t> last_end{0};
  InFlight flight;
  std::uint64_t out[kMaxTokens] = {};  // plain: read by successors, ordered only by the graph

  void reset() {
    executions.store(0);
    mask.store(0);
    repeated.store(0);
    bad_token.store(0);
    first_start.store(std::numeric_limits<std::uint64_t>::max());
    last_end.store(0);
    flight.now.store(0);
    flight.max.store(0);
    std::fill(std::begin(out), std::end(out), 0);
  }
};

struct Context {
  std::vector<Spec> specs;
  std::vector<std::unique_ptr<Record>> records;
  std::atomic<std::uint64_t> seq{0};

  // The value of a predecessor as its successors see it: the output of its lowest executed token (all tokens
  // compute the same value). The mask is read relaxed, so only the graph orders the plain read of `out`.
  [[nodiscard]] std::uint64_t value_of(std::uint32_t node) const noexcept {
    const std::uint64_t mask = records[node]->mask.load(std::memory_order_relaxed);
    if (mask == 0) return 0;  // never ran: the checker reports it
    return records[node]->out[std::countr_zero(mask)];
  }

  void execute(std::uint32_t v, std::size_t token) noexcept {
    Record& r = *records[v];
    const std::uint64_t start = seq.fetch_add(1, std::memory_order_relaxed);
    lower_to(r.first_start, start);
    r.flight.enter();
    std::uint64_t input = 0;
    for (const std::uint32_t p : specs[v].preds) input += value_of(p);
    busy_work(specs[v].work);
    if (token >= specs[v].options.tokens || token >= kMaxTokens) {
      r.bad_token.fetch_add(1, std::memory_order_relaxed);
    } else {
      r.out[token] = mix(v * 0x100000001B3ULL + input);
      const std::uint64_t bit = std::uint64_t{1} << token;
      if ((r.mask.fetch_or(bit, std::memory_order_relaxed) & bit) != 0) r.repeated.fetch_add(1);
    }
    r.executions.fetch_add(1, std::memory_order_relaxed);
    r.flight.leave();
    raise_to(r.last_end, seq.fetch_add(1, std::memory_order_relaxed));
  }

  static void lower_to(std::atomic<std::uint64_t>& min, std::uint64_t value) noexcept {
    std::uint64_t seen = min.load(std::memory_order_relaxed);
    while (seen > value && !min.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
  }
};

weft::NodeOptions random_options(std::mt19937_64& rng, unsigned workers, std::size_t index) {
  weft::NodeOptions o;
  if (rng() % 4 == 0) {
    char name[32];  // not "n" + std::to_string(index): g++ 12 -O3 warns (-Wrestrict, a false positive)
    std::snprintf(name, sizeof name, "n%zu", index);
    o.name = name;
  }
  o.priority = static_cast<weft::Priority>(rng() % 3);
  if (rng() % 8 == 0) o.affinity = static_cast<unsigned>(rng() % workers);
  const unsigned c = static_cast<unsigned>(rng() % 5);
  o.concurrency = c == 4 ? weft::kUnlimited : c + 1;
  o.capacity = rng() % 3 == 0 ? weft::kUnbounded : 1 + rng() % 8;
  o.overflow = rng() % 4 == 0 ? weft::Overflow::Drop : weft::Overflow::Block;
  o.tokens = 1 + rng() % kMaxTokens;
  return o;
}

// One random graph, its reference, and its checks.
class Trial {
 public:
  Trial(std::uint64_t seed, unsigned workers) : rng_(seed), workers_(workers) {}

  void add_nodes(std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t v = ctx_.specs.size();
      Spec spec;
      spec.options = random_options(rng_, workers_, v);
      spec.rank = std::uniform_real_distribution<double>(0, 1)(rng_);
      spec.work = rng_() % 4 == 0 ? static_cast<unsigned>(rng_() % 2000) : 0;
      ctx_.specs.push_back(spec);
      ctx_.records.push_back(std::make_unique<Record>());
      Context* ctx = &ctx_;
      const auto index = static_cast<std::uint32_t>(v);
      nodes_.push_back(graph_.add_node([ctx, index](std::size_t token) { ctx->execute(index, token); }, spec.options));
    }
  }

  void add_edges(std::size_t count) {
    const std::size_t n = nodes_.size();
    if (n < 2) return;
    for (std::size_t k = 0; k < count; ++k) {
      std::size_t a = rng_() % n, b = rng_() % n;
      if (a == b) continue;
      if (ctx_.specs[a].rank > ctx_.specs[b].rank) std::swap(a, b);
      add_edge(a, b);
      if (rng_() % 10 == 0) add_edge(a, b);  // a duplicate
    }
  }

  // Half the graphs are random DAGs; the other half are built in stages, as layered builders do: each node
  // added with the edges into it, from its predecessors in order, and often with the same predecessors as the
  // node before it. compile() lets such nodes share one join counter (graph/graph_impl.hpp, JoinGroup).
  void build() {
    const std::size_t n = 1 + rng_() % 200;
    if (rng_() % 2 == 0) {
      add_nodes(n);
      add_edges(n * (rng_() % 4) + rng_() % 3);
      return;
    }
    std::vector<std::size_t> preds;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t v = nodes_.size();
      add_nodes(1);
      ctx_.specs[v].rank = static_cast<double>(v);  // node order is the topological order here
      if (v == 0 || preds.empty() || rng_() % 3 == 0) {
        preds.clear();
        const std::size_t count = rng_() % std::min<std::size_t>(v + 1, 12);
        for (std::size_t i = 0; i < count; ++i) preds.push_back(rng_() % v);
        std::sort(preds.begin(), preds.end());
        preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
      }
      for (const std::size_t p : preds) add_edge(p, v);
    }
  }

  // Sometimes grows the graph between runs: new nodes and edges must take effect on the next run.
  void maybe_change() {
    if (rng_() % 4 != 0) return;
    add_nodes(rng_() % 10);
    add_edges(rng_() % 20);
    if (rng_() % 2 == 0) graph_.compile();
  }

  // Runs once and returns what went wrong (empty: nothing). Half the runs wait with wait(), so the calling
  // thread helps (runs the run's tasks from its own slot; the watchdog then names the run if it hangs), half
  // with a timed wait first, which leaves the work to the workers.
  std::string run_and_check(weft::Pool& pool, const std::string& label, Watchdog& watchdog) {
    for (auto& r : ctx_.records) r->reset();
    if (rng_() % 3 == 0) graph_.compile();
    const bool helping = rng_() % 2 == 0;
    watchdog.describe(label + (helping ? " (wait)" : " (wait_for)"));
    weft::Run run = graph_.run(pool);
    if (!helping) await_or_die(run, label, patience(60));
    std::ostringstream errors;
    weft::RunStatus status{};
    try {
      status = run.wait();
    } catch (...) {
      errors << "wait() threw: " << what_of(std::current_exception()) << "\n";
      return errors.str();
    }
    const weft::RunStats stats = run.stats();
    if (status != weft::RunStatus::Completed) errors << "status is not completed\n";
    if (stats.exceptions != 0 || stats.skipped != 0) {
      errors << "exceptions " << stats.exceptions << ", skipped " << stats.skipped << "\n";
    }
    const std::size_t n = nodes_.size();
    if (stats.dropped_by_node.size() != n) {
      errors << "dropped_by_node has " << stats.dropped_by_node.size() << " entries for " << n << " nodes\n";
      return errors.str();
    }
    std::vector<std::uint64_t> reference(n);
    std::vector<std::size_t> order(n);
    for (std::size_t v = 0; v < n; ++v) order[v] = v;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return ctx_.specs[a].rank < ctx_.specs[b].rank; });
    std::uint64_t dropped_sum = 0;
    int reported = 0;
    auto bad = [&](std::size_t v) -> std::ostringstream& {
      ++reported;
      const auto& o = ctx_.specs[v].options;
      errors << "node " << v << " (tokens " << o.tokens << ", concurrency " << o.concurrency << ", capacity "
             << o.capacity << ", " << (o.overflow == weft::Overflow::Drop ? "Drop" : "Block") << ", "
             << ctx_.specs[v].preds.size() << " preds): ";
      return errors;
    };
    for (const std::size_t v : order) {  // the sequential reference, in topological order
      if (reported > 10) break;
      const Spec& spec = ctx_.specs[v];
      const Record& r = *ctx_.records[v];
      std::uint64_t input = 0;
      for (const std::uint32_t p : spec.preds) input += reference[p];
      reference[v] = mix(v * 0x100000001B3ULL + input);

      const std::uint64_t executions = r.executions.load();
      const std::uint64_t dropped = stats.dropped_by_node[v];
      const std::uint64_t tokens = spec.options.tokens;
      dropped_sum += dropped;
      const std::uint64_t mask = r.mask.load();
      if (r.repeated.load() != 0 || r.bad_token.load() != 0) {
        bad(v) << r.repeated.load() << " token indices ran twice, " << r.bad_token.load() << " out of range\n";
      }
      if (static_cast<std::uint64_t>(std::popcount(mask)) != executions && r.repeated.load() == 0) {
        bad(v) << "executions " << executions << " but " << std::popcount(mask) << " distinct tokens\n";
      }
      if (spec.options.overflow == weft::Overflow::Block) {
        if (executions != tokens || dropped != 0) {
          bad(v) << "Block: ran " << executions << " times, dropped " << dropped << "\n";
        }
      } else {
        if (executions + dropped != tokens) bad(v) << "Drop: ran " << executions << " + dropped " << dropped << "\n";
        if (executions < std::min<std::uint64_t>(tokens, spec.options.capacity)) {
          bad(v) << "Drop: only " << executions << " ran though the first `capacity` tokens fit\n";
        }
      }
      if (r.flight.max.load() > spec.options.concurrency) {
        bad(v) << r.flight.max.load() << " executions in flight at once\n";
      }
      for (const std::uint32_t p : spec.preds) {
        const Record& pr = *ctx_.records[p];
        if (executions > 0 && pr.executions.load() > 0 && r.first_start.load() < pr.last_end.load()) {
          bad(v) << "started (seq " << r.first_start.load() << ") before predecessor " << p << " ended (seq "
                 << pr.last_end.load() << ")\n";
        }
      }
      for (std::size_t t = 0; t < kMaxTokens; ++t) {
        if ((mask >> t & 1) != 0 && r.out[t] != reference[v]) {
          bad(v) << "token " << t << " computed " << r.out[t] << ", the reference " << reference[v]
                 << " (a predecessor's output was not visible)\n";
          break;
        }
      }
    }
    if (reported == 0 && dropped_sum != stats.dropped) {
      errors << "dropped " << stats.dropped << " but dropped_by_node sums to " << dropped_sum << "\n";
    }
    return errors.str();
  }

  [[nodiscard]] std::string describe() const {
    std::ostringstream s;
    s << nodes_.size() << " nodes, " << graph_.edge_count() << " distinct edges";
    return s.str();
  }

 private:
  void add_edge(std::size_t a, std::size_t b) {
    graph_.add_edge(nodes_[a], nodes_[b]);
    auto& preds = ctx_.specs[b].preds;
    if (std::find(preds.begin(), preds.end(), a) == preds.end()) preds.push_back(static_cast<std::uint32_t>(a));
  }

  std::mt19937_64 rng_;
  unsigned workers_;
  Context ctx_;
  std::vector<weft::Node> nodes_;
  weft::TaskGraph graph_;  // last: destroyed (waiting for any run) before the context its bodies use
};

TEST_CASE("random DAGs with random options behave like the sequential reference") {
  const std::uint64_t seed = seed_for("graph_differential");
  const std::optional<std::uint64_t> only_graph = env_number("WEFT_GRAPH");
  const std::optional<std::uint64_t> only_workers = env_number("WEFT_WORKERS");
  const std::uint64_t graphs = stress_count(weft::test::reduced_runs() ? 400 : 1000);
  for_each_graph_worker_count([&](unsigned workers) {
    if (only_workers && *only_workers != workers) return;
    Watchdog watchdog(named("differential", workers), patience(600));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::uint64_t runs = 0;
    for (std::uint64_t gi = 0; gi < graphs; ++gi) {
      if (only_graph && *only_graph != gi) continue;
      const std::uint64_t graph_seed = mix(seed + gi);
      Trial trial(graph_seed, workers);
      trial.build();
      std::mt19937_64 rounds_rng(graph_seed ^ 0x5EED);
      const int rounds = 2 + static_cast<int>(rounds_rng() % 2);
      for (int round = 0; round < rounds; ++round) {
        std::ostringstream label_stream;
        label_stream << "differential: WEFT_SEED=" << seed << " WEFT_GRAPH=" << gi << " WEFT_WORKERS=" << workers
                     << " run " << round;
        const std::string label = label_stream.str();
        if (round > 0) trial.maybe_change();
        const std::string errors = trial.run_and_check(pool, label, watchdog);
        ++runs;
        if (!errors.empty()) {
          FAIL_CHECK(label << " (" << trial.describe() << "):\n" << errors);
          return;  // one failing graph says it; the next thousand would only repeat it
        }
      }
    }
    MESSAGE("workers " << workers << ": " << runs << " runs checked");
  });
}

}  // namespace
