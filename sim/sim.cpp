#include "sim/sim.hpp"

#include "sim/result_io.hpp"

namespace sg::sim {

SimResult simulate(const StepGraph& g, const Platform& p, const SimOptions& o) {
  if (o.model == Model::Analytic) {
    SimResult r = simulate_analytic(g, p, o);
    refuse_non_finite_times(r);  // never a time of inf printed
    return r;
  }
#ifdef STEPGRAPH_HAVE_SIMGRID
  return simulate_simgrid(g, p, o);  // its child refuses them before writing the result
#else
  SimResult r;
  r.model = model_name(o.model);
  r.platform = p.spec;
  r.error = "this stepgraph was built without SimGrid (STEPGRAPH_WITH_SIMGRID=OFF): use --model analytic";
  return r;
#endif
}

}  // namespace sg::sim
