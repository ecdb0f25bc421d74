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

const TensorIndex& EnginePlan::tensorIndex() const
{
    if (!mTensorIndex || mTensorIndex->layerCount != layers.size())
    {
        auto index = std::make_shared<TensorIndex>();
        index->layerCount = layers.size();
        for (std::size_t i = 0; i < layers.size(); ++i)
        {
            for (const auto& output : layers[i].outputs)
            {
                index->producer.emplace(output.name, i); // the first writer, as a linear search would find
            }
            for (const auto& input : layers[i].inputs)
            {
                auto& readers = index->consumers[input.name];
                if (readers.empty() || readers.back() != i)
                {
                    readers.push_back(i);
                }
            }
        }
        mTensorIndex = std::move(index);
    }
    return *mTensorIndex;
}

} // namespace qdq
