// kernel-without-tensor-cores: a convolution, deconvolution or GEMM layer whose kernel runs on CUDA cores (DP4A,
// SIMT/FFMA, GEMV) although the GPU has tensor cores, read from the kernel name (TacticName, or the build log's
// tactic choice). Says when no file names the kernels.
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
            else if (!context.inputs.buildLog || context.inputs.buildLog->tactics.empty())
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
            if (kernel.name.empty())
            {
                continue; // unknown; a list without any kernel name is said in the report's notes (diagnose)
            }
            KernelClass kernelClass = classifyKernel(kernel.name);
            if (kernelClass.use != TensorCoreUse::kNo || !hasTensorCores)
            {
                continue;
            }
            sink.add(explain(context, i, shape, kernel, kernelClass));
        }
    }

private:
    Finding explain(const Context& context, std::size_t index, const std::optional<MatrixLayer>& shape,
                    const KernelName& kernel, const KernelClass& kernelClass) const
    {
        const EngineLayer& layer = context.engine()->layers[index];
        const Precision precision = mathPrecision(layer);
        const std::string precisionText(precisionName(precision));
        const std::string& marker = kernelClass.marker;
        std::string what;
        if (marker == "int8x4" || marker == "icudnn" || marker == "dp4a")
        {
            what = "an INT8 DP4A kernel (4-wide dot products on CUDA cores)";
        }
        else if (marker == "gemv")
        {
            what = "a matrix-vector (GEMV) kernel on CUDA cores";
        }
        else if (marker == "scudnn" || marker == "ffma")
        {
            what = "an FP32 FFMA kernel on CUDA cores";
        }
        else
        {
            what = "a CUDA-core (" + marker + ") kernel";
        }
        Finding finding = makeFinding(info(), "");
        finding.likely = true;
        finding.engineLayers = {layer.name};
        for (const auto& node : context.correlation.layers[index].onnxNodes)
        {
            finding.onnxNodes.emplace_back(node);
        }
        finding.costMs = layerTime(context, index);
        finding.evidence.push_back(
            layerEvidence(context, index, "TacticName",
                          kernel.name + " (\"" + marker + "\": CUDA cores; from " + kernel.source + ")"));
        if (kernel.source == "build log")
        {
            finding.evidence.back().file = kernel.file;
            finding.evidence.back().line = kernel.line;
        }
        std::string why;
        std::string fix;
        const std::int64_t align = precision == Precision::kINT8 ? 16 : 8;
        if (shape && shape->inChannels > 0)
        {
            finding.evidence.push_back(layerEvidence(context, index, "Inputs[0]", describeTensor(*shape->input)));
            const bool matrixVector = shape->rows == 1 || marker == "gemv";
            const bool fewChannels = shape->inChannels < align;
            const bool misaligned = shape->inChannels % align != 0 || shape->outChannels % align != 0;
            if (matrixVector)
            {
                finding.severity = Severity::kInfo;
                why =
                    "its output has one row per channel (batch 1, 1x1 spatial): a matrix-vector product, where tensor "
                    "cores gain little and TensorRT timed a CUDA-core kernel faster";
                fix = "nothing to change for a matrix-vector product; batching several inputs per inference turns it "
                      "into a matrix product that runs on tensor cores";
            }
            else if (fewChannels || misaligned)
            {
                why = "its " + std::to_string(shape->inChannels) + " input and " + std::to_string(shape->outChannels) +
                      " output channels are " +
                      (fewChannels ? "too few" : "not multiples of " + std::to_string(align)) + " for the " +
                      precisionText + " tensor-core kernels (see channels-not-aligned)";
                fix = "make the channel counts multiples of " + std::to_string(align) + " (";
                if (shape->inChannels % align != 0)
                {
                    fix += "C " + std::to_string(shape->inChannels) + " -> " +
                           std::to_string(roundUp(shape->inChannels, align));
                }
                if (shape->outChannels % align != 0)
                {
                    fix += std::string(shape->inChannels % align != 0 ? ", " : "") + "K " +
                           std::to_string(shape->outChannels) + " -> " +
                           std::to_string(roundUp(shape->outChannels, align));
                }
                fix += ", zero channels in the weights)";
                if (precision == Precision::kINT8 && shape->inChannels <= 4)
                {
                    fix += "; for the first convolution of an image network (3 channels) the usual remedy is to "
                           "leave it in FP16: remove the Q/DQ on its input and weights, and TensorRT runs it on its "
                           "first-layer FP16 tensor-core kernel (compare an FP16 build with qdq-doctor diff; see "
                           "int8-slower-than-fp16)";
                }
            }
        }
        if (why.empty() && precision == Precision::kINT8 && shape && shape->input->vectorWidth == 4)
        {
            auto producer = producerLayer(*context.engine(), shape->input->name);
            why =
                "its input arrives 4-wide vectorized (CHW4), the format DP4A kernels read, from " +
                (producer ? "\"" + context.engine()->layers[*producer].name + "\"" : std::string("the network input")) +
                "; INT8 tensor-core kernels read CHW32";
            fix = "let the producer write CHW32: quantize so that the producer is an INT8 layer itself (a standalone "
                  "Quantize or Scale layer writing CHW4 goes with its own fix, see standalone-qdq), then TensorRT can "
                  "pick a tensor-core kernel here";
        }
        if (why.empty() && precision == Precision::kFP32)
        {
            why = "FP32 math uses tensor cores only through TF32";
            fix = "build with --fp16 (or quantize the layer), and do not disable TF32 (--noTF32)";
        }
        if (why.empty())
        {
            why = "TensorRT timed its tensor-core tactics slower for this shape and format, or had none for them";
            fix =
                "check the channel counts and the tensor formats around the layer (a reformat to CHW32 for INT8, HWC8 "
                "for FP16 precedes tensor-core kernels); compare the tactics of another build with qdq-doctor diff";
        }
        finding.message =
            precisionText + " layer \"" + layer.name + "\" runs " + what +
            ", not on tensor cores, although other layers of this engine or its kernel names show the GPU "
            "has them; likely because " +
            why + ".";
        finding.fix = fix;
        return finding;
    }
};

} // namespace

std::unique_ptr<Rule> makeKernelWithoutTensorCores()
{
    return std::make_unique<KernelWithoutTensorCores>();
}

} // namespace qdq::rules
