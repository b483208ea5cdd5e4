#include "random_schedule.hpp"

#include <functional>
#include <vector>

namespace sgtest {

namespace {

// Text is built by appending (out += part), never with chains of operator+ that start from a
// literal ("x" + std::to_string(…) + …): GCC 12 at -O2 reports those as -Wrestrict, a known false
// positive in std::string's operator+(const char*, std::string&&).
template <class... T>
void put(std::string& out, const T&... parts) {
  ((out += parts), ...);
}
template <class... T>
std::string cat(const T&... parts) {
  std::string s;
  put(s, parts...);
  return s;
}

class Gen {
 public:
  explicit Gen(std::mt19937_64& rng) : rng_(rng) {}

  RandomSchedule run() {
    RandomSchedule out;
    out.nranks = static_cast<uint32_t>(pick(2, 6));
    std::string& t = out.text;
    put(t, "# a random schedule\nschedule rnd(k = ", std::to_string(pick(1, 3)), ", size = ", std::to_string(pick(1, 4) * 8), ") {\n");
    int nbuf = static_cast<int>(pick(1, 3));
    for (int b = 0; b < nbuf; ++b) {
      Buf buf;
      buf.name = cat("b", std::to_string(b));
      int shape = static_cast<int>(pick(0, 2));
      buf.blocked = shape != 2;
      buf.dim = shape == 0 ? cat("N") : shape == 1 ? cat("2 * N") : std::to_string(pick(1, 4));
      put(t, "  buffer ", buf.name, "[", buf.dim, "] bytes size;\n");
      int init = static_cast<int>(pick(0, 3));
      if (init == 0) put(t, "  init ", buf.name, " contrib;\n");
      if (init == 1 && buf.blocked) put(t, "  init ", buf.name, " owned;\n");
      if (init == 2) put(t, "  init ", buf.name, "[0] on ", std::to_string(pick(0, 1)), ";\n");
      bufs_.push_back(buf);
    }
    int n = static_cast<int>(pick(2, 7));
    for (int i = 0; i < n; ++i) stmt(t, 1, 0);
    t += "}\n";
    return out;
  }

 private:
  struct Buf {
    std::string name, dim;
    bool blocked = false;
  };

  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  std::string ind(int d) { return std::string(static_cast<size_t>(d) * 2, ' '); }

  std::string atom() {
    int c = static_cast<int>(pick(0, 4));
    if (c <= 1 || vars_.empty()) return c == 4 ? "N" : std::to_string(pick(0, 5));
    return vars_[static_cast<size_t>(pick(0, static_cast<int64_t>(vars_.size()) - 1))];
  }
  std::string expr(int depth = 0) {
    if (depth > 1 || pick(0, 2) == 0) return atom();
    static const char* ops[] = {"+", "-", "*", "/", "%"};
    std::string op = ops[pick(0, 4)];
    std::string rhs = (op == "/" || op == "%") ? std::to_string(pick(1, 4)) : expr(depth + 1);
    return cat("(", expr(depth + 1), " ", op, " ", rhs, ")");
  }
  std::string rank() { return cat("(", expr(), ") % N"); }
  const Buf& buf() { return bufs_[static_cast<size_t>(pick(0, static_cast<int64_t>(bufs_.size()) - 1))]; }
  std::string chunk(const Buf& b) { return cat(b.name, "[(", expr(), ") % (", b.dim, ")]"); }

  void stmt(std::string& t, int d, int depth) {
    int c = static_cast<int>(pick(0, depth >= 2 ? 6 : 10));
    switch (c) {
      case 0:
      case 1:
      case 2: {
        const Buf& a = buf();
        put(t, ind(d), "send ", chunk(a), " from ", rank(), " to ", rank());
        if (pick(0, 2) == 0) put(t, " into ", chunk(buf()));
        if (pick(0, 1)) t += " reduce";
        t += ";\n";
        break;
      }
      case 3: {
        put(t, ind(d), pick(0, 1) ? "copy " : "reduce ", chunk(buf()), " into ", chunk(buf()), " at ", rank(), ";\n");
        break;
      }
      case 4: {
        // A matched MPI pair on two different ranks (blocking or nonblocking).
        std::string a = cat("a", std::to_string(uid_)), p = cat("p", std::to_string(uid_)), h = cat("h", std::to_string(uid_));
        ++uid_;
        int64_t tag = pick(0, 2);
        put(t, ind(d), "let ", a, " = ", rank(), ";\n");
        put(t, ind(d), "let ", p, " = (", a, " + 1 + (", expr(), ") % (N - 1)) % N;\n");
        bool nb = pick(0, 1);
        put(t, ind(d), "on ", a, " { ", nb ? "isend " : "send ", chunk(buf()), " to ", p, " tag ", std::to_string(tag),
            nb ? cat(" as ", h, "; wait ", h) : std::string(), "; }\n");
        put(t, ind(d), "on ", p, " { recv ", chunk(buf()), " from ", a, " tag ", std::to_string(tag), "; }\n");
        break;
      }
      case 5: {
        const Buf& b = buf();
        int k = static_cast<int>(pick(0, 3));
        if (k == 0) put(t, ind(d), "allreduce ", chunk(b), ";\n");
        else if (k == 1) put(t, ind(d), "bcast ", chunk(b), " root ", rank(), ";\n");
        else if (k == 2 && b.blocked) put(t, ind(d), "allgather ", b.name, ";\n");
        else put(t, ind(d), "barrier;\n");
        break;
      }
      case 6:
        put(t, ind(d), "compute k", std::to_string(pick(0, 2)), " flops ", std::to_string(pick(1, 100)), " reads ", chunk(buf()),
            " writes ", chunk(buf()), " at ", rank(), ";\n");
        break;
      case 7:
      case 8: {
        std::string v = cat("v", std::to_string(uid_++));
        std::string hi = pick(0, 1) ? cat("N") : std::to_string(pick(1, 3));
        put(t, ind(d), "for ", v, " in 0 .. ", hi, pick(0, 3) == 0 ? " step 2" : "", " {\n");
        size_t scope = vars_.size();
        vars_.push_back(v);
        int n = static_cast<int>(pick(1, 3));
        for (int i = 0; i < n; ++i) stmt(t, d + 1, depth + 1);
        vars_.resize(scope);
        put(t, ind(d), "}\n");
        break;
      }
      case 9: {
        size_t scope = vars_.size();
        put(t, ind(d), "if ", expr(), " % 2 == 0 {\n");
        stmt(t, d + 1, depth + 1);
        vars_.resize(scope);
        put(t, ind(d), "} else {\n");
        stmt(t, d + 1, depth + 1);
        vars_.resize(scope);
        put(t, ind(d), "}\n");
        break;
      }
      default: {
        std::string v = cat("x", std::to_string(uid_++));
        put(t, ind(d), "let ", v, " = ", expr(), ";\n");
        vars_.push_back(v);
        break;
      }
    }
  }

  std::mt19937_64& rng_;
  std::vector<Buf> bufs_;
  std::vector<std::string> vars_;
  int uid_ = 0;
};

}  // namespace

RandomSchedule random_schedule(std::mt19937_64& rng) { return Gen(rng).run(); }

}  // namespace sgtest

namespace sgtest {

RandomSchedule random_mpi_schedule(std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  RandomSchedule out;
  out.nranks = static_cast<uint32_t>(pick(2, 4));
  uint32_t n = out.nranks;
  // Messages are laid out in one global order that every rank follows (which alone can neither
  // deadlock nor leave a message behind), then perturbed: wildcards, nonblocking operations
  // with late or missing waits, writes between an operation and its wait, a reordered or a
  // dropped receive, reads of an uninitialised buffer, a postcondition.
  std::vector<std::vector<std::string>> prog(n);
  std::vector<std::vector<std::string>> pending_wait(n);
  int events = static_cast<int>(pick(1, 5));
  for (int e = 0; e < events; ++e) {
    uint32_t a = static_cast<uint32_t>(pick(0, n - 1));
    uint32_t p = static_cast<uint32_t>((a + pick(1, n - 1)) % n);
    std::string chunk = std::to_string(pick(0, 3));
    std::string src = cat(pick(0, 1) ? "a[" : "b[", chunk, "]");
    std::string dst = cat(pick(0, 3) ? "a[" : "b[", std::to_string(pick(0, 3)), "]");
    // Now and then two chunks on one side: a size mismatch, bad input where the pair is fixed,
    // `unmatched` where a wildcard receive can take the message.
    if (pick(0, 9) == 0) {
      int64_t c = pick(0, 2);
      (pick(0, 1) ? src : dst) = cat(pick(0, 1) ? "a[" : "b[", std::to_string(c), " .. ", std::to_string(c + 2), "]");
    }
    std::string tag = std::to_string(pick(0, 1));
    std::string h = cat("h", std::to_string(e));
    bool nb_send = pick(0, 3) == 0, nb_recv = pick(0, 3) == 0;
    prog[a].push_back(cat(nb_send ? "isend " : "send ", src, " to ", std::to_string(p), " tag ", tag,
                          nb_send ? cat(" as ", h, "s") : std::string(), ";"));
    if (nb_send) pending_wait[a].push_back(cat(h, "s"));
    if (pick(0, 9) != 0) {  // sometimes the receive is missing
      std::string from = pick(0, 4) == 0 ? cat("any") : std::to_string(a);
      std::string rtag = pick(0, 5) == 0 ? cat("any") : tag;
      prog[p].push_back(cat(nb_recv ? "irecv " : "recv ", dst, " from ", from, " tag ", rtag, pick(0, 4) == 0 ? " reduce" : "",
                            nb_recv ? cat(" as ", h, "r") : std::string(), ";"));
      if (nb_recv) pending_wait[p].push_back(cat(h, "r"));
    }
    for (uint32_t r = 0; r < n; ++r) {
      if (pick(0, 5) == 0) prog[r].push_back(cat("copy a[", std::to_string(pick(0, 3)), "] into a[", std::to_string(pick(0, 3)), "];"));
      if (!pending_wait[r].empty() && pick(0, 2) == 0) {
        prog[r].push_back(cat("wait ", pending_wait[r].back(), ";"));
        pending_wait[r].pop_back();
      }
    }
  }
  for (uint32_t r = 0; r < n; ++r) {
    if (!pending_wait[r].empty() && pick(0, 5)) prog[r].push_back("waitall;");
    if (prog[r].size() > 1 && pick(0, 7) == 0) std::swap(prog[r][0], prog[r][1]);
  }
  std::string& t = out.text;
  t += "# a random MPI program\nschedule mpi() {\n  buffer a[4] bytes 8;\n  buffer b[4] bytes 8;\n  init a contrib;\n";
  if (pick(0, 2) == 0) t += "  init b contrib;\n";
  if (pick(0, 3) == 0) t += "  expect allreduce(a[0 .. 1]);\n";
  for (uint32_t r = 0; r < n; ++r) {
    put(t, "  on ", std::to_string(r), " {\n");
    for (const auto& line : prog[r]) put(t, "    ", line, "\n");
    t += "  }\n";
  }
  t += "}\n";
  return out;
}

}  // namespace sgtest

namespace sgtest {

SizedSchedule random_sized_schedule(std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  SizedSchedule out;
  uint32_t n = static_cast<uint32_t>(pick(2, 5));
  out.program.nranks = n;
  // Sender i (1 .. n-1): size[i] chunks, tag[i]. Receive j (0 .. n-2): rsize[j] chunks, from
  // rsrc[j] (0 = any), tag rtag[j] (-1 = any).
  std::vector<int64_t> size(n), tag(n), rsize(n - 1), rsrc(n - 1), rtag(n - 1);
  // Mostly one size, one in seven or so the other, and mostly wildcards: about half the
  // programs have a size mismatch in some order, a third are ok.
  const int64_t base = pick(1, 2);
  auto sized = [&] { return pick(0, 99) < 15 ? 3 - base : base; };
  for (uint32_t i = 1; i < n; ++i) size[i] = sized(), tag[i] = pick(0, 1);
  bool wild = false;
  for (uint32_t j = 0; j + 1 < n; ++j) {
    rsize[j] = sized();
    rsrc[j] = pick(0, 99) < 20 ? pick(1, n - 1) : 0;
    rtag[j] = pick(0, 99) < 15 ? pick(0, 1) : -1;
    wild = wild || rsrc[j] == 0 || rtag[j] < 0;
  }
  if (!wild) rsrc[static_cast<size_t>(pick(0, n - 2))] = 0;
  // The oracle: every order in which the blocking receives, one after another, can take the
  // messages (all sent from the start; any not yet taken can arrive first).
  std::vector<bool> taken(n, false);
  std::function<void(uint32_t)> walk = [&](uint32_t j) {
    if (j + 1 == n) return;  // every receive got a message (as many messages as receives)
    bool any = false;
    for (uint32_t i = 1; i < n; ++i) {
      if (taken[i] || (rsrc[j] && rsrc[j] != i) || (rtag[j] >= 0 && rtag[j] != tag[i])) continue;
      any = true;
      if (size[i] != rsize[j]) {
        out.size_mismatch = true;
        continue;  // the MPI program stops there
      }
      taken[i] = true;
      walk(j + 1);
      taken[i] = false;
    }
    if (!any) out.stuck = true;
  };
  walk(0);
  out.expect = out.size_mismatch || out.stuck ? "unmatched" : "ok";
  out.all_one_size = true;
  for (uint32_t i = 1; i < n; ++i) out.all_one_size = out.all_one_size && size[i] == size[1];
  for (uint32_t j = 0; j + 1 < n; ++j) out.all_one_size = out.all_one_size && rsize[j] == size[1];
  auto slice = [](const char* buf, int64_t at, int64_t cnt) {
    return cnt == 1 ? cat(buf, "[", std::to_string(at), "]") : cat(buf, "[", std::to_string(at), " .. ", std::to_string(at + cnt), "]");
  };
  std::string& t = out.program.text;
  t += "# messages of random sizes into a root's receives\nschedule sized() {\n  buffer a[2] bytes 8;\n  buffer b[8] bytes 8;\n";
  t += "  init a contrib;\n  expect nothing;\n  on 0 {\n";
  for (uint32_t j = 0; j + 1 < n; ++j)
    put(t, "    recv ", slice("b", 2 * j, rsize[j]), " from ", rsrc[j] ? std::to_string(rsrc[j]) : std::string("any"), " tag ",
        rtag[j] < 0 ? std::string("any") : std::to_string(rtag[j]), ";\n");
  t += "  }\n";
  for (uint32_t i = 1; i < n; ++i)
    put(t, "  on ", std::to_string(i), " { send ", slice("a", 0, size[i]), " to 0 tag ", std::to_string(tag[i]), "; }\n");
  t += "}\n";
  return out;
}

}  // namespace sgtest
