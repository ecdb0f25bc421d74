// The fix planner's float biases and Q/DQ insertions (src/fixes/fix_planner.h).
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

void Planner::planFloatBias(const Asked& asked)
{
    const std::uint32_t dq = asked.edit.nodes.empty() ? OnnxGraph::kNone : nodeIndex(asked.edit.nodes[0]);
    if (dq == OnnxGraph::kNone || mRemoved.count(dq) != 0 || mReadByRewrite.count(dq) != 0)
    {
        skip(asked, "the DequantizeLinear is not in the model, is removed by another edit or is read by a "
                    "rewritten QOperator op");
        return;
    }
    const OnnxNode& dequantize = mGraph.nodes[dq];
    const OnnxConstant* bias = dequantize.inputs.empty() ? nullptr : mGraph.constant(dequantize.inputs[0]);
    const QdqParameters* parameters = mGraph.qdqOf(dq);
    if (bias == nullptr || parameters == nullptr || dequantize.outputs.empty())
    {
        skip(asked, "the quantized constant or its scale is not a constant of the model");
        return;
    }
    if (!bias->dataLoaded || parameters->scale.empty())
    {
        skip(asked, "the values of " + bias->name + " or its scale are not available" +
                        (bias->external ? " (its external data file was not read)" : ""));
        return;
    }
    const std::size_t count = bias->values.size();
    const std::size_t scales = parameters->scale.size();
    if (count == 0 || (scales != 1 && scales != count) ||
        (!parameters->zeroPoint.empty() && parameters->zeroPoint.size() != 1 && parameters->zeroPoint.size() != count))
    {
        skip(asked, "the scale of " + dequantize.name + " does not match the constant's " + std::to_string(count) +
                        " elements");
        return;
    }
    const auto reads = readers(dequantize.outputs[0]);
    if (std::string problem = claimedBy(reads); !problem.empty())
    {
        skip(asked, problem);
        return;
    }
    if (isGraphOutput(dequantize.outputs[0]))
    {
        skip(asked, dequantize.outputs[0] + " is a network output");
        return;
    }
    // value = (q - zero point) x scale, per element or per tensor: what the DequantizeLinear computes.
    NewInitializer floatBias;
    floatBias.name = freshName("qdq_doctor/" + asked.rule + "/" + bias->name + "/float");
    floatBias.dataType = 1; // FLOAT
    floatBias.dims = bias->dims;
    floatBias.rawData.reserve(count * sizeof(float));
    for (std::size_t i = 0; i < count; ++i)
    {
        const double zero =
            parameters->zeroPoint.empty() ? 0.0 : parameters->zeroPoint[parameters->zeroPoint.size() == 1 ? 0 : i];
        const double scale = parameters->scale[scales == 1 ? 0 : i];
        floatBias.rawData += rawFloatData(static_cast<float>((bias->values[i] - zero) * scale));
    }
    PlannedEdit planned = plannedFrom(asked);
    planned.added.push_back(floatBias.name);
    for (const auto& [node, slot] : reads)
    {
        planned.touched.push_back(mGraph.nodes[node].name);
        claim(node, slot, asked.rule);
        mPlan.modelEdits.rewireInputs.push_back({node, slot, floatBias.name});
        planned.changed.push_back(mGraph.nodes[node].name + " input " + std::to_string(slot) + ": " +
                                  dequantize.outputs[0] + " -> " + floatBias.name);
    }
    NumericCost exact;
    exact.stepGrowth = 1.0;
    exact.clippedShare = 0.0;
    exact.summary = "none: the float values are those the DequantizeLinear computed";
    planned.numericCost = std::move(exact);
    mPlan.modelEdits.addInitializers.push_back(std::move(floatBias));
    mPlan.modelEdits.removeNodes.push_back(dq);
    mRemoved.insert(dq);
    planned.removed.push_back(dequantize.name);
    mPlan.edits.push_back(std::move(planned));
}

//! Insertions on one tensor with one scale share one Q/DQ pair; the pair goes before the first reader it feeds.
//! One scale per tensor: insertions that several findings ask for one tensor with different scales take one of
//! them, the largest (a larger scale rounds more coarsely but clips nothing the others kept), when those scales
//! and the scales of the Qs already reading the tensor are within patterns::kMostUnifiedScaleRatio of each other.
//! Further apart, no scale serves them all: each such insertion is refused, with the scales in the reason.
void Planner::reconcileInsertionScales()
{
    std::map<std::string, std::vector<std::size_t>> byTensor; // tensor -> insertion asks with a scale to copy
    std::vector<std::string> order;
    for (std::size_t i = 0; i < mAsked.size(); ++i)
    {
        const FixEdit& edit = mAsked[i].edit;
        const std::uint32_t from =
            edit.kind == FixEdit::Kind::kInsertQdq ? nodeIndex(edit.scaleFrom) : OnnxGraph::kNone;
        // A scale of its own (a moved scaling Mul, the Softmax's fixed scale) is no scale to share.
        const bool ownScale = edit.scaleFactor != 1.0 || edit.fixedScale > 0.0;
        if (from != OnnxGraph::kNone && perTensorQdq(from) != nullptr && !ownScale)
        {
            auto& asks = byTensor[edit.tensor];
            order.push_back(edit.tensor);
            asks.push_back(i);
        }
    }
    for (const auto& tensor : order)
    {
        auto& asks = byTensor[tensor];
        if (asks.empty())
        {
            continue; // done
        }
        std::vector<std::pair<double, std::string>> proposals; // scale, "node (scale)"
        std::size_t widest = asks.front();
        for (std::size_t i : asks)
        {
            const double scale = perTensorQdq(nodeIndex(mAsked[i].edit.scaleFrom))->scale[0];
            proposals.emplace_back(scale,
                                   mAsked[i].edit.scaleFrom + " (" + formatScale(scale) + ", " + mAsked[i].rule + ")");
            if (scale > perTensorQdq(nodeIndex(mAsked[widest].edit.scaleFrom))->scale[0])
            {
                widest = i;
            }
        }
        for (const auto& [reader, slot] : readers(tensor))
        {
            const QdqParameters* on = patterns::isQuantize(mGraph.nodes[reader]) ? perTensorQdq(reader) : nullptr;
            if (on != nullptr)
            {
                proposals.emplace_back(on->scale[0], mGraph.nodes[reader].name + " (" + formatScale(on->scale[0]) +
                                                         ", already on it)");
            }
        }
        const auto [low, high] = std::minmax_element(proposals.begin(), proposals.end());
        std::vector<std::string> named;
        for (const auto& proposal : proposals)
        {
            named.push_back(proposal.second);
        }
        for (std::size_t i : asks)
        {
            if (!patterns::withinUnificationBound(low->first, high->first))
            {
                mInsertionRefusals[i] = "the scales for " + tensor + " differ by more than " +
                                        formatScale(patterns::kMostUnifiedScaleRatio) + "x (" +
                                        patterns::nameList(named, 6) +
                                        "): no one scale serves them; calibrate this tensor";
            }
            else if (!patterns::scalesEqual(low->first, high->first) && i != widest)
            {
                mAsked[i].edit.scaleFrom = mAsked[widest].edit.scaleFrom;
                mAsked[i].edit.scaleReason = "one scale for " + tensor + ", the largest of those asked (" +
                                             patterns::nameList(named, 6) + "): " + mAsked[widest].edit.scaleReason;
            }
        }
        asks.clear();
    }
}

//! The inputs a new pair feeds: the edit's consumers, each of which must read the tensor at that input, stay, and be
//! changed by no other edit. Returns why not, "" when they may.
std::string Planner::insertionReads(const FixEdit& edit,
                                    std::vector<std::pair<std::uint32_t, std::uint32_t>>& reads) const
{
    std::string problem;
    for (const auto& [name, slot] : edit.consumers)
    {
        const std::uint32_t node = nodeIndex(name);
        if (node == OnnxGraph::kNone || slot >= mGraph.nodes[node].inputs.size() ||
            mGraph.nodes[node].inputs[slot] != edit.tensor)
        {
            problem = name + " does not read " + edit.tensor + " at input " + std::to_string(slot);
            break;
        }
        if (mRemoved.count(node) != 0)
        {
            problem = name + " is removed by another edit";
            break;
        }
        if (!claimant(node, slot).empty())
        {
            problem = "input " + std::to_string(slot) + " of " + name + " is changed by another edit (" +
                      claimant(node, slot) + ")";
            break;
        }
        reads.emplace_back(node, slot);
    }
    return problem;
}

void Planner::planInsertions()
{
    struct Group
    {
        std::vector<const Asked*> asked;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> reads;
        QdqParameters parameters;
    };
    std::map<std::pair<std::string, std::string>, Group> groups; // (tensor, scale source)
    std::vector<std::pair<std::string, std::string>> order;
    for (const auto& asked : mAsked)
    {
        if (asked.edit.kind != FixEdit::Kind::kInsertQdq)
        {
            continue;
        }
        const FixEdit& edit = asked.edit;
        if (auto refusal = mInsertionRefusals.find(static_cast<std::size_t>(&asked - mAsked.data()));
            refusal != mInsertionRefusals.end())
        {
            skip(asked, refusal->second);
            continue;
        }
        const std::optional<QdqParameters> parameters = insertionParameters(edit);
        if (!parameters)
        {
            skip(asked, edit.scaleFrom.empty()
                            ? (edit.scaleReason.empty() ? std::string("no scale to copy") : edit.scaleReason)
                            : "the scale of " + edit.scaleFrom + " is not one per-tensor constant value");
            continue;
        }
        if (mGraph.tensors.find(TensorKey(edit.tensor)) == OnnxGraph::kNone)
        {
            skip(asked, "tensor " + edit.tensor + " is not in the model");
            continue;
        }
        if (auto renamed = mRenamedTensors.find(edit.tensor); renamed != mRenamedTensors.end())
        {
            skip(asked, "tensor " + edit.tensor + " becomes the network output " + renamed->second +
                            " by another edit; fix's next pass quantizes that if it must");
            continue;
        }
        if (const OnnxNode* producer = patterns::producerOf(mGraph, edit.tensor);
            producer != nullptr && mRemoved.count(static_cast<std::uint32_t>(producer->index)) != 0)
        {
            skip(asked, edit.tensor + " is the output of " + producer->name + ", removed by another edit");
            continue;
        }
        std::vector<std::pair<std::uint32_t, std::uint32_t>> reads;
        const std::string problem = insertionReads(edit, reads);
        if (edit.consumers.empty())
        {
            reads = readers(edit.tensor);
        }
        if (!problem.empty() || reads.empty())
        {
            skip(asked, problem.empty() ? "nothing reads " + edit.tensor : problem);
            continue;
        }
        for (const auto& [node, slot] : reads)
        {
            claim(node, slot, asked.rule);
        }
        const auto key =
            std::make_pair(edit.tensor, formatScale(parameters->scale[0]) + "|" +
                                            (parameters->zeroPoint.empty() ? std::string("-")
                                                                           : formatScale(parameters->zeroPoint[0])) +
                                            "|" + std::to_string(static_cast<int>(parameters->zeroPointType)));
        auto [it, inserted] = groups.emplace(key, Group{});
        if (inserted)
        {
            order.push_back(key);
        }
        it->second.asked.push_back(&asked);
        it->second.reads.insert(it->second.reads.end(), reads.begin(), reads.end());
        it->second.parameters = *parameters;
    }
    for (const auto& key : order)
    {
        planPair(groups[key].asked, groups[key].reads, groups[key].parameters);
    }
}

//! The scale and zero point a new pair takes: scaleFrom's (per-tensor), times scaleFactor, or the fixed scale
//! with zero point 0 of scaleFrom's quantized type (int8 for uint8: TensorRT takes signed INT8 only). nullopt
//! when scaleFrom has no one per-tensor scale.
std::optional<QdqParameters> Planner::insertionParameters(const FixEdit& edit) const
{
    const std::uint32_t scaleNode = nodeIndex(edit.scaleFrom);
    const QdqParameters* source = scaleNode == OnnxGraph::kNone ? nullptr : mGraph.qdqOf(scaleNode);
    if (source == nullptr || (source->scale.size() != 1 && edit.fixedScale <= 0.0))
    {
        return std::nullopt;
    }
    QdqParameters parameters = *source;
    if (edit.fixedScale > 0.0)
    {
        parameters.scale = {edit.fixedScale};
        if (parameters.hasZeroPoint || parameters.zeroPointType != OnnxDataType::kUndefined)
        {
            parameters.hasZeroPoint = true;
            parameters.zeroPoint = {0.0};
            if (parameters.zeroPointType == OnnxDataType::kUint8 ||
                parameters.zeroPointType == OnnxDataType::kUndefined)
            {
                parameters.zeroPointType = OnnxDataType::kInt8;
            }
        }
        else if (!parameters.outputDtype)
        {
            // No zero point and no type: ONNX's default is uint8; TensorRT takes int8 with zero point 0.
            parameters.hasZeroPoint = true;
            parameters.zeroPoint = {0.0};
            parameters.zeroPointType = OnnxDataType::kInt8;
        }
        parameters.axis.reset();
        parameters.blockSize.reset();
    }
    else
    {
        parameters.scale[0] *= edit.scaleFactor;
    }
    return parameters;
}

//! New initializers holding a per-tensor Q/DQ's scale (FLOAT) and zero point (INT8/UINT8, when it has one),
//! named base/scale and base/zero_point; returns their names ("" for no zero point).
std::pair<std::string, std::string> Planner::addScaleInitializers(const QdqParameters& parameters,
                                                                  const std::string& base)
{
    NewInitializer scale;
    scale.name = freshName(base + "/scale");
    scale.dataType = 1;
    scale.rawData = rawFloatData(static_cast<float>(parameters.scale[0]));
    std::string scaleName = scale.name;
    mPlan.modelEdits.addInitializers.push_back(std::move(scale));
    std::string zeroPointName;
    if (parameters.hasZeroPoint && !parameters.zeroPoint.empty())
    {
        NewInitializer zeroPoint;
        zeroPoint.name = freshName(base + "/zero_point");
        const bool isUnsigned = parameters.zeroPointType == OnnxDataType::kUint8;
        const bool isFloat8 = parameters.zeroPointType >= OnnxDataType::kFloat8E4M3FN &&
                              parameters.zeroPointType <= OnnxDataType::kFloat8E5M2FNUZ;
        // UINT8, INT8, or the FLOAT8 type (one byte; its zero point is 0, all bits clear)
        zeroPoint.dataType = isFloat8 ? static_cast<std::int32_t>(parameters.zeroPointType) : isUnsigned ? 2 : 3;
        const long value = isFloat8 ? 0 : std::lround(parameters.zeroPoint[0]);
        zeroPoint.rawData.assign(
            1, static_cast<char>(isUnsigned ? static_cast<unsigned char>(value)
                                            : static_cast<unsigned char>(static_cast<signed char>(value))));
        zeroPointName = zeroPoint.name;
        mPlan.modelEdits.addInitializers.push_back(std::move(zeroPoint));
    }
    return {scaleName, zeroPointName};
}

void Planner::planPair(const std::vector<const Asked*>& asked,
                       const std::vector<std::pair<std::uint32_t, std::uint32_t>>& reads,
                       const QdqParameters& parameters)
{
    const Asked& first = *asked.front();
    const FixEdit& edit = first.edit;
    const std::uint32_t scaleNode = nodeIndex(edit.scaleFrom);
    // Names say where the nodes came from: qdq_doctor/<rule>/<tensor>/QuantizeLinear.
    const std::string base =
        "qdq_doctor/" + first.rule + "/" + (edit.tensor.rfind('/', 0) == 0 ? edit.tensor.substr(1) : edit.tensor);

    const auto [scaleName, zeroPointName] = addScaleInitializers(parameters, base);
    NewNode q;
    q.name = freshName(base + "/QuantizeLinear");
    // The pair is written in the op set of the Q/DQ it copies: ModelOpt's trt::TRT_FP8QuantizeLinear carries its
    // FP8 type in its op, which a QuantizeLinear without a zero point would turn into uint8.
    const OnnxNode& scaleSource = mGraph.nodes[scaleNode];
    const std::size_t typeEnd = scaleSource.opType.rfind(
        scaleSource.opType.ends_with("DequantizeLinear") ? "DequantizeLinear" : "QuantizeLinear");
    const std::string opPrefix = typeEnd == std::string::npos ? std::string() : scaleSource.opType.substr(0, typeEnd);
    q.opType = opPrefix + "QuantizeLinear";
    q.domain = opPrefix.empty() ? std::string() : scaleSource.domain;
    q.inputs = {edit.tensor, scaleName};
    NewNode dq;
    dq.name = freshName(base + "/DequantizeLinear");
    dq.opType = opPrefix + "DequantizeLinear";
    dq.domain = q.domain;
    const std::string quantized = freshName(base + "/quantized");
    const std::string dequantized = freshName(base + "/dequantized");
    q.outputs = {quantized};
    dq.inputs = {quantized, scaleName};
    if (!zeroPointName.empty())
    {
        q.inputs.push_back(zeroPointName);
        dq.inputs.push_back(zeroPointName);
    }
    dq.outputs = {dequantized};
    q.docString = dq.docString = "added by qdq-doctor fix (" + first.rule + "): " + edit.scaleReason;

    std::uint32_t before = static_cast<std::uint32_t>(mGraph.nodes.size());
    for (const auto& read : reads)
    {
        before = std::min(before, read.first);
    }
    PlannedEdit planned = plannedFrom(first);
    for (const Asked* other : asked)
    {
        if (other != &first)
        {
            planned.keys.push_back(other->key);
        }
        planned.removesError = planned.removesError || other->removesError;
        for (const auto& rule : other->rules)
        {
            if (std::find(planned.rules.begin(), planned.rules.end(), rule) == planned.rules.end())
            {
                planned.rules.push_back(rule);
            }
        }
    }
    planned.added = {q.name, dq.name, scaleName};
    if (!zeroPointName.empty())
    {
        planned.added.push_back(zeroPointName);
    }
    planned.scale =
        formatScale(parameters.scale[0]) +
        (edit.fixedScale > 0.0     ? " (fixed; type of " + edit.scaleFrom + ")"
         : edit.scaleFactor != 1.0 ? " = the scale of " + edit.scaleFrom + " x " + formatScale(edit.scaleFactor)
                                   : " from " + edit.scaleFrom) +
        ": " + edit.scaleReason;
    // The tensor was float: a new rounding at the copied step, and values past the copied range clamp (a range
    // taken from a Q of the same values clamps what that Q clamped).
    NumericCost cost;
    cost.summary = "a new rounding of step " + formatScale(parameters.scale[0]) + " on a float tensor" +
                   (edit.fixedScale > 0.0 ? "" : ", clamped to the range of " + edit.scaleFrom);
    planned.numericCost = std::move(cost);
    for (const auto& [node, slot] : reads)
    {
        planned.touched.push_back(mGraph.nodes[node].name);
        mPlan.modelEdits.rewireInputs.push_back({node, slot, dequantized});
        planned.changed.push_back(mGraph.nodes[node].name + " input " + std::to_string(slot) + ": " + edit.tensor +
                                  " -> " + dequantized);
        planned.edit.consumers.emplace_back(mGraph.nodes[node].name, slot);
    }
    std::sort(planned.edit.consumers.begin(), planned.edit.consumers.end());
    planned.edit.consumers.erase(std::unique(planned.edit.consumers.begin(), planned.edit.consumers.end()),
                                 planned.edit.consumers.end());
    mPlan.modelEdits.insertNodes.push_back({before, std::move(q)});
    mPlan.modelEdits.insertNodes.push_back({before, std::move(dq)});
    mPlan.edits.push_back(std::move(planned));
}

} // namespace qdq::fix_planning
