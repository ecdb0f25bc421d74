// Where the time goes: the largest layers of the engine, what they are and which root cause owns them, so that a
// cost no Q/DQ finding explains (a Myelin post-processing head, an input transpose, explicit Pad layers) is seen.

#include "qdq/precision_summary.h"
#include "qdq/root_causes.h"

#include <algorithm>

namespace qdq
{

std::vector<LayerTimeShare> largestLayers(const Report& report, const Inputs& inputs, std::size_t count)
{
    const EnginePlan* plan = inputs.engine();
    if (plan == nullptr || !report.hasTimings)
    {
        return {};
    }
    std::vector<std::optional<std::size_t>> ownerOf(plan->layers.size());
    for (std::size_t c = 0; c < report.causes.size(); ++c)
    {
        for (std::size_t layer : report.causes[c].layers)
        {
            if (layer < ownerOf.size())
            {
                ownerOf[layer] = c;
            }
        }
    }
    std::vector<LayerTimeShare> shares;
    for (const LayerMapping& mapping : report.correlation.layers)
    {
        if (mapping.timeMs && *mapping.timeMs > 0.0 && mapping.layer < plan->layers.size())
        {
            shares.push_back({mapping.layer, *mapping.timeMs, "", "", ownerOf[mapping.layer]});
        }
    }
    const std::size_t shown = std::min(count, shares.size());
    std::partial_sort(shares.begin(), shares.begin() + static_cast<std::ptrdiff_t>(shown), shares.end(),
                      [](const LayerTimeShare& a, const LayerTimeShare& b)
                      { return a.ms != b.ms ? a.ms > b.ms : a.layer < b.layer; });
    shares.resize(shown);
    for (LayerTimeShare& share : shares)
    {
        const EngineLayer& layer = plan->layers[share.layer];
        const LayerState state = report.correlation.layers[share.layer].state;
        share.kind = std::string(layerKind(layer, state));
        share.precision = layerPrecisionLabel(layer, state);
    }
    return shares;
}

} // namespace qdq
