// The findings' graph edits as changes of the model file: duplicates merged, conflicts refused in a fixed order
// (rewrites of QOperator ops, then removals, then plugin unwraps, then float biases, then insertions, then scale
// unifications; within each, the order of the report's findings), new nodes and tensors named after the rule and the
// tensor they serve. docs/fix.md describes the order and the names.
#include "qdq/fix.h"
#include "qdq/patterns.h"
#include "qdq/union_find.h"
#include "src/fixes/fix_planner.h"
#include "src/fixes/quantized_op_rewrite.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace qdq::fix_planning
{

std::string formatScale(double scale)
{
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.8g", scale);
    return buffer;
}

const RuleInfo* ruleInfo(const std::string& slug)
{
    for (const auto& rule : allRules())
    {
        if (rule->info().slug == slug)
        {
            return &rule->info();
        }
    }
    return nullptr;
}

FixPlan Planner::run()
{
    collect();
    // First: a QOperator op rewritten in QDQ form is what every other edit of such a model builds on.
    for (auto& asked : mAsked)
    {
        if (asked.edit.kind == FixEdit::Kind::kRewriteQuantizedOp)
        {
            planRewriteQuantizedOp(asked);
        }
    }
    for (auto& asked : mAsked)
    {
        if (asked.edit.kind == FixEdit::Kind::kRemoveQdqPair)
        {
            planRemoval(asked);
        }
    }
    for (auto& asked : mAsked)
    {
        if (asked.edit.kind == FixEdit::Kind::kUnwrapPlugin)
        {
            planUnwrapPlugin(asked);
        }
    }
    for (auto& asked : mAsked)
    {
        if (asked.edit.kind == FixEdit::Kind::kFloatBias)
        {
            planFloatBias(asked);
        }
    }
    reconcileInsertionScales();
    planInsertions();
    mergeOverlappingScaleGroups();
    for (auto& asked : mAsked)
    {
        if (asked.edit.kind == FixEdit::Kind::kSetScale)
        {
            planSetScale(asked);
        }
    }
    for (auto& asked : mAsked)
    {
        if (asked.edit.kind == FixEdit::Kind::kSymmetricInt8)
        {
            planSymmetricInt8(asked);
        }
    }
    dropOrphanedInitializers();
    return std::move(mPlan);
}

//! Initializers whose every reader the plan removes or rewires away (a removed Q/DQ pair's scale and zero point)
//! are left out too: the fixed model otherwise carried them unread (115 of resnet18-ort-qdq's 243 initializers
//! once its Q/DQ pairs were removed, 18 of vit-tiny-ort-qdq's 180; ONNX Runtime drops each with a warning). An
//! initializer the model already left unread stays, as do graph outputs and what a new node or a rewired input
//! reads. Not done for a model with subgraphs, whose nodes may read a main-graph initializer by name.
void Planner::dropOrphanedInitializers()
{
    const ModelEdits& edits = mPlan.modelEdits;
    if ((edits.removeNodes.empty() && edits.rewireInputs.empty()) || hasSubgraphs())
    {
        return;
    }
    std::vector<bool> removed(mGraph.nodes.size(), false);
    for (const std::uint32_t node : edits.removeNodes)
    {
        if (node < removed.size())
        {
            removed[node] = true;
        }
    }
    std::set<std::pair<std::uint32_t, std::uint32_t>> rewired;
    std::set<std::string> stillRead;
    for (const auto& rewire : edits.rewireInputs)
    {
        rewired.emplace(rewire.node, rewire.inputSlot);
        stillRead.insert(rewire.newInput);
    }
    for (const auto& insert : edits.insertNodes)
    {
        stillRead.insert(insert.node.inputs.begin(), insert.node.inputs.end());
    }
    std::set<std::string> settled(edits.removeInitializers.begin(), edits.removeInitializers.end());
    for (const auto& replaced : edits.replaceInitializers)
    {
        settled.insert(replaced.name);
    }
    // Only what a removed node or a rewired slot read can have lost its last reader: the work follows the edits,
    // not the model's size. In the model's initializer order, for a stable report.
    std::vector<const OnnxConstant*> candidates;
    const auto consider = [&](const std::string& tensor)
    {
        const OnnxConstant* constant = tensor.empty() ? nullptr : mGraph.constant(tensor);
        if (constant != nullptr && !constant->fromConstantNode)
        {
            candidates.push_back(constant);
        }
    };
    for (const std::uint32_t node : edits.removeNodes)
    {
        if (node < mGraph.nodes.size())
        {
            for (const auto& input : mGraph.nodes[node].inputs)
            {
                consider(input);
            }
        }
    }
    for (const auto& rewire : edits.rewireInputs)
    {
        if (rewire.node < mGraph.nodes.size() && rewire.inputSlot < mGraph.nodes[rewire.node].inputs.size())
        {
            consider(mGraph.nodes[rewire.node].inputs[rewire.inputSlot]);
        }
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    std::vector<std::string> orphans;
    for (const OnnxConstant* constant : candidates)
    {
        const std::string& name = constant->name;
        if (settled.count(name) != 0 || stillRead.count(name) != 0 || isGraphOutput(name) ||
            patterns::producerOf(mGraph, name) != nullptr)
        {
            continue;
        }
        const auto reads = readers(name);
        const bool allGone = !reads.empty() && std::all_of(reads.begin(), reads.end(),
                                                           [&](const auto& read)
                                                           { return removed[read.first] || rewired.count(read) != 0; });
        if (allGone && settled.insert(name).second)
        {
            orphans.push_back(name);
            tellOrphan(name, reads);
        }
    }
    mPlan.modelEdits.removeInitializers.insert(mPlan.modelEdits.removeInitializers.end(), orphans.begin(),
                                               orphans.end());
}

//! Says on the planned edit that removed or rewired the initializer's first reader that the initializer goes too.
void Planner::tellOrphan(const std::string& initializer,
                         const std::vector<std::pair<std::uint32_t, std::uint32_t>>& reads)
{
    if (mEditOfNode.empty())
    {
        // Built once: looking through every edit per initializer was quadratic in the number of removed pairs.
        for (std::size_t e = mPlan.edits.size(); e-- > 0;) // the first edit naming a node wins
        {
            for (const auto* names : {&mPlan.edits[e].removed, &mPlan.edits[e].touched})
            {
                for (const std::string& node : *names)
                {
                    mEditOfNode[node] = e;
                }
            }
        }
    }
    const auto found = mEditOfNode.find(mGraph.nodes[reads.front().first].name);
    if (found != mEditOfNode.end())
    {
        mPlan.edits[found->second].changed.push_back("initializer " + initializer +
                                                     " removed: no node reads it any more");
    }
}

bool Planner::hasSubgraphs() const
{
    return std::any_of(mGraph.nodes.begin(), mGraph.nodes.end(),
                       [](const OnnxNode& node)
                       {
                           return node.opType == "If" || node.opType == "Loop" || node.opType == "Scan" ||
                                  std::any_of(node.attributes.begin(), node.attributes.end(),
                                              [](const OnnxAttribute& attribute)
                                              { return attribute.kind == OnnxAttribute::Kind::kGraph; });
                       });
}

bool Planner::selected(const std::string& slug) const
{
    return mOptions.rules.empty() ||
           std::find(mOptions.rules.begin(), mOptions.rules.end(), slug) != mOptions.rules.end();
}

std::string Planner::editKey(const FixEdit& edit)
{
    std::string key = std::to_string(static_cast<int>(edit.kind)) + "|" + edit.tensor;
    for (const auto& [node, slot] : edit.consumers)
    {
        key += "|" + node + "#" + std::to_string(slot);
    }
    for (const auto& node : edit.nodes)
    {
        key += "|" + node;
    }
    return key;
}

//! Every finding's edits in report order, one entry per distinct edit (the rules that asked for it listed).
void Planner::collect()
{
    std::map<std::string, std::size_t> byKey;
    for (const auto& finding : mReport.findings)
    {
        if (finding.edits.empty())
        {
            const RuleInfo* info = ruleInfo(finding.rule);
            // An info finding of a rule that warns otherwise has its own advice: standalone-qdq's Quantize of a
            // float network input is expected, and the rule's reason ("needs a decision about the model's
            // accuracy") is about the warnings.
            const bool lesserInfo = info != nullptr && finding.severity == Severity::kInfo &&
                                    info->defaultSeverity != Severity::kInfo && !finding.fix.empty();
            std::string why = info != nullptr && !info->notFixable.empty() && !lesserInfo
                                  ? info->notFixable
                                  : "its advice is no graph edit fix can make: " + finding.fix;
            mPlan.unfixed.push_back({finding.rule, finding.message, why});
            continue;
        }
        if (!selected(finding.rule))
        {
            mPlan.unfixed.push_back({finding.rule, finding.message, "not among --rules"});
            continue;
        }
        for (const auto& edit : finding.edits)
        {
            const std::string key = editKey(edit);
            auto [it, inserted] = byKey.emplace(key, mAsked.size());
            if (!inserted)
            {
                Asked& same = mAsked[it->second];
                if (std::find(same.rules.begin(), same.rules.end(), finding.rule) == same.rules.end())
                {
                    same.rules.push_back(finding.rule);
                }
                same.removesError = same.removesError || finding.severity == Severity::kError;
                // One insertion asked by two rules, one with a scale to copy and one without (int8-conv-float-
                // output finds none that keeps the range; standalone-qdq copies the Q after an average pooling,
                // its documented recipe): the one with a scale is made, whatever the report's order.
                if (same.edit.kind == FixEdit::Kind::kInsertQdq && same.edit.scaleFrom.empty() &&
                    !edit.scaleFrom.empty())
                {
                    same.edit.scaleFrom = edit.scaleFrom;
                    same.edit.scaleReason = edit.scaleReason;
                    same.rule = finding.rule;
                    same.finding = finding.message;
                    auto asker = std::find(same.rules.begin(), same.rules.end(), finding.rule);
                    std::rotate(same.rules.begin(), asker, asker + 1); // that rule first
                }
                continue;
            }
            mAsked.push_back(
                {edit, finding.rule, finding.message, {finding.rule}, key, {}, finding.severity == Severity::kError});
        }
    }
    // Edits an earlier plan found to make new warnings are left out, and with them the other edits of their finding.
    const std::map<std::string, std::string> siblings = refusedWithTheirFinding();
    std::vector<Asked> kept;
    for (auto& asked : mAsked)
    {
        auto refusal = mRefused.find(asked.key);
        if (refusal != mRefused.end())
        {
            skip(asked, refusal->second);
            continue;
        }
        if (auto sibling = siblings.find(asked.key); sibling != siblings.end())
        {
            skip(asked, sibling->second);
            continue;
        }
        kept.push_back(std::move(asked));
    }
    mAsked = std::move(kept);
}

//! A finding's edits are one change: qdq-inside-conv-epilogue removes the pair between a conv and its SiLU and the
//! pair inside the SiLU together, and the second alone leaves the Sigmoid float between a DQ and a Mul, two new
//! standalone Q/DQ layers per block (the zoo's yolo-like model went from 4 to 12 when the first was refused for a new
//! requantize-before-split warning). So an edit whose every asking finding had another edit refused is left out too.
std::map<std::string, std::string> Planner::refusedWithTheirFinding() const
{
    std::map<std::string, std::string> result;
    if (mRefused.empty())
    {
        return result;
    }
    std::map<std::string, std::pair<std::size_t, std::size_t>> askers; // key -> (findings, findings with a refusal)
    std::map<std::string, std::string> why;
    for (const auto& finding : mReport.findings)
    {
        if (finding.edits.empty() || !selected(finding.rule))
        {
            continue;
        }
        std::vector<std::string> keys;
        const std::string* refusal = nullptr;
        for (const auto& edit : finding.edits)
        {
            keys.push_back(editKey(edit));
            if (auto it = mRefused.find(keys.back()); it != mRefused.end() && refusal == nullptr)
            {
                refusal = &it->second;
            }
        }
        for (const auto& key : keys)
        {
            auto& [findings, refusedFindings] = askers[key];
            ++findings;
            if (refusal != nullptr)
            {
                ++refusedFindings;
                why.emplace(key, "refused with the other edit(s) of its " + finding.rule +
                                     " finding, which are one change: " + *refusal);
            }
        }
    }
    for (const auto& [key, counts] : askers)
    {
        if (counts.second > 0 && counts.second == counts.first && mRefused.count(key) == 0)
        {
            result.emplace(key, why[key]);
        }
    }
    return result;
}

void Planner::skip(const Asked& asked, std::string why)
{
    mPlan.skipped.push_back({asked.edit, asked.rule, std::move(why)});
}

std::string freshModelName(const OnnxGraph& graph, std::set<std::string>& used, const std::string& base)
{
    std::string name = base;
    for (int n = 2; graph.findNode(name) != nullptr || graph.tensors.find(TensorKey(name)) != OnnxGraph::kNone ||
                    used.count(name) != 0;
         ++n)
    {
        name = base + "_" + std::to_string(n);
    }
    used.insert(name);
    return name;
}

//! A name not yet used by a node or tensor of the model or of this plan.
std::string Planner::freshName(const std::string& base)
{
    return freshModelName(mGraph, mUsedNames, base);
}

//! Claims input slot of node for one edit; false when another edit of the plan already changes it.
bool Planner::claim(std::uint32_t node, std::uint32_t slot, const std::string& by)
{
    return mClaimed.emplace(std::make_pair(node, slot), by).second;
}

std::string Planner::claimant(std::uint32_t node, std::uint32_t slot) const
{
    auto it = mClaimed.find({node, slot});
    return it == mClaimed.end() ? std::string() : it->second;
}

//! What stops an edit from changing these reads: one of them is changed by another edit already ("" if none).
std::string Planner::claimedBy(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& reads) const
{
    for (const auto& [node, slot] : reads)
    {
        if (std::string rule = claimant(node, slot); !rule.empty())
        {
            return "input " + std::to_string(slot) + " of " + mGraph.nodes[node].name +
                   " is changed by another edit (" + rule + ")";
        }
    }
    return {};
}

//! Every (node, slot) that reads tensor.
std::vector<std::pair<std::uint32_t, std::uint32_t>> Planner::readers(const std::string& tensor) const
{
    std::vector<std::pair<std::uint32_t, std::uint32_t>> result;
    const std::uint32_t id = mGraph.tensors.find(TensorKey(tensor));
    if (id == OnnxGraph::kNone)
    {
        return result;
    }
    for (std::uint32_t node : mGraph.consumersOf(id))
    {
        const auto inputs = mGraph.inputIds(node);
        for (std::size_t slot = 0; slot < inputs.size(); ++slot)
        {
            if (inputs[slot] == id)
            {
                result.emplace_back(node, static_cast<std::uint32_t>(slot));
            }
        }
    }
    return result;
}

bool Planner::isGraphOutput(const std::string& tensor) const
{
    return std::find(mGraph.graphOutputs.begin(), mGraph.graphOutputs.end(), tensor) != mGraph.graphOutputs.end();
}

PlannedEdit Planner::plannedFrom(const Asked& asked) const
{
    PlannedEdit planned;
    planned.edit = asked.edit;
    if (planned.edit.kind == FixEdit::Kind::kInsertQdq)
    {
        planned.edit.consumers.clear(); // filled with the reads the pair serves
    }
    planned.rule = asked.rule;
    planned.finding = asked.finding;
    planned.rules = asked.rules;
    planned.keys = {asked.key};
    planned.keys.insert(planned.keys.end(), asked.extraKeys.begin(), asked.extraKeys.end());
    planned.removesError = asked.removesError;
    return planned;
}

} // namespace qdq::fix_planning

namespace qdq
{

FixPlan planFix(const Report& report, const OnnxGraph& graph, const FixOptions& options,
                const std::map<std::string, std::string>& refused)
{
    return fix_planning::Planner(report, graph, options, refused).run();
}

} // namespace qdq
