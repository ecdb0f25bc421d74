// R19 requantize-before-split: W -> Q(s0) -> DQ(s0) -> Split/Slice -> Q(si) with si != s0. TensorRT swaps Q(si)
// backward across the Split/Slice (VanillaSwapWithFollowingQ); it lands next to DQ(s0), the pair cannot cancel and,
// with no quantizable op to absorb it, runs as a standalone Scale layer (the "dangling DQ+Q").
#include "rules/rules.h"
#include "rules/scale_walks.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace walks;

class RequantizeBeforeSplit final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "requantize-before-split",
            "R19",
            "A Q/DQ pair on a conv output feeds a Split/Slice whose consumers are quantized with other scales, leaving "
            "a dangling DQ+Q that runs as a Scale layer",
            Severity::kWarning,
            "8.4-10.x",
            kNeedsOnnxOrEngine | kReadsPrediction | kReadsCorrelation | kReadsModelValues,
            "the Q/DQ pair before the Split has no constant per-tensor scale that the Qs after it could take"};
        return kInfo;
    }

private:
    //! The Split/Slice ops between a Q and the DQ the prediction paired it with (walking back through commuting ops
    //! other than Concat); empty when the path crosses none.
    static std::vector<const OnnxNode*> splitsBetween(const OnnxGraph& graph, const OnnxNode& q, const OnnxNode& dq)
    {
        std::vector<const OnnxNode*> splits;
        std::string current = q.inputs.empty() ? std::string() : q.inputs[0];
        for (int depth = 0; depth < 16; ++depth)
        {
            const OnnxNode* producer = producerOf(graph, current);
            if (producer == &dq)
            {
                return splits;
            }
            if (producer == nullptr)
            {
                return {};
            }
            if (producer->opType == "Split" || producer->opType == "Slice")
            {
                splits.push_back(producer);
            }
            if (!isCommuting(producer->opType) || producer->opType == "Concat" || producer->inputs.empty())
            {
                return {};
            }
            current = producer->inputs[0];
        }
        return {};
    }

    //! The op whose output Q(s0) quantizes: the weighted op behind BN/activation/SiLU when there is one.
    static const OnnxNode* quantizedProducer(const OnnxGraph& graph, const OnnxNode& q0)
    {
        if (q0.inputs.empty())
        {
            return nullptr;
        }
        const OnnxNode* producer = producerOf(graph, q0.inputs[0]);
        if (producer == nullptr || isQdq(*producer) || isCommuting(producer->opType))
        {
            return nullptr;
        }
        const OnnxNode* node = producer;
        for (int depth = 0; depth < 8 && node != nullptr; ++depth)
        {
            if (isWeighted(graph, *node))
            {
                return node;
            }
            std::string silu = siluInput(graph, *node);
            std::string previous = !silu.empty()                                         ? silu
                                   : (isEpilogue(node->opType) && !node->inputs.empty()) ? node->inputs[0]
                                                                                         : std::string();
            if (previous.empty())
            {
                break;
            }
            node = producerOf(graph, previous);
        }
        return producer;
    }

    //! A DQ the prediction paired with Qs across a Split/Slice, those Qs and the splits between.
    struct Group
    {
        const OnnxNode* dq = nullptr;
        std::vector<const OnnxNode*> qs;
        std::vector<const OnnxNode*> splits;
    };

    static std::vector<Group> requantizedGroups(const Context& context)
    {
        const OnnxGraph& graph = *context.graph();
        std::vector<Group> groups;
        for (const auto& predicted : context.prediction.qdq)
        {
            if (!predicted.isQuantize || predicted.fate != PredictedQdq::Fate::kRequantize)
            {
                continue;
            }
            const OnnxNode* q = graph.findNode(predicted.node);
            const OnnxNode* dq = graph.findNode(predicted.partner);
            if (q == nullptr || dq == nullptr || dq->inputs.empty())
            {
                continue;
            }
            auto splits = splitsBetween(graph, *q, *dq);
            const OnnxNode* q0 = producerOf(graph, dq->inputs[0]);
            if (splits.empty() || q0 == nullptr || !isQuantize(*q0) || quantizedProducer(graph, *q0) == nullptr)
            {
                continue;
            }
            auto group = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.dq == dq; });
            if (group == groups.end())
            {
                groups.push_back({dq, {}, {}});
                group = groups.end() - 1;
            }
            group->qs.push_back(q);
            for (const OnnxNode* split : splits)
            {
                if (std::find(group->splits.begin(), group->splits.end(), split) == group->splits.end())
                {
                    group->splits.push_back(split);
                }
            }
        }
        return groups;
    }

    //! A Q that TensorRT merged into a group's Q (same input, same scale: HorizontalMergeQNodes) is that Q in the
    //! engine: it takes the new scale too, else after the edit it is the one that meets the DQ with a different
    //! scale (sample b: the residual Add's Q behind the Split).
    static void addMergedQs(const Context& context, std::vector<Group>& groups)
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& predicted : context.prediction.qdq)
        {
            if (!predicted.isQuantize || predicted.fate != PredictedQdq::Fate::kCancelled)
            {
                continue;
            }
            for (auto& group : groups)
            {
                const bool mergedIntoGroup = std::any_of(
                    group.qs.begin(), group.qs.end(), [&](const OnnxNode* q) { return q->name == predicted.partner; });
                const OnnxNode* duplicate = mergedIntoGroup ? graph.findNode(predicted.node) : nullptr;
                if (duplicate != nullptr && isQuantize(*duplicate) &&
                    std::find(group.qs.begin(), group.qs.end(), duplicate) == group.qs.end())
                {
                    group.qs.push_back(duplicate);
                    break;
                }
            }
        }
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        std::vector<Group> groups = requantizedGroups(context);
        addMergedQs(context, groups);
        for (const auto& group : groups)
        {
            sink.add(groupFinding(context, group));
        }
    }

    Finding groupFinding(const Context& context, const Group& group) const
    {
        const OnnxGraph& graph = *context.graph();
        const OnnxNode& dq = *group.dq;
        const OnnxNode& q0 = *producerOf(graph, dq.inputs[0]);
        const OnnxNode& producer = *quantizedProducer(graph, q0);
        auto s0 = perTensorScale(graph, dq);
        std::vector<std::string> qs;
        std::vector<std::string> splitNames;
        std::vector<std::string> nodes = {producer.name, q0.name, dq.name};
        for (const OnnxNode* split : group.splits)
        {
            splitNames.push_back(split->name);
            nodes.push_back(split->name);
        }
        for (const OnnxNode* q : group.qs)
        {
            qs.push_back(withScale(graph, *q));
            nodes.push_back(q->name);
        }
        std::vector<std::string> qNames(nodes.end() - static_cast<std::ptrdiff_t>(group.qs.size()), nodes.end());
        Finding finding =
            makeFinding(info(), producer.opType + " " + producer.name + " is quantized by " + q0.name + " -> " +
                                    withScale(graph, dq) + ", then " + nameList(splitNames, 2) + " feeds " +
                                    nameList(qs, 3) + ": TensorRT likely swaps those Qs back across the " +
                                    group.splits.front()->opType + ", each meets " + dq.name +
                                    " with a different scale, and the dangling DQ+Q runs as a Scale (requantize) layer "
                                    "between " +
                                    producer.name + " and its consumers.");
        finding.likely = true;
        finding.onnxNodes = nodes;
        finding.evidence.push_back(nodeEvidence(context, dq,
                                                "scale " + (s0 ? formatScale(*s0) : std::string("unknown")) + " vs " +
                                                    nameList(qs, 3) + " after " + nameList(splitNames, 2)));
        finding.fix = "remove the Q/DQ pair " + q0.name + " / " + dq.name + " after " + producer.name +
                      " (the Qs on the " + group.splits.front()->opType +
                      " consumers then propagate back and fuse into " + producer.name + "), or give " +
                      nameList(qNames, 3) + " the scale of " + dq.name + " (" +
                      (s0 ? formatScale(*s0) : std::string("its scale")) + ") so the pairs cancel";
        std::vector<const OnnxNode*> grouped = {&dq};
        grouped.insert(grouped.end(), group.qs.begin(), group.qs.end());
        if (std::string recalibrate = recalibrationAdvice(graph, grouped); !recalibrate.empty())
        {
            finding.fix = "remove the Q/DQ pair " + q0.name + " / " + dq.name + " after " + producer.name +
                          " (the Qs on the " + group.splits.front()->opType +
                          " consumers then propagate back and fuse into " + producer.name +
                          "); giving them one scale needs calibration: " + recalibrate;
        }
        if (s0)
        {
            // The values reaching the Split already carry dq's scale: requantizing them with it is exact, so
            // this edit costs no accuracy beyond what q0 already costs (the old scales' rounding goes).
            finding.edits.push_back(setScaleEdit(
                qNames, dq.name,
                "the scale of " + dq.name + ", which the values reaching the " + group.splits.front()->opType +
                    " already carry: quantizing them again with it is exact and the pairs cancel"));
        }
        attachEngine(context, nodes, finding);
        addSwapEvidence(context, group, finding);
        return finding;
    }

    //! The build log's swaps of a Q across the group's splits.
    static void addSwapEvidence(const Context& context, const Group& group, Finding& finding)
    {
        for (const OptimizerEvent* event : logEvents(context, OptimizerEventKind::kSwap))
        {
            for (const OnnxNode* split : group.splits)
            {
                if (event->subject == split->name)
                {
                    finding.evidence.push_back(
                        logEvidence(context, *event, "Swapping " + event->subject + " with " + event->object));
                }
            }
        }
    }

    //! Engine only: a standalone INT8 -> INT8 Q/DQ layer named after a Q that the build log swapped across a
    //! Slice/Split.
    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        auto swaps = logEvents(context, OptimizerEventKind::kSwap);
        if (swaps.empty())
        {
            return;
        }
        for (const auto& mapping : context.correlation.layers)
        {
            const EngineLayer& layer = plan.layers[mapping.layer];
            if (mapping.state != LayerState::kInsertedQdq || !isQuantized(inputPrecision(layer)) ||
                !isQuantized(outputPrecision(layer)))
            {
                continue;
            }
            std::string token = singleToken(layer);
            if (token.empty())
            {
                continue;
            }
            for (const OptimizerEvent* swap : swaps)
            {
                bool slice = swap->subject.find("Slice") != std::string::npos ||
                             swap->subject.find("Split") != std::string::npos;
                if (!slice || stripTrtSuffixes(swap->object) != token)
                {
                    continue;
                }
                Finding finding = makeFinding(
                    info(), "\"" + layer.name + "\" requantizes INT8 to INT8 after TensorRT swapped " + token +
                                " back across " + swap->subject + ": a Q/DQ pair likely sits between a conv and that " +
                                "Split/Slice, and " + token + " uses a different scale, leaving a dangling DQ+Q.");
                finding.likely = true;
                finding.engineLayers.push_back(layer.name);
                finding.onnxNodes = {token, swap->subject};
                finding.evidence.push_back(
                    layerEvidence(context, mapping.layer, "",
                                  layer.type + ", " + std::string(precisionName(inputPrecision(layer))) + " -> " +
                                      std::string(precisionName(outputPrecision(layer)))));
                finding.evidence.push_back(
                    logEvidence(context, *swap, "Swapping " + swap->subject + " with " + swap->object));
                finding.costMs = sumTimes(context, {mapping.layer});
                finding.fix = "in the ONNX model, remove the Q/DQ pair between the conv and " + swap->subject +
                              ", or give " + token + " the scale of that pair so the DQ -> Q cancels";
                sink.add(std::move(finding));
                break;
            }
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeRequantizeBeforeSplit()
{
    return std::make_unique<RequantizeBeforeSplit>();
}

} // namespace qdq::rules
