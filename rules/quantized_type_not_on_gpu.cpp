// quantized-type-not-on-gpu: the model quantizes to a type the build's GPU has no kernels for (FP8 before compute
// capability 8.9, FP4 and MXFP8 before Blackwell, INT4 before Ampere). The GPU comes from --gpu or the build log's
// device lines; kernel names only bound it from below, which proves a type present, never absent. Sources: the
// requirement table of include/qdq/quantized_types.h (TensorRT-RTX and Model Optimizer support matrices,
// Torch-TensorRT's quantization guide).
#include "qdq/patterns.h"
#include "qdq/quantized_types.h"
#include "qdq/target_gpu.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;

class QuantizedTypeNotOnGpu final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "quantized-type-not-on-gpu",
            "",
            "The model quantizes to FP8, FP4, MXFP8 or INT4 and the build's GPU (--gpu or the build log's device) has "
            "no kernels for that type",
            Severity::kWarning,
            "10.x-11.x",
            kNeedsOnnx,
            "the model must be quantized for the GPU (another type: a re-export), or built for a GPU that has the "
            "type"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        std::optional<TargetGpu> gpu = context.buildMode().gpu;
        if (!gpu)
        {
            gpu = gpuFromInputs(context.inputs);
        }
        if (!gpu || !gpu->known())
        {
            return;
        }
        for (const QuantizedTypeCount& count : countQuantizedTypes(graph))
        {
            const QuantizedTypeNeeds needs = needsOf(count.type);
            if (needs.minCcMajor == 0 || gpu->atLeast(needs.minCcMajor, needs.minCcMinor))
            {
                continue;
            }
            if (gpu->lowerBound)
            {
                continue; // sm80 kernels also run on an sm89 or sm90 GPU: the names cannot prove the type missing
            }
            report(context, *gpu, count, needs, sink);
        }
    }

private:
    void report(const Context& context, const TargetGpu& gpu, const QuantizedTypeCount& count,
                const QuantizedTypeNeeds& needs, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        const std::string label(quantizedTypeLabel(count.type));
        std::vector<std::string> nodes;
        Finding finding = makeFinding(info(), "");
        for (const QdqParameters& parameters : graph.qdq)
        {
            if (quantizedTypeOfQdq(graph, parameters.node) != count.type)
            {
                continue;
            }
            const OnnxNode& node = graph.nodes[parameters.node];
            nodes.push_back(node.name);
            if (finding.evidence.size() < 3)
            {
                finding.evidence.push_back(nodeEvidence(context, node, label + " " + node.opType));
            }
        }
        const std::string needed =
            std::to_string(needs.minCcMajor) + "." + std::to_string(needs.minCcMinor) + " or later";
        finding.message = "The model quantizes to " + label + " (" + std::to_string(count.nodes) +
                          " Q/DQ nodes: " + nameList(nodes, 3) + ") but the build targets " + gpu.describe() + "; " +
                          label + " needs compute capability " + needed + " (" + needs.gpuSource +
                          "). TensorRT has no " + label + " kernels on this GPU, so these layers cannot run in " +
                          label +
                          ": the build fails or they run in a float type with their Q/DQ as extra layers (which of "
                          "the two the documentation does not say).";
        finding.likely = needs.gpuGuess;
        finding.onnxNodes = std::move(nodes);
        finding.fix = "quantize this part to a type the GPU you build on has (see the support matrix named above), or "
                      "build on a GPU with compute capability " +
                      needed;
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeQuantizedTypeNotOnGpu()
{
    return std::make_unique<QuantizedTypeNotOnGpu>();
}

} // namespace qdq::rules
