// R08 qdq-inside-conv-epilogue: a Q/DQ pair between a weighted op and the BN/activation/MaxPool TensorRT would fuse
// into its epilogue.
#include "qdq/patterns.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;

class QdqInsideConvEpilogue final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "qdq-inside-conv-epilogue",
            "R08",
            "A Q/DQ pair sits between a weighted op and the BatchNorm/activation/MaxPool TensorRT would fuse into it",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnx | kReadsCorrelation,
            ""};
        return kInfo;
    }

    //! The weighted op writing tensor directly or through BatchNormalization and at most one Q -> DQ pair (a conv
    //! whose output ONNX Runtime quantized before the Add), or nullptr.
    static const OnnxNode* weightedBehind(const OnnxGraph& graph, const std::string& tensor)
    {
        const OnnxNode* producer = producerOf(graph, tensor);
        for (int depth = 0; producer != nullptr && depth < 4; ++depth)
        {
            if (isWeighted(graph, *producer))
            {
                return producer;
            }
            if (!(isQdq(*producer) || producer->opType == "BatchNormalization") || producer->inputs.empty())
            {
                return nullptr;
            }
            producer = producerOf(graph, producer->inputs[0]);
        }
        return nullptr;
    }

    //! The gate half of a SiLU or HardSwish the exporter split with Q/DQ: gate is a Sigmoid or HardSigmoid reading the
    //! conv's DQ output x, and a Mul reads x and the gate's output, through a Q -> DQ pair of the gate's own. Returns
    //! that pair (nullptrs when the Mul reads the gate directly) and the Mul; mul is nullptr when there is none.
    struct GatePair
    {
        const OnnxNode* q = nullptr;
        const OnnxNode* dq = nullptr;
        const OnnxNode* mul = nullptr;
    };
    //! Whether node is the Sigmoid or the Mul of x * Sigmoid(x) on x.
    static bool partOfSilu(const OnnxGraph& graph, const OnnxNode& node, const std::string& x)
    {
        if (node.opType == "Sigmoid")
        {
            return gatePair(graph, node, x).mul != nullptr;
        }
        if (node.opType != "Mul")
        {
            return false;
        }
        for (const OnnxNode* sibling : consumersOf(graph, x))
        {
            if (sibling->opType == "Sigmoid" && gatePair(graph, *sibling, x).mul == &node)
            {
                return true;
            }
        }
        return false;
    }

    static GatePair gatePair(const OnnxGraph& graph, const OnnxNode& gate, const std::string& x)
    {
        GatePair result;
        if (!isSelfGate(gate.opType) || gate.outputs.empty())
        {
            return result;
        }
        const auto mulReading = [&](const std::string& tensor) -> const OnnxNode*
        {
            for (const OnnxNode* mul : consumersOf(graph, tensor))
            {
                if (mul->opType == "Mul" && mul->inputs.size() == 2 &&
                    ((mul->inputs[0] == tensor && mul->inputs[1] == x) ||
                     (mul->inputs[1] == tensor && mul->inputs[0] == x)))
                {
                    return mul;
                }
            }
            return nullptr;
        };
        if ((result.mul = mulReading(gate.outputs[0])) != nullptr)
        {
            return result;
        }
        const auto gateReaders = consumersOf(graph, gate.outputs[0]);
        if (gateReaders.size() != 1 || !isQuantize(*gateReaders[0]) || gateReaders[0]->outputs.empty())
        {
            return result;
        }
        const OnnxNode* q = gateReaders[0];
        const auto qReaders = consumersOf(graph, q->outputs[0]);
        if (qReaders.size() != 1 || !isDequantize(*qReaders[0]) || qReaders[0]->outputs.empty() ||
            consumersOf(graph, qReaders[0]->outputs[0]).size() != 1)
        {
            return result;
        }
        result.mul = mulReading(qReaders[0]->outputs[0]);
        if (result.mul != nullptr)
        {
            result.q = q;
            result.dq = qReaders[0];
        }
        return result;
    }

    //! Conv -> [Q/DQ] -> Add(residual) -> Q -> DQ -> activation: once the Add fuses into the conv (reference 1.8),
    //! the pair on the Add's output sits inside the fused layer's epilogue and keeps the activation apart.
    void checkResidualAdds(const Context& context, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& add : graph.nodes)
        {
            if (add.opType != "Add" || add.inputs.size() != 2 || add.outputs.empty() ||
                isConstantTensor(graph, add.inputs[0]) || isConstantTensor(graph, add.inputs[1]))
            {
                continue;
            }
            const OnnxNode* conv = weightedBehind(graph, add.inputs[0]);
            conv = conv != nullptr ? conv : weightedBehind(graph, add.inputs[1]);
            if (conv == nullptr)
            {
                continue;
            }
            for (const OnnxNode* q : consumersOf(graph, add.outputs[0]))
            {
                if (!isQuantize(*q) || q->outputs.empty())
                {
                    continue;
                }
                for (const OnnxNode* dq : consumersOf(graph, q->outputs[0]))
                {
                    if (!isDequantize(*dq) || dq->outputs.empty())
                    {
                        continue;
                    }
                    for (const OnnxNode* next : consumersOf(graph, dq->outputs[0]))
                    {
                        if (!isActivation(next->opType))
                        {
                            continue;
                        }
                        Finding finding = makeFinding(
                            info(), "QuantizeLinear " + q->name + " -> DequantizeLinear " + dq->name +
                                        " sits between the residual Add " + add.name + " (which TensorRT fuses into " +
                                        conv->opType + " " + conv->name + ") and " + next->opType + " " + next->name +
                                        ": the activation cannot join the fused Conv+Add layer.");
                        finding.onnxNodes = {conv->name, add.name, q->name, dq->name, next->name};
                        finding.claims.push_back({EngineClaim::Kind::kFuseOnceEdited, {conv->name, next->name}});
                        finding.evidence.push_back(nodeEvidence(context, *q,
                                                                "input from " + add.name + ", output dequantized by " +
                                                                    dq->name + " for " + next->name));
                        finding.fix = "delete " + q->name + " and " + dq->name + " (connect " + add.outputs[0] +
                                      " to " + next->name + " directly); the Q after " + next->name +
                                      " becomes the fused layer's INT8 output";
                        finding.edits.push_back(removeQdqPairEdit(*q, *dq));
                        if (context.engine() != nullptr)
                        {
                            auto layers = layersOf(context, next->name);
                            finding.engineLayers = layerNames(context, layers);
                            finding.costMs = sumTimes(context, layers);
                        }
                        sink.add(std::move(finding));
                    }
                }
            }
        }
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        checkResidualAdds(context, sink);
        const OnnxGraph& graph = *context.graph();
        for (const auto& node : graph.nodes)
        {
            if (!isWeighted(graph, node) || node.outputs.empty())
            {
                continue;
            }
            // W -> [BN] -> Q -> DQ -> {BN | activation | MaxPool}
            std::string tensor = node.outputs[0];
            auto consumers = consumersOf(graph, tensor);
            if (consumers.size() == 1 && consumers[0]->opType == "BatchNormalization" && !consumers[0]->outputs.empty())
            {
                tensor = consumers[0]->outputs[0];
                consumers = consumersOf(graph, tensor);
            }
            for (const OnnxNode* q : consumers)
            {
                if (!isQuantize(*q) || q->outputs.empty())
                {
                    continue;
                }
                for (const OnnxNode* dq : consumersOf(graph, q->outputs[0]))
                {
                    if (!isDequantize(*dq) || dq->outputs.empty())
                    {
                        continue;
                    }
                    for (const OnnxNode* next : consumersOf(graph, dq->outputs[0]))
                    {
                        if (!(isEpilogue(next->opType) || next->opType == "MaxPool"))
                        {
                            continue;
                        }
                        // Conv -> Q/DQ -> gate and Mul, gate -> [Q/DQ] -> Mul: a SiLU or HardSwish that the exporter
                        // split. Both halves must lose their pairs for TensorRT to fuse it into the conv.
                        const GatePair gate = gatePair(graph, *next, dq->outputs[0]);
                        // A depthwise conv with a SiLU: whether TensorRT fuses them without the pair depends on the
                        // version and kernel (NVIDIA/TensorRT#3205: not fused, and the maintainer's advice was Q/DQ
                        // before the Sigmoids; #3385, 8.5.2: fused), so removing the pair is no sure gain
                        // (docs/simulator.md, "Doubtful fusions"). A HardSwish is still advised: no source shows a
                        // depthwise one left unfused.
                        if (node.intAttribute("group").value_or(1) > 1 && partOfSilu(graph, *next, dq->outputs[0]))
                        {
                            continue;
                        }
                        const std::string activation = gate.mul == nullptr
                                                           ? next->opType + " " + next->name
                                                           : std::string(selfGatedName(next->opType)) + " (" +
                                                                 next->name + " and " + gate.mul->name + ")";
                        Finding finding = makeFinding(
                            info(),
                            "QuantizeLinear " + q->name + " -> DequantizeLinear " + dq->name + " sits between " +
                                node.opType + " " + node.name + " and " + activation + ": TensorRT cannot fuse " +
                                (gate.mul == nullptr ? next->name : std::string("it")) + " into the " + node.opType +
                                " epilogue and runs them as separate layers with an INT8 round trip between.");
                        finding.onnxNodes = {node.name, q->name, dq->name, next->name};
                        finding.claims.push_back({EngineClaim::Kind::kFuseOnceEdited, {node.name, next->name}});
                        finding.evidence.push_back(nodeEvidence(context, *q,
                                                                "input from " + node.name +
                                                                    ", output "
                                                                    "dequantized by " +
                                                                    dq->name + " for " + next->name));
                        finding.fix = "delete " + q->name + " and " + dq->name + " (connect " + tensor + " to " +
                                      next->name + " directly) and quantize after the " + next->opType +
                                      ", at the next weighted op's input";
                        finding.edits.push_back(removeQdqPairEdit(*q, *dq));
                        if (gate.mul != nullptr)
                        {
                            finding.onnxNodes.push_back(gate.mul->name);
                            finding.fix =
                                "delete " + q->name + " and " + dq->name + " (connect " + tensor + " to " + next->name +
                                " and " + gate.mul->name + " directly)" +
                                (gate.q == nullptr ? std::string()
                                                   : " and the pair " + gate.q->name + " -> " + gate.dq->name +
                                                         " between " + next->name + " and " + gate.mul->name) +
                                "; quantize after " + gate.mul->name + ", at the next weighted op's input";
                            if (gate.q != nullptr)
                            {
                                finding.onnxNodes.push_back(gate.q->name);
                                finding.onnxNodes.push_back(gate.dq->name);
                                finding.edits.push_back(removeQdqPairEdit(*gate.q, *gate.dq));
                            }
                        }
                        if (context.engine() != nullptr)
                        {
                            auto layers = layersOf(context, next->name);
                            finding.engineLayers = layerNames(context, layers);
                            finding.costMs = sumTimes(context, layers);
                        }
                        sink.add(std::move(finding));
                    }
                }
            }
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeQdqInsideConvEpilogue()
{
    return std::make_unique<QdqInsideConvEpilogue>();
}

} // namespace qdq::rules
