// R17 concat-scale-mismatch: a Concat whose DQ-fed inputs and Q-fed output do not share one scale. TensorRT moves the
// output Q onto every input; each DQ(s_i) -> Q(s_out) pair cancels only when the scales are equal, the others stay as
// requantize (Scale/Reformat) work and the concat is not eliminated.
#include "rules/rules.h"
#include "rules/scale_walks.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace walks;

class ConcatScaleMismatch final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "concat-scale-mismatch",
            "R17",
            "The DQ-fed inputs and the Q-fed output of a Concat do not share one scale, so the moved Q pairs cannot "
            "cancel",
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
        for (const auto& concat : graph.nodes)
        {
            if (concat.opType != "Concat" || concat.outputs.empty())
            {
                continue;
            }
            auto reached = reachedQuantizers(graph, concat.outputs[0], {});
            if (reached.empty())
            {
                continue;
            }
            // DQ-fed inputs; those reaching the Concat through a MaxPool belong to maxpool-scale-mismatch, and so does
            // every other input fed by the same DQ (the SPPF shape).
            std::vector<ConcatSource> dequantized;
            std::set<const OnnxNode*> viaMaxPool;
            for (const auto& input : concat.inputs)
            {
                ConcatSource source = concatSource(graph, input);
                if (source.kind != ConcatSource::Kind::kDequantized)
                {
                    continue;
                }
                if (source.viaMaxPool)
                {
                    viaMaxPool.insert(source.node);
                }
                if (std::none_of(dequantized.begin(), dequantized.end(),
                                 [&](const ConcatSource& other) { return other.node == source.node; }))
                {
                    dequantized.push_back(source);
                }
            }
            std::vector<const OnnxNode*> dqs;
            for (const auto& source : dequantized)
            {
                if (viaMaxPool.count(source.node) == 0)
                {
                    dqs.push_back(source.node);
                }
            }
            if (dqs.empty())
            {
                continue;
            }
            std::vector<std::optional<double>> scales;
            for (const OnnxNode* dq : dqs)
            {
                scales.push_back(perTensorScale(graph, *dq));
            }
            for (const auto& r : reached)
            {
                scales.push_back(perTensorScale(graph, *r.q));
            }
            if (allScalesEqual(scales))
            {
                continue;
            }
            // Name the inputs whose scale differs from the output Q's.
            const OnnxNode& q = *reached.front().q;
            auto qScale = perTensorScale(graph, q);
            std::vector<std::string> mismatched;
            std::vector<std::string> nodes = {concat.name, q.name};
            double largest = 0.0;
            for (const auto& scale : scales)
            {
                largest = scale ? std::max(largest, *scale) : largest;
            }
            // The node holding the largest scale (the first in input order, then the output Qs).
            const OnnxNode* largestNode = nullptr;
            for (const OnnxNode* candidate : dqs)
            {
                auto scale = perTensorScale(graph, *candidate);
                largestNode = largestNode == nullptr && scale && *scale == largest ? candidate : largestNode;
            }
            for (const auto& r : reached)
            {
                auto scale = perTensorScale(graph, *r.q);
                largestNode = largestNode == nullptr && scale && *scale == largest ? r.q : largestNode;
            }
            std::vector<std::string> dqNames;
            for (const OnnxNode* dq : dqs)
            {
                dqNames.push_back(dq->name);
                auto scale = perTensorScale(graph, *dq);
                if (!qScale || !scale || !scalesEqual(*scale, *qScale))
                {
                    mismatched.push_back(withScale(graph, *dq));
                }
                nodes.push_back(dq->name);
            }
            for (std::size_t i = 1; i < reached.size(); ++i)
            {
                nodes.push_back(reached[i].q->name);
            }
            if (mismatched.empty())
            {
                // The inputs agree with the first Q but the output has several Qs with different scales.
                for (std::size_t i = 1; i < reached.size(); ++i)
                {
                    mismatched.push_back("the second output Q " + withScale(graph, *reached[i].q));
                }
            }
            Finding finding = makeFinding(
                info(), "Concat " + concat.name + " is quantized by " + withScale(graph, q) +
                            " but its inputs are dequantized by " + nameList(mismatched, 4) + ": TensorRT moves " +
                            q.name +
                            " onto every input, and a DQ -> Q pair with different scales cannot cancel, so requantize "
                            "(Scale/Reformat) layers remain and the concat is not eliminated.");
            finding.onnxNodes = nodes;
            finding.evidence.push_back(nodeEvidence(
                context, concat, "input scales " + nameList(mismatched, 4) + " vs output " + withScale(graph, q)));
            finding.fix =
                "give " + concat.name + "'s input DQs (" + nameList(dqNames, 4) + ") and " + q.name +
                " one scale: calibrate them as one group (the union of their ranges, i.e. the "
                "largest scale, " +
                formatScale(largest) +
                "), as NVIDIA's yolov7 QAT rules and Model Optimizer do for Concat; the pairs then cancel and the "
                "concat is eliminated";
            if (largestNode != nullptr && std::all_of(scales.begin(), scales.end(), [](const auto& s) { return s; }))
            {
                FixEdit edit;
                edit.kind = FixEdit::Kind::kSetScale;
                edit.nodes = dqNames;
                for (const auto& r : reached)
                {
                    edit.nodes.push_back(r.q->name);
                }
                edit.scaleFrom = largestNode->name;
                edit.scaleReason = "the largest of the Concat's scales: the union of the inputs' ranges, so no input "
                                   "clips";
                finding.edits.push_back(std::move(edit));
            }
            attachEngine(context, nodes, finding);
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeConcatScaleMismatch()
{
    return std::make_unique<ConcatScaleMismatch>();
}

} // namespace qdq::rules
