#include "sim/sim.hpp"

namespace sg::sim {

SimResult simulate(const StepGraph& g, const Platform& p, const SimOptions& o) {
  if (o.model == Model::Analytic) return simulate_analytic(g, p, o);
#ifdef STEPGRAPH_HAVE_SIMGRID
  return simulate_simgrid(g, p, o);
#else
  SimResult r;
  r.model = model_name(o.model);
  r.platform = p.spec;
  r.error = "this stepgraph was built without SimGrid (STEPGRAPH_WITH_SIMGRID=OFF): use --model analytic";
  return r;
#endif
}

}  // namespace sg::sim
