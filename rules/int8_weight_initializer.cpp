// R33 int8-weight-initializer: a DequantizeLinear reads a pre-quantized INT8 (or INT4) initializer with no
// QuantizeLinear in front. TensorRT 10 takes such weights; the TensorRT 8.0-8.4 parsers want float weights with a
// Q/DQ pair.
#include "qdq/patterns.h"
#include "rules/rules.h"
#include "rules/weight_paths.h"

#include <cctype>
#include <cstdlib>

namespace qdq::rules
{

namespace
{

using namespace patterns;

//! Minor version from "8.5.2" (5), or -1 when absent.
int minorVersion(const std::string& version)
{
    auto dot = version.find('.');
    if (dot == std::string::npos || dot + 1 >= version.size() ||
        !std::isdigit(static_cast<unsigned char>(version[dot + 1])))
    {
        return -1;
    }
    return std::atoi(version.c_str() + dot + 1);
}

class Int8WeightInitializer final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "int8-weight-initializer",
            "R33",
            "A DequantizeLinear reads a pre-quantized INT8 initializer without a QuantizeLinear: accepted by "
            "TensorRT 10, rejected by the TensorRT 8.0-8.4 parsers",
            Severity::kInfo,
            "8.0-8.4 (8.5+ and 10.x accept it)",
            kNeedsOnnx,
            "a TensorRT version question, not a graph error: build with TensorRT 8.5 or later, or export a float "
            "weight with QuantizeLinear"};
        return kInfo;
    }

    static constexpr std::size_t kSitesShown = 3;

    //! The DQ nodes that read an INT8/INT4 initializer, with it.
    static std::vector<std::pair<const OnnxNode*, const OnnxConstant*>>
    quantizedInitializerReaders(const OnnxGraph& graph)
    {
        std::vector<std::pair<const OnnxNode*, const OnnxConstant*>> found;
        for (const auto& parameters : graph.qdq)
        {
            if (parameters.isQuantize)
            {
                continue;
            }
            const OnnxNode& dq = graph.nodes[parameters.node];
            if (dq.inputs.empty())
            {
                continue;
            }
            const OnnxConstant* constant = graph.constant(dq.inputs[0]);
            if (constant != nullptr &&
                (constant->dataType == OnnxDataType::kInt8 || constant->dataType == OnnxDataType::kInt4))
            {
                found.emplace_back(&dq, constant);
            }
        }
        return found;
    }

    //! What the TensorRT version the inputs name does with such nodes.
    static std::string versionVerdict(const std::string& version, int major, bool rejected, bool observedOnly)
    {
        std::string message;
        if (rejected)
        {
            message += "The inputs name TensorRT " + version +
                       ": its ONNX parser expects float weights followed by a Q/DQ pair and rejects these nodes.";
        }
        else if (observedOnly)
        {
            message += "The inputs name TensorRT " + version +
                       ": TensorRT 8.0-8.4 reject this form, a TensorRT 8.5.2 build was observed to accept it, and "
                       "TensorRT 10 documents it; it likely parses.";
        }
        else
        {
            message += std::string(major >= 10 ? "TensorRT " + version : "TensorRT 10") +
                       " accepts pre-quantized weights behind a DQ; the TensorRT 8.0-8.4 parsers do not (they expect "
                       "float weights with a Q/DQ pair)" +
                       (major == 0 ? ", and the inputs do not say which version builds this model." : ".");
        }
        return message;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        // The DQ nodes that read an INT8/INT4 initializer: first found, then described (a model may have 100,000).
        const auto found = quantizedInitializerReaders(graph);
        if (found.empty())
        {
            return;
        }
        std::vector<std::string> nodes;
        std::vector<std::string> sites;
        std::vector<Evidence> evidence;
        nodes.reserve(found.size());
        evidence.reserve(found.size());
        std::size_t weightCount = 0;
        for (const auto& [dqNode, constant] : found)
        {
            const OnnxNode& dq = *dqNode;
            const bool weight = weights::quantizesWeight(graph, dq);
            weightCount += weight ? 1 : 0;
            nodes.push_back(dq.name);
            if (sites.size() < kSitesShown) // the message names the first few; a model may have 100,000
            {
                std::vector<std::string> users;
                for (const OnnxNode* consumer : consumersOf(graph, dq.outputs.empty() ? "" : dq.outputs[0]))
                {
                    users.push_back(consumer->name);
                }
                sites.push_back(dq.name + " (" + constant->name + ", " +
                                std::string(onnxDataTypeName(constant->dataType)) +
                                (users.empty() ? "" : " -> " + nameList(users, 2)) + ")");
            }
            const std::string_view type = onnxDataTypeName(constant->dataType);
            std::string text;
            text.reserve(constant->name.size() + type.size() + 64);
            text.append("input ").append(constant->name).append(" is an ").append(type).append(" initializer ");
            weights::appendDims(text, constant->dims);
            text.append(" with no QuantizeLinear");
            evidence.push_back(nodeEvidence(context, dq, std::move(text)));
        }
        if (nodes.empty())
        {
            return;
        }
        // The TensorRT 8.0-8.4 parsers reject an INT8 initializer behind a DQ; a TensorRT 8.5.2 build log
        // (NVIDIA/TensorRT#3385) shows the parser taking one (ConstantInt8Validator), and TensorRT 10 documents it.
        const std::string version = context.inputs.trtVersion();
        const int major = context.inputs.trtMajor();
        const int minor = minorVersion(version);
        const bool rejected = major > 0 && (major < 8 || (major == 8 && minor >= 0 && minor < 5));
        const bool observedOnly = major == 8 && !rejected;
        std::string subject = weightCount == nodes.size() ? "weight" : "constant";
        std::string message =
            std::to_string(nodes.size()) + " DequantizeLinear node" + (nodes.size() == 1 ? "" : "s") +
            " read pre-quantized " + subject +
            " initializers with no QuantizeLinear in front: " + nameList(sites, kSitesShown) +
            (nodes.size() > kSitesShown ? " and " + std::to_string(nodes.size() - kSitesShown) + " more"
                                        : std::string()) +
            " (ONNX Runtime's QDQ default, or pre-quantized weights). ";
        message += versionVerdict(version, major, rejected, observedOnly);
        Finding finding = makeFinding(info(), message);
        finding.severity = rejected ? Severity::kError : Severity::kInfo;
        finding.likely = observedOnly;
        finding.onnxNodes = std::move(nodes);
        finding.evidence = std::move(evidence);
        finding.fix =
            rejected ? "re-export with float weights and a QuantizeLinear -> DequantizeLinear pair on each "
                       "weight (ONNX Runtime quantize_static: extra_options={\"AddQDQPairToWeight\": True}; "
                       "TensorRT 8.x also accepted a Q with scale 1.0 and the real scale on the DQ), or build "
                       "with TensorRT 10"
                     : "nothing to do for TensorRT 10; to build with TensorRT 8.0-8.4, re-export with float weights "
                       "and a Q/DQ pair (ONNX Runtime: extra_options={\"AddQDQPairToWeight\": True})";
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeInt8WeightInitializer()
{
    return std::make_unique<Int8WeightInitializer>();
}

} // namespace qdq::rules
