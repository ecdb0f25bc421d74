// qdq-on-attention-scores: a Q/DQ pair between the first attention MatMul and the Softmax (on the scores), in a
// quantized attention. TensorRT's developer guide (MHA fusion, quoted in NVIDIA/TensorRT#2981 and #4167) names the
// places of the Q/DQ an INT8 fused MHA wants: "before the first batched matrix multiplication, after softmax, and
// after the second batched matrix multiplication"; ModelOpt's FP8 attention recipe (NVIDIA/Model-Optimizer PR #1289)
// puts none on the scores either. Neither says that a pair on the scores stops the fusion: the finding is a guess
// (info), and fix makes no edit for it.
#include "rules/attention_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace attention;

class QdqOnAttentionScores final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "qdq-on-attention-scores",
            "",
            "A quantized attention quantizes its scores between the first MatMul and the Softmax, where the documented "
            "fused-attention placements put no Q/DQ",
            Severity::kInfo,
            "8.6-10.x",
            kNeedsOnnx,
            "no source says the pair stops the fusion: remove it only when the engine shows the attention unfused"};
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
            if (!attention.quantized())
            {
                continue;
            }
            std::vector<const OnnxNode*> pair;
            for (const OnnxNode* op : attention.scoreOps)
            {
                if (isQdq(*op))
                {
                    pair.push_back(op);
                }
            }
            if (!pair.empty())
            {
                report(context, attention, pair, sink);
            }
        }
    }

private:
    void report(const Context& context, const Attention& attention, const std::vector<const OnnxNode*>& pair,
                FindingSink& sink) const
    {
        std::vector<std::string> names;
        for (const OnnxNode* node : pair)
        {
            names.push_back(node->name);
        }
        Finding finding = makeFinding(
            info(), "The scores of attention " + attention.scores->name + " -> " + attention.softmax->name + " -> " +
                        attention.context->name + " are quantized before the Softmax (" + nameList(names) +
                        "): the documented INT8 fused-attention placement (before the first MatMul, after the "
                        "Softmax, after the second MatMul) and ModelOpt's FP8 recipe put no Q/DQ there. Whether "
                        "TensorRT fuses the attention with it is not documented (a guess).");
        finding.likely = true;
        finding.onnxNodes = {attention.scores->name};
        finding.onnxNodes.insert(finding.onnxNodes.end(), names.begin(), names.end());
        finding.onnxNodes.push_back(attention.softmax->name);
        finding.evidence.push_back(nodeEvidence(context, *pair.front(), "on the scores of " + attention.scores->name));
        finding.fix = "if the engine shows this attention unfused (separate MatMul and Softmax layers), remove " +
                      nameList(names) + " so that the first MatMul's output reaches the Softmax in float";
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeQdqOnAttentionScores()
{
    return std::make_unique<QdqOnAttentionScores>();
}

} // namespace qdq::rules
