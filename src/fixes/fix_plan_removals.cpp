// The fix planner's removals of Q/DQ pairs, rewrites of QOperator ops in QDQ form and unwraps of plugins
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

void Planner::planRemoval(const Asked& asked)
{
    const auto& nodes = asked.edit.nodes;
    const std::uint32_t q = nodes.size() == 2 ? nodeIndex(nodes[0]) : OnnxGraph::kNone;
    const std::uint32_t dq = nodes.size() == 2 ? nodeIndex(nodes[1]) : OnnxGraph::kNone;
    if (q == OnnxGraph::kNone || dq == OnnxGraph::kNone)
    {
        skip(asked, "the Q/DQ pair is not in the model");
        return;
    }
    const OnnxNode& quantize = mGraph.nodes[q];
    const OnnxNode& dequantize = mGraph.nodes[dq];
    if (!patterns::isQuantize(quantize) || !patterns::isDequantize(dequantize) || quantize.inputs.empty() ||
        quantize.outputs.empty() || dequantize.inputs.empty() || dequantize.outputs.empty() ||
        dequantize.inputs[0] != quantize.outputs[0])
    {
        skip(asked, quantize.name + " does not feed " + dequantize.name + " directly");
        return;
    }
    if (mRemoved.count(dq) != 0)
    {
        skip(asked, dequantize.name + " is already removed by another edit");
        return;
    }
    if (mReadByRewrite.count(dq) != 0)
    {
        skip(asked, dequantize.name + " is read by a rewritten QOperator op; fix's next pass removes it if it must");
        return;
    }
    // A pair on a cycle through itself (q: x -> a, dq: a -> x, which a graph the reader accepts may hold): the Q
    // (or the DQ) reads what the DQ writes, so rewiring the DQ's readers would rewire a removed node.
    const auto reads = readers(dequantize.outputs[0]);
    if (std::any_of(reads.begin(), reads.end(), [&](const auto& read) { return read.first == q || read.first == dq; }))
    {
        skip(asked, quantize.name + " reads what " + dequantize.name + " writes (the pair is a cycle)");
        return;
    }
    if (isGraphOutput(dequantize.outputs[0]))
    {
        planRemovalAtNetworkOutput(asked, q, dq);
        return;
    }
    if (std::string problem = claimedBy(reads); !problem.empty())
    {
        skip(asked, problem);
        return;
    }
    PlannedEdit planned = plannedFrom(asked);
    std::string input = quantize.inputs[0];
    if (const OnnxNode* producer = patterns::producerOf(mGraph, input))
    {
        planned.touched.push_back(producer->name);
    }
    // A range that starts at 0 clamps like a Relu, and ONNX Runtime's quantizer removes the Relu it stands for
    // (SqueezeNet: Conv -> Q -> DQ -> MaxPool with no Relu node). The pair goes, the clamp stays, as a Relu.
    if (rangeStartsAtZero(q) && needsClampKept(input))
    {
        input = addClampRelu(input, dq,
                             "qdq_doctor/" + asked.rule + "/" + (input.rfind('/', 0) == 0 ? input.substr(1) : input),
                             asked.rule, quantize.name, "range, which the removed Q/DQ pair applied", planned);
    }
    for (const auto& [node, slot] : reads)
    {
        planned.touched.push_back(mGraph.nodes[node].name);
        claim(node, slot, asked.rule);
        mPlan.modelEdits.rewireInputs.push_back({node, slot, input});
        planned.changed.push_back(mGraph.nodes[node].name + " input " + std::to_string(slot) + ": " +
                                  dequantize.outputs[0] + " -> " + input);
    }
    mPlan.modelEdits.removeNodes.push_back(dq);
    mRemoved.insert(dq);
    planned.removed.push_back(dequantize.name);
    // The Q goes too when the DQ was its only reader.
    const auto qReads = readers(quantize.outputs[0]);
    if (qReads.size() == 1 && qReads[0].first == dq && !isGraphOutput(quantize.outputs[0]) && mRemoved.count(q) == 0)
    {
        mPlan.modelEdits.removeNodes.push_back(q);
        mRemoved.insert(q);
        planned.removed.push_back(quantize.name);
    }
    mPlan.edits.push_back(std::move(planned));
}

//! A pair whose DQ writes a network output: the output keeps its name, so the tensor the Q read takes it over.
//! Its producer writes the network output directly (or, where the Q's range started at 0, a Relu reading it does).
void Planner::planRemovalAtNetworkOutput(const Asked& asked, std::uint32_t q, std::uint32_t dq)
{
    const OnnxNode& quantize = mGraph.nodes[q];
    const OnnxNode& dequantize = mGraph.nodes[dq];
    const std::string& output = dequantize.outputs[0];
    const std::string input = quantize.inputs[0];
    const auto qReads = readers(quantize.outputs[0]);
    if (qReads.size() != 1 || isGraphOutput(quantize.outputs[0]) || mRemoved.count(q) != 0)
    {
        skip(asked, output + " is a network output and " + quantize.name +
                        " has other readers; removing the pair would rename the output");
        return;
    }
    const OnnxNode* producer = patterns::producerOf(mGraph, input);
    if (producer == nullptr || isGraphOutput(input))
    {
        skip(asked, output + " is a network output and " + input +
                        (producer == nullptr ? " is written by no node" : " is a network output too") +
                        "; removing the pair would rename the output");
        return;
    }
    const auto producerIndex = static_cast<std::uint32_t>(producer->index);
    if (mRemoved.count(producerIndex) != 0 || mRenamedOutputs.count(producerIndex) != 0)
    {
        skip(asked, producer->name + ", which would write the network output " + output +
                        ", is removed or changed by another edit");
        return;
    }
    const bool clamp = rangeStartsAtZero(q) && needsClampKept(input);
    // The tensor is renamed only where the Q is its one reader and no edit made before this one reads it (a
    // removal elsewhere that rewires its readers to it, a new node): nothing else can be left reading the old name.
    const bool readElsewhere =
        readers(input).size() != 1 ||
        std::any_of(mPlan.modelEdits.rewireInputs.begin(), mPlan.modelEdits.rewireInputs.end(),
                    [&input](const ModelEdits::Rewire& rewire) { return rewire.newInput == input; }) ||
        std::any_of(mPlan.modelEdits.insertNodes.begin(), mPlan.modelEdits.insertNodes.end(),
                    [&input](const ModelEdits::Insert& insert) {
                        return std::find(insert.node.inputs.begin(), insert.node.inputs.end(), input) !=
                               insert.node.inputs.end();
                    });
    if (!clamp && readElsewhere)
    {
        skip(asked, output + " is a network output and " + input + " has other readers besides " + quantize.name +
                        "; removing the pair would rename the output");
        return;
    }
    PlannedEdit planned = plannedFrom(asked);
    planned.touched.push_back(producer->name);
    if (clamp)
    {
        // The Q's clamp at 0 stands for a Relu ONNX Runtime removed: a Relu writes the output.
        addClampRelu(input, dq, "qdq_doctor/" + asked.rule + "/" + (input.rfind('/', 0) == 0 ? input.substr(1) : input),
                     asked.rule, quantize.name, "range, which the removed Q/DQ pair applied", planned, output);
    }
    else
    {
        std::uint32_t slot = 0;
        while (slot < producer->outputs.size() && producer->outputs[slot] != input)
        {
            ++slot;
        }
        mPlan.modelEdits.renameNodeOutputs.push_back({producerIndex, slot, output});
        mRenamedOutputs.insert(producerIndex);
        mRenamedTensors.emplace(input, output);
        planned.changed.push_back(producer->name + " output " + std::to_string(slot) + ": " + input + " -> " + output +
                                  " (the network output)");
    }
    for (const std::uint32_t node : {dq, q})
    {
        mPlan.modelEdits.removeNodes.push_back(node);
        mRemoved.insert(node);
        planned.removed.push_back(mGraph.nodes[node].name);
    }
    mPlan.edits.push_back(std::move(planned));
}

//! kRewriteQuantizedOp: an ONNX Runtime QOperator op becomes DequantizeLinear -> float op -> QuantizeLinear,
//! inserted where it was (src/fixes/quantized_op_rewrite.cpp). Its readers keep reading its output tensor, which
//! the new QuantizeLinear writes.
void Planner::planRewriteQuantizedOp(const Asked& asked)
{
    const std::uint32_t node = asked.edit.nodes.empty() ? OnnxGraph::kNone : nodeIndex(asked.edit.nodes[0]);
    if (node == OnnxGraph::kNone || mRemoved.count(node) != 0)
    {
        skip(asked, "the op is not in the model or is removed by another edit");
        return;
    }
    const OnnxNode& op = mGraph.nodes[node];
    for (std::uint32_t slot = 0; slot < op.inputs.size(); ++slot)
    {
        if (std::string rule = claimant(node, slot); !rule.empty())
        {
            skip(asked,
                 "input " + std::to_string(slot) + " of " + op.name + " is changed by another edit (" + rule + ")");
            return;
        }
    }
    std::string why;
    const std::string prefix =
        "qdq_doctor/" + asked.rule + "/" + (op.name.rfind('/', 0) == 0 ? op.name.substr(1) : op.name);
    std::optional<QuantizedOpRewrite> rewrite = rewriteQuantizedOp(
        mGraph, node, prefix, [this](const std::string& base) { return freshName(base); }, why);
    if (!rewrite)
    {
        skip(asked, why + "; re-quantize the float model in QDQ format instead");
        return;
    }
    PlannedEdit planned = plannedFrom(asked);
    std::size_t dequantizes = 0;
    bool quantizes = false;
    // One DequantizeLinear per quantized tensor, shared by the ops that read it, as a QDQ export writes it: a
    // SiLU's Sigmoid and Mul both read the conv's output through one DQ, which the conv epilogue fusion needs
    // (EfficientNet-B0 in QOperator form: 98 lone Q/DQ with a DQ for each reader). Shared only with a DQ inserted
    // at or before this op, so that every tensor is still written before it is read.
    seedSharedDequantize();
    std::map<std::string, std::string> renamed; // dropped DQ's output -> the shared DQ's output
    for (auto& newNode : rewrite->nodes)
    {
        for (auto& input : newNode.inputs)
        {
            if (auto it = renamed.find(input); it != renamed.end())
            {
                input = it->second;
            }
        }
        if (newNode.opType == "DequantizeLinear")
        {
            std::vector<std::pair<std::string, std::int64_t>> attributes;
            for (const auto& attribute : newNode.attributes)
            {
                attributes.emplace_back(attribute.name, attribute.i.value_or(0));
            }
            auto [shared, inserted] = mSharedDequantize.emplace(dequantizeKey(newNode.inputs, attributes),
                                                                std::make_pair(newNode.outputs[0], node));
            if (!inserted && shared->second.second <= node)
            {
                if (const OnnxNode* own = patterns::producerOf(mGraph, shared->second.first))
                {
                    mReadByRewrite.insert(static_cast<std::uint32_t>(own->index)); // a DQ of the model
                }
                renamed.emplace(newNode.outputs[0], shared->second.first);
                continue;
            }
            ++dequantizes;
        }
        quantizes = quantizes || newNode.opType == "QuantizeLinear";
        planned.added.push_back(newNode.name);
        mPlan.modelEdits.insertNodes.push_back({node, std::move(newNode)});
    }
    for (auto& initializer : rewrite->initializers)
    {
        planned.added.push_back(initializer.name);
        mPlan.modelEdits.addInitializers.push_back(std::move(initializer));
    }
    mPlan.modelEdits.removeNodes.push_back(node);
    mRemoved.insert(node);
    planned.removed.push_back(op.name);
    planned.changed.push_back(op.name + ": " + op.opType + " -> " + std::to_string(dequantizes) +
                              " DequantizeLinear, " + rewrite->floatOp + (quantizes ? ", QuantizeLinear" : "") +
                              " (the " + rewrite->floatOp + " keeps the name)");
    planned.touched.push_back(op.name);
    for (const auto& output : op.outputs)
    {
        for (const OnnxNode* reader : patterns::consumersOf(mGraph, output))
        {
            planned.touched.push_back(reader->name);
        }
    }
    mPlan.edits.push_back(std::move(planned));
}

//! What makes two DequantizeLinear nodes compute the same tensor: their inputs and their INT attributes (axis).
std::string Planner::dequantizeKey(const std::vector<std::string>& inputs,
                                   const std::vector<std::pair<std::string, std::int64_t>>& attributes)
{
    std::string key;
    for (const auto& input : inputs)
    {
        key += input + "|";
    }
    for (const auto& [name, value] : attributes)
    {
        key += name + "=" + std::to_string(value) + "|";
    }
    return key;
}

//! The model's own DequantizeLinear nodes as DQs a rewrite can share (ONNX Runtime writes one before each float op
//! between QOperator ops: MobileNetV3's HardSigmoid reads the conv's output through it, and the HardSwish's Mul
//! must read the same DQ for the conv to take both as its epilogue).
void Planner::seedSharedDequantize()
{
    if (mSharedDequantizeSeeded)
    {
        return;
    }
    mSharedDequantizeSeeded = true;
    for (const auto& node : mGraph.nodes)
    {
        if (!patterns::isDequantize(node) || node.outputs.empty() || !node.domain.empty())
        {
            continue;
        }
        std::vector<std::pair<std::string, std::int64_t>> attributes;
        bool plain = true;
        for (const auto& attribute : node.attributes)
        {
            plain = plain && attribute.kind == OnnxAttribute::Kind::kInt;
            attributes.emplace_back(attribute.name, attribute.i);
        }
        if (plain)
        {
            mSharedDequantize.emplace(
                dequantizeKey({node.inputs.begin(), node.inputs.end()}, attributes),
                std::make_pair(std::string(node.outputs[0]), static_cast<std::uint32_t>(node.index + 1)));
        }
    }
}

//! kUnwrapPlugin: DQ -> plugin -> Q becomes Q -> plugin -> DQ. Only when asked by name (--rules): the plugin
//! then reads and writes INT8, which its code must support with the scales listed in the report.
void Planner::planUnwrapPlugin(const Asked& asked)
{
    const auto& names = asked.edit.nodes;
    const std::uint32_t plugin = names.empty() ? OnnxGraph::kNone : nodeIndex(names[0]);
    if (plugin == OnnxGraph::kNone)
    {
        skip(asked, "the plugin is not in the model");
        return;
    }
    const OnnxNode& pluginNode = mGraph.nodes[plugin];
    PluginUnwrap unwrap;
    if (!collectPluginWrappers(asked, unwrap))
    {
        return;
    }
    if (std::find(mOptions.rules.begin(), mOptions.rules.end(), asked.rule) == mOptions.rules.end())
    {
        skip(asked, "makes " + pluginNode.name + " read and write INT8, which its code must support with " +
                        patterns::nameList(unwrap.scaleTexts, 4) + "; once it does, run fix with --rules " +
                        asked.rule);
        return;
    }
    PlannedEdit planned = plannedFrom(asked);
    if (!planPluginRewires(asked, plugin, unwrap) || !pluginOutputScalesAgree(asked, pluginNode, unwrap.scales))
    {
        return;
    }
    if (std::string problem = claimedBy(unwrap.rewires); !problem.empty())
    {
        skip(asked, problem);
        return;
    }
    for (std::size_t i = 0; i < unwrap.rewires.size(); ++i)
    {
        const auto [node, slot] = unwrap.rewires[i];
        claim(node, slot, asked.rule);
        const std::string& old = mGraph.nodes[node].inputs[slot];
        mPlan.modelEdits.rewireInputs.push_back({node, slot, unwrap.newInputs[i]});
        planned.changed.push_back(mGraph.nodes[node].name + " input " + std::to_string(slot) + ": " + old + " -> " +
                                  unwrap.newInputs[i]);
        planned.touched.push_back(mGraph.nodes[node].name);
    }
    for (std::uint32_t node : unwrap.removals)
    {
        mPlan.modelEdits.removeNodes.push_back(node);
        mRemoved.insert(node);
        planned.removed.push_back(mGraph.nodes[node].name);
    }
    planned.touched.push_back(pluginNode.name);
    planned.scale = pluginNode.name + " now reads and writes INT8: " + patterns::nameList(unwrap.scaleTexts, 8);
    planned.pluginScales = std::move(unwrap.scales);
    mPlan.edits.push_back(std::move(planned));
}

//! The DQs before the plugin and the Qs after it, each with the scale the plugin takes over. Returns false (the
//! edit skipped) when one is missing.
bool Planner::collectPluginWrappers(const Asked& asked, PluginUnwrap& unwrap)
{
    const auto& names = asked.edit.nodes;
    for (std::size_t i = 1; i < names.size(); ++i)
    {
        const std::uint32_t node = nodeIndex(names[i]);
        if (node == OnnxGraph::kNone)
        {
            skip(asked, names[i] + " is not in the model");
            return false;
        }
        const OnnxNode& qdq = mGraph.nodes[node];
        if (qdq.inputs.empty() || qdq.outputs.empty())
        {
            skip(asked, qdq.name + " has no input or output");
            return false;
        }
        const bool input = patterns::isDequantize(qdq);
        PlannedEdit::PluginScale entry{input ? "input" : "output", input ? qdq.outputs[0] : qdq.inputs[0], qdq.name,
                                       std::nullopt, std::nullopt};
        if (const QdqParameters* parameters = perTensorQdq(node))
        {
            entry.scale = parameters->scale[0];
            entry.zeroPoint = parameters->zeroPoint.empty() ? 0.0 : parameters->zeroPoint[0];
        }
        unwrap.scaleTexts.push_back(
            entry.side + " " +
            (entry.scale ? "scale " + formatScale(*entry.scale) : std::string("scale (not a constant)")) + " from " +
            qdq.name);
        unwrap.wrappers.push_back(node);
        unwrap.scales.push_back(std::move(entry));
    }
    return true;
}

//! The plugin reads what each DQ dequantizes (the DQ goes when the plugin was its only reader); each Q's readers
//! read the plugin's output, which must have no float reader left. Returns false (the edit skipped) when a wrapper
//! cannot be unwrapped.
bool Planner::planPluginRewires(const Asked& asked, std::uint32_t plugin, PluginUnwrap& unwrap)
{
    const auto& names = asked.edit.nodes;
    const OnnxNode& pluginNode = mGraph.nodes[plugin];
    for (std::uint32_t node : unwrap.wrappers)
    {
        const OnnxNode& qdq = mGraph.nodes[node];
        if (mRemoved.count(node) != 0)
        {
            skip(asked, qdq.name + " is already removed by another edit");
            return false;
        }
        if (patterns::isDequantize(qdq))
        {
            bool otherReaders = isGraphOutput(qdq.outputs[0]) || mReadByRewrite.count(node) != 0;
            for (const auto& [reader, slot] : readers(qdq.outputs[0]))
            {
                if (reader == plugin)
                {
                    unwrap.rewires.emplace_back(reader, slot);
                    unwrap.newInputs.push_back(qdq.inputs[0]);
                }
                else
                {
                    otherReaders = true;
                }
            }
            if (!otherReaders)
            {
                unwrap.removals.push_back(node);
            }
            continue;
        }
        const std::string& pluginOutput = qdq.inputs[0];
        if (std::find(pluginNode.outputs.begin(), pluginNode.outputs.end(), pluginOutput) == pluginNode.outputs.end())
        {
            skip(asked, qdq.name + " does not read an output of " + pluginNode.name);
            return false;
        }
        if (isGraphOutput(qdq.outputs[0]) || isGraphOutput(pluginOutput))
        {
            skip(asked, "an output of " + pluginNode.name + " or " + qdq.name +
                            " is a network output; unwrapping would change its type");
            return false;
        }
        for (const auto& [reader, slot] : readers(pluginOutput))
        {
            if (std::find(names.begin() + 1, names.end(), mGraph.nodes[reader].name) == names.end())
            {
                skip(asked, mGraph.nodes[reader].name + " reads " + pluginOutput + " in float; it would get INT8");
                return false;
            }
        }
        for (const auto& [reader, slot] : readers(qdq.outputs[0]))
        {
            unwrap.rewires.emplace_back(reader, slot);
            unwrap.newInputs.push_back(pluginOutput);
        }
        unwrap.removals.push_back(node);
    }
    return true;
}

//! Two Qs with different scales on one plugin output cannot both become the plugin's output scale. Returns false
//! (the edit skipped) when they differ.
bool Planner::pluginOutputScalesAgree(const Asked& asked, const OnnxNode& pluginNode,
                                      const std::vector<PlannedEdit::PluginScale>& scales)
{
    for (std::size_t i = 0; i < scales.size(); ++i)
    {
        for (std::size_t j = i + 1; j < scales.size(); ++j)
        {
            if (scales[i].side == "output" && scales[j].side == "output" && scales[i].tensor == scales[j].tensor &&
                (!scales[i].scale || !scales[j].scale || *scales[i].scale != *scales[j].scale))
            {
                skip(asked, scales[i].from + " and " + scales[j].from + " quantize one output of " + pluginNode.name +
                                " with different scales; give them one scale first");
                return false;
            }
        }
    }
    return true;
}

} // namespace qdq::fix_planning
