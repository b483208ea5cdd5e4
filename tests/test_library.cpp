// The schedule library: every schedule has a proper header, and the interpreter finds its
// postcondition holds for every N in 2..17 and the powers of two up to 64 (or the schedule
// refuses that N with a clear error from a `require`).
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>

#include "core/dsl/library.hpp"
#include "test_util.hpp"

using namespace sg;

TEST_CASE("every library file has a header saying what, cost and source", "[library]") {
  REQUIRE(library().size() >= 21);
  for (const auto& e : library()) {
    INFO(e.path);
    Session s;
    const Program* p = s.load_library(e.name);
    REQUIRE(p);
    CHECK_FALSE(s.diags.has_errors());
    CHECK(p->find(e.name) != nullptr);  // the main schedule is named like the file
    CHECK(p->header.rfind(e.name + " — ", 0) == 0);
    CHECK(p->header.find("What:") != std::string::npos);
    CHECK((p->header.find("Cost:") != std::string::npos || p->header.find("Cost (") != std::string::npos));  // "Cost (units): …"
    CHECK(p->header.find("Source:") != std::string::npos);
    CHECK(e.text.find("expect ") != std::string::npos);
  }
}

TEST_CASE("the interpreter checks the whole library for N in 2..17 and powers of two to 64", "[library][interp]") {
  std::vector<uint32_t> ns;
  for (uint32_t n = 2; n <= 17; ++n) ns.push_back(n);
  ns.push_back(32);
  ns.push_back(64);
  for (const auto& e : library()) {
    int ok = 0;
    for (uint32_t n : ns) {
      Session s;
      Target t = s.open_schedule(e.name);
      ElabOptions o;
      o.nranks = n;
      // train_step's defaults are a 405B model on multiples of 128 ranks: a small model here
      // (tp = pp = 2, so every multiple of 4; tests/test_verify.cpp verifies more shapes).
      if (e.name == "train_step")
        o.sets = {{"tp", "2"},      {"pp", "2"},   {"layers", "2"}, {"microbatches", "2"}, {"buckets", "1"}, {"seq", "32"},
                  {"hidden", "32"}, {"ffn", "64"}, {"heads", "4"},  {"kv_heads", "2"},     {"vocab", "64"}};
      CheckOutcome c = run_check(s, t, o);
      INFO(e.name << " N=" << n << "\n" << s.diags.render(s.sources) << c.findings.render(s.sources));
      if (!c.built) {
        // A refusal must come from the schedule's own `require`, with a message.
        REQUIRE(s.diags.all().size() >= 1);
        const Diagnostic& d = s.diags.all()[0];
        CHECK(s.sources.file(d.loc.file).name() == e.path);
        CHECK(d.message.find("(require ") != std::string::npos);
        CHECK(d.message.rfind("requirement failed", 0) != 0);  // it says why
        // … and is reported as unsupported, not as bad input.
        const Diagnostic* why = s.diags.unsupported_since(0);
        REQUIRE(why != nullptr);
        CHECK(!unsupported_reason(*why).empty());
        CHECK(unsupported_reason(*why).find("(require ") == std::string::npos);
        continue;
      }
      CHECK(c.ok);
      // A barrier moves no data: it expects nothing, and what `check` shows is that every rank
      // gets through. Every other schedule checks chunks.
      bool expects_nothing =
          std::all_of(c.graph->expects.begin(), c.graph->expects.end(), [](const Expectation& x) { return x.kind == ExpectKind::Nothing; });
      if (!expects_nothing) CHECK(c.post.chunks_checked > 0);
      ok += c.ok;
    }
    INFO(e.name);
    CHECK(ok >= 4);  // at least the powers of two
  }
}

TEST_CASE("library schedules warn about chunk sizes only where size / N loses bytes", "[library][warnings]") {
  for (const auto& e : library()) {
    for (uint32_t n = 1; n <= 64; n *= 2) {  // 64MiB divides evenly by every power of two
      auto b = sgtest::build_lib(e.name, n);
      INFO(e.name << " N=" << n << "\n" << b.errors);
      for (const auto& d : b.session->diags.all()) CHECK(d.severity != Severity::Warning);
    }
    for (uint32_t n : {3u, 6u, 12u}) {  // where a warning appears, it names bytes really lost
      auto b = sgtest::build_lib(e.name, n);
      for (const auto& d : b.session->diags.all()) {
        if (d.severity != Severity::Warning) continue;
        INFO(e.name << " N=" << n << ": " << d.message);
        CHECK(d.message.find("rounds down") != std::string::npos);
        CHECK(d.message.find("67108864 / ") != std::string::npos);
      }
    }
  }
}

TEST_CASE("grid schedules check for other model-parallel widths", "[library][interp]") {
  for (const char* name :
       {"hierarchical_allreduce", "tp_forward", "tp_backward", "tp_allreduce_forward", "tp_allreduce_backward", "dp_grid_allreduce"}) {
    for (int mp : {1, 2, 3, 8}) {
      for (uint32_t n = 2; n <= 17; ++n) {
        if (n % mp) continue;
        Session s;
        Target t = s.open_schedule(name);
        ElabOptions o;
        o.nranks = n;
        o.sets = {{"mp", std::to_string(mp)}};
        CheckOutcome c = run_check(s, t, o);
        INFO(name << " mp=" << mp << " N=" << n << "\n" << s.diags.render(s.sources) << c.findings.render(s.sources));
        CHECK(c.ok);
      }
    }
  }
}

TEST_CASE("Megatron-LM's tensor-parallel pair checks for any number of layers, each all-reduce over its mp group only",
          "[library][interp]") {
  for (const char* name : {"tp_allreduce_forward", "tp_allreduce_backward"}) {
    for (int layers : {1, 2, 5}) {
      for (uint32_t n : {4u, 8u, 12u}) {
        Session s;
        Target t = s.open_schedule(name);
        ElabOptions o;
        o.nranks = n;
        o.sets = {{"mp", "2"}, {"layers", std::to_string(layers)}};
        CheckOutcome c = run_check(s, t, o);
        INFO(name << " layers=" << layers << " N=" << n << "\n" << s.diags.render(s.sources) << c.findings.render(s.sources));
        REQUIRE(c.ok);
        // Every rank's row of every layer (mp = 2 chunks) is checked against its own group's sum.
        CHECK(c.post.chunks_checked == uint64_t{n} * static_cast<uint64_t>(layers) * 2);
      }
    }
  }
}

TEST_CASE("parameters change the library schedules' shape, not their correctness", "[library][interp]") {
  struct Case {
    const char* name;
    std::vector<std::pair<std::string, std::string>> sets;
  };
  const Case cases[] = {
      {"pipeline_bcast", {{"segments", "1"}}},
      {"pipeline_bcast", {{"segments", "7"}, {"root", "2"}}},
      {"binomial_bcast", {{"root", "3"}}},
      {"binomial_reduce", {{"root", "4"}}},
      {"scatter_allgather_bcast", {{"root", "1"}}},
      {"reduce_bcast_allreduce", {{"root", "2"}}},
      {"dp_bucketed_step", {{"layers", "5"}, {"buckets", "5"}}},
      {"dp_bucketed_step", {{"layers", "6"}, {"buckets", "1"}}},
  };
  for (const auto& k : cases) {
    for (uint32_t n : {5u, 8u, 13u}) {
      Session s;
      Target t = s.open_schedule(k.name);
      ElabOptions o;
      o.nranks = n;
      o.sets = k.sets;
      CheckOutcome c = run_check(s, t, o);
      INFO(k.name << " N=" << n << "\n" << s.diags.render(s.sources) << c.findings.render(s.sources));
      CHECK(c.ok);
    }
  }
}
