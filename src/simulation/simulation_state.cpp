// The graph questions the simulator's layer passes share (src/simulation/simulation_state.h).

#include "src/simulation/simulation_state.h"

#include "qdq/patterns.h"

namespace qdq::simulation
{

using namespace patterns;

SimulationState::SimulationState(const OnnxGraph& graph_, const SimulationOptions& options_, Prediction& out_,
                                 std::optional<TransformerParts> transformer_)
    : graph(graph_), options(options_), out(out_), transformer(std::move(transformer_))
{
    const std::size_t count = graph.nodes.size();
    layerOf.assign(count, kNone);
    folded.assign(count, false);
    qdqOf.assign(count, nullptr);
    for (const auto& entry : out.qdq)
    {
        if (entry.nodeIndex < count)
        {
            qdqOf[entry.nodeIndex] = &entry;
        }
    }
    out.layers.reserve(count / 2 + 8);
}

std::span<const std::uint32_t> SimulationState::consumers(std::uint32_t tensor) const
{
    return tensor == kNone ? std::span<const std::uint32_t>() : graph.consumersOf(tensor);
}

bool SimulationState::isNetworkOutput(std::uint32_t tensor) const
{
    for (const auto& output : graph.graphOutputs)
    {
        if (graph.tensors.find(output) == tensor)
        {
            return true;
        }
    }
    return false;
}

const OnnxNode* SimulationState::soleConsumer(std::uint32_t tensor) const
{
    auto readers = consumers(tensor);
    if (readers.size() != 1 || isNetworkOutput(tensor))
    {
        return nullptr;
    }
    return &graph.nodes[readers[0]];
}

std::uint32_t SimulationState::firstOutput(const OnnxNode& node) const
{
    auto outputs = graph.outputIds(node.index);
    return outputs.empty() ? kNone : outputs[0];
}

const OnnxNode* SimulationState::consumerThroughQdq(std::uint32_t tensor) const
{
    const OnnxNode* reader = soleConsumer(tensor);
    for (int hop = 0; reader != nullptr && isQdq(*reader) && hop < 4; ++hop)
    {
        reader = soleConsumer(firstOutput(*reader));
    }
    return reader;
}

std::vector<std::uint32_t> SimulationState::activationInputs(const OnnxNode& node) const
{
    std::vector<std::uint32_t> result;
    for (std::uint32_t input : graph.inputIds(node.index))
    {
        if (input != kNone && !constantTensor(input))
        {
            result.push_back(input);
        }
    }
    return result;
}

bool SimulationState::batchNormFoldable(const OnnxNode& node) const
{
    auto inputs = graph.inputIds(node.index);
    for (std::size_t i = 1; i < inputs.size(); ++i)
    {
        const std::uint32_t id = inputs[i];
        if (id == kNone || graph.tensors.constant[id] == kNone || graph.producerOf(id) != nullptr)
        {
            return false;
        }
    }
    return true;
}

bool SimulationState::foldsIntoConv(const OnnxNode& node) const
{
    if (node.opType != "Pad" || node.outputs.empty() || !isZeroPad(graph, node))
    {
        return false;
    }
    const OnnxNode* conv = soleConsumer(firstOutput(node));
    return conv != nullptr && (conv->opType == "Conv" || conv->opType == "ConvTranspose") && !conv->inputs.empty() &&
           conv->inputs[0] == node.outputs[0];
}

std::string SimulationState::quantizeLayerName(const OnnxNode& q) const
{
    return namesQuantizeScaleNodes() ? q.name + "_quantize_scale_node" : q.name;
}

std::uint32_t SimulationState::newLayer(PredictedLayer layer)
{
    out.layers.push_back(std::move(layer));
    layerNodes.emplace_back();
    return static_cast<std::uint32_t>(out.layers.size() - 1);
}

void SimulationState::assign(std::uint32_t layer, const OnnxNode& node)
{
    layerOf[node.index] = layer;
    layerNodes[layer].push_back(static_cast<std::uint32_t>(node.index));
}

} // namespace qdq::simulation
