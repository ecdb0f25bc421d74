// R17 concat-scale-mismatch: a Concat whose DQ-fed inputs and Q-fed output do not share one scale. TensorRT moves the
// output Q onto every input; each DQ(s_i) -> Q(s_out) pair cancels only when the scales are equal, the others stay as
// requantize (Scale/Reformat) work and the concat is not eliminated.
#include "rules/rules.h"
#include "rules/scale_walks.h"

#include "qdq/union_find.h"

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
        const std::vector<ConcatScales> concats = quantizedConcats(graph);
        const std::vector<std::size_t> component = componentsOf(graph, concats);
        std::map<std::size_t, std::vector<const ConcatScales*>> byComponent; // in node order
        for (std::size_t index = 0; index < concats.size(); ++index)
        {
            byComponent[component[index]].push_back(&concats[index]);
        }
        for (std::size_t index = 0; index < concats.size(); ++index)
        {
            const ConcatScales& entry = concats[index];
            if (scalesAgree(graph, entry))
            {
                continue;
            }
            const Mismatch mismatch = mismatchOf(graph, entry);
            // The group that must take one scale: this Concat's Q/DQ nodes and those of every Concat sharing one of
            // them (directly or through a pair partner), transitively. Changing a shared DQ for this Concat alone
            // would break the match of the others (DenseNet: every Concat of a dense block reads the block's input).
            const std::vector<const ConcatScales*>& group = byComponent[component[index]];
            const ScaleGroup scaleGroup = scaleGroupOf(graph, group, *entry.concat);
            Finding finding = mismatchFinding(context, graph, entry, mismatch, scaleGroup);
            if (scaleGroup.largestNode != nullptr && scaleGroup.allKnown)
            {
                finding.edits.push_back(setScaleEdit(scaleGroup, group.size()));
            }
            attachEngine(context, mismatch.nodes, finding);
            sink.add(std::move(finding));
        }
    }

private:
    //! A quantized Concat: its DQ-fed inputs (not through a MaxPool) and the Qs its output reaches. behindPools: the
    //! DQs before a MaxPool whose output pair feeds an input (DQ -> MaxPool -> Q -> DQ -> Concat, Inception's
    //! reduction blocks): TensorRT moves the Concat's Q across that MaxPool as well, so they must share the scale.
    struct ConcatScales
    {
        const OnnxNode* concat = nullptr;
        std::vector<const OnnxNode*> dqs;
        std::vector<ReachedQ> reached;
        std::vector<const OnnxNode*> behindPools;
    };

    //! Whether the Concat's input DQs and output Qs all have one scale.
    static bool scalesAgree(const OnnxGraph& graph, const ConcatScales& entry)
    {
        std::vector<std::optional<double>> scales;
        for (const OnnxNode* dq : entry.dqs)
        {
            scales.push_back(perTensorScale(graph, *dq));
        }
        for (const auto& r : entry.reached)
        {
            scales.push_back(perTensorScale(graph, *r.q));
        }
        return allScalesEqual(scales);
    }

    //! The inputs whose scale differs from the output Q's, and the nodes the finding names.
    struct Mismatch
    {
        std::vector<std::string> mismatched;
        std::vector<std::string> nodes;
        std::vector<std::string> dqNames;
    };

    static Mismatch mismatchOf(const OnnxGraph& graph, const ConcatScales& entry)
    {
        const OnnxNode& q = *entry.reached.front().q;
        auto qScale = perTensorScale(graph, q);
        Mismatch result;
        result.nodes = {entry.concat->name, q.name};
        for (const OnnxNode* dq : entry.dqs)
        {
            result.dqNames.push_back(dq->name);
            auto scale = perTensorScale(graph, *dq);
            if (!qScale || !scale || !scalesEqual(*scale, *qScale))
            {
                result.mismatched.push_back(withScale(graph, *dq));
            }
            result.nodes.push_back(dq->name);
        }
        for (std::size_t i = 1; i < entry.reached.size(); ++i)
        {
            result.nodes.push_back(entry.reached[i].q->name);
        }
        if (result.mismatched.empty())
        {
            // The inputs agree with the first Q but the output has several Qs with different scales.
            for (std::size_t i = 1; i < entry.reached.size(); ++i)
            {
                result.mismatched.push_back("the second output Q " + withScale(graph, *entry.reached[i].q));
            }
        }
        return result;
    }

    //! The Q/DQ nodes of a group of Concats that must take one scale, and the largest of their scales.
    struct ScaleGroup
    {
        std::vector<const OnnxNode*> members;  //!< in node order
        const OnnxNode* largestNode = nullptr; //!< the node holding the largest scale (the first in node order)
        double largest = 0.0;
        bool allKnown = true;
        std::vector<std::string> otherConcats;
        std::vector<std::string> beforePools;
    };

    static ScaleGroup scaleGroupOf(const OnnxGraph& graph, const std::vector<const ConcatScales*>& group,
                                   const OnnxNode& concat)
    {
        ScaleGroup result;
        std::vector<const OnnxNode*>& members = result.members;
        for (const ConcatScales* member : group)
        {
            for (const OnnxNode* dq : member->dqs)
            {
                members.push_back(dq);
            }
            for (const OnnxNode* dq : member->behindPools)
            {
                members.push_back(dq);
            }
            for (const auto& r : member->reached)
            {
                members.push_back(r.q);
            }
        }
        std::sort(members.begin(), members.end(),
                  [](const OnnxNode* a, const OnnxNode* b) { return a->index < b->index; });
        members.erase(std::unique(members.begin(), members.end()), members.end());
        for (const OnnxNode* member : members)
        {
            auto scale = perTensorScale(graph, *member);
            result.allKnown = result.allKnown && scale.has_value();
            if (scale && (result.largestNode == nullptr || *scale > result.largest))
            {
                result.largest = *scale;
                result.largestNode = member;
            }
        }
        for (const ConcatScales* member : group)
        {
            if (member->concat != &concat)
            {
                result.otherConcats.push_back(member->concat->name);
            }
            for (const OnnxNode* dq : member->behindPools)
            {
                if (std::find(result.beforePools.begin(), result.beforePools.end(), dq->name) ==
                    result.beforePools.end())
                {
                    result.beforePools.push_back(dq->name);
                }
            }
        }
        return result;
    }

    Finding mismatchFinding(const Context& context, const OnnxGraph& graph, const ConcatScales& entry,
                            const Mismatch& mismatch, const ScaleGroup& scaleGroup) const
    {
        const OnnxNode& concat = *entry.concat;
        const OnnxNode& q = *entry.reached.front().q;
        Finding finding = makeFinding(
            info(), "Concat " + concat.name + " is quantized by " + withScale(graph, q) +
                        " but its inputs are dequantized by " + nameList(mismatch.mismatched, 4) + ": TensorRT moves " +
                        q.name +
                        " onto every input, and a DQ -> Q pair with different scales cannot cancel, so requantize "
                        "(Scale/Reformat) layers remain and the concat is not eliminated.");
        finding.onnxNodes = mismatch.nodes;
        finding.evidence.push_back(nodeEvidence(
            context, concat, "input scales " + nameList(mismatch.mismatched, 4) + " vs output " + withScale(graph, q)));
        const std::vector<std::string>& otherConcats = scaleGroup.otherConcats;
        const std::vector<std::string>& beforePools = scaleGroup.beforePools;
        finding.fix =
            "give " + concat.name + "'s input DQs (" + nameList(mismatch.dqNames, 4) + ") and " + q.name +
            " one scale" +
            (otherConcats.empty()
                 ? std::string()
                 : ", together with the Q/DQ nodes of the " + std::to_string(otherConcats.size()) +
                       " other Concat(s) that share some of them (" + nameList(otherConcats, 3) + ")") +
            (beforePools.empty() ? std::string()
                                 : ", and the DQ(s) before the MaxPool that feeds an input (" +
                                       nameList(beforePools, 3) + "): TensorRT moves the Q across the MaxPool too") +
            ": calibrate them as one group (the union of their ranges, i.e. the largest scale, " +
            formatScale(scaleGroup.largest) +
            "), as NVIDIA's yolov7 QAT rules and Model Optimizer do for Concat; the pairs then cancel and the "
            "concat is eliminated";
        if (std::string recalibrate = recalibrationAdvice(graph, scaleGroup.members); !recalibrate.empty())
        {
            finding.fix = "one scale for " + concat.name + "'s input DQs (" + nameList(mismatch.dqNames, 4) + ") and " +
                          q.name + " needs calibration: " + recalibrate;
        }
        return finding;
    }

    static FixEdit setScaleEdit(const ScaleGroup& scaleGroup, std::size_t concats)
    {
        FixEdit edit;
        edit.kind = FixEdit::Kind::kSetScale;
        for (const OnnxNode* member : scaleGroup.members)
        {
            edit.nodes.push_back(member->name);
        }
        edit.scaleFrom = scaleGroup.largestNode->name;
        edit.scaleReason = scaleGroup.otherConcats.empty()
                               ? "the largest of the Concat's scales: the union of the inputs' ranges, so no "
                                 "input clips"
                               : "the largest scale of " + std::to_string(concats) +
                                     " Concats that share Q/DQ nodes: the union of their inputs' ranges, so "
                                     "no input clips";
        return edit;
    }

    //! The DQ that dq's Q reads through ops a Q moves across (at least one, a MaxPool among them), or nullptr.
    static const OnnxNode* dequantizeBehindPool(const OnnxGraph& graph, const OnnxNode& dq)
    {
        const OnnxNode* q = dq.inputs.empty() ? nullptr : producerOf(graph, dq.inputs[0]);
        if (q == nullptr || !isQuantize(*q) || q->inputs.empty())
        {
            return nullptr;
        }
        bool pooled = false;
        const OnnxNode* producer = producerOf(graph, q->inputs[0]);
        for (int depth = 0; depth < 8 && producer != nullptr; ++depth)
        {
            if (isDequantize(*producer))
            {
                return pooled ? producer : nullptr;
            }
            if (!movesQ(*producer) || producer->opType == "Concat" || producer->inputs.empty())
            {
                return nullptr;
            }
            pooled = pooled || producer->opType == "MaxPool";
            producer = producerOf(graph, producer->inputs[0]);
        }
        return nullptr;
    }

    //! Whether dq is the DequantizeLinear of a Q/DQ pair between a conv (or its activation) and the MaxPool it feeds
    //! (Conv -> [BN, Q/DQ] -> [Relu] -> Q -> DQ -> MaxPool, DenseNet's stem; ONNX Runtime drops the Relu before a
    //! uint8 Q): conv-act-pool-blocked or qdq-inside-conv-epilogue removes that pair so the conv, activation and pool
    //! fuse into one layer whose output is the pool's Q, and no scale of dq is left to match.
    static bool blocksConvActPool(const OnnxGraph& graph, const OnnxNode& dq)
    {
        const OnnxNode* q = dq.inputs.empty() ? nullptr : producerOf(graph, dq.inputs[0]);
        if (q == nullptr || q->inputs.empty() || dq.outputs.empty())
        {
            return false;
        }
        const NodeRefs consumers = consumersOf(graph, dq.outputs[0]);
        if (consumers.size() != 1 || consumers[0]->opType != "MaxPool")
        {
            return false;
        }
        const OnnxNode* producer = producerOf(graph, q->inputs[0]);
        if (producer != nullptr && isActivation(producer->opType) && !producer->inputs.empty())
        {
            producer = producerOf(graph, producer->inputs[0]);
            for (int depth = 0;
                 depth < 8 && producer != nullptr && (producer->opType == "BatchNormalization" || isQdq(*producer)) &&
                 !producer->inputs.empty();
                 ++depth)
            {
                producer = producerOf(graph, producer->inputs[0]);
            }
        }
        return producer != nullptr && producer->opType == "Conv";
    }

    static std::vector<ConcatScales> quantizedConcats(const OnnxGraph& graph)
    {
        std::vector<ConcatScales> result;
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
            ConcatScales entry;
            entry.concat = &concat;
            entry.reached = std::move(reached);
            for (const auto& source : dequantized)
            {
                if (viaMaxPool.count(source.node) == 0)
                {
                    entry.dqs.push_back(source.node);
                    if (const OnnxNode* behind = dequantizeBehindPool(graph, *source.node);
                        behind != nullptr && !blocksConvActPool(graph, *behind))
                    {
                        entry.behindPools.push_back(behind);
                    }
                }
            }
            if (!entry.dqs.empty())
            {
                result.push_back(std::move(entry));
            }
        }
        return result;
    }

    //! For each Concat, a component id: Concats whose Q/DQ nodes, or those nodes' pair partners (a DQ's Q, a Q's
    //! DQs), overlap are in one component.
    static std::vector<std::size_t> componentsOf(const OnnxGraph& graph, const std::vector<ConcatScales>& concats)
    {
        UnionFind sets(concats.size());
        std::map<const OnnxNode*, std::size_t> owner;
        const auto mark = [&](const OnnxNode* node, std::size_t concat)
        {
            auto [it, inserted] = owner.emplace(node, concat);
            if (!inserted)
            {
                sets.unite(concat, it->second);
            }
        };
        for (std::size_t i = 0; i < concats.size(); ++i)
        {
            std::vector<const OnnxNode*> quantizers; // the Qs whose DQs this Concat's group holds
            std::vector<const OnnxNode*> dequantizers = concats[i].dqs;
            dequantizers.insert(dequantizers.end(), concats[i].behindPools.begin(), concats[i].behindPools.end());
            for (const OnnxNode* dq : dequantizers)
            {
                mark(dq, i);
                const OnnxNode* producer = dq->inputs.empty() ? nullptr : producerOf(graph, dq->inputs[0]);
                if (producer != nullptr && isQuantize(*producer))
                {
                    quantizers.push_back(producer);
                }
            }
            for (const auto& r : concats[i].reached)
            {
                quantizers.push_back(r.q);
            }
            for (const OnnxNode* q : quantizers)
            {
                mark(q, i);
                if (q->outputs.empty())
                {
                    continue;
                }
                for (const OnnxNode* reader : NodeRefs(graph.nodes.data(), graph.consumersOf(q->outputs.ids()[0])))
                {
                    if (isDequantize(*reader))
                    {
                        mark(reader, i);
                    }
                }
            }
        }
        std::vector<std::size_t> component(concats.size());
        for (std::size_t i = 0; i < concats.size(); ++i)
        {
            component[i] = sets.find(i);
        }
        return component;
    }
};

} // namespace

std::unique_ptr<Rule> makeConcatScaleMismatch()
{
    return std::make_unique<ConcatScaleMismatch>();
}

} // namespace qdq::rules
