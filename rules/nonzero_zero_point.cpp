// R01 nonzero-zero-point: a Q/DQ with an asymmetric zero point (uint8, or any non-zero value). TensorRT supports
// symmetric quantization only; the ONNX parser stops at such a node.
#include "qdq/patterns.h"
#include "rules/rules.h"
#include "rules/weight_paths.h"

#include <algorithm>
#include <map>
#include <optional>
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

class NonzeroZeroPoint final : public ModelOrBuildLogRule
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
            "these quantizers cannot be made symmetric by an edit: a weight's stored values would need quantizing "
            "again, and a Q that is a network output or feeds something other than its DQs (an integer op of ONNX "
            "Runtime's QOperator format, which quantized-op-not-importable rewrites first) would change what its "
            "readers get; re-quantize the model, or run fix again once those ops are rewritten"};
        return kInfo;
    }

private:
    //! Build-log lines about zero points (the parser's `Non-zero zero point is not supported` assertion).
    static std::vector<Evidence> logEvidence(const Context& context)
    {
        return buildLogErrorEvidence(context, mentionsZeroPoint);
    }

    //! One asymmetric site: a Q with the DQs it feeds, or a lone Q or DQ.
    struct Site
    {
        std::vector<const OnnxNode*> nodes;
        std::string text; //!< "Q -> DQ (uint8 zero point [128])"
        bool unsignedZeroPoint = false;
    };

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        // Sites: a Q -> DQ pair is one site (they share the zero point in every exporter); a lone Q or DQ is its own.
        std::set<std::size_t> done;
        std::vector<Site> sites;
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
            Site site{{&node}, {}, parameters.zeroPointType == OnnxDataType::kUint8};
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
                    site.nodes.push_back(partner);
                }
            }
            for (const OnnxNode* member : site.nodes)
            {
                site.text += (site.text.empty() ? "" : " -> ") + member->name;
            }
            site.text += " (" + problem + ")";
            sites.push_back(std::move(site));
        }
        if (sites.empty())
        {
            return;
        }
        // The activation quantizers fix can make symmetric (each group of Q/DQ reading one scale and zero point
        // together), and the rest.
        std::vector<FixEdit> edits = symmetricEdits(graph, sites);
        std::set<std::string> converted;
        for (const auto& edit : edits)
        {
            converted.insert(edit.nodes.begin(), edit.nodes.end());
        }
        std::vector<const Site*> fixable;
        std::vector<const Site*> left;
        for (const auto& site : sites)
        {
            const bool all = std::all_of(site.nodes.begin(), site.nodes.end(),
                                         [&](const OnnxNode* node) { return converted.count(node->name) != 0; });
            (all ? fixable : left).push_back(&site);
        }
        if (!fixable.empty())
        {
            Finding finding = siteFinding(context, fixable);
            finding.edits = std::move(edits);
            finding.fix = "make the activation quantizers reading zero points " + zeroPointNames(fixable) +
                          " symmetric INT8 over the range each has: zero point int8 0 and scale x max(|qmin - zero "
                          "point|, |qmax - zero point|) / 127 (fix does this; it is the scale ONNX Runtime's symmetric "
                          "MinMax calibration gives for the same statistics, and a range on one side of zero, after a "
                          "Relu, gets half the resolution), or re-export with symmetric signed INT8 quantization" +
                          exporterAdvice(fixable) +
                          ". A quantized constant that is no weight (an Add's bias) becomes the float values its "
                          "DequantizeLinear computes";
            sink.add(std::move(finding));
        }
        if (!left.empty())
        {
            Finding finding = siteFinding(context, left);
            finding.fix = "re-export with symmetric signed INT8 quantization: zero points " + zeroPointNames(left) +
                          " must be int8 zeros" + exporterAdvice(left) +
                          ". Recalibrate: a symmetric range is not the asymmetric one shifted";
            sink.add(std::move(finding));
        }
    }

    static std::string zeroPointNames(const std::vector<const Site*>& sites)
    {
        std::vector<std::string> zeroPoints;
        for (const Site* site : sites)
        {
            for (const OnnxNode* member : site->nodes)
            {
                if (std::find(zeroPoints.begin(), zeroPoints.end(), member->inputs[2]) == zeroPoints.end())
                {
                    zeroPoints.push_back(member->inputs[2]);
                }
            }
        }
        return nameList(zeroPoints, 4);
    }

    Finding siteFinding(const Context& context, const std::vector<const Site*>& sites) const
    {
        const OnnxGraph& graph = *context.graph();
        std::vector<std::string> texts;
        Finding finding = makeFinding(info(), "");
        for (const Site* site : sites)
        {
            texts.push_back(site->text);
            for (const OnnxNode* member : site->nodes)
            {
                finding.onnxNodes.push_back(member->name);
                finding.evidence.push_back(
                    nodeEvidence(context, *member,
                                 "zero point " + member->inputs[2] + ": " + describe(*graph.qdqOf(member->index))));
            }
        }
        finding.message = std::to_string(sites.size()) + (sites.size() == 1 ? " Q/DQ site has" : " Q/DQ sites have") +
                          " an asymmetric zero point: " + nameList(texts, 4) +
                          ". TensorRT supports symmetric INT8 quantization only (zero point 0, int8); the ONNX parser "
                          "rejects these nodes (`Non-zero zero point is not supported`).";
        for (auto& line : logEvidence(context))
        {
            finding.evidence.push_back(line);
        }
        return finding;
    }

    static std::string exporterAdvice(const std::vector<const Site*>& sites)
    {
        const bool anyUnsigned =
            std::any_of(sites.begin(), sites.end(), [](const Site* site) { return site->unsignedZeroPoint; });
        return std::string(anyUnsigned ? " (PyTorch: qint8 with torch.per_tensor_symmetric / per_channel_symmetric "
                                         "instead of the default quint8 affine observer; ONNX Runtime: "
                                         "activation_type=QInt8, extra_options={\"ActivationSymmetric\": True})"
                                       : "") +
               "; NVIDIA ModelOpt and pytorch-quantization export symmetric Q/DQ by default";
    }

    //! A DQ of a constant that no reader takes as a weight (the bias of an Add or Mul, as ONNX Runtime quantizes a
    //! MatMul's bias in transformers) becomes a float initializer holding what the DQ computes, (q - zero point) x
    //! scale: exact, and nothing in TensorRT fuses a quantized bias. A weight (input 1 of a Conv, ConvTranspose, Gemm
    //! or MatMul) keeps its DQ: it must stay INT8 for its op to run INT8, so its values need quantizing again.
    static std::optional<FixEdit> floatConstantEdit(const OnnxGraph& graph, const OnnxNode& node)
    {
        if (!isDequantize(node) || node.inputs.empty() || node.outputs.empty() ||
            graph.constant(node.inputs[0]) == nullptr || isGraphOutput(graph, node.outputs[0]))
        {
            return std::nullopt;
        }
        const auto readers = consumersOf(graph, node.outputs[0]);
        for (const OnnxNode* reader : readers)
        {
            if (isWeighted(graph, *reader) && reader->inputs.size() > 1 && reader->inputs[1] == node.outputs[0])
            {
                return std::nullopt;
            }
        }
        if (readers.empty())
        {
            return std::nullopt;
        }
        FixEdit edit;
        edit.kind = FixEdit::Kind::kFloatBias;
        edit.nodes = {node.name};
        edit.tensor = node.outputs[0];
        return edit;
    }

    //! One symmetric-int8 edit per group of asymmetric Q/DQ reading the same scale and zero-point tensors, when the
    //! group carries an activation: each Q of it is read by DQs of the group only (not a graph output), each DQ reads
    //! a Q of the group, and the scale and zero point are per-tensor constants. A DQ of a constant (stored weights)
    //! would need its data quantized again and is left to the user.
    static std::vector<FixEdit> symmetricEdits(const OnnxGraph& graph, const std::vector<Site>& sites)
    {
        std::map<std::pair<std::string, std::string>, std::vector<std::uint32_t>> groups;
        std::vector<std::pair<std::string, std::string>> order;
        for (const auto& site : sites)
        {
            for (const OnnxNode* node : site.nodes)
            {
                auto key = std::make_pair(std::string(node->inputs[1]), std::string(node->inputs[2]));
                auto [it, inserted] = groups.try_emplace(key);
                if (inserted)
                {
                    order.push_back(key);
                }
            }
        }
        // Every Q/DQ reading a group's tensors belongs to it, asymmetric site or not (they share the values).
        for (const auto& parameters : graph.qdq)
        {
            const OnnxNode& node = graph.nodes[parameters.node];
            if (node.inputs.size() < 3)
            {
                continue;
            }
            auto it = groups.find({std::string(node.inputs[1]), std::string(node.inputs[2])});
            if (it != groups.end())
            {
                it->second.push_back(static_cast<std::uint32_t>(parameters.node));
            }
        }
        std::vector<FixEdit> edits;
        for (const auto& key : order)
        {
            const std::vector<std::uint32_t>& members = groups[key];
            auto inGroup = [&](const OnnxNode* node)
            { return node != nullptr && std::find(members.begin(), members.end(), node->index) != members.end(); };
            bool convertible = true;
            for (std::uint32_t index : members)
            {
                const OnnxNode& node = graph.nodes[index];
                const QdqParameters* parameters = graph.qdqOf(index);
                convertible = convertible && parameters != nullptr && parameters->scaleIsConstant &&
                              parameters->scale.size() == 1 && parameters->zeroPointIsConstant &&
                              parameters->zeroPoint.size() == 1 && !parameters->outputDtype &&
                              (parameters->zeroPointType == OnnxDataType::kUint8 ||
                               parameters->zeroPointType == OnnxDataType::kInt8);
                if (!convertible)
                {
                    break;
                }
                if (isQuantize(node))
                {
                    const auto readers = consumersOf(graph, node.outputs[0]);
                    convertible = !isGraphOutput(graph, node.outputs[0]) && !readers.empty() &&
                                  std::all_of(readers.begin(), readers.end(), inGroup);
                }
                else
                {
                    convertible = inGroup(producerOf(graph, node.inputs[0]));
                }
                if (!convertible)
                {
                    break;
                }
            }
            if (!convertible)
            {
                for (std::uint32_t index : members)
                {
                    if (std::optional<FixEdit> edit = floatConstantEdit(graph, graph.nodes[index]))
                    {
                        edits.push_back(std::move(*edit));
                    }
                }
                continue;
            }
            FixEdit edit;
            edit.kind = FixEdit::Kind::kSymmetricInt8;
            edit.tensor = key.second;
            for (std::uint32_t index : members)
            {
                edit.nodes.push_back(graph.nodes[index].name);
            }
            edit.scaleReason = "the range of the asymmetric quantizer, as a symmetric one";
            edits.push_back(std::move(edit));
        }
        return edits;
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

    void checkLog(const Context& context, FindingSink& sink) const override
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
