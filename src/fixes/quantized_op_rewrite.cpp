// QOperator op -> DequantizeLinear -> float op -> QuantizeLinear (quantized_op_rewrite.h).
//
// What each op computes, from the ONNX operator documents (QLinearConv, QLinearMatMul) and ONNX Runtime's contrib op
// documents (QLinearAdd, QGemm, ...): every quantized input x is read as (x - zero point) x scale, the float op runs,
// and the result is quantized with the output's scale and zero point. The integer bias of QLinearConv is quantized
// with scale x_scale x w_scale and zero point 0; that of QGemm with alpha x a_scale x b_scale. The rewrite computes
// the same values up to float rounding (at most one step of the output's scale apart).
#include "src/fixes/quantized_op_rewrite.h"
#include "qdq/patterns.h"

#include <string_view>

namespace qdq
{

namespace
{

//! Input slots of one quantized operand: its value, scale and zero point.
struct Operand
{
    int value = 0;
    int scale = 0;
    int zeroPoint = 0;
};

struct OpSpec
{
    std::string_view opType;
    bool microsoftDomain = false; //!< com.microsoft (ONNX Runtime's contrib ops), else the standard domain
    std::string_view floatOp;
    std::vector<Operand> operands; //!< in the float op's input order; empty: QLinearConcat's (x, scale, zero point)s
    int bias = -1;                 //!< the INT32 bias slot, -1 for none
    int outputScale = -1;          //!< -1: the output is float (QGemm without y_scale)
    int outputZeroPoint = -1;
};

const std::vector<OpSpec>& opSpecs()
{
    static const std::vector<OpSpec> kSpecs = {
        {"QLinearConv", false, "Conv", {{0, 1, 2}, {3, 4, 5}}, 8, 6, 7},
        {"QLinearMatMul", false, "MatMul", {{0, 1, 2}, {3, 4, 5}}, -1, 6, 7},
        {"QLinearAdd", true, "Add", {{0, 1, 2}, {3, 4, 5}}, -1, 6, 7},
        {"QLinearMul", true, "Mul", {{0, 1, 2}, {3, 4, 5}}, -1, 6, 7},
        {"QLinearSigmoid", true, "Sigmoid", {{0, 1, 2}}, -1, 3, 4},
        {"QLinearLeakyRelu", true, "LeakyRelu", {{0, 1, 2}}, -1, 3, 4},
        {"QLinearGlobalAveragePool", true, "GlobalAveragePool", {{0, 1, 2}}, -1, 3, 4},
        {"QLinearAveragePool", true, "AveragePool", {{0, 1, 2}}, -1, 3, 4},
        {"QGemm", true, "Gemm", {{0, 1, 2}, {3, 4, 5}}, 6, 7, 8},
        {"QLinearConcat", true, "Concat", {}, -1, 0, 1},
        {"QLinearSoftmax", true, "Softmax", {{0, 1, 2}}, -1, 3, 4},
    };
    return kSpecs;
}

const OpSpec* specOf(const OnnxNode& node)
{
    for (const OpSpec& spec : opSpecs())
    {
        if (node.opType == spec.opType &&
            (spec.microsoftDomain ? node.domain == "com.microsoft" : !node.isCustomDomain()))
        {
            return &spec;
        }
    }
    return nullptr;
}

std::int64_t standardOpset(const OnnxGraph& graph)
{
    for (const auto& [domain, version] : graph.opsets)
    {
        if (domain.empty() || domain == "ai.onnx")
        {
            return version;
        }
    }
    return 0;
}

//! Copies an attribute of the quantized op onto the float op; false (why set) for a kind NewAttribute cannot hold.
bool copyAttribute(const OnnxAttribute& attribute, NewNode& node, std::string& why)
{
    switch (attribute.kind)
    {
    case OnnxAttribute::Kind::kInt:
        node.attributes.push_back(NewAttribute::ofInt(attribute.name, attribute.i));
        return true;
    case OnnxAttribute::Kind::kFloat:
        node.attributes.push_back(NewAttribute::ofFloat(attribute.name, static_cast<float>(attribute.f)));
        return true;
    case OnnxAttribute::Kind::kString:
        node.attributes.push_back(NewAttribute::ofString(attribute.name, attribute.s));
        return true;
    case OnnxAttribute::Kind::kInts:
        node.attributes.push_back(NewAttribute::ofInts(attribute.name, attribute.ints));
        return true;
    default:
        why = "its attribute " + attribute.name + " is of a kind fix does not copy";
        return false;
    }
}

class Rewriter
{
public:
    Rewriter(const OnnxGraph& graph, const OnnxNode& node, const OpSpec& spec, const std::string& prefix,
             const FreshNameFn& freshName)
        : mGraph(graph), mNode(node), mSpec(spec), mPrefix(prefix), mFreshName(freshName)
    {
    }

    std::optional<QuantizedOpRewrite> run(std::string& why)
    {
        const std::int64_t opset = standardOpset(mGraph);
        if (opset < 10)
        {
            why = "the model's op set (" + std::to_string(opset) + ") is older than 10, which has no QuantizeLinear";
            return std::nullopt;
        }
        std::vector<Operand> operands = mSpec.operands;
        if (operands.empty() && !concatOperands(operands, why))
        {
            return std::nullopt;
        }
        if (mNode.outputs.empty() || mNode.outputs[0].empty())
        {
            why = "it has no output";
            return std::nullopt;
        }
        QuantizedOpRewrite rewrite;
        rewrite.floatOp = std::string(mSpec.floatOp);
        NewNode floatNode;
        floatNode.name = mNode.name;
        floatNode.opType = rewrite.floatOp;
        floatNode.docString = docString();
        if (!copyAttributes(floatNode, why))
        {
            return std::nullopt;
        }
        if (!addDequantizes(operands, opset, floatNode, rewrite, why))
        {
            return std::nullopt;
        }
        if (mSpec.bias >= 0 && !input(mSpec.bias).empty())
        {
            std::optional<NewInitializer> bias = floatBias(operands, why);
            if (!bias)
            {
                return std::nullopt;
            }
            floatNode.inputs.push_back(bias->name);
            rewrite.initializers.push_back(std::move(*bias));
        }
        const bool quantizedOutput = mSpec.outputScale >= 0 && !input(mSpec.outputScale).empty();
        if (!quantizedOutput)
        {
            floatNode.outputs = {mNode.outputs[0]};
            rewrite.nodes.push_back(std::move(floatNode));
            return rewrite;
        }
        if (!perTensorConstant(mSpec.outputScale, why))
        {
            return std::nullopt;
        }
        if (input(mSpec.outputZeroPoint).empty())
        {
            why = "it has no output zero point, so the output's type is not written in the model";
            return std::nullopt;
        }
        NewNode quantize;
        quantize.name = mFreshName(mPrefix + "/QuantizeLinear");
        quantize.opType = "QuantizeLinear";
        const std::string floatOutput = mFreshName(mPrefix + "/float_output");
        floatNode.outputs = {floatOutput};
        quantize.inputs = {floatOutput, input(mSpec.outputScale), input(mSpec.outputZeroPoint)};
        quantize.outputs = {mNode.outputs[0]};
        quantize.docString = floatNode.docString;
        rewrite.nodes.push_back(std::move(floatNode));
        rewrite.nodes.push_back(std::move(quantize));
        return rewrite;
    }

private:
    //! QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input.
    bool concatOperands(std::vector<Operand>& operands, std::string& why) const
    {
        if (mNode.inputs.size() < 5 || (mNode.inputs.size() - 2) % 3 != 0)
        {
            why = "its inputs are not (Y_scale, Y_zero_point, then X, X_scale, X_zero_point per input)";
            return false;
        }
        for (int slot = 2; slot + 2 < static_cast<int>(mNode.inputs.size()); slot += 3)
        {
            operands.push_back({slot, slot + 1, slot + 2});
        }
        return true;
    }

    //! A DequantizeLinear for each quantized operand, read by the float node in the operands' order.
    bool addDequantizes(const std::vector<Operand>& operands, std::int64_t opset, NewNode& floatNode,
                        QuantizedOpRewrite& rewrite, std::string& why)
    {
        for (std::size_t k = 0; k < operands.size(); ++k)
        {
            std::optional<std::int64_t> axis;
            if (!perChannelAxis(k, operands[k], opset, axis, why))
            {
                return false;
            }
            const std::string& value = input(operands[k].value);
            if (value.empty())
            {
                why = "input " + std::to_string(operands[k].value) + " is missing";
                return false;
            }
            NewNode dequantize;
            dequantize.name = mFreshName(mPrefix + "/DequantizeLinear_" + std::to_string(k));
            dequantize.opType = "DequantizeLinear";
            dequantize.inputs = {value, input(operands[k].scale)};
            if (!input(operands[k].zeroPoint).empty())
            {
                dequantize.inputs.push_back(input(operands[k].zeroPoint));
            }
            if (axis)
            {
                dequantize.attributes.push_back(NewAttribute::ofInt("axis", *axis));
            }
            dequantize.outputs = {mFreshName(mPrefix + "/dequantized_" + std::to_string(k))};
            dequantize.docString = floatNode.docString;
            floatNode.inputs.push_back(dequantize.outputs[0]);
            rewrite.nodes.push_back(std::move(dequantize));
        }
        return true;
    }

    std::string docString() const
    {
        return "added by qdq-doctor fix (quantized-op-not-importable): " + mNode.opType + " " + mNode.name +
               " rewritten as DequantizeLinear -> " + std::string(mSpec.floatOp) +
               (mSpec.outputScale >= 0 ? " -> QuantizeLinear" : "");
    }

    const std::string& input(int slot) const
    {
        static const std::string kNone;
        return slot >= 0 && slot < static_cast<int>(mNode.inputs.size()) ? mNode.inputs[slot] : kNone;
    }

    const OnnxConstant* constantAt(int slot) const
    {
        return input(slot).empty() ? nullptr : mGraph.constant(input(slot));
    }

    bool perTensorConstant(int slot, std::string& why) const
    {
        const OnnxConstant* constant = constantAt(slot);
        if (constant == nullptr || constant->elementCount != 1)
        {
            why = "input " + std::to_string(slot) + " (" + input(slot) +
                  ") is not one constant value: TensorRT takes a per-tensor scale there";
            return false;
        }
        return true;
    }

    bool copyAttributes(NewNode& floatNode, std::string& why) const
    {
        for (const OnnxAttribute& attribute : mNode.attributes)
        {
            if (attribute.name == "opset" && mSpec.opType == "QLinearSoftmax")
            {
                // The Softmax semantics the op follows: before op set 13 it flattens to 2-D around axis, from 13 it
                // normalizes along axis alone. The float Softmax follows the model's op set.
                const std::int64_t modelOpset = standardOpset(mGraph);
                if (attribute.kind != OnnxAttribute::Kind::kInt || (attribute.i < 13) != (modelOpset < 13))
                {
                    why = "it computes the Softmax of op set " + std::to_string(attribute.i) +
                          ", which a Softmax in the model's op set " + std::to_string(modelOpset) + " does not";
                    return false;
                }
                continue;
            }
            if (attribute.name == "channels_last")
            {
                if (attribute.kind != OnnxAttribute::Kind::kInt || attribute.i != 0)
                {
                    why = "it works on channels-last data (channels_last=1), which " + std::string(mSpec.floatOp) +
                          " does not take";
                    return false;
                }
                continue;
            }
            if (!copyAttribute(attribute, floatNode, why))
            {
                return false;
            }
        }
        return true;
    }

    //! The DequantizeLinear axis of operand k when its scale has one value per channel (nullopt: per tensor).
    bool perChannelAxis(std::size_t k, const Operand& operand, std::int64_t opset, std::optional<std::int64_t>& axis,
                        std::string& why) const
    {
        const OnnxConstant* scale = constantAt(operand.scale);
        if (scale == nullptr)
        {
            why = "the scale of input " + std::to_string(operand.value) + " is not a constant";
            return false;
        }
        if (scale->elementCount == 1)
        {
            return true;
        }
        const bool weight = k == 1 && (mSpec.floatOp == "Conv" || mSpec.floatOp == "MatMul" || mSpec.floatOp == "Gemm");
        if (!weight)
        {
            why = "input " + std::to_string(operand.value) + " has " + std::to_string(scale->elementCount) +
                  " scales; only a weight's scale may be per channel";
            return false;
        }
        if (opset < 13)
        {
            why = "its weight has a scale per channel, which DequantizeLinear takes from op set 13 (the model has " +
                  std::to_string(opset) + ")";
            return false;
        }
        if (mSpec.floatOp == "Conv")
        {
            axis = 0; // output channels
            return true;
        }
        if (mSpec.floatOp == "Gemm")
        {
            const std::optional<std::int64_t> transB = mNode.intAttribute("transB");
            axis = transB.value_or(0) != 0 ? 0 : 1; // the N axis of B
            return true;
        }
        const OnnxConstant* weight2 = constantAt(operand.value);
        if (weight2 == nullptr || weight2->dims.size() < 2)
        {
            why = "its second input has a scale per column but is not a constant of known rank";
            return false;
        }
        axis = static_cast<std::int64_t>(weight2->dims.size()) - 1; // the columns
        return true;
    }

    //! QLinearConv: bias x x_scale x w_scale[c]; QGemm: C x alpha x a_scale x b_scale[n]. Zero point 0 by definition.
    std::optional<NewInitializer> floatBias(const std::vector<Operand>& operands, std::string& why) const
    {
        const OnnxConstant* bias = constantAt(mSpec.bias);
        const OnnxConstant* inputScale = constantAt(operands[0].scale);
        const OnnxConstant* weightScale = constantAt(operands[1].scale);
        if (bias == nullptr || bias->dataType != OnnxDataType::kInt32)
        {
            why = "its bias " + input(mSpec.bias) + " is not an INT32 constant";
            return std::nullopt;
        }
        if (!bias->dataLoaded || inputScale == nullptr || !inputScale->dataLoaded || weightScale == nullptr ||
            !weightScale->dataLoaded || inputScale->values.size() != 1 || inputScale->dataType != OnnxDataType::kFloat)
        {
            why = "the values of its bias " + input(mSpec.bias) + " or of its FLOAT scales were not read" +
                  (bias->external ? " (external data)" : "");
            return std::nullopt;
        }
        const std::size_t count = bias->values.size();
        const std::size_t scales = weightScale->values.size();
        if (count == 0 || (scales != 1 && scales != count) || (scales != 1 && bias->dims.size() != 1))
        {
            why = "its bias has " + std::to_string(count) + " values and its weight " + std::to_string(scales) +
                  " scales, which do not pair up";
            return std::nullopt;
        }
        double alpha = 1.0;
        if (const OnnxAttribute* attribute = mNode.attribute("alpha"); attribute != nullptr && mSpec.opType == "QGemm")
        {
            alpha = attribute->f;
        }
        NewInitializer initializer;
        initializer.name = mFreshName(mPrefix + "/bias_float");
        initializer.dataType = 1; // FLOAT
        initializer.dims = bias->dims;
        initializer.rawData.reserve(count * sizeof(float));
        for (std::size_t i = 0; i < count; ++i)
        {
            const double scale = alpha * inputScale->values[0] * weightScale->values[scales == 1 ? 0 : i];
            initializer.rawData += rawFloatData(static_cast<float>(bias->values[i] * scale));
        }
        return initializer;
    }

    const OnnxGraph& mGraph;
    const OnnxNode& mNode;
    const OpSpec& mSpec;
    const std::string& mPrefix;
    const FreshNameFn& mFreshName;
};

//! A data-movement op running on a quantized integer tensor (MaxPool on uint8, as ONNX Runtime's QOperator format
//! writes it): DequantizeLinear -> the op -> QuantizeLinear, both with the scale and zero point of the Q or QOperator
//! op that quantized its input. Max, reshapes and copies commute with the quantization, so the values are the same.
std::optional<QuantizedOpRewrite> rewriteIntegerDataMovement(const OnnxGraph& graph, const OnnxNode& op,
                                                             const std::string& prefix, const FreshNameFn& freshName,
                                                             std::string& why)
{
    if (op.opType == "Concat" || op.inputs.empty() || op.outputs.size() != 1 || op.outputs[0].empty())
    {
        why = op.opType + " " + op.name + " does not move one quantized tensor to one output";
        return std::nullopt;
    }
    const OnnxNode* source = patterns::quantizingSource(graph, op.inputs[0]);
    if (source == nullptr)
    {
        why = "its input " + op.inputs[0] + " is not quantized by a QuantizeLinear or a QOperator op";
        return std::nullopt;
    }
    std::string scale;
    std::string zeroPoint;
    if (patterns::isQuantize(*source))
    {
        scale = source->inputs.size() > 1 ? source->inputs[1] : std::string();
        zeroPoint = source->inputs.size() > 2 ? source->inputs[2] : std::string();
    }
    else if (const OpSpec* spec = specOf(*source); spec != nullptr && spec->outputScale >= 0)
    {
        const auto at = [source](int slot)
        { return slot < static_cast<int>(source->inputs.size()) ? source->inputs[slot] : std::string(); };
        scale = at(spec->outputScale);
        zeroPoint = at(spec->outputZeroPoint);
    }
    const OnnxConstant* scaleConstant = scale.empty() ? nullptr : graph.constant(scale);
    if (scaleConstant == nullptr || scaleConstant->elementCount != 1 || zeroPoint.empty())
    {
        why = "the quantization of its input (from " + source->name + ") is not one constant scale with a zero point";
        return std::nullopt;
    }
    const std::string doc = "added by qdq-doctor fix (quantized-op-not-importable): " + op.opType + " " + op.name +
                            " on quantized data rewritten as DequantizeLinear -> " + op.opType +
                            " -> QuantizeLinear with the scale of " + source->name;
    QuantizedOpRewrite rewrite;
    rewrite.floatOp = op.opType;
    NewNode dequantize;
    dequantize.name = freshName(prefix + "/DequantizeLinear_0");
    dequantize.opType = "DequantizeLinear";
    dequantize.inputs = {op.inputs[0], scale, zeroPoint};
    dequantize.outputs = {freshName(prefix + "/dequantized_0")};
    dequantize.docString = doc;
    NewNode moved;
    moved.name = op.name;
    moved.opType = op.opType;
    moved.inputs = {dequantize.outputs[0]};
    for (std::size_t i = 1; i < op.inputs.size(); ++i)
    {
        moved.inputs.push_back(op.inputs[i]);
    }
    moved.outputs = {freshName(prefix + "/float_output")};
    moved.docString = doc;
    for (const OnnxAttribute& attribute : op.attributes)
    {
        if (!copyAttribute(attribute, moved, why))
        {
            return std::nullopt;
        }
    }
    NewNode quantize;
    quantize.name = freshName(prefix + "/QuantizeLinear");
    quantize.opType = "QuantizeLinear";
    quantize.inputs = {moved.outputs[0], scale, zeroPoint};
    quantize.outputs = {op.outputs[0]};
    quantize.docString = doc;
    rewrite.nodes.push_back(std::move(dequantize));
    rewrite.nodes.push_back(std::move(moved));
    rewrite.nodes.push_back(std::move(quantize));
    return rewrite;
}

} // namespace

std::optional<QuantizedOpRewrite> rewriteQuantizedOp(const OnnxGraph& graph, std::uint32_t node,
                                                     const std::string& namePrefix, const FreshNameFn& freshName,
                                                     std::string& why)
{
    if (node >= graph.nodes.size())
    {
        why = "the node is not in the model";
        return std::nullopt;
    }
    const OnnxNode& quantizedOp = graph.nodes[node];
    const OpSpec* spec = specOf(quantizedOp);
    if (spec == nullptr && patterns::isCommuting(quantizedOp.opType) && !quantizedOp.isCustomDomain())
    {
        return rewriteIntegerDataMovement(graph, quantizedOp, namePrefix, freshName, why);
    }
    if (spec == nullptr)
    {
        why = quantizedOp.opType + " has no float op with the same result that fix can write";
        return std::nullopt;
    }
    return Rewriter(graph, quantizedOp, *spec, namePrefix, freshName).run(why);
}

} // namespace qdq
