// The predicted engine as an EnginePlan, so that the correlator and `diff` treat it like a real layer list: each
// predicted layer with its TensorRT type, the tensors it reads and writes (with the predicted precisions) and its
// ONNX nodes as Metadata, which the correlator trusts first.
#include "qdq/predict.h"

#include "qdq/patterns.h"

#include <algorithm>

namespace qdq
{

namespace
{

Precision precisionOf(std::string_view name)
{
    const Precision precision = precisionFromFormat(name); // "INT8", "FP8", "INT4", "FP16", "FP32"
    return precision == Precision::kUnknown ? Precision::kFP32 : precision;
}

} // namespace

EnginePlan predictedEnginePlan(const Prediction& prediction, const OnnxGraph& graph, const std::string& sourcePath)
{
    EnginePlan plan;
    plan.sourcePath = sourcePath;
    plan.form = LayerListForm::kDetailed;
    plan.layers.reserve(prediction.layers.size());
    std::vector<std::uint32_t> layerOf(graph.nodes.size(), OnnxGraph::kNone);
    for (std::size_t i = 0; i < prediction.layers.size(); ++i)
    {
        for (std::uint32_t node : prediction.layers[i].nodeIndices)
        {
            if (node < layerOf.size())
            {
                layerOf[node] = static_cast<std::uint32_t>(i);
            }
        }
    }
    for (std::size_t i = 0; i < prediction.layers.size(); ++i)
    {
        const PredictedLayer& predicted = prediction.layers[i];
        EngineLayer layer;
        layer.setName(predicted.name);
        layer.type = std::string(predicted.kind);
        if (predicted.role == "standalone-quantize" || predicted.role == "standalone-dequantize")
        {
            layer.origin = "QDQ";
        }
        else if (predicted.role == "reformat" || predicted.role == "concat-copy")
        {
            layer.origin = "REFORMAT";
        }
        const auto self = static_cast<std::uint32_t>(i);
        for (std::uint32_t node : predicted.nodeIndices)
        {
            if (!layer.metadata.empty())
            {
                layer.metadata += '\x1f';
            }
            layer.metadata += "[ONNX Layer: " + graph.nodes[node].name + "]";
            for (std::uint32_t input : graph.inputIds(node))
            {
                const OnnxNode* producer = input == OnnxGraph::kNone ? nullptr : graph.producerOf(input);
                const bool inside = producer != nullptr && layerOf[producer->index] == self;
                if (input == OnnxGraph::kNone || inside || graph.tensors.constant[input] != OnnxGraph::kNone ||
                    (producer != nullptr && layerOf[producer->index] == OnnxGraph::kNone &&
                     producer->opType == "Constant"))
                {
                    continue;
                }
                const std::string& name = graph.tensors.names[input];
                if (std::none_of(layer.inputs.begin(), layer.inputs.end(),
                                 [&](const EngineTensor& tensor) { return tensor.name == name; }))
                {
                    EngineTensor tensor;
                    tensor.name = name;
                    tensor.precision = precisionOf(predicted.inputPrecision);
                    layer.inputs.push_back(std::move(tensor));
                }
            }
            for (std::uint32_t output : graph.outputIds(node))
            {
                if (output == OnnxGraph::kNone)
                {
                    continue;
                }
                bool readOutside = patterns::isGraphOutput(graph, graph.tensors.names[output]);
                for (std::uint32_t consumer : graph.consumersOf(output))
                {
                    readOutside = readOutside || layerOf[consumer] != self;
                }
                if (readOutside)
                {
                    EngineTensor tensor;
                    tensor.name = graph.tensors.names[output];
                    tensor.precision = precisionOf(predicted.outputPrecision);
                    layer.outputs.push_back(std::move(tensor));
                }
            }
        }
        plan.layers.push_back(std::move(layer));
    }
    return plan;
}

bool standInPredictedEngine(Inputs& inputs, const Inputs* builtWith, const BuildModeRequest& request)
{
    if (!inputs.onnx || inputs.engine() != nullptr)
    {
        return false;
    }
    // The build flags and version of the engine it is compared with, when that one tells them.
    SimulationOptions options = resolveBuildMode(inputs, request);
    if (builtWith != nullptr)
    {
        SimulationOptions other = resolveBuildMode(*builtWith, request);
        if (other.trtMajor != 0 || builtWith->buildLog)
        {
            options = other;
        }
    }
    const Prediction prediction = predictEngine(*inputs.onnx, options);
    inputs.layerInfo = predictedEnginePlan(prediction, *inputs.onnx, inputs.onnx->sourcePath + " (predicted engine)");
    return true;
}

} // namespace qdq
