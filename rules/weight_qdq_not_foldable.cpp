// R06 weight-qdq-not-foldable: the weight of a weighted op reaches its Q/DQ, or the op, through other ops
// (Transpose, Reshape, Cast, ...), so TensorRT may not fold the weight quantization at build time.
#include "qdq/patterns.h"
#include "rules/rules.h"
#include "rules/weight_paths.h"

#include <algorithm>

namespace qdq::rules
{

namespace
{

using namespace patterns;

std::string lowered(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

class WeightQdqNotFoldable final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "weight-qdq-not-foldable",
            "R06",
            "A weight reaches its Q/DQ or its weighted op through other ops (Transpose, Reshape, Cast, ...), so "
            "TensorRT may not fold the weight quantization into INT8 weights at build time",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "the ops between the weight initializer and its QuantizeLinear must be folded in the export (constant "
            "folding with the weights)"};
        return kInfo;
    }

private:
    //! The ops between a constant and tensor (nearest the constant first); empty when tensor is a constant, nullopt
    //! when tensor is not computed from constants (a dynamic weight: not this rule).
    static std::optional<std::vector<const OnnxNode*>> opsFromConstant(const OnnxGraph& graph,
                                                                       const std::string& tensor)
    {
        std::vector<const OnnxNode*> ops;
        std::string current = tensor;
        for (int depth = 0; depth < 16; ++depth)
        {
            if (isConstantTensor(graph, current))
            {
                return ops;
            }
            const OnnxNode* producer = producerOf(graph, current);
            if (producer == nullptr || producer->inputs.empty() || !weights::isConstantComputed(graph, current))
            {
                return std::nullopt;
            }
            ops.insert(ops.begin(), producer);
            current = producer->inputs[0];
        }
        return std::nullopt;
    }

    static bool onlyIdentity(const std::vector<const OnnxNode*>& ops)
    {
        return std::all_of(ops.begin(), ops.end(), [](const OnnxNode* op) { return op->opType == "Identity"; });
    }

    static std::string opList(const std::vector<const OnnxNode*>& ops)
    {
        std::vector<std::string> names;
        for (const OnnxNode* op : ops)
        {
            names.push_back(op->opType + " " + op->name);
        }
        return nameList(names, 4);
    }

    //! True when the build log or the engine shows that TensorRT folded this weight anyway.
    static bool foldedInEngine(const Context& context, const OnnxNode& node, const OnnxNode* q)
    {
        if (q != nullptr && context.inputs.buildLog)
        {
            for (const auto& event : context.inputs.buildLog->events)
            {
                if (event.kind == OptimizerEventKind::kFuse && event.pass.find("ConstWeights") != std::string::npos &&
                    (event.subject.find(q->name) != std::string::npos ||
                     event.object.find(q->name) != std::string::npos))
                {
                    return true;
                }
            }
        }
        const EnginePlan* plan = context.engine();
        for (std::size_t layer : layersOf(context, node.name))
        {
            if (plan != nullptr && layer < plan->layers.size() && plan->layers[layer].weightsPrecision &&
                isQuantized(*plan->layers[layer].weightsPrecision))
            {
                return true;
            }
        }
        return false;
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& node : graph.nodes)
        {
            if (!isWeighted(graph, node) || node.inputs.size() < 2 || node.inputs[1].empty())
            {
                continue;
            }
            std::vector<const OnnxNode*> afterDq;
            const OnnxNode* dq = weights::weightDequantize(graph, node.inputs[1], &afterDq);
            if (dq == nullptr || dq->inputs.empty())
            {
                continue;
            }
            // Before the DQ: constant -> [ops] -> Q -> DQ, or constant -> [ops] -> DQ.
            const OnnxNode* q = producerOf(graph, dq->inputs[0]);
            if (q != nullptr && !isQuantize(*q))
            {
                q = nullptr;
            }
            const std::string& quantized = q != nullptr && !q->inputs.empty() ? q->inputs[0] : dq->inputs[0];
            auto beforeQ = opsFromConstant(graph, quantized);
            if (!beforeQ)
            {
                continue; // the weight is computed at run time: not a constant weight
            }
            const bool badBefore = !beforeQ->empty() && !onlyIdentity(*beforeQ);
            const bool badAfter = !afterDq.empty() && !onlyIdentity(afterDq);
            if (!badBefore && !badAfter)
            {
                continue;
            }
            if (foldedInEngine(context, node, q))
            {
                continue;
            }
            report(context, node, *dq, q, *beforeQ, afterDq, badBefore, badAfter, sink);
        }
    }

    void report(const Context& context, const OnnxNode& node, const OnnxNode& dq, const OnnxNode* q,
                const std::vector<const OnnxNode*>& beforeQ, const std::vector<const OnnxNode*>& afterDq,
                bool badBefore, bool badAfter, FindingSink& sink) const
    {
        const OnnxNode& first = q != nullptr ? *q : dq;
        std::string initializer = beforeQ.empty() ? first.inputs[0] : beforeQ.front()->inputs[0];
        std::string path = initializer;
        for (const OnnxNode* op : beforeQ)
        {
            path += " -> " + op->opType;
        }
        path += (q != nullptr ? " -> " + q->name : std::string()) + " -> " + dq.name;
        for (const OnnxNode* op : afterDq)
        {
            path += " -> " + op->opType;
        }
        path += " -> " + node.name;
        std::string where;
        if (badBefore)
        {
            where = opList(beforeQ) + " between the initializer " + initializer + " and " + first.name;
        }
        if (badAfter)
        {
            where += (where.empty() ? "" : ", and ") + opList(afterDq) + " between " + dq.name + " and " + node.name;
        }
        Finding finding = makeFinding(
            info(),
            "The weight of " + node.opType + " " + node.name + " takes the path " + path + ": " + where +
                ". TensorRT quantizes weights at build time when the initializer feeds the weight QuantizeLinear "
                "directly and the DequantizeLinear feeds the op directly; otherwise the weight Q/DQ may not be "
                "folded, leaving float weights or an extra Quantize/Dequantize layer on the weight path.");
        finding.onnxNodes = {node.name, dq.name};
        if (q != nullptr)
        {
            finding.onnxNodes.push_back(q->name);
        }
        for (const auto* list : {&beforeQ, &afterDq})
        {
            for (const OnnxNode* op : *list)
            {
                finding.onnxNodes.push_back(op->name);
                finding.evidence.push_back(
                    nodeEvidence(context, *op, op->opType + " on the weight path of " + node.name));
            }
        }
        std::string fix = "constant-fold ";
        if (badBefore)
        {
            fix +=
                opList(beforeQ) + " into the initializer " + initializer + " so it feeds " + first.name + " directly";
        }
        if (badAfter)
        {
            fix += std::string(badBefore ? ", and " : "") + "move " + opList(afterDq) + " before " + first.name +
                   " (apply it to " + initializer + ") so " + dq.name + " feeds " + node.name +
                   " directly; re-check the quantization axis after transposing";
        }
        fix +=
            " (e.g. polygraphy surgeon sanitize --fold-constants; NVIDIA ModelOpt pre-transposes constant weights so "
            "the DQ feeds the MatMul directly)";
        finding.fix = fix;
        auto layers = layersOf(context, node.name);
        for (const OnnxNode* member : {q, &dq})
        {
            if (member == nullptr)
            {
                continue;
            }
            for (std::size_t layer : layersOf(context, member->name))
            {
                if (context.correlation.layers[layer].state == LayerState::kInsertedQdq)
                {
                    layers.push_back(layer);
                    finding.evidence.push_back(layerEvidence(
                        context, layer, "", "standalone layer executing the weight quantizer " + member->name));
                }
            }
        }
        finding.engineLayers = layerNames(context, layers);
        if (context.engine() != nullptr)
        {
            finding.costMs = sumTimes(context, layers);
        }
        sink.add(std::move(finding));
    }

    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        for (const auto& mapping : context.correlation.layers)
        {
            if (mapping.state != LayerState::kInsertedQdq || mapping.layer >= plan.layers.size())
            {
                continue;
            }
            const EngineLayer& layer = plan.layers[mapping.layer];
            std::string name = lowered(layer.name);
            if (name.find("weight") == std::string::npos || name.find("quant") == std::string::npos)
            {
                continue;
            }
            Finding finding = makeFinding(
                info(),
                "The weight quantizer \"" + layer.name +
                    "\" runs as its own layer instead of being folded into INT8 weights: likely the weight reaches "
                    "its Q/DQ, or its weighted op, through other ops (Transpose, Reshape, Cast).");
            finding.likely = true;
            finding.engineLayers = {layer.name};
            finding.onnxNodes.assign(mapping.onnxNodes.begin(), mapping.onnxNodes.end());
            finding.evidence.push_back(
                layerEvidence(context, mapping.layer, "Origin",
                              layer.type + (layer.origin.empty() ? "" : " (Origin: " + layer.origin + ")")));
            finding.costMs = sumTimes(context, {mapping.layer});
            finding.fix = "in the ONNX model, constant-fold the ops on the weight path so the initializer feeds the "
                          "weight QuantizeLinear directly and the DequantizeLinear feeds the weighted op directly "
                          "(polygraphy surgeon sanitize --fold-constants)";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeWeightQdqNotFoldable()
{
    return std::make_unique<WeightQdqNotFoldable>();
}

} // namespace qdq::rules
