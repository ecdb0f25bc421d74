// kernel-without-tensor-cores: a convolution, deconvolution or GEMM layer whose kernel runs on CUDA cores (DP4A,
// SIMT/FFMA, GEMV) although the GPU has tensor cores, read from the kernel name (TacticName, or the build log's
// tactic choice). Says when no file names the kernels.
#include "rules/build_mode_advice.h"
#include "rules/kernel_common.h"
#include "rules/rules.h"

#include <algorithm>
#include <unordered_map>

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace kernels;

//! The marker of a kernel the layer list does not name, classified as DP4A by its CHW4 INT8 input.
constexpr std::string_view kUnnamedChw4 = "unnamed, CHW4 INT8 input";

//! A convolution of one of TensorRT's own runners (not CASK, not depthwise: FusedConvActConvolution) whose kernel the
//! layer list does not name, reading INT8 four-wide vectorized (CHW4). That is the format DP4A kernels read; INT8
//! tensor-core kernels read CHW32. In the engines of ../shared every named INT8 convolution on a CHW4 input runs a
//! DP4A kernel (`volta_int8x4_icudnn_int8x4_...`, 7 in trex-tests-mobilenet-qat-2022-04) and every one on CHW32 a
//! tensor-core kernel (27 there), so such a layer likely runs on CUDA cores too.
bool unnamedOnDp4aInput(const EngineLayer& layer)
{
    return layer.tacticName.empty() && layer.type.find("Conv") != std::string::npos &&
           layer.type.find("Cask") == std::string::npos && layer.type.find("Depthwise") == std::string::npos &&
           !layer.inputs.empty() && layer.inputs[0].vectorWidth == 4 && isQuantized(layer.inputs[0].precision);
}

class KernelWithoutTensorCores final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "kernel-without-tensor-cores",
            "",
            "A convolution, deconvolution or GEMM runs on a CUDA-core kernel (DP4A, SIMT, GEMV) instead of tensor "
            "cores",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "a kernel choice of the engine build: the remedies (channel counts, the layer's precision, build flags) "
            "change the model's shapes or accuracy, or the build, which `fix` does not decide"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan* mapped = kernels::mappedEngine(context);
        if (mapped == nullptr)
        {
            return; // the engine's layer list, mapped to the model, is what this rule reads
        }
        const EnginePlan& plan = *mapped;
        const auto& mappings = context.correlation.layers;
        const bool hasTensorCores = gpuHasTensorCores(context.inputs);
        std::unordered_map<std::string_view, TensorCoreUse> seen;
        std::string_view lastKernel;
        TensorCoreUse lastUse = TensorCoreUse::kUnknown;
        TensorCorePeers peers(context);
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            const EngineLayer& layer = plan.layers[i];
            // The kernel first, the cheapest test: most layers of a large engine share a handful of kernels, each
            // classified once. Without a TacticName only a build log can name the kernel.
            if (!layer.tacticName.empty())
            {
                if (layer.tacticName != lastKernel)
                {
                    auto [known, added] = seen.try_emplace(layer.tacticName, TensorCoreUse::kUnknown);
                    if (added)
                    {
                        known->second = classifyKernel(layer.tacticName).use;
                    }
                    lastKernel = layer.tacticName;
                    lastUse = known->second;
                }
                if (lastUse != TensorCoreUse::kNo)
                {
                    continue;
                }
            }
            else if ((!context.inputs.buildLog || context.inputs.buildLog->tactics.empty()) &&
                     !unnamedOnDp4aInput(layer))
            {
                continue;
            }
            if (!isMatrixKind(layerKind(layer, mappings[i].state)))
            {
                continue;
            }
            auto shape = matrixLayer(layer, mappings[i].state);
            if (shape && (shape->depthwise || std::max(shape->inChannels, shape->outChannels) < 16))
            {
                continue; // depthwise convolutions have no tensor-core kernels, tiny matrices gain nothing: expected
            }
            KernelName kernel = kernelNameOf(context.inputs, i);
            KernelClass kernelClass;
            if (!kernel.name.empty())
            {
                kernelClass = classifyKernel(kernel.name);
            }
            else if (unnamedOnDp4aInput(layer))
            {
                kernel.name = layer.type;
                kernel.source = "LayerType";
                kernelClass = {TensorCoreUse::kNo, std::string(kUnnamedChw4)};
            }
            else
            {
                continue; // unknown; a list without any kernel name is said in the report's notes (diagnose)
            }
            if (kernelClass.use != TensorCoreUse::kNo || !hasTensorCores)
            {
                continue;
            }
            sink.add(explain(context, i, shape, kernel, kernelClass, peers));
        }
    }

private:
    //! Why a layer runs on CUDA cores, and what to do about it.
    struct Cause
    {
        std::string why;
        std::string fix;
        bool nothingToDo = false; //!< an info finding: the kernel choice is right for the layer
        std::vector<Evidence> evidence;
        std::vector<std::size_t> peers; //!< layers of the engine that run the layer's channel counts on tensor cores
        std::string inputWriter;        //!< the layer writing the input format blamed (Finding::explainedByLayer)
    };

    static std::string kernelKind(const std::string& marker)
    {
        if (marker == "int8x4" || marker == "icudnn" || marker == "dp4a")
        {
            return "an INT8 DP4A kernel (4-wide dot products on CUDA cores)";
        }
        if (marker == "gemv")
        {
            return "a matrix-vector (GEMV) kernel on CUDA cores";
        }
        if (marker == "scudnn" || marker == "ffma")
        {
            return "an FP32 FFMA kernel on CUDA cores";
        }
        if (marker == kUnnamedChw4)
        {
            return "a kernel the layer list does not name, by its CHW4 INT8 input a DP4A one on CUDA cores";
        }
        return "a CUDA-core (" + marker + ") kernel";
    }

    //! The build log timed a tensor-core kernel for the layer and found it slower than the one chosen.
    static Cause measuredSlower(const Context& context, const SlowerTensorCoreTactic& tactics, bool stem)
    {
        const std::string& file = context.inputs.buildLog->sourcePath;
        Cause cause;
        cause.nothingToDo = true;
        cause.why = "TensorRT timed its tensor-core tactics for it and they were slower: the fastest, " +
                    tactics.tensorCore->tacticName + ", took " + formatMs(*tactics.tensorCore->timeMs) + " against " +
                    formatMs(*tactics.chosen->timeMs) + " for the chosen " + tactics.chosen->tacticName + " (" + file +
                    ":" + std::to_string(tactics.tensorCore->line) + " and " + std::to_string(tactics.chosen->line) +
                    ")";
        cause.fix = "nothing to change for the kernel: TensorRT measured the tensor-core kernels slower for this "
                    "layer's shape and formats";
        if (stem)
        {
            cause.fix += "; it is the first convolution of an image network, whose few input channels are the "
                         "image's: padding them does not help";
        }
        for (const TacticChoice* choice : {tactics.tensorCore, tactics.chosen})
        {
            Evidence evidence;
            evidence.file = file;
            evidence.line = choice->line;
            evidence.field = "tactic choice";
            evidence.text = choice->tacticName + " (" + choice->tactic + "): " + formatMs(*choice->timeMs);
            cause.evidence.push_back(std::move(evidence));
        }
        return cause;
    }

    //! The first convolution of an image network on CUDA cores.
    static Cause imageStem(const Context& context, const MatrixLayer& shape, Precision precision)
    {
        Cause cause;
        cause.why = "it is the first convolution of an image network: its " + std::to_string(shape.inChannels) +
                    " input channels are the image's, too few for the " + std::string(precisionName(precision)) +
                    " tensor-core kernels of the other layers, and TensorRT had no first-layer kernel for this "
                    "shape and format (or timed it slower)";
        cause.fix = "nothing to pad: the input channels are the image's";
        if (precision == Precision::kINT8)
        {
            cause.fix += "; if the layer is slow, compare a build where it runs in " + floatTypeOfBuild(context) +
                         " (remove the Q/DQ on its input and weights) with qdq-doctor diff: TensorRT has float "
                         "first-layer kernels for some shapes (see int8-slower-than-fp16)";
        }
        return cause;
    }

    //! Why, from the layer's shape and input format, when the log timed no tensor-core kernel for it.
    static Cause fromShape(const Context& context, const MatrixLayer& shape, Precision precision,
                           const std::string& marker, TensorCorePeers& peers)
    {
        Cause cause;
        const std::int64_t align = precision == Precision::kINT8 ? 16 : 8;
        bool fewChannels = shape.inChannels < align;
        bool misaligned = shape.inChannels % align != 0 || shape.outChannels % align != 0;
        if ((fewChannels || misaligned) && !isImageStem(context, shape))
        {
            // Counts this engine runs on tensor cores elsewhere in the same precision are not the reason: then the
            // input format (below) or the generic cause is. The peer goes in the evidence.
            const auto peerIn = peers.find(precision, shape.inChannels);
            const auto peerOut = peers.find(precision, shape.outChannels);
            const bool inRefuted = shape.inChannels % align == 0 || peerIn.has_value();
            const bool outRefuted = shape.outChannels % align == 0 || peerOut.has_value();
            if (inRefuted && outRefuted)
            {
                for (const auto& peer : {peerIn, peerOut})
                {
                    if (peer && (cause.peers.empty() || cause.peers.back() != *peer))
                    {
                        cause.peers.push_back(*peer);
                    }
                }
                fewChannels = false;
                misaligned = false;
            }
        }
        if (shape.rows == 1 || marker == "gemv")
        {
            cause.nothingToDo = true;
            cause.why = "its output has one row per channel (batch 1, 1x1 spatial): a matrix-vector product, where "
                        "tensor cores gain little and TensorRT timed a CUDA-core kernel faster";
            cause.fix = "nothing to change for a matrix-vector product; batching several inputs per inference turns "
                        "it into a matrix product that runs on tensor cores";
        }
        else if ((fewChannels || misaligned) && isImageStem(context, shape))
        {
            cause = imageStem(context, shape, precision);
        }
        else if (fewChannels || misaligned)
        {
            cause.why = "its " + std::to_string(shape.inChannels) + " input and " + std::to_string(shape.outChannels) +
                        " output channels are " +
                        (fewChannels ? "too few" : "not multiples of " + std::to_string(align)) + " for the " +
                        std::string(precisionName(precision)) + " tensor-core kernels (see channels-not-aligned)";
            std::string change;
            if (shape.inChannels % align != 0)
            {
                change +=
                    "C " + std::to_string(shape.inChannels) + " -> " + std::to_string(roundUp(shape.inChannels, align));
            }
            if (shape.outChannels % align != 0 && !feedsOnlyNetworkOutputs(context, *shape.output))
            {
                change += std::string(change.empty() ? "" : ", ") + "K " + std::to_string(shape.outChannels) + " -> " +
                          std::to_string(roundUp(shape.outChannels, align));
            }
            cause.fix = change.empty() ? "nothing to pad: the output channels are the network's output width"
                                       : "make the channel counts multiples of " + std::to_string(align) + " (" +
                                             change + ", zero channels in the weights)";
        }
        else if (precision == Precision::kINT8 && shape.input->vectorWidth == 4)
        {
            auto producer = producerLayer(*context.engine(), shape.input->name);
            cause.why =
                "its input arrives 4-wide vectorized (CHW4), the format DP4A kernels read, from " +
                (producer ? "\"" + context.engine()->layers[*producer].name + "\"" : std::string("the network input")) +
                "; INT8 tensor-core kernels read CHW32";
            cause.fix = "let the producer write CHW32: quantize so that the producer is an INT8 layer itself (a "
                        "standalone Quantize or Scale layer writing CHW4 goes with its own fix, see standalone-qdq), "
                        "then TensorRT can pick a tensor-core kernel here";
            if (producer)
            {
                cause.inputWriter = context.engine()->layers[*producer].name;
            }
        }
        return cause;
    }

    Finding explain(const Context& context, std::size_t index, const std::optional<MatrixLayer>& shape,
                    const KernelName& kernel, const KernelClass& kernelClass, TensorCorePeers& peers) const
    {
        const EngineLayer& layer = context.engine()->layers[index];
        const Precision precision = mathPrecision(layer);
        const std::string& marker = kernelClass.marker;
        Finding finding = makeFinding(info(), "");
        finding.likely = true;
        finding.engineLayers = {layer.name};
        for (const auto& node : context.correlation.layers[index].onnxNodes)
        {
            finding.onnxNodes.emplace_back(node);
        }
        finding.costMs = layerTime(context, index);
        finding.evidence.push_back(
            marker == kUnnamedChw4
                ? layerEvidence(context, index, "LayerType",
                                layer.type + " (no TacticName; input " + describeTensor(layer.inputs[0]) +
                                    ": likely DP4A on CUDA cores, a guess from the format)")
                : layerEvidence(context, index, "TacticName",
                                kernel.name + " (\"" + marker + "\": CUDA cores; from " + kernel.source + ")"));
        if (kernel.source == "build log")
        {
            finding.evidence.back().file = kernel.file;
            finding.evidence.back().line = kernel.line;
        }
        const bool stem = shape && isImageStem(context, *shape);
        Cause cause;
        if (auto slower = slowerTensorCoreTactic(context.inputs, layer))
        {
            cause = measuredSlower(context, *slower, stem);
        }
        else if (shape && shape->inChannels > 0)
        {
            cause = fromShape(context, *shape, precision, marker, peers);
        }
        if (shape && shape->inChannels > 0)
        {
            finding.evidence.push_back(layerEvidence(context, index, "Inputs[0]", describeTensor(*shape->input)));
        }
        if (cause.why.empty() && precision == Precision::kFP32)
        {
            // --noTF32 is named only where the log's command line shows it: a fix must not name a flag the build did
            // not use (nor one a TensorRT release may lack).
            const BuildLog* log = context.inputs.buildLog ? &*context.inputs.buildLog : nullptr;
            const bool noTf32 = log != nullptr && log->commandLine.find("--noTF32") != std::string::npos;
            const std::string tf32 = noTf32 ? ", and drop --noTF32 from the command line (it disables TF32)" : "";
            cause.why = "FP32 math uses tensor cores only through TF32";
            cause.fix = precisionFlagsApply(context)
                            ? "build with --fp16 (or quantize the layer)" + tf32 + assumedTypingNote(context)
                            : "make the layer FP16 in the graph (`qdq-doctor fix --autocast fp16`) or quantize it "
                              "(strongly typed: it runs in the graph's type)" +
                                  tf32;
        }
        if (cause.why.empty())
        {
            cause.why = "TensorRT timed its tensor-core tactics slower for this shape and format, or had none for them";
            cause.fix =
                "check the channel counts and the tensor formats around the layer (a reformat to CHW32 for INT8, HWC8 "
                "for FP16 precedes tensor-core kernels); compare the tactics of another build with qdq-doctor diff";
        }
        if (cause.nothingToDo)
        {
            finding.severity = Severity::kInfo;
        }
        const bool measured = !cause.evidence.empty();
        for (std::size_t peer : cause.peers)
        {
            finding.evidence.push_back(layerEvidence(context, peer, "TacticName",
                                                     peers.describe(peer) +
                                                         ": the channel counts are not why this layer runs on CUDA "
                                                         "cores, and padding them is not the fix"));
        }
        for (auto& evidence : cause.evidence)
        {
            finding.evidence.push_back(std::move(evidence));
        }
        finding.message = std::string(precisionName(precision)) + " layer \"" + layer.name + "\" runs " +
                          kernelKind(marker) +
                          ", not on tensor cores, although other layers of this engine or its kernel names show the "
                          "GPU has them; " +
                          (measured ? "" : "likely ") + "because " + cause.why + ".";
        finding.fix = cause.fix;
        finding.explainedByLayer = cause.inputWriter;
        return finding;
    }
};

} // namespace

std::unique_ptr<Rule> makeKernelWithoutTensorCores()
{
    return std::make_unique<KernelWithoutTensorCores>();
}

} // namespace qdq::rules
