// The fix planner's scale unifications and symmetric INT8 quantizers, with the Relu clamps they keep
// (src/fixes/fix_planner.h).
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

//! A per-tensor Q or DQ whose scale (and zero point) are constants of the model, or nullptr.
const QdqParameters* Planner::perTensorQdq(std::uint32_t node) const
{
    const QdqParameters* parameters = mGraph.qdqOf(node);
    if (parameters == nullptr || !parameters->scaleIsConstant || parameters->scale.size() != 1 ||
        mGraph.nodes[node].inputs.size() < 2 || (parameters->hasZeroPoint && !parameters->zeroPointIsConstant))
    {
        return nullptr;
    }
    return parameters;
}

namespace
{

//! The 8-bit integer range of a zero point's type ({0, 0} when it is another type). An absent zero point is uint8.
std::pair<double, double> integerRange(OnnxDataType type)
{
    switch (type)
    {
    case OnnxDataType::kUndefined:
    case OnnxDataType::kUint8:
        return {0.0, 255.0};
    case OnnxDataType::kInt8:
        return {-128.0, 127.0};
    default:
        return {0.0, 0.0};
    }
}

std::string percent(double share)
{
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f%%", 100.0 * share);
    return text;
}

} // namespace

NumericCost Planner::scaleChangeCost(const std::vector<std::uint32_t>& group, double newScale, double newZero,
                                     OnnxDataType newType) const
{
    NumericCost cost;
    const auto [newMin, newMax] = integerRange(newType);
    const double low = newScale * (newMin - newZero);
    const double high = newScale * (newMax - newZero);
    for (std::uint32_t node : group)
    {
        const QdqParameters* old = perTensorQdq(node);
        const auto [oldMin, oldMax] = integerRange(old == nullptr ? OnnxDataType::kFloat : old->zeroPointType);
        if (old == nullptr || oldMax == oldMin || !(old->scale[0] > 0) || newMax == newMin)
        {
            continue;
        }
        const double zero = old->zeroPoint.empty() ? 0.0 : old->zeroPoint[0];
        const double oldLow = old->scale[0] * (oldMin - zero);
        const double oldHigh = old->scale[0] * (oldMax - zero);
        // The old range's part below the new low end or above the new high end is clamped there.
        const double outside =
            std::max(0.0, std::min(oldHigh, low) - oldLow) + std::max(0.0, oldHigh - std::max(oldLow, high));
        const double share = std::min(1.0, outside / (oldHigh - oldLow));
        const double growth = newScale / old->scale[0];
        cost.stepGrowth = std::max(cost.stepGrowth.value_or(growth), growth);
        cost.clippedShare = std::max(cost.clippedShare.value_or(share), share);
    }
    if (!cost.stepGrowth)
    {
        cost.summary = "unknown: no old per-tensor 8-bit scale to compare with";
        return cost;
    }
    char growth[48];
    std::snprintf(growth, sizeof(growth), "rounding step x%.3g of the old one", *cost.stepGrowth);
    cost.summary = std::string(growth) + ", " +
                   (*cost.clippedShare <= 0 ? std::string("clips nothing of the old range")
                                            : "clips " + percent(*cost.clippedShare) + " of the old range");
    return cost;
}

//! The QuantizeLinear nodes among nodes whose zero point is not of newType now write newType: the value_info entries
//! the exporter wrote for their outputs would contradict it (ONNX Runtime: "Type (tensor(uint8)) of output arg ...
//! does not match", measured on the zoo's uint8 exports converted to opset 19), so they are left out.
void Planner::dropDeclaredTypesOfQuantizeOutputs(const std::vector<std::uint32_t>& nodes, OnnxDataType newType)
{
    for (std::uint32_t node : nodes)
    {
        const QdqParameters* parameters = perTensorQdq(node);
        if (parameters != nullptr && parameters->zeroPointType != newType && patterns::isQuantize(mGraph.nodes[node]) &&
            !mGraph.nodes[node].outputs.empty())
        {
            mPlan.modelEdits.dropValueInfos.emplace_back(mGraph.nodes[node].outputs[0]);
        }
    }
}

//! A set-scale edit's group: its named Q/DQ nodes and their pair partners (a DQ's Q and that Q's other DQs, a
//! Q's DQs), closed, in the order found. Sets problem (and returns what it has) when the group cannot take one
//! scale: a DQ of a constant or of a network input, a Q read by other nodes than DQs, over kMostGroupNodes nodes.
std::vector<std::uint32_t> Planner::scaleGroupOf(const FixEdit& edit, std::string& problem) const
{
    std::vector<std::uint32_t> group;
    std::set<std::uint32_t> seen;
    const auto add = [&](std::uint32_t node)
    {
        if (node != OnnxGraph::kNone && seen.insert(node).second)
        {
            group.push_back(node);
        }
    };
    for (const auto& name : edit.nodes)
    {
        add(nodeIndex(name));
    }
    for (std::size_t i = 0; i < group.size() && group.size() <= kMostGroupNodes; ++i)
    {
        const OnnxNode& node = mGraph.nodes[group[i]];
        if (patterns::isDequantize(node))
        {
            const OnnxNode* producer = node.inputs.empty() ? nullptr : patterns::producerOf(mGraph, node.inputs[0]);
            if (producer == nullptr || !patterns::isQuantize(*producer))
            {
                problem = node.name + " dequantizes " +
                          (producer == nullptr ? "a constant or a network input" : producer->name) +
                          ", not the output of a QuantizeLinear whose scale could change with it";
                return group;
            }
            add(static_cast<std::uint32_t>(producer->index));
        }
        else if (patterns::isQuantize(node) && !node.outputs.empty())
        {
            for (const auto& [reader, slot] : readers(node.outputs[0]))
            {
                if (!patterns::isDequantize(mGraph.nodes[reader]))
                {
                    problem = node.name + "'s output is read by " + mGraph.nodes[reader].name +
                              ", not only by DequantizeLinear nodes";
                    return group;
                }
                add(reader);
            }
        }
        else
        {
            problem = node.name + " is not a QuantizeLinear or DequantizeLinear";
            return group;
        }
    }
    if (group.size() > kMostGroupNodes)
    {
        problem =
            "the Q/DQ nodes sharing these scales form a group of over " + std::to_string(kMostGroupNodes) + " nodes";
    }
    return group;
}

//! Set-scale edits whose groups share a Q/DQ node become one edit with one scale, the largest of their
//! sources' (no group's range is cut short). Each group's pairs cancel only when all of its scales are equal, so
//! overlapping groups need one scale between them. In DenseNet every Concat of a dense block reads the block's
//! earlier features through shared DQs: planned one by one, the first group took its scale, the overlapping
//! ones were skipped as conflicts, and the Concats of a smaller group got a new mismatch.
void Planner::mergeOverlappingScaleGroups()
{
    std::vector<std::size_t> members; // indexes into mAsked of the set-scale asks that can be merged
    std::vector<std::vector<std::uint32_t>> groups;
    std::vector<double> sourceScale;
    for (std::size_t i = 0; i < mAsked.size(); ++i)
    {
        const FixEdit& edit = mAsked[i].edit;
        if (edit.kind != FixEdit::Kind::kSetScale)
        {
            continue;
        }
        const std::uint32_t from = nodeIndex(edit.scaleFrom);
        const QdqParameters* source = from == OnnxGraph::kNone ? nullptr : perTensorQdq(from);
        std::string problem;
        std::vector<std::uint32_t> group = scaleGroupOf(edit, problem);
        if (source == nullptr || !problem.empty())
        {
            continue; // skipped on its own when planned
        }
        members.push_back(i);
        groups.push_back(std::move(group));
        sourceScale.push_back(source->scale[0]);
    }
    UnionFind sets(members.size());
    std::map<std::uint32_t, std::size_t> ownerOfNode; // node -> first member whose group holds it
    for (std::size_t member = 0; member < members.size(); ++member)
    {
        for (std::uint32_t node : groups[member])
        {
            auto [it, inserted] = ownerOfNode.emplace(node, member);
            if (!inserted)
            {
                sets.unite(member, it->second);
            }
        }
    }
    std::map<std::size_t, std::vector<std::size_t>> components; // root -> members, in report order
    for (std::size_t member = 0; member < members.size(); ++member)
    {
        components[sets.find(member)].push_back(member);
    }
    std::set<std::size_t> mergedAway; // mAsked indexes folded into an earlier ask
    for (const auto& [componentRoot, component] : components)
    {
        if (component.size() < 2)
        {
            continue;
        }
        Asked& merged = mAsked[members[component.front()]];
        std::size_t widest = component.front();
        std::set<std::string> named(merged.edit.nodes.begin(), merged.edit.nodes.end());
        for (std::size_t k = 1; k < component.size(); ++k)
        {
            const std::size_t member = component[k];
            Asked& other = mAsked[members[member]];
            if (sourceScale[member] > sourceScale[widest])
            {
                widest = member;
            }
            for (const auto& node : other.edit.nodes)
            {
                if (named.insert(node).second)
                {
                    merged.edit.nodes.push_back(node);
                }
            }
            for (const auto& rule : other.rules)
            {
                if (std::find(merged.rules.begin(), merged.rules.end(), rule) == merged.rules.end())
                {
                    merged.rules.push_back(rule);
                }
            }
            merged.extraKeys.push_back(other.key);
            merged.extraKeys.insert(merged.extraKeys.end(), other.extraKeys.begin(), other.extraKeys.end());
            merged.removesError = merged.removesError || other.removesError;
            mergedAway.insert(members[member]);
        }
        const FixEdit& widestEdit = mAsked[members[widest]].edit;
        merged.edit.scaleReason = "one scale for the " + std::to_string(component.size()) +
                                  " findings whose groups share Q/DQ nodes, the largest of theirs (" +
                                  widestEdit.scaleReason + ")";
        merged.edit.scaleFrom = widestEdit.scaleFrom;
    }
    if (mergedAway.empty())
    {
        return;
    }
    std::vector<Asked> kept;
    for (std::size_t i = 0; i < mAsked.size(); ++i)
    {
        if (mergedAway.count(i) == 0)
        {
            kept.push_back(std::move(mAsked[i]));
        }
    }
    mAsked = std::move(kept);
}

//! kSetScale: the named Q/DQ nodes, each with its partners (a DQ's Q and that Q's other DQs, a Q's DQs), read
//! the scale and zero point tensors of edit.scaleFrom. A DQ of a constant (a weight) or a Q/DQ that is per-channel
//! or has its scale computed stops the edit: changing one side of a pair would change the values it carries.
void Planner::planSetScale(const Asked& asked)
{
    const std::uint32_t from = nodeIndex(asked.edit.scaleFrom);
    const QdqParameters* source = from == OnnxGraph::kNone ? nullptr : perTensorQdq(from);
    if (source == nullptr)
    {
        skip(asked, asked.edit.scaleFrom + " is not a per-tensor Q/DQ with a constant scale");
        return;
    }
    const OnnxNode& sourceNode = mGraph.nodes[from];
    // The scale the group takes must be the one the source keeps: not one another edit changes (the group would
    // read a scale the source no longer has, from a tensor that edit may take away: an old scale tensor goes only
    // when every reader, the source among them, was rewired).
    for (std::uint32_t slot : {1u, 2u})
    {
        if (std::string rule = claimant(from, slot); !rule.empty())
        {
            skip(asked, "the scale of " + sourceNode.name + " is changed by another edit (" + rule + ")");
            return;
        }
    }
    // The group: the named nodes and their pair partners, closed.
    std::string groupProblem;
    std::vector<std::uint32_t> group = scaleGroupOf(asked.edit, groupProblem);
    if (!groupProblem.empty())
    {
        skip(asked, groupProblem);
        return;
    }
    std::sort(group.begin(), group.end());
    std::vector<std::pair<std::uint32_t, std::uint32_t>> slots;
    bool sourceAfterTarget = false;
    if (!scaleGroupSlots(asked, group, from, slots, sourceAfterTarget))
    {
        return;
    }
    if (slots.empty())
    {
        skip(asked, "the group already shares " + sourceNode.name + "'s scale tensor");
        return;
    }
    if (std::string problem = scaleSpreadProblem(group, from); !problem.empty())
    {
        skip(asked, problem);
        return;
    }
    // A Q whose range started at 0 and takes a range that does not keeps its clamp as a Relu (see
    // planSymmetricInt8).
    const std::vector<std::uint32_t> needRelu = quantizersKeepingTheirClamp(group, from);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> claims = slots;
    for (std::uint32_t node : needRelu)
    {
        claims.emplace_back(node, 0);
    }
    if (std::string problem = claimedBy(claims); !problem.empty())
    {
        skip(asked, problem);
        return;
    }
    PlannedEdit planned = plannedFrom(asked);
    planned.edit.nodes.clear(); // the whole group, in node order
    for (std::uint32_t node : group)
    {
        planned.edit.nodes.push_back(mGraph.nodes[node].name);
    }
    const auto [scaleName, zeroPointName] = groupScaleTensors(asked, from, sourceAfterTarget, planned);
    planned.scale = formatScale(source->scale[0]) + " from " + sourceNode.name +
                    (asked.edit.scaleReason.empty() ? std::string() : ": " + asked.edit.scaleReason);
    planned.numericCost = scaleChangeCost(
        group, source->scale[0], source->zeroPoint.empty() ? 0.0 : source->zeroPoint[0], source->zeroPointType);
    rewireScaleInputs(slots, scaleName, zeroPointName, asked.rule, planned);
    dropDeclaredTypesOfQuantizeOutputs(group, source->zeroPointType);
    const std::string base = "qdq_doctor/" + asked.rule + "/" +
                             (sourceNode.name.rfind('/', 0) == 0 ? sourceNode.name.substr(1) : sourceNode.name);
    for (std::uint32_t node : needRelu)
    {
        clampQuantizeInput(node, base, asked.rule, "range, which the range it takes does not have", planned);
    }
    if (!needRelu.empty())
    {
        planned.scale += "; a Relu before " + std::to_string(needRelu.size()) +
                         " QuantizeLinear keeps the clamp at 0 of its old range";
    }
    mPlan.edits.push_back(std::move(planned));
}

//! The scale and zero-point tensors a set-scale group reads: the source's own, unless a node computes them after a
//! member of the group (a Constant node in the source's place in node order): then copies go in as new initializers.
std::pair<std::string, std::string> Planner::groupScaleTensors(const Asked& asked, std::uint32_t from,
                                                               bool sourceAfterTarget, PlannedEdit& planned)
{
    const OnnxNode& sourceNode = mGraph.nodes[from];
    if (!sourceAfterTarget)
    {
        return {sourceNode.inputs[1], sourceNode.inputs.size() > 2 ? std::string(sourceNode.inputs[2]) : std::string()};
    }
    auto names = addScaleInitializers(
        *perTensorQdq(from), "qdq_doctor/" + asked.rule + "/" +
                                 (sourceNode.name.rfind('/', 0) == 0 ? sourceNode.name.substr(1) : sourceNode.name));
    planned.added.push_back(names.first);
    if (!names.second.empty())
    {
        planned.added.push_back(names.second);
    }
    return names;
}

//! The inputs of the group's nodes that must read the source's scale and zero point tensors, and whether the source's
//! tensors come after a member of the group in node order. Returns false (the edit skipped) when a member cannot take
//! the source's scale.
bool Planner::scaleGroupSlots(const Asked& asked, const std::vector<std::uint32_t>& group, std::uint32_t from,
                              std::vector<std::pair<std::uint32_t, std::uint32_t>>& slots, bool& sourceAfterTarget)
{
    const QdqParameters& source = *perTensorQdq(from);
    const OnnxNode& sourceNode = mGraph.nodes[from];
    const std::string scaleTensor = sourceNode.inputs[1];
    const std::string zeroPointTensor = sourceNode.inputs.size() > 2 ? sourceNode.inputs[2] : std::string();
    for (std::uint32_t node : group)
    {
        const QdqParameters* parameters = perTensorQdq(node);
        if (parameters == nullptr)
        {
            skip(asked, mGraph.nodes[node].name + " is not a per-tensor Q/DQ with a constant scale");
            return false;
        }
        if (parameters->hasZeroPoint != source.hasZeroPoint ||
            (parameters->hasZeroPoint && parameters->zeroPointType != source.zeroPointType))
        {
            skip(asked, mGraph.nodes[node].name + "'s zero point differs in type from " + sourceNode.name +
                            "'s: its quantized type would change");
            return false;
        }
        if (mRemoved.count(node) != 0)
        {
            skip(asked, mGraph.nodes[node].name + " is removed by another edit");
            return false;
        }
        const OnnxNode& target = mGraph.nodes[node];
        for (const std::string* tensor : {&scaleTensor, &zeroPointTensor})
        {
            const OnnxNode* producer = tensor->empty() ? nullptr : patterns::producerOf(mGraph, *tensor);
            sourceAfterTarget = sourceAfterTarget || (producer != nullptr && producer->index > node);
        }
        if (target.inputs[1] != scaleTensor)
        {
            slots.emplace_back(node, 1);
        }
        if (!zeroPointTensor.empty() && target.inputs.size() > 2 && target.inputs[2] != zeroPointTensor)
        {
            slots.emplace_back(node, 2);
        }
    }
    return true;
}

//! The group's Qs whose range started at 0 and that take a range that does not: each keeps its clamp as a Relu
//! (see planSymmetricInt8).
std::vector<std::uint32_t> Planner::quantizersKeepingTheirClamp(const std::vector<std::uint32_t>& group,
                                                                std::uint32_t from) const
{
    std::vector<std::uint32_t> needRelu;
    if (!rangeStartsAtZero(from))
    {
        for (std::uint32_t node : group)
        {
            if (patterns::isQuantize(mGraph.nodes[node]) && rangeStartsAtZero(node) &&
                needsClampKept(mGraph.nodes[node].inputs[0]))
            {
                needRelu.push_back(node);
            }
        }
    }
    return needRelu;
}

//! Why the group must not take one scale, "" when it may: its scales (the source's among them) span more than
//! patterns::kMostUnifiedScaleRatio. One scale would then take bits the smaller scales' tensors cannot spare (at
//! 960x, all of them: every value of the smallest one rounds to 0, or saturates if the scale shrinks): they need
//! a range from calibration data, which the reason names with every Q's scale.
std::string Planner::scaleSpreadProblem(const std::vector<std::uint32_t>& group, std::uint32_t source) const
{
    std::uint32_t smallest = source;
    std::uint32_t largest = source;
    std::vector<std::string> quantizers;
    for (std::uint32_t node : group)
    {
        const double scale = perTensorQdq(node)->scale[0];
        smallest = scale < perTensorQdq(smallest)->scale[0] ? node : smallest;
        largest = scale > perTensorQdq(largest)->scale[0] ? node : largest;
        if (patterns::isQuantize(mGraph.nodes[node]))
        {
            quantizers.push_back(mGraph.nodes[node].name + " (" + formatScale(scale) + ")");
        }
    }
    const double low = perTensorQdq(smallest)->scale[0];
    const double high = perTensorQdq(largest)->scale[0];
    if (patterns::withinUnificationBound(low, high))
    {
        return {};
    }
    char ratio[32];
    std::snprintf(ratio, sizeof(ratio), "%.3g", high / low);
    return std::string("the scales differ by ") + ratio + "x (" + formatScale(low) + " at " +
           mGraph.nodes[smallest].name + ", " + formatScale(high) + " at " + mGraph.nodes[largest].name +
           "), more than the " + formatScale(patterns::kMostUnifiedScaleRatio) +
           "x fix allows: one scale would cost the tensors with the smaller scales most of their 8 bits; "
           "re-calibrate the tensors of " +
           patterns::nameList(quantizers, 6) + " (one range for the group)";
}

//! Rewires input 1 (scale) and 2 (zero point) of the given Q/DQ slots to new tensors. The old scale and
//! zero-point tensors go when this takes away their last reader: an initializer is left out, a Constant node
//! removed.
void Planner::rewireScaleInputs(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& slots,
                                const std::string& scaleName, const std::string& zeroPointName, const std::string& rule,
                                PlannedEdit& planned)
{
    std::map<std::string, std::size_t> rewiredReads;
    for (const auto& [node, slot] : slots)
    {
        ++rewiredReads[mGraph.nodes[node].inputs[slot]];
    }
    for (const auto& [tensor, count] : rewiredReads)
    {
        if (readers(tensor).size() != count || isGraphOutput(tensor) || tensor == scaleName ||
            tensor == zeroPointName || mNewlyRead.count(tensor) != 0)
        {
            continue;
        }
        const OnnxNode* producer = patterns::producerOf(mGraph, tensor);
        const OnnxConstant* constant = mGraph.constant(tensor);
        if (producer != nullptr && producer->opType == "Constant" && producer->outputs.size() == 1 &&
            mRemoved.insert(static_cast<std::uint32_t>(producer->index)).second)
        {
            mPlan.modelEdits.removeNodes.push_back(static_cast<std::uint32_t>(producer->index));
            planned.removed.push_back(producer->name);
        }
        else if (producer == nullptr && constant != nullptr && !constant->fromConstantNode)
        {
            mPlan.modelEdits.removeInitializers.push_back(tensor);
            planned.changed.push_back("initializer " + tensor + " removed: no node reads it any more");
        }
    }
    mNewlyRead.insert(scaleName);
    if (!zeroPointName.empty())
    {
        mNewlyRead.insert(zeroPointName);
    }
    for (const auto& [node, slot] : slots)
    {
        const OnnxNode& target = mGraph.nodes[node];
        const std::string& tensor = slot == 1 ? scaleName : zeroPointName;
        claim(node, slot, rule);
        mPlan.modelEdits.rewireInputs.push_back({node, slot, tensor});
        planned.changed.push_back(target.name + " input " + std::to_string(slot) + ": " + target.inputs[slot] + " -> " +
                                  tensor);
        if (std::find(planned.touched.begin(), planned.touched.end(), target.name) == planned.touched.end())
        {
            planned.touched.push_back(target.name);
        }
    }
}

//! The named nodes that no other edit removes. Returns false (the edit skipped) when one is not in the model.
bool Planner::remainingNodesOf(const Asked& asked, std::vector<std::uint32_t>& group)
{
    for (const auto& name : asked.edit.nodes)
    {
        const std::uint32_t node = nodeIndex(name);
        if (node == OnnxGraph::kNone)
        {
            skip(asked, name + " is not a node of the model");
            return false;
        }
        if (mRemoved.count(node) == 0)
        {
            group.push_back(node);
        }
    }
    return true;
}

//! The scale and zero point inputs of the group, which must read one per-tensor constant scale and zero point.
//! Returns false (the edit skipped) when a node does not.
bool Planner::sharedScaleSlots(const Asked& asked, const std::vector<std::uint32_t>& group,
                               std::vector<std::pair<std::uint32_t, std::uint32_t>>& slots)
{
    const QdqParameters* first = perTensorQdq(group.front());
    for (std::uint32_t node : group)
    {
        const QdqParameters* parameters = perTensorQdq(node);
        if (parameters == nullptr || first == nullptr || !parameters->hasZeroPoint ||
            parameters->zeroPoint.size() != 1 || mGraph.nodes[node].inputs.size() < 3 ||
            mGraph.nodes[node].inputs[1] != mGraph.nodes[group.front()].inputs[1] ||
            mGraph.nodes[node].inputs[2] != mGraph.nodes[group.front()].inputs[2])
        {
            skip(asked, mGraph.nodes[node].name + " does not read one per-tensor constant scale and zero point "
                                                  "with the rest of the group");
            return false;
        }
        slots.emplace_back(node, 1);
        slots.emplace_back(node, 2);
    }
    return true;
}

//! The new FLOAT scale and INT8 zero point 0 as initializers named after base; returns their names.
std::pair<std::string, std::string> Planner::addSymmetricInitializers(const std::string& base, double symmetric,
                                                                      PlannedEdit& planned)
{
    NewInitializer newScale;
    newScale.name = freshName(base + "/scale");
    newScale.dataType = 1; // FLOAT
    newScale.rawData = rawFloatData(static_cast<float>(symmetric));
    NewInitializer newZeroPoint;
    newZeroPoint.name = freshName(base + "/zero_point");
    newZeroPoint.dataType = 3; // INT8
    newZeroPoint.rawData.assign(1, '\0');
    const std::string scaleName = newScale.name;
    const std::string zeroPointName = newZeroPoint.name;
    planned.added = {scaleName, zeroPointName};
    mPlan.modelEdits.addInitializers.push_back(std::move(newScale));
    mPlan.modelEdits.addInitializers.push_back(std::move(newZeroPoint));
    return {scaleName, zeroPointName};
}

//! How a symmetric conversion's scale reads in the report: the new scale, the old scale and zero point, the range.
std::string Planner::symmetricScaleText(double symmetric, const QdqParameters& old, double qmin, double qmax)
{
    const double zeroPoint = old.zeroPoint[0];
    const double scale = old.scale[0];
    char range[96];
    std::snprintf(range, sizeof(range), "[%.6g, %.6g]", scale * (qmin - zeroPoint), scale * (qmax - zeroPoint));
    return formatScale(symmetric) + " with zero point 0, from scale " + formatScale(scale) + " and " +
           std::string(onnxDataTypeName(old.zeroPointType)) + " zero point " + std::to_string(std::lround(zeroPoint)) +
           ": covers the range " + std::string(range) + " symmetrically";
}

//! kSymmetricInt8: the group's Q/DQ (one scale and zero point between them) read a new FLOAT scale covering the
//! same range symmetrically and an INT8 zero point 0. Planned after every other edit: nodes another edit removes
//! leave the group; a scale another edit rewires is left to fix's next pass, which converts the scale it took.
void Planner::planSymmetricInt8(const Asked& asked)
{
    std::vector<std::uint32_t> group;
    if (!remainingNodesOf(asked, group))
    {
        return;
    }
    if (group.empty())
    {
        return; // other edits removed every node of the group: nothing is left to convert
    }
    std::sort(group.begin(), group.end());
    const QdqParameters* first = perTensorQdq(group.front());
    std::vector<std::pair<std::uint32_t, std::uint32_t>> slots;
    if (!sharedScaleSlots(asked, group, slots))
    {
        return;
    }
    double qmin = 0;
    double qmax = 0;
    if (first->zeroPointType == OnnxDataType::kUint8)
    {
        qmax = 255;
    }
    else if (first->zeroPointType == OnnxDataType::kInt8)
    {
        qmin = -128;
        qmax = 127;
    }
    else
    {
        skip(asked,
             "the zero point is " + std::string(onnxDataTypeName(first->zeroPointType)) + ", not an 8-bit integer");
        return;
    }
    const double zeroPoint = first->zeroPoint[0];
    const double scale = first->scale[0];
    // A range that starts at 0 (uint8 zero point 0) clamps negative inputs to 0: ONNX Runtime's quantizer removes
    // a Relu before such a Q (QOperator and QDQ formats alike) and lets the clamp do its work. The symmetric range
    // does not clamp, so a Relu inserted before each such Q takes the clamp over; without it a ResNet-18 lost all
    // its activations (outputs 9.4 apart on a magnitude of 5.4 under ONNX Runtime).
    std::vector<std::uint32_t> needRelu;
    if (zeroPoint == qmin)
    {
        for (std::uint32_t node : group)
        {
            if (patterns::isQuantize(mGraph.nodes[node]) && needsClampKept(mGraph.nodes[node].inputs[0]))
            {
                needRelu.push_back(node);
                slots.emplace_back(node, 0);
            }
        }
    }
    if (std::string problem = claimedBy(slots); !problem.empty())
    {
        skip(asked, problem + "; fix's next pass converts the scale it takes");
        return;
    }
    const double symmetric = scale * std::max(std::fabs(qmin - zeroPoint), std::fabs(qmax - zeroPoint)) / 127.0;
    if (!(symmetric > 0) || !std::isfinite(symmetric))
    {
        skip(asked, "the scale " + formatScale(scale) + " gives no positive symmetric scale");
        return;
    }
    PlannedEdit planned = plannedFrom(asked);
    planned.edit.nodes.clear(); // the nodes it changes, in node order
    for (std::uint32_t node : group)
    {
        planned.edit.nodes.push_back(mGraph.nodes[node].name);
    }
    const std::string base = "qdq_doctor/" + asked.rule + "/" +
                             (asked.edit.tensor.rfind('/', 0) == 0 ? asked.edit.tensor.substr(1) : asked.edit.tensor);
    const auto [scaleName, zeroPointName] = addSymmetricInitializers(base, symmetric, planned);
    planned.numericCost = scaleChangeCost(group, symmetric, 0.0, OnnxDataType::kInt8);
    planned.scale = symmetricScaleText(symmetric, *first, qmin, qmax);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> scaleSlots;
    for (const auto& slot : slots)
    {
        if (slot.second != 0)
        {
            scaleSlots.push_back(slot);
        }
    }
    rewireScaleInputs(scaleSlots, scaleName, zeroPointName, asked.rule, planned);
    dropDeclaredTypesOfQuantizeOutputs(group, OnnxDataType::kInt8);
    for (std::uint32_t node : needRelu)
    {
        clampQuantizeInput(node, base, asked.rule, "unsigned range, which the symmetric INT8 range does not have",
                           planned);
    }
    if (!needRelu.empty())
    {
        planned.scale += "; a Relu before " + std::to_string(needRelu.size()) +
                         " QuantizeLinear keeps the clamp at 0 of the unsigned range";
    }
    mPlan.edits.push_back(std::move(planned));
}

//! Adds a Relu reading input, inserted before node `before`, named base/Relu; returns its output. It keeps the
//! clamp at 0 of quantizer's range, which the edit takes away (why).
std::string Planner::addClampRelu(const std::string& input, std::uint32_t before, const std::string& base,
                                  const std::string& rule, const std::string& quantizer, const std::string& why,
                                  PlannedEdit& planned, const std::string& output)
{
    NewNode relu;
    relu.name = freshName(base + "/Relu");
    relu.opType = "Relu";
    relu.inputs = {input};
    relu.outputs = {output.empty() ? freshName(base + "/clamped") : output};
    relu.docString = "added by qdq-doctor fix (" + rule + "): keeps the clamp at 0 of " + quantizer + "'s " + why;
    planned.added.push_back(relu.name);
    std::string written = relu.outputs[0];
    mPlan.modelEdits.insertNodes.push_back({before, std::move(relu)});
    return written;
}

//! Rewires input 0 of Q node q to a Relu of what it reads (addClampRelu).
void Planner::clampQuantizeInput(std::uint32_t q, const std::string& base, const std::string& rule,
                                 const std::string& why, PlannedEdit& planned)
{
    const OnnxNode& quantize = mGraph.nodes[q];
    const std::string clamped = addClampRelu(quantize.inputs[0], q, base, rule, quantize.name, why, planned);
    claim(q, 0, rule);
    mPlan.modelEdits.rewireInputs.push_back({q, 0, clamped});
    planned.changed.push_back(quantize.name + " input 0: " + std::string(quantize.inputs[0]) + " -> " + clamped +
                              " (a Relu keeps the clamp at 0)");
}

//! Whether a Q whose range starts at 0 needs a Relu to keep its clamp once the range no longer does: yes unless its
//! input cannot be negative, or is the output of a smooth activation (SiLU or HardSwish as Mul(x, gate(x)),
//! HardSwish, Gelu) whose small negative tail the calibration did not see. ONNX Runtime removes only Relu and Clip
//! before such a Q; a Relu after SiLU or HardSwish would clamp a tail of at most 0.28 or 0.375 and cost TensorRT a
//! layer (MobileNetV3: 38 symmetric conversions refused for lone Q/DQ beside such a Relu).
bool Planner::needsClampKept(const std::string& tensor) const
{
    if (isNonNegative(tensor))
    {
        return false;
    }
    const OnnxNode* producer = patterns::producerOf(mGraph, tensor);
    return producer == nullptr || !(producer->opType == "HardSwish" || producer->opType == "Gelu" ||
                                    (producer->opType == "Mul" && patterns::selfGateOf(mGraph, *producer) != nullptr));
}

//! True when a per-tensor 8-bit Q or DQ has its zero point at the type's minimum (uint8 0, int8 -128): its range
//! starts at 0, so a Q clamps negative values to 0 and a DQ gives none.
bool Planner::rangeStartsAtZero(std::uint32_t node) const
{
    const QdqParameters* parameters = perTensorQdq(node);
    if (parameters == nullptr || parameters->zeroPoint.size() != 1)
    {
        return false;
    }
    return (parameters->zeroPointType == OnnxDataType::kUint8 && parameters->zeroPoint[0] == 0) ||
           (parameters->zeroPointType == OnnxDataType::kInt8 && parameters->zeroPoint[0] == -128);
}

//! True when tensor cannot hold a negative value: the output of a Relu, of a Clip whose minimum is a constant >= 0,
//! of a Sigmoid, of a DequantizeLinear whose range starts at 0, or of pooling, data movement, Add, Mul or Concat of
//! such tensors. (ResNet-18 in QOperator form: the global average pooling of a clamped Add needs no Relu; one
//! there would run as its own layer beside a lone Q/DQ pair.)
bool Planner::isNonNegative(const std::string& tensor) const
{
    patterns::TensorMemo memo; // allocates only when the walk goes past tensor's producer
    return decideNonNegative(tensor, 0, memo);
}

//! Each tensor is decided once (a shared input, Add(t, t), is not walked twice; a cycle ends the walk).
bool Planner::isNonNegative(const std::string& tensor, int depth, patterns::TensorMemo& memo) const
{
    return memo.decide(mGraph.tensors.find(TensorKey(tensor)), [&] { return decideNonNegative(tensor, depth, memo); });
}

bool Planner::decideNonNegative(const std::string& tensor, int depth, patterns::TensorMemo& memo) const
{
    // A constant (an initializer, a Constant node's value) whose values the model holds and are all >= 0: a Relu
    // before its Q would change no number but keep TensorRT from folding the Q into the constant.
    if (const OnnxConstant* constant = mGraph.constant(tensor); constant != nullptr)
    {
        return constant->dataLoaded && !constant->values.empty() &&
               std::all_of(constant->values.begin(), constant->values.end(), [](double v) { return v >= 0.0; });
    }
    const OnnxNode* producer = patterns::producerOf(mGraph, tensor);
    if (producer == nullptr || depth > 32)
    {
        return false;
    }
    const std::string& op = producer->opType;
    if (op == "Relu" || op == "Sigmoid" || op == "HardSigmoid" || op == "Softmax" || op == "Exp" || op == "Abs")
    {
        return true;
    }
    if (op == "Clip")
    {
        if (const OnnxAttribute* minimum = producer->attribute("min")) // op set 6-10
        {
            return minimum->f >= 0;
        }
        const OnnxConstant* minimum = producer->inputs.size() > 1 && !producer->inputs[1].empty()
                                          ? mGraph.constant(producer->inputs[1])
                                          : nullptr;
        return minimum != nullptr && minimum->dataLoaded && minimum->values.size() == 1 && minimum->values[0] >= 0;
    }
    if (patterns::isDequantize(*producer))
    {
        if (rangeStartsAtZero(static_cast<std::uint32_t>(producer->index)))
        {
            return true;
        }
        // A symmetric DQ dequantizes what its Q quantized: non-negative when the Q's input is (an earlier pass
        // made that Q symmetric and kept its clamp).
        const OnnxNode* source =
            producer->inputs.empty() ? nullptr : patterns::quantizingSource(mGraph, producer->inputs[0]);
        return source != nullptr && patterns::isQuantize(*source) && !source->inputs.empty() &&
               isNonNegative(source->inputs[0], depth + 1, memo);
    }
    if (op == "Concat" || op == "Add" || op == "Mul")
    {
        return !producer->inputs.empty() &&
               std::all_of(producer->inputs.begin(), producer->inputs.end(),
                           [&](const std::string& input) { return isNonNegative(input, depth + 1, memo); });
    }
    if ((patterns::isCommuting(op) && op != "Pad") || op == "AveragePool" || op == "GlobalAveragePool" ||
        op == "Resize")
    {
        return !producer->inputs.empty() && isNonNegative(producer->inputs[0], depth + 1, memo);
    }
    return false;
}

} // namespace qdq::fix_planning
