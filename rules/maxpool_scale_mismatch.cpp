// R21 maxpool-scale-mismatch: a MaxPool (or a chain of them, SPPF) whose output is quantized with a scale other than
// the one of its input's DQ or of the input's other quantized consumers. The DQ crosses the MaxPool (it commutes) and
// meets a Q with a different scale: a requantize layer instead of an INT8 pooling chain.
#include "rules/rules.h"
#include "rules/scale_walks.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace walks;

class MaxPoolScaleMismatch final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "maxpool-scale-mismatch",
            "R21",
            "A MaxPool's output is quantized with a scale other than its input's (or its input's other consumers'), "
            "so requantize layers surround the pooling",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnx | kReadsCorrelation | kReadsModelValues,
            ""};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph* graphPointer = context.graph();
        if (graphPointer == nullptr)
        {
            return;
        }
        const OnnxGraph& graph = *graphPointer;
        // Group the MaxPools by the tensor their chain starts from (a DQ output or a compute op's output).
        std::vector<std::pair<std::string, std::vector<const OnnxNode*>>> groups;
        for (const auto& pool : graph.nodes)
        {
            if (pool.opType != "MaxPool" || pool.inputs.empty())
            {
                continue;
            }
            std::string root = pool.inputs[0];
            for (int depth = 0; depth < 32; ++depth)
            {
                const OnnxNode* producer = producerOf(graph, root);
                if (producer == nullptr || isDequantize(*producer) || !movesQ(*producer) ||
                    producer->opType == "Concat" || producer->inputs.empty())
                {
                    break;
                }
                root = producer->inputs[0];
            }
            auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == root; });
            if (group == groups.end())
            {
                groups.push_back({root, {}});
                group = groups.end() - 1;
            }
            group->second.push_back(&pool);
        }
        for (const auto& [root, pools] : groups)
        {
            checkGroup(context, root, pools, sink);
        }
    }

private:
    void checkGroup(const Context& context, const std::string& root, const std::vector<const OnnxNode*>& pools,
                    FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        const OnnxNode* dq = producerOf(graph, root);
        if (dq != nullptr && !isDequantize(*dq))
        {
            dq = nullptr;
        }
        auto reached = reachedQuantizers(graph, root, {});
        // Reference scales: the input DQ, else the input's Qs reached without crossing a MaxPool (siblings).
        std::vector<std::string> references;
        std::optional<double> reference;
        if (dq != nullptr)
        {
            reference = perTensorScale(graph, *dq);
            references.push_back(dq->name);
        }
        else
        {
            for (const auto& r : reached)
            {
                if (r.direct)
                {
                    references.push_back(r.q->name);
                    reference = reference ? reference : perTensorScale(graph, *r.q);
                }
            }
        }
        if (!reference)
        {
            return; // no quantized input to compare with: a plain fan-out is fanout-scale-mismatch's
        }
        std::vector<const OnnxNode*> mismatched;
        for (const auto& r : reached)
        {
            auto scale = perTensorScale(graph, *r.q);
            if (r.viaMaxPool && scale && !scalesEqual(*scale, *reference))
            {
                mismatched.push_back(r.q);
            }
        }
        if (mismatched.empty())
        {
            return;
        }
        std::vector<std::string> poolNames;
        std::vector<std::string> qs;
        std::vector<std::string> qNames;
        for (const OnnxNode* pool : pools)
        {
            poolNames.push_back(pool->name);
        }
        for (const OnnxNode* q : mismatched)
        {
            qs.push_back(withScale(graph, *q));
            qNames.push_back(q->name);
        }
        const OnnxNode* referenceNode = graph.findNode(references.front());
        std::string referenceText = referenceNode != nullptr ? withScale(graph, *referenceNode) : references.front();
        Finding finding = makeFinding(
            info(),
            "MaxPool " + nameList(poolNames, 3) +
                (dq != nullptr ? " is fed by " : " reads a tensor also quantized by ") + referenceText +
                " but its output is quantized by " + nameList(qs, 3) +
                ": the quantization crosses the MaxPool and meets a different scale, so a requantize (Scale/Reformat) "
                "layer replaces part of the INT8 pooling chain.");
        finding.onnxNodes = poolNames;
        finding.onnxNodes.insert(finding.onnxNodes.end(), references.begin(), references.end());
        finding.onnxNodes.insert(finding.onnxNodes.end(), qNames.begin(), qNames.end());
        finding.evidence.push_back(nodeEvidence(context, *pools.front(),
                                                "input scale " + formatScale(*reference) + " (" + references.front() +
                                                    "), output " + nameList(qs, 3)));
        finding.fix =
            "use one scale for the MaxPool input and output quantizers: give " + nameList(qNames, 3) +
            " the scale of " + references.front() + " (" + formatScale(*reference) +
            "), as NVIDIA's yolov7 QAT rules do for MaxPool branches; in SPPF blocks quantize all MaxPool inputs "
            "and the Concat they feed with that one scale";
        std::vector<const OnnxNode*> grouped(mismatched.begin(), mismatched.end());
        if (referenceNode != nullptr)
        {
            grouped.insert(grouped.begin(), referenceNode);
        }
        if (std::string recalibrate = recalibrationAdvice(graph, grouped); !recalibrate.empty())
        {
            finding.fix = "one scale for the MaxPool input and output quantizers needs calibration: " + recalibrate;
        }
        if (referenceNode != nullptr)
        {
            finding.edits.push_back(
                setScaleEdit(qNames, referenceNode->name,
                             "the MaxPool input's scale: max pooling commutes with quantization, so its output keeps "
                             "its input's range"));
        }
        std::vector<std::string> attached = references;
        attached.insert(attached.end(), qNames.begin(), qNames.end());
        attached.insert(attached.end(), poolNames.begin(), poolNames.end());
        attachEngine(context, attached, finding);
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeMaxPoolScaleMismatch()
{
    return std::make_unique<MaxPoolScaleMismatch>();
}

} // namespace qdq::rules
