// The findings' graph edits as changes of the model file: duplicates merged, conflicts refused in a fixed order
// (rewrites of QOperator ops, then removals, then plugin unwraps, then float biases, then insertions, then scale
// unifications; within each, the order of the report's findings), new nodes and tensors named after the rule and the
// tensor they serve. docs/fix.md describes the order and the names.
#include "qdq/fix.h"
#include "qdq/patterns.h"
#include "qdq/union_find.h"
#include "src/fixes/quantized_op_rewrite.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace qdq
{

namespace
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

class Planner
{
public:
    Planner(const Report& report, const OnnxGraph& graph, const FixOptions& options,
            const std::map<std::string, std::string>& refused)
        : mReport(report), mGraph(graph), mOptions(options), mRefused(refused)
    {
    }

    FixPlan run()
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

private:
    //! Initializers whose every reader the plan removes or rewires away (a removed Q/DQ pair's scale and zero point)
    //! are left out too: the fixed model otherwise carried them unread (115 of resnet18-ort-qdq's 243 initializers
    //! once its Q/DQ pairs were removed, 18 of vit-tiny-ort-qdq's 180; ONNX Runtime drops each with a warning). An
    //! initializer the model already left unread stays, as do graph outputs and what a new node or a rewired input
    //! reads. Not done for a model with subgraphs, whose nodes may read a main-graph initializer by name.
    void dropOrphanedInitializers()
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
            const bool allGone =
                !reads.empty() &&
                std::all_of(reads.begin(), reads.end(),
                            [&](const auto& read) { return removed[read.first] || rewired.count(read) != 0; });
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
    void tellOrphan(const std::string& initializer, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& reads)
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

    bool hasSubgraphs() const
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

    std::unordered_map<std::string, std::size_t> mEditOfNode; //!< node name -> the first planned edit naming it

    struct Asked
    {
        FixEdit edit;
        std::string rule;
        std::string finding;
        std::vector<std::string> rules;
        std::string key;
        std::vector<std::string> extraKeys; //!< the keys of asks merged into this one
        bool removesError = false;          //!< an error finding asked for it (PlannedEdit::removesError)
    };

    bool selected(const std::string& slug) const
    {
        return mOptions.rules.empty() ||
               std::find(mOptions.rules.begin(), mOptions.rules.end(), slug) != mOptions.rules.end();
    }

    static std::string editKey(const FixEdit& edit)
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
    void collect()
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
                mAsked.push_back({edit,
                                  finding.rule,
                                  finding.message,
                                  {finding.rule},
                                  key,
                                  {},
                                  finding.severity == Severity::kError});
            }
        }
        // Edits an earlier plan found to make new warnings are left out.
        std::vector<Asked> kept;
        for (auto& asked : mAsked)
        {
            auto refusal = mRefused.find(asked.key);
            if (refusal != mRefused.end())
            {
                skip(asked, refusal->second);
                continue;
            }
            kept.push_back(std::move(asked));
        }
        mAsked = std::move(kept);
    }

    void skip(const Asked& asked, std::string why)
    {
        mPlan.skipped.push_back({asked.edit, asked.rule, std::move(why)});
    }

    std::uint32_t nodeIndex(const std::string& name) const { return mGraph.nodeIndex(name); }

    //! A name not yet used by a node or tensor of the model or of this plan.
    std::string freshName(const std::string& base)
    {
        std::string name = base;
        for (int n = 2; mGraph.findNode(name) != nullptr || mGraph.tensors.find(TensorKey(name)) != OnnxGraph::kNone ||
                        mUsedNames.count(name) != 0;
             ++n)
        {
            name = base + "_" + std::to_string(n);
        }
        mUsedNames.insert(name);
        return name;
    }

    //! Claims input slot of node for one edit; false when another edit of the plan already changes it.
    bool claim(std::uint32_t node, std::uint32_t slot, const std::string& by)
    {
        return mClaimed.emplace(std::make_pair(node, slot), by).second;
    }

    std::string claimant(std::uint32_t node, std::uint32_t slot) const
    {
        auto it = mClaimed.find({node, slot});
        return it == mClaimed.end() ? std::string() : it->second;
    }

    //! What stops an edit from changing these reads: one of them is changed by another edit already ("" if none).
    std::string claimedBy(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& reads) const
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
    std::vector<std::pair<std::uint32_t, std::uint32_t>> readers(const std::string& tensor) const
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

    bool isGraphOutput(const std::string& tensor) const
    {
        return std::find(mGraph.graphOutputs.begin(), mGraph.graphOutputs.end(), tensor) != mGraph.graphOutputs.end();
    }

    void planRemoval(const Asked& asked)
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
            skip(asked,
                 dequantize.name + " is read by a rewritten QOperator op; fix's next pass removes it if it must");
            return;
        }
        // A pair on a cycle through itself (q: x -> a, dq: a -> x, which a graph the reader accepts may hold): the Q
        // (or the DQ) reads what the DQ writes, so rewiring the DQ's readers would rewire a removed node.
        const auto reads = readers(dequantize.outputs[0]);
        if (std::any_of(reads.begin(), reads.end(),
                        [&](const auto& read) { return read.first == q || read.first == dq; }))
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
            input = addClampRelu(
                input, dq, "qdq_doctor/" + asked.rule + "/" + (input.rfind('/', 0) == 0 ? input.substr(1) : input),
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
        if (qReads.size() == 1 && qReads[0].first == dq && !isGraphOutput(quantize.outputs[0]) &&
            mRemoved.count(q) == 0)
        {
            mPlan.modelEdits.removeNodes.push_back(q);
            mRemoved.insert(q);
            planned.removed.push_back(quantize.name);
        }
        mPlan.edits.push_back(std::move(planned));
    }

    //! A pair whose DQ writes a network output: the output keeps its name, so the tensor the Q read takes it over.
    //! Its producer writes the network output directly (or, where the Q's range started at 0, a Relu reading it does).
    void planRemovalAtNetworkOutput(const Asked& asked, std::uint32_t q, std::uint32_t dq)
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
            addClampRelu(input, dq,
                         "qdq_doctor/" + asked.rule + "/" + (input.rfind('/', 0) == 0 ? input.substr(1) : input),
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
            planned.changed.push_back(producer->name + " output " + std::to_string(slot) + ": " + input + " -> " +
                                      output + " (the network output)");
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
    void planRewriteQuantizedOp(const Asked& asked)
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
    static std::string dequantizeKey(const std::vector<std::string>& inputs,
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
    void seedSharedDequantize()
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
    void planUnwrapPlugin(const Asked& asked)
    {
        const auto& names = asked.edit.nodes;
        const std::uint32_t plugin = names.empty() ? OnnxGraph::kNone : nodeIndex(names[0]);
        if (plugin == OnnxGraph::kNone)
        {
            skip(asked, "the plugin is not in the model");
            return;
        }
        const OnnxNode& pluginNode = mGraph.nodes[plugin];
        // The DQs before the plugin and the Qs after it, each with the scale the plugin takes over.
        std::vector<std::uint32_t> wrappers;
        std::vector<PlannedEdit::PluginScale> scales;
        std::vector<std::string> scaleTexts;
        for (std::size_t i = 1; i < names.size(); ++i)
        {
            const std::uint32_t node = nodeIndex(names[i]);
            if (node == OnnxGraph::kNone)
            {
                skip(asked, names[i] + " is not in the model");
                return;
            }
            const OnnxNode& qdq = mGraph.nodes[node];
            if (qdq.inputs.empty() || qdq.outputs.empty())
            {
                skip(asked, qdq.name + " has no input or output");
                return;
            }
            const bool input = patterns::isDequantize(qdq);
            PlannedEdit::PluginScale entry{input ? "input" : "output", input ? qdq.outputs[0] : qdq.inputs[0], qdq.name,
                                           std::nullopt, std::nullopt};
            if (const QdqParameters* parameters = perTensorQdq(node))
            {
                entry.scale = parameters->scale[0];
                entry.zeroPoint = parameters->zeroPoint.empty() ? 0.0 : parameters->zeroPoint[0];
            }
            scaleTexts.push_back(
                entry.side + " " +
                (entry.scale ? "scale " + formatScale(*entry.scale) : std::string("scale (not a constant)")) +
                " from " + qdq.name);
            wrappers.push_back(node);
            scales.push_back(std::move(entry));
        }
        if (std::find(mOptions.rules.begin(), mOptions.rules.end(), asked.rule) == mOptions.rules.end())
        {
            skip(asked, "makes " + pluginNode.name + " read and write INT8, which its code must support with " +
                            patterns::nameList(scaleTexts, 4) + "; once it does, run fix with --rules " + asked.rule);
            return;
        }
        PlannedEdit planned = plannedFrom(asked);
        std::vector<std::pair<std::uint32_t, std::uint32_t>> rewires; // (node, slot), with the new input below
        std::vector<std::string> newInputs;
        std::vector<std::uint32_t> removals;
        for (std::uint32_t node : wrappers)
        {
            const OnnxNode& qdq = mGraph.nodes[node];
            if (mRemoved.count(node) != 0)
            {
                skip(asked, qdq.name + " is already removed by another edit");
                return;
            }
            if (patterns::isDequantize(qdq))
            {
                // The plugin reads what the DQ dequantizes; the DQ goes when the plugin was its only reader.
                bool otherReaders = isGraphOutput(qdq.outputs[0]) || mReadByRewrite.count(node) != 0;
                for (const auto& [reader, slot] : readers(qdq.outputs[0]))
                {
                    if (reader == plugin)
                    {
                        rewires.emplace_back(reader, slot);
                        newInputs.push_back(qdq.inputs[0]);
                    }
                    else
                    {
                        otherReaders = true;
                    }
                }
                if (!otherReaders)
                {
                    removals.push_back(node);
                }
                continue;
            }
            // A Q after the plugin: its readers read the plugin's output, which must have no float reader left.
            const std::string& pluginOutput = qdq.inputs[0];
            if (std::find(pluginNode.outputs.begin(), pluginNode.outputs.end(), pluginOutput) ==
                pluginNode.outputs.end())
            {
                skip(asked, qdq.name + " does not read an output of " + pluginNode.name);
                return;
            }
            if (isGraphOutput(qdq.outputs[0]) || isGraphOutput(pluginOutput))
            {
                skip(asked, "an output of " + pluginNode.name + " or " + qdq.name +
                                " is a network output; unwrapping would change its type");
                return;
            }
            for (const auto& [reader, slot] : readers(pluginOutput))
            {
                if (std::find(names.begin() + 1, names.end(), mGraph.nodes[reader].name) == names.end())
                {
                    skip(asked, mGraph.nodes[reader].name + " reads " + pluginOutput + " in float; it would get INT8");
                    return;
                }
            }
            for (const auto& [reader, slot] : readers(qdq.outputs[0]))
            {
                rewires.emplace_back(reader, slot);
                newInputs.push_back(pluginOutput);
            }
            removals.push_back(node);
        }
        // Two Qs with different scales on one plugin output cannot both become the plugin's output scale.
        for (std::size_t i = 0; i < scales.size(); ++i)
        {
            for (std::size_t j = i + 1; j < scales.size(); ++j)
            {
                if (scales[i].side == "output" && scales[j].side == "output" && scales[i].tensor == scales[j].tensor &&
                    (!scales[i].scale || !scales[j].scale || *scales[i].scale != *scales[j].scale))
                {
                    skip(asked, scales[i].from + " and " + scales[j].from + " quantize one output of " +
                                    pluginNode.name + " with different scales; give them one scale first");
                    return;
                }
            }
        }
        if (std::string problem = claimedBy(rewires); !problem.empty())
        {
            skip(asked, problem);
            return;
        }
        for (std::size_t i = 0; i < rewires.size(); ++i)
        {
            const auto [node, slot] = rewires[i];
            claim(node, slot, asked.rule);
            const std::string& old = mGraph.nodes[node].inputs[slot];
            mPlan.modelEdits.rewireInputs.push_back({node, slot, newInputs[i]});
            planned.changed.push_back(mGraph.nodes[node].name + " input " + std::to_string(slot) + ": " + old + " -> " +
                                      newInputs[i]);
            planned.touched.push_back(mGraph.nodes[node].name);
        }
        for (std::uint32_t node : removals)
        {
            mPlan.modelEdits.removeNodes.push_back(node);
            mRemoved.insert(node);
            planned.removed.push_back(mGraph.nodes[node].name);
        }
        planned.touched.push_back(pluginNode.name);
        planned.scale = pluginNode.name + " now reads and writes INT8: " + patterns::nameList(scaleTexts, 8);
        planned.pluginScales = std::move(scales);
        mPlan.edits.push_back(std::move(planned));
    }

    //! A per-tensor Q or DQ whose scale (and zero point) are constants of the model, or nullptr.
    const QdqParameters* perTensorQdq(std::uint32_t node) const
    {
        const QdqParameters* parameters = mGraph.qdqOf(node);
        if (parameters == nullptr || !parameters->scaleIsConstant || parameters->scale.size() != 1 ||
            mGraph.nodes[node].inputs.size() < 2 || (parameters->hasZeroPoint && !parameters->zeroPointIsConstant))
        {
            return nullptr;
        }
        return parameters;
    }

    //! A bound on a group, not a limit a real model meets: the Concats of DenseNet-121's 24-layer block share 100 Q/DQ
    //! nodes (measured), so a 48-layer block (DenseNet-201) needs about 200; the old bound of 256 was close.
    static constexpr std::size_t kMostGroupNodes = 4096;

    //! A set-scale edit's group: its named Q/DQ nodes and their pair partners (a DQ's Q and that Q's other DQs, a
    //! Q's DQs), closed, in the order found. Sets problem (and returns what it has) when the group cannot take one
    //! scale: a DQ of a constant or of a network input, a Q read by other nodes than DQs, over kMostGroupNodes nodes.
    std::vector<std::uint32_t> scaleGroupOf(const FixEdit& edit, std::string& problem) const
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
            problem = "the Q/DQ nodes sharing these scales form a group of over " + std::to_string(kMostGroupNodes) +
                      " nodes";
        }
        return group;
    }

    //! Set-scale edits whose groups share a Q/DQ node become one edit with one scale, the largest of their
    //! sources' (no group's range is cut short). Each group's pairs cancel only when all of its scales are equal, so
    //! overlapping groups need one scale between them. In DenseNet every Concat of a dense block reads the block's
    //! earlier features through shared DQs: planned one by one, the first group took its scale, the overlapping
    //! ones were skipped as conflicts, and the Concats of a smaller group got a new mismatch.
    void mergeOverlappingScaleGroups()
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
    void planSetScale(const Asked& asked)
    {
        const std::uint32_t from = nodeIndex(asked.edit.scaleFrom);
        const QdqParameters* source = from == OnnxGraph::kNone ? nullptr : perTensorQdq(from);
        if (source == nullptr)
        {
            skip(asked, asked.edit.scaleFrom + " is not a per-tensor Q/DQ with a constant scale");
            return;
        }
        const OnnxNode& sourceNode = mGraph.nodes[from];
        const std::string scaleTensor = sourceNode.inputs[1];
        const std::string zeroPointTensor = sourceNode.inputs.size() > 2 ? sourceNode.inputs[2] : std::string();
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
        for (std::uint32_t node : group)
        {
            const QdqParameters* parameters = perTensorQdq(node);
            if (parameters == nullptr)
            {
                skip(asked, mGraph.nodes[node].name + " is not a per-tensor Q/DQ with a constant scale");
                return;
            }
            if (parameters->hasZeroPoint != source->hasZeroPoint ||
                (parameters->hasZeroPoint && parameters->zeroPointType != source->zeroPointType))
            {
                skip(asked, mGraph.nodes[node].name + "'s zero point differs in type from " + sourceNode.name +
                                "'s: its quantized type would change");
                return;
            }
            if (mRemoved.count(node) != 0)
            {
                skip(asked, mGraph.nodes[node].name + " is removed by another edit");
                return;
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
        // The group reads the source's own scale tensors, unless a node computes them after a member of the group
        // (a Constant node in the source's place in node order): then copies go in as new initializers.
        std::string scaleName = scaleTensor;
        std::string zeroPointName = zeroPointTensor;
        if (sourceAfterTarget)
        {
            std::tie(scaleName, zeroPointName) = addScaleInitializers(
                *source, "qdq_doctor/" + asked.rule + "/" +
                             (sourceNode.name.rfind('/', 0) == 0 ? sourceNode.name.substr(1) : sourceNode.name));
            planned.added.push_back(scaleName);
            if (!zeroPointName.empty())
            {
                planned.added.push_back(zeroPointName);
            }
        }
        planned.scale = formatScale(source->scale[0]) + " from " + sourceNode.name +
                        (asked.edit.scaleReason.empty() ? std::string() : ": " + asked.edit.scaleReason);
        rewireScaleInputs(slots, scaleName, zeroPointName, asked.rule, planned);
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

    //! Why the group must not take one scale, "" when it may: its scales (the source's among them) span more than
    //! patterns::kMostUnifiedScaleRatio. One scale would then take bits the smaller scales' tensors cannot spare (at
    //! 960x, all of them: every value of the smallest one rounds to 0, or saturates if the scale shrinks): they need
    //! a range from calibration data, which the reason names with every Q's scale.
    std::string scaleSpreadProblem(const std::vector<std::uint32_t>& group, std::uint32_t source) const
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
    void rewireScaleInputs(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& slots,
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
            planned.changed.push_back(target.name + " input " + std::to_string(slot) + ": " + target.inputs[slot] +
                                      " -> " + tensor);
            if (std::find(planned.touched.begin(), planned.touched.end(), target.name) == planned.touched.end())
            {
                planned.touched.push_back(target.name);
            }
        }
    }

    //! kSymmetricInt8: the group's Q/DQ (one scale and zero point between them) read a new FLOAT scale covering the
    //! same range symmetrically and an INT8 zero point 0. Planned after every other edit: nodes another edit removes
    //! leave the group; a scale another edit rewires is left to fix's next pass, which converts the scale it took.
    void planSymmetricInt8(const Asked& asked)
    {
        std::vector<std::uint32_t> group;
        for (const auto& name : asked.edit.nodes)
        {
            const std::uint32_t node = nodeIndex(name);
            if (node == OnnxGraph::kNone)
            {
                skip(asked, name + " is not a node of the model");
                return;
            }
            if (mRemoved.count(node) == 0)
            {
                group.push_back(node);
            }
        }
        if (group.empty())
        {
            return; // other edits removed every node of the group: nothing is left to convert
        }
        std::sort(group.begin(), group.end());
        const QdqParameters* first = perTensorQdq(group.front());
        std::vector<std::pair<std::uint32_t, std::uint32_t>> slots;
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
                return;
            }
            slots.emplace_back(node, 1);
            slots.emplace_back(node, 2);
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
        const std::string base =
            "qdq_doctor/" + asked.rule + "/" +
            (asked.edit.tensor.rfind('/', 0) == 0 ? asked.edit.tensor.substr(1) : asked.edit.tensor);
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
        char range[96];
        std::snprintf(range, sizeof(range), "[%.6g, %.6g]", scale * (qmin - zeroPoint), scale * (qmax - zeroPoint));
        planned.scale = formatScale(symmetric) + " with zero point 0, from scale " + formatScale(scale) + " and " +
                        std::string(onnxDataTypeName(first->zeroPointType)) + " zero point " +
                        std::to_string(std::lround(zeroPoint)) + ": covers the range " + std::string(range) +
                        " symmetrically";
        std::vector<std::pair<std::uint32_t, std::uint32_t>> scaleSlots;
        for (const auto& slot : slots)
        {
            if (slot.second != 0)
            {
                scaleSlots.push_back(slot);
            }
        }
        rewireScaleInputs(scaleSlots, scaleName, zeroPointName, asked.rule, planned);
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
    std::string addClampRelu(const std::string& input, std::uint32_t before, const std::string& base,
                             const std::string& rule, const std::string& quantizer, const std::string& why,
                             PlannedEdit& planned, const std::string& output = {})
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
    void clampQuantizeInput(std::uint32_t q, const std::string& base, const std::string& rule, const std::string& why,
                            PlannedEdit& planned)
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
    bool needsClampKept(const std::string& tensor) const
    {
        if (isNonNegative(tensor))
        {
            return false;
        }
        const OnnxNode* producer = patterns::producerOf(mGraph, tensor);
        return producer == nullptr ||
               !(producer->opType == "HardSwish" || producer->opType == "Gelu" ||
                 (producer->opType == "Mul" && patterns::selfGateOf(mGraph, *producer) != nullptr));
    }

    //! True when a per-tensor 8-bit Q or DQ has its zero point at the type's minimum (uint8 0, int8 -128): its range
    //! starts at 0, so a Q clamps negative values to 0 and a DQ gives none.
    bool rangeStartsAtZero(std::uint32_t node) const
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
    bool isNonNegative(const std::string& tensor) const
    {
        patterns::TensorMemo memo; // allocates only when the walk goes past tensor's producer
        return decideNonNegative(tensor, 0, memo);
    }

    //! Each tensor is decided once (a shared input, Add(t, t), is not walked twice; a cycle ends the walk).
    bool isNonNegative(const std::string& tensor, int depth, patterns::TensorMemo& memo) const
    {
        return memo.decide(mGraph.tensors.find(TensorKey(tensor)),
                           [&] { return decideNonNegative(tensor, depth, memo); });
    }

    bool decideNonNegative(const std::string& tensor, int depth, patterns::TensorMemo& memo) const
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

    void planFloatBias(const Asked& asked)
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
            (!parameters->zeroPoint.empty() && parameters->zeroPoint.size() != 1 &&
             parameters->zeroPoint.size() != count))
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
    void reconcileInsertionScales()
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
                proposals.emplace_back(scale, mAsked[i].edit.scaleFrom + " (" + formatScale(scale) + ", " +
                                                  mAsked[i].rule + ")");
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

    void planInsertions()
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
            const auto key = std::make_pair(
                edit.tensor,
                formatScale(parameters->scale[0]) + "|" +
                    (parameters->zeroPoint.empty() ? std::string("-") : formatScale(parameters->zeroPoint[0])) + "|" +
                    std::to_string(static_cast<int>(parameters->zeroPointType)));
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
    std::optional<QdqParameters> insertionParameters(const FixEdit& edit) const
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
    std::pair<std::string, std::string> addScaleInitializers(const QdqParameters& parameters, const std::string& base)
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

    void planPair(const std::vector<const Asked*>& asked,
                  const std::vector<std::pair<std::uint32_t, std::uint32_t>>& reads, const QdqParameters& parameters)
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
        const std::string opPrefix =
            typeEnd == std::string::npos ? std::string() : scaleSource.opType.substr(0, typeEnd);
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

    PlannedEdit plannedFrom(const Asked& asked) const
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

    const Report& mReport;
    const OnnxGraph& mGraph;
    const FixOptions& mOptions;
    const std::map<std::string, std::string>& mRefused;
    FixPlan mPlan;
    std::vector<Asked> mAsked;
    //! Insertions refused by reconcileInsertionScales (index into mAsked -> the reason)
    std::map<std::size_t, std::string> mInsertionRefusals;
    std::set<std::uint32_t> mRemoved;
    std::set<std::uint32_t> mRenamedOutputs;            //!< nodes whose output becomes a network output's name
    std::map<std::string, std::string> mRenamedTensors; //!< tensor -> the network output name it takes
    std::set<std::string> mUsedNames;
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> mClaimed; //!< (node, slot) -> rule changing it
    std::set<std::string> mNewlyRead; //!< existing tensors that an edit makes more nodes read
    //! DequantizeLinear nodes added by QOperator rewrites, by inputs and axis: (output, node inserted before)
    std::map<std::string, std::pair<std::string, std::uint32_t>> mSharedDequantize;
    bool mSharedDequantizeSeeded = false;
    std::set<std::uint32_t> mReadByRewrite; //!< DQs of the model that a rewrite's float op reads: removals keep them
};

} // namespace

FixPlan planFix(const Report& report, const OnnxGraph& graph, const FixOptions& options,
                const std::map<std::string, std::string>& refused)
{
    return Planner(report, graph, options, refused).run();
}

} // namespace qdq
