// Dead-node detection shared by the Q/DQ fates (qdq_propagation.cpp) and the dead-layer removal pass.
#include "src/simulation/live_nodes.h"

#include <algorithm>
#include <string_view>

namespace qdq::simulation
{

std::vector<bool> nodesReachingAnOutput(const OnnxGraph& graph)
{
    const std::size_t count = graph.nodes.size();
    const bool hasSubgraphs = std::any_of(graph.nodes.begin(), graph.nodes.end(),
                                          [](const OnnxNode& node)
                                          {
                                              const std::string_view op = node.opType;
                                              return op == "If" || op == "Loop" || op == "Scan";
                                          });
    if (graph.graphOutputs.empty() || hasSubgraphs)
    {
        return std::vector<bool>(count, true);
    }
    std::vector<bool> live(count, false);
    std::vector<std::uint32_t> pending;
    const auto reach = [&](std::uint32_t tensor)
    {
        const OnnxNode* producer = tensor == OnnxGraph::kNone ? nullptr : graph.producerOf(tensor);
        if (producer != nullptr && !live[producer->index])
        {
            live[producer->index] = true;
            pending.push_back(static_cast<std::uint32_t>(producer->index));
        }
    };
    for (const auto& output : graph.graphOutputs)
    {
        reach(graph.tensors.find(output));
    }
    if (pending.empty())
    {
        // No node writes a network output (a model the parser rejects, or one being edited): nothing to remove.
        return std::vector<bool>(count, true);
    }
    while (!pending.empty())
    {
        const std::uint32_t node = pending.back();
        pending.pop_back();
        for (std::uint32_t input : graph.inputIds(node))
        {
            reach(input);
        }
    }
    return live;
}

} // namespace qdq::simulation
