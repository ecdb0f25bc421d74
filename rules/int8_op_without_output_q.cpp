// R15 int8-op-without-output-q: a non-weighted op (Add, Mul, AveragePool, Resize, ...) with every input DQ-fed but
// no QuantizeLinear on its output. TensorRT runs such ops INT8 only as `DQ > op > Q`; without the Q the input DQs run
// as standalone Dequantize layers and the op runs in float.
#include "rules/engine_view.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace precision;

class Int8OpWithoutOutputQ final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "int8-op-without-output-q",
            "R15",
            "A non-weighted op has quantized inputs but no QuantizeLinear on its output, so its input Dequantize nodes "
            "run standalone and the op runs in float",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation | kReadsPrediction,
            "a QuantizeLinear on the output needs its scale from calibration data"};
        return kInfo;
    }

private:
    //! The DQs feeding the node's activation inputs; empty unless every one of them is DQ-fed (with some input
    //! float it is not this pattern: a residual Add is residual-input-not-quantized).
    static std::vector<const OnnxNode*> inputDequantizers(const OnnxGraph& graph, const OnnxNode& node)
    {
        std::vector<std::string> inputs = activationInputs(graph, node);
        std::vector<const OnnxNode*> dqs;
        for (const auto& input : inputs)
        {
            if (const OnnxNode* dq = feedingDequantize(graph, input))
            {
                dqs.push_back(dq);
            }
        }
        if (dqs.size() != inputs.size())
        {
            return {};
        }
        return dqs;
    }

    //! A Q/DQ pair between a conv/GEMM (and its activation) and this op: the op belongs to the weighted op's
    //! epilogue or residual (qdq-between-conv-and-add, activation-before-residual-add).
    static bool afterWeightedOp(const OnnxGraph& graph, const std::vector<const OnnxNode*>& dqs)
    {
        bool afterWeighted = false;
        for (const OnnxNode* dq : dqs)
        {
            const OnnxNode* q = dq->inputs.empty() ? nullptr : producerOf(graph, dq->inputs[0]);
            afterWeighted = afterWeighted || (q != nullptr && isQuantize(*q) && !q->inputs.empty() &&
                                              quantizedWeightedBehind(graph, q->inputs[0]) != nullptr);
        }
        return afterWeighted;
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        const EngineView engine(context);
        for (const auto& node : graph.nodes)
        {
            if (!isQuantizableNonWeighted(node.opType) || node.outputs.empty())
            {
                continue;
            }
            const std::vector<const OnnxNode*> dqs = inputDequantizers(graph, node);
            if (dqs.empty() || afterWeightedOp(graph, dqs))
            {
                continue;
            }
            auto forward = forwardQuantizers(graph, node.outputs[0], true);
            if (!forward.quantizers.empty() && forward.allPaths)
            {
                continue;
            }
            // The message says the DQs run as standalone layers: without a layer list that is the predicted
            // engine's word, and a Myelin region that takes them runs none standalone.
            if (engine.predicted() && std::none_of(dqs.begin(), dqs.end(),
                                                   [&](const OnnxNode* dq) { return engine.runsStandalone(dq->name); }))
            {
                continue;
            }
            Finding finding = missingQFinding(context, node, dqs);
            addEngineLayers(context, node, dqs, finding);
            if (engine.predicted())
            {
                for (const OnnxNode* dq : dqs)
                {
                    if (engine.runsStandalone(dq->name))
                    {
                        finding.claims.push_back({EngineClaim::Kind::kStandaloneQdq, {dq->name}});
                    }
                }
            }
            sink.add(std::move(finding));
        }
    }

    Finding missingQFinding(const Context& context, const OnnxNode& node, const std::vector<const OnnxNode*>& dqs) const
    {
        const OnnxGraph& graph = *context.graph();
        FloatEnds ends = floatEnds(graph, node.outputs[0], true);
        std::vector<std::string> users;
        for (const OnnxNode* user : ends.users)
        {
            users.push_back(user->opType + " " + user->name);
        }
        for (const auto& output : ends.outputs)
        {
            users.push_back("network output " + output);
        }
        std::vector<std::string> dqNames;
        std::vector<double> scales;
        for (const OnnxNode* dq : dqs)
        {
            dqNames.push_back(dq->name);
            if (auto scale = perTensorScale(graph, *dq))
            {
                scales.push_back(*scale);
            }
        }
        bool differentScales = false;
        for (double scale : scales)
        {
            differentScales = differentScales || !scalesEqual(scale, scales.front());
        }
        bool onlyOutputs = ends.users.empty();
        Finding finding = makeFinding(
            info(),
            node.opType + " " + node.name + " has every input quantized (" + nameList(dqNames, 3) +
                ") but no QuantizeLinear on its output " + node.outputs[0] + " (it reaches " + nameList(users, 3) +
                " in float): TensorRT runs non-weighted ops INT8 only with INT8 outputs, so the DequantizeLinear "
                "nodes run as standalone layers and " +
                node.name + " runs in float." +
                (differentScales ? " The different input scales are not the problem: each input scale is folded "
                                   "into the quantized op."
                                 : ""));
        finding.onnxNodes = {node.name};
        finding.onnxNodes.insert(finding.onnxNodes.end(), dqNames.begin(), dqNames.end());
        finding.evidence.push_back(nodeEvidence(context, node,
                                                "inputs DQ-fed by " + nameList(dqNames, 3) + "; output " +
                                                    node.outputs[0] + " not quantized"));
        finding.fix =
            onlyOutputs
                ? "the output must stay float: remove the Q/DQ pairs " + nameList(dqNames, 3) + " on the inputs of " +
                      node.name + " (they buy nothing), or accept the standalone Dequantize layers"
                : "add QuantizeLinear -> DequantizeLinear on " + node.outputs[0] + " (the output of " + node.name +
                      ", or on the input of each consumer: " + nameList(users, 3) + ") so " + node.name +
                      " runs as DQ > " + node.opType + " > Q in INT8; different input scales are fine";
        return finding;
    }

    //! The op's engine layers and the standalone Dequantize layers of its inputs (the cost).
    static void addEngineLayers(const Context& context, const OnnxNode& node, const std::vector<const OnnxNode*>& dqs,
                                Finding& finding)
    {
        const EnginePlan* plan = context.engine();
        if (plan == nullptr)
        {
            return;
        }
        std::vector<std::size_t> costly;
        for (const OnnxNode* dq : dqs)
        {
            for (std::size_t layer : layersOf(context, dq->name))
            {
                if (isStandaloneQdq(context, layer))
                {
                    addUnique(costly, layer);
                }
            }
        }
        for (std::size_t layer : layersOf(context, node.name))
        {
            finding.engineLayers.push_back(plan->layers[layer].name);
        }
        for (std::size_t layer : costly)
        {
            finding.engineLayers.push_back(plan->layers[layer].name);
            finding.evidence.push_back(layerEvidence(context, layer, "", "standalone Dequantize"));
        }
        finding.costMs = sumTimes(context, costly);
    }

    //! Engine: a non-weighted compute layer with a float output whose every activation input comes from a standalone
    //! Dequantize layer.
    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& layer = plan.layers[index];
            if (context.correlation.layers[index].state != LayerState::kMapped || isWeightedLayer(layer) ||
                layer.inputs.empty() || layer.outputs.empty() || !isFloat(outputPrecision(layer)) ||
                layer.type.find("Constant") != std::string::npos)
            {
                continue;
            }
            std::vector<std::size_t> dequantizers;
            bool allFromDequantize = true;
            for (const auto& input : layer.inputs)
            {
                auto producer = producerLayer(plan, input.name);
                if (!producer)
                {
                    allFromDequantize = false;
                    break;
                }
                if (plan.layers[*producer].type == "Constant")
                {
                    continue;
                }
                if (isStandaloneDequantize(context, *producer))
                {
                    dequantizers.push_back(*producer);
                }
                else
                {
                    allFromDequantize = false;
                }
            }
            if (!allFromDequantize || dequantizers.empty())
            {
                continue;
            }
            std::vector<std::string> dqNames = layerNames(context, dequantizers);
            Finding finding = makeFinding(
                info(), "\"" + layer.name + "\" (" + layer.type + ") runs in " + precisionText(outputPrecision(layer)) +
                            " behind the standalone Dequantize layer(s) " + nameList(dqNames, 3) +
                            ": its inputs are quantized but its output likely has no QuantizeLinear.");
            finding.likely = true;
            finding.engineLayers = {layer.name};
            finding.engineLayers.insert(finding.engineLayers.end(), dqNames.begin(), dqNames.end());
            finding.onnxNodes.assign(context.correlation.layers[index].onnxNodes.begin(),
                                     context.correlation.layers[index].onnxNodes.end());
            for (std::size_t dq : dequantizers)
            {
                finding.evidence.push_back(layerEvidence(context, dq, "",
                                                         plan.layers[dq].type + " " +
                                                             precisionText(inputPrecision(plan.layers[dq])) + " -> " +
                                                             precisionText(outputPrecision(plan.layers[dq]))));
            }
            finding.evidence.push_back(layerEvidence(
                context, index, "Outputs[0]", layer.outputs[0].name + " " + precisionText(outputPrecision(layer))));
            finding.costMs = sumTimes(context, dequantizers);
            finding.fix =
                "in the ONNX model, add QuantizeLinear -> DequantizeLinear on the output of \"" + layer.name +
                "\" (or on its consumers' inputs) so it runs as DQ > op > Q in INT8; different input scales are fine";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeInt8OpWithoutOutputQ()
{
    return std::make_unique<Int8OpWithoutOutputQ>();
}

} // namespace qdq::rules
