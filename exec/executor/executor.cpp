// The executor's front door (exec/executor/executor.hpp): Executor forwards to its state, Executor::Impl
// (exec/executor/executor_impl.hpp, which lists the files the work is split over), and Impl's end gives
// back the communicators and the device memory.
#include "exec/executor/executor.hpp"

#include <memory>
#include <string>

#include "exec/executor/executor_impl.hpp"

namespace sg::exec {

Executor::Impl::~Impl() {
  close_ipc();  // (collective: before any rank's buffers go)
  for (MPI_Request& q : persistent)
    if (q != MPI_REQUEST_NULL) MPI_Request_free(&q);
  for (MPI_Comm& c : owned_comms)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  if (dev) {
    for (unsigned char* p : dbufs)
      if (p) dev->release(p);
    if (dstage) dev->release(dstage);
    for (AttnMemory& m : att_scratch)
      if (m.dev) dev->release(m.dev);
    for (AttnMemory& m : att_shadow)
      if (m.dev) dev->release(m.dev);
  }
}

Executor::Executor(const StepGraph& g, const SourceManager& sources, MPI_Comm world, const ExecOptions& o)
    : impl_(std::make_unique<Impl>(g, sources, world, o)) {}
Executor::~Executor() = default;
bool Executor::setup(Diagnostics& diags) {
  bool ok = impl_->setup(diags);
  op_ = impl_->op;
  return ok;
}
bool Executor::fill_inputs(Diagnostics& diags) {
  bool ok = impl_->fill_inputs();
  if (!ok && impl_->dev_failure) diags.error(impl_->dev_failure->loc, impl_->dev_failure->message);
  return ok;
}
RunResult Executor::run(bool compute, bool values) { return impl_->run(compute, values); }
CheckResult Executor::compare_expected() const {
  impl_->down_all();  // device mode: the check reads the host mirrors
  CheckResult r = impl_->compare_expected();
  r.error = impl_->dev_failure;
  return r;
}
bool Executor::has_attention() const { return impl_->att.active; }
std::string Executor::plan() const { return impl_->plan(); }
const AttentionLayout& Executor::attention_layout() const { return impl_->att; }
AttentionCheck Executor::check_attention() const {
  impl_->down_all();  // device mode: the outputs are read from the host mirrors
  return sg::exec::check_attention(impl_->att, impl_->attention_outputs(), impl_->world);
}
const unsigned char* Executor::data(const Range& r) const { return impl_->ptr(r); }

}  // namespace sg::exec
