// Precisions: each layer's input and output precision, in the quantized type its Q/DQ nodes name.

#include "src/simulation/passes.h"

#include "qdq/patterns.h"

namespace qdq::simulation
{

using namespace patterns;

namespace
{

std::string precisionName(bool quantized, bool fp16, std::string_view quantizedType = "INT8")
{
    return quantized ? std::string(quantizedType) : fp16 ? "FP16" : "FP32";
}

//! The name of an ONNX quantized element type as TensorRT's layer list writes it; "" for another type.
std::string_view quantizedTypeName(OnnxDataType type)
{
    switch (type)
    {
    case OnnxDataType::kInt8:
    case OnnxDataType::kUint8:
        return "INT8";
    case OnnxDataType::kFloat8E4M3FN:
    case OnnxDataType::kFloat8E4M3FNUZ:
    case OnnxDataType::kFloat8E5M2:
    case OnnxDataType::kFloat8E5M2FNUZ:
        return "FP8";
    case OnnxDataType::kInt4:
    case OnnxDataType::kUint4:
        return "INT4";
    case OnnxDataType::kFloat4E2M1:
        return "FP4";
    default:
        return {};
    }
}

//! The type a Q/DQ node quantizes to: its zero point's type, a Q's output_dtype, a DQ's constant input's type or its
//! Q's; "" when the model does not say (ONNX then means uint8; exporters for TensorRT write an int8 zero point).
std::string_view quantizedTypeOf(const OnnxGraph& graph, std::uint32_t node, int depth = 0)
{
    const QdqParameters* parameters = graph.qdqOf(node);
    if (parameters == nullptr)
    {
        return {};
    }
    if (parameters->hasZeroPoint)
    {
        return quantizedTypeName(parameters->zeroPointType);
    }
    if (parameters->outputDtype)
    {
        return quantizedTypeName(static_cast<OnnxDataType>(*parameters->outputDtype));
    }
    if (parameters->isQuantize)
    {
        return {};
    }
    const OnnxNode& dq = graph.nodes[node];
    if (dq.inputs.empty())
    {
        return {};
    }
    if (auto type = graph.tensorType(TensorKey(dq.inputs[0])); type && isConstantTensor(graph, dq.inputs[0]))
    {
        return quantizedTypeName(*type);
    }
    const OnnxNode* producer = producerOf(graph, dq.inputs[0]);
    return producer != nullptr && isQuantize(*producer) && depth == 0
               ? quantizedTypeOf(graph, static_cast<std::uint32_t>(producer->index), depth + 1)
               : std::string_view();
}

} // namespace

namespace
{

//! A PointWise layer of a lone activation between a DQ and a Q runs quantized: a guess, said on the layer
//! (docs/simulator.md, "Doubtful fusions").
void markQuantizedActivationGuess(const SimulationState& s, PredictedLayer& layer)
{
    if (layer.kind != "PointWise" || !layer.guess.empty())
    {
        return;
    }
    for (std::uint32_t node : layer.nodeIndices)
    {
        if (node < s.graph.nodes.size() && isQuantizableActivation(s.graph.nodes[node].opType))
        {
            layer.guess = "likely: TensorRT fuses DQ -> " + s.graph.nodes[node].opType +
                          " -> Q into one quantized layer (the Q/DQ fusion of any non-weighted node); no real engine "
                          "here shows a lone activation between a DQ and a Q";
            return;
        }
    }
}

} // namespace

void finishPrecisions(SimulationState& s)
{
    // The quantized type a layer reads or writes: that of its own Q/DQ nodes (activation ones first), else the
    // model's (its first Q/DQ that says). FP8 and INT4 models are named so, not INT8.
    std::string_view modelType;
    for (std::uint32_t node = 0; node < s.graph.nodes.size() && modelType.empty(); ++node)
    {
        modelType = isQdq(s.graph.nodes[node]) ? quantizedTypeOf(s.graph, node) : std::string_view();
    }
    if (modelType.empty())
    {
        modelType = "INT8";
    }
    for (auto& layer : s.out.layers)
    {
        std::string_view layerType;
        bool fromActivation = false;
        for (std::uint32_t node : layer.nodeIndices)
        {
            if (node >= s.graph.nodes.size() || !isQdq(s.graph.nodes[node]))
            {
                continue;
            }
            const bool activation =
                s.qdqOf[node] == nullptr || s.qdqOf[node]->fate != PredictedQdq::Fate::kFolded; // not a weight's
            const std::string_view type = quantizedTypeOf(s.graph, node);
            if (!type.empty() && (layerType.empty() || (activation && !fromActivation)))
            {
                layerType = type;
                fromActivation = activation;
            }
        }
        if (layerType.empty())
        {
            layerType = modelType;
        }
        if (layer.role == "float-MaxPool" || layer.role == "float-Resize" || layer.kind == "Slice" ||
            layer.kind == "Shuffle" || layer.kind == "NoOp")
        {
            // Data movement runs in the precision it is given: INT8 when a DQ was moved past it into a Q.
            bool int8 = false;
            for (std::uint32_t node : layer.nodeIndices)
            {
                int8 = int8 || isQdq(s.graph.nodes[node]);
            }
            layer.int8Input = layer.int8Input || int8;
            layer.int8Output = layer.int8Output || int8;
        }
        if (layer.role.rfind("float-", 0) == 0 && layer.int8Input && layer.int8Output)
        {
            layer.role = "quantized-" + layer.role.substr(6);
            markQuantizedActivationGuess(s, layer);
        }
        layer.inputPrecision = precisionName(layer.int8Input, s.options.fp16, layerType);
        layer.outputPrecision = precisionName(layer.int8Output, s.options.fp16, layerType);
    }
}

} // namespace qdq::simulation
