// channels-not-aligned: INT8 and FP16 convolution, deconvolution and GEMM layers whose channel counts are not
// multiples of what the precision's tensor-core kernels work in (16 for INT8, 8 for FP16), with the aligned counts as
// the fix; vectorized formats pad the channels, which costs time and memory.
#include "rules/kernel_common.h"
#include "rules/rules.h"

#include <algorithm>
#include <tuple>

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace kernels;

class ChannelsNotAligned final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"channels-not-aligned",
                                    "",
                                    "INT8/FP16 convolution or GEMM channel counts are not multiples of 16 (INT8) or 8 "
                                    "(FP16), so the kernels pad them or fall back to CUDA cores",
                                    Severity::kWarning,
                                    "8.0-10.x",
                                    kNeedsOnnxOrEngine | kReadsCorrelation,
                                    "the channel counts are the model's architecture (layer widths and the input's "
                                    "channels), which `fix` does not change"};
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
        std::vector<std::size_t> layers;
        std::vector<std::string> edits;
        bool onCudaCores = false;
        Finding finding = makeFinding(info(), "");
        TensorCorePeers peers(context);
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            const EngineLayer& layer = plan.layers[i];
            if (layer.inputs.empty() || layer.outputs.empty() || alignedForAny(layer) ||
                !isMatrixKind(layerKind(layer, mappings[i].state)))
            {
                continue;
            }
            auto shape = matrixLayer(layer, mappings[i].state);
            if (!shape || shape->depthwise || shape->groups > 1 || shape->inChannels <= 0 || shape->outChannels <= 0)
            {
                continue;
            }
            const Precision precision = mathPrecision(layer);
            const std::int64_t align = alignmentOf(precision);
            // Tiny matrices (a 3x3 matmul) gain nothing from any kernel: not worth a finding.
            if (align == 0 || std::max(shape->inChannels, shape->outChannels) < 16)
            {
                continue;
            }
            // A count under 16 is a layer's purpose, not its width (2 box coordinates, 4 classes, a 1-channel mask),
            // except for the input channels of a convolution inside the network. Two counts are the model's task, not
            // its design, and are never worth padding: the channels of the image the first convolution reads (TensorRT
            // has first-layer kernels for them), and the output channels of a layer whose output only goes on to the
            // network's outputs (1000 classes, the 63 outputs of a detection head).
            const auto matters = [&](std::int64_t count, bool isInput)
            { return count % align != 0 && (count >= 16 || (isInput && shape->kind == "convolution")); };
            bool inOff = matters(shape->inChannels, true) && !isImageStem(context, *shape);
            bool outOff = matters(shape->outChannels, false) && !feedsOnlyNetworkOutputs(context, *shape->output);
            // A count that a layer of this very engine runs on tensor cores in this precision is no reason to pad:
            // the paired builds refute it (TensorCorePeers). Such a count is left out of the advice.
            inOff = inOff && !peers.find(precision, shape->inChannels);
            outOff = outOff && !peers.find(precision, shape->outChannels);
            if (!inOff && !outOff)
            {
                continue;
            }
            KernelName kernel = kernelNameOf(context.inputs, i);
            const TensorCoreUse use = classifyKernel(kernel.name).use;
            // The build log timed this layer's tensor-core tactics (which read the channels padded) and found them
            // slower than the CUDA-core kernel it runs: padding is refuted by measurement (kernel-without-tensor-cores
            // gives the timings).
            if (use != TensorCoreUse::kYes && slowerTensorCoreTactic(context.inputs, layer))
            {
                continue;
            }
            layers.push_back(i);
            edits.push_back("\"" + layer.name + "\": " + channelChange(*shape, inOff, outOff, align));
            onCudaCores = onCudaCores || use == TensorCoreUse::kNo;
            finding.evidence.push_back(layerEvidence(
                context, i, "Inputs[0]/Outputs[0]",
                std::string(precisionName(precision)) + " " + std::string(shape->kind) + ", " +
                    std::to_string(shape->inChannels) + " -> " + std::to_string(shape->outChannels) +
                    " channels, multiples of " + std::to_string(align) + " wanted" + paddingText(*shape) +
                    (kernel.name.empty()
                         ? std::string()
                         : "; kernel " + kernel.name + " (" + std::string(tensorCoreUseName(use)) + ")")));
            for (const auto& node : mappings[i].onnxNodes)
            {
                finding.onnxNodes.emplace_back(node);
            }
        }
        if (layers.empty())
        {
            return;
        }
        finishFinding(context, layers, edits, onCudaCores, finding);
        sink.add(std::move(finding));
    }

private:
    //! Cheapest test first: a layer whose first input and output have channel counts (dimension 1 of a 4-D tensor,
    //! else the last) that are multiples of 16 is aligned for any precision and kind.
    static bool alignedForAny(const EngineLayer& layer)
    {
        const auto& inDims = layer.inputs[0].dimensions;
        const auto& outDims = layer.outputs[0].dimensions;
        if (inDims.empty() || outDims.empty())
        {
            return false;
        }
        const std::int64_t c = inDims.size() >= 4 ? inDims[1] : inDims.back();
        const std::int64_t k = outDims.size() >= 4 ? outDims[1] : outDims.back();
        return c > 0 && k > 0 && c % 16 == 0 && k % 16 == 0;
    }

    //! The channel multiple the tensor-core kernels of a precision work in; 0 for the others.
    static std::int64_t alignmentOf(Precision precision)
    {
        if (precision == Precision::kINT8)
        {
            return 16;
        }
        if (precision == Precision::kFP16 || precision == Precision::kBF16)
        {
            return 8;
        }
        return 0;
    }

    static std::string channelChange(const MatrixLayer& shape, bool inOff, bool outOff, std::int64_t align)
    {
        std::string change;
        if (inOff)
        {
            change +=
                "C " + std::to_string(shape.inChannels) + " -> " + std::to_string(roundUp(shape.inChannels, align));
        }
        if (outOff)
        {
            change += std::string(inOff ? ", " : "") + "K " + std::to_string(shape.outChannels) + " -> " +
                      std::to_string(roundUp(shape.outChannels, align));
        }
        return change;
    }

    //! What the formats pad the channels to: stored but never used.
    static std::string paddingText(const MatrixLayer& shape)
    {
        std::string padding;
        for (const auto& [tensor, count, side] : {std::tuple{shape.input, shape.inChannels, "input"},
                                                  std::tuple{shape.output, shape.outChannels, "output"}})
        {
            const int unit = channelPadding(*tensor);
            const std::int64_t stored = roundUp(count, unit);
            if (stored > count)
            {
                padding += std::string(padding.empty() ? "; " : ", ") + side + " stored as " + std::to_string(stored) +
                           " channels (" + std::to_string((stored - count) * 100 / stored) + "% padding)";
            }
        }
        return padding;
    }

    static void finishFinding(const Context& context, const std::vector<std::size_t>& layers,
                              const std::vector<std::string>& edits, bool onCudaCores, Finding& finding)
    {
        finding.engineLayers = layerNames(context, layers);
        finding.costMs = sumTimes(context, layers);
        finding.severity = onCudaCores ? Severity::kWarning : Severity::kInfo;
        finding.message =
            std::to_string(layers.size()) +
            " INT8/FP16 convolution or GEMM layer(s) have channel counts that are not multiples of 16 (INT8) or 8 "
            "(FP16), the sizes the tensor-core kernels work in: " +
            nameList(edits, 4) + ". " +
            (onCudaCores ? "Some of them run on CUDA-core kernels (see kernel-without-tensor-cores); the others"
                         : "They") +
            " compute and store the padded channels, which costs time and memory.";
        finding.fix = "make the channel counts multiples of the precision's alignment: " + nameList(edits, 8) +
                      " (wider layers in the model, or zero output channels in the weights of one layer and zero "
                      "input channels in the next)";
    }
};

} // namespace

std::unique_ptr<Rule> makeChannelsNotAligned()
{
    return std::make_unique<ChannelsNotAligned>();
}

} // namespace qdq::rules
