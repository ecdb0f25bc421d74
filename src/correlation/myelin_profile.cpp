// Profile rows of Myelin kernels attributed to their region (include/qdq/myelin_profile.h).
#include "qdq/myelin_profile.h"

#include "qdq/myelin_kernels.h"
#include "qdq/myelin_regions.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace qdq
{
namespace
{

//! The name without a trailing " [profile N]" (Cask layers of a multi-profile engine carry it at the end).
std::string_view withoutProfileSuffix(std::string_view name)
{
    if (name.empty() || name.back() != ']')
    {
        return name;
    }
    EngineLayer probe;
    probe.setName(name);
    return name.substr(0, probe.profileSuffixAt);
}

//! The L2-cache layers TensorRT 11 inserts ("do not correspond to any layers in the INetworkDefinition":
//! cookbook11-mnist-fp32-trtexec-b200/result-04.log:143) run no kernel of the network.
bool takesKernelTime(const EngineLayer& layer)
{
    return layer.type != "custom_layer";
}

//! The layers of each Myelin graph number that a profile row may be given to, in engine order.
std::unordered_map<std::string_view, std::vector<std::size_t>> layersByGraph(const EnginePlan& plan)
{
    std::unordered_map<std::string_view, std::vector<std::size_t>> byGraph;
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        const std::string_view graph = myelinGraphOf(plan.layers[i].baseName());
        if (!graph.empty() && takesKernelTime(plan.layers[i]))
        {
            byGraph[graph].push_back(i);
        }
    }
    return byGraph;
}

//! The `{ForeignNode[...]}` regions of the plan (Myelin layers without a graph number), in engine order.
std::vector<std::size_t> foreignNodeLayers(const EnginePlan& plan)
{
    std::vector<std::size_t> layers;
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        const EngineLayer& layer = plan.layers[i];
        if (isMyelinLayer(layer) && myelinGraphOf(layer.baseName()).empty())
        {
            layers.push_back(i);
        }
    }
    return layers;
}

std::size_t layerWithStem(const EnginePlan& plan, const std::vector<std::size_t>& candidates, std::string_view stem)
{
    for (std::size_t layer : candidates)
    {
        if (myelinKernelStem(plan.layers[layer].baseName()) == stem)
        {
            return layer;
        }
    }
    return plan.layers.size();
}

} // namespace

std::vector<bool> profileEntriesNamingLayers(const EnginePlan& plan, const Profile& profile)
{
    std::unordered_set<std::string_view> names;
    names.reserve(plan.layers.size() * 2);
    for (const auto& layer : plan.layers)
    {
        names.insert(layer.name);
        names.insert(layer.baseName());
    }
    std::vector<bool> matched(profile.entries.size(), false);
    for (std::size_t i = 0; i < profile.entries.size(); ++i)
    {
        const std::string_view name = profile.entries[i].name;
        matched[i] = names.count(name) != 0 || names.count(withoutProfileSuffix(name)) != 0;
    }
    return matched;
}

std::vector<MyelinKernelTime> attributeMyelinKernelTimes(const EnginePlan& plan, const Profile& profile,
                                                         const std::vector<bool>& matched)
{
    std::vector<MyelinKernelTime> times;
    const auto byGraph = layersByGraph(plan);
    std::vector<std::size_t> unlisted;            //!< rows of graphs the plan lists no kernel of
    std::vector<std::string_view> unlistedGraphs; //!< their graphs, in order of first row
    for (std::size_t i = 0; i < profile.entries.size() && i < matched.size(); ++i)
    {
        if (matched[i])
        {
            continue;
        }
        const std::string_view name = withoutProfileSuffix(profile.entries[i].name);
        const std::string_view graph = myelinGraphOf(name);
        if (graph.empty())
        {
            continue;
        }
        const auto found = byGraph.find(graph);
        if (found == byGraph.end())
        {
            unlisted.push_back(i);
            if (std::find(unlistedGraphs.begin(), unlistedGraphs.end(), graph) == unlistedGraphs.end())
            {
                unlistedGraphs.push_back(graph);
            }
            continue;
        }
        const std::size_t sameKernel = layerWithStem(plan, found->second, myelinKernelStem(name));
        if (sameKernel < plan.layers.size())
        {
            times.push_back({i, sameKernel, MyelinKernelTime::Match::kSameKernel});
        }
        else
        {
            times.push_back({i, found->second.front(), MyelinKernelTime::Match::kSameGraph});
        }
    }
    const std::vector<std::size_t> regions = foreignNodeLayers(plan);
    if (!unlisted.empty() && regions.size() == unlistedGraphs.size())
    {
        for (std::size_t i : unlisted)
        {
            const std::string_view graph = myelinGraphOf(withoutProfileSuffix(profile.entries[i].name));
            const auto at = std::find(unlistedGraphs.begin(), unlistedGraphs.end(), graph) - unlistedGraphs.begin();
            times.push_back({i, regions[static_cast<std::size_t>(at)], MyelinKernelTime::Match::kRegionByOrder});
        }
        std::sort(times.begin(), times.end(),
                  [](const MyelinKernelTime& a, const MyelinKernelTime& b) { return a.entry < b.entry; });
    }
    return times;
}

} // namespace qdq
