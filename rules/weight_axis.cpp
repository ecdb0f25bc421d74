// R04 weight-axis: a per-channel weight Q/DQ whose axis is not the weighted op's output-channel axis, or whose scale
// length does not match the weight dimension on that axis. ConvTranspose is version-dependent.
#include "qdq/patterns.h"
#include "rules/rules.h"
#include "rules/weight_paths.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;

class WeightAxis final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "weight-axis",
            "R04",
            "A per-channel weight Q/DQ uses an axis other than the output-channel axis of its Conv/Gemm/MatMul (or a "
            "scale length that does not match it); ConvTranspose axis support is version-dependent",
            Severity::kWarning,
            "8.0-10.x (ConvTranspose: version-dependent)",
            kNeedsOnnx | kReadsCorrelation | kReadsModelValues,
            "the weight quantizer must be re-exported along the output-channel axis (its scales come from the weights "
            "per channel)"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& node : graph.nodes)
        {
            if (!isWeighted(graph, node) || node.inputs.size() < 2)
            {
                continue;
            }
            // Only a DQ feeding the op directly: with transforms in between the axis refers to another layout
            // (weight-qdq-not-foldable reports those).
            const OnnxNode* dq = producerOf(graph, node.inputs[1]);
            if (dq == nullptr || !isDequantize(*dq))
            {
                continue;
            }
            const OnnxNode* q = nullptr;
            const OnnxConstant* weight = weights::weightConstant(graph, *dq, &q);
            if (node.opType == "ConvTranspose")
            {
                checkConvTranspose(context, node, *dq, q, weight, sink);
            }
            else
            {
                checkOutputAxis(context, node, *dq, q, weight, sink);
            }
        }
    }

private:
    struct PerChannel
    {
        const OnnxNode* node = nullptr;
        const QdqParameters* parameters = nullptr;
        std::int64_t axis = 0;
    };

    //! The per-channel (more than one scale value, not block-quantized) nodes among the weight Q and DQ.
    static std::vector<PerChannel> perChannelNodes(const OnnxGraph& graph, const OnnxNode& dq, const OnnxNode* q,
                                                   std::size_t rank)
    {
        std::vector<PerChannel> result;
        for (const OnnxNode* member : {q, &dq})
        {
            if (member == nullptr)
            {
                continue;
            }
            const QdqParameters* parameters = graph.qdqOf(member->index);
            if (parameters == nullptr || parameters->scaleElements <= 1 || parameters->blockSize)
            {
                continue;
            }
            result.push_back({member, parameters, weights::effectiveAxis(*parameters, rank)});
        }
        return result;
    }

    static std::string axisText(const PerChannel& entry)
    {
        return entry.parameters->axis ? "axis " + std::to_string(*entry.parameters->axis)
                                      : "no axis attribute (ONNX default axis 1)";
    }

    static std::string layoutText(const OnnxNode& node, std::int64_t expected)
    {
        if (node.opType == "Conv")
        {
            return "Conv weights are [K, C/group, kH, kW]: output channels K on axis 0";
        }
        if (node.opType == "Gemm")
        {
            return node.intAttribute("transB").value_or(0) != 0
                       ? "Gemm with transB=1 takes B as [N, K] (PyTorch nn.Linear): output channels on axis 0"
                       : "Gemm with transB=0 takes B as [K, N]: output channels on axis 1";
        }
        return "MatMul's constant B is [..., K, N]: output channels on the last axis (" + std::to_string(expected) +
               ")";
    }

    void attachEngine(const Context& context, const OnnxNode& node, Finding& finding) const
    {
        auto layers = layersOf(context, node.name);
        finding.engineLayers = layerNames(context, layers);
        const EnginePlan* plan = context.engine();
        for (std::size_t layer : layers)
        {
            if (plan != nullptr && layer < plan->layers.size() && plan->layers[layer].weightsPrecision &&
                !isQuantized(*plan->layers[layer].weightsPrecision))
            {
                finding.evidence.push_back(layerEvidence(
                    context, layer, "Weights.Type",
                    "weights are " + std::string(precisionName(*plan->layers[layer].weightsPrecision)) + ", not INT8"));
            }
        }
    }

    void checkOutputAxis(const Context& context, const OnnxNode& node, const OnnxNode& dq, const OnnxNode* q,
                         const OnnxConstant* weight, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        const std::size_t rank = weight != nullptr ? weight->dims.size() : 0;
        auto expected = weights::expectedWeightAxis(node, rank);
        if (!expected)
        {
            return;
        }
        std::vector<std::string> problems;
        std::vector<std::string> nodes;
        Finding finding = makeFinding(info(), "");
        bool lengthMismatch = false;
        for (const auto& entry : perChannelNodes(graph, dq, q, rank))
        {
            bool wrongAxis = entry.axis != *expected;
            bool wrongLength = false;
            std::string lengthText;
            if (weight != nullptr && entry.axis >= 0 && static_cast<std::size_t>(entry.axis) < rank &&
                weight->dims[static_cast<std::size_t>(entry.axis)] != entry.parameters->scaleElements)
            {
                wrongLength = true;
                lengthText = "its " + std::to_string(entry.parameters->scaleElements) + " scale values do not match " +
                             "dimension " + std::to_string(entry.axis) + " of " + weight->name + " " +
                             weights::formatDims(weight->dims);
            }
            else if (weight != nullptr && rank > 0 && (entry.axis < 0 || static_cast<std::size_t>(entry.axis) >= rank))
            {
                wrongLength = true;
                lengthText = "axis " + std::to_string(entry.axis) + " is outside the rank-" + std::to_string(rank) +
                             " weight " + weight->name;
            }
            if (!wrongAxis && !wrongLength)
            {
                continue;
            }
            lengthMismatch = lengthMismatch || wrongLength;
            std::string text = entry.node->name + " uses " + axisText(entry);
            if (wrongAxis)
            {
                text += " instead of axis " + std::to_string(*expected);
            }
            if (wrongLength)
            {
                text += (wrongAxis ? "; " : ": ") + lengthText;
            }
            problems.push_back(text);
            nodes.push_back(entry.node->name);
            finding.evidence.push_back(nodeEvidence(
                context, *entry.node,
                axisText(entry) + ", scale " + entry.node->inputs[1] + " with " +
                    std::to_string(entry.parameters->scaleElements) + " values" +
                    (weight != nullptr ? ", weight " + weight->name + " " + weights::formatDims(weight->dims) : "")));
        }
        if (problems.empty())
        {
            return;
        }
        finding.message =
            "The per-channel weight quantization of " + node.opType + " " + node.name +
            " is not on its output-channel axis: " + nameList(problems, 2) + ". " + layoutText(node, *expected) +
            "; TensorRT folds per-channel weight scales only along that axis, so the weight cannot be quantized as "
            "intended (wrong results, a build error, or float weights).";
        if (lengthMismatch)
        {
            finding.severity = Severity::kError;
        }
        finding.onnxNodes = {node.name};
        finding.onnxNodes.insert(finding.onnxNodes.end(), nodes.begin(), nodes.end());
        std::string channels = weight != nullptr && static_cast<std::size_t>(*expected) < weight->dims.size()
                                   ? " with " + std::to_string(weight->dims[static_cast<std::size_t>(*expected)]) +
                                         " scale values (one per "
                                         "output channel)"
                                   : std::string();
        finding.fix = "re-export the weight quantizer of " + node.name + " (" + nameList(nodes, 2) +
                      ") with axis=" + std::to_string(*expected) + channels + ", or use a per-tensor weight scale";
        attachEngine(context, node, finding);
        sink.add(std::move(finding));
    }

    void checkConvTranspose(const Context& context, const OnnxNode& node, const OnnxNode& dq, const OnnxNode* q,
                            const OnnxConstant* weight, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        const std::size_t rank = weight != nullptr ? weight->dims.size() : 0;
        auto entries = perChannelNodes(graph, dq, q, rank);
        if (entries.empty())
        {
            return; // per-tensor: the portable choice
        }
        const int major = context.inputs.trtMajor();
        const bool trt8 = major > 0 && major < 10;
        bool anyOffAxis0 = false;
        bool lengthMismatch = false;
        std::vector<std::string> nodes;
        std::vector<std::string> problems;
        Finding finding = makeFinding(info(), "");
        for (const auto& entry : entries)
        {
            nodes.push_back(entry.node->name);
            std::string text = entry.node->name + " uses " + axisText(entry);
            if (entry.axis != 0)
            {
                anyOffAxis0 = true;
            }
            if (weight != nullptr && entry.axis >= 0 && static_cast<std::size_t>(entry.axis) < rank &&
                weight->dims[static_cast<std::size_t>(entry.axis)] != entry.parameters->scaleElements)
            {
                lengthMismatch = true;
                text += " but its " + std::to_string(entry.parameters->scaleElements) +
                        " scale values do not match dimension " + std::to_string(entry.axis) + " of " + weight->name +
                        " " + weights::formatDims(weight->dims);
            }
            problems.push_back(text);
            finding.evidence.push_back(nodeEvidence(
                context, *entry.node,
                axisText(entry) + ", scale " + entry.node->inputs[1] + " with " +
                    std::to_string(entry.parameters->scaleElements) + " values" +
                    (weight != nullptr ? ", weight " + weight->name + " " + weights::formatDims(weight->dims) : "")));
        }
        if (!anyOffAxis0 && !lengthMismatch && trt8)
        {
            return; // axis 0 is what the TensorRT 8.x deconvolution kernels assume
        }
        std::string version = major > 0 ? "TensorRT " + context.inputs.trtVersion() : "an unknown TensorRT version";
        std::string message = "ConvTranspose " + node.name + " has per-channel weight quantization (" +
                              nameList(problems, 2) + "). ConvTranspose weights are [C_in, C_out/group, kH, kW]; ";
        if (anyOffAxis0)
        {
            message += "NVIDIA stated that TensorRT 8.x deconvolution kernels assume per-input-channel (axis 0) weight "
                       "scales and do not support per-output-channel ones, so this weight likely does not quantize as "
                       "intended. Support is version-dependent (later exporters write axis 1); the inputs name " +
                       version + ".";
            finding.severity = trt8 || major == 0 ? Severity::kWarning : Severity::kInfo;
        }
        else
        {
            message += "axis 0 matches what TensorRT 8.x deconvolution kernels assume, but support is "
                       "version-dependent (later exporters write axis 1) and the inputs name " +
                       version + "; per-tensor ConvTranspose weights are the portable choice.";
            finding.severity = Severity::kInfo;
        }
        if (lengthMismatch)
        {
            finding.severity = Severity::kError;
        }
        finding.message = message;
        finding.likely = true;
        finding.onnxNodes = {node.name};
        finding.onnxNodes.insert(finding.onnxNodes.end(), nodes.begin(), nodes.end());
        finding.fix =
            "quantize the ConvTranspose weight of " + node.name + " per tensor (one scale in " + nameList(nodes, 2) +
            ", the largest channel scale)" +
            (anyOffAxis0 ? "; if you must keep per-channel scales on TensorRT 8.x, use axis=0" : std::string());
        attachEngine(context, node, finding);
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeWeightAxis()
{
    return std::make_unique<WeightAxis>();
}

} // namespace qdq::rules
