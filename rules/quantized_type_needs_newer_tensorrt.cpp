// quantized-type-needs-newer-tensorrt: the model quantizes to a type the build's TensorRT release cannot import
// (INT4 before 10.0, FP4 before 10.8, ModelOpt's MXFP8 ops before 10.12). Only where an input or --trt-version tells
// the version. Sources: TensorRT CHANGELOG.md (10.0.0 EA "Added support for INT4 quantization", 10.8.0 parser "Added
// support for FLOAT4E2M1 types for quantized networks", 10.12.0 parser "Added support for custom MXFP8 quantization
// operations"), Torch-TensorRT's quantization guide (NVFP4 requires TensorRT >= 10.8).
#include "qdq/patterns.h"
#include "qdq/quantized_types.h"
#include "rules/rules.h"

#include <cstdlib>

namespace qdq::rules
{

namespace
{

using namespace patterns;

class QuantizedTypeNeedsNewerTensorRt final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "quantized-type-needs-newer-tensorrt",
            "",
            "The model quantizes to a type the build's TensorRT release cannot import: INT4 before 10.0, FP4 before "
            "10.8, ModelOpt's MXFP8 ops before 10.12",
            Severity::kError,
            "8.x-10.11",
            kNeedsOnnx,
            "the build needs a newer TensorRT release, or the model another quantized type (a re-export)"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const SimulationOptions& mode = context.buildMode();
        int major = mode.trtMajor;
        int minor = mode.trtMinor;
        std::string source = mode.versionSource;
        if (major == 0 && context.inputs.trtMajor() > 0)
        {
            const std::string version = context.inputs.trtVersion();
            major = context.inputs.trtMajor();
            const auto dot = version.find('.');
            minor = dot == std::string::npos ? 0 : std::atoi(version.c_str() + dot + 1);
            source = "the inputs";
        }
        if (major == 0)
        {
            return; // the version is unknown: nothing to hold the types against
        }
        const OnnxGraph& graph = *context.graph();
        for (const QuantizedTypeCount& count : countQuantizedTypes(graph))
        {
            const QuantizedTypeNeeds needs = needsOf(count.type);
            if (needs.minTrtMajor == 0 || major > needs.minTrtMajor ||
                (major == needs.minTrtMajor && minor >= needs.minTrtMinor))
            {
                continue;
            }
            const std::string label(quantizedTypeLabel(count.type));
            const std::string needed = std::to_string(needs.minTrtMajor) + "." + std::to_string(needs.minTrtMinor);
            std::vector<std::string> nodes;
            Finding finding = makeFinding(info(), "");
            for (const QdqParameters& parameters : graph.qdq)
            {
                if (quantizedTypeOfQdq(graph, parameters.node) == count.type)
                {
                    const OnnxNode& node = graph.nodes[parameters.node];
                    nodes.push_back(node.name);
                    if (finding.evidence.size() < 3)
                    {
                        finding.evidence.push_back(nodeEvidence(context, node, label + " " + node.opType));
                    }
                }
            }
            finding.message = "The model quantizes to " + label + " (" + std::to_string(count.nodes) +
                              " Q/DQ nodes: " + nameList(nodes, 3) + ") but the build uses TensorRT " +
                              std::to_string(major) + "." + std::to_string(minor) +
                              (source.empty() ? "" : " (from " + source + ")") + "; " + label + " came with TensorRT " +
                              needed + " (" + needs.trtSource +
                              "), so this release's ONNX parser cannot import these nodes.";
            finding.onnxNodes = std::move(nodes);
            finding.fix = "build with TensorRT " + needed +
                          " or later, or quantize these nodes to a type this "
                          "release has (INT8)";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeQuantizedTypeNeedsNewerTensorRt()
{
    return std::make_unique<QuantizedTypeNeedsNewerTensorRt>();
}

} // namespace qdq::rules
