// R07 int8-conv-float-output: a quantized weighted op (INT8 input) whose output reaches no QuantizeLinear through its
// epilogue and commuting ops, so TensorRT runs it INT8-in / float-out and a reformat or standalone Quantize follows.
#include "qdq/engine_view.h"
#include "qdq/reformat_walks.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

#include <algorithm>

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace precision;

//! Which rule explains a float residual input of an Add: a SiLU on the other side keeps the Add out of the conv.
std::string residualHint(const OnnxGraph& graph, const OnnxNode& add, const std::string& residual)
{
    for (const auto& input : add.inputs)
    {
        if (input != residual && !input.empty() && quantizedWeightedBehind(graph, input, false) == nullptr &&
            quantizedWeightedBehind(graph, input, true) != nullptr)
        {
            return " (see activation-before-residual-add)";
        }
    }
    return " (see residual-input-not-quantized)";
}

//! add reads tensor and a constant (directly, or through a DequantizeLinear, Identity, Reshape, ...) and nothing
//! else: a bias.
//! Whether a float layer passes values through unchanged in range: a shuffle, a reformat or copy, a max pooling
//! (its output is a subset of its input). An average, a reduction or an element-wise layer changes it.
bool layerKeepsRange(const EngineLayer& layer)
{
    if (layer.type == "Shuffle" || layer.type == "Reformat" || layer.type == "NoOp")
    {
        return true;
    }
    const bool pooling = layer.type.find("Pooling") != std::string::npos || layer.type == "maxpool";
    return pooling && layer.name.find("MaxPool") != std::string::npos;
}

bool isBiasAdd(const OnnxGraph& graph, const OnnxNode& add, const std::string& tensor)
{
    if (add.opType != "Add" || add.inputs.size() != 2 || add.outputs.empty())
    {
        return false;
    }
    const std::size_t other = add.inputs[0] == tensor ? 1 : 0;
    return add.inputs[1 - other] == tensor && isConstantLike(graph, add.inputs[other]);
}

class Int8ConvFloatOutput final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "int8-conv-float-output",
            "R07",
            "A quantized conv/GEMM has no QuantizeLinear after its epilogue, so it runs INT8-in / float-out and a "
            "reformat or standalone Quantize follows",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation | kReadsPrediction,
            ""};
        return kInfo;
    }

private:
    //! What follows a float-output engine layer: the float layers, reformats and Quantize layers up to the point
    //! where the data is INT8 again.
    struct FollowUp
    {
        std::vector<std::size_t> costly; //!< reformats and standalone Quantize layers
        std::vector<std::size_t> floatLayers;
        bool requantized = false;
        bool reachesOutput = false;
        bool residualOfFusedLayer = false;       //!< the conv output itself is the residual input of a fused Conv+Add
        std::optional<std::size_t> residualUser; //!< a fused Conv+Add reading the float data later as its residual
    };

    static FollowUp followUp(const Context& context, std::size_t start)
    {
        const EnginePlan& plan = *context.engine();
        FollowUp result;
        std::vector<std::size_t> frontier = {start};
        std::vector<std::size_t> seen = {start};
        for (int depth = 0; depth < 8 && !frontier.empty(); ++depth)
        {
            std::vector<std::size_t> next;
            for (std::size_t layer : frontier)
            {
                for (const auto& output : plan.layers[layer].outputs)
                {
                    if (isNetworkOutput(plan, output.name))
                    {
                        result.reachesOutput = true;
                    }
                    for (std::size_t consumer : consumerLayers(plan, output.name))
                    {
                        const EngineLayer& c = plan.layers[consumer];
                        if (std::find(seen.begin(), seen.end(), consumer) != seen.end())
                        {
                            continue;
                        }
                        seen.push_back(consumer);
                        if (isResidualLayer(c) && !c.inputs.empty() && c.inputs[0].name != output.name)
                        {
                            if (result.floatLayers.empty())
                            {
                                // The conv output itself (maybe through a reformat) is the residual.
                                result.residualOfFusedLayer = true;
                            }
                            else
                            {
                                result.residualUser = consumer;
                            }
                            continue;
                        }
                        if (isStandaloneQuantize(context, consumer))
                        {
                            result.requantized = true;
                            result.costly.push_back(consumer);
                            continue;
                        }
                        if (isInsertedReformat(context, consumer))
                        {
                            result.costly.push_back(consumer);
                            if (isQuantized(outputPrecision(c)))
                            {
                                result.requantized = true;
                                continue;
                            }
                            next.push_back(consumer);
                            continue;
                        }
                        if (isWeightedLayer(c) || isQuantized(outputPrecision(c)))
                        {
                            continue; // another conv reads the float tensor: not this rule's business
                        }
                        result.floatLayers.push_back(consumer);
                        next.push_back(consumer);
                    }
                }
            }
            frontier = std::move(next);
        }
        return result;
    }

    //! The scale a Q -> DQ pair on tensor before user borrows, and why (or why it needs calibration instead).
    struct BorrowedScale
    {
        const OnnxNode* lender = nullptr; //!< nullptr: calibrate
        std::string advice;               //!< " with the scale of ...", " with a calibrated scale (...)"
        std::string reason;               //!< the edit's scaleReason
    };

    //! The Q already on the output (exact), else the first Q downstream through ops that keep the tensor's range.
    //! Past an op that narrows or changes it (an average, a gate, an Add), the borrowed scale would clip the tensor:
    //! the edit then asks for a calibrated scale instead. The new pair's values also reach that downstream Q: where
    //! several Qs are in play, one decision for the tensor (patterns::scaleSourceAmong), and none when their scales
    //! are too far apart. reference: the nearest quantizer, named when none keeps the range.
    static BorrowedScale borrowedScale(const OnnxGraph& graph, const std::vector<const OnnxNode*>& onOutput,
                                       const OnnxNode& user, const std::string& tensor, const OnnxNode& reference)
    {
        const OnnxNode* narrowing = keepsRange(user) ? nullptr : &user;
        const OnnxNode* downstreamKeeping = narrowing == nullptr && !user.outputs.empty()
                                                ? quantizeDownstreamKeepingRange(graph, user.outputs[0], &narrowing)
                                                : nullptr;
        std::vector<const OnnxNode*> candidates = onOutput;
        if (downstreamKeeping != nullptr &&
            std::find(candidates.begin(), candidates.end(), downstreamKeeping) == candidates.end())
        {
            candidates.push_back(downstreamKeeping);
        }
        BorrowedScale scale;
        if (candidates.empty())
        {
            const std::string narrowed = narrowing == nullptr
                                             ? std::string("an op that narrows the range")
                                             : narrowing->opType + " " + narrowing->name + ", which narrows the range";
            scale.advice = " with a calibrated scale (the nearest quantizer downstream, " + reference.name +
                           scaleSuffix(graph, reference) + ", is past " + narrowed + ", so its scale would clip " +
                           tensor + ")";
            scale.reason = "no quantizer downstream of " + tensor + " keeps its range (the nearest, " + reference.name +
                           ", is past " + narrowed + "): its scale needs calibration";
            return scale;
        }
        std::string spreadProblem;
        scale.lender = scaleSourceAmong(graph, candidates, &spreadProblem);
        if (scale.lender == nullptr)
        {
            scale.advice = " with a calibrated scale (" + spreadProblem + ")";
            scale.reason = tensor + " needs a calibrated scale: " + spreadProblem;
            return scale;
        }
        const bool merges = std::find(onOutput.begin(), onOutput.end(), scale.lender) != onOutput.end();
        scale.advice = " with the scale of " + scale.lender->name + scaleSuffix(graph, *scale.lender) +
                       (merges ? std::string(" so the two merge") : std::string());
        scale.reason = merges && candidates.size() > 1
                           ? "the largest scale of the Qs already on the output and downstream (the one "
                             "fanout-scale-mismatch gives them all), so TensorRT merges them"
                       : merges ? "the scale of the Q already on the output, so TensorRT merges the two"
                                : "the scale of the next quantizer downstream (" + scale.lender->name +
                                      "), the one TensorRT can fuse into the conv";
        return scale;
    }

    //! The INT8 convs whose output stays float to the end: one info finding for them all.
    struct Heads
    {
        Finding finding;
        std::vector<std::string> names;
        std::vector<std::size_t> layers;
    };

    //! The conv's epilogue chain, with up to two bias Adds after it (torch's Linear on a 3-D input exports MatMul ->
    //! Add(bias)): part of the op for TensorRT, whether the bias is a float constant or a DequantizeLinear of one
    //! (constant-folded). `consumers` ends as the readers of the chain's output.
    static EpilogueChain chainWithBias(const OnnxGraph& graph, const OnnxNode& node,
                                       std::vector<const OnnxNode*>& consumers)
    {
        EpilogueChain chain = epilogueChain(graph, node);
        consumers = consumersOf(graph, chain.tensor());
        for (int depth = 0; depth < 2 && consumers.size() == 1 && isBiasAdd(graph, *consumers[0], chain.tensor());
             ++depth)
        {
            chain.nodes.push_back(consumers[0]);
            chain.output = &consumers[0]->outputs[0];
            consumers = consumersOf(graph, chain.tensor());
        }
        return chain;
    }

    //! The chain goes on through the sole readers that the engine the report shows runs in the conv's own layer
    //! (the real one, else the predicted one): Keras' BatchNormalization exported as Mul and Add by constants runs
    //! there as Convolution + Scale (the simulator's weighted layers; TensorRT 8.5.10's ConstEltFusion and
    //! ConvScaleFusion fold a constant Add into the conv in ../shared/realdata/lix-mnist-orin-trt8510-best/
    //! trt_build_best.log), so the conv's output is what that layer writes. A residual Add stops it: the residual
    //! rules judge that case.
    static void extendThroughTheLayer(const EngineView& engine, const OnnxGraph& graph, const OnnxNode& node,
                                      EpilogueChain& chain, std::vector<const OnnxNode*>& consumers)
    {
        for (int depth = 0; depth < 8 && consumers.size() == 1; ++depth)
        {
            const OnnxNode& next = *consumers[0];
            const bool residual =
                (next.opType == "Add" || next.opType == "Sum") && activationInputs(graph, next).size() >= 2;
            if (next.qdqKind != OnnxNode::QdqKind::kNone || next.outputs.empty() || residual ||
                !engine.sameLayer(node.name, next.name))
            {
                return;
            }
            chain.nodes.push_back(&next);
            chain.output = &next.outputs[0];
            consumers = consumersOf(graph, chain.tensor());
        }
    }

    //! The engine layers that run the node, and the layers after them that re-quantize its output.
    static void engineLayersOf(const Context& context, const OnnxNode& node, std::vector<std::size_t>& layers,
                               std::vector<std::size_t>& costly)
    {
        if (context.engine() == nullptr)
        {
            return;
        }
        for (std::size_t layer : layersOf(context, node.name))
        {
            addUnique(layers, layer);
            FollowUp follow = followUp(context, layer);
            for (std::size_t c : follow.costly)
            {
                addUnique(costly, c);
            }
        }
    }

    static void addHead(const Context& context, Heads& heads, const OnnxNode& node, const EpilogueChain& chain,
                        const FloatEnds& ends, const std::vector<std::string>& nodes,
                        const std::vector<std::size_t>& layers)
    {
        heads.names.push_back(node.name);
        heads.finding.onnxNodes.insert(heads.finding.onnxNodes.end(), nodes.begin(), nodes.end());
        heads.finding.evidence.push_back(
            nodeEvidence(context, node,
                         "INT8 input; output " + chain.tensor() + " stays float up to " +
                             (ends.outputs.empty() ? std::string("the float tail of the network")
                                                   : "network output " + ends.outputs[0])));
        heads.layers.insert(heads.layers.end(), layers.begin(), layers.end());
    }

    //! The finding for a conv whose float output reaches float readers and, further on, a quantizer.
    Finding floatOutputFinding(const Context& context, const OnnxGraph& graph, const OnnxNode& node,
                               const EpilogueChain& chain, const ForwardQuantizers& forward, const FloatEnds& ends,
                               const OnnxNode* downstreamQ, std::vector<std::string> nodes) const
    {
        std::vector<std::string> reasons;
        std::vector<std::string> fixes;
        std::vector<FixEdit> edits;
        for (std::size_t i = 0; i < ends.users.size(); ++i)
        {
            const OnnxNode* user = ends.users[i];
            const std::string& tensor = ends.userTensors[i];
            const OnnxNode* nearest = user->outputs.empty() ? nullptr : quantizeDownstream(graph, user->outputs[0]);
            const OnnxNode* reference = !forward.quantizers.empty() ? forward.quantizers[0]
                                        : nearest != nullptr        ? nearest
                                                                    : downstreamQ;
            const BorrowedScale scale = borrowedScale(graph, forward.quantizers, *user, tensor, *reference);
            bool residual = (user->opType == "Add" || user->opType == "Sum") &&
                            activationInputs(graph, *user).size() >= 2 &&
                            quantizedWeightedBehind(graph, tensor) == nullptr;
            reasons.push_back(user->opType + " " + user->name + (residual ? " (as its residual input)" : ""));
            fixes.push_back("insert QuantizeLinear -> DequantizeLinear on tensor " + tensor + " before " + user->name +
                            scale.advice + (residual ? residualHint(graph, *user, tensor) : std::string()));
            edits.push_back(insertQdqEdit(*user, tensor, scale.lender != nullptr ? scale.lender->name : std::string(),
                                          scale.reason));
        }
        for (const auto& output : ends.outputs)
        {
            reasons.push_back("network output " + output);
        }
        Finding finding = makeFinding(
            info(), node.opType + " " + node.name + " has an INT8 input but its output " + chain.tensor() +
                        " is not quantized on every path: it reaches " + nameList(reasons, 4) +
                        " without a QuantizeLinear, so TensorRT runs it INT8-in / float-out and re-quantizes later "
                        "with a reformat or standalone Quantize.");
        finding.onnxNodes = std::move(nodes);
        for (const OnnxNode* user : ends.users)
        {
            finding.onnxNodes.push_back(user->name);
        }
        finding.evidence.push_back(nodeEvidence(
            context, node, "DQ-fed input " + node.inputs[0] + "; no QuantizeLinear on " + nameList(reasons, 4)));
        finding.fix =
            nameList(fixes, 4) +
            "; the Q/DQ propagates back through commuting ops and fuses into the conv epilogue as its INT8 output";
        finding.edits = std::move(edits);
        return finding;
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        const EngineView engine(context);
        Heads heads{makeFinding(info(), ""), {}, {}};
        heads.finding.severity = Severity::kInfo;
        for (const auto& node : graph.nodes)
        {
            if (!isWeighted(graph, node) || node.inputs.size() < 2 || node.outputs.empty() ||
                feedingDequantize(graph, node.inputs[0]) == nullptr ||
                feedingDequantize(graph, node.inputs[1]) == nullptr)
            {
                continue;
            }
            std::vector<const OnnxNode*> consumers;
            EpilogueChain chain = chainWithBias(graph, node, consumers);
            extendThroughTheLayer(engine, graph, node, chain, consumers);
            if (consumers.size() == 1 && (consumers[0]->opType == "Add" || consumers[0]->opType == "Sum") &&
                activationInputs(graph, *consumers[0]).size() >= 2)
            {
                continue; // a residual Add fused into the conv: residual-input-not-quantized and related rules
            }
            auto forward = forwardQuantizers(graph, chain.tensor(), true);
            if (!forward.quantizers.empty() && forward.allPaths)
            {
                continue;
            }
            FloatEnds ends = floatEnds(graph, chain.tensor(), true);
            std::vector<std::string> nodes = {node.name};
            for (const OnnxNode* epilogue : chain.nodes)
            {
                nodes.push_back(epilogue->name);
            }
            const OnnxNode* downstreamQ = nullptr;
            for (const OnnxNode* user : ends.users)
            {
                if (downstreamQ == nullptr && !user->outputs.empty())
                {
                    downstreamQ = quantizeDownstream(graph, user->outputs[0]);
                }
            }
            std::vector<std::size_t> layers;
            std::vector<std::size_t> costly;
            engineLayersOf(context, node, layers, costly);
            if (!layers.empty() && std::all_of(layers.begin(), layers.end(),
                                               [&](std::size_t layer) {
                                                   return isQuantized(outputPrecision(context.engine()->layers[layer]));
                                               }))
            {
                continue; // the engine shows an INT8 output: TensorRT moved a later Q into the conv
            }
            if (downstreamQ == nullptr)
            {
                // A head: everything after it stays float (network output, detection head, logits).
                addHead(context, heads, node, chain, ends, nodes, layers);
                continue;
            }
            Finding finding =
                floatOutputFinding(context, graph, node, chain, forward, ends, downstreamQ, std::move(nodes));
            finding.engineLayers = layerNames(context, layers);
            for (std::size_t c : costly)
            {
                finding.engineLayers.push_back(context.engine()->layers[c].name);
                finding.evidence.push_back(layerEvidence(context, c, "", "re-quantizes the float output"));
            }
            finding.costMs = sumTimes(context, costly);
            sink.add(std::move(finding));
        }
        if (!heads.names.empty())
        {
            heads.finding.message =
                "Output heads " + nameList(heads.names, 6) +
                " take INT8 input and produce float output with no quantized op after them: expected for network "
                "outputs and heads kept in float on purpose.";
            heads.finding.engineLayers = layerNames(context, heads.layers);
            heads.finding.fix = "nothing to do if these heads are meant to stay float; to run their consumers in INT8, "
                                "quantize those consumers' inputs";
            sink.add(std::move(heads.finding));
        }
    }

    //! What the fix quantizes: the input of the first float layer after the conv, else of the last layer that
    //! re-quantizes its output, a layer of the model: a reformat the builder inserted (one that converts FP32 to INT8
    //! itself) is in no model, so then the conv's output is named.
    static std::string requantizedInput(const Context& context, const std::vector<std::string>& floatPath,
                                        const std::vector<std::size_t>& requantizers, const EngineLayer& conv)
    {
        if (!floatPath.empty())
        {
            return "the input of " + floatPath.front();
        }
        for (auto it = requantizers.rbegin(); it != requantizers.rend(); ++it)
        {
            if (!isBuilderInserted(context, *it))
            {
                return "the input of " + context.engine()->layers[*it].name;
            }
        }
        return "the output of \"" + conv.name + "\"";
    }

    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        Finding heads = makeFinding(info(), "");
        heads.severity = Severity::kInfo;
        heads.likely = true;
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& layer = plan.layers[index];
            if (!isWeightedLayer(layer) || isResidualLayer(layer) || layer.inputs.empty() || layer.outputs.empty() ||
                !isQuantized(inputPrecision(layer)) || !isFloat(outputPrecision(layer)) ||
                context.correlation.layers[index].state != LayerState::kMapped)
            {
                continue;
            }
            FollowUp follow = followUp(context, index);
            if (follow.residualOfFusedLayer)
            {
                continue; // the float output is a residual: residual-input-not-quantized explains it
            }
            std::string precision = precisionText(outputPrecision(layer));
            if (!follow.requantized)
            {
                if (follow.reachesOutput)
                {
                    heads.engineLayers.push_back(layer.name);
                    for (const auto& node : context.correlation.layers[index].onnxNodes)
                    {
                        heads.onnxNodes.emplace_back(node);
                    }
                    heads.evidence.push_back(layerEvidence(context, index, "Outputs[0]",
                                                           "INT8 input, " + precision + " output " +
                                                               layer.outputs[0].name +
                                                               ", float up to the network output"));
                }
                continue;
            }
            std::vector<std::string> path;
            for (std::size_t f : follow.floatLayers)
            {
                path.push_back(plan.layers[f].name);
            }
            std::vector<std::string> requantizers = layerNames(context, follow.costly);
            Finding finding =
                makeFinding(info(), "\"" + layer.name + "\" likely runs INT8-in / " + precision + "-out: its output " +
                                        layer.outputs[0].name +
                                        (path.empty() ? std::string()
                                                      : " goes through float layer(s) " + nameList(path, 3) + " and") +
                                        " is re-quantized by " + nameList(requantizers, 3) +
                                        ", so the quantization was not placed where the conv could absorb it" +
                                        (follow.residualUser ? " (the float data is also the residual input of \"" +
                                                                   plan.layers[*follow.residualUser].name +
                                                                   "\": see residual-input-not-quantized)."
                                                             : "."));
            finding.likely = true;
            finding.engineLayers.push_back(layer.name);
            finding.engineLayers.insert(finding.engineLayers.end(), path.begin(), path.end());
            finding.engineLayers.insert(finding.engineLayers.end(), requantizers.begin(), requantizers.end());
            finding.onnxNodes.assign(context.correlation.layers[index].onnxNodes.begin(),
                                     context.correlation.layers[index].onnxNodes.end());
            finding.evidence.push_back(layerEvidence(context, index, "Outputs[0]",
                                                     layer.inputs[0].name + " " + precisionText(inputPrecision(layer)) +
                                                         " -> " + layer.outputs[0].name + " " + precision));
            for (std::size_t c : follow.costly)
            {
                finding.evidence.push_back(layerEvidence(
                    context, c, "",
                    plan.layers[c].type +
                        (plan.layers[c].origin.empty() ? "" : " (Origin: " + plan.layers[c].origin + ")") + " " +
                        precisionText(inputPrecision(plan.layers[c])) + " -> " +
                        precisionText(outputPrecision(plan.layers[c]))));
            }
            finding.costMs = sumTimes(context, follow.costly);
            // A float layer on the way that changes the range (an average, a reduction, a resize's blend, an
            // element-wise op): the later Quantize measured that layer's output, so its scale would clip or waste
            // this tensor's range; the Q/DQ needs a scale calibrated for it (fix borrows none across such an op).
            const bool rangeChanges = std::any_of(follow.floatLayers.begin(), follow.floatLayers.end(),
                                                  [&](std::size_t f) { return !layerKeepsRange(plan.layers[f]); });
            finding.fix = "in the ONNX model, quantize " + requantizedInput(context, path, follow.costly, layer) +
                          " (QuantizeLinear -> DequantizeLinear on " + layer.outputs[0].name +
                          (rangeChanges ? ", with a scale calibrated for that tensor: the later Quantize measures the "
                                          "output of " +
                                              path.front() + ", whose range differs"
                                        : ", with the scale the later Quantize uses") +
                          ") so the Q fuses into \"" + layer.name + "\" as its INT8 output" +
                          (path.empty() ? std::string() : " and " + path.front() + " runs INT8");
            sink.add(std::move(finding));
        }
        if (!heads.engineLayers.empty())
        {
            heads.message =
                "Output head(s) " + nameList(heads.engineLayers, 6) +
                " take INT8 input and produce float output for the network output: expected when the output is "
                "float.";
            heads.fix =
                "nothing to do unless the consumer of the network output can take INT8 (then --outputIOFormats)";
            sink.add(std::move(heads));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeInt8ConvFloatOutput()
{
    return std::make_unique<Int8ConvFloatOutput>();
}

} // namespace qdq::rules
