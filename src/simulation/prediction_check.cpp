// The real layer's ONNX nodes are its correlated nodes plus the nodes TensorRT fused without naming them: walking
// back from the layer's output tensors (and its named nodes) through nodes no other layer claims, stopping at the
// layer's input tensors, constants and network inputs.
#include "qdq/prediction_check.h"

#include "qdq/patterns.h"

#include <algorithm>

namespace qdq
{

using namespace patterns;

namespace
{

constexpr std::uint32_t kNone = OnnxGraph::kNone;

//! The ONNX tensor an engine tensor name stands for: the same name, or the output of the node a parser-made name
//! ("X_out_tensor", "X_out_region") is named after.
std::uint32_t resolveTensor(const OnnxGraph& graph, const std::string& name)
{
    std::uint32_t id = graph.tensors.find(name);
    if (id != kNone)
    {
        return id;
    }
    for (std::string_view suffix : {"_out_tensor", "_out_region", "_output"})
    {
        if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        {
            const std::uint32_t node = graph.nodeIndex(std::string_view(name).substr(0, name.size() - suffix.size()));
            if (node != kNone)
            {
                auto outputs = graph.outputIds(node);
                return outputs.empty() ? kNone : outputs[0];
            }
        }
    }
    return kNone;
}

bool countsForMatching(const OnnxNode& node)
{
    return node.opType != "Constant" && node.opType != "Identity";
}

//! Whether name appears in the layer's name as a whole token (" + ", "PWN(", ", ", "[", "]" and ")" delimit them).
bool namesNode(std::string_view layerName, std::string_view node)
{
    if (node.empty())
    {
        return false;
    }
    const auto isDelimiter = [](char c)
    { return c == ' ' || c == '(' || c == ')' || c == ',' || c == '[' || c == ']'; };
    for (std::size_t at = layerName.find(node); at != std::string_view::npos; at = layerName.find(node, at + 1))
    {
        const std::size_t end = at + node.size();
        if ((at == 0 || isDelimiter(layerName[at - 1])) && (end == layerName.size() || isDelimiter(layerName[end])))
        {
            return true;
        }
    }
    return false;
}

//! Names the ONNX parser gives the layers it adds (reshapes around a fully connected layer, broadcasts, casts).
bool parserMadeName(std::string_view name)
{
    for (std::string_view prefix : {"reshape_before_", "reshape_after_", "squeeze_after_", "unsqueeze_node_after_",
                                    "copied_squeeze_after_", "(Unnamed Layer", "ONNXTRT_", "Reformatting CopyNode"})
    {
        if (name.substr(0, prefix.size()) == prefix)
        {
            return true;
        }
    }
    return false;
}

//! Nodes whose inputs are all known at build time (TensorRT folds them): constant propagation in graph order.
std::vector<bool> foldedNodes(const OnnxGraph& graph)
{
    std::vector<bool> constant(graph.tensors.names.size(), false);
    for (std::size_t id = 0; id < constant.size(); ++id)
    {
        constant[id] = graph.tensors.constant[id] != kNone;
    }
    std::vector<bool> folded(graph.nodes.size(), false);
    for (int pass = 0; pass < 2; ++pass)
    {
        for (const OnnxNode& node : graph.nodes)
        {
            bool all = true;
            bool any = false;
            for (std::uint32_t input : graph.inputIds(node.index))
            {
                if (input != kNone)
                {
                    any = true;
                    all = all && constant[input];
                }
            }
            if (node.opType == "Constant" || (any && all && !node.isCustomDomain()))
            {
                folded[node.index] = !isQdq(node);
                for (std::uint32_t output : graph.outputIds(node.index))
                {
                    if (output != kNone)
                    {
                        constant[output] = true;
                    }
                }
            }
        }
    }
    return folded;
}

//! The nodes a layer's agreement is decided on: its nodes other than Q/DQ, or its Q/DQ nodes when it has nothing
//! else (a standalone Quantize/Dequantize). Node indices, sorted.
std::vector<std::uint32_t> matchingKey(const OnnxGraph& graph, const std::vector<std::uint32_t>& nodes)
{
    std::vector<std::uint32_t> compute;
    std::vector<std::uint32_t> qdq;
    for (std::uint32_t index : nodes)
    {
        const OnnxNode& node = graph.nodes[index];
        if (!countsForMatching(node))
        {
            continue;
        }
        (isQdq(node) ? qdq : compute).push_back(index);
    }
    auto& key = compute.empty() ? qdq : compute;
    std::sort(key.begin(), key.end());
    key.erase(std::unique(key.begin(), key.end()), key.end());
    return key;
}

std::vector<std::uint32_t> nodeIndices(const OnnxGraph& graph, const std::vector<std::string_view>& names)
{
    std::vector<std::uint32_t> result;
    result.reserve(names.size());
    for (auto name : names)
    {
        const std::uint32_t index = graph.nodeIndex(name);
        if (index != kNone)
        {
            result.push_back(index);
        }
    }
    return result;
}

//! A layer named after one node with a number appended ("/NonMaxSuppression_246": TensorRT 8.5 numbers some
//! layers) executes that node when no other layer names it.
void claimNumberedLayers(const OnnxGraph& graph, const EnginePlan& plan, const std::vector<bool>& folded,
                         std::vector<std::uint32_t>& claimedBy)
{
    for (std::size_t layer = 0; layer < plan.layers.size(); ++layer)
    {
        const std::string_view name = plan.layers[layer].baseName();
        std::size_t end = name.size();
        while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9')
        {
            --end;
        }
        if (end == name.size() || end < 2 || name[end - 1] != '_' || name.find(" + ") != std::string_view::npos)
        {
            continue;
        }
        const std::uint32_t node = graph.nodeIndex(name.substr(0, end - 1));
        if (node != kNone && claimedBy[node] == kNone && !folded[node])
        {
            claimedBy[node] = static_cast<std::uint32_t>(layer);
        }
    }
}

//! Which engine layer executes each node, from the names: a claim counts when the layer names the node or its
//! Metadata does (a parser-made "reshape_before_X" executes no part of X); a Myelin range ({ForeignNode[a...b]},
//! every node between a and b in the model's order) claims only what no layer names. The first such layer claims a
//! node. kNone for a node no layer names.
std::vector<std::uint32_t> claimNamedNodes(const OnnxGraph& graph, const EnginePlan& plan,
                                           const Correlation& correlation, const std::vector<bool>& folded)
{
    const std::size_t nodeCount = graph.nodes.size();
    std::vector<std::uint32_t> claimedBy(nodeCount, kNone);
    for (int pass = 0; pass < 2; ++pass)
    {
        for (std::uint32_t node = 0; node < nodeCount; ++node)
        {
            if (folded[node] || claimedBy[node] != kNone)
            {
                continue;
            }
            for (std::size_t layer : correlation.layersOfNode.findNode(node))
            {
                if (layer >= plan.layers.size() || layer >= correlation.layers.size())
                {
                    continue;
                }
                const std::string_view layerName = plan.layers[layer].baseName();
                const bool named = correlation.layers[layer].evidence == MappingEvidence::kMetadata ||
                                   namesNode(layerName, graph.nodes[node].name);
                const bool inRange = layerName.find("{ForeignNode[") != std::string_view::npos;
                if (pass == 0 ? named : inRange)
                {
                    claimedBy[node] = static_cast<std::uint32_t>(layer);
                    break;
                }
            }
        }
        if (pass == 0)
        {
            claimNumberedLayers(graph, plan, folded, claimedBy);
        }
    }
    return claimedBy;
}

//! The model tensors a real layer reads (those the engine's tensor names stand for).
std::vector<std::uint32_t> layerInputTensors(const OnnxGraph& graph, const EngineLayer& layer)
{
    std::vector<std::uint32_t> inputs;
    for (const auto& input : layer.inputs)
    {
        const std::uint32_t id = resolveTensor(graph, input.name);
        if (id != kNone)
        {
            inputs.push_back(id);
        }
    }
    return inputs;
}

//! Where the walk of a real layer starts: the nodes it claimed by name, and the producers of its output tensors that
//! no other layer claimed. A layer the parser made (and named) executes no node of the model by itself.
std::vector<std::uint32_t> walkStarts(const OnnxGraph& graph, const EngineLayer& layer, std::uint32_t self,
                                      const std::vector<std::uint32_t>& claimed,
                                      const std::vector<std::uint32_t>& claimedBy)
{
    std::vector<std::uint32_t> starts(claimed.begin(), claimed.end());
    if (claimed.empty() && parserMadeName(layer.baseName()))
    {
        return starts;
    }
    for (const auto& output : layer.outputs)
    {
        const std::uint32_t id = resolveTensor(graph, output.name);
        const OnnxNode* producer = id == kNone ? nullptr : graph.producerOf(id);
        if (producer != nullptr && (claimedBy[producer->index] == kNone || claimedBy[producer->index] == self))
        {
            starts.push_back(static_cast<std::uint32_t>(producer->index));
        }
    }
    return starts;
}

//! The nodes a real layer executes: walking back from its starts through nodes no other layer claims, stopping at
//! the layer's input tensors, constants, folded nodes and Q/DQ nodes. visitedBy (one entry per node, shared by all
//! layers) marks the nodes this layer's walk has seen.
std::vector<std::uint32_t> walkLayerNodes(const OnnxGraph& graph, std::uint32_t self, std::vector<std::uint32_t> stack,
                                          const std::vector<std::uint32_t>& inputs, const std::vector<bool>& folded,
                                          const std::vector<std::uint32_t>& claimedBy,
                                          std::vector<std::uint32_t>& visitedBy)
{
    std::vector<std::uint32_t> members;
    while (!stack.empty() && members.size() < 100000)
    {
        const std::uint32_t node = stack.back();
        stack.pop_back();
        if (visitedBy[node] == self)
        {
            continue;
        }
        visitedBy[node] = self;
        members.push_back(node);
        // A Q/DQ node ends the walk: a hoisted or cloned Q reads a tensor other than the layer's input.
        if (isQdq(graph.nodes[node]))
        {
            continue;
        }
        for (std::uint32_t input : graph.inputIds(node))
        {
            if (input == kNone || graph.tensors.constant[input] != kNone ||
                std::find(inputs.begin(), inputs.end(), input) != inputs.end())
            {
                continue;
            }
            const OnnxNode* producer = graph.producerOf(input);
            if (producer != nullptr && claimedBy[producer->index] == kNone && !folded[producer->index] &&
                visitedBy[producer->index] != self)
            {
                stack.push_back(static_cast<std::uint32_t>(producer->index));
            }
        }
    }
    return members;
}

//! The nodes each real layer executes, in engine order: its claimed nodes and what its walk reaches. What a layer
//! took is no longer free for the layers after it (claimedBy is updated).
std::vector<std::vector<std::uint32_t>> realLayerNodes(const OnnxGraph& graph, const EnginePlan& plan,
                                                       const std::vector<bool>& folded,
                                                       std::vector<std::uint32_t>& claimedBy)
{
    const std::size_t nodeCount = graph.nodes.size();
    std::vector<std::vector<std::uint32_t>> claimedNodes(plan.layers.size());
    for (std::uint32_t node = 0; node < nodeCount; ++node)
    {
        if (claimedBy[node] != kNone && claimedBy[node] < plan.layers.size())
        {
            claimedNodes[claimedBy[node]].push_back(node);
        }
    }
    std::vector<std::vector<std::uint32_t>> realNodes(plan.layers.size());
    std::vector<std::uint32_t> visitedBy(nodeCount, kNone);
    for (std::size_t index = 0; index < plan.layers.size(); ++index)
    {
        const EngineLayer& layer = plan.layers[index];
        const auto self = static_cast<std::uint32_t>(index);
        realNodes[index] = walkLayerNodes(graph, self, walkStarts(graph, layer, self, claimedNodes[index], claimedBy),
                                          layerInputTensors(graph, layer), folded, claimedBy, visitedBy);
        for (std::uint32_t node : realNodes[index])
        {
            if (claimedBy[node] == kNone)
            {
                claimedBy[node] = self;
            }
        }
    }
    return realNodes;
}

//! A node no layer names or reaches that only adds or scales by constants what one layer wrote (a bias add the
//! parser folded into a fully connected layer) ran in that layer.
void attachConstantOperands(const OnnxGraph& graph, const std::vector<bool>& folded,
                            std::vector<std::uint32_t>& claimedBy, std::vector<std::vector<std::uint32_t>>& realNodes)
{
    for (const OnnxNode& node : graph.nodes)
    {
        if (claimedBy[node.index] != kNone || folded[node.index] || isQdq(node))
        {
            continue;
        }
        std::uint32_t owner = kNone;
        std::size_t activations = 0;
        for (std::uint32_t input : graph.inputIds(node.index))
        {
            if (input == kNone || graph.tensors.constant[input] != kNone)
            {
                continue;
            }
            const OnnxNode* producer = graph.producerOf(input);
            if (producer != nullptr && folded[producer->index])
            {
                continue;
            }
            ++activations;
            owner = producer != nullptr ? claimedBy[producer->index] : kNone;
        }
        if (activations == 1 && owner != kNone)
        {
            claimedBy[node.index] = owner;
            realNodes[owner].push_back(static_cast<std::uint32_t>(node.index));
        }
    }
}

//! In a detailed layer list TensorRT 10 shows a Myelin region kernel by kernel ("node_linear_myl7_1",
//! "__myl_MaxrSubExpSum_myl7_3"): the kernels of one region (same "_myl<N>_" graph) are compared as one layer, as
//! the prediction has them. The region's first kernel gets the nodes of all.
void mergeMyelinRegionKernels(const EnginePlan& plan, std::vector<std::vector<std::uint32_t>>& realNodes)
{
    std::vector<std::pair<std::string, std::size_t>> regionFirst; // "myl7" -> first kernel layer
    for (std::size_t index = 0; index < plan.layers.size(); ++index)
    {
        const std::string_view name = plan.layers[index].baseName();
        const std::size_t at = name.rfind("_myl");
        if (at == std::string_view::npos || at + 4 >= name.size() || name[at + 4] < '0' || name[at + 4] > '9')
        {
            continue;
        }
        std::size_t end = at + 4;
        while (end < name.size() && name[end] >= '0' && name[end] <= '9')
        {
            ++end;
        }
        const std::string region(name.substr(at + 1, end - at - 1));
        auto found = std::find_if(regionFirst.begin(), regionFirst.end(),
                                  [&](const auto& entry) { return entry.first == region; });
        if (found == regionFirst.end())
        {
            regionFirst.emplace_back(region, index);
            continue;
        }
        auto& into = realNodes[found->second];
        into.insert(into.end(), realNodes[index].begin(), realNodes[index].end());
        realNodes[index].clear();
    }
}

bool isStandalone(const PredictedLayer& layer)
{
    return layer.role == "standalone-quantize" || layer.role == "standalone-dequantize" || layer.role == "requantize";
}

//! The predicted layers by their matching keys, and which predicted layer first holds each node.
struct PredictedKeys
{
    std::vector<std::vector<std::uint32_t>> keys; //!< per predicted layer
    std::vector<std::uint32_t> layerOf;           //!< per node: the first predicted layer whose key holds it
};

//! Keys the predicted layers and counts those that execute ONNX nodes (and their standalone Q/DQ) into check.
PredictedKeys keyPredictedLayers(const Prediction& prediction, const OnnxGraph& graph, PredictionCheck& check)
{
    PredictedKeys predicted;
    predicted.keys.resize(prediction.layers.size());
    predicted.layerOf.assign(graph.nodes.size(), kNone);
    for (std::size_t i = 0; i < prediction.layers.size(); ++i)
    {
        const auto& layer = prediction.layers[i];
        predicted.keys[i] = matchingKey(graph, layer.nodeIndices.size() == layer.onnxNodes.size()
                                                   ? layer.nodeIndices
                                                   : nodeIndices(graph, layer.onnxNodes));
        if (predicted.keys[i].empty())
        {
            continue;
        }
        ++check.predictedLayers;
        if (layer.role == "standalone-quantize" || layer.role == "standalone-dequantize")
        {
            ++check.predictedStandaloneQdq;
        }
        for (std::uint32_t node : predicted.keys[i])
        {
            if (predicted.layerOf[node] == kNone)
            {
                predicted.layerOf[node] = static_cast<std::uint32_t>(i);
            }
        }
    }
    return predicted;
}

//! The predicted layer that agrees with a real layer of this key: the one with exactly the same key, or for a real
//! standalone Q/DQ, a predicted standalone layer holding one of its nodes (a merged Q keeps one of its twins'
//! names).
std::optional<std::size_t> agreeingLayer(const Prediction& prediction, const PredictedKeys& predicted,
                                         const std::vector<std::uint32_t>& key, bool onlyQdq)
{
    const std::uint32_t candidate = predicted.layerOf[key.front()];
    if (candidate != kNone && predicted.keys[candidate] == key)
    {
        return candidate;
    }
    if (onlyQdq)
    {
        for (std::uint32_t node : key)
        {
            if (predicted.layerOf[node] != kNone && isStandalone(prediction.layers[predicted.layerOf[node]]))
            {
                return predicted.layerOf[node];
            }
        }
    }
    return std::nullopt;
}

//! The predicted layers holding any node of key, each once, in the key's order.
std::vector<std::size_t> layersHolding(const PredictedKeys& predicted, const std::vector<std::uint32_t>& key)
{
    std::vector<std::size_t> holders;
    for (std::uint32_t node : key)
    {
        if (predicted.layerOf[node] != kNone &&
            std::find(holders.begin(), holders.end(), predicted.layerOf[node]) == holders.end())
        {
            holders.push_back(predicted.layerOf[node]);
        }
    }
    return holders;
}

//! "engine layer X executes A, B; the simulator predicted them in P with other nodes" (or split over, or none).
std::string describeDisagreement(const Prediction& prediction, const EngineLayer& layer,
                                 const LayerAgreement& agreement)
{
    std::vector<std::string> names(agreement.onnxNodes.begin(), agreement.onnxNodes.end());
    std::string text =
        "engine layer \"" + layer.name + "\" executes " + nameList(names, 6) + "; the simulator predicted ";
    if (agreement.predictedLayersOf.empty())
    {
        return text + "no layer for them (eliminated or folded)";
    }
    std::vector<std::string> layers;
    for (std::size_t holder : agreement.predictedLayersOf)
    {
        layers.push_back("\"" + prediction.layers[holder].name + "\"");
    }
    return text + (layers.size() == 1 ? "them in " + layers[0] + " with other nodes"
                                      : "them split over " + nameList(layers, 4));
}

//! Holds each real layer that executes ONNX nodes against the predicted layers, in engine order.
void compareLayers(const Prediction& prediction, const OnnxGraph& graph, const EnginePlan& plan,
                   const std::vector<std::vector<std::uint32_t>>& realNodes, const PredictedKeys& predicted,
                   PredictionCheck& check)
{
    constexpr std::size_t kMaxDisagreements = 200;
    for (std::size_t index = 0; index < plan.layers.size(); ++index)
    {
        // An engine with several optimization profiles lists its layers once per profile ("X [profile 1]"): the
        // first profile's are compared.
        if (plan.layers[index].profileSuffixAt != std::string::npos)
        {
            continue;
        }
        const auto key = matchingKey(graph, realNodes[index]);
        if (key.empty())
        {
            continue;
        }
        LayerAgreement agreement;
        agreement.layer = index;
        for (std::uint32_t node : key)
        {
            agreement.onnxNodes.push_back(graph.nodes[node].name);
        }
        const bool onlyQdq = isQdq(graph.nodes[key.front()]);
        check.realStandaloneQdq += onlyQdq ? 1 : 0;
        agreement.predictedLayer = agreeingLayer(prediction, predicted, key, onlyQdq);
        if (agreement.predictedLayer)
        {
            ++check.exact;
        }
        else
        {
            agreement.predictedLayersOf = layersHolding(predicted, key);
            if (check.disagreements.size() < kMaxDisagreements)
            {
                check.disagreements.push_back(describeDisagreement(prediction, plan.layers[index], agreement));
            }
        }
        check.layers.push_back(std::move(agreement));
    }
    check.realLayers = check.layers.size();
}

} // namespace

PredictionCheck checkPrediction(const Prediction& prediction, const OnnxGraph& graph, const EnginePlan& plan,
                                const Correlation& correlation)
{
    // The real side: which nodes each engine layer executes, named or fused without a name.
    const std::vector<bool> folded = foldedNodes(graph);
    std::vector<std::uint32_t> claimedBy = claimNamedNodes(graph, plan, correlation, folded);
    std::vector<std::vector<std::uint32_t>> realNodes = realLayerNodes(graph, plan, folded, claimedBy);
    attachConstantOperands(graph, folded, claimedBy, realNodes);
    mergeMyelinRegionKernels(plan, realNodes);
    // The predicted side, keyed the same way, then each real layer held against it.
    PredictionCheck check;
    const PredictedKeys predicted = keyPredictedLayers(prediction, graph, check);
    compareLayers(prediction, graph, plan, realNodes, predicted, check);
    return check;
}

} // namespace qdq
