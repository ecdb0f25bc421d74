// The horizontal merge of sibling convolutions (reference 1.8).

#include "src/simulation/passes.h"

#include "qdq/patterns.h"

#include <unordered_map>

namespace qdq::simulation
{

using namespace patterns;

namespace
{

//! What makes two convs on one input candidates for one horizontally merged layer: the same kernel (weight
//! dims after the output channels), strides, pads, dilations, groups and the same epilogue ops. Empty when the
//! conv cannot be merged (its weights' shape is unknown).
std::string siblingSignature(const SimulationState& s, const OnnxNode& conv, const std::string& epilogue)
{
    if (conv.inputs.size() < 2)
    {
        return {};
    }
    // The weight tensor: the initializer itself, or what its DQ (and Q) read.
    const std::string* weight = &conv.inputs[1];
    for (int step = 0; step < 2; ++step)
    {
        const OnnxNode* producer = producerOf(s.graph, *weight);
        if (producer == nullptr || !isQdq(*producer) || producer->inputs.empty())
        {
            break;
        }
        weight = &producer->inputs[0];
    }
    const OnnxConstant* weights = s.graph.constant(*weight);
    if (weights == nullptr || weights->dims.size() < 3)
    {
        return {};
    }
    std::string signature = "k";
    for (std::size_t i = 1; i < weights->dims.size(); ++i)
    {
        signature += std::to_string(weights->dims[i]) + "x";
    }
    for (const auto& attribute : conv.attributes)
    {
        signature += ";" + attribute.name + "=" + std::to_string(attribute.i) + ":" + attribute.s;
        for (std::int64_t value : attribute.ints)
        {
            signature += "," + std::to_string(value);
        }
    }
    return signature + ";" + epilogue;
}

//! Where a conv's activation input comes from, for the horizontal merge: the Quantize behind its DQ (a duplicate
//! Q merged into a twin counts as the twin), or the float tensor itself. Empty when unknown.
std::string siblingSource(const SimulationState& s, const OnnxNode& conv)
{
    if (conv.inputs.empty())
    {
        return {};
    }
    const OnnxNode* dq = feedingDequantize(s.graph, conv.inputs[0]);
    if (dq == nullptr)
    {
        return "t:" + std::string(conv.inputs[0]);
    }
    const OnnxNode* q = dq->inputs.empty() ? nullptr : producerOf(s.graph, dq->inputs[0]);
    if (q == nullptr || !isQuantize(*q))
    {
        return "dq:" + std::string(dq->inputs.empty() ? std::string_view() : std::string_view(dq->inputs[0]));
    }
    std::uint32_t quantize = static_cast<std::uint32_t>(q->index);
    const PredictedQdq* fate = s.qdqOf[quantize];
    if (fate != nullptr && fate->fate == PredictedQdq::Fate::kCancelled &&
        fate->partnerIndex != PredictedQdq::kNoNode && fate->partnerIndex < s.qdqOf.size() &&
        s.qdqOf[fate->partnerIndex] != nullptr && s.qdqOf[fate->partnerIndex]->isQuantize)
    {
        quantize = fate->partnerIndex;
    }
    return "q:" + std::to_string(quantize);
}

//! Whether another conv can share this conv's input: some tensor on the way from its source (the float tensor, or
//! the Q's input behind its DQ) to the conv has a second reader. Most convs have none; skipping them saves
//! building a signature and a map entry for each (3-4% of predict on the 100,000-conv bench model).
bool mayHaveSibling(const SimulationState& s, const OnnxNode& conv)
{
    const std::string* current = &conv.inputs[0];
    for (int depth = 0; depth < 64; ++depth)
    {
        if (consumersOf(s.graph, *current).size() >= 2)
        {
            return true;
        }
        const OnnxNode* producer = s.graph.producer(*current);
        if (producer == nullptr || producer->inputs.empty())
        {
            return false;
        }
        if (isQuantize(*producer))
        {
            return consumersOf(s.graph, producer->inputs[0]).size() >= 2; // a twin Q on the same tensor
        }
        if (!isDequantize(*producer) && (!isCommuting(producer->opType) || producer->opType == "Concat"))
        {
            return false;
        }
        current = &producer->inputs[0];
    }
    return true;
}

//! Horizontal merge (reference 1.8, `Merging layers: A || B` in 8.x logs): convs that read the same tensor
//! through the same (or merged twin) Quantize, with the same kernel, strides, pads, groups and epilogue, become
//! one layer named `A || B`. Runs after the Q/DQ nodes found their layers, before the node lists are made.
//! A merged layer holds at most 8 convs, filled in graph order: the 8-way merge of the FPN-MobileNetV2 TensorRT
//! 8.4 log (`Conv_171 + Relu_172 || ... `, 8 convs, blogdoc-fpn-mbv2-int8-calib-trt84 in ../shared/realdata) is
//! the largest any real build here shows, and a TensorRT 8.2 FP16 build reported in issue 29 split 36 sibling
//! 3x3 convs into merged layers of 8, 8, 8, 8 and 4.
constexpr std::size_t kMaxMergedConvs = 8;

} // namespace

void mergeSiblingConvs(SimulationState& s)
{
    std::unordered_map<std::string, std::pair<std::uint32_t, std::size_t>> openGroup; // key -> (layer, convs)
    for (const auto& candidate : s.siblingCandidates)
    {
        const OnnxNode& conv = s.graph.nodes[candidate.conv];
        if (s.layerOf[candidate.conv] != candidate.layer || conv.inputs.empty() || !mayHaveSibling(s, conv))
        {
            continue;
        }
        std::string signature = siblingSignature(s, conv, candidate.epilogue);
        std::string source = siblingSource(s, conv);
        if (signature.empty() || source.empty())
        {
            continue;
        }
        const auto [group, inserted] =
            openGroup.try_emplace(source + "|" + signature, std::make_pair(candidate.layer, std::size_t{1}));
        if (inserted)
        {
            continue;
        }
        if (group->second.second == kMaxMergedConvs)
        {
            group->second = {candidate.layer, 1}; // the group is full: this conv opens the next merged layer
            continue;
        }
        ++group->second.second;
        const std::uint32_t into = group->second.first;
        for (std::uint32_t node : s.layerNodes[candidate.layer])
        {
            s.layerOf[node] = into;
            s.layerNodes[into].push_back(node);
        }
        s.layerNodes[candidate.layer].clear();
        PredictedLayer& merged = s.out.layers[into];
        PredictedLayer& sibling = s.out.layers[candidate.layer];
        merged.name += " || " + sibling.name;
        merged.int8Input = merged.int8Input || sibling.int8Input;
        merged.int8Output = merged.int8Output || sibling.int8Output;
        merged.guess = "sibling convolutions on one input are merged horizontally in TensorRT 8.x logs; whether "
                       "a build merges them depends on the version and the tactics";
        sibling.role = "merged";
    }
}

} // namespace qdq::simulation
