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

} // namespace

PredictionCheck checkPrediction(const Prediction& prediction, const OnnxGraph& graph, const EnginePlan& plan,
                                const Correlation& correlation)
{
    PredictionCheck check;
    const std::size_t nodeCount = graph.nodes.size();
    constexpr std::size_t kMaxDisagreements = 200;
    std::vector<std::uint32_t> claimedBy(nodeCount, kNone);
    const std::vector<bool> folded = foldedNodes(graph);
    // A claim counts when the layer names the node or its Metadata does (a parser-made "reshape_before_X" executes
    // no part of X); a Myelin range ({ForeignNode[a...b]}, every node between a and b in the model's order) claims
    // only what no layer names. The first such layer claims a node.
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
    std::vector<std::vector<std::uint32_t>> claimedNodes(plan.layers.size());
    for (std::uint32_t node = 0; node < nodeCount; ++node)
    {
        if (claimedBy[node] != kNone && claimedBy[node] < plan.layers.size())
        {
            claimedNodes[claimedBy[node]].push_back(node);
        }
    }
    std::vector<std::vector<std::uint32_t>> realNodes(plan.layers.size());
    std::vector<std::uint32_t> stack;
    std::vector<std::uint32_t> visitedBy(nodeCount, kNone);
    for (std::size_t index = 0; index < plan.layers.size(); ++index)
    {
        const EngineLayer& layer = plan.layers[index];
        const auto self = static_cast<std::uint32_t>(index);
        std::vector<std::uint32_t> inputs;
        for (const auto& input : layer.inputs)
        {
            const std::uint32_t id = resolveTensor(graph, input.name);
            if (id != kNone)
            {
                inputs.push_back(id);
            }
        }
        stack.assign(claimedNodes[index].begin(), claimedNodes[index].end());
        // A layer the parser made (and named) executes no node of the model by itself.
        bool onlyParserMade = claimedNodes[index].empty();
        for (const auto& part : {std::string_view(layer.baseName())})
        {
            onlyParserMade = onlyParserMade && parserMadeName(part);
        }
        for (const auto& output : layer.outputs)
        {
            if (onlyParserMade)
            {
                break;
            }
            const std::uint32_t id = resolveTensor(graph, output.name);
            const OnnxNode* producer = id == kNone ? nullptr : graph.producerOf(id);
            if (producer != nullptr && (claimedBy[producer->index] == kNone || claimedBy[producer->index] == self))
            {
                stack.push_back(static_cast<std::uint32_t>(producer->index));
            }
        }
        std::vector<std::uint32_t>& members = realNodes[index];
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
        // What this layer took is no longer free for the layers after it.
        for (std::uint32_t node : members)
        {
            if (claimedBy[node] == kNone)
            {
                claimedBy[node] = self;
            }
        }
    }

    // A node no layer names or reaches that only adds or scales by constants what one layer wrote (a bias add the
    // parser folded into a fully connected layer) ran in that layer.
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

    // In a detailed layer list TensorRT 10 shows a Myelin region kernel by kernel ("node_linear_myl7_1",
    // "__myl_MaxrSubExpSum_myl7_3"): the kernels of one region (same "_myl<N>_" graph) are compared as one layer,
    // as the prediction has them.
    std::vector<bool> partOfRegion(plan.layers.size(), false);
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
            partOfRegion[index] = true;
        }
    }

    std::vector<std::uint32_t> predictedOf(nodeCount, kNone);
    std::vector<std::vector<std::uint32_t>> predictedKeys(prediction.layers.size());
    const auto standalone = [](const PredictedLayer& layer) {
        return layer.role == "standalone-quantize" || layer.role == "standalone-dequantize" ||
               layer.role == "requantize";
    };
    for (std::size_t i = 0; i < prediction.layers.size(); ++i)
    {
        const auto& layer = prediction.layers[i];
        predictedKeys[i] = matchingKey(graph, layer.nodeIndices.size() == layer.onnxNodes.size()
                                                  ? layer.nodeIndices
                                                  : nodeIndices(graph, layer.onnxNodes));
        if (predictedKeys[i].empty())
        {
            continue;
        }
        ++check.predictedLayers;
        if (layer.role == "standalone-quantize" || layer.role == "standalone-dequantize")
        {
            ++check.predictedStandaloneQdq;
        }
        for (std::uint32_t node : predictedKeys[i])
        {
            if (predictedOf[node] == kNone)
            {
                predictedOf[node] = static_cast<std::uint32_t>(i);
            }
        }
    }
    for (std::size_t index = 0; index < plan.layers.size(); ++index)
    {
        // An engine with several optimization profiles lists its layers once per profile ("X [profile 1]"): the
        // first profile's are compared.
        if (plan.layers[index].profileSuffixAt != std::string::npos)
        {
            continue;
        }
        auto key = matchingKey(graph, realNodes[index]);
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
        if (onlyQdq)
        {
            ++check.realStandaloneQdq;
        }
        const std::uint32_t candidate = predictedOf[key.front()];
        if (candidate != kNone && predictedKeys[candidate] == key)
        {
            agreement.predictedLayer = candidate;
        }
        else if (onlyQdq)
        {
            // A merged Q keeps one of its twins' names: a predicted standalone layer holding one of them agrees.
            for (std::uint32_t node : key)
            {
                if (predictedOf[node] != kNone && standalone(prediction.layers[predictedOf[node]]))
                {
                    agreement.predictedLayer = predictedOf[node];
                    break;
                }
            }
        }
        if (agreement.predictedLayer)
        {
            ++check.exact;
        }
        else
        {
            std::vector<std::size_t> holders;
            for (std::uint32_t node : key)
            {
                if (predictedOf[node] != kNone &&
                    std::find(holders.begin(), holders.end(), predictedOf[node]) == holders.end())
                {
                    holders.push_back(predictedOf[node]);
                }
            }
            agreement.predictedLayersOf = holders;
            if (check.disagreements.size() < kMaxDisagreements)
            {
                std::vector<std::string> names(agreement.onnxNodes.begin(), agreement.onnxNodes.end());
                std::string text = "engine layer \"" + plan.layers[index].name + "\" executes " + nameList(names, 6) +
                                   "; the simulator predicted ";
                if (holders.empty())
                {
                    text += "no layer for them (eliminated or folded)";
                }
                else
                {
                    std::vector<std::string> layers;
                    for (std::size_t holder : holders)
                    {
                        layers.push_back("\"" + prediction.layers[holder].name + "\"");
                    }
                    text += layers.size() == 1 ? "them in " + layers[0] + " with other nodes"
                                               : "them split over " + nameList(layers, 4);
                }
                check.disagreements.push_back(std::move(text));
            }
        }
        check.layers.push_back(std::move(agreement));
    }
    check.realLayers = check.layers.size();
    return check;
}

} // namespace qdq
