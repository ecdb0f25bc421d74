// R12 qdq-between-conv-and-add: both Add inputs are quantized, one of them right after a conv, so TensorRT cannot
// fuse the Add into the conv.
#include "qdq/patterns.h"
#include "rules/engine_view.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;

class QdqBetweenConvAndAdd final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "qdq-between-conv-and-add",
            "R12",
            "A Q/DQ pair on the conv-output input of a residual Add keeps the Add out of the conv",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnx | kReadsCorrelation | kReadsPrediction,
            ""};
        return kInfo;
    }

    //! The weighted op behind tensor (through BN and activations), or nullptr.
    static const OnnxNode* convBehind(const OnnxGraph& graph, const std::string& tensor)
    {
        const OnnxNode* producer = producerOf(graph, tensor);
        for (int depth = 0; producer != nullptr && depth < 6; ++depth)
        {
            if (isWeighted(graph, *producer))
            {
                return producer;
            }
            if (!isEpilogue(producer->opType) || producer->inputs.empty())
            {
                return nullptr;
            }
            producer = producerOf(graph, producer->inputs[0]);
        }
        return nullptr;
    }

    //! Whether tensor is read by exactly one node and is no graph output.
    static bool readOnce(const OnnxGraph& graph, const std::string& tensor)
    {
        return consumersOf(graph, tensor).size() == 1 && !isGraphOutput(graph, tensor);
    }

    //! Whether the Add could take the conv's place: every tensor from the conv's output through its epilogue, Q and DQ
    //! to the Add is read once. A conv output (or its DQ) that other nodes read too is needed on its own, so the Add
    //! cannot be fused into that conv whatever the Q/DQ: that input is the residual, and its Q/DQ is the one to keep
    //! (MobileNetV2 under ONNX Runtime: a block's output feeds the next block's conv and its Add).
    static bool fusable(const OnnxGraph& graph, const OnnxNode& conv, const OnnxNode& q, const OnnxNode& dq)
    {
        if (!readOnce(graph, dq.outputs[0]) || !readOnce(graph, q.outputs[0]))
        {
            return false;
        }
        std::string tensor = q.inputs[0];
        for (int depth = 0; depth < 8; ++depth)
        {
            if (!readOnce(graph, tensor))
            {
                return false;
            }
            const OnnxNode* producer = producerOf(graph, tensor);
            if (producer == nullptr || producer == &conv)
            {
                return producer == &conv;
            }
            if (producer->inputs.empty())
            {
                return false;
            }
            tensor = producer->inputs[0];
        }
        return false;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        const EngineView engine(context);
        for (const auto& add : graph.nodes)
        {
            if (add.opType != "Add" || add.inputs.size() != 2)
            {
                continue;
            }
            const OnnxNode* dq[2] = {producerOf(graph, add.inputs[0]), producerOf(graph, add.inputs[1])};
            if (dq[0] == nullptr || dq[1] == nullptr || !isDequantize(*dq[0]) || !isDequantize(*dq[1]))
            {
                continue;
            }
            for (int side = 0; side < 2; ++side)
            {
                const OnnxNode* q = dq[side]->inputs.empty() ? nullptr : producerOf(graph, dq[side]->inputs[0]);
                if (q == nullptr || !isQuantize(*q) || q->inputs.empty())
                {
                    continue;
                }
                const OnnxNode* conv = convBehind(graph, q->inputs[0]);
                if (conv == nullptr || dq[side]->outputs.empty() || q->outputs.empty() ||
                    !fusable(graph, *conv, *q, *dq[side]))
                {
                    continue;
                }
                if (engine.predicted() && engine.sameLayer(add.name, conv->name))
                {
                    continue; // the predicted engine runs them in one layer (a Myelin region takes both)
                }
                // The other input may be a constant behind its DQ (ONNX Runtime quantizes a MatMul's bias that
                // way): a bias Add, which TensorRT folds into the weighted op, not a residual.
                const OnnxNode& otherDq = *dq[1 - side];
                const bool bias = !otherDq.inputs.empty() && isConstantTensor(graph, otherDq.inputs[0]);
                Finding finding = makeFinding(
                    info(),
                    "Both inputs of Add " + add.name + " are quantized, including the one straight from " +
                        conv->opType + " " + conv->name + " (through " + q->name + " -> " + dq[side]->name +
                        "): TensorRT runs " + conv->name + " and the Add as separate layers instead of one " +
                        (bias ? conv->opType + " with its bias (the other input, " + otherDq.name + ", is a constant)."
                              : std::string("Conv+Add.")));
                finding.onnxNodes = {add.name, conv->name, q->name, dq[side]->name};
                finding.claims.push_back({EngineClaim::Kind::kSeparateLayers, {conv->name, add.name}});
                finding.evidence.push_back(nodeEvidence(context, add,
                                                        "input " + std::to_string(side) + " from " + dq[side]->name +
                                                            " <- " + q->name + " <- " + conv->name));
                finding.fix =
                    "remove " + q->name + " and " + dq[side]->name + " on the " + conv->opType + "-side input of " +
                    add.name +
                    (bias ? "; the constant input (" + add.inputs[1 - side] + ") is folded into the layer as its bias"
                          : "; keep the Q/DQ on the residual input (" + add.inputs[1 - side] + ")");
                finding.edits.push_back(removeQdqPairEdit(*q, *dq[side]));
                if (context.engine() != nullptr)
                {
                    auto layers = layersOf(context, add.name);
                    finding.engineLayers = layerNames(context, layers);
                    if (engine.sameLayer(add.name, conv->name))
                    {
                        continue; // the engine fused them anyway
                    }
                    finding.costMs = sumTimes(context, layers);
                }
                sink.add(std::move(finding));
                break;
            }
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeQdqBetweenConvAndAdd()
{
    return std::make_unique<QdqBetweenConvAndAdd>();
}

} // namespace qdq::rules
