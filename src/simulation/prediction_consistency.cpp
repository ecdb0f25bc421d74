// The prediction's own consistency (include/qdq/consistency.h): each attention verdict against its reasons, each
// Q/DQ node's predicted fate against the layer that runs it. Run by `predict` and by every report's check.

#include "qdq/consistency.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace qdq
{

namespace
{

//! The predicted layer of each node, by the node's index in the model when every layer and fate carries indices (the
//! simulator's plan always does), else by name (a plan made by hand). Indexing by position instead of hashing
//! 500,000 names took the check from 0.35 s to a few ms of `qdq-bench predict` (bench/README.md).
class LayerOfNode
{
public:
    explicit LayerOfNode(const Prediction& prediction) : mPrediction(prediction)
    {
        std::uint32_t most = 0;
        mByIndex = true;
        for (const auto& layer : prediction.layers)
        {
            mByIndex = mByIndex && layer.nodeIndices.size() == layer.onnxNodes.size();
            for (std::uint32_t index : layer.nodeIndices)
            {
                most = std::max(most, index + 1);
            }
        }
        for (const auto& fate : prediction.qdq)
        {
            mByIndex = mByIndex && fate.nodeIndex != PredictedQdq::kNoNode;
            most = std::max(most, fate.nodeIndex + 1);
        }
        if (mByIndex)
        {
            mLayers.assign(most, nullptr);
            mQdq.assign(most, false);
            for (const auto& layer : prediction.layers)
            {
                for (std::uint32_t index : layer.nodeIndices)
                {
                    if (mLayers[index] == nullptr)
                    {
                        mLayers[index] = &layer;
                    }
                }
            }
            for (const auto& fate : prediction.qdq)
            {
                mQdq[fate.nodeIndex] = true;
            }
            return;
        }
        indexNames();
        for (const auto& fate : prediction.qdq)
        {
            mQdqNames.insert(fate.node);
        }
    }

    const PredictedLayer* of(std::string_view name, std::uint32_t index) const
    {
        if (mByIndex && index != PredictedQdq::kNoNode)
        {
            return index < mLayers.size() ? mLayers[index] : nullptr;
        }
        if (mByIndex && mByName.empty())
        {
            // A partner known by name only: the name index is built on the first such question.
            indexNames();
        }
        const auto it = mByName.find(name);
        return it == mByName.end() ? nullptr : it->second;
    }

    //! Whether the node at position position of layer is a Q/DQ node.
    bool isQdq(const PredictedLayer& layer, std::size_t position) const
    {
        if (mByIndex)
        {
            return mQdq[layer.nodeIndices[position]];
        }
        return mQdqNames.count(layer.onnxNodes[position]) != 0;
    }

private:
    void indexNames() const
    {
        for (const auto& layer : mPrediction.layers)
        {
            for (const auto& node : layer.onnxNodes)
            {
                mByName.emplace(node, &layer);
            }
        }
    }

    const Prediction& mPrediction;
    bool mByIndex = false;
    std::vector<const PredictedLayer*> mLayers;
    std::vector<bool> mQdq;
    mutable std::unordered_map<std::string_view, const PredictedLayer*> mByName;
    std::unordered_set<std::string_view> mQdqNames;
};

//! Whether fate's partner, known by name only, is one of the few nodes of layer (a conv layer's): the common case,
//! answered without the name index. A Myelin layer of 500,000 nodes is asked through the index instead.
bool holdsSmall(const PredictedLayer& layer, const PredictedQdq& fate)
{
    constexpr std::size_t kSmallLayer = 32;
    return fate.partnerIndex == PredictedQdq::kNoNode && layer.onnxNodes.size() <= kSmallLayer &&
           std::find(layer.onnxNodes.begin(), layer.onnxNodes.end(), fate.partner) != layer.onnxNodes.end();
}

//! A Q/DQ node predicted standalone runs in a layer of its own; one predicted fused runs in its partner's layer.
void checkQdqFates(const Prediction& prediction, ConsistencyCheck& check)
{
    const LayerOfNode layers(prediction);
    for (const auto& fate : prediction.qdq)
    {
        const bool fused =
            fate.fate == PredictedQdq::Fate::kFusedIntoConsumer || fate.fate == PredictedQdq::Fate::kFusedIntoProducer;
        if (fate.fate != PredictedQdq::Fate::kStandalone && !fused)
        {
            continue;
        }
        ++check.claimsChecked;
        const PredictedLayer* layer = layers.of(fate.node, fate.nodeIndex);
        std::string problem;
        if (fate.fate == PredictedQdq::Fate::kStandalone && layer != nullptr && layer->onnxNodes.size() > 1 &&
            layer->kind != "Myelin")
        {
            // A standalone Q/DQ may share its layer with its own weight path or scale constants only.
            for (std::size_t position = 0; position < layer->onnxNodes.size(); ++position)
            {
                const std::string_view node = layer->onnxNodes[position];
                if (node != fate.node && !layers.isQdq(*layer, position))
                {
                    problem = "is predicted standalone but runs in layer " + layer->name + " with " + std::string(node);
                    break;
                }
            }
        }
        else if (fused && !fate.partner.empty() && layer != nullptr && !holdsSmall(*layer, fate))
        {
            const PredictedLayer* partner = layers.of(fate.partner, fate.partnerIndex);
            if (partner != nullptr && partner != layer)
            {
                problem = "is predicted fused with " + std::string(fate.partner) + " but runs in layer " + layer->name +
                          ", its partner in " + partner->name;
            }
        }
        if (!problem.empty())
        {
            check.contradictions.push_back({"qdq-fate", {}, "Q/DQ node " + std::string(fate.node) + " " + problem});
        }
    }
}

} // namespace

void checkPredictionConsistency(const Prediction& prediction, ConsistencyCheck& check)
{
    // Contradiction 6 of the issue: an attention that meets the documented conditions reported as not fused, or one
    // reported fused while it misses one. notFusedBecause is empty exactly when the block fuses.
    for (const auto& attention : prediction.attention)
    {
        ++check.claimsChecked;
        if (attention.fused == attention.notFusedBecause.empty())
        {
            continue;
        }
        check.contradictions.push_back(
            {"attention",
             {},
             "attention " + std::string(attention.scoresMatMul) + " -> " + std::string(attention.softmax) + " -> " +
                 std::string(attention.contextMatMul) + " is predicted " + (attention.fused ? "fused" : "not fused") +
                 (attention.fused ? " while it misses: " + attention.notFusedBecause.front()
                                  : " without a reason why not (its reason: " + attention.reason + ")")});
    }
    checkQdqFates(prediction, check);
}

} // namespace qdq
