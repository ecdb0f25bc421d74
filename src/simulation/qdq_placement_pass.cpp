// Q/DQ placement: each Q/DQ node joins the layer its predicted fate gives it, or becomes a layer of its own.

#include "src/simulation/passes.h"

#include "qdq/patterns.h"

#include <algorithm>

namespace qdq::simulation
{

using namespace patterns;

namespace
{

//! The first node downstream of a weight's Q/DQ that is not a Q/DQ (the weighted op that folds it).
const OnnxNode* weightConsumer(const SimulationState& s, const OnnxNode& node)
{
    const OnnxNode* current = &node;
    for (int hop = 0; hop < 4; ++hop)
    {
        auto readers = s.consumers(s.firstOutput(*current));
        if (readers.empty())
        {
            return nullptr;
        }
        const OnnxNode* reader = &s.graph.nodes[readers[0]];
        if (!isQdq(*reader))
        {
            return reader;
        }
        current = reader;
    }
    return nullptr;
}

//! Places one Q/DQ node by its predicted fate.
void placeQdqNode(SimulationState& s, const PredictedQdq& predicted, const OnnxNode& node, std::uint32_t partner)
{
    switch (predicted.fate)
    {
    case PredictedQdq::Fate::kFolded:
        if (const OnnxNode* consumer = weightConsumer(s, node); consumer && s.layerOf[consumer->index] != kNone)
        {
            s.assign(s.layerOf[consumer->index], node);
        }
        break;
    case PredictedQdq::Fate::kFusedIntoConsumer:
    case PredictedQdq::Fate::kFusedIntoProducer:
        if (partner != kNone && partner < s.layerOf.size() && s.layerOf[partner] != kNone)
        {
            s.assign(s.layerOf[partner], node);
            if (predicted.fate == PredictedQdq::Fate::kFusedIntoProducer)
            {
                s.out.layers[s.layerOf[partner]].int8Output = true;
            }
            else
            {
                s.out.layers[s.layerOf[partner]].int8Input = true;
            }
        }
        break;
    case PredictedQdq::Fate::kCancelled:
        // A duplicate Q merged into a standalone twin runs in the twin's layer; other cancelled pairs vanish.
        if (predicted.isQuantize && partner != kNone && partner < s.layerOf.size() && s.qdqOf[partner] != nullptr &&
            s.qdqOf[partner]->isQuantize)
        {
            s.mergedInto.emplace_back(static_cast<std::uint32_t>(node.index), partner);
        }
        break;
    case PredictedQdq::Fate::kRequantize:
    {
        if (partner != kNone && partner < s.layerOf.size() && s.layerOf[partner] != kNone &&
            s.out.layers[s.layerOf[partner]].role == "requantize")
        {
            PredictedLayer& pair = s.out.layers[s.layerOf[partner]];
            s.assign(s.layerOf[partner], node);
            pair.name = predicted.isQuantize ? pair.name + " + " + node.name : node.name + " + " + pair.name;
            break;
        }
        PredictedLayer layer;
        layer.kind = "Scale";
        layer.role = "requantize";
        layer.name = node.name;
        layer.int8Input = layer.int8Output = true;
        layer.guess = "TensorRT runs a requantize as a Scale or Reformat layer depending on the version";
        s.assign(s.newLayer(std::move(layer)), node);
        break;
    }
    case PredictedQdq::Fate::kStandalone:
    {
        PredictedLayer layer;
        layer.kind = "Reformat";
        layer.role = predicted.isQuantize ? "standalone-quantize" : "standalone-dequantize";
        layer.name = predicted.isQuantize ? s.quantizeLayerName(node) : node.name;
        layer.int8Input = !predicted.isQuantize;
        layer.int8Output = predicted.isQuantize;
        if (s.options.trtMajor == 8 && s.options.trtMinor < 4)
        {
            layer.kind = "Scale";
        }
        s.assign(s.newLayer(std::move(layer)), node);
        break;
    }
    }
}

} // namespace

void placeQdqNodes(SimulationState& s)
{
    for (const auto& predicted : s.out.qdq)
    {
        // A Q/DQ node a Myelin region took runs in the region's kernels (myelin_pass.cpp).
        if (predicted.nodeIndex >= s.graph.nodes.size() || s.layerOf[predicted.nodeIndex] != kNone)
        {
            continue;
        }
        const OnnxNode& node = s.graph.nodes[predicted.nodeIndex];
        std::uint32_t partner = predicted.partnerIndex != PredictedQdq::kNoNode ? predicted.partnerIndex : kNone;
        if (partner == kNone && !predicted.partner.empty())
        {
            partner = s.graph.nodeIndex(predicted.partner);
        }
        placeQdqNode(s, predicted, node, partner);
    }
    for (const auto& [node, twin] : s.mergedInto)
    {
        if (s.layerOf[twin] != kNone)
        {
            s.assign(s.layerOf[twin], s.graph.nodes[node]);
        }
    }
    for (auto& copy : s.copies)
    {
        s.newLayer(std::move(copy));
    }
    s.copies.clear();
}

} // namespace qdq::simulation
