// Helpers shared by the precision rules (int8-conv-float-output, residual-precision-mismatch,
// activation-before-residual-add, int8-op-without-output-q, plugin-wrapped-in-qdq, io-reformat, fp32-island,
// convtranspose-epilogue-not-fused): engine-layer classes and small graph walks.
#pragma once

#include "qdq/layer_names.h"
#include "qdq/patterns.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

namespace qdq::rules::precision
{

//! True when a token of the layer name contains op (e.g. "Add", "Sigmoid").
inline bool tokensHave(const EngineLayer& layer, std::string_view op)
{
    for (const auto& token : parseLayerName(layer.name).tokens)
    {
        if (token.find(op) != std::string::npos)
        {
            return true;
        }
    }
    return false;
}

//! The first name token containing op, or the layer name.
inline std::string tokenWith(const EngineLayer& layer, std::string_view op)
{
    for (const auto& token : parseLayerName(layer.name).tokens)
    {
        if (token.find(op) != std::string::npos)
        {
            return token;
        }
    }
    return layer.name;
}

//! Convolution, deconvolution, fully connected and GEMM layers (any fusion around them).
inline bool isWeightedLayer(const EngineLayer& layer)
{
    const std::string& type = layer.type;
    if (type.find("Pool") != std::string::npos && type.find("ConvActPool") == std::string::npos)
    {
        return false;
    }
    return type.find("Convolution") != std::string::npos || type.find("Deconvolution") != std::string::npos ||
           type.find("ConvActPool") != std::string::npos || type.find("Gemm") != std::string::npos ||
           type.find("FullyConnected") != std::string::npos || layer.weightsPrecision.has_value();
}

//! A weighted layer with a fused residual ElementWise (Conv + Add): two or more inputs and an Add in its name.
inline bool isResidualLayer(const EngineLayer& layer)
{
    return isWeightedLayer(layer) && layer.inputs.size() >= 2 && (tokensHave(layer, "Add") || tokensHave(layer, "Sum"));
}

inline bool isStandaloneQdq(const Context& context, std::size_t layer)
{
    return layer < context.correlation.layers.size() &&
           context.correlation.layers[layer].state == LayerState::kInsertedQdq;
}

inline bool isInsertedReformat(const Context& context, std::size_t layer)
{
    return layer < context.correlation.layers.size() &&
           context.correlation.layers[layer].state == LayerState::kInsertedReformat;
}

//! A standalone Quantize: a Q/DQ layer whose output is quantized.
inline bool isStandaloneQuantize(const Context& context, std::size_t layer)
{
    return isStandaloneQdq(context, layer) && isQuantized(patterns::outputPrecision(context.engine()->layers[layer]));
}

//! A standalone Dequantize: a Q/DQ layer with a quantized input and a float output.
inline bool isStandaloneDequantize(const Context& context, std::size_t layer)
{
    const EngineLayer& l = context.engine()->layers[layer];
    return isStandaloneQdq(context, layer) && isQuantized(patterns::inputPrecision(l)) &&
           isFloat(patterns::outputPrecision(l));
}

inline bool isBinding(const EnginePlan& plan, const std::string& tensor)
{
    return std::find(plan.bindings.begin(), plan.bindings.end(), tensor) != plan.bindings.end();
}

//! A tensor no layer produces (and, when the plan lists bindings, one of them).
inline bool isNetworkInput(const EnginePlan& plan, const std::string& tensor)
{
    if (patterns::producerLayer(plan, tensor))
    {
        return false;
    }
    return plan.bindings.empty() || isBinding(plan, tensor);
}

//! A tensor that is a binding, or that no layer consumes.
inline bool isNetworkOutput(const EnginePlan& plan, const std::string& tensor)
{
    return isBinding(plan, tensor) || patterns::consumerLayers(plan, tensor).empty();
}

inline bool anyFloat16(const EnginePlan& plan)
{
    for (const auto& layer : plan.layers)
    {
        for (const auto* tensors : {&layer.inputs, &layer.outputs})
        {
            for (const auto& tensor : *tensors)
            {
                if (tensor.precision == Precision::kFP16 || tensor.precision == Precision::kBF16)
                {
                    return true;
                }
            }
        }
    }
    return false;
}

inline std::string precisionText(Precision precision)
{
    return std::string(precisionName(precision));
}

inline std::string formatScale(double scale)
{
    char buffer[48];
    std::snprintf(buffer, sizeof(buffer), "%.8g", scale);
    return buffer;
}

//! " (scale S)" for a per-tensor Q/DQ, else "".
inline std::string scaleSuffix(const OnnxGraph& graph, const OnnxNode& qdq)
{
    auto scale = patterns::perTensorScale(graph, qdq);
    return scale ? " (scale " + formatScale(*scale) + ")" : std::string();
}

//! trtexec's spelling of a tensor's type and layout for --inputIOFormats / --outputIOFormats (`type:fmt`, trtexec
//! --help: fmt is chw, chw2, chw4, hwc8, chw16, chw32, ...): "int8:chw4" for "Four wide channel vectorized row major
//! Int8 format" (or `Int8[1,3:4,...]` in a build log), "int8:chw32" for the thirty-two wide one, "int8:chw" for a row
//! major (linear) one; empty when the type or layout is not one trtexec names.
inline std::string trtexecIoFormat(const EngineTensor& tensor)
{
    std::string type;
    switch (tensor.precision)
    {
    case Precision::kINT8:
        type = "int8";
        break;
    case Precision::kFP16:
        type = "fp16";
        break;
    case Precision::kFP32:
        type = "fp32";
        break;
    default:
        return {};
    }
    const std::string& format = tensor.format.str();
    int width = tensor.vectorWidth;
    for (const auto& [words, vector] : {std::pair{"Two wide", 2}, std::pair{"Four wide", 4},
                                        std::pair{"Sixteen wide", 16}, std::pair{"Thirty-two wide", 32}})
    {
        if (format.find(words) != std::string::npos)
        {
            width = vector;
        }
    }
    if (width > 1)
    {
        return type + ":chw" + std::to_string(width);
    }
    if (format.find("channel % 8") != std::string::npos)
    {
        return type + ":hwc8";
    }
    if (format.find("channel %") != std::string::npos || format.find("Channel major") != std::string::npos)
    {
        return {};
    }
    return type + ":chw"; // row major (linear), or the short form of a build log without a vector width
}

//! The tensor the first layer after a network input's standalone Quantize reads: the Quantize's output, or what the
//! builder reformat right after it makes of it.
inline const EngineTensor* firstLayerInput(const Context& context, std::size_t quantize)
{
    const EnginePlan& plan = *context.engine();
    if (plan.layers[quantize].outputs.empty())
    {
        return nullptr;
    }
    const EngineTensor* tensor = &plan.layers[quantize].outputs[0];
    const auto consumers = patterns::consumerLayers(plan, tensor->name);
    if (consumers.size() == 1 && isInsertedReformat(context, consumers[0]) &&
        !plan.layers[consumers[0]].outputs.empty())
    {
        tensor = &plan.layers[consumers[0]].outputs[0];
    }
    return tensor;
}

//! The trtexec INT8 input format to advise for a tensor the first layer reads in `format` (trtexec's spelling): a
//! format wider than the tensor's channels pads them, so a 3-channel image read as CHW32 would be fed 32 channels
//! (10.7x its bytes); for at most 4 channels the advice is int8:chw4 (3 -> 4), and TensorRT reformats to its kernel's
//! layout itself (NVIDIA/TensorRT#3265, the maintainer's answer for FP16 input: "TRT will do other reformat for
//! you"). The format as read when the channel count is unknown or fills the vector.
inline std::string int8InputFormat(const EngineTensor& read, const std::string& format)
{
    if (format.rfind("int8:chw", 0) != 0 || format.size() <= 8)
    {
        return format;
    }
    const int width = std::atoi(format.c_str() + 8);
    const auto& dims = read.dimensions;
    const std::int64_t channels = dims.size() >= 4 ? dims[1] : 0;
    return channels > 0 && channels <= 4 && width > 4 ? std::string("int8:chw4") : format;
}

//! How to take the Quantize of a float network input off the GPU's work, for a network whose input is quantized by
//! `quantize` (a QuantizeLinear in the model). The simple option first: an FP16 input with the Q kept (half the
//! bytes; NVIDIA/TensorRT#3265, where the maintainer answers `--inputIOFormats=fp16:linear` for FP16 input). Then INT8:
//! the flag alone fails the build while the Q is in the model (#3265: "Node .../QuantizeLinear cannot be quantized by
//! x. You might want to add a DQ node before"), so the Q goes and its DequantizeLinear stays, to give the INT8 input
//! its scale (NVIDIA/TensorRT#1973, #3265); removing both leaves an input with no scale. `format` is trtexec's
//! `int8:...` spelling of what to feed (int8InputFormat), or empty when no layer list tells it.
inline std::string feedInt8Advice(const std::string& quantize, const std::string& scale, const std::string& format)
{
    return "the simple option: keep the model's QuantizeLinear (" + quantize +
           ") and declare the input FP16, --inputIOFormats=fp16:chw (half the bytes of FP32; the Quantize still runs "
           "as its own layer, NVIDIA/TensorRT#3265); to feed INT8: remove only the QuantizeLinear " +
           quantize +
           " and keep its DequantizeLinear, which gives the INT8 input its scale (NVIDIA/TensorRT#1973, #3265; without "
           "it the input has no scale), make the network input an int8 tensor, build with --inputIOFormats=" +
           (format.empty() ? std::string("int8:<the format the first layer reads in the engine's layer list: chw4, "
                                         "chw32 or chw; chw4 for an image of up to 4 channels>")
                           : format) +
           " and feed the input quantized with that Q's scale" + scale +
           ": round(x / scale), clamped to [-128, 127]; with the Q still in the model, that flag fails the build "
           "(NVIDIA/TensorRT#3265)";
}

//! The quantized weighted op whose output reaches tensor through epilogue ops only (BN, activations, SiLU's Mul),
//! or nullptr. Its activation input must be DQ-fed. Without throughSilu, a SiLU (Sigmoid * Mul) stops the walk.
inline const OnnxNode* quantizedWeightedBehind(const OnnxGraph& graph, const std::string& tensor,
                                               bool throughSilu = true)
{
    const OnnxNode* producer = patterns::producerOf(graph, tensor);
    for (int depth = 0; producer != nullptr && depth < 8; ++depth)
    {
        if (patterns::isWeighted(graph, *producer))
        {
            return !producer->inputs.empty() && patterns::feedingDequantize(graph, producer->inputs[0]) != nullptr
                       ? producer
                       : nullptr;
        }
        if (producer->inputs.empty())
        {
            return nullptr;
        }
        if (producer->opType == "Mul" && producer->inputs.size() == 2 && throughSilu)
        {
            // SiLU or HardSwish: Mul(x, gate(x)) -> continue from x.
            const OnnxNode* gate = patterns::selfGateOf(graph, *producer);
            if (gate == nullptr)
            {
                return nullptr;
            }
            producer = patterns::producerOf(graph, gate->inputs[0]);
            continue;
        }
        if (!patterns::isEpilogue(producer->opType))
        {
            return nullptr;
        }
        producer = patterns::producerOf(graph, producer->inputs[0]);
    }
    return nullptr;
}

//! Non-constant inputs of a node.
inline std::vector<std::string> activationInputs(const OnnxGraph& graph, const OnnxNode& node)
{
    std::vector<std::string> inputs;
    for (const auto& input : node.inputs)
    {
        if (!input.empty() && !patterns::isConstantTensor(graph, input))
        {
            const OnnxNode* producer = patterns::producerOf(graph, input);
            if ((producer != nullptr && producer->opType == "Constant") || patterns::isShapeValue(graph, input))
            {
                continue;
            }
            inputs.push_back(input);
        }
    }
    return inputs;
}

//! The first consumers, walking forward from tensor through commuting ops (and epilogue ops when asked), that are
//! not QuantizeLinear; graph outputs reached are reported separately.
struct FloatEnds
{
    std::vector<const OnnxNode*> users;
    std::vector<std::string> userTensors; //!< the tensor each user reads
    std::vector<std::string> outputs;     //!< graph outputs reached without a Q
};

inline FloatEnds floatEnds(const OnnxGraph& graph, const std::string& tensor, bool throughEpilogue)
{
    FloatEnds ends;
    std::vector<std::string> stack = {tensor};
    std::unordered_set<std::string> visited;
    while (!stack.empty())
    {
        std::string current = stack.back();
        stack.pop_back();
        if (!visited.insert(current).second || visited.size() > 256)
        {
            continue;
        }
        if (patterns::isGraphOutput(graph, current))
        {
            ends.outputs.push_back(current);
        }
        for (const OnnxNode* consumer : patterns::consumersOf(graph, current))
        {
            if (patterns::isQuantize(*consumer) || patterns::readsShapeOnly(consumer->opType))
            {
                continue;
            }
            if ((patterns::isCommuting(consumer->opType) ||
                 (throughEpilogue && patterns::isEpilogue(consumer->opType))) &&
                patterns::carriesData(*consumer, current))
            {
                stack.insert(stack.end(), consumer->outputs.begin(), consumer->outputs.end());
                continue;
            }
            ends.users.push_back(consumer);
            ends.userTensors.push_back(current);
        }
    }
    return ends;
}

//! The nearest QuantizeLinear downstream of tensor, breadth first over a bounded walk, crossing only the ops for which
//! crosses is true (every op when it is empty); stoppedAt, when given, gets the first op the walk did not cross.
inline const OnnxNode* quantizeDownstreamThrough(const OnnxGraph& graph, const std::string& tensor,
                                                 const std::function<bool(const OnnxNode&)>& crosses,
                                                 const OnnxNode** stoppedAt = nullptr)
{
    std::vector<std::string> frontier = {tensor};
    std::unordered_set<std::string> visited;
    while (!frontier.empty() && visited.size() < 2048)
    {
        std::vector<std::string> next;
        for (const auto& current : frontier)
        {
            if (!visited.insert(current).second)
            {
                continue;
            }
            for (const OnnxNode* consumer : patterns::consumersOf(graph, current))
            {
                if (patterns::isQuantize(*consumer))
                {
                    return consumer;
                }
                if (!crosses || crosses(*consumer))
                {
                    next.insert(next.end(), consumer->outputs.begin(), consumer->outputs.end());
                }
                else if (stoppedAt != nullptr && *stoppedAt == nullptr)
                {
                    *stoppedAt = consumer;
                }
            }
        }
        frontier = std::move(next);
    }
    return nullptr;
}

//! The nearest QuantizeLinear downstream of tensor (any op), or nullptr.
inline const OnnxNode* quantizeDownstream(const OnnxGraph& graph, const std::string& tensor)
{
    return quantizeDownstreamThrough(graph, tensor, {});
}

//! Whether op passes a tensor's range on without changing it, so that a Q after it can lend its scale to the tensor
//! without clipping it: data movement, MaxPool, Resize, Max (it only widens it), Relu and Clip (what they cut off is
//! cut off anyway). AveragePool, a Mul by a gate, Sigmoid, Softmax and the like narrow it: a scale borrowed across them
//! clips the tensor (RegNet's squeeze-excitation: a Relu output quantized with the scale of the pooled average). An
//! Add or Sum changes it either way (the other input can cancel it as well as widen it), so a scale after it says
//! nothing of one input's range: such a tensor needs a calibrated scale.
inline bool keepsRange(const OnnxNode& op)
{
    static constexpr std::string_view kOps[] = {"Resize", "Upsample", "Max", "Relu", "Clip"};
    return patterns::isCommuting(op.opType) || std::find(std::begin(kOps), std::end(kOps), op.opType) != std::end(kOps);
}

//! The first QuantizeLinear reached from tensor through ops that keep its range (keepsRange), or nullptr; narrowing,
//! when given, gets the first op met that narrows the range.
inline const OnnxNode* quantizeDownstreamKeepingRange(const OnnxGraph& graph, const std::string& tensor,
                                                      const OnnxNode** narrowing = nullptr)
{
    return quantizeDownstreamThrough(graph, tensor, keepsRange, narrowing);
}

inline void addUnique(std::vector<std::string>& list, const std::string& value)
{
    if (std::find(list.begin(), list.end(), value) == list.end())
    {
        list.push_back(value);
    }
}

inline void addUnique(std::vector<std::size_t>& list, std::size_t value)
{
    if (std::find(list.begin(), list.end(), value) == list.end())
    {
        list.push_back(value);
    }
}

} // namespace qdq::rules::precision
