// The last structural pass: each layer's nodes in graph order, the layers in the model's order, and the layers
// with no engine layer of their own (eliminated, merged into a sibling) dropped.

#include "src/simulation/passes.h"

#include "qdq/patterns.h"

#include <algorithm>

namespace qdq::simulation
{

using namespace patterns;

void orderLayers(SimulationState& s)
{
    // Node lists in graph order (TensorRT's names follow it too).
    for (std::size_t i = 0; i < s.out.layers.size(); ++i)
    {
        auto& nodes = s.layerNodes[i];
        std::sort(nodes.begin(), nodes.end(),
                  [&s](std::uint32_t a, std::uint32_t b) { return s.position[a] < s.position[b]; });
        nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
        PredictedLayer& layer = s.out.layers[i];
        layer.onnxNodes.clear();
        layer.onnxNodes.reserve(nodes.size());
        for (std::uint32_t node : nodes)
        {
            layer.onnxNodes.push_back(s.graph.nodes[node].name);
        }
        layer.nodeIndices = std::move(nodes);
    }
    // Layers in the model's order (Myelin regions were made first), those without nodes after them. The layers
    // are sorted by key and index, then moved once: a stable sort of the layers themselves moved each
    // PredictedLayer log(n) times and was 7% of `predict` on the 500,000-node bench model; most graphs are
    // already in order and skip the move.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> order(s.out.layers.size());
    for (std::size_t i = 0; i < s.out.layers.size(); ++i)
    {
        // The layer's first node that is not a Q/DQ: a conv's weight quantizer often sits at the top of the
        // model's node list, long before the conv runs.
        const PredictedLayer& layer = s.out.layers[i];
        std::uint32_t key = layer.nodeIndices.empty() ? kNone : s.position[layer.nodeIndices.front()];
        for (std::uint32_t node : layer.nodeIndices)
        {
            if (!isQdq(s.graph.nodes[node]))
            {
                key = s.position[node];
                break;
            }
        }
        order[i] = {key, static_cast<std::uint32_t>(i)};
    }
    if (!std::is_sorted(order.begin(), order.end()))
    {
        std::sort(order.begin(), order.end());
        std::vector<PredictedLayer> sorted;
        sorted.reserve(s.out.layers.size());
        for (const auto& entry : order)
        {
            sorted.push_back(std::move(s.out.layers[entry.second]));
        }
        s.out.layers = std::move(sorted);
    }
    // Eliminated layers (Concat, an absorbed flatten) are dropped; their nodes are listed as eliminated. Layers
    // merged into a sibling are dropped too (their nodes run in the merged layer).
    if (std::none_of(s.out.layers.begin(), s.out.layers.end(),
                     [](const PredictedLayer& layer) { return layer.role == "eliminated" || layer.role == "merged"; }))
    {
        return;
    }
    std::vector<PredictedLayer> kept;
    kept.reserve(s.out.layers.size());
    for (auto& layer : s.out.layers)
    {
        if (layer.role == "eliminated")
        {
            s.out.eliminated.insert(s.out.eliminated.end(), layer.onnxNodes.begin(), layer.onnxNodes.end());
            continue;
        }
        if (layer.role == "merged")
        {
            continue;
        }
        kept.push_back(std::move(layer));
    }
    s.out.layers = std::move(kept);
}

} // namespace qdq::simulation
