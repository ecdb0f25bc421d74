// Helpers shared by the Q/DQ parameter rules (R01-R06, R33): where a weighted op's weight comes from, which axis its
// per-channel scale must use, whether a Q/DQ node quantizes a weight or an activation, and value formatting.
#pragma once

#include "qdq/patterns.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace qdq::rules::weights
{

//! Ops that only move or retype data: a weight passing through them is still a constant, but it no longer reaches
//! the Q/DQ (or the weighted op) as a plain initializer.
inline bool isWeightTransform(const std::string& opType)
{
    return opType == "Transpose" || opType == "Reshape" || opType == "Cast" || opType == "Identity" ||
           opType == "Squeeze" || opType == "Unsqueeze" || opType == "Flatten";
}

//! The weight input of a weighted op: input 1 of Conv, ConvTranspose, Gemm and MatMul.
inline const std::string* weightInput(const OnnxNode& node)
{
    return node.inputs.size() >= 2 && !node.inputs[1].empty() ? &node.inputs[1] : nullptr;
}

//! The DequantizeLinear on a weight input, walking back through weight transforms (Transpose, Reshape, ...).
//! `between` receives the transforms passed (DQ -> transforms -> op), nearest the op last.
inline const OnnxNode* weightDequantize(const OnnxGraph& graph, const std::string& tensor,
                                        std::vector<const OnnxNode*>* between = nullptr)
{
    const std::string* current = &tensor;
    for (int depth = 0; depth < 8; ++depth)
    {
        const OnnxNode* producer = patterns::producerOf(graph, *current);
        if (producer == nullptr || producer->inputs.empty())
        {
            return nullptr;
        }
        if (patterns::isDequantize(*producer))
        {
            return producer;
        }
        if (!isWeightTransform(producer->opType))
        {
            return nullptr;
        }
        if (between != nullptr)
        {
            between->insert(between->begin(), producer);
        }
        current = &producer->inputs[0];
    }
    return nullptr;
}

//! The constant a weight DQ dequantizes: its input directly (pre-quantized weights), or the input of the Q feeding
//! it (const -> Q -> DQ). nullptr when anything else sits in between.
inline const OnnxConstant* weightConstant(const OnnxGraph& graph, const OnnxNode& dq, const OnnxNode** quantize)
{
    if (quantize != nullptr)
    {
        *quantize = nullptr;
    }
    if (dq.inputs.empty())
    {
        return nullptr;
    }
    if (const OnnxConstant* direct = graph.constant(dq.inputs[0]))
    {
        return direct;
    }
    const OnnxNode* q = patterns::producerOf(graph, dq.inputs[0]);
    if (q == nullptr || !patterns::isQuantize(*q) || q->inputs.empty())
    {
        return nullptr;
    }
    if (quantize != nullptr)
    {
        *quantize = q;
    }
    return graph.constant(q->inputs[0]);
}

//! True when tensor is computed from constants only (initializers, Constant nodes, and ops on them).
inline bool isConstantComputed(const OnnxGraph& graph, const std::string& tensor, int depth,
                               patterns::TensorMemo& memo);

inline bool decideConstantComputed(const OnnxGraph& graph, const std::string& tensor, int depth,
                                   patterns::TensorMemo& memo)
{
    if (patterns::isConstantTensor(graph, tensor))
    {
        return true;
    }
    const OnnxNode* producer = patterns::producerOf(graph, tensor);
    if (producer == nullptr || depth > 16)
    {
        return false;
    }
    if (producer->opType == "Constant")
    {
        return true;
    }
    bool any = false;
    for (const auto& input : producer->inputs)
    {
        if (input.empty())
        {
            continue;
        }
        if (!isConstantComputed(graph, input, depth + 1, memo))
        {
            return false;
        }
        any = true;
    }
    return any;
}

//! Each tensor decided once (patterns::TensorMemo): shared inputs stay linear, a cycle ends the walk.
inline bool isConstantComputed(const OnnxGraph& graph, const std::string& tensor, int depth, patterns::TensorMemo& memo)
{
    return memo.decide(graph.tensors.find(TensorKey(tensor)),
                       [&] { return decideConstantComputed(graph, tensor, depth, memo); });
}

inline bool isConstantComputed(const OnnxGraph& graph, const std::string& tensor)
{
    patterns::TensorMemo memo;
    return decideConstantComputed(graph, tensor, 0, memo);
}

//! The output-channel axis TensorRT expects for a per-channel weight scale of a weighted op, or nullopt when the
//! op has none (ConvTranspose: version-dependent, handled by the weight-axis rule). rank: the weight's rank, 0 when
//! unknown.
inline std::optional<std::int64_t> expectedWeightAxis(const OnnxNode& node, std::size_t rank)
{
    if (node.opType == "Conv")
    {
        return 0;
    }
    if (node.opType == "Gemm")
    {
        return node.intAttribute("transB").value_or(0) != 0 ? 0 : 1;
    }
    if (node.opType == "MatMul")
    {
        return rank >= 2 ? static_cast<std::int64_t>(rank) - 1 : 1;
    }
    return std::nullopt;
}

//! The axis a Q/DQ applies its per-channel scale to (ONNX default 1), normalized for negative values when the rank
//! is known.
inline std::int64_t effectiveAxis(const QdqParameters& parameters, std::size_t rank)
{
    std::int64_t axis = parameters.axis.value_or(1);
    if (axis < 0 && rank > 0)
    {
        axis += static_cast<std::int64_t>(rank);
    }
    return axis;
}

//! True when an output of node reaches input `slot` of a weighted op within 8 steps, passing only through Q/DQ
//! nodes and the ops passesThrough accepts.
template <class PassesThrough>
bool reachesWeightedInput(const OnnxGraph& graph, const OnnxNode& node, std::size_t slot, PassesThrough&& passesThrough)
{
    std::vector<std::uint32_t> frontier(node.outputs.ids().begin(), node.outputs.ids().end());
    std::unordered_set<std::uint32_t> expanded; // each tensor once: shared tensors and cycles would multiply the walk
    for (int depth = 0; depth < 8 && !frontier.empty(); ++depth)
    {
        std::vector<std::uint32_t> next;
        for (std::uint32_t tensor : frontier)
        {
            if (!expanded.insert(tensor).second)
            {
                continue;
            }
            for (std::uint32_t consumerIndex : graph.consumersOf(tensor))
            {
                const OnnxNode& consumer = graph.nodes[consumerIndex];
                if (patterns::isWeighted(graph, consumer) && consumer.inputs.size() > slot &&
                    consumer.inputs.id(slot) == tensor)
                {
                    return true;
                }
                if (patterns::isQdq(consumer) || passesThrough(consumer))
                {
                    next.insert(next.end(), consumer.outputs.ids().begin(), consumer.outputs.ids().end());
                }
            }
        }
        frontier = std::move(next);
    }
    return false;
}

//! True when the Q/DQ node quantizes a weight: its data is computed from constants and its dequantized value reaches
//! the weight input (input 1) of a weighted op through weight transforms only. The data input of a weighted op
//! (input 0) is an activation even when it happens to be constant.
inline bool quantizesWeight(const OnnxGraph& graph, const OnnxNode& qdqNode)
{
    if (qdqNode.inputs.empty() || !isConstantComputed(graph, qdqNode.inputs[0]))
    {
        return false;
    }
    return reachesWeightedInput(graph, qdqNode, 1,
                                [](const OnnxNode& consumer) { return isWeightTransform(consumer.opType); });
}

//! True when the Q/DQ node's data is computed from constants (a weight or another constant), whatever it feeds.
inline bool quantizesConstant(const OnnxGraph& graph, const OnnxNode& qdqNode)
{
    return !qdqNode.inputs.empty() && isConstantComputed(graph, qdqNode.inputs[0]);
}

//! "[84, 24, 196]" style list of the first values.
inline std::string formatValues(const std::vector<double>& values, std::size_t shown = 6)
{
    std::string text = "[";
    for (std::size_t i = 0; i < values.size() && i < shown; ++i)
    {
        char buffer[32];
        std::snprintf(buffer, sizeof(buffer), "%.6g", values[i]);
        text += (i == 0 ? "" : ", ") + std::string(buffer);
    }
    if (values.size() > shown)
    {
        text += ", ... (" + std::to_string(values.size()) + " values)";
    }
    return text + "]";
}

inline std::string formatValue(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.6g", value);
    return buffer;
}

//! "[64, 3, 7, 7]" for dims.
//! "[64, 3, 3, 3]" appended to text.
inline void appendDims(std::string& text, const std::vector<std::int64_t>& dims)
{
    text += '[';
    for (std::size_t i = 0; i < dims.size(); ++i)
    {
        if (i != 0)
        {
            text += ", ";
        }
        char digits[24];
        const auto written = std::to_chars(digits, digits + sizeof(digits), dims[i]);
        text.append(digits, written.ptr);
    }
    text += ']';
}

inline std::string formatDims(const std::vector<std::int64_t>& dims)
{
    std::string text;
    appendDims(text, dims);
    return text;
}

} // namespace qdq::rules::weights
