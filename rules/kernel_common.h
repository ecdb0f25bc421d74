// Helpers shared by the kernel, alignment and precision lints (kernel-without-tensor-cores, channels-not-aligned,
// int8-slower-than-fp16, reformat-conversion, copy-not-eliminated, no-int8-implementation): the shape of a matrix
// layer as the layer list tells it, channel padding of vectorized formats, and short descriptions of tensors.
#pragma once

#include "qdq/layer_names.h"
#include "qdq/patterns.h"
#include "qdq/precision_summary.h"
#include "rules/build_mode_advice.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

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

//! The first convolution of an image network: a convolution with at most 4 input channels (gray, RGB, RGBA) that
//! reads the network input, directly or through the standalone Quantize and builder reformats before it. Its C is the
//! image's, not a width to pad: TensorRT runs such layers on dedicated first-layer kernels where it has one for the
//! shape (`ampere_first_layer_filter3x3_imma_fwd` in blogdoc-yolov8-qdq-orin-trt8412, the FP16
//! `trt_turing_cutlass_image_network_first_layer_hmma_..._c4_...` in trex-pt-resnet-a100-fp16), and the INT8 stem of
//! trex-pt-resnet-a100-qat-residual runs fused as ConvActPool in 0.073 ms.
inline bool isImageStem(const Context& context, const MatrixLayer& shape)
{
    if (shape.kind != "convolution" || shape.inChannels <= 0 || shape.inChannels > 4 || shape.input == nullptr)
    {
        return false;
    }
    const EnginePlan& plan = *context.engine();
    std::string_view tensor = shape.input->name;
    constexpr int kConversionsBefore = 4;
    for (int step = 0; step <= kConversionsBefore; ++step)
    {
        auto producer = patterns::producerLayer(plan, std::string(tensor));
        if (!producer)
        {
            return precision::isNetworkInput(plan, std::string(tensor));
        }
        if ((!precision::isStandaloneQdq(context, *producer) && !precision::isInsertedReformat(context, *producer)) ||
            plan.layers[*producer].inputs.empty())
        {
            return false;
        }
        tensor = plan.layers[*producer].inputs[0].name;
    }
    return false;
}

//! Whether a tensor reaches the network outputs through no other convolution, deconvolution or GEMM (activations,
//! Softmax, shuffles, concatenations, decoding arithmetic): the output channels of the layer writing it are the model's
//! output width (classes, box coordinates and scores of a detection head), which its task sets, not its designer.
inline bool feedsOnlyNetworkOutputs(const Context& context, const EngineTensor& tensor)
{
    const EnginePlan& plan = *context.engine();
    const auto& mappings = context.correlation.layers;
    std::vector<std::string_view> pending{tensor.name};
    std::unordered_set<std::size_t> seen;
    constexpr std::size_t kMostLayersWalked = 64;
    bool reachesOutput = false;
    while (!pending.empty())
    {
        const std::string name(pending.back());
        pending.pop_back();
        const auto consumers = patterns::consumerLayers(plan, name);
        if (consumers.empty() || precision::isBinding(plan, name))
        {
            reachesOutput = true;
        }
        for (std::size_t consumer : consumers)
        {
            if (!seen.insert(consumer).second)
            {
                continue;
            }
            if (seen.size() > kMostLayersWalked || consumer >= mappings.size() ||
                isMatrixKind(layerKind(plan.layers[consumer], mappings[consumer].state)))
            {
                return false;
            }
            for (const auto& output : plan.layers[consumer].outputs)
            {
                pending.push_back(output.name);
            }
        }
    }
    return reachesOutput;
}

//! Whether the build had FP16 enabled: the build log's `Precision:` option or its command line (--fp16, --best), else
//! an FP16 tensor in the layer list; nullopt when no file tells.
inline std::optional<bool> buildHasFp16(const Inputs& inputs)
{
    if (inputs.buildLog)
    {
        for (const auto& [key, value] : inputs.buildLog->buildOptions)
        {
            if (key == "Precision")
            {
                return value.find("FP16") != std::string::npos || value.find("BF16") != std::string::npos;
            }
        }
        const std::string& command = inputs.buildLog->commandLine;
        if (!command.empty())
        {
            return command.find("--fp16") != std::string::npos || command.find("--best") != std::string::npos;
        }
    }
    const EnginePlan* plan = inputs.engine();
    if (plan != nullptr && precision::anyFloat16(*plan))
    {
        return true;
    }
    return std::nullopt;
}

//! The float precision a layer taken out of INT8 would run in, for advice: "FP16" only where the build has FP16
//! enabled; otherwise the graph's float type (FP32 in a weakly typed build without --fp16). Under strong typing the
//! graph's type, whatever flags a log shows (rules/build_mode_advice.h).
inline std::string floatTypeOfBuild(const Context& context)
{
    if (!context.buildMode().precisionFlagsApply())
    {
        return "the graph's float type (strongly typed: FP32 where the model is FP32, FP16 where it is FP16)";
    }
    const std::optional<bool> fp16 = buildHasFp16(context.inputs);
    if (fp16 && *fp16)
    {
        return "FP16";
    }
    if (fp16)
    {
        return "the graph's float type (FP32 here: this build has no --fp16)";
    }
    return "the graph's float type (FP16 only in a build with --fp16)" + assumedTypingNote(context);
}

//! A tensor-core tactic the build log timed for a layer, slower than the kernel TensorRT chose for it.
struct SlowerTensorCoreTactic
{
    const TacticChoice* tensorCore = nullptr;
    const TacticChoice* chosen = nullptr;
};

//! From the build log's tactic choices for the layer (one per format combination): the fastest timed tensor-core
//! kernel and the one the engine runs, when the former was timed slower.
inline std::optional<SlowerTensorCoreTactic> slowerTensorCoreTactic(const Inputs& inputs, const EngineLayer& layer)
{
    if (!inputs.buildLog)
    {
        return std::nullopt;
    }
    SlowerTensorCoreTactic found;
    for (const TacticChoice& choice : inputs.buildLog->tactics)
    {
        if (choice.layer != layer.baseName() || !choice.timeMs)
        {
            continue;
        }
        const bool chosen = !layer.tacticValue.empty()
                                ? choice.tactic == layer.tacticValue
                                : !layer.tacticName.empty() && choice.tacticName == layer.tacticName;
        if (chosen)
        {
            found.chosen = &choice;
        }
        else if (!choice.tacticName.empty() && classifyKernel(choice.tacticName).use == TensorCoreUse::kYes &&
                 (found.tensorCore == nullptr || *choice.timeMs < *found.tensorCore->timeMs))
        {
            found.tensorCore = &choice;
        }
    }
    if (found.chosen == nullptr || found.tensorCore == nullptr || *found.tensorCore->timeMs <= *found.chosen->timeMs)
    {
        return std::nullopt;
    }
    return found;
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

//! Whether any layer of the plan runs (or the build log timed) a tensor-core kernel, or a kernel named for a GPU with
//! tensor cores (sm70 and later: volta, turing, ampere, hopper, ada, blackwell): evidence that the GPU has them.
inline bool gpuHasTensorCores(const Inputs& inputs)
{
    const EnginePlan* plan = inputs.engine();
    if (plan == nullptr)
    {
        return false;
    }
    // The kernels the layer list names, then those the build log's tactic choices name (a log's engine block gives
    // tactic values only).
    std::vector<std::string_view> names;
    for (const auto& layer : plan->layers)
    {
        names.push_back(layer.tacticName);
    }
    if (inputs.buildLog)
    {
        for (const auto& choice : inputs.buildLog->tactics)
        {
            names.push_back(choice.tacticName);
        }
    }
    for (std::string_view name : names)
    {
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

//! The engine's own evidence that a channel count does not keep a precision's matrix layers off tensor cores: for
//! each (precision, channel count), the first convolution, deconvolution or GEMM layer of the engine (not depthwise,
//! not grouped) with that many input or output channels whose kernel runs on tensor cores. In
//! trex-tests-mobilenet-qat-2022-04, `features.2.conv.2` (96 -> 24) runs turing_fp16_i8816cudnn_int8_... while the
//! 24 -> 144 expand convs after it run DP4A on CHW4 inputs; the TensorRT 8.4 build of the same model
//! (trex-tests-mobilenet-qat) runs those expand convs on sm75_xmma_..._tensor8x8x16 kernels: the count is not why.
class TensorCorePeers
{
public:
    explicit TensorCorePeers(const Context& context) : mContext(context) {}

    //! The peer layer for a count, or nullopt; the index set is built on the first call.
    std::optional<std::size_t> find(Precision precision, std::int64_t channels)
    {
        if (!mBuilt)
        {
            build();
        }
        for (const auto& [key, layer] : mPeers)
        {
            if (key.first == precision && key.second == channels)
            {
                return layer;
            }
        }
        return std::nullopt;
    }

    //! "\"peer\" (C -> K channels) runs kernel on tensor cores" for the evidence.
    std::string describe(std::size_t layer) const
    {
        const EngineLayer& peer = mContext.engine()->layers[layer];
        return "\"" + peer.name + "\" (" +
               std::to_string(peer.inputs[0].dimensions.size() >= 4 ? peer.inputs[0].dimensions[1]
                                                                    : peer.inputs[0].dimensions.back()) +
               " -> " +
               std::to_string(peer.outputs[0].dimensions.size() >= 4 ? peer.outputs[0].dimensions[1]
                                                                     : peer.outputs[0].dimensions.back()) +
               " channels, the same engine) runs " + kernelNameOf(mContext.inputs, layer).name + " on tensor cores";
    }

private:
    void build()
    {
        mBuilt = true;
        const EnginePlan& plan = *mContext.engine();
        const auto& mappings = mContext.correlation.layers;
        for (std::size_t i = 0; i < plan.layers.size() && i < mappings.size(); ++i)
        {
            const EngineLayer& layer = plan.layers[i];
            auto shape = matrixLayer(layer, mappings[i].state);
            if (!shape || shape->depthwise || shape->groups > 1 || shape->inChannels <= 0 || shape->outChannels <= 0)
            {
                continue;
            }
            const KernelName kernel = kernelNameOf(mContext.inputs, i);
            if (kernel.name.empty() || classifyKernel(kernel.name).use != TensorCoreUse::kYes)
            {
                continue;
            }
            const Precision precision = mathPrecision(layer);
            for (std::int64_t count : {shape->inChannels, shape->outChannels})
            {
                if (std::none_of(mPeers.begin(), mPeers.end(),
                                 [&](const auto& peer)
                                 { return peer.first.first == precision && peer.first.second == count; }))
                {
                    mPeers.push_back({{precision, count}, i});
                }
            }
        }
    }

    const Context& mContext;
    bool mBuilt = false;
    std::vector<std::pair<std::pair<Precision, std::int64_t>, std::size_t>> mPeers;
};

} // namespace qdq::rules::kernels
