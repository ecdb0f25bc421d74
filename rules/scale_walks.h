// Graph walks shared by the scale and Concat rules (R16 concat-quantize-hoisted, R17 concat-scale-mismatch, R18
// concat-mixed-precision, R19 requantize-before-split, R21 maxpool-scale-mismatch, R26 horizontal-merge-lost, R31
// fanout-scale-mismatch): which Qs a tensor reaches through ops a Q moves across, which producer a Concat input
// comes from and whether it can absorb a Q clone, and how to attach engine layers and build-log events.
#pragma once

#include "qdq/layer_names.h"
#include "qdq/patterns.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace qdq::rules::walks
{

using namespace patterns;

//! Nearest-neighbour Resize/Upsample moves data only; TensorRT swaps a following Q backward across it
//! (`VanillaSwapWithFollowingQ on /neck/Resize`, TensorRT 8.5.2 build log).
inline bool isNearestResize(const OnnxNode& node)
{
    if (node.opType != "Resize" && node.opType != "Upsample")
    {
        return false;
    }
    const OnnxAttribute* mode = node.attribute("mode");
    return mode == nullptr || mode->s.empty() || mode->s == "nearest";
}

//! Ops a Q moves backward across (and a DQ forward across): the commuting ops plus nearest Resize.
inline bool movesQ(const OnnxNode& node)
{
    return isCommuting(node.opType) || isNearestResize(node);
}

inline std::string formatScale(double scale)
{
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.6g", scale);
    return buffer;
}

//! "Q (scale)" for messages; "Q (scale unknown)" when the scale is not a constant per-tensor value.
inline std::string withScale(const OnnxGraph& graph, const OnnxNode& node)
{
    auto scale = perTensorScale(graph, node);
    return node.name + " (scale " + (scale ? formatScale(*scale) : std::string("unknown")) + ")";
}

//! True when every known scale equals the first; unknown scales never count as a mismatch.
inline bool allScalesEqual(const std::vector<std::optional<double>>& scales)
{
    std::optional<double> first;
    for (const auto& scale : scales)
    {
        if (!scale)
        {
            continue;
        }
        if (!first)
        {
            first = scale;
        }
        else if (!scalesEqual(*first, *scale))
        {
            return false;
        }
    }
    return true;
}

//! How far apart the known scales of nodes are: largest / smallest (1 when fewer than two are known).
inline double scaleSpread(const OnnxGraph& graph, const std::vector<const OnnxNode*>& nodes)
{
    double smallest = 0.0;
    double largest = 0.0;
    for (const OnnxNode* node : nodes)
    {
        auto scale = perTensorScale(graph, *node);
        if (scale && *scale > 0.0)
        {
            smallest = smallest == 0.0 ? *scale : std::min(smallest, *scale);
            largest = std::max(largest, *scale);
        }
    }
    return smallest > 0.0 ? largest / smallest : 1.0;
}

//! "" when the known scales of nodes are within the bound fix keeps to when it gives a group one scale
//! (patterns::kMostUnifiedScaleRatio); else the advice to calibrate them as one group instead, each node named with
//! its scale. Beyond the bound one scale would leave the tensors with the smaller scales few or none of their 8 bits.
inline std::string recalibrationAdvice(const OnnxGraph& graph, const std::vector<const OnnxNode*>& nodes)
{
    const double spread = scaleSpread(graph, nodes);
    if (spread <= kMostUnifiedScaleRatio * (1.0 + 1e-6))
    {
        return {};
    }
    std::vector<std::string> described;
    for (const OnnxNode* node : nodes)
    {
        described.push_back(withScale(graph, *node));
    }
    char ratio[32];
    std::snprintf(ratio, sizeof(ratio), "%.3g", spread);
    return std::string("their scales differ by ") + ratio + "x, more than the " + formatScale(kMostUnifiedScaleRatio) +
           "x fix gives one scale (it would cost the tensors with the smaller scales most of their 8 bits): "
           "re-calibrate the tensors of " +
           nameList(described, 6) +
           " as one group (one range from calibration data), or leave them apart; fix does not change these scales";
}

//! A Q reached going forward from a tensor, and how.
struct ReachedQ
{
    const OnnxNode* q = nullptr;
    bool direct = false;           //!< reached on a path that crosses no MaxPool
    bool viaMaxPool = false;       //!< reached on a path that crosses a MaxPool
    bool viaConcat = false;        //!< some path crosses a Concat
    bool viaSplit = false;         //!< some path crosses a Split or Slice
    std::vector<std::string> path; //!< the ops crossed on the first path found
};

struct ForwardWalkOptions
{
    bool crossConcat = true;
    bool crossMaxPool = true;
};

//! The Qs reached from tensor through ops a Q moves across, each Q once, in discovery order (depth-first, consumers in
//! graph order). allPaths is false when some path ends at another op or a graph output first.
inline std::vector<ReachedQ> reachedQuantizers(const OnnxGraph& graph, const std::string& tensor,
                                               const ForwardWalkOptions& options, bool* allPaths = nullptr)
{
    struct State
    {
        std::uint32_t tensor = OnnxGraph::kNone; //!< tensor id
        bool viaMaxPool = false;
        bool viaConcat = false;
        bool viaSplit = false;
        std::vector<std::string> path;
    };
    std::vector<ReachedQ> result;
    std::vector<State> stack = {{graph.tensors.find(tensor), false, false, false, {}}};
    std::set<std::pair<std::uint32_t, int>> visited;
    bool all = true;
    while (!stack.empty())
    {
        State state = std::move(stack.back());
        stack.pop_back();
        int flags = (state.viaMaxPool ? 1 : 0) | (state.viaConcat ? 2 : 0) | (state.viaSplit ? 4 : 0);
        if (!visited.insert({state.tensor, flags}).second || state.path.size() > 64)
        {
            continue;
        }
        const NodeRefs consumers(graph.nodes.data(), graph.consumersOf(state.tensor));
        if (consumers.empty() || state.tensor == OnnxGraph::kNone ||
            isGraphOutput(graph, graph.tensors.names[state.tensor]))
        {
            all = false;
        }
        // Push in reverse so that the first consumer is explored first.
        for (auto it = consumers.rbegin(); it != consumers.rend(); ++it)
        {
            const OnnxNode* consumer = *it;
            if (readsShapeOnly(consumer->opType))
            {
                continue; // reads the dimensions, not the values
            }
            if (isQuantize(*consumer))
            {
                auto found = std::find_if(result.begin(), result.end(),
                                          [&](const ReachedQ& reached) { return reached.q == consumer; });
                if (found == result.end())
                {
                    result.push_back({consumer, false, false, false, false, state.path});
                    found = result.end() - 1;
                }
                found->direct = found->direct || !state.viaMaxPool;
                found->viaMaxPool = found->viaMaxPool || state.viaMaxPool;
                found->viaConcat = found->viaConcat || state.viaConcat;
                found->viaSplit = found->viaSplit || state.viaSplit;
                continue;
            }
            bool crosses = movesQ(*consumer) && !consumer->outputs.empty() &&
                           carriesData(graph, *consumer, state.tensor) &&
                           (options.crossConcat || consumer->opType != "Concat") &&
                           (options.crossMaxPool || consumer->opType != "MaxPool");
            if (!crosses)
            {
                all = false;
                continue;
            }
            for (std::uint32_t output : consumer->outputs.ids())
            {
                State next = state;
                next.tensor = output;
                next.viaMaxPool = state.viaMaxPool || consumer->opType == "MaxPool";
                next.viaConcat = state.viaConcat || consumer->opType == "Concat";
                next.viaSplit = state.viaSplit || consumer->opType == "Split" || consumer->opType == "Slice";
                next.path.push_back(consumer->name);
                stack.push_back(std::move(next));
            }
        }
    }
    // Restore discovery order for consumers explored depth-first: stable already; sort by node index for determinism.
    std::stable_sort(result.begin(), result.end(),
                     [](const ReachedQ& a, const ReachedQ& b) { return a.q->index < b.q->index; });
    if (allPaths != nullptr)
    {
        *allPaths = all;
    }
    return result;
}

//! x -> Sigmoid or HardSigmoid -> Mul(x, gate(x)) (SiLU, HardSwish): returns x, else empty.
inline std::string siluInput(const OnnxGraph& graph, const OnnxNode& mul)
{
    const OnnxNode* gate = selfGateOf(graph, mul);
    if (gate != nullptr)
    {
        return gate->inputs[0];
    }
    return {};
}

//! What produces a Concat input, seen from a Q clone that TensorRT moves onto that input.
struct ConcatSource
{
    enum class Kind
    {
        kDequantized,  //!< a DQ (through ops a Q moves across): the clone meets it and cancels or requantizes
        kCanAbsorb,    //!< a quantized producer whose epilogue can take the clone (output quantization)
        kCannotAbsorb, //!< float op, ConvTranspose, plugin, graph input: the clone runs as its own Quantize layer
        kConstant,
    } kind = Kind::kCannotAbsorb;
    const OnnxNode* node = nullptr;       //!< the DQ, or the producing op (the weighted op behind an epilogue)
    const OnnxNode* outputNode = nullptr; //!< the op whose output the clone would quantize (end of the epilogue)
    bool viaMaxPool = false;              //!< the walk back crossed a MaxPool
    std::string why;                      //!< for kCannotAbsorb
    std::vector<std::string> floatInputs; //!< inputs of a quantizable op that are not DQ-fed
};

//! Quantizable non-weighted op: inputs (other than constants) that are not DQ-fed.
inline std::vector<std::string> unquantizedInputs(const OnnxGraph& graph, const OnnxNode& node)
{
    std::vector<std::string> result;
    for (const auto& input : node.inputs)
    {
        if (!input.empty() && !isConstantTensor(graph, input) && feedingDequantize(graph, input) == nullptr)
        {
            result.push_back(input);
        }
    }
    return result;
}

//! The quantized conv (both inputs DQ-fed) that writes tensor through at most four epilogue ops (BatchNormalization,
//! a single-input activation), or nullptr: the conv a residual Add on tensor fuses into.
inline const OnnxNode* quantizedConvWriting(const OnnxGraph& graph, const std::string& tensor)
{
    const OnnxNode* node = producerOf(graph, tensor);
    for (int hop = 0; node != nullptr && hop < 4; ++hop)
    {
        if (node->opType == "Conv" || node->opType == "ConvTranspose")
        {
            const bool quantized = node->inputs.size() >= 2 && feedingDequantize(graph, node->inputs[0]) != nullptr &&
                                   feedingDequantize(graph, node->inputs[1]) != nullptr;
            return quantized ? node : nullptr;
        }
        if (!(node->opType == "BatchNormalization" || isActivation(node->opType)) || node->inputs.empty())
        {
            return nullptr;
        }
        node = producerOf(graph, node->inputs[0]);
    }
    return nullptr;
}

//! The inputs of nested Concats already traced in one concatSource walk: a Concat that reads one tensor many times,
//! or nested Concats sharing inputs, are traced once each (without it, n inputs at each of 4 levels cost n^4).
using ConcatSourcesSeen = std::unordered_map<std::uint32_t, ConcatSource>;

inline ConcatSource concatSource(const OnnxGraph& graph, const std::string& tensor, int depth, ConcatSourcesSeen& seen);

//! A nested Concat passes the clone on to its own inputs; the worst of them decides.
inline ConcatSource nestedConcatSource(const OnnxGraph& graph, const OnnxNode& concat, int depth,
                                       ConcatSourcesSeen& seen)
{
    ConcatSource worst;
    worst.kind = ConcatSource::Kind::kConstant;
    for (const auto& input : concat.inputs)
    {
        const std::uint32_t id = graph.tensors.find(TensorKey(input));
        const auto traced = id == OnnxGraph::kNone ? seen.end() : seen.find(id);
        ConcatSource inner = traced != seen.end() ? traced->second : concatSource(graph, input, depth + 1, seen);
        if (id != OnnxGraph::kNone)
        {
            seen.emplace(id, inner);
        }
        if (inner.kind == ConcatSource::Kind::kCannotAbsorb ||
            (worst.kind == ConcatSource::Kind::kConstant && inner.kind != ConcatSource::Kind::kConstant))
        {
            worst = inner;
        }
        if (worst.kind == ConcatSource::Kind::kCannotAbsorb)
        {
            break;
        }
    }
    return worst;
}

//! Walks back from `producer` through the epilogue TensorRT fuses into a weighted op: BN, activations, SiLU's
//! Sigmoid*Mul.
inline const OnnxNode* epilogueStart(const OnnxGraph& graph, const OnnxNode* producer)
{
    const OnnxNode* node = producer;
    for (int inner = 0; inner < 8 && node != nullptr; ++inner)
    {
        std::string silu = siluInput(graph, *node);
        if (!silu.empty())
        {
            node = producerOf(graph, silu);
        }
        else if (isEpilogue(node->opType) && !node->inputs.empty() && !isWeighted(graph, *node))
        {
            const OnnxNode* previous = producerOf(graph, node->inputs[0]);
            if (previous == nullptr || isQdq(*previous))
            {
                break;
            }
            node = previous;
        }
        else
        {
            break;
        }
    }
    return node == nullptr ? producer : node;
}

//! Whether the op that computes a Concat input (past the ops a Q moves across) can take the Quantize clone.
inline ConcatSource opConcatSource(const OnnxGraph& graph, const OnnxNode* producer, ConcatSource source)
{
    source.outputNode = producer;
    if (isCustomOp(*producer))
    {
        source.node = producer;
        source.why = producer->name + " is a plugin (" + producer->opType + "), which never absorbs Q/DQ";
        return source;
    }
    const OnnxNode* node = epilogueStart(graph, producer);
    source.node = node;
    if (isWeighted(graph, *node))
    {
        if (node->opType == "ConvTranspose")
        {
            source.why = "ConvTranspose " + node->name +
                         " does not take a Quantize clone into its epilogue (observed in NVIDIA/TensorRT#2597)";
            return source;
        }
        bool quantized = node->inputs.size() >= 2 && feedingDequantize(graph, node->inputs[0]) != nullptr &&
                         feedingDequantize(graph, node->inputs[1]) != nullptr;
        if (quantized)
        {
            source.kind = ConcatSource::Kind::kCanAbsorb;
            return source;
        }
        source.why = node->opType + " " + node->name + " runs in float (its inputs are not quantized)";
        source.floatInputs = unquantizedInputs(graph, *node);
        return source;
    }
    if (isQuantizableNonWeighted(node->opType) && !(node->opType == "Resize" || node->opType == "Upsample"))
    {
        source.floatInputs = unquantizedInputs(graph, *node);
        // A residual Add fuses into the quantized conv that writes one of its inputs: that input needs no Q/DQ (one
        // there keeps the Add out of the conv, qdq-between-conv-and-add); the other, the residual, decides what the
        // fused layer writes (reference 1.4). Quantizing both, as this advice did on the YOLO build on Orin, fought
        // residual-input-not-quantized on the same Add.
        const OnnxNode* conv = nullptr;
        if (node->opType == "Add")
        {
            for (auto it = source.floatInputs.begin(); it != source.floatInputs.end() && conv == nullptr; ++it)
            {
                if ((conv = quantizedConvWriting(graph, *it)) != nullptr)
                {
                    source.floatInputs.erase(it);
                    break;
                }
            }
        }
        if (source.floatInputs.empty())
        {
            source.kind = ConcatSource::Kind::kCanAbsorb;
            return source;
        }
        source.why = conv != nullptr
                         ? "Add " + node->name + " fuses into the quantized Conv " + conv->name +
                               ", which writes float because its residual input " + nameList(source.floatInputs, 2) +
                               " is not quantized (see residual-input-not-quantized)"
                         : node->opType + " " + node->name + " runs in float: its input " +
                               nameList(source.floatInputs, 2) + " is not quantized";
        return source;
    }
    source.why = node->opType + " " + node->name + " runs in float";
    return source;
}

inline ConcatSource concatSource(const OnnxGraph& graph, const std::string& tensor, int depth, ConcatSourcesSeen& seen)
{
    ConcatSource source;
    std::string current = tensor;
    for (int step = 0; step < 64; ++step)
    {
        if (isConstantTensor(graph, current))
        {
            source.kind = ConcatSource::Kind::kConstant;
            return source;
        }
        const OnnxNode* producer = producerOf(graph, current);
        if (producer == nullptr)
        {
            source.kind =
                isGraphInput(graph, current) ? ConcatSource::Kind::kCannotAbsorb : ConcatSource::Kind::kConstant;
            source.why = "it is the network input " + current;
            return source;
        }
        if (producer->opType == "Constant")
        {
            source.kind = ConcatSource::Kind::kConstant;
            return source;
        }
        if (isDequantize(*producer))
        {
            source.kind = ConcatSource::Kind::kDequantized;
            source.node = producer;
            return source;
        }
        if (producer->opType == "Concat" && depth < 4)
        {
            ConcatSource worst = nestedConcatSource(graph, *producer, depth, seen);
            worst.viaMaxPool = worst.viaMaxPool || source.viaMaxPool;
            return worst;
        }
        if (movesQ(*producer) && producer->opType != "Concat" && !producer->inputs.empty())
        {
            source.viaMaxPool = source.viaMaxPool || producer->opType == "MaxPool";
            current = producer->inputs[0];
            continue;
        }
        return opConcatSource(graph, producer, std::move(source));
    }
    source.why = "the producer could not be found";
    return source;
}

inline ConcatSource concatSource(const OnnxGraph& graph, const std::string& tensor)
{
    ConcatSourcesSeen seen;
    return concatSource(graph, tensor, 0, seen);
}

// ---- engine side ------------------------------------------------------------------------------------------------

//! Engine layers executing the given ONNX nodes (no duplicates), and those among them that are standalone Q/DQ or
//! reformat layers (the cost).
struct AttachedLayers
{
    std::vector<std::size_t> all;
    std::vector<std::size_t> standalone;
};

inline AttachedLayers layersOfNodes(const Context& context, const std::vector<std::string>& nodes)
{
    AttachedLayers result;
    for (const auto& node : nodes)
    {
        for (std::size_t layer : layersOf(context, node))
        {
            if (std::find(result.all.begin(), result.all.end(), layer) != result.all.end())
            {
                continue;
            }
            result.all.push_back(layer);
            LayerState state = context.correlation.layers[layer].state;
            if (state == LayerState::kInsertedQdq || state == LayerState::kInsertedReformat)
            {
                result.standalone.push_back(layer);
            }
        }
    }
    return result;
}

//! Adds the engine layers of nodes to a finding: names, evidence per standalone layer, and their time as the cost.
inline void attachEngine(const Context& context, const std::vector<std::string>& nodes, Finding& finding)
{
    const EnginePlan* plan = context.engine();
    if (plan == nullptr)
    {
        return;
    }
    AttachedLayers layers = layersOfNodes(context, nodes);
    for (std::size_t layer : layers.all)
    {
        finding.engineLayers.push_back(plan->layers[layer].name);
    }
    for (std::size_t layer : layers.standalone)
    {
        const EngineLayer& l = plan->layers[layer];
        finding.evidence.push_back(layerEvidence(context, layer, "",
                                                 l.type + (l.origin.empty() ? "" : " (Origin: " + l.origin + ")") +
                                                     ", " + std::string(precisionName(inputPrecision(l))) + " -> " +
                                                     std::string(precisionName(outputPrecision(l)))));
    }
    finding.costMs = sumTimes(context, layers.standalone);
}

//! Evidence pointing at a build-log line.
inline Evidence logEvidence(const Context& context, const OptimizerEvent& event, const std::string& text)
{
    Evidence evidence;
    if (context.inputs.buildLog)
    {
        evidence.file = context.inputs.buildLog->sourcePath;
    }
    evidence.line = event.line;
    evidence.field = "build log" + (event.pass.empty() ? std::string() : " " + event.pass);
    evidence.text = text;
    return evidence;
}

//! Optimizer events of a kind (and pass, when given) from the build log.
inline std::vector<const OptimizerEvent*> logEvents(const Context& context, OptimizerEventKind kind,
                                                    const std::string& pass = {})
{
    std::vector<const OptimizerEvent*> events;
    if (!context.inputs.buildLog)
    {
        return events;
    }
    for (const auto& event : context.inputs.buildLog->events)
    {
        if (event.kind == kind && (pass.empty() || event.pass == pass))
        {
            events.push_back(&event);
        }
    }
    return events;
}

//! The Q/DQ node a layer name stands for, without TensorRT's clone/copy suffixes; empty when the name has several
//! tokens.
inline std::string singleToken(const EngineLayer& layer)
{
    auto parts = parseLayerName(layer.baseName());
    return parts.tokens.size() == 1 ? parts.tokens[0] : std::string();
}

inline bool hasCloneSuffix(const std::string& name)
{
    return name.find("_clone_") != std::string::npos;
}

} // namespace qdq::rules::walks
