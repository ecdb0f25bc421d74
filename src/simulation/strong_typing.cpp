// The simulator's strong-typing pass: under strong typing every tensor keeps the type the graph gives it, so each
// predicted layer reads and writes the element types of its ONNX tensors instead of a precision the build flags pick.
//
// Sources:
// - TensorRT "Precision Control" page, "Strongly Typed Networks" (10.x and 11.0 docs,
//   https://docs.nvidia.com/deeplearning/tensorrt/11.0.0/inference-library/precision-control.html): in a strongly
//   typed network TensorRT infers every intermediate tensor's type from the network inputs' types and the operators'
//   type rules, and does not pick precisions; Cast layers and Q/DQ are how a network changes type.
// - "Migrating from TensorRT 10.x to 11.x" (https://docs.nvidia.com/deeplearning/tensorrt/latest/api/migration/
//   tensorrt-10x-to-11x.html): 11.x removes weak typing; an FP32 ONNX model is converted to mixed precision (ModelOpt
//   AutoCast: FP16 initializers and Cast nodes) before the build.
// - ONNX operator specs for the output types used below (Cast `to`, DequantizeLinear's output takes its scale's type
//   from opset 19, QuantizeLinear's takes its zero point's or output_dtype, Shape/Size/ArgMax give int64, comparisons
//   give bool).
// What is a guess is marked on the layer (PredictedLayer::guess): how TensorRT places the conversion of a Cast (no
// source says whether a strongly typed engine keeps it as its own layer or fuses it into a neighbour).
#include "src/simulation/engine_simulator.h"

#include "qdq/patterns.h"

#include <algorithm>

namespace qdq::simulation
{

namespace
{

constexpr std::uint32_t kNone = OnnxGraphData::kNone;

bool isFloatType(OnnxDataType type)
{
    return type == OnnxDataType::kFloat || type == OnnxDataType::kFloat16 || type == OnnxDataType::kBfloat16 ||
           type == OnnxDataType::kDouble;
}

bool isOneOf(std::string_view op, std::initializer_list<std::string_view> ops)
{
    return std::find(ops.begin(), ops.end(), op) != ops.end();
}

class TensorTypeInference
{
public:
    TensorTypeInference(const OnnxGraph& graph, std::vector<OnnxDataType>& types) : mGraph(graph), mTypes(types) {}

    //! Fills the unknown types of node outputs, visiting nodes in topological order.
    void run(const std::vector<std::uint32_t>& order)
    {
        for (std::uint32_t node : order)
        {
            const auto outputs = mGraph.outputIds(node);
            for (std::size_t slot = 0; slot < outputs.size(); ++slot)
            {
                const std::uint32_t id = outputs[slot];
                if (id != kNone && mTypes[id] == OnnxDataType::kUndefined)
                {
                    mTypes[id] = outputType(mGraph.nodes[node], node, slot);
                }
            }
        }
    }

private:
    OnnxDataType typeOfInput(std::size_t node, std::size_t slot) const
    {
        const auto inputs = mGraph.inputIds(node);
        if (slot >= inputs.size() || inputs[slot] == kNone)
        {
            return OnnxDataType::kUndefined;
        }
        return mTypes[inputs[slot]];
    }

    //! The first input's type, else the first known float input's (an op whose inputs share one type T).
    OnnxDataType sharedInputType(std::size_t node) const
    {
        const OnnxDataType first = typeOfInput(node, 0);
        if (first != OnnxDataType::kUndefined)
        {
            return first;
        }
        for (std::uint32_t input : mGraph.inputIds(node))
        {
            if (input != kNone && isFloatType(mTypes[input]))
            {
                return mTypes[input];
            }
        }
        return OnnxDataType::kUndefined;
    }

    OnnxDataType quantizeOutputType(std::size_t node) const
    {
        const QdqParameters* parameters = mGraph.qdqOf(node);
        if (parameters != nullptr && parameters->hasZeroPoint && parameters->zeroPointType != OnnxDataType::kUndefined)
        {
            return parameters->zeroPointType;
        }
        if (parameters != nullptr && parameters->outputDtype)
        {
            return static_cast<OnnxDataType>(*parameters->outputDtype);
        }
        const OnnxDataType zeroPoint = typeOfInput(node, 2);
        return zeroPoint != OnnxDataType::kUndefined ? zeroPoint : OnnxDataType::kUint8; // ONNX's default
    }

    OnnxDataType outputType(const OnnxNode& node, std::size_t index, std::size_t slot) const
    {
        const std::string& op = node.opType;
        if (op == "Cast")
        {
            const auto to = node.intAttribute("to");
            return to ? static_cast<OnnxDataType>(*to) : OnnxDataType::kUndefined;
        }
        if (op == "CastLike")
        {
            return typeOfInput(index, 1);
        }
        if (node.qdqKind == OnnxNode::QdqKind::kQuantize)
        {
            return quantizeOutputType(index);
        }
        if (node.qdqKind == OnnxNode::QdqKind::kDequantize)
        {
            // Opset 19+: the scale's type (FP16 scales give FP16); before 19 always float.
            const OnnxDataType scale = typeOfInput(index, 1);
            return isFloatType(scale) ? scale : OnnxDataType::kFloat;
        }
        if (isOneOf(op, {"Shape", "Size", "NonZero", "ArgMax", "ArgMin", "NonMaxSuppression"}) ||
            (op == "TopK" && slot == 1))
        {
            return OnnxDataType::kInt64;
        }
        if (isOneOf(op, {"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Not", "And", "Or", "Xor",
                         "IsNaN", "IsInf"}))
        {
            return OnnxDataType::kBool;
        }
        if (op == "Where")
        {
            return typeOfInput(index, 1);
        }
        if (op == "Constant" || op == "ConstantOfShape")
        {
            const OnnxConstant* value = mGraph.constant(TensorKey(node.outputs[0]));
            return value != nullptr ? value->dataType : OnnxDataType::kFloat; // ConstantOfShape's default value
        }
        return sharedInputType(index);
    }

    const OnnxGraph& mGraph;
    std::vector<OnnxDataType>& mTypes;
};

//! Which layer each node belongs to (kNone: none).
std::vector<std::uint32_t> layerOfNodes(const OnnxGraph& graph, const Prediction& prediction)
{
    std::vector<std::uint32_t> layerOf(graph.nodes.size(), kNone);
    for (std::size_t layer = 0; layer < prediction.layers.size(); ++layer)
    {
        for (std::uint32_t node : prediction.layers[layer].nodeIndices)
        {
            if (node < layerOf.size())
            {
                layerOf[node] = static_cast<std::uint32_t>(layer);
            }
        }
    }
    return layerOf;
}

struct LayerTypes
{
    OnnxDataType input = OnnxDataType::kUndefined;
    OnnxDataType output = OnnxDataType::kUndefined;
};

//! The float types a layer reads and writes: those of its first non-constant input that comes from outside the layer
//! and of its first output that leaves it (read by another layer or a network output). Float types first: a layer
//! reading an FP16 tensor and an int64 shape reads FP16.
LayerTypes floatTypesOf(const OnnxGraph& graph, const std::vector<OnnxDataType>& types,
                        const std::vector<std::uint32_t>& layerOf, std::uint32_t layer,
                        const std::vector<std::uint32_t>& nodes)
{
    LayerTypes result;
    for (std::uint32_t node : nodes)
    {
        for (std::uint32_t input : graph.inputIds(node))
        {
            if (input == kNone || result.input != OnnxDataType::kUndefined || !isFloatType(types[input]) ||
                input >= graph.tensors.constant.size() || graph.tensors.constant[input] != kNone)
            {
                continue;
            }
            const std::uint32_t producer =
                input < graph.tensors.producer.size() ? graph.tensors.producer[input] : kNone;
            if (producer == kNone || layerOf[producer] != layer)
            {
                result.input = types[input];
            }
        }
    }
    for (auto it = nodes.rbegin(); it != nodes.rend() && result.output == OnnxDataType::kUndefined; ++it)
    {
        for (std::uint32_t output : graph.outputIds(*it))
        {
            if (output == kNone || !isFloatType(types[output]))
            {
                continue;
            }
            const auto readers = graph.consumersOf(output);
            const bool leaves = std::any_of(readers.begin(), readers.end(),
                                            [&](std::uint32_t reader) { return layerOf[reader] != layer; }) ||
                                std::find(graph.graphOutputs.begin(), graph.graphOutputs.end(),
                                          graph.tensors.names[output]) != graph.graphOutputs.end();
            if (leaves || readers.empty())
            {
                result.output = types[output];
                break;
            }
        }
    }
    return result;
}

} // namespace

std::string_view strongTypeName(OnnxDataType type)
{
    switch (type)
    {
    case OnnxDataType::kFloat16:
        return "FP16";
    case OnnxDataType::kBfloat16:
        return "BF16";
    case OnnxDataType::kFloat:
    case OnnxDataType::kDouble:
        return "FP32";
    default:
        return {};
    }
}

std::vector<OnnxDataType> inferTensorTypes(const OnnxGraph& graph, const std::vector<std::uint32_t>& order)
{
    std::vector<OnnxDataType> types(graph.tensors.names.size(), OnnxDataType::kUndefined);
    for (std::size_t id = 0; id < types.size() && id < graph.tensors.type.size(); ++id)
    {
        types[id] = graph.tensors.type[id];
    }
    for (std::size_t id = 0; id < types.size() && id < graph.tensors.constant.size(); ++id)
    {
        if (types[id] == OnnxDataType::kUndefined && graph.tensors.constant[id] != kNone)
        {
            types[id] = graph.constants[graph.tensors.constant[id]].dataType;
        }
    }
    TensorTypeInference(graph, types).run(order);
    return types;
}

void applyStrongTyping(const OnnxGraph& graph, const std::vector<std::uint32_t>& order, Prediction& prediction)
{
    const std::vector<OnnxDataType> types = inferTensorTypes(graph, order);
    const std::vector<std::uint32_t> layerOf = layerOfNodes(graph, prediction);
    for (std::size_t index = 0; index < prediction.layers.size(); ++index)
    {
        PredictedLayer& layer = prediction.layers[index];
        if (layer.nodeIndices.empty())
        {
            continue;
        }
        const LayerTypes floatTypes =
            floatTypesOf(graph, types, layerOf, static_cast<std::uint32_t>(index), layer.nodeIndices);
        // A layer that reads no float tensor from outside (a Cast of a constant, a layer fed by its own DQ) reads
        // what it writes; and the other way round.
        const OnnxDataType input = floatTypes.input != OnnxDataType::kUndefined ? floatTypes.input : floatTypes.output;
        const OnnxDataType output = floatTypes.output != OnnxDataType::kUndefined ? floatTypes.output : input;
        if (!layer.int8Input && !strongTypeName(input).empty())
        {
            layer.inputPrecision = std::string(strongTypeName(input));
        }
        if (!layer.int8Output && !strongTypeName(output).empty())
        {
            layer.outputPrecision = std::string(strongTypeName(output));
        }
        if (layer.kind == "Cast" && layer.inputPrecision != layer.outputPrecision)
        {
            layer.guess = "a Cast from " + layer.inputPrecision + " to " + layer.outputPrecision +
                          " converts the tensor in its own layer; TensorRT may fuse the conversion into a neighbouring "
                          "layer (a PointWise or Myelin region) instead";
        }
    }
}

} // namespace qdq::simulation
