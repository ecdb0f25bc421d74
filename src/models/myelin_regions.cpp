// Myelin regions of an engine (include/qdq/myelin_regions.h).
#include "qdq/myelin_regions.h"

#include "qdq/myelin_kernels.h"
#include "qdq/patterns.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

namespace qdq
{
namespace
{

bool contains(std::string_view text, std::string_view part)
{
    return text.find(part) != std::string_view::npos;
}

//! The precision a GEMM kernel's tactic name tells. Real names: `sm80_xmma_gemm_i8i8_i8i32_f32_tn_n_...` (INT8,
//! ivit-simple-mlp-qdq-trt10-myelin), `sm86_xmma_gemm_f32f32_tf32f32_f32_nn_n_...` (FP32 with TF32 math, same file),
//! `cutlass3x_sm100_tensorop_s128x256x16gemm_f16_f16_f32_f16_f16_...` (FP16, lix-engine-analysis-dmt-fp16). The FP8
//! and BF16 markers (`e4m3`, `bf16`) are CUTLASS's type names; no real FP8 Myelin engine is in ../shared (a guess).
Precision precisionFromTactic(std::string_view tactic)
{
    if (contains(tactic, "i8i8") || contains(tactic, "_s8_") || contains(tactic, "int8"))
    {
        return Precision::kINT8;
    }
    if (contains(tactic, "e4m3") || contains(tactic, "fp8"))
    {
        return Precision::kFP8;
    }
    if (contains(tactic, "bf16"))
    {
        return Precision::kBF16;
    }
    if (contains(tactic, "f16f16") || contains(tactic, "_f16_") || contains(tactic, "h16") || contains(tactic, "hmma"))
    {
        return Precision::kFP16;
    }
    if (contains(tactic, "f32f32") || contains(tactic, "tf32") || contains(tactic, "sgemm"))
    {
        return Precision::kFP32;
    }
    return Precision::kUnknown;
}

//! Which ONNX node names are Q/DQ nodes: with a model, a flag per node (the correlation's Q/DQ nodes are the model's);
//! without one, the names of the correlation's Q/DQ nodes.
class QdqNodeSet
{
public:
    QdqNodeSet(const Correlation& correlation, const OnnxGraph* graph) : mGraph(graph)
    {
        if (graph != nullptr)
        {
            mIsQdq.assign(graph->nodes.size(), false);
            for (const auto& parameters : graph->qdq)
            {
                mIsQdq[parameters.node] = true;
            }
            return;
        }
        for (const auto& node : correlation.qdqNodes)
        {
            mNames.insert(node.node);
        }
    }

    //! node: an index of the model's nodes (with a model).
    bool isQdqNode(std::uint32_t node) const { return node < mIsQdq.size() && mIsQdq[node]; }
    bool contains(std::string_view name) const
    {
        if (mGraph != nullptr)
        {
            return isQdqNode(mGraph->nodeIndex(name));
        }
        return mNames.count(name) != 0;
    }

private:
    const OnnxGraph* mGraph;
    std::vector<bool> mIsQdq;
    std::unordered_set<std::string_view> mNames;
};

//! qdqNodes: to list the Q/DQ nodes the kernel executes by name; nullptr when listNodesInModelOrder lists them.
MyelinGemm gemmOf(const EnginePlan& plan, std::size_t layer, const LayerMapping& mapping, const QdqNodeSet* qdqNodes)
{
    const EngineLayer& record = plan.layers[layer];
    MyelinGemm gemm;
    gemm.layer = layer;
    const Precision input = patterns::inputPrecision(record);
    if (input != Precision::kUnknown)
    {
        gemm.precision = input;
        gemm.precisionEvidence = "input tensor " + record.inputs.front().format.str();
    }
    else if (!record.tacticName.empty())
    {
        gemm.precision = precisionFromTactic(record.tacticName);
        gemm.precisionEvidence = "tactic " + record.tacticName;
    }
    else
    {
        gemm.precisionEvidence = "the layer list gives the kernel no tensor types and no tactic";
    }
    if (qdqNodes == nullptr)
    {
        return gemm;
    }
    for (std::string_view node : mapping.onnxNodes)
    {
        if (qdqNodes->contains(node))
        {
            gemm.quantizedNodes.push_back(node);
        }
    }
    return gemm;
}

std::string joinPrecisions(const std::map<Precision, std::size_t>& counts)
{
    std::string text;
    std::size_t total = 0;
    for (const auto& [precision, count] : counts)
    {
        text += (text.empty() ? "" : " and ") + std::string(precisionName(precision));
        total += count;
    }
    if (counts.size() > 1)
    {
        text += " (" + std::to_string(total) + " GEMMs)";
    }
    return text;
}

//! The precision of a region whose kernels are not listed: its input and output tensors.
std::string tensorPrecision(const EngineLayer& layer)
{
    const Precision in = patterns::inputPrecision(layer);
    const Precision out = patterns::outputPrecision(layer);
    if (in == Precision::kUnknown && out == Precision::kUnknown)
    {
        return "unknown";
    }
    if (in == out)
    {
        return std::string(precisionName(in)) + " in/out";
    }
    return std::string(precisionName(in)) + " in, " + std::string(precisionName(out)) + " out";
}

void summarizePrecision(const EnginePlan& plan, MyelinRegion& region)
{
    if (!region.gemms.empty() && region.gemmsByPrecision.size() == 1 &&
        region.gemmsByPrecision.begin()->first == Precision::kUnknown)
    {
        region.precision = "unknown (" + std::to_string(region.gemms.size()) + " GEMM kernel" +
                           (region.gemms.size() == 1 ? "" : "s") + ")";
        region.precisionBasis = "its GEMM kernels, told by name; the layer list gives them no tensor types or tactics "
                                "(export it with --profilingVerbosity=detailed)";
        return;
    }
    if (!region.gemms.empty())
    {
        region.precision = joinPrecisions(region.gemmsByPrecision);
        region.precisionBasis = "the precision of its GEMM kernels (input tensors, else tactic names)";
        return;
    }
    if (!region.kernelsListed)
    {
        region.precision = tensorPrecision(plan.layers[region.layers.front()]);
        region.precisionBasis = "the region's input and output tensors (its kernels are not listed: export the layer "
                                "list with --profilingVerbosity=detailed)";
        return;
    }
    region.precision = "no GEMM";
    region.precisionBasis = "the region has no GEMM kernel";
}

//! Whether the op, through element-wise ops and Q/DQ (a scale, a mask Add, a Q/DQ pair), is reached from a MatMul
//! (upstream) or reaches one (downstream), within a few nodes.
bool nearMatMul(const OnnxGraph& graph, const OnnxNode& start, bool upstream)
{
    static constexpr std::string_view kPassed[] = {
        "Add", "Mul", "Div", "Where", "Cast", "QuantizeLinear", "DequantizeLinear"};
    std::vector<const OnnxNode*> frontier = {&start};
    for (int depth = 0; depth < 4 && !frontier.empty(); ++depth)
    {
        std::vector<const OnnxNode*> next;
        for (const OnnxNode* node : frontier)
        {
            std::vector<const OnnxNode*> around;
            if (upstream)
            {
                for (const auto& input : node->inputs)
                {
                    if (const OnnxNode* producer = graph.producer(input))
                    {
                        around.push_back(producer);
                    }
                }
            }
            else
            {
                for (const auto& output : node->outputs)
                {
                    for (std::uint32_t consumer : graph.consumers(output))
                    {
                        around.push_back(&graph.nodes[consumer]);
                    }
                }
            }
            for (const OnnxNode* other : around)
            {
                if (other->opType == "MatMul")
                {
                    return true;
                }
                if (std::find(std::begin(kPassed), std::end(kPassed), other->opType) != std::end(kPassed))
                {
                    next.push_back(other);
                }
            }
        }
        frontier = std::move(next);
    }
    return false;
}

//! A region with fused-attention kernels (include/qdq/myelin_kernels.h) says so, with the kernels as its evidence
//! and the ONNX nodes the first one executes when its Metadata names them (a maintainer in NVIDIA/TensorRT#3243: "If
//! the MHA is fused, there should be kernel names with `_mha` in the profile"; the layer list with detailed
//! verbosity lists the same kernels).
void describeFusedAttention(const EnginePlan& plan, const Correlation& correlation, MyelinRegion& region)
{
    if (region.attentionKernels.empty())
    {
        return;
    }
    region.attentionFused = true;
    const std::size_t first = region.attentionKernels.front();
    const EngineLayer& kernel = plan.layers[first];
    region.attention = "fused (kernel " + kernel.name;
    if (region.attentionKernels.size() > 1)
    {
        region.attention += " and " + std::to_string(region.attentionKernels.size() - 1) + " more";
    }
    region.attention += ": a `" + std::string(fusedAttentionMarker(kernel)) + "` kernel";
    // Only the nodes its Metadata names: without it the correlator's guess from the kernel's own name is no evidence.
    const auto& nodes = correlation.layers[first].onnxNodes;
    if (kernel.hasMetadata && !nodes.empty())
    {
        region.attention += " executing " + std::string(nodes.front());
        for (std::size_t i = 1; i < nodes.size() && i < 4; ++i)
        {
            region.attention += ", " + std::string(nodes[i]);
        }
    }
    region.attention += ")";
}

//! With the model: a region that runs an attention (a Softmax fed by a MatMul and feeding one) without a
//! fused-attention kernel says it did not fuse.
void findUnfusedAttention(const OnnxGraph& graph, MyelinRegion& region)
{
    if (!region.kernelsListed || region.attentionFused)
    {
        return;
    }
    for (std::string_view name : region.onnxNodes)
    {
        const OnnxNode* node = graph.findNode(name);
        if (node != nullptr && node->opType == "Softmax" && nearMatMul(graph, *node, true) &&
            nearMatMul(graph, *node, false))
        {
            region.attentionFused = false;
            region.attention = "not fused: no `_mha` kernel in the region, the attention of " + node->name +
                               " runs as separate GEMM and Softmax kernels";
            return;
        }
    }
}

//! Without the model the correlation was made with: leaves each of the region's node names once in onnxNodes, by
//! name, and lists its Q/DQ nodes.
void listNodesByName(MyelinRegion& region, const QdqNodeSet& qdqNodes)
{
    std::sort(region.onnxNodes.begin(), region.onnxNodes.end());
    region.onnxNodes.erase(std::unique(region.onnxNodes.begin(), region.onnxNodes.end()), region.onnxNodes.end());
    for (std::string_view name : region.onnxNodes)
    {
        if (qdqNodes.contains(name))
        {
            region.qdqNodes.push_back(name);
        }
    }
}

//! With the model: the nodes of each region in the model's order, from the correlation's node -> layers index (one
//! pass over the nodes, no name hashed or compared). On the bench's 94,430-kernel Myelin engine, sorting the regions'
//! names took about 0.1 s per call; looking each name up in the model, about half that.
void listNodesInModelOrder(std::vector<MyelinRegion>& regions, std::size_t layerCount, const Correlation& correlation,
                           const QdqNodeSet& qdqNodes, const OnnxGraph& graph)
{
    constexpr std::uint32_t kNoRegion = 0xFFFFFFFFu;
    std::vector<std::uint32_t> regionOfLayer(layerCount, kNoRegion);
    std::vector<std::uint32_t> gemmOfLayer(layerCount, kNoRegion); //!< index in its region's gemms
    for (std::size_t r = 0; r < regions.size(); ++r)
    {
        for (std::size_t layer : regions[r].layers)
        {
            regionOfLayer[layer] = static_cast<std::uint32_t>(r);
        }
        for (std::size_t g = 0; g < regions[r].gemms.size(); ++g)
        {
            gemmOfLayer[regions[r].gemms[g].layer] = static_cast<std::uint32_t>(g);
        }
    }
    for (std::uint32_t node = 0; node < graph.nodes.size(); ++node)
    {
        for (std::size_t layer : correlation.layersOfNode.findNode(node))
        {
            const std::uint32_t r = layer < layerCount ? regionOfLayer[layer] : kNoRegion;
            if (r == kNoRegion)
            {
                continue;
            }
            MyelinRegion& region = regions[r];
            const std::string_view name = graph.nodes[node].name;
            const bool quantizer = qdqNodes.isQdqNode(node);
            if (quantizer && gemmOfLayer[layer] != kNoRegion)
            {
                region.gemms[gemmOfLayer[layer]].quantizedNodes.push_back(name); // a Q/DQ the GEMM kernel executes
            }
            if (!region.onnxNodes.empty() && region.onnxNodes.back().data() == name.data())
            {
                continue; // another layer of the same region executes it too
            }
            region.onnxNodes.push_back(name);
            if (quantizer)
            {
                region.qdqNodes.push_back(name);
            }
        }
    }
}

} // namespace

std::string_view myelinGraphOf(std::string_view name)
{
    // `..._myl<digits>` or `..._myl<digits>_<digits>` at the end of the name.
    std::size_t end = name.size();
    std::size_t digits = end;
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1])))
    {
        --digits;
    }
    if (digits < end && digits > 0 && name[digits - 1] == '_')
    {
        // Maybe the kernel index: look for the graph number before it.
        std::size_t graphEnd = digits - 1;
        std::size_t graphDigits = graphEnd;
        while (graphDigits > 0 && std::isdigit(static_cast<unsigned char>(name[graphDigits - 1])))
        {
            --graphDigits;
        }
        if (graphDigits < graphEnd && graphDigits >= 4 && name.substr(graphDigits - 4, 4) == "_myl")
        {
            return name.substr(graphDigits - 3, graphEnd - graphDigits + 3);
        }
    }
    if (digits < end && digits >= 4 && name.substr(digits - 4, 4) == "_myl")
    {
        return name.substr(digits - 3, end - digits + 3);
    }
    return {};
}

bool isMyelinLayer(const EngineLayer& layer)
{
    return layer.type == "Myelin" || layer.name.starts_with("{ForeignNode[") ||
           layer.tacticName.find("__myl_") != std::string::npos || !myelinGraphOf(layer.baseName()).empty();
}

std::vector<MyelinRegion> findMyelinRegions(const EnginePlan& plan, const Correlation& correlation,
                                            const OnnxGraph* graph)
{
    std::vector<MyelinRegion> regions;
    if (correlation.layers.size() != plan.layers.size())
    {
        return regions;
    }
    // Most engines have no Myelin layer: the Q/DQ name table below (300,000 names on the bench's CNN) is built only
    // for one that has (measured: 2-3% of the 100,000-layer CNN diagnose without this check).
    if (std::none_of(plan.layers.begin(), plan.layers.end(),
                     [](const EngineLayer& layer) { return isMyelinLayer(layer); }))
    {
        return regions;
    }
    const QdqNodeSet qdqNodes(correlation, graph);
    // The correlation made with this model indexes its nodes: the regions' nodes are listed through that index.
    const bool inModelOrder = graph != nullptr && correlation.layersOfNode.graph() == graph;
    std::unordered_map<std::string, std::size_t> regionOfGraph;
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        const EngineLayer& layer = plan.layers[i];
        if (!isMyelinLayer(layer))
        {
            continue;
        }
        const std::string_view myelinGraph = myelinGraphOf(layer.baseName());
        std::size_t index = regions.size();
        if (!myelinGraph.empty())
        {
            auto [it, added] = regionOfGraph.emplace(std::string(myelinGraph), regions.size());
            index = it->second;
            if (added)
            {
                regions.emplace_back();
                regions.back().id = std::string(myelinGraph);
                regions.back().kernelsListed = true;
            }
        }
        else
        {
            regions.emplace_back();
            regions.back().id = layer.baseName();
        }
        MyelinRegion& region = regions[index];
        region.layers.push_back(i);
        ++region.kernelKinds[layer.type.empty() ? std::string("Myelin") : layer.type];
        const LayerMapping& mapping = correlation.layers[i];
        if (!inModelOrder)
        {
            region.onnxNodes.insert(region.onnxNodes.end(), mapping.onnxNodes.begin(), mapping.onnxNodes.end());
        }
        if (mapping.timeMs)
        {
            region.timeMs = region.timeMs.value_or(0.0) + *mapping.timeMs;
        }
        if (region.kernelsListed && isFusedAttentionKernel(layer))
        {
            region.attentionKernels.push_back(i);
        }
        if (region.kernelsListed && isMyelinGemmKernel(layer))
        {
            region.gemms.push_back(gemmOf(plan, i, mapping, inModelOrder ? nullptr : &qdqNodes));
            const MyelinGemm& gemm = region.gemms.back();
            ++region.gemmsByPrecision[gemm.precision];
            if (mapping.timeMs)
            {
                region.gemmMsByPrecision[gemm.precision] += *mapping.timeMs;
            }
        }
    }
    if (inModelOrder)
    {
        listNodesInModelOrder(regions, plan.layers.size(), correlation, qdqNodes, *graph);
    }
    for (auto& region : regions)
    {
        if (!inModelOrder)
        {
            listNodesByName(region, qdqNodes);
        }
        summarizePrecision(plan, region);
        describeFusedAttention(plan, correlation, region);
        if (graph != nullptr)
        {
            findUnfusedAttention(*graph, region);
        }
    }
    return regions;
}

} // namespace qdq
