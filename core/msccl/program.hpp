// An MSCCL algorithm file (the XML that msccl-tools writes and MSCCL and RCCL load), read into
// plain data with every element's location, and checked the way RCCL's loader checks it
// (docs/msccl.md states each rule with its source). The lowering to a step graph is lower.hpp.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/dsl/source.hpp"

namespace sg::msccl {

enum class Coll : uint8_t { Allreduce, Allgather, ReduceScatter, Alltoall, Custom };
const char* coll_word(Coll c);  // as RCCL spells it
enum class StepType : uint8_t { Send, Recv, RecvCopySend, RecvReduceSend, RecvReduceCopy, RecvReduceCopySend, Copy, Reduce, Nop };
const char* step_word(StepType t);  // s r rcs rrs rrc rrcs cpy re nop

struct Step {
  uint32_t s = 0;
  StepType type = StepType::Nop;
  char srcbuf = 'i', dstbuf = 'o';  // i, o or s
  int64_t srcoff = -1, dstoff = -1, cnt = 0;
  int64_t depid = -1, deps = -1;
  bool hasdep = false;
  Loc loc;
  bool sends() const;
  bool receives() const;
  bool reads_src() const;  // the local source it reads (s, rrs, rrc, rrcs, cpy, re)
  bool writes_dst() const;
};

struct Tb {
  uint32_t id = 0;
  int64_t send = -1, recv = -1;
  uint32_t chan = 0;
  Loc loc;
  std::vector<Step> steps;
};

struct Gpu {
  uint32_t id = 0;
  uint32_t i_chunks = 0, o_chunks = 0, s_chunks = 0;
  Loc loc, i_loc, s_loc;  // the element, its i_chunks and s_chunks attributes
  std::vector<Tb> tbs;    // by id (contiguous 0 .. n-1)
};

struct Program {
  std::string name, proto;
  Coll coll = Coll::Custom;
  std::string coll_text;
  uint32_t ngpus = 0, nchannels = 0, nchunksperloop = 0;
  bool inplace = false, outofplace = false;
  bool has_outofplace = false;  // msccl-tools does not write outofplace, minBytes, maxBytes
  int64_t min_bytes = 0, max_bytes = 0;
  Loc loc;  // the <algo> element
  uint32_t file = 0;
  std::vector<Gpu> gpus;  // by id
};

// Reads and checks a file already in the source manager. Null after errors in diags.
std::unique_ptr<Program> read_program(const SourceManager& sm, uint32_t file, Diagnostics& diags);

}  // namespace sg::msccl
