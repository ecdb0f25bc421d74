// The prediction's own consistency (include/qdq/consistency.h): each attention verdict against its reasons, each
// Q/DQ node's predicted fate against the layer that runs it. Run by `predict` and by every report's check.

#include "qdq/consistency.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace qdq
{

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
    // A Q/DQ node predicted standalone runs in a layer of its own; one predicted fused runs in its partner's layer.
    std::unordered_map<std::string_view, const PredictedLayer*> layerOf;
    for (const auto& layer : prediction.layers)
    {
        for (const auto& node : layer.onnxNodes)
        {
            layerOf.emplace(node, &layer);
        }
    }
    std::unordered_set<std::string_view> qdqNodes;
    for (const auto& fate : prediction.qdq)
    {
        qdqNodes.insert(fate.node);
    }
    for (const auto& fate : prediction.qdq)
    {
        const bool fused =
            fate.fate == PredictedQdq::Fate::kFusedIntoConsumer || fate.fate == PredictedQdq::Fate::kFusedIntoProducer;
        if (fate.fate != PredictedQdq::Fate::kStandalone && !fused)
        {
            continue;
        }
        ++check.claimsChecked;
        const auto own = layerOf.find(fate.node);
        const PredictedLayer* layer = own == layerOf.end() ? nullptr : own->second;
        std::string problem;
        if (fate.fate == PredictedQdq::Fate::kStandalone && layer != nullptr && layer->onnxNodes.size() > 1 &&
            layer->kind != "Myelin")
        {
            // A standalone Q/DQ may share its layer with its own weight path or scale constants only.
            for (const auto& node : layer->onnxNodes)
            {
                if (node != fate.node && qdqNodes.count(node) == 0)
                {
                    problem = "is predicted standalone but runs in layer " + layer->name + " with " + std::string(node);
                    break;
                }
            }
        }
        else if (fused && !fate.partner.empty() && layer != nullptr)
        {
            const auto partner = layerOf.find(fate.partner);
            if (partner != layerOf.end() && partner->second != layer)
            {
                problem = "is predicted fused with " + std::string(fate.partner) + " but runs in layer " + layer->name +
                          ", its partner in " + partner->second->name;
            }
        }
        if (!problem.empty())
        {
            check.contradictions.push_back({"qdq-fate", {}, "Q/DQ node " + std::string(fate.node) + " " + problem});
        }
    }
}

} // namespace qdq
