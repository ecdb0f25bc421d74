#include "qdq/engine_plan.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace qdq
{

std::vector<std::string> EngineLayer::metadataOnnxNodes() const
{
    std::vector<std::string> nodes;
    std::unordered_set<std::string_view> seen;
    for (const MetadataGroup& group : metadataGroups)
    {
        for (const std::string& node : group.onnxNodes)
        {
            if (seen.insert(node).second)
            {
                nodes.push_back(node);
            }
        }
    }
    return nodes;
}

} // namespace qdq
