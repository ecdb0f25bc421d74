// attention-operand-not-dequantized: an attention MatMul (softmax(Q * K^T) * V) reads a quantized operand through a
// Transpose, Reshape or the attention's scaling Mul/Div placed after its DequantizeLinear, instead of straight from
// the DQ. ModelOpt's FP8 attention export (NVIDIA/Model-Optimizer PR #1289, modelopt/onnx/export/fp8_exporter.py)
// moves the K Transpose and the scaling Mul to the other side of the Q/DQ "so DQ feeds MatMul directly" for
// TensorRT's attention fusion; TensorRT's developer guide (MHA fusion) places the Q/DQ "before the first batched
// matrix multiplication". fix makes the same move, keeping the numerics: a Transpose or Reshape commutes with a
// per-tensor Q/DQ, and a Mul by a positive constant c commutes when the pair's scale is multiplied by c.
#include "rules/attention_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace attention;

//! Why the Q/DQ pair of an operand cannot move across its steps (empty when it can), and the scale factor the
//! move gives the pair (the product of the scaling Muls' constants, over the Divs').
struct MovePlan
{
    std::string whyNot;
    const OnnxNode* quantize = nullptr;
    double scaleFactor = 1.0;
};

MovePlan planMove(const OnnxGraph& graph, const Operand& operand)
{
    MovePlan plan;
    const OnnxNode& dq = *operand.dequantize;
    const OnnxNode* q = producerOf(graph, dq.inputs[0]);
    if (q == nullptr || !isQuantize(*q) || q->inputs.empty())
    {
        plan.whyNot = dq.name + " dequantizes a constant or a tensor no QuantizeLinear writes";
        return plan;
    }
    const QdqParameters* parameters = graph.qdqOf(q->index);
    if (parameters == nullptr || !parameters->scaleIsConstant || parameters->scale.size() != 1)
    {
        plan.whyNot = q->name + " has no one per-tensor constant scale (a per-channel pair needs its axis permuted "
                                "by the Transpose: move it by hand)";
        return plan;
    }
    if (consumersOf(graph, dq.inputs[0]).size() != 1 || consumersOf(graph, dq.outputs[0]).size() != 1)
    {
        plan.whyNot = q->name + " -> " + dq.name + " has other readers, which would lose their quantization";
        return plan;
    }
    for (std::size_t i = 0; i < operand.between.size(); ++i)
    {
        const OnnxNode& step = *operand.between[i];
        const auto readers = consumersOf(graph, step.outputs[0]);
        const bool last = i + 1 == operand.between.size();
        // Every reader of the last step an activation MatMul, as ModelOpt's rewrite requires: a non-MatMul
        // reader would see the quantized tensor where it read a float one.
        for (const OnnxNode* reader : readers)
        {
            if (last ? !isActivationMatMul(graph, *reader) : readers.size() != 1)
            {
                plan.whyNot = step.name + "'s output is also read by " + reader->name;
                return plan;
            }
        }
        if (isGraphOutput(graph, step.outputs[0]))
        {
            plan.whyNot = step.name + "'s output is a network output";
            return plan;
        }
        const int scaling = scalingInput(graph, step);
        if (scaling < 0)
        {
            continue;
        }
        const auto value = scalarValue(graph, step.inputs[static_cast<std::size_t>(scaling)]);
        if (!value || !(*value > 0.0) || !std::isfinite(*value))
        {
            plan.whyNot = step.name + " scales by " + step.inputs[static_cast<std::size_t>(scaling)] +
                          ", which is not one positive constant number (computed from shapes, or negative): "
                          "fold it into a constant first";
            return plan;
        }
        plan.scaleFactor *= step.opType == "Div" ? 1.0 / *value : *value;
    }
    plan.quantize = q;
    return plan;
}

class AttentionOperandNotDequantized final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"attention-operand-not-dequantized",
                                    "",
                                    "An attention MatMul reads a quantized operand through a Transpose, Reshape or "
                                    "scaling Mul after its DequantizeLinear instead of straight from the DQ",
                                    Severity::kWarning,
                                    "8.6-10.x",
                                    kNeedsOnnx | kReadsModelValues,
                                    ""};
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
            const QuantType type = attention.type(*graph);
            for (const auto& [operand, role] : {std::pair{&attention.query, "query"}, std::pair{&attention.key, "key"},
                                                std::pair{&attention.value, "value"}})
            {
                if (operand->quantized() && !operand->direct())
                {
                    report(context, *graph, attention, *operand, role, type, sink);
                }
            }
        }
    }

private:
    void report(const Context& context, const OnnxGraph& graph, const Attention& attention, const Operand& operand,
                const char* role, QuantType type, FindingSink& sink) const
    {
        const OnnxNode& matMul = *operand.matMul;
        const OnnxNode& dq = *operand.dequantize;
        const bool first = &matMul == attention.scores;
        Finding finding = makeFinding(
            info(), std::string(first ? "First" : "Second") + " attention MatMul " + matMul.name + " reads its " +
                        role + " (input " + std::to_string(operand.slot) + ") through " + stepList(operand.between) +
                        " after " + dq.name + ", not straight from the DequantizeLinear: TensorRT's " +
                        quantTypeName(type) +
                        " fused attention wants the Q/DQ right before each attention MatMul (the ops in between "
                        "keep the pair from fusing into the MatMul, and the attention from fusing).");
        finding.onnxNodes.push_back(matMul.name);
        for (const OnnxNode* step : operand.between)
        {
            finding.onnxNodes.push_back(step->name);
        }
        finding.onnxNodes.push_back(dq.name);
        finding.evidence.push_back(nodeEvidence(
            context, matMul, std::string(role) + " through " + stepList(operand.between) + " from " + dq.name));
        const MovePlan plan = planMove(graph, operand);
        const std::string moved = stepList(operand.between);
        if (!plan.whyNot.empty())
        {
            finding.fix = "move " + moved + " before the QuantizeLinear of " + dq.name +
                          " so that the DequantizeLinear feeds " + matMul.name + " (not made by fix: " + plan.whyNot +
                          ")";
            sink.add(std::move(finding));
            return;
        }
        const OnnxNode& q = *plan.quantize;
        // The pair goes after the steps: removed where it is, and a pair with its scale (times the scaling
        // constants) quantizes the last step's output for the MatMul.
        finding.edits.push_back(removeQdqPairEdit(q, dq));
        const std::string& movedTensor = operand.between.back()->outputs[0];
        FixEdit insert =
            insertQdqEdit(matMul, movedTensor, q.name,
                          "the scale of " + q.name +
                              (plan.scaleFactor == 1.0 ? std::string(": a Transpose or Reshape moves no value")
                                                       : " times " + formatNumber(plan.scaleFactor) +
                                                             ", the scaling constant it now quantizes after: "
                                                             "DQ(Q(x, s)) * c == DQ(Q(x * c, s * c)) for c > 0"));
        insert.consumers.clear();
        for (const OnnxNode* reader : consumersOf(graph, movedTensor))
        {
            for (std::uint32_t slot = 0; slot < reader->inputs.size(); ++slot)
            {
                if (reader->inputs[slot] == movedTensor)
                {
                    insert.consumers.emplace_back(reader->name, slot);
                }
            }
        }
        insert.scaleFactor = plan.scaleFactor;
        finding.edits.push_back(std::move(insert));
        finding.fix = "move the Q/DQ pair " + q.name + " -> " + dq.name + " after " + moved + " (scale " +
                      (plan.scaleFactor == 1.0 ? std::string("unchanged")
                                               : "times " + formatNumber(plan.scaleFactor) + ", the scaling constant") +
                      ") so that a DequantizeLinear feeds " + matMul.name + " directly";
        sink.add(std::move(finding));
    }

    static std::string formatNumber(double value)
    {
        char buffer[32];
        std::snprintf(buffer, sizeof(buffer), "%.6g", value);
        return buffer;
    }
};

} // namespace

std::unique_ptr<Rule> makeAttentionOperandNotDequantized()
{
    return std::make_unique<AttentionOperandNotDequantized>();
}

} // namespace qdq::rules
