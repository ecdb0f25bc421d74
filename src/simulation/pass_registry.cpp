// The order of the simulator's layer passes. The Q/DQ fates (qdq_propagation.cpp) come before them: every pass here
// reads prediction.qdq. docs/simulator.md describes each pass and its sources.
#include "src/simulation/pass_registry.h"
#include "src/simulation/engine_simulator.h"
#include "src/simulation/passes.h"

namespace qdq::simulation
{

namespace
{

bool always(const SimulationState&)
{
    return true;
}

bool stronglyTyped(const SimulationState& s)
{
    return s.options.stronglyTyped();
}

bool weaklyTyped(const SimulationState& s)
{
    return !s.options.stronglyTyped();
}

void reportMyelinRegions(SimulationState& s)
{
    s.myelin.report(s.out);
}

void strongTyping(SimulationState& s)
{
    // Each tensor keeps the graph's type; the network I/O has the graph's types too, so no I/O reformat.
    applyStrongTyping(s.graph, s.order, s.out);
}

constexpr LayerPass kLayerPasses[] = {
    {"topological-order", "topological_order_pass.cpp", "", always, topologicalOrder},
    {"dead-layer-removal", "dead_layer_pass.cpp", "build logs' dead-layer removal (live_nodes.h)", always,
     removeDeadNodes},
    {"constant-folding", "constant_folding_pass.cpp", "reference 1.8 (constant folding)", always, foldConstants},
    {"myelin-seeds", "layer_formation_pass.cpp", "docs/tensorrt-10-11.md (Myelin)", always, seedMyelinRegions},
    {"layer-formation", "layer_formation_pass.cpp, weighted_layers.cpp, other_layers.cpp", "reference 1.8", always,
     formLayers},
    {"qdq-placement", "qdq_placement_pass.cpp", "reference 1.3-1.7", always, placeQdqNodes},
    {"sibling-merge", "sibling_merge_pass.cpp", "reference 1.8 (horizontal merge)", always, mergeSiblingConvs},
    {"layer-order", "layer_order_pass.cpp", "", always, orderLayers},
    {"myelin-report", "myelin_pass.cpp", "docs/tensorrt-10-11.md (fused attention)", always, reportMyelinRegions},
    {"precisions", "precision_pass.cpp", "reference 1.2", always, finishPrecisions},
    {"strong-typing", "strong_typing.cpp", "docs/tensorrt-10-11.md (strong typing)", stronglyTyped, strongTyping},
    {"io-reformats", "io_reformat_pass.cpp", "reference 1.8 (reformats)", weaklyTyped, addIoReformats},
};

} // namespace

std::span<const LayerPass> layerPasses()
{
    return kLayerPasses;
}

void runLayerPasses(SimulationState& state)
{
    for (const LayerPass& pass : kLayerPasses)
    {
        if (pass.applies(state))
        {
            pass.run(state);
        }
    }
}

} // namespace qdq::simulation
