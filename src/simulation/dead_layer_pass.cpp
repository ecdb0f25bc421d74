// Dead-layer removal: nodes whose outputs reach no network output build no layer (live_nodes.h gives the sources).
#include "src/simulation/live_nodes.h"
#include "src/simulation/passes.h"

namespace qdq::simulation
{

void removeDeadNodes(SimulationState& s)
{
    const std::vector<bool> live = nodesReachingAnOutput(s.graph);
    for (std::size_t node = 0; node < live.size(); ++node)
    {
        if (!live[node])
        {
            s.folded[node] = true;
        }
    }
}

} // namespace qdq::simulation
