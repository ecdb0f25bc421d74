// depthwise-conv-on-cuda-cores: the engine's depthwise convolutions run CUDA-core kernels (TensorRT's own
// CudaDepthwiseConvolution runner, or a kernel named as a CUDA-core one) on a GPU with tensor cores. Expected, not a
// mistake: one info finding per engine says so and what those layers cost, so that a layer another tool flags as "not
// accelerated" has its explanation (TREx's ConvLinter flags every convolution without a tensor-core kernel name).
#include "rules/kernel_common.h"
#include "rules/rules.h"

#include <cstdio>
#include <optional>

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace kernels;

class DepthwiseConvOnCudaCores final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "depthwise-conv-on-cuda-cores",
            "",
            "Depthwise convolutions run on CUDA cores, not tensor cores, in every precision: expected; what they cost",
            Severity::kInfo,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "nothing to change in the model: TensorRT picks a CUDA-core kernel for a depthwise convolution whatever "
            "its "
            "Q/DQ placement"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan* plan = kernels::mappedEngine(context);
        if (plan == nullptr || !gpuHasTensorCores(context.inputs))
        {
            return; // on a GPU without tensor cores every layer runs on CUDA cores: nothing particular to say
        }
        const std::vector<std::size_t> layers = depthwiseOnCudaCores(context, *plan);
        if (!layers.empty())
        {
            sink.add(explain(context, layers));
        }
    }

private:
    //! The depthwise convolutions that run on CUDA cores: TensorRT's own depthwise runner (LayerType
    //! CudaDepthwiseConvolution, to which the layer list gives no kernel name), or a kernel named as a CUDA-core one.
    //! A depthwise convolution on a named tensor-core kernel (an implicit-GEMM tactic) or a nameless one of another
    //! runner is not among them, nor is a grouped convolution with several channels per group.
    static std::vector<std::size_t> depthwiseOnCudaCores(const Context& context, const EnginePlan& plan)
    {
        std::vector<std::size_t> layers;
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            const EngineLayer& layer = plan.layers[i];
            if (layer.type.find("onv") == std::string::npos)
            {
                continue; // cheapest test first: every convolution type says so
            }
            auto shape = matrixLayer(layer, context.correlation.layers[i].state);
            if (!shape || shape->kind != "convolution" || !shape->depthwise)
            {
                continue;
            }
            const KernelName kernel = kernelNameOf(context.inputs, i);
            const bool cudaCores = kernel.name.empty() ? layer.type.find("Depthwise") != std::string::npos
                                                       : classifyKernel(kernel.name).use == TensorCoreUse::kNo;
            if (cudaCores)
            {
                layers.push_back(i);
            }
        }
        return layers;
    }

    //! "18.1%" of the engine's time.
    static std::string shareOf(double ms, double engineMs)
    {
        char buffer[32];
        std::snprintf(buffer, sizeof(buffer), "%.1f%%", engineMs > 0.0 ? ms * 100.0 / engineMs : 0.0);
        return buffer;
    }

    //! One evidence line per layer: its kernel, precision, groups and time.
    static Evidence layerLine(const Context& context, std::size_t index, double engineMs)
    {
        const EngineLayer& layer = context.engine()->layers[index];
        const KernelName kernel = kernelNameOf(context.inputs, index);
        const std::string groups(otherField(layer, "Groups"));
        const std::optional<double> ms = layerTime(context, index);
        return layerEvidence(
            context, index, kernel.name.empty() ? "LayerType" : "TacticName",
            (kernel.name.empty() ? layer.type + " (no kernel name)" : kernel.name) + ", " +
                std::string(precisionName(mathPrecision(layer))) +
                (groups.empty() ? std::string() : ", Groups " + groups) +
                (ms ? ": " + formatMs(*ms) + " (" + shareOf(*ms, engineMs) + " of the engine)" : std::string()));
    }

    Finding explain(const Context& context, const std::vector<std::size_t>& layers) const
    {
        const EnginePlan& plan = *context.engine();
        Finding finding = makeFinding(info(), "");
        finding.likely = true;
        double engineMs = 0.0;
        for (const auto& mapping : context.correlation.layers)
        {
            engineMs += mapping.timeMs.value_or(0.0);
        }
        std::optional<std::size_t> largest;
        for (std::size_t i : layers)
        {
            finding.engineLayers.push_back(plan.layers[i].name);
            for (const auto& node : context.correlation.layers[i].onnxNodes)
            {
                finding.onnxNodes.emplace_back(node);
            }
            finding.evidence.push_back(layerLine(context, i, engineMs));
            const std::optional<double> ms = layerTime(context, i);
            if (ms && (!largest || *ms > layerTime(context, *largest).value_or(0.0)))
            {
                largest = i;
            }
        }
        finding.costMs = sumTimes(context, layers);
        std::string cost;
        if (finding.costMs)
        {
            cost = " They take " + formatMs(*finding.costMs) + " (" + shareOf(*finding.costMs, engineMs) +
                   " of the engine)";
            if (largest && layers.size() > 1)
            {
                cost += "; the largest, \"" + plan.layers[*largest].name + "\", " +
                        formatMs(layerTime(context, *largest).value_or(0.0));
            }
            cost += ".";
        }
        finding.message =
            std::to_string(layers.size()) + " depthwise convolution layer(s) run on CUDA cores, not tensor cores: " +
            nameList(finding.engineLayers, 3) +
            ". That is expected in any precision: a depthwise convolution filters each channel on its own, no matrix "
            "product for tensor cores to speed up (likely: CUTLASS's maintainers at NVIDIA say its depthwise kernels "
            "run on CUDA cores only, a PyTorch maintainer says the same of cuDNN's; TensorRT documents nothing for its "
            "own)." +
            cost;
        finding.fix = "nothing to change for the kernel; a depthwise convolution is bound by the bytes it reads and "
                      "writes, so keep its input and output INT8 (its activation fused, a Q/DQ on its output) and "
                      "compare the time of these layers between builds with qdq-doctor diff";
        return finding;
    }
};

} // namespace

std::unique_ptr<Rule> makeDepthwiseConvOnCudaCores()
{
    return std::make_unique<DepthwiseConvOnCudaCores>();
}

} // namespace qdq::rules
