// R30 no-int8-implementation: the build failed with "Could not find any implementation for node X" on a layer that
// executes Q/DQ nodes (a quantized layer): the GPU or the TensorRT version has no INT8 kernel for that layer, its
// shape or its fusion (SM 7.5 and older lack INT8 kernels for some layers; DwConv + BN + Swish at the network end in
// 8.5.2).
#include "rules/rules.h"

#include "qdq/layer_names.h"
#include "qdq/patterns.h"

#include <cctype>

namespace qdq::rules
{

namespace
{

using namespace patterns;

class NoInt8Implementation final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "no-int8-implementation",
            "R30",
            "The build fails with \"Could not find any implementation for node\" on a quantized (Q/DQ-wrapped) layer",
            Severity::kError,
            "8.0-10.x",
            kNeedsOnnxOrEngine,
            "which Q/DQ to drop depends on the GPU the engine is built for and on the accuracy the model's owner "
            "accepts for that layer in float; `fix` does not know either"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        if (!context.inputs.buildLog)
        {
            return;
        }
        const BuildLog& log = *context.inputs.buildLog;
        static constexpr std::string_view kMarker = "Could not find any implementation for node ";
        for (const LogMessage& error : log.errors)
        {
            const std::size_t at = error.text.find(kMarker);
            if (at == std::string::npos)
            {
                continue;
            }
            std::string node = error.text.substr(at + kMarker.size());
            while (!node.empty() && (node.back() == '.' || node.back() == ')' || node.back() == ' '))
            {
                node.pop_back();
            }
            const LayerNameParts parts = parseLayerName(node);
            std::vector<std::string> qdqTokens;
            std::vector<std::string> onnxNodes;
            bool depthwise = false;
            bool swish = false;
            for (const auto& token : parts.tokens)
            {
                const bool isQdqToken = looksLikeQuantizeName(token) || looksLikeDequantizeName(token);
                if (isQdqToken)
                {
                    qdqTokens.push_back(token);
                }
                std::string lower;
                for (char c : token)
                {
                    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                }
                depthwise = depthwise || lower.find("dwconv") != std::string::npos ||
                            lower.find("depthwise") != std::string::npos;
                swish = swish || lower.find("sigmoid") != std::string::npos ||
                        lower.find("swish") != std::string::npos || lower.find("silu") != std::string::npos;
                const OnnxGraph* graph = context.graph();
                if (graph != nullptr && graph->findNode(token) != nullptr)
                {
                    onnxNodes.push_back(token);
                    // A node of the layer whose input a DequantizeLinear feeds is quantized too.
                    const OnnxNode& onnxNode = *graph->findNode(token);
                    for (const auto& input : onnxNode.inputs)
                    {
                        const OnnxNode* producer = input.empty() ? nullptr : producerOf(*graph, input);
                        if (producer != nullptr && isDequantize(*producer) && !isQdqToken)
                        {
                            qdqTokens.push_back(producer->name);
                        }
                    }
                }
            }
            if (qdqTokens.empty())
            {
                continue; // not a quantized layer: another cause than the INT8 kernels
            }
            std::string gpu;
            for (const auto& [key, value] : log.deviceInfo)
            {
                if (key.find("Compute Capability") != std::string::npos ||
                    key.find("Selected Device") != std::string::npos)
                {
                    gpu += (gpu.empty() ? "" : ", ") + key + " " + value;
                }
            }
            Finding finding = makeFinding(
                info(), "The build found no implementation for the quantized layer \"" + node + "\" (it executes " +
                            nameList(qdqTokens, 3) +
                            "): TensorRT has no INT8 kernel for this layer, its shape or its fusion on this GPU" +
                            (gpu.empty() ? std::string() : " (" + gpu + ")") +
                            ". GPUs of SM 7.5 and older lack INT8 kernels for some layers" +
                            (depthwise && swish ? "; a depthwise convolution with BN and Swish/SiLU is a known case "
                                                  "(TensorRT 8.5.2, at the end of the network)"
                                                : std::string()) +
                            ".");
            finding.onnxNodes = onnxNodes;
            finding.likely = !(depthwise && swish);
            Evidence evidence;
            evidence.file = log.sourcePath;
            evidence.line = error.line;
            evidence.field = "error";
            evidence.text = error.text.substr(at);
            finding.evidence.push_back(std::move(evidence));
            finding.fix =
                "remove the Q/DQ around this layer (its input DequantizeLinear and weight Q/DQ) so it runs in "
                "float, as the developer guide advises for GPUs without INT8 kernels for it; check its channel "
                "counts (INT8 kernels want multiples of 16)" +
                std::string(depthwise && swish ? "; for DwConv + BN + Swish at the network end on 8.5.2, "
                                                 "add an Identity after the pattern or upgrade TensorRT"
                                               : "");
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeNoInt8Implementation()
{
    return std::make_unique<NoInt8Implementation>();
}

} // namespace qdq::rules
