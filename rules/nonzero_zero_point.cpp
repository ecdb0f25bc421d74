// R01 nonzero-zero-point: a Q/DQ with an asymmetric zero point (uint8, or any non-zero value). TensorRT supports
// symmetric quantization only; the ONNX parser stops at such a node.
#include "qdq/patterns.h"
#include "rules/rules.h"
#include "rules/weight_paths.h"

#include <algorithm>
#include <set>

namespace qdq::rules
{

namespace
{

using namespace patterns;

bool mentionsZeroPoint(const std::string& text)
{
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return lower.find("zero point") != std::string::npos || lower.find("zeropoint") != std::string::npos ||
           lower.find("zero_point") != std::string::npos || lower.find("shiftisallzeros") != std::string::npos;
}

class NonzeroZeroPoint final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "nonzero-zero-point",
            "R01",
            "A QuantizeLinear/DequantizeLinear has a uint8 or non-zero zero point; TensorRT supports symmetric INT8 "
            "only (zero point 0)",
            Severity::kError,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsModelValues,
            "new symmetric scales (zero point 0) come from calibration data: re-quantize the model"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        if (context.graph() != nullptr)
        {
            checkGraph(context, sink);
        }
        else
        {
            checkLog(context, sink);
        }
    }

private:
    //! Build-log lines about zero points (the parser's `Non-zero zero point is not supported` assertion).
    static std::vector<Evidence> logEvidence(const Context& context)
    {
        return buildLogErrorEvidence(context, mentionsZeroPoint);
    }

    void checkGraph(const Context& context, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        // Sites: a Q -> DQ pair is one site (they share the zero point in every exporter); a lone Q or DQ is its own.
        std::set<std::size_t> done;
        std::vector<std::string> nodes;
        std::vector<std::string> zeroPoints;
        std::vector<std::string> sites;
        std::vector<Evidence> evidence;
        bool anyUnsigned = false;
        for (const auto& parameters : graph.qdq)
        {
            if (done.count(parameters.node) > 0 || !parameters.hasZeroPoint)
            {
                continue;
            }
            const OnnxNode& node = graph.nodes[parameters.node];
            std::string problem = describe(parameters);
            if (problem.empty())
            {
                continue;
            }
            done.insert(parameters.node);
            anyUnsigned = anyUnsigned || parameters.zeroPointType == OnnxDataType::kUint8;
            std::vector<const OnnxNode*> site = {&node};
            // Pair the Q with the DQ it feeds (or the DQ with its Q) when that one has the same problem.
            std::vector<const OnnxNode*> partners;
            if (isQuantize(node) && !node.outputs.empty())
            {
                partners = consumersOf(graph, node.outputs[0]);
            }
            else if (isDequantize(node) && !node.inputs.empty())
            {
                if (const OnnxNode* producer = producerOf(graph, node.inputs[0]))
                {
                    partners.push_back(producer);
                }
            }
            for (const OnnxNode* partner : partners)
            {
                const QdqParameters* other = graph.qdqOf(partner->index);
                if (other != nullptr && other->isQuantize != parameters.isQuantize && done.count(partner->index) == 0 &&
                    other->hasZeroPoint && !describe(*other).empty())
                {
                    done.insert(partner->index);
                    site.push_back(partner);
                }
            }
            std::string siteText;
            for (const OnnxNode* member : site)
            {
                nodes.push_back(member->name);
                siteText += (siteText.empty() ? "" : " -> ") + member->name;
                const QdqParameters* memberParameters = graph.qdqOf(member->index);
                evidence.push_back(nodeEvidence(
                    context, *member, "zero point " + member->inputs[2] + ": " + describe(*memberParameters)));
                if (std::find(zeroPoints.begin(), zeroPoints.end(), member->inputs[2]) == zeroPoints.end())
                {
                    zeroPoints.push_back(member->inputs[2]);
                }
            }
            sites.push_back(siteText + " (" + problem + ")");
        }
        if (sites.empty())
        {
            return;
        }
        Finding finding = makeFinding(
            info(), std::to_string(sites.size()) + (sites.size() == 1 ? " Q/DQ site has" : " Q/DQ sites have") +
                        " an asymmetric zero point: " + nameList(sites, 4) +
                        ". TensorRT supports symmetric INT8 quantization only (zero point 0, int8); the ONNX parser "
                        "rejects these nodes (`Non-zero zero point is not supported`).");
        finding.onnxNodes = std::move(nodes);
        finding.evidence = std::move(evidence);
        for (auto& line : logEvidence(context))
        {
            finding.evidence.push_back(line);
        }
        finding.fix =
            "re-export with symmetric signed INT8 quantization: zero points " + nameList(zeroPoints, 4) +
            " must be int8 zeros" +
            (anyUnsigned ? " (PyTorch: qint8 with torch.per_tensor_symmetric / per_channel_symmetric instead of the "
                           "default quint8 affine observer; ONNX Runtime: activation_type=QInt8, "
                           "extra_options={\"ActivationSymmetric\": True})"
                         : "") +
            "; NVIDIA ModelOpt and pytorch-quantization export symmetric Q/DQ by default. Recalibrate: a symmetric "
            "range is not the asymmetric one shifted";
        sink.add(std::move(finding));
    }

    //! What is wrong with a zero point, or "" when it is a symmetric int8 zero.
    static std::string describe(const QdqParameters& parameters)
    {
        if (!parameters.hasZeroPoint)
        {
            return {};
        }
        bool nonZero = std::any_of(parameters.zeroPoint.begin(), parameters.zeroPoint.end(),
                                   [](double value) { return value != 0.0; });
        if (parameters.zeroPointType == OnnxDataType::kUint8)
        {
            return nonZero ? "uint8 zero point " + weights::formatValues(parameters.zeroPoint)
                           : "uint8 zero point (unsigned INT8 range)";
        }
        if (nonZero)
        {
            return std::string(onnxDataTypeName(parameters.zeroPointType)) + " zero point " +
                   weights::formatValues(parameters.zeroPoint);
        }
        return {};
    }

    void checkLog(const Context& context, FindingSink& sink) const
    {
        auto lines = logEvidence(context);
        if (lines.empty())
        {
            return;
        }
        Finding finding =
            makeFinding(info(), "The TensorRT build log reports a zero-point error (\"" + lines.front().text +
                                    "\"): a Q/DQ node of the model has a non-zero or uint8 zero point.");
        finding.evidence = lines;
        finding.fix = "re-export the model with symmetric signed INT8 Q/DQ (zero point 0, int8); run qdq-doctor on the "
                      "ONNX model to list the nodes";
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeNonzeroZeroPoint()
{
    return std::make_unique<NonzeroZeroPoint>();
}

} // namespace qdq::rules
