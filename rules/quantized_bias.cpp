// R32 quantized-bias: an INT32 bias behind a DequantizeLinear (ONNX Runtime's QuantizeBias default).
#include "qdq/patterns.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;

class QuantizedBias final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"quantized-bias", "R32",
            "A Conv/Gemm bias is an INT32 initializer behind a DequantizeLinear; TensorRT wants a float bias",
            Severity::kError, "8.0-10.x", kNeedsOnnx};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& node : graph.nodes)
        {
            if ((node.opType != "Conv" && node.opType != "Gemm" && node.opType != "ConvTranspose")
                || node.inputs.size() < 3 || node.inputs[2].empty())
            {
                continue;
            }
            const OnnxNode* dq = producerOf(graph, node.inputs[2]);
            if (dq == nullptr || !isDequantize(*dq) || dq->inputs.empty())
            {
                continue;
            }
            const OnnxConstant* bias = graph.constant(dq->inputs[0]);
            if (bias == nullptr || bias->dataType != OnnxDataType::kInt32)
            {
                continue;
            }
            Finding finding = makeFinding(info(), "The bias of " + node.opType + " " + node.name + " is the INT32 "
                    "initializer " + bias->name + " behind DequantizeLinear " + dq->name + ". TensorRT expects a float "
                    "bias and derives the bias scale itself (weight scale x input scale); the ONNX parser of TensorRT "
                    "8.x rejects this input.");
            finding.onnxNodes = {node.name, dq->name};
            finding.evidence.push_back(nodeEvidence(context, *dq, "input " + bias->name + " is "
                    + std::string(onnxDataTypeName(bias->dataType)) + ", feeding input 2 (bias) of " + node.name));
            finding.fix = "re-quantize with ONNX Runtime extra_options={\"QuantizeBias\": False}, or fold " + dq->name
                + " into a float initializer (" + bias->name + " x its scale) connected to " + node.name + " input 2";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeQuantizedBias()
{
    return std::make_unique<QuantizedBias>();
}

} // namespace qdq::rules
