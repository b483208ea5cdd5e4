// Structured random MPI programs: the shapes people actually write in the local view (rings,
// shifts, bursts on one tag, pipelines, nonblocking windows, pairwise exchanges, wildcard
// gathers and reductions), written with `on r in 0 .. N` and loops, with a postcondition, and
// in a fraction of cases perturbed by one small, typical mistake. random_mpi_schedule() builds
// flat programs of a few unrelated messages; it never builds a ring whose every message shares
// one tag, which is where matching order decides the result (a Z3 false wrong-result on a
// parity-ordered ring all-gather shipped that way). See structured_mpi.cpp for the families.
#pragma once
#include <cstdint>
#include <random>
#include <string>

namespace sgtest {

struct StructuredCase {
  std::string text;     // a complete .sched file with one schedule
  uint32_t nranks = 2;  // the N to elaborate it at (2..max_ranks)
  std::string family;   // "ring", "parity-ring", "shift", "burst", "pipeline", "window", "exchange",
                        // "wildcard"; with "+mutation" appended if perturbed (the text's header
                        // comment says how)
  std::string expect;   // the verdict under both semantics where the generator knows it by
                        // construction (a wildcard program with one message of another size:
                        // "unmatched"), else ""
};

// Most results are correct programs (ok under both semantics, except the variants that only
// deadlock under rendezvous, such as a ring where everyone sends first); about a third are
// mutated. Graphs stay within a few hundred steps; wildcard programs use N <= 6.
StructuredCase structured_mpi_schedule(std::mt19937_64& rng, uint32_t max_ranks = 16);

}  // namespace sgtest
