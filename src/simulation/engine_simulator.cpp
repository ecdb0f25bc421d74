// The engine simulator's second half: from the model's graph and the predicted fate of every Q/DQ node, the layer
// list TensorRT will build. The layer passes (src/simulation/pass_registry.cpp, one file each) follow the documented
// layer fusions (reference section 1.8): weighted ops with their BatchNorm, bias, scale and activation epilogues, the
// residual Add and the activation after it, Conv + activation + MaxPool, pointwise chains, shuffles merged or turned
// into no-ops, Concat elimination, SoftMax + TopK, Myelin regions on the versions that make them, and reformats at the
// network's inputs and outputs. Where TensorRT's choice depends on tactics or on undocumented behaviour, the layer
// carries a guess that says so.
#include "src/simulation/engine_simulator.h"
#include "src/simulation/pass_registry.h"

#include <exception>
#include <thread>

namespace qdq::simulation
{

void buildPredictedLayers(const OnnxGraph& graph, const SimulationOptions& options, Prediction& prediction)
{
    SimulationState state(graph, options, prediction, std::nullopt);
    runLayerPasses(state);
}

void buildPredictedLayers(const OnnxGraph& graph, const SimulationOptions& options, Prediction& prediction,
                          TransformerParts transformer)
{
    SimulationState state(graph, options, prediction, std::move(transformer));
    runLayerPasses(state);
}

FirstStages runFirstStages(const OnnxGraph& graph, const SimulationOptions& options)
{
    FirstStages stages;
    // One scan for both questions (each scan of the 500,000-node bench CNN's op types cost about 1% of its predict).
    bool softmax = false;
    for (const OnnxNode& node : graph.nodes)
    {
        softmax = softmax || node.opType == "Softmax";
        stages.transformer.layerNormOrGelu = stages.transformer.layerNormOrGelu || isLayerNormOrGelu(graph, node);
    }
    // An attention block needs a Softmax. A second thread pays only on a large graph: on the 500,000-node bench
    // transformer the search took about 7% of predict, which now overlaps the Q/DQ fates.
    constexpr std::size_t kSearchBesideFrom = 20000;
    if (!softmax || graph.nodes.size() < kSearchBesideFrom)
    {
        stages.prediction = predictQdqFates(graph, options);
        if (softmax)
        {
            stages.transformer.attention = findAttentionBlocks(graph);
        }
        return stages;
    }
    std::exception_ptr searchError;
    {
        std::jthread search(
            [&]
            {
                try
                {
                    stages.transformer.attention = findAttentionBlocks(graph);
                }
                catch (...)
                {
                    searchError = std::current_exception();
                }
            });
        stages.prediction = predictQdqFates(graph, options);
    } // joined here, also when predictQdqFates throws
    if (searchError)
    {
        std::rethrow_exception(searchError);
    }
    return stages;
}

} // namespace qdq::simulation
