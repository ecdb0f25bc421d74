// Helpers shared by the kernel, alignment and precision lints (kernel-without-tensor-cores, channels-not-aligned,
// int8-slower-than-fp16, reformat-conversion, copy-not-eliminated, no-int8-implementation): the shape of a matrix
// layer as the layer list tells it, channel padding of vectorized formats, and short descriptions of tensors.
#pragma once

#include "qdq/layer_names.h"
#include "qdq/patterns.h"
#include "qdq/precision_summary.h"
#include "rules/rules.h"

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qdq::rules::kernels
{

//! The engine's layer list when the correlation maps every one of its layers (what the engine rules read), else
//! nullptr.
inline const EnginePlan* mappedEngine(const Context& context)
{
    const EnginePlan* plan = context.engine();
    return plan != nullptr && context.correlation.layers.size() == plan->layers.size() ? plan : nullptr;
}

//! The value of one of the layer's other keys ("Groups", "OutMaps"), or "" when absent.
inline std::string_view otherField(const EngineLayer& layer, std::string_view key)
{
    for (const auto& [name, value] : layer.otherFields)
    {
        if (name == key)
        {
            return value;
        }
    }
    return {};
}

inline std::optional<std::int64_t> intField(const EngineLayer& layer, std::string_view key)
{
    std::string_view text = otherField(layer, key);
    std::int64_t value = 0;
    if (text.empty() || std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc())
    {
        return std::nullopt;
    }
    return value;
}

//! How many channels a tensor's format rounds its channel count up to: the vector width of a vectorized format
//! (CHW4, CHW32), N of "channel % N == 0" (HWC8), else 1.
inline int channelPadding(const EngineTensor& tensor)
{
    if (tensor.vectorWidth > 1)
    {
        return tensor.vectorWidth;
    }
    const std::string& format = tensor.format.str();
    static constexpr std::string_view kModulo = "channel % ";
    if (std::size_t at = format.find(kModulo); at != std::string::npos)
    {
        int value = 0;
        const char* begin = format.data() + at + kModulo.size();
        if (std::from_chars(begin, format.data() + format.size(), value).ec == std::errc() && value > 1)
        {
            return value;
        }
    }
    return 1;
}

inline std::int64_t roundUp(std::int64_t value, std::int64_t multiple)
{
    return multiple <= 1 ? value : (value + multiple - 1) / multiple * multiple;
}

//! A convolution, deconvolution or GEMM layer as the layer list describes it.
struct MatrixLayer
{
    std::string_view kind;        //!< "convolution", "deconvolution", "gemm"
    std::int64_t inChannels = 0;  //!< C (conv: dimension 1; GEMM: the last input dimension, K)
    std::int64_t outChannels = 0; //!< K (conv: dimension 1 of the output; GEMM: the last output dimension, N)
    std::int64_t rows = 0;        //!< output positions per channel: N*H*W (conv), M (GEMM); 0 when unknown
    std::int64_t groups = 1;
    bool depthwise = false;
    const EngineTensor* input = nullptr;
    const EngineTensor* output = nullptr;
};

//! The layer's matrix shape, or nullopt for a layer that is no convolution, deconvolution or GEMM, or whose tensors
//! are not listed.
inline std::optional<MatrixLayer> matrixLayer(const EngineLayer& layer, LayerState state)
{
    MatrixLayer result;
    result.kind = layerKind(layer, state);
    if (!isMatrixKind(result.kind) || layer.inputs.empty() || layer.outputs.empty())
    {
        return std::nullopt;
    }
    result.input = &layer.inputs[0];
    result.output = &layer.outputs[0];
    const auto& in = result.input->dimensions;
    const auto& out = result.output->dimensions;
    if (in.size() >= 4 && out.size() >= 4)
    {
        result.inChannels = in[1];
        result.outChannels = out[1];
        result.rows = out[0];
        for (std::size_t d = 2; d < out.size(); ++d)
        {
            result.rows *= out[d];
        }
    }
    else if (!in.empty() && !out.empty())
    {
        result.inChannels = in.back();
        result.outChannels = out.back();
        result.rows = 1;
        for (std::size_t d = 0; d + 1 < out.size(); ++d)
        {
            result.rows *= out[d];
        }
    }
    else
    {
        return std::nullopt;
    }
    result.groups = intField(layer, "Groups").value_or(intField(layer, "ConvGroups").value_or(1));
    result.depthwise =
        layer.type.find("Depthwise") != std::string::npos || (result.groups > 1 && result.groups == result.inChannels);
    return result;
}

//! The precision a matrix layer computes in: INT8 for INT8 weights or a quantized input, FP16/BF16 for a half input
//! or weights, FP32 for float ones; kUnknown when no type is listed.
inline Precision mathPrecision(const EngineLayer& layer)
{
    if (layer.weightsPrecision && *layer.weightsPrecision != Precision::kUnknown)
    {
        return *layer.weightsPrecision;
    }
    return patterns::inputPrecision(layer);
}

//! "[32,3,224,224] Four wide channel vectorized row major Int8 format" for evidence.
inline std::string describeTensor(const EngineTensor& tensor)
{
    std::string text = "[";
    for (std::size_t d = 0; d < tensor.dimensions.size(); ++d)
    {
        text += (d == 0 ? "" : ",") + std::to_string(tensor.dimensions[d]);
    }
    text += "]";
    if (!tensor.format.empty())
    {
        text += " " + tensor.format.str();
    }
    else if (tensor.precision != Precision::kUnknown)
    {
        text += " " + std::string(precisionName(tensor.precision));
    }
    return text;
}

//! Whether any layer of the plan runs a tensor-core kernel, or a kernel named for a GPU with tensor cores (sm70 and
//! later: volta, turing, ampere, hopper, ada, blackwell): evidence that the GPU has them.
inline bool gpuHasTensorCores(const Inputs& inputs)
{
    const EnginePlan* plan = inputs.engine();
    if (plan == nullptr)
    {
        return false;
    }
    for (std::size_t i = 0; i < plan->layers.size(); ++i)
    {
        const std::string& name = plan->layers[i].tacticName;
        if (name.empty())
        {
            continue;
        }
        if (classifyKernel(name).use == TensorCoreUse::kYes)
        {
            return true;
        }
        for (std::string_view prefix : {"sm7", "sm8", "sm9", "sm10", "sm12", "volta", "turing", "ampere", "hopper",
                                        "ada", "blackwell", "trt_turing", "trt_ampere", "cutlass3x_sm"})
        {
            if (name.rfind(prefix, 0) == 0)
            {
                return true;
            }
        }
    }
    return false;
}

} // namespace qdq::rules::kernels
