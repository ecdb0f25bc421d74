// Correlator: maps every engine layer to the ONNX nodes it executes and gives every layer and every Q/DQ node
// exactly one state. Evidence in order of trust: Metadata, the build log's parse-time map, the layer-name grammar,
// tensor names.
#include "qdq/analysis.h"
#include "qdq/layer_names.h"
#include "qdq/myelin_kernels.h"
#include "qdq/myelin_profile.h"
#include "qdq/myelin_regions.h"
#include "qdq/name_index.h"
#include "qdq/patterns.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace qdq
{

namespace
{

//! Builder bookkeeping layers that execute no ONNX node.
bool isBookkeepingType(const std::string& type)
{
    static const std::unordered_set<std::string> kTypes = {"NoOp", "TrainStation", "signal",
                                                           "wait", "shape_call",   "Constant"};
    return kTypes.count(type) > 0;
}

//! What one layer's mapping collects: with a model node indices, without one names. Its name grammar is parsed once,
//! when first needed.
struct LayerLookup
{
    explicit LayerLookup(const EngineLayer& engineLayer) : layer(engineLayer) {}

    const LayerNameParts& parts()
    {
        if (!parsed)
        {
            parsed = parseLayerName(layer.name);
        }
        return *parsed;
    }
    bool found() const { return !nodes.empty() || !nodeIds.empty(); }

    const EngineLayer& layer;
    std::optional<LayerNameParts> parsed;
    std::vector<std::string> nodes;
    std::vector<std::uint32_t> nodeIds;
};

class Correlator
{
public:
    explicit Correlator(const Inputs& inputs)
        : mInputs(inputs), mGraph(inputs.onnx ? &*inputs.onnx : nullptr), mPlan(inputs.engine())
    {
    }

    Correlation run()
    {
        mResult.layersOfNode.useGraph(mGraph);
        if (mPlan != nullptr)
        {
            mResult.layers.reserve(mPlan->layers.size());
            if (mInputs.buildLog)
            {
                for (const auto& registered : mInputs.buildLog->registeredLayers)
                {
                    mRegistered.emplace(registered.trtLayer, registered.onnxNode);
                }
            }
            const auto& layers = mPlan->layers;
            for (std::size_t i = 0; i < layers.size(); ++i)
            {
                // The name and Metadata of each layer are separate heap blocks: ask for those of a layer a few
                // ahead, so that reading them does not stall each step.
                if (i + 4 < layers.size())
                {
                    __builtin_prefetch(layers[i + 4].name.data());
                    __builtin_prefetch(layers[i + 4].metadata.data());
                }
                mResult.layers.push_back(mapLayer(i));
            }
            joinTimings();
        }
        mResult.layersOfNode.finish();
        assignQdqStates();
        if (mPlan != nullptr)
        {
            mResult.myelinRegions = findMyelinRegions(*mPlan, mResult, mGraph);
        }
        return std::move(mResult);
    }

private:
    //! The layer named name (full name first, then the name without " [profile N]"). Indexed on first use: few
    //! engines have reformat copies whose target must be found.
    std::optional<std::size_t> layerNamed(std::string_view name)
    {
        const auto& layers = mPlan->layers;
        const auto fullName = [&](std::uint32_t id) -> std::string_view { return layers[id].name; };
        const auto baseName = [&](std::uint32_t id) -> std::string_view { return layers[id].baseName(); };
        if (!mLayerNamesIndexed)
        {
            mLayerByName.reserve(layers.size());
            mLayerByBaseName.reserve(layers.size());
            for (std::size_t i = 0; i < layers.size(); ++i)
            {
                mLayerByName.insert(layers[i].name, static_cast<std::uint32_t>(i), fullName);
                mLayerByBaseName.insert(layers[i].baseName(), static_cast<std::uint32_t>(i), baseName);
            }
            mLayerNamesIndexed = true;
        }
        std::uint32_t found = mLayerByName.find(name, fullName);
        if (found == NameIndex::kNone)
        {
            found = mLayerByBaseName.find(name, baseName);
        }
        return found == NameIndex::kNone ? std::nullopt : std::optional<std::size_t>(found);
    }

    //! Resolves one name token to ONNX nodes (their indices appended to nodes). Returns true when it named
    //! something.
    bool resolveToken(const std::string& token, std::vector<std::uint32_t>& nodes, bool& usedTensorName)
    {
        if (mGraph == nullptr)
        {
            return false;
        }
        if (const std::uint32_t node = mGraph->nodeIndex(token); node != OnnxGraph::kNone)
        {
            nodes.push_back(node);
            return true;
        }
        if (auto registered = mRegistered.find(token); registered != mRegistered.end())
        {
            if (const std::uint32_t node = mGraph->nodeIndex(registered->second); node != OnnxGraph::kNone)
            {
                nodes.push_back(node);
                return true;
            }
        }
        if (mGraph->isConstant(token))
        {
            return true; // a weight initializer: not a node, but a known name
        }
        if (const OnnxNode* producer = mGraph->producer(token))
        {
            nodes.push_back(static_cast<std::uint32_t>(producer->index));
            usedTensorName = true;
            return true;
        }
        if (auto subject = helperSubject(token))
        {
            // A shape helper the parser inserted for node X executes part of X's work.
            return resolveToken(*subject, nodes, usedTensorName);
        }
        return false;
    }

    LayerMapping mapLayer(std::size_t index)
    {
        LayerLookup lookup(mPlan->layers[index]);
        LayerMapping mapping;
        mapping.layer = index;
        if (mapAsReformat(lookup, mapping))
        {
            return mapping;
        }
        if (isL2CacheLayer(lookup.layer, mInputs.buildLog ? &mInputs.buildLog->l2CacheLayers : nullptr))
        {
            // Builder-inserted L2-cache management: "do not correspond to any layers in the INetworkDefinition"
            // (../shared/realdata/cookbook11-mnist-fp32-trtexec-b200/result-04.log:143). No ONNX node.
            mapping.state = LayerState::kDropped;
            return mapping;
        }
        collectFromMetadata(lookup, mapping);
        // 1b. A Myelin region's full node list from the log's `ForeignNode {ForeignNode[a...b]} metadata: [ONNX
        // Layer: a]...` line (docs/build-logs.md), not only the two ends its name gives.
        if (!lookup.found() && mInputs.buildLog && lookup.layer.name.starts_with("{ForeignNode["))
        {
            addLoggedRegionNodes(lookup.layer, lookup.nodes, lookup.nodeIds);
            if (lookup.found())
            {
                mapping.evidence = MappingEvidence::kBuildLog;
            }
        }
        if (!lookup.found())
        {
            collectFromNameGrammar(lookup, mapping);
        }
        if (!lookup.found() && mGraph != nullptr)
        {
            collectFromTensorNames(lookup, mapping);
        }
        const bool onlyQdq = recordNodes(lookup, mapping, index);
        classifyLayer(lookup, mapping, onlyQdq);
        return mapping;
    }

    //! A reformat or copy layer, by its origin or its name. The name grammar is parsed only where it can matter:
    //! 100,000 names with Metadata never need it. Every reformat or copy name holds "CopyNode" or " copy", so other
    //! names skip the parse for that check.
    bool mapAsReformat(LayerLookup& lookup, LayerMapping& mapping)
    {
        const EngineLayer& layer = lookup.layer;
        const bool mayBeCopy =
            layer.name.find("CopyNode") != std::string::npos || layer.name.find(" copy") != std::string::npos;
        if ((mayBeCopy && (lookup.parts().reformatCopyNode || lookup.parts().tensorCopy)) || layer.origin == "REFORMAT")
        {
            mapping.state = LayerState::kInsertedReformat;
            mapping.evidence = layer.origin == "REFORMAT" ? MappingEvidence::kMetadata : MappingEvidence::kNameGrammar;
            if (mayBeCopy && lookup.parts().reformatCopyNode)
            {
                mapping.reformatTarget = layerNamed(lookup.parts().reformatTarget);
            }
            return true;
        }
        return false;
    }

    //! 1. Metadata: authoritative when present.
    void collectFromMetadata(LayerLookup& lookup, LayerMapping& mapping) const
    {
        const std::vector<std::string_view> metadataNodes = lookup.layer.metadataOnnxNodeViews();
        if (metadataNodes.empty())
        {
            return;
        }
        for (std::string_view node : metadataNodes)
        {
            if (mGraph == nullptr)
            {
                lookup.nodes.emplace_back(node);
            }
            else if (const std::uint32_t id = mGraph->nodeIndex(node); id != OnnxGraph::kNone)
            {
                lookup.nodeIds.push_back(id);
            }
        }
        if (lookup.found() || mGraph == nullptr)
        {
            mapping.evidence = MappingEvidence::kMetadata;
        }
    }

    //! 2/3. Name grammar (with the build log's parse-time map for parser-created layer names).
    void collectFromNameGrammar(LayerLookup& lookup, LayerMapping& mapping)
    {
        const LayerNameParts& parts = lookup.parts();
        bool usedTensorName = false;
        bool usedRegistered = false;
        if (parts.foreignNode && mGraph != nullptr && mGraph->nodeIndex(parts.rangeFirst) != OnnxGraph::kNone &&
            mGraph->nodeIndex(parts.rangeLast) != OnnxGraph::kNone)
        {
            // Myelin range: every node between the two in topological (graph) order.
            std::size_t first = mGraph->nodeIndex(parts.rangeFirst);
            std::size_t last = mGraph->nodeIndex(parts.rangeLast);
            if (first > last)
            {
                std::swap(first, last);
            }
            for (std::size_t n = first; n <= last; ++n)
            {
                lookup.nodeIds.push_back(static_cast<std::uint32_t>(n));
            }
        }
        for (const auto& token : parts.tokens)
        {
            std::size_t before = lookup.nodeIds.size();
            if (mGraph != nullptr)
            {
                resolveToken(token, lookup.nodeIds, usedTensorName);
                usedRegistered = usedRegistered || (lookup.nodeIds.size() > before && mRegistered.count(token) > 0);
            }
        }
        if (!lookup.nodeIds.empty())
        {
            mapping.evidence = usedRegistered   ? MappingEvidence::kBuildLog
                               : usedTensorName ? MappingEvidence::kTensorNames
                                                : MappingEvidence::kNameGrammar;
        }
        else if (mGraph == nullptr)
        {
            // No model: keep the names that look like node names (not weights, not parser helpers).
            for (const auto& token : parts.tokens)
            {
                if (auto subject = helperSubject(token))
                {
                    lookup.nodes.push_back(*subject);
                }
                else if (!token.empty() && (!isUnnamedLayerToken(token) || isComputeUnnamedLayer(token)) &&
                         !isMoveKernel(token))
                {
                    lookup.nodes.push_back(token);
                }
            }
            if (!lookup.nodes.empty())
            {
                mapping.evidence = MappingEvidence::kNameOnly;
            }
        }
    }

    //! 4. Tensor names: a layer whose name says nothing may still write a tensor the model names.
    void collectFromTensorNames(LayerLookup& lookup, LayerMapping& mapping) const
    {
        for (const auto& output : lookup.layer.outputs)
        {
            // A layer of optimization profile N > 0 writes the model's tensor under "name [profile N]"
            // (../shared/realdata/cookbook-profilingverbosity-trt1016/log-main.py.log line 4236: "z [profile 1]").
            const std::string_view tensor = output.name;
            if (const OnnxNode* producer = mGraph->producer(output.name))
            {
                lookup.nodeIds.push_back(static_cast<std::uint32_t>(producer->index));
            }
            else if (const auto suffix = tensor.rfind(" [profile ");
                     suffix != std::string_view::npos && tensor.back() == ']')
            {
                if (const OnnxNode* profileProducer = mGraph->producer(tensor.substr(0, suffix)))
                {
                    lookup.nodeIds.push_back(static_cast<std::uint32_t>(profileProducer->index));
                }
            }
        }
        if (!lookup.nodeIds.empty())
        {
            mapping.evidence = MappingEvidence::kTensorNames;
        }
    }

    //! The layer's nodes, sorted by name, one entry per name (the first node of a name shared by several nodes),
    //! into the mapping and the node -> layers index. Returns whether every node is a Q/DQ node.
    bool recordNodes(LayerLookup& lookup, LayerMapping& mapping, std::size_t index)
    {
        bool onlyQdq = false;
        if (mGraph != nullptr)
        {
            std::vector<std::uint32_t>& nodeIds = lookup.nodeIds;
            for (std::uint32_t& id : nodeIds)
            {
                id = mGraph->duplicateNodeNames ? mGraph->nodeIndex(mGraph->nodes[id].name) : id;
            }
            std::sort(nodeIds.begin(), nodeIds.end(),
                      [&](std::uint32_t a, std::uint32_t b) { return mGraph->nodes[a].name < mGraph->nodes[b].name; });
            nodeIds.erase(std::unique(nodeIds.begin(), nodeIds.end()), nodeIds.end());
            onlyQdq = !nodeIds.empty();
            mapping.onnxNodes.reserve(nodeIds.size());
            for (std::uint32_t id : nodeIds)
            {
                mResult.layersOfNode.add(id, index);
                mapping.onnxNodes.push_back(mGraph->nodes[id].name);
                onlyQdq = onlyQdq && patterns::isQdq(mGraph->nodes[id]);
            }
            return onlyQdq;
        }
        std::vector<std::string>& nodes = lookup.nodes;
        std::sort(nodes.begin(), nodes.end());
        nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
        mapping.onnxNodes.reserve(nodes.size());
        for (auto& node : nodes)
        {
            mResult.layersOfNode.add(node, index);
            mapping.onnxNodes.emplace_back(mResult.ownedNames->emplace_back(std::move(node)));
        }
        return !mapping.onnxNodes.empty() && allQdqNames(mapping.onnxNodes);
    }

    //! The layer's state from its origin, its nodes and its type.
    void classifyLayer(LayerLookup& lookup, LayerMapping& mapping, bool onlyQdq) const
    {
        const EngineLayer& layer = lookup.layer;
        if (layer.origin == "QDQ" || onlyQdq)
        {
            mapping.state = LayerState::kInsertedQdq;
        }
        else if (!mapping.onnxNodes.empty())
        {
            mapping.state = LayerState::kMapped;
        }
        else if (isBookkeepingType(layer.type) || layer.type == "Shuffle" || lookup.parts().tokens.empty() ||
                 myelinStem(layer) == "__myl_Move" ||
                 std::all_of(lookup.parts().tokens.begin(), lookup.parts().tokens.end(),
                             [](const std::string& t) { return isUnnamedLayerToken(t) && !isComputeUnnamedLayer(t); }))
        {
            mapping.state = LayerState::kDropped;
        }
        else
        {
            mapping.state = LayerState::kUnattributed;
        }
        // A NoOp that executes only shape helpers is dropped even when its helper names resolve.
        if (layer.type == "NoOp" && mapping.state == LayerState::kMapped && helperOnly(lookup.parts()))
        {
            mapping.state = LayerState::kDropped;
        }
    }

    void addLoggedRegionNodes(const EngineLayer& layer, std::vector<std::string>& nodes,
                              std::vector<std::uint32_t>& nodeIds) const
    {
        for (const LoggedMyelinRegion& region : mInputs.buildLog->myelinRegions)
        {
            if (region.name != layer.name || region.onnxNodes.empty())
            {
                continue;
            }
            for (const std::string& node : region.onnxNodes)
            {
                if (mGraph == nullptr)
                {
                    nodes.push_back(node);
                }
                else if (const std::uint32_t id = mGraph->nodeIndex(node); id != OnnxGraph::kNone)
                {
                    nodeIds.push_back(id);
                }
            }
            return;
        }
    }

    //! Myelin's copy kernel (`__myl_Move_myl0_1`,
    //! ../shared/realdata/cookbook11-mnist-fp32-trtexec-b200/model-trained-exportLayerInfo.log): its name is no node's.
    //! Kept to the kernels that run no ONNX node: 10.x names-only lists name compute kernels the same way, and a
    //! names-only mapping counts them as the model's (repo-isaacpruett-rtdetr-r50-myelin-trt10).
    static bool isMoveKernel(std::string_view token)
    {
        return !myelinGraphOf(token).empty() && myelinKernelStem(token) == "__myl_Move";
    }

    //! `__myl_Move_myl0_1`: Myelin's copy of a tensor into its own layout (it runs no ONNX node).
    static std::string_view myelinStem(const EngineLayer& layer) { return myelinKernelStem(layer.baseName()); }

    //! `(Unnamed Layer* 3) [Convolution]`: a network layer built through the API (no ONNX name), as opposed to the
    //! Shuffle/Constant helpers the ONNX parser inserts.
    static bool isComputeUnnamedLayer(const std::string& token)
    {
        if (!isUnnamedLayerToken(token) || token.back() != ']')
        {
            return false;
        }
        auto open = token.rfind('[');
        std::string type = open == std::string::npos ? "" : token.substr(open + 1, token.size() - open - 2);
        return type != "Shuffle" && type != "Constant" && type != "Identity" && type != "Cast";
    }

    static bool helperOnly(const LayerNameParts& parts)
    {
        return std::all_of(parts.tokens.begin(), parts.tokens.end(),
                           [](const std::string& t) { return isUnnamedLayerToken(t) || helperSubject(t).has_value(); });
    }

    //! Without a model: every name looks like a Q/DQ node's.
    static bool allQdqNames(const std::vector<std::string_view>& nodes)
    {
        return std::all_of(nodes.begin(), nodes.end(),
                           [](std::string_view name)
                           { return looksLikeQuantizeName(name) || looksLikeDequantizeName(name); });
    }

    //! Profile rows of Myelin kernels the layer list does not name, timed on the layer of their region
    //! (include/qdq/myelin_profile.h), with a note that says how many and how they were matched.
    void joinMyelinKernelTimes(const Profile& profile)
    {
        const auto kernels = attributeMyelinKernelTimes(*mPlan, profile, profileEntriesNamingLayers(*mPlan, profile));
        if (kernels.empty())
        {
            return;
        }
        double ms = 0.0;
        bool byOrder = false;
        for (const MyelinKernelTime& kernel : kernels)
        {
            const double entryMs = profile.entries[kernel.entry].averageMs;
            auto& time = mResult.layers[kernel.layer].timeMs;
            time = time.value_or(0.0) + entryMs;
            ms += entryMs;
            byOrder = byOrder || kernel.match == MyelinKernelTime::Match::kRegionByOrder;
        }
        mResult.notes.push_back(
            std::to_string(kernels.size()) +
            " profile entries are Myelin kernels the layer list does not name (first: " +
            profile.entries[kernels.front().entry].name + "); their " + patterns::formatMs(ms) +
            " is timed on the Myelin region they ran in, " +
            (byOrder ? "guessed from the order of the regions (the layer list shows them as {ForeignNode[...]} layers)"
                     : "by the graph number of their names (_myl<N>_)") +
            ". A profile of another build of the network has other Myelin kernels: the kernel set changes with the "
            "build (wili-65535/trt-samples-for-hackathon-cn cookbook/07-Tool/trtexec/result-11.log, two 11.1 builds "
            "of one CNN)");
    }

    void joinTimings()
    {
        const Profile* profile = mInputs.timings();
        if (profile == nullptr)
        {
            return;
        }
        // Entries of the same name add up (a layer timed once per optimization profile, or listed twice).
        const auto& entries = profile->entries;
        const auto entryName = [&](std::uint32_t id) -> std::string_view { return entries[id].name; };
        NameIndex byName;
        byName.reserve(entries.size());
        std::vector<double> timeOf(entries.size(), 0.0);
        for (std::size_t i = 0; i < entries.size(); ++i)
        {
            timeOf[byName.insert(entries[i].name, static_cast<std::uint32_t>(i), entryName)] += entries[i].averageMs;
        }
        for (auto& mapping : mResult.layers)
        {
            const EngineLayer& layer = mPlan->layers[mapping.layer];
            std::uint32_t found = byName.find(layer.name, entryName);
            if (found == NameIndex::kNone && layer.profileSuffixAt != std::string::npos)
            {
                found = byName.find(layer.baseName(), entryName);
            }
            if (found != NameIndex::kNone)
            {
                mapping.timeMs = timeOf[found];
            }
        }
        joinMyelinKernelTimes(*profile);
        std::size_t missing = 0;
        std::string firstMissing;
        for (const auto& mapping : mResult.layers)
        {
            if (!mapping.timeMs && missing++ == 0)
            {
                firstMissing = mPlan->layers[mapping.layer].name;
            }
        }
        if (missing > 0)
        {
            mResult.notes.push_back(std::to_string(missing) +
                                    " engine layer(s) have no timing in the profile (first: " + firstMissing + ")");
        }
    }

    //! depth bounds the walk: a cycle through Quantize and Identity nodes would recurse forever, and a real weight
    //! path is a handful of nodes.
    bool isWeightPath(const OnnxNode& node, int depth = 0) const
    {
        constexpr int kMaxWeightPath = 64;
        if (node.inputs.empty() || depth > kMaxWeightPath)
        {
            return false;
        }
        const std::string& data = node.inputs[0];
        if (mGraph->isConstant(data))
        {
            return true;
        }
        const OnnxNode* producer = mGraph->producer(data);
        if (producer == nullptr)
        {
            return false;
        }
        const OnnxNode& previous = *producer;
        if (previous.opType == "QuantizeLinear" || previous.opType == "Identity" || previous.opType == "Constant")
        {
            return previous.opType == "Constant" || isWeightPath(previous, depth + 1);
        }
        return false;
    }

    std::optional<std::size_t> layerOf(const OnnxNode& node, bool preferMapped = true) const
    {
        auto layers = mResult.layersOfNode.findNode(static_cast<std::uint32_t>(node.index));
        if (layers.empty())
        {
            return std::nullopt;
        }
        if (preferMapped)
        {
            for (std::size_t layer : layers)
            {
                if (mResult.layers[layer].state == LayerState::kMapped)
                {
                    return layer;
                }
            }
        }
        return layers.front();
    }

    bool removedByLog(const std::string& node)
    {
        if (!mInputs.buildLog)
        {
            return false;
        }
        if (!mRemovedIndexed)
        {
            for (const auto& event : mInputs.buildLog->events)
            {
                if (event.kind == OptimizerEventKind::kRemove || event.kind == OptimizerEventKind::kEliminate)
                {
                    mRemoved.insert(stripTrtSuffixes(event.subject));
                }
            }
            mRemovedIndexed = true;
        }
        return mRemoved.count(node) > 0;
    }

    void assignQdqStates()
    {
        if (mGraph != nullptr)
        {
            for (const auto& parameters : mGraph->qdq)
            {
                const OnnxNode& node = mGraph->nodes[parameters.node];
                mResult.qdqNodes.push_back(stateOfOnnxQdq(node));
            }
            return;
        }
        if (mPlan == nullptr)
        {
            return;
        }
        // No model: the Q/DQ nodes are those whose names appear in the engine.
        std::map<std::string, QdqNodeState> seen;
        for (const auto& mapping : mResult.layers)
        {
            const EngineLayer& layer = mPlan->layers[mapping.layer];
            LayerNameParts parts = parseLayerName(layer.name);
            // A standalone layer TensorRT marks as Q/DQ executes a Q/DQ node whatever the exporter named it; its
            // precisions tell which (INT8 out: quantize).
            const bool qdqOrigin = layer.origin == "QDQ" && mapping.onnxNodes.size() == 1;
            for (std::string_view name : mapping.onnxNodes)
            {
                const QdqNameKind kind = qdqNameKind(name);
                bool isQ = kind == QdqNameKind::kQuantize;
                bool isDq = kind == QdqNameKind::kDequantize;
                if (!isQ && !isDq && qdqOrigin)
                {
                    isQ = isQuantized(patterns::outputPrecision(layer)) ||
                          !isQuantized(patterns::inputPrecision(layer, 0));
                    isDq = !isQ;
                }
                if (!isQ && !isDq)
                {
                    continue;
                }
                QdqNodeState state;
                state.node = name;
                state.isQuantize = isQ;
                state.layer = mapping.layer;
                if (mapping.state == LayerState::kInsertedQdq)
                {
                    state.state = QdqState::kStandalone;
                    state.why = "its own engine layer";
                }
                else if (followsWeightToken(parts.tokens, name))
                {
                    state.state = QdqState::kFolded;
                    state.why = "weight quantizer named after a weight initializer in the layer name";
                }
                else
                {
                    state.state = QdqState::kFused;
                    state.why = "named inside a fused layer";
                }
                auto [it, inserted] = seen.emplace(name, state);
                if (!inserted && state.state == QdqState::kStandalone)
                {
                    it->second = state;
                }
            }
        }
        for (auto& [name, state] : seen)
        {
            mResult.qdqNodes.push_back(state);
        }
        mResult.notes.push_back("no ONNX model: Q/DQ nodes are counted from the engine's layer names (unnamed fused "
                                "ones missed)");
    }

    //! In `w + Q + Conv`, Q follows a weight name (TensorRT names a constant-folded weight quantizer this way).
    static bool followsWeightToken(const std::vector<std::string>& tokens, std::string_view name)
    {
        for (std::size_t i = 1; i < tokens.size(); ++i)
        {
            if (tokens[i] == name)
            {
                const std::string& previous = tokens[i - 1];
                // `W + W_QuantizeLinear + Conv` (Model Optimizer, ONNX Runtime): the quantizer is named after the
                // constant it quantizes.
                if (tokens[i].size() > previous.size() + 1 && tokens[i].starts_with(previous) &&
                    tokens[i][previous.size()] == '_')
                {
                    return true;
                }
                return previous.find("weight") != std::string::npos || previous.find(".w_") != std::string::npos ||
                       previous.find("kernel") != std::string::npos || looksLikeQuantizedWeightName(previous);
            }
        }
        return false;
    }

    QdqNodeState stateOfOnnxQdq(const OnnxNode& node)
    {
        QdqNodeState state;
        state.node = node.name;
        state.isQuantize = patterns::isQuantize(node);
        auto own = layerOf(node, false);
        if (own && mResult.layers[*own].state == LayerState::kInsertedQdq)
        {
            state.state = QdqState::kStandalone;
            state.layer = own;
            state.why = "executed as its own layer";
            return state;
        }
        if (isWeightPath(node))
        {
            // Weight Q/DQ are folded into the weights when their weighted consumer runs quantized.
            state.state = QdqState::kFolded;
            state.layer = own ? own : consumerLayer(node);
            state.why = "on a constant weight path";
            return state;
        }
        if (own)
        {
            state.state = QdqState::kFused;
            state.layer = own;
            state.why = "named in a fused layer";
            return state;
        }
        if (mPlan == nullptr)
        {
            state.why = "no engine artifacts";
            return state;
        }
        if (removedByLog(node.name))
        {
            state.state = QdqState::kEliminated;
            state.why = "removed by the optimizer (build log)";
            return state;
        }
        // Activation DQs and output Qs are rarely named: a DQ belongs to its consumer's layer, a Q to its
        // producer's layer (output quantization) or, failing that, to the consumers of its DQ.
        if (patterns::isDequantize(node))
        {
            if (auto layer = consumerLayer(node))
            {
                state.state = QdqState::kFused;
                state.layer = layer;
                state.why = "absorbed by the layer of its consumer";
                return state;
            }
        }
        else
        {
            if (!node.inputs.empty())
            {
                if (const OnnxNode* producer = mGraph->producer(node.inputs[0]))
                {
                    if (auto layer = layerOf(*producer))
                    {
                        state.state = QdqState::kFused;
                        state.layer = layer;
                        state.why = "output quantization of its producer's layer";
                        return state;
                    }
                }
            }
            if (auto layer = consumerLayer(node))
            {
                state.state = QdqState::kFused;
                state.layer = layer;
                state.why = "absorbed with its DequantizeLinear by the consumer's layer";
                return state;
            }
        }
        state.why = "no engine layer executes it or its neighbours";
        return state;
    }

    //! The engine layer of the first consumer of node's output (through a following DQ for a Q).
    std::optional<std::size_t> consumerLayer(const OnnxNode& node) const
    {
        std::unordered_set<std::size_t> walked;
        return consumerLayer(node, 0, walked);
    }

    //! walked: the Q/DQ nodes whose consumers were searched already. Their consumers found no layer then and would
    //! find none again; without it, Q/DQ nodes that read and write shared tensors (two producers of one tensor, a
    //! Q/DQ cycle) multiply the walk at every level.
    std::optional<std::size_t> consumerLayer(const OnnxNode& node, int depth,
                                             std::unordered_set<std::size_t>& walked) const
    {
        if (node.outputs.empty() || depth > 4)
        {
            return std::nullopt;
        }
        for (std::size_t consumer : mGraph->consumers(node.outputs[0]))
        {
            const OnnxNode& next = mGraph->nodes[consumer];
            if (auto layer = layerOf(next))
            {
                if (mResult.layers[*layer].state == LayerState::kMapped)
                {
                    return layer;
                }
            }
            if (patterns::isQdq(next) && walked.insert(consumer).second)
            {
                if (auto layer = consumerLayer(next, depth + 1, walked))
                {
                    return layer;
                }
            }
        }
        return std::nullopt;
    }

    const Inputs& mInputs;
    const OnnxGraph* mGraph;
    const EnginePlan* mPlan;
    Correlation mResult;
    NameIndex mLayerByName;
    NameIndex mLayerByBaseName;
    bool mLayerNamesIndexed = false;
    std::unordered_map<std::string, std::string> mRegistered;
    std::unordered_set<std::string> mRemoved;
    bool mRemovedIndexed = false;
};

} // namespace

Correlation correlate(const Inputs& inputs)
{
    return Correlator(inputs).run();
}

} // namespace qdq
