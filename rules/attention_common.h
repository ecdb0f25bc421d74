// The attention matcher shared by the transformer Q/DQ placement rules (attention-operand-not-dequantized,
// softmax-output-not-quantized, attention-scale-after-matmul, qdq-on-attention-scores): finds
// `MatMul(Q, K) -> [scale, mask, Q/DQ] -> Softmax -> [Q/DQ] -> MatMul(., V)` in an ONNX graph and says, for each of
// the three operands, which DequantizeLinear it comes from and what lies between that DQ and the MatMul.
//
// The shape of the pattern is the one TensorRT's "Fused Attention" page describes (softmax(Q * K^T [mask]) * V built
// from two batched MatMuls and a Softmax); docs/rules/attention-operand-not-dequantized.md cites it. This is a
// small matcher of its own for the rules; the simulator's (include/qdq/attention_pattern.h) is a separate one.
#pragma once

#include "qdq/patterns.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace qdq::rules::attention
{

using namespace patterns;

//! The quantized type an attention's DequantizeLinears produce from.
enum class QuantType
{
    kNone,
    kInt8, //!< int8 or uint8 (ONNX Runtime's default activations)
    kFp8,  //!< any FLOAT8 type
    kOther,
};

inline const char* quantTypeName(QuantType type)
{
    switch (type)
    {
    case QuantType::kInt8:
        return "INT8";
    case QuantType::kFp8:
        return "FP8";
    case QuantType::kOther:
        return "quantized";
    case QuantType::kNone:
        break;
    }
    return "float";
}

//! The quantized type a Q or DQ node works in: its zero point's type, or the type its op or output_dtype implies.
inline QuantType quantTypeOf(const OnnxGraph& graph, const OnnxNode& qdq)
{
    const QdqParameters* parameters = graph.qdqOf(qdq.index);
    if (parameters == nullptr)
    {
        return QuantType::kOther;
    }
    OnnxDataType type = parameters->zeroPointType;
    if (parameters->outputDtype)
    {
        type = static_cast<OnnxDataType>(*parameters->outputDtype);
    }
    switch (type)
    {
    case OnnxDataType::kUndefined: // no zero point: ONNX's default, uint8
    case OnnxDataType::kInt8:
    case OnnxDataType::kUint8:
        return QuantType::kInt8;
    case OnnxDataType::kFloat8E4M3FN:
    case OnnxDataType::kFloat8E4M3FNUZ:
    case OnnxDataType::kFloat8E5M2:
    case OnnxDataType::kFloat8E5M2FNUZ:
        return QuantType::kFp8;
    default:
        return QuantType::kOther;
    }
}

//! The input of a Mul or Div that is a build-time scalar-like value (a constant, or computed from shapes only, as
//! torch exports 1/sqrt(head size)): its index, or -1. For Div only the divisor counts.
inline int scalingInput(const OnnxGraph& graph, const OnnxNode& node)
{
    if ((node.opType != "Mul" && node.opType != "Div") || node.inputs.size() != 2)
    {
        return -1;
    }
    auto buildTime = [&](const std::string& tensor)
    { return isConstantLike(graph, tensor) || isShapeValue(graph, tensor); };
    if (buildTime(node.inputs[1]) && !buildTime(node.inputs[0]))
    {
        return 1;
    }
    if (node.opType == "Mul" && buildTime(node.inputs[0]) && !buildTime(node.inputs[1]))
    {
        return 0;
    }
    return -1;
}

//! The value of a scaling input when it is one constant number (an initializer or Constant node of one element).
inline std::optional<double> scalarValue(const OnnxGraph& graph, const std::string& tensor)
{
    const OnnxConstant* constant = graph.constant(TensorKey(tensor));
    if (constant == nullptr || constant->elementCount != 1 || !constant->dataLoaded || constant->values.size() != 1)
    {
        return std::nullopt;
    }
    return constant->values[0];
}

//! What an attention MatMul reads at one input: the DequantizeLinear it comes from and the ops in between.
struct Operand
{
    const OnnxNode* matMul = nullptr;
    std::uint32_t slot = 0;
    //! The DequantizeLinear the operand comes from, through `between` only; nullptr: a float operand.
    const OnnxNode* dequantize = nullptr;
    //! The ops between the DQ and the MatMul, in data order (the DQ's reader first): Transpose, Reshape, Squeeze,
    //! Unsqueeze, Identity, and Mul/Div by a build-time value (the attention scale).
    std::vector<const OnnxNode*> between;

    bool quantized() const { return dequantize != nullptr; }
    bool direct() const { return dequantize != nullptr && between.empty(); }
};

//! Ops the operand walk passes on its way from a MatMul back to a DequantizeLinear.
inline bool isOperandStep(const OnnxGraph& graph, const OnnxNode& node)
{
    return node.opType == "Transpose" || node.opType == "Reshape" || node.opType == "Squeeze" ||
           node.opType == "Unsqueeze" || node.opType == "Identity" || scalingInput(graph, node) >= 0;
}

//! The data input of an operand step (the non-scale input of a Mul or Div, input 0 otherwise).
inline const std::string& stepDataInput(const OnnxGraph& graph, const OnnxNode& node)
{
    return node.inputs[scalingInput(graph, node) == 0 ? 1 : 0];
}

inline Operand operandOf(const OnnxGraph& graph, const OnnxNode& matMul, std::uint32_t slot)
{
    // ONNX Runtime's quantizer leaves 14 steps in Swin's window attention (bias Add, Reshape, mask Add, Reshape,
    // each with a Q/DQ pair after it: tests/fixtures/transformers/swin-block-ort-qdq.onnx).
    constexpr int kMostSteps = 16;
    Operand operand;
    operand.matMul = &matMul;
    operand.slot = slot;
    std::vector<const OnnxNode*> between;
    const std::string* tensor = &matMul.inputs[slot];
    for (int step = 0; step <= kMostSteps; ++step)
    {
        const OnnxNode* producer = producerOf(graph, *tensor);
        if (producer == nullptr || producer->inputs.empty())
        {
            return operand;
        }
        if (isDequantize(*producer))
        {
            operand.dequantize = producer;
            operand.between.assign(between.rbegin(), between.rend());
            return operand;
        }
        if (!isOperandStep(graph, *producer))
        {
            return operand;
        }
        between.push_back(producer);
        tensor = &stepDataInput(graph, *producer);
    }
    return operand;
}

//! One attention: softmax(BMM1(query, key) [scale, mask]) -> BMM2(., value).
struct Attention
{
    const OnnxNode* scores = nullptr;  //!< BMM1, the MatMul of query and key
    const OnnxNode* softmax = nullptr; //!< the Softmax of the scores
    const OnnxNode* context = nullptr; //!< BMM2, the MatMul of the probabilities and value
    std::uint32_t probsSlot = 0;       //!< the input of BMM2 that reads the probabilities
    //! The ops between BMM1 and the Softmax, in data order: scaling Mul/Div, mask Add/Where, Cast, Q/DQ.
    std::vector<const OnnxNode*> scoreOps;
    //! The Q -> DQ pair between the Softmax and BMM2, when there is one.
    const OnnxNode* probsQuantize = nullptr;
    const OnnxNode* probsDequantize = nullptr;
    Operand query, key, value;

    //! Both MatMuls quantized: each of query, key and value comes from a DequantizeLinear (directly or not).
    bool quantized() const { return query.quantized() && key.quantized() && value.quantized(); }
    //! The type of the quantized operands (the value's DQ, else the key's, else the query's).
    QuantType type(const OnnxGraph& graph) const
    {
        for (const Operand* operand : {&value, &key, &query})
        {
            if (operand->dequantize != nullptr)
            {
                return quantTypeOf(graph, *operand->dequantize);
            }
        }
        return QuantType::kNone;
    }
};

//! A MatMul of two activations (neither input constant): a batched matrix multiply, not a Linear layer.
inline bool isActivationMatMul(const OnnxGraph& graph, const OnnxNode& node)
{
    return node.opType == "MatMul" && node.inputs.size() == 2 && !isConstantLike(graph, node.inputs[0]) &&
           !isConstantLike(graph, node.inputs[1]);
}

//! Ops between BMM1 and the Softmax that the pattern allows.
inline bool isScoreStep(const OnnxGraph& graph, const OnnxNode& node)
{
    // Reshape: a window attention regroups the scores per window to add its mask (Swin, torchvision's
    // shifted_window_attention).
    return isQdq(node) || node.opType == "Add" || node.opType == "Where" || node.opType == "Cast" ||
           node.opType == "Reshape" || scalingInput(graph, node) >= 0;
}

//! BMM1, walking back from the Softmax's input through score steps (the data input of each); fills ops.
inline const OnnxNode* scoresMatMul(const OnnxGraph& graph, const std::string& tensor,
                                    std::vector<const OnnxNode*>& ops, int depth = 0)
{
    // ONNX Runtime's quantizer leaves 14 steps in Swin's window attention (bias Add, Reshape, mask Add, Reshape,
    // each with a Q/DQ pair after it: tests/fixtures/transformers/swin-block-ort-qdq.onnx).
    constexpr int kMostSteps = 16;
    const OnnxNode* producer = producerOf(graph, tensor);
    if (producer == nullptr || depth > kMostSteps)
    {
        return nullptr;
    }
    if (isActivationMatMul(graph, *producer))
    {
        return producer;
    }
    if (!isScoreStep(graph, *producer) || producer->inputs.empty())
    {
        return nullptr;
    }
    // Add(mask, scores) and Where(mask, scores, fill): try each non-constant input; Q/DQ, Cast, Mul, Div: the data.
    std::vector<const std::string*> candidates;
    if (producer->opType == "Add" || producer->opType == "Where")
    {
        for (const auto& input : producer->inputs)
        {
            if (!isConstantLike(graph, input))
            {
                candidates.push_back(&input);
            }
        }
    }
    else
    {
        candidates.push_back(
            &(scalingInput(graph, *producer) >= 0 ? stepDataInput(graph, *producer) : producer->inputs[0]));
    }
    for (const std::string* candidate : candidates)
    {
        const std::size_t mark = ops.size();
        if (const OnnxNode* found = scoresMatMul(graph, *candidate, ops, depth + 1))
        {
            ops.push_back(producer); // after the ops nearer BMM1: data order
            return found;
        }
        ops.resize(mark);
    }
    return nullptr;
}

//! BMM2 reading the Softmax output, directly or through one Q -> DQ pair; fills the attention's BMM2 fields.
inline bool findContext(const OnnxGraph& graph, const OnnxNode& softmax, Attention& attention)
{
    auto activationReader = [&](const std::string& tensor, std::uint32_t& slot) -> const OnnxNode*
    {
        for (const OnnxNode* reader : consumersOf(graph, tensor))
        {
            if (!isActivationMatMul(graph, *reader))
            {
                continue;
            }
            for (std::uint32_t i = 0; i < 2; ++i)
            {
                if (reader->inputs[i] == tensor)
                {
                    slot = i;
                    return reader;
                }
            }
        }
        return nullptr;
    };
    const std::string& probs = softmax.outputs[0];
    if (const OnnxNode* direct = activationReader(probs, attention.probsSlot))
    {
        attention.context = direct;
        return true;
    }
    for (const OnnxNode* q : consumersOf(graph, probs))
    {
        if (!isQuantize(*q) || q->outputs.empty())
        {
            continue;
        }
        for (const OnnxNode* dq : consumersOf(graph, q->outputs[0]))
        {
            if (!isDequantize(*dq) || dq->outputs.empty())
            {
                continue;
            }
            if (const OnnxNode* context = activationReader(dq->outputs[0], attention.probsSlot))
            {
                attention.context = context;
                attention.probsQuantize = q;
                attention.probsDequantize = dq;
                return true;
            }
        }
    }
    return false;
}

//! Every attention of the graph, in the order of their Softmax nodes.
inline std::vector<Attention> findAttentions(const OnnxGraph& graph)
{
    std::vector<Attention> found;
    for (const OnnxNode& softmax : graph.nodes)
    {
        if (softmax.opType != "Softmax" || softmax.inputs.empty() || softmax.outputs.empty())
        {
            continue;
        }
        Attention attention;
        attention.softmax = &softmax;
        attention.scores = scoresMatMul(graph, softmax.inputs[0], attention.scoreOps);
        if (attention.scores == nullptr || !findContext(graph, softmax, attention))
        {
            continue;
        }
        attention.query = operandOf(graph, *attention.scores, 0);
        attention.key = operandOf(graph, *attention.scores, 1);
        attention.value = operandOf(graph, *attention.context, 1 - attention.probsSlot);
        found.push_back(std::move(attention));
    }
    return found;
}

//! Whether the attention has the documented quantized placement: each MatMul reads a DequantizeLinear directly at
//! each input, a Q -> DQ pair after the Softmax, none on the scores (TensorRT developer guide, MHA fusion: Q/DQ
//! "before the first batched matrix multiplication, after softmax"; ModelOpt's FP8 attention recipe).
inline bool hasDocumentedPlacement(const Attention& attention)
{
    if (!attention.query.direct() || !attention.key.direct() || !attention.value.direct() ||
        attention.probsQuantize == nullptr)
    {
        return false;
    }
    return std::none_of(attention.scoreOps.begin(), attention.scoreOps.end(),
                        [](const OnnxNode* op) { return isQdq(*op); });
}

//! The Q and DQ nodes that attentions with the documented placement consume: the DQs their MatMuls read, the Qs
//! writing what those DQs read, and the pair after the Softmax.
inline std::vector<const OnnxNode*> documentedAttentionQdq(const OnnxGraph& graph)
{
    std::vector<const OnnxNode*> nodes;
    for (const Attention& attention : findAttentions(graph))
    {
        if (!hasDocumentedPlacement(attention))
        {
            continue;
        }
        for (const Operand* operand : {&attention.query, &attention.key, &attention.value})
        {
            nodes.push_back(operand->dequantize);
            const OnnxNode* q = producerOf(graph, operand->dequantize->inputs[0]);
            if (q != nullptr && isQuantize(*q))
            {
                nodes.push_back(q);
            }
        }
        nodes.push_back(attention.probsQuantize);
        nodes.push_back(attention.probsDequantize);
    }
    return nodes;
}

//! "Transpose /attn/Transpose_1 -> Mul /attn/Mul_1" for messages.
inline std::string stepList(const std::vector<const OnnxNode*>& nodes)
{
    std::string text;
    for (const OnnxNode* node : nodes)
    {
        text += (text.empty() ? "" : " -> ") + node->opType + " " + node->name;
    }
    return text;
}

} // namespace qdq::rules::attention
