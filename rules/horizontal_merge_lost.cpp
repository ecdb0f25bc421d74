// R26 horizontal-merge-lost: sibling weighted ops of the same shape read one tensor through different Q/DQ pairs with
// different scales. TensorRT merges parallel layers on one input (`A || B`) only when they read the same INT8 tensor;
// different scales keep them apart (and leave a standalone Quantize).
#include "rules/rules.h"
#include "rules/scale_walks.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace walks;

class HorizontalMergeLost final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "horizontal-merge-lost",
            "R26",
            "Parallel convolutions on one tensor read it through Q/DQ pairs with different scales, so TensorRT cannot "
            "merge them into one layer",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnx | kReadsCorrelation | kReadsModelValues,
            "a sibling's input scale is not a constant per-tensor scale"};
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
        for (const auto& input : graph.graphInputs)
        {
            checkTensor(context, input, nullptr, sink);
        }
        for (const auto& node : graph.nodes)
        {
            if (isQdq(node) || node.opType == "Constant")
            {
                continue;
            }
            for (const auto& output : node.outputs)
            {
                checkTensor(context, output, &node, sink);
            }
        }
    }

private:
    struct Branch
    {
        const OnnxNode* q = nullptr;
        const OnnxNode* dq = nullptr;
        const OnnxNode* weighted = nullptr;
        std::string signature;
    };

    //! What must match for TensorRT to merge two convolutions horizontally: op, kernel, strides, pads, dilations,
    //! group (output channels may differ).
    static std::string signature(const OnnxGraph& graph, const OnnxNode& node)
    {
        std::string text = node.opType;
        if (node.inputs.size() >= 2)
        {
            std::string weight = node.inputs[1];
            for (int depth = 0; depth < 4; ++depth)
            {
                const OnnxNode* producer = producerOf(graph, weight);
                if (producer == nullptr || producer->inputs.empty() ||
                    !(isQdq(*producer) || producer->opType == "Identity"))
                {
                    break;
                }
                weight = producer->inputs[0];
            }
            if (const OnnxConstant* constant = graph.constant(weight))
            {
                text += " k";
                for (std::size_t i = 2; i < constant->dims.size(); ++i)
                {
                    text += "x" + std::to_string(constant->dims[i]);
                }
            }
        }
        for (const char* name : {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad"})
        {
            if (const OnnxAttribute* attribute = node.attribute(name))
            {
                text += std::string(" ") + name + "=";
                for (auto value : attribute->ints)
                {
                    text += std::to_string(value) + ",";
                }
                text += std::to_string(attribute->i) + attribute->s;
            }
        }
        return text;
    }

    //! The weighted ops that read `tensor` through a Q -> DQ pair of their own, with their merge signatures.
    static std::vector<Branch> quantizedBranches(const OnnxGraph& graph, const std::string& tensor)
    {
        std::vector<Branch> branches;
        for (const OnnxNode* q : consumersOf(graph, tensor))
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
                for (const OnnxNode* weighted : consumersOf(graph, dq->outputs[0]))
                {
                    if (isWeighted(graph, *weighted) && !weighted->inputs.empty() &&
                        weighted->inputs[0] == dq->outputs[0])
                    {
                        branches.push_back({q, dq, weighted, {}});
                    }
                }
            }
        }
        return branches;
    }

    void checkTensor(const Context& context, const std::string& tensor, const OnnxNode* producer,
                     FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        std::vector<Branch> branches = quantizedBranches(graph, tensor);
        if (branches.size() < 2)
        {
            return; // nothing to merge with
        }
        for (Branch& branch : branches)
        {
            branch.signature = signature(graph, *branch.weighted);
        }
        // Group siblings that TensorRT could merge; report groups whose Q scales differ.
        std::vector<std::string> done;
        for (const auto& branch : branches)
        {
            if (std::find(done.begin(), done.end(), branch.signature) != done.end())
            {
                continue;
            }
            done.push_back(branch.signature);
            std::vector<const Branch*> group;
            std::vector<std::optional<double>> scales;
            for (const auto& other : branches)
            {
                if (other.signature == branch.signature)
                {
                    group.push_back(&other);
                    scales.push_back(perTensorScale(graph, *other.q));
                }
            }
            if (group.size() < 2 || allScalesEqual(scales))
            {
                continue;
            }
            if (mergedInEngine(context, group))
            {
                continue; // the engine merged them after all
            }
            sink.add(unmergedFinding(context, tensor, producer, group, scales));
        }
    }

    Finding unmergedFinding(const Context& context, const std::string& tensor, const OnnxNode* producer,
                            const std::vector<const Branch*>& group,
                            const std::vector<std::optional<double>>& scales) const
    {
        const OnnxGraph& graph = *context.graph();
        std::vector<std::string> convs;
        std::vector<std::string> qs;
        std::vector<std::string> qNames;
        for (const Branch* b : group)
        {
            convs.push_back(b->weighted->name);
            if (std::find(qNames.begin(), qNames.end(), b->q->name) == qNames.end())
            {
                qNames.push_back(b->q->name);
                qs.push_back(withScale(graph, *b->q));
            }
        }
        Finding finding =
            makeFinding(info(), nameList(convs, 4) + " read the same tensor " + tensor +
                                    " through different Q/DQ pairs (" + nameList(qs, 4) +
                                    "): TensorRT likely cannot merge them into one `A || B` layer as the implicit "
                                    "engine does, and runs them separately.");
        finding.likely = true;
        if (producer != nullptr)
        {
            finding.onnxNodes.push_back(producer->name);
        }
        finding.onnxNodes.insert(finding.onnxNodes.end(), convs.begin(), convs.end());
        finding.onnxNodes.insert(finding.onnxNodes.end(), qNames.begin(), qNames.end());
        finding.evidence.push_back(
            nodeEvidence(context, *group.front()->weighted,
                         "siblings " + nameList(convs, 4) + " with equal geometry, input scales " + nameList(qs, 4)));
        finding.fix = "quantize " + tensor + " once: one Q/DQ pair (one scale) consumed by " + nameList(convs, 4) +
                      " instead of " + nameList(qNames, 4) + " (see also fanout-scale-mismatch)";
        std::vector<const OnnxNode*> siblingQs;
        for (const Branch* b : group)
        {
            if (std::find(siblingQs.begin(), siblingQs.end(), b->q) == siblingQs.end())
            {
                siblingQs.push_back(b->q);
            }
        }
        if (std::string recalibrate = recalibrationAdvice(graph, siblingQs); !recalibrate.empty())
        {
            finding.fix =
                "quantizing " + tensor + " once for " + nameList(convs, 4) + " needs calibration: " + recalibrate;
        }
        addWidestScaleEdit(graph, group, scales, qNames, finding);
        addEngineLayers(context, convs, qNames, finding);
        return finding;
    }

    //! The edit: the siblings' Qs (with their DQs) take the largest of their scales; identical Qs on one tensor are
    //! then merged by TensorRT and the convs read one INT8 tensor.
    static void addWidestScaleEdit(const OnnxGraph& graph, const std::vector<const Branch*>& group,
                                   const std::vector<std::optional<double>>& scales,
                                   const std::vector<std::string>& qNames, Finding& finding)
    {
        const Branch* widest = nullptr;
        for (std::size_t i = 0; i < group.size(); ++i)
        {
            if (scales[i] && (widest == nullptr || *scales[i] > *perTensorScale(graph, *widest->q)))
            {
                widest = group[i];
            }
        }
        if (widest != nullptr && std::all_of(scales.begin(), scales.end(), [](const auto& s) { return s; }))
        {
            finding.edits.push_back(
                setScaleEdit(qNames, widest->q->name,
                             "the largest of the sibling convs' input scales: it covers every branch's range, "
                             "and identical Qs on one tensor are merged, so the convs read one INT8 tensor"));
        }
    }

    static void addEngineLayers(const Context& context, const std::vector<std::string>& convs,
                                const std::vector<std::string>& qNames, Finding& finding)
    {
        const EnginePlan* plan = context.engine();
        if (plan == nullptr)
        {
            return;
        }
        std::vector<std::size_t> layers;
        for (const auto& conv : convs)
        {
            for (std::size_t layer : layersOf(context, conv))
            {
                layers.push_back(layer);
                finding.engineLayers.push_back(plan->layers[layer].name);
                finding.evidence.push_back(layerEvidence(context, layer, "", "separate layer for " + conv));
            }
        }
        auto standalone = layersOfNodes(context, qNames).standalone;
        finding.costMs = sumTimes(context, standalone);
    }

    //! True when the engine (or the build log) shows the siblings in one merged layer.
    static bool mergedInEngine(const Context& context, const std::vector<const Branch*>& group)
    {
        if (context.engine() == nullptr)
        {
            return false;
        }
        auto first = layersOf(context, group.front()->weighted->name);
        for (std::size_t layer : first)
        {
            const auto& nodes = context.correlation.layers[layer].onnxNodes;
            bool all = true;
            for (const Branch* b : group)
            {
                all = all && std::find(nodes.begin(), nodes.end(), b->weighted->name) != nodes.end();
            }
            if (all)
            {
                return true;
            }
        }
        return false;
    }
};

} // namespace

std::unique_ptr<Rule> makeHorizontalMergeLost()
{
    return std::make_unique<HorizontalMergeLost>();
}

} // namespace qdq::rules
