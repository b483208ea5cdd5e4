// The language front end: lexing, parsing, error recovery, printing, expression semantics.
#include <catch2/catch.hpp>

#include "core/dsl/lexer.hpp"
#include "core/dsl/printer.hpp"
#include "test_util.hpp"

using namespace sg;

namespace {

std::vector<Token> lex_text(const std::string& text, Diagnostics& d) {
  static SourceManager sm;
  uint32_t f = sm.add("lex.sched", text);
  return lex(sm, f, d);
}

// The design's contract example, verbatim.
const char* kDesignExample = R"(# ring_allreduce.sched — bandwidth-optimal ring all-reduce: 2(N-1) steps of size/N bytes.
schedule ring_allreduce(size = 64MiB) {     # parameters with defaults; CLI: --set size=1GiB
  buffer data[N] bytes size / N;             # N = number of ranks, from -n or the MPI world
  init data contrib;                         # rank r holds its own contribution d(r,c) in every chunk c
  expect allreduce(data);                    # postcondition, checked by interp and verify

  for s in 0 .. N-1 {                        # half-open range: s = 0, 1, …, N-2
    for r in 0 .. N {
      send data[(r - s) % N] from r to (r + 1) % N reduce;    # % and / floor: never negative
    }
  }
  for s in 0 .. N-1 {
    for r in 0 .. N {
      send data[(r + 1 - s) % N] from r to (r + 1) % N;       # plain send: copy into same chunk
    }
  }
}
)";

}  // namespace

TEST_CASE("integers take size suffixes", "[lexer]") {
  Diagnostics d;
  auto t = lex_text("64MiB 1KiB 3GiB 1TiB 1K 2M 3G 4T 17", d);
  REQUIRE_FALSE(d.has_errors());
  REQUIRE(t.size() == 10);
  CHECK(t[0].value == 64ll << 20);
  CHECK(t[1].value == 1024);
  CHECK(t[2].value == 3ll << 30);
  CHECK(t[3].value == 1ll << 40);
  CHECK(t[4].value == 1000);
  CHECK(t[5].value == 2000000);
  CHECK(t[6].value == 3000000000ll);
  CHECK(t[7].value == 4000000000000ll);
  CHECK(t[8].value == 17);
}

TEST_CASE("bad tokens are diagnosed with their column", "[lexer]") {
  Diagnostics d;
  auto t = lex_text("a = 5Q;\n  $ \"open", d);
  REQUIRE(d.all().size() == 3);
  CHECK(d.all()[0].loc.line == 1);
  CHECK(d.all()[0].loc.col == 5);
  CHECK(d.all()[0].message.find("unknown size suffix 'Q'") != std::string::npos);
  CHECK(d.all()[1].loc.line == 2);
  CHECK(d.all()[1].loc.col == 3);
  CHECK(d.all()[2].message == "unterminated string");
  Diagnostics d2;
  lex_text("99999999999999999999", d2);
  CHECK(d2.has_errors());
  // A byte that is not a character is named in hex (issue 23: 0xD0 was "byte 0x208").
  Diagnostics d3;
  lex_text("a \xD0 b", d3);
  REQUIRE(d3.all().size() == 1);
  CHECK(d3.all()[0].message == "unexpected character byte 0xD0");
}

TEST_CASE("the design's example parses and elaborates as the design says", "[parser]") {
  auto b = sgtest::build(kDesignExample, 4);
  INFO(b.errors);
  REQUIRE(b.ok());
  const StepGraph& g = *b.graph;
  CHECK(g.size() == 2 * 2 * 4 * 3);  // 2 phases × (N-1) steps × N transfers × 2 steps each
  CHECK(g.buffers.size() == 1);
  CHECK(g.buffers[0].chunk_bytes == (64u << 20) / 4);
  // First transfer: rank 0 sends data[0] to rank 1, which reduces it in.
  CHECK(g.kind(0) == StepKind::Send);
  CHECK(g.rank(0) == 0);
  CHECK(g.range(0) == Range{0, 0, 1});
  CHECK(g.kind(1) == StepKind::Recv);
  CHECK(g.rank(1) == 1);
  CHECK((g.flags(1) & kFlagReduce));
  CHECK(g.match(0) == 1);
  CHECK(g.match(1) == 0);
  auto c = sgtest::check(kDesignExample, 5);
  INFO(c.findings);
  CHECK(c.ok);
}

TEST_CASE("print then parse gives the same program", "[parser][printer]") {
  Session s;
  const Program* p = s.load_text("x.sched", kDesignExample);
  REQUIRE_FALSE(s.diags.has_errors());
  std::string once = print_program(*p);
  const Program* q = s.load_text("y.sched", once);
  REQUIRE_FALSE(s.diags.has_errors());
  CHECK(print_program(*q) == once);
}

TEST_CASE("the parser recovers and reports several errors", "[parser]") {
  auto b = sgtest::build(
      "schedule s() {\n"
      "  buffer d[N] bytes 4\n"
      "  init d contrib;\n"
      "  send d[0] from 0 to 1 reduce\n"
      "  for i in 0 N { }\n"
      "  frob d;\n"
      "  let x = 3 +;\n"
      "}\n",
      4);
  REQUIRE_FALSE(b.ok());
  const auto& all = b.session->diags.all();
  // A missing ';' at the end of a line is reported where it belongs, just past the statement's
  // last token, and parsing goes on with the next line, so `init` and the broken `for` are seen.
  REQUIRE(all.size() == 5);
  CHECK(all[0].loc.line == 2);
  CHECK(all[0].loc.col == 22);
  CHECK(all[0].message == "expected ';' after the 'buffer' statement, found 'init'");
  CHECK(all[1].loc.line == 4);
  CHECK(all[1].loc.col == 31);
  CHECK(all[1].message == "expected ';' after the 'send' statement, found 'for'");
  CHECK(all[2].loc.line == 5);
  CHECK(all[2].message == "expected '..' in the loop range (a .. b), found 'N'");
  CHECK(all[3].message == "unknown statement 'frob'");
  CHECK(all[4].loc.line == 7);
  CHECK(all[4].loc.col == 14);
}

TEST_CASE("a missing ';' is reported after the statement's last token", "[parser]") {
  // Next line: the statement is kept and the next one parses (no second error, no cascade).
  auto b = sgtest::build("schedule s() {\n  buffer d[N] bytes 4\n  init d contrib;\n  expect allreduce(d);\n}\n", 4);
  REQUIRE(b.session->diags.error_count() == 1);
  CHECK(b.session->diags.all()[0].loc.line == 2);
  CHECK(b.session->diags.all()[0].loc.col == 22);
  // Same line: the caret goes after the last token of the statement; the rest is skipped.
  b = sgtest::build("schedule s() {\n  let x = 3 + 4 5;\n  let y = 2;\n}\n", 4);
  REQUIRE(b.session->diags.error_count() == 1);
  CHECK(b.session->diags.all()[0].loc.col == 16);
  CHECK(b.session->diags.all()[0].message == "expected ';' after the 'let' statement, found '5'");
  // Before the closing brace, and at the end of the file.
  b = sgtest::build("schedule s() {\n  on 0 { barrier }\n  barrier\n}\n", 4);
  REQUIRE(b.session->diags.error_count() == 2);
  CHECK(b.session->diags.all()[0].loc.col == 17);
  CHECK(b.session->diags.all()[1].loc.line == 3);
  CHECK(b.session->diags.all()[1].loc.col == 10);
  b = sgtest::build("schedule s() {\n  barrier", 4);
  REQUIRE(b.session->diags.error_count() == 2);  // the ';' and the '}'
  CHECK(b.session->diags.all()[0].loc.col == 10);
}

TEST_CASE("a declaration that does not parse still declares its name", "[parser][resolve]") {
  auto errors = [](const std::string& text) {
    auto b = sgtest::build(text, 4);
    std::vector<std::string> out;
    for (const auto& d : b.session->diags.all()) out.push_back(std::to_string(d.loc.line) + ": " + d.message);
    return out;
  };
  // buffer: no "unknown buffer 'data'" at the later uses.
  auto e = errors(
      "schedule s(size = 64) {\n  buffer data[N] bytes size / ;\n  init data contrib;\n"
      "  send data[0] from 0 to 1;\n  expect allreduce(data);\n}\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0] == "2: expected an expression, found ';'");
  // let: no "unknown name 'x'".
  e = errors("schedule s() {\n  let x = 3 + ;\n  let y = x * 2;\n  buffer d[x] bytes 8;\n}\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0] == "2: expected an expression, found ';'");
  // A parameter whose default does not parse: the schedule's body is still parsed (its own
  // mistakes are found) and the parameter's uses are not errors.
  e = errors("schedule s(k = min(2 3), m = 4) {\n  buffer d[k + m] bytes 8;\n  frob;\n}\n");
  REQUIRE(e.size() == 2);
  CHECK(e[0] == "1: expected ')' to close the argument list, found '3'");
  CHECK(e[1] == "3: unknown statement 'frob'");
  e = errors("schedule sub(group G = 3, buffer B) {\n  send B[0] from G[0] to G[1];\n}\nschedule s() { }\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0] == "1: expected ',' or ')' after the parameter, found '='");
  // A missing ')' is one error, and the body is still parsed.
  e = errors("schedule s(k = 2 {\n  let x = k;\n  frob;\n}\n");
  REQUIRE(e.size() == 2);
  CHECK(e[0] == "1: expected ',' or ')' after the parameter, found '{'");
  CHECK(e[1] == "3: unknown statement 'frob'");
  // Real mistakes after the broken declaration are still reported.
  e = errors("schedule s() {\n  buffer data[N] bytes ;\n  send dta[0] from 0 to 1;\n}\n");
  REQUIRE(e.size() == 2);
  CHECK(e[1] == "3: unknown buffer 'dta'");
}

TEST_CASE("an erroneous declaration is neither elaborated nor printed as if it were whole", "[parser][elaborate]") {
  Session s;
  const Program* p = s.load_text("broken.sched", "schedule s() {\n  let x = ;\n  buffer d[N] bytes x;\n}\n");
  REQUIRE(s.diags.error_count() == 1);
  REQUIRE(p->schedules.size() == 1);
  REQUIRE(p->schedules[0]->body.size() == 2);
  CHECK(p->schedules[0]->body[0]->erroneous);
  CHECK(print_program(*p).find("# a declaration here did not parse") != std::string::npos);
  // Elaborating it anyway (as a call into a broken library file would) stops with an error.
  ElabOptions o;
  o.nranks = 2;
  CHECK(elaborate(s, Target{p, p->schedules[0].get()}, o) == nullptr);
  CHECK(s.diags.render(s.sources).find("this declaration has a syntax error") != std::string::npos);
}

TEST_CASE("every statement form of the language parses and round-trips", "[parser][printer]") {
  const char* all = R"(
schedule sub(group G, buffer B, k = 2) {
  for i in 0 .. size(G) - 1 { send B[i] from G[i] to G[i + 1] reduce max; }
}
schedule everything(size = 1KiB, flag = 0) {
  let G = ranks(0, N / 2, 2);
  buffer a[N] bytes size;
  buffer m[2, N] shape [4, 8] dtype bf16;
  buffer l[N] shape [2, 4, 2, 1, 8] layout bs2hd dtype bf16;
  buffer q[N] bytes 64;
  buffer kv[N] bytes 64;
  buffer o[N] bytes 64;
  buffer dq[N] bytes 64;
  buffer dkv[N] bytes 64;
  init a contrib;
  init m[0, 1] on 1;
  init q owned;
  init kv owned;
  expect allreduce(a);
  require N >= 2 && ispow2(N) || flag == 0, "why";
  if flag { send a[0] from 0 to 1 into a[1]; } else if N > 100 { barrier; } else { barrier over G; }
  for i in 0 .. N step 2 { send a[i] from i to (i + 1) % N; }
  copy a[0] into a[1] at 0;
  reduce a[0] into a[1] op min at 1;
  compute attn(q[0], kv[0]) into o[0] mask causal at 0;
  compute attn_bwd(q[0], kv[0]) into dq[0], dkv[0] mask full at 0;
  compute gemm flops 2 * size reads a[0], m[0] writes a[1 .. 2];
  allreduce a op max;
  bcast a[0] root 0;
  reduce a[0 .. 1] root 1 op prod over world;
  allgather a;
  reduce_scatter a;
  alltoall a into a;
  on 0 { isend a[0] to 1 tag 7 as h; wait h; waitall; copy a[1] into a[0]; allreduce a[0]; }
  on r in 1 .. 2 { irecv a[0] from any tag any reduce as h2; recv a[1] from 0; wait h2; }
  on 1 { send a[1] to 0; }
  on 0 { recv a[1] from 1 tag 0; }
  call sub(ranks(0, 2), a[0 .. 2], k = 3);
  call sub(G, a);
  expect reduce(a, 0) over ranks(0, 2);
}
)";
  Session s;
  const Program* p = s.load_text("all.sched", all);
  INFO(s.diags.render(s.sources));
  REQUIRE_FALSE(s.diags.has_errors());
  std::string once = print_program(*p);
  const Program* q = s.load_text("again.sched", once);
  INFO(once);
  REQUIRE_FALSE(s.diags.has_errors());
  CHECK(print_program(*q) == once);
  auto b = sgtest::build(all, 4, "everything");
  INFO(b.errors);
  CHECK(b.ok());
}

TEST_CASE("a buffer's layout names its shape's extents: letters checked at the layout, none after bytes", "[parser][elaborate]") {
  auto ok =
      sgtest::build("schedule s() {\n  buffer q[N] shape [2, 5, 3, 4] layout bshd;\n  buffer k[N] shape [5, 3, 8] layout sh2d;\n}\n", 2);
  INFO(ok.session->diags.render(ok.session->sources));
  REQUIRE(ok.graph);
  CHECK(ok.graph->buffers[0].layout == "bshd");
  CHECK(ok.graph->buffers[0].layout_loc.col == 41);
  CHECK(ok.graph->buffers[1].layout == "sh2d");  // 2d fused into one extent of 2·dim
  auto after_bytes = sgtest::build("schedule s() {\n  buffer q[N] bytes 64 layout bshd;\n}\n", 2);
  REQUIRE(after_bytes.session->diags.error_count() == 1);
  CHECK(after_bytes.session->diags.all()[0].message ==
        "a layout names the extents of a shape: write `shape [...] layout LETTERS`, not `bytes`");
  auto bad = sgtest::build("schedule s() {\n  buffer q[N] shape [2, 5, 3, 4] layout bsdh;\n}\n", 2);
  REQUIRE(bad.session->diags.error_count() == 1);
  CHECK(bad.session->diags.all()[0].loc.col == 41);
  CHECK(bad.session->diags.all()[0].message == "a layout ends in d: a row's head-dim elements are contiguous (the kernels read rows)");
  auto count = sgtest::build("schedule s() {\n  buffer q[N] shape [5, 3, 4] layout bshd;\n}\n", 2);
  REQUIRE(count.session->diags.error_count() == 1);
  CHECK(count.session->diags.all()[0].message == "layout bshd has 4 letters but the shape 3 extents");
}

TEST_CASE("attention with K and V apart: three operands, four (six) expect buffers, checked counts and sizes", "[parser][elaborate]") {
  const std::string decl =
      "schedule s() {\n  buffer Q[N] bytes 64; buffer K[N] bytes 64; buffer V[N] bytes 64; buffer O[N] bytes 64;\n"
      "  buffer dQ[N] bytes 64; buffer dK[N] bytes 64; buffer dV[N] bytes 64; buffer W[N] bytes 32;\n"
      "  init Q owned; init K owned; init V owned;\n";
  auto ok =
      sgtest::build(decl + "  expect attention(Q, K, V, O, full);\n  compute attn(Q[0], K[0], V[0]) into O[0] mask full at 0;\n}\n", 2);
  INFO(ok.errors);
  REQUIRE(ok.graph);
  REQUIRE(ok.graph->expects.size() == 1);
  CHECK(ok.graph->expects[0].split_kv);
  CHECK(ok.graph->expects[0].bufs.size() == 3);  // Q, K, O; V beside
  CHECK(ok.graph->buffers[ok.graph->expects[0].v.buf].name == "V");
  auto bwd = sgtest::build(decl +
                               "  expect attention_backward(Q, K, V, dQ, dK, dV, causal);\n"
                               "  compute attn_bwd(Q[0], K[0], V[0]) into dQ[0], dK[0], dV[0] mask causal at 0;\n}\n",
                           2);
  INFO(bwd.errors);
  REQUIRE(bwd.graph);
  CHECK(bwd.graph->expects[0].split_kv);
  CHECK(bwd.graph->buffers[bwd.graph->expects[0].dv.buf].name == "dV");
  auto five = sgtest::build(decl + "  expect attention(Q, K, V, O, dQ, full);\n}\n", 2);
  CHECK(five.errors.find("expect attention takes Q, KV, O or Q, K, V, O, then the mask") != std::string::npos);
  auto small_v = sgtest::build(decl + "  expect attention(Q, K, W, O, full);\n}\n", 2);
  CHECK(small_v.errors.find("5:26: error: expect attention needs V with the chunks of K (as many, as large)") != std::string::npos);
  auto tile_v = sgtest::build(decl + "  compute attn(Q[0], K[0], W[0]) into O[0] mask full at 0;\n}\n", 2);
  CHECK(tile_v.errors.find("an attention tile needs K and V chunks of one size") != std::string::npos);
  auto no_dv = sgtest::build(decl + "  compute attn_bwd(Q[0], K[0], V[0]) into dQ[0], dK[0] mask full at 0;\n}\n", 2);
  CHECK(no_dv.errors.find("between dK and dV") != std::string::npos);
}

TEST_CASE("integer expressions follow the design's semantics", "[expr]") {
  // Each require must hold; elaboration fails at the first that does not.
  const char* text = R"(schedule e() {
  require -1 % 4 == 3;
  require -1 / 4 == -1;
  require 7 / -2 == -4;
  require 7 % -2 == -1;
  require 2 ** 10 == 1024 && 2 ** 3 ** 2 == 512;
  require -2 ** 2 == 4;
  require 1 + 2 * 3 == 7 && (1 + 2) * 3 == 9;
  require min(3, 1, 2) == 1 && max(3, 9, 2) == 9;
  require pow2(5) == 32 && cdiv(7, 2) == 4 && cdiv(-7, 2) == -3;
  require log2(64) == 6 && flog2(65) == 6 && ispow2(64) && !ispow2(6);
  require (1 < 2) + (2 <= 2) + (3 > 2) + (3 >= 4) + (1 == 1) + (1 != 1) == 4;
  require 0 ? 1 / 0 : 5 == 5;
  require 0 && 1 / 0 || 1;
  require 1MiB == 1048576 && 2K == 2000;
  require size(ranks(1, 3, 2)) == 3;
}
)";
  auto b = sgtest::build(text, 8);
  INFO(b.errors);
  CHECK(b.ok());
}

TEST_CASE("arithmetic errors point at the operator", "[expr]") {
  auto b = sgtest::build("schedule e() {\n  let z = 0;\n  let y = 5 % z;\n  let w = 9223372036854775807 + 1;\n}\n", 2);
  REQUIRE_FALSE(b.ok());
  const auto& d = b.session->diags.all();
  REQUIRE(d.size() == 2);
  CHECK(d[0].message == "modulo by zero");
  CHECK(d[0].loc.line == 3);
  CHECK(d[0].loc.col == 15);
  CHECK(d[1].message.find("integer overflow") == 0);
  CHECK(d[1].loc.line == 4);
}

TEST_CASE("names are resolved statically", "[resolve]") {
  auto b = sgtest::build("schedule e() {\n  let x = y + 1;\n  send d[0] from 0 to 1;\n  let N = 3;\n}\n", 2);
  REQUIRE_FALSE(b.ok());
  const auto& d = b.session->diags.all();
  REQUIRE(d.size() == 3);
  CHECK(d[0].message == "unknown name 'y'");
  CHECK(d[1].message == "unknown buffer 'd'");
  CHECK(d[2].message == "'N' is a reserved name and cannot be bound");
}

TEST_CASE("long operator chains are an error at the first operator past the depth limit, never a stack overflow", "[parser][bounds]") {
  // Issue 23: `1**1**…` (75,000 operators) and `1 ? 1 ? … : 1` (100,000) crashed the parser's
  // stack. Each recursion of ** and of the conditional's arms counts as a level of nesting.
  std::string pow = "schedule s() {\n  let a = 1";
  for (int i = 0; i < 75000; ++i) pow += "**1";
  pow += ";\n}\n";
  std::string tern = "schedule s() {\n  let a = ";
  for (int i = 0; i < 100000; ++i) tern += "1 ? ";
  tern += "1";
  for (int i = 0; i < 100000; ++i) tern += " : 1";
  tern += ";\n}\n";
  for (const std::string* text : {&pow, &tern}) {
    auto b = sgtest::build(*text, 2);
    REQUIRE_FALSE(b.ok());
    const auto& all = b.session->diags.all();
    REQUIRE_FALSE(all.empty());
    CHECK(all[0].message == "nesting too deep (more than 200 levels)");
    CHECK(all[0].loc.line == 2);
  }
  // The first token past the limit: the schedule's block is one level, so the operand of the
  // 199th `**` is the 201st.
  auto p = sgtest::build(pow, 2);
  CHECK(p.session->diags.all()[0].loc.col == 11 + 3 * 199);
  // Within the limit both forms still parse and evaluate.
  std::string ok = "schedule s() {\n  buffer d[1] bytes 4;\n  init d contrib;\n  expect nothing;\n  let a = 2";
  for (int i = 0; i < 150; ++i) ok += "**1";
  ok += ";\n  let b = ";
  for (int i = 0; i < 150; ++i) ok += "1 ? ";
  ok += "a";
  for (int i = 0; i < 150; ++i) ok += " : 0";
  ok += ";\n  require b == 2, \"b\";\n}\n";
  CHECK(sgtest::build(ok, 2).ok());
}

TEST_CASE("stray tokens by the hundred thousand: linear, one error per run of ';', the list capped", "[parser][bounds]") {
  // Issue 23: 64,000 stray ';' took 14 s (each error searched every earlier one), and 100,000 gave
  // 100,000 errors. A run of ';' is one error; past 100 diagnostics the rest are counted.
  std::string semis =
      "schedule s() {\n  buffer d[1] bytes 4;\n  init d contrib;\n  expect nothing;\n  " + std::string(200000, ';') + "\n}\n";
  auto b = sgtest::build(semis, 2);
  REQUIRE_FALSE(b.ok());
  REQUIRE(b.session->diags.all().size() == 1);
  CHECK(b.session->diags.all()[0].message == "expected a statement, found ';'");
  CHECK(b.session->diags.all()[0].loc.line == 5);
  std::string junk = "schedule s() {\n";
  for (int i = 0; i < 100000; ++i) junk += "  x;\n";
  junk += "}\n";
  auto j = sgtest::build(junk, 2);
  REQUIRE_FALSE(j.ok());
  CHECK(j.session->diags.all().size() == Diagnostics::kMaxKept);
  CHECK(j.session->diags.error_count() == 100000);
  CHECK(j.errors.find("stepgraph: note: 99900 more errors not shown (the first 100 are above)") != std::string::npos);
}
