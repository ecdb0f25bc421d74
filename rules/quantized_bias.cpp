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
        static const RuleInfo kInfo{
            "quantized-bias",
            "R32",
            "A Conv/Gemm bias is an INT32 initializer behind a DequantizeLinear; TensorRT wants a float bias",
            Severity::kError,
            "8.0-10.x",
            kNeedsOnnx,
            ""};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        // One finding for the model: ONNX Runtime quantizes every bias the same way, so the fix is one setting.
        Finding finding = makeFinding(info(), "");
        std::vector<std::string> consumers;
        std::vector<std::string> biases;
        for (const auto& node : graph.nodes)
        {
            if ((node.opType != "Conv" && node.opType != "Gemm" && node.opType != "ConvTranspose") ||
                node.inputs.size() < 3 || node.inputs[2].empty())
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
            consumers.push_back(node.name);
            biases.push_back(bias->name);
            FixEdit edit;
            edit.kind = FixEdit::Kind::kFloatBias;
            edit.nodes = {dq->name};
            edit.tensor = dq->outputs.empty() ? std::string() : std::string(dq->outputs[0]);
            finding.edits.push_back(std::move(edit));
            finding.onnxNodes.push_back(node.name);
            finding.onnxNodes.push_back(dq->name);
            finding.evidence.push_back(nodeEvidence(context, *dq,
                                                    "input " + bias->name + " is " +
                                                        std::string(onnxDataTypeName(bias->dataType)) +
                                                        ", feeding input 2 (bias) of " + node.name));
        }
        if (consumers.empty())
        {
            return;
        }
        finding.message =
            "The bias of " + std::to_string(consumers.size()) + " weighted op(s) (" + nameList(consumers, 4) +
            ") is an INT32 initializer behind a DequantizeLinear (" + nameList(biases, 2) +
            "). TensorRT expects a float bias and derives the bias scale itself (weight scale x input scale); the "
            "ONNX parser of TensorRT 8.x rejects this input.";
        finding.fix =
            "re-quantize with ONNX Runtime quantize_static(..., extra_options={\"QuantizeBias\": False}), "
            "or fold each bias DequantizeLinear into a float initializer (INT32 bias x its scale) connected to "
            "input 2 of its Conv/Gemm";
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeQuantizedBias()
{
    return std::make_unique<QuantizedBias>();
}

} // namespace qdq::rules
