// One plan: no two findings of a report may ask for contradicting edits of the model (docs/savings.md, "One plan").
// The edits are compared, not the advice's words: two scales for one Q/DQ node or one tensor, a Q/DQ pair removed by
// one finding that another inserts on or rescales.

#include "qdq/patterns.h"
#include "qdq/root_causes.h"

#include <map>
#include <set>

namespace qdq
{

namespace
{

//! The scale a finding proposes, by the node it is taken from: equal values from different nodes do not conflict.
struct ProposedScale
{
    std::size_t finding = 0;
    std::string from;
    std::optional<double> value;
};

std::optional<double> scaleOf(const OnnxGraph* graph, const std::string& node)
{
    if (graph == nullptr)
    {
        return std::nullopt;
    }
    const OnnxNode* found = graph->findNode(node);
    return found != nullptr ? patterns::perTensorScale(*graph, *found) : std::nullopt;
}

bool sameScale(const ProposedScale& a, const ProposedScale& b)
{
    if (a.from == b.from)
    {
        return true;
    }
    return a.value && b.value && patterns::scalesEqual(*a.value, *b.value);
}

std::string findingName(const Report& report, std::size_t f)
{
    return "finding " + std::to_string(f + 1) + " (" + report.findings[f].rule + ")";
}

//! Reports each pair of different scales proposed for one target (a node, or a tensor a Q/DQ is inserted on).
void addScaleConflicts(const Report& report, const std::map<std::string, std::vector<ProposedScale>>& proposals,
                       const std::string& what, std::vector<std::string>& conflicts)
{
    for (const auto& [target, scales] : proposals)
    {
        for (std::size_t i = 1; i < scales.size(); ++i)
        {
            if (!sameScale(scales[0], scales[i]))
            {
                conflicts.push_back(what + " " + target + ": " + findingName(report, scales[0].finding) +
                                    " proposes the scale of " + scales[0].from + ", " +
                                    findingName(report, scales[i].finding) + " the scale of " + scales[i].from);
                break;
            }
        }
    }
}

} // namespace

std::vector<std::string> adviceConflicts(const Report& report, const Inputs& inputs)
{
    const OnnxGraph* graph = inputs.onnx ? &*inputs.onnx : nullptr;
    std::map<std::string, std::vector<ProposedScale>> nodeScales;   // Q/DQ node -> scales proposed for it
    std::map<std::string, std::vector<ProposedScale>> tensorScales; // tensor a Q/DQ is inserted on -> scales
    std::map<std::string, std::size_t> removedBy;                   // Q/DQ node -> the finding removing it
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        for (const FixEdit& edit : report.findings[f].edits)
        {
            ProposedScale proposed{f, edit.scaleFrom, scaleOf(graph, edit.scaleFrom)};
            switch (edit.kind)
            {
            case FixEdit::Kind::kSetScale:
                for (const auto& node : edit.nodes)
                {
                    nodeScales[node].push_back(proposed);
                    // One scale per tensor: a Quantize that takes a scale decides it for the tensor it reads.
                    const OnnxNode* found = graph != nullptr ? graph->findNode(node) : nullptr;
                    if (found != nullptr && patterns::isQuantize(*found) && !found->inputs.empty())
                    {
                        tensorScales[found->inputs[0]].push_back(proposed);
                    }
                }
                break;
            case FixEdit::Kind::kInsertQdq:
                if (!edit.scaleFrom.empty())
                {
                    tensorScales[edit.tensor].push_back(proposed);
                }
                break;
            case FixEdit::Kind::kRemoveQdqPair:
                for (const auto& node : edit.nodes)
                {
                    removedBy.try_emplace(node, f);
                }
                break;
            default:
                break;
            }
        }
    }
    std::vector<std::string> conflicts;
    addScaleConflicts(report, nodeScales, "two scales for Q/DQ node", conflicts);
    addScaleConflicts(report, tensorScales, "two scales for tensor", conflicts);
    for (const auto& [node, scales] : nodeScales)
    {
        if (auto removed = removedBy.find(node); removed != removedBy.end() && removed->second != scales[0].finding)
        {
            conflicts.push_back("Q/DQ node " + node + ": " + findingName(report, removed->second) + " removes it, " +
                                findingName(report, scales[0].finding) + " gives it the scale of " + scales[0].from);
        }
    }
    return conflicts;
}

} // namespace qdq
