// attention-scale-after-matmul: the attention scale is applied to the scores, `MatMul(Q, K) -> Div/Mul(scale) ->
// Softmax`, instead of to Q or K before the first MatMul. TensorRT's "Fused Attention" page: "TensorRT requires Q or
// K to be multiplied with (attention scale) or both Q and K to be multiplied with sqrt(attention scale) before going
// into IAttention or the first Batched Matrix Multiply (BMM) IMatrixMultiplyLayer for numeric stability and
// performance reasons." The page does not say what TensorRT builds otherwise: that the attention then stays unfused
// is a guess, and the finding says so.
#include "rules/attention_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace attention;

class AttentionScaleAfterMatmul final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "attention-scale-after-matmul",
            "",
            "The attention scale divides the scores after the first MatMul instead of multiplying Q or K before it, "
            "as TensorRT's fused attention requires",
            Severity::kWarning,
            "10.x",
            kNeedsOnnx,
            "moving the scale into Q or K changes which tensor the Q/DQ of Q or K quantize (their scales must be "
            "calibrated again); re-export with the scale applied to Q and K (torch's scaled_dot_product_attention "
            "exports sqrt(scale) on each)"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph* graph = context.graph();
        if (graph == nullptr)
        {
            return;
        }
        for (const Attention& attention : findAttentions(*graph))
        {
            for (const OnnxNode* op : attention.scoreOps)
            {
                if (scalingInput(*graph, *op) >= 0)
                {
                    report(context, attention, *op, sink);
                    break;
                }
            }
        }
    }

private:
    void report(const Context& context, const Attention& attention, const OnnxNode& scaling, FindingSink& sink) const
    {
        Finding finding = makeFinding(
            info(), scaling.opType + " " + scaling.name + " scales the attention scores after the first MatMul " +
                        attention.scores->name + " (before Softmax " + attention.softmax->name +
                        "): TensorRT's Fused Attention page requires the scale multiplied into Q or K (or its square "
                        "root into both) before the first MatMul. The page does not say what TensorRT builds "
                        "otherwise; that this attention then does not fuse is a guess.");
        finding.likely = true;
        finding.onnxNodes = {attention.scores->name, scaling.name, attention.softmax->name};
        finding.evidence.push_back(nodeEvidence(context, scaling, "scales the output of " + attention.scores->name));
        finding.fix = "apply the scale to Q or K before " + attention.scores->name +
                      " (or sqrt(scale) to both) and "
                      "remove " +
                      scaling.name + "; with Q/DQ on Q or K, quantize the scaled tensor (calibrate again)";
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeAttentionScaleAfterMatmul()
{
    return std::make_unique<AttentionScaleAfterMatmul>();
}

} // namespace qdq::rules
