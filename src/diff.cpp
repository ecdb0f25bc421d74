// Engine-vs-engine diff. Alignment: every mapped layer contributes the ONNX operations it executes, in engine order;
// operations with the same node name on both sides anchor the alignment, and a longest-common-subsequence over
// operation kinds fills the gaps (different exporters name nodes differently). Layers that execute no comparable
// operation (reformats, standalone Q/DQ, no-ops) join the region of the layer they feed or drain. Regions are the
// connected groups of layers; each layer is in exactly one region, so region deltas add up to the total delta.
#include "qdq/diff.h"

#include "qdq/layer_names.h"
#include "qdq/patterns.h"
#include "qdq/precision_summary.h"
#include "qdq/union_find.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace qdq
{

namespace
{

// ---- operation kinds --------------------------------------------------------------------------------------------

//! Normalized operation kind for alignment ("conv", "relu", "maxpool", "gemm", ...), or "" when not comparable
//! (weights, Q/DQ, shape helpers, BatchNorm which some builds name and others fold away).
std::string kindFromOpType(std::string opType)
{
    std::transform(opType.begin(), opType.end(), opType.begin(), [](unsigned char c) { return std::tolower(c); });
    static const std::map<std::string, std::string> kAliases = {{"conv", "conv"},
                                                                {"conv2d", "conv"},
                                                                {"convolution", "conv"},
                                                                {"convtranspose", "deconv"},
                                                                {"deconv", "deconv"},
                                                                {"relu", "relu"},
                                                                {"maxpool", "maxpool"},
                                                                {"averagepool", "avgpool"},
                                                                {"avgpool", "avgpool"},
                                                                {"globalaveragepool", "globalavgpool"},
                                                                {"adaptiveavgpool", "globalavgpool"},
                                                                {"gemm", "gemm"},
                                                                {"matmul", "gemm"},
                                                                {"linear", "gemm"},
                                                                {"fc", "gemm"},
                                                                {"add", "add"},
                                                                {"sum", "add"},
                                                                {"mul", "mul"},
                                                                {"sub", "sub"},
                                                                {"div", "div"},
                                                                {"sigmoid", "sigmoid"},
                                                                {"tanh", "tanh"},
                                                                {"clip", "clip"},
                                                                {"leakyrelu", "leakyrelu"},
                                                                {"softmax", "softmax"},
                                                                {"argmax", "argmax"},
                                                                {"topk", "topk"},
                                                                {"concat", "concat"},
                                                                {"resize", "resize"},
                                                                {"upsample", "resize"},
                                                                {"split", "split"},
                                                                {"slice", "slice"},
                                                                {"pad", "pad"},
                                                                {"gelu", "gelu"},
                                                                {"hardswish", "hardswish"},
                                                                {"erf", "erf"},
                                                                {"pow", "pow"},
                                                                {"sqrt", "sqrt"},
                                                                {"reducemean", "reducemean"},
                                                                {"layernormalization", "layernorm"},
                                                                {"batchnormalization", ""},
                                                                {"quantizelinear", ""},
                                                                {"dequantizelinear", ""},
                                                                {"reshape", ""},
                                                                {"transpose", ""},
                                                                {"flatten", ""},
                                                                {"squeeze", ""},
                                                                {"unsqueeze", ""},
                                                                {"shuffle", ""},
                                                                {"view", ""},
                                                                {"identity", ""},
                                                                {"constant", ""},
                                                                {"cast", ""},
                                                                {"shape", ""},
                                                                {"gather", ""}};
    auto found = kAliases.find(opType);
    return found == kAliases.end() ? opType : found->second;
}

//! Kind from a node name when no ONNX model tells the op type: `/layer1/conv1/Conv` -> conv, `Conv_9` -> conv,
//! `node_max_pool2d_1` -> maxpool, `ReLU-2` -> relu, `layer1.0.conv2.weight` -> "" (a weight).
std::string kindFromName(const std::string& name)
{
    if (looksLikeQuantizeName(name) || looksLikeDequantizeName(name) || isUnnamedLayerToken(name) ||
        name.find(':') != std::string::npos)
    {
        return {};
    }
    std::string last = name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
    std::string lower;
    for (char c : last)
    {
        lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (lower.size() > 7 && lower.substr(lower.size() - 7) == ".weight")
    {
        return {};
    }
    if (lower.find(".weight") != std::string::npos || lower.find(".bias") != std::string::npos)
    {
        return {};
    }
    if (lower.rfind("node_", 0) == 0)
    {
        lower = lower.substr(5);
    }
    while (!lower.empty() && (std::isdigit(static_cast<unsigned char>(lower.back())) || lower.back() == '_' ||
                              lower.back() == '-' || lower.back() == '.'))
    {
        lower.pop_back();
    }
    for (const char* suffix : {"2d", "3d", "1d"})
    {
        if (lower.size() > 2 && lower.substr(lower.size() - 2) == suffix)
        {
            lower.resize(lower.size() - 2);
        }
    }
    lower.erase(std::remove(lower.begin(), lower.end(), '_'), lower.end());
    lower.erase(std::remove(lower.begin(), lower.end(), '-'), lower.end());
    if (lower.empty() || lower.size() > 24)
    {
        return {};
    }
    return kindFromOpType(lower);
}

struct Occurrence
{
    std::string kind;
    std::string name;
    std::size_t layer = 0;
    std::string weight; //!< the weight initializer of a conv/gemm when the layer name shows it
};

bool isWeightToken(const std::string& token)
{
    auto endsWith = [&](const char* suffix)
    {
        std::size_t n = std::char_traits<char>::length(suffix);
        return token.size() >= n && token.compare(token.size() - n, n, suffix) == 0;
    };
    return endsWith("weight") || endsWith(".w_0") || endsWith("kernel") || endsWith("/read:0");
}

bool isWeightedKind(const std::string& kind)
{
    return kind == "conv" || kind == "gemm" || kind == "deconv";
}

struct Side
{
    const Inputs* inputs = nullptr;
    const EnginePlan* plan = nullptr;
    Correlation correlation;
    Report report;
    std::vector<Occurrence> ops;
    std::unordered_map<std::string, std::size_t> producer;
    std::unordered_map<std::string, std::vector<std::size_t>> consumers;
    //! The other side's model, when this side has none: its op types name this side's operations too where the
    //! names agree (a model's predicted engine held against the real engine built from it).
    const OnnxGraph* otherGraph = nullptr;
};

void buildOccurrences(Side& side)
{
    const OnnxGraph* graph = side.inputs->onnx ? &*side.inputs->onnx : nullptr;
    for (const auto& mapping : side.correlation.layers)
    {
        if (mapping.state != LayerState::kMapped)
        {
            continue;
        }
        // Engine order within a layer follows the name (" + " joins fused nodes in order); sort by graph index
        // when the model is known.
        std::vector<std::string> nodes(mapping.onnxNodes.begin(), mapping.onnxNodes.end());
        if (graph != nullptr)
        {
            std::sort(nodes.begin(), nodes.end(),
                      [&](const std::string& a, const std::string& b)
                      {
                          std::uint32_t ia = graph->nodeIndex(a);
                          std::uint32_t ib = graph->nodeIndex(b);
                          std::size_t xa = ia == OnnxGraph::kNone ? 0 : ia;
                          std::size_t xb = ib == OnnxGraph::kNone ? 0 : ib;
                          return xa < xb;
                      });
        }
        else
        {
            nodes = parseLayerName(side.plan->layers[mapping.layer].name).tokens;
        }
        // Weight initializer names, in name order, go to the layer's weighted operations in order: they survive
        // re-exports that renumber node names.
        std::vector<std::string> weights;
        for (const auto& token : parseLayerName(side.plan->layers[mapping.layer].name).tokens)
        {
            if (isWeightToken(token))
            {
                weights.push_back(token);
            }
        }
        std::size_t nextWeight = 0;
        for (const auto& node : nodes)
        {
            std::string kind;
            if (graph != nullptr)
            {
                if (const OnnxNode* onnxNode = graph->findNode(node))
                {
                    kind = kindFromOpType(onnxNode->opType);
                }
            }
            else if (const OnnxNode* known = side.otherGraph ? side.otherGraph->findNode(node) : nullptr)
            {
                kind = kindFromOpType(known->opType);
            }
            else
            {
                kind = kindFromName(node);
            }
            if (!kind.empty())
            {
                std::string weight = isWeightedKind(kind) && nextWeight < weights.size() ? weights[nextWeight++] : "";
                side.ops.push_back({kind, node, mapping.layer, weight});
            }
        }
    }
    for (std::size_t i = 0; i < side.plan->layers.size(); ++i)
    {
        for (const auto& output : side.plan->layers[i].outputs)
        {
            side.producer.emplace(output.name, i);
        }
        for (const auto& input : side.plan->layers[i].inputs)
        {
            side.consumers[input.name].push_back(i);
        }
    }
}

// ---- alignment --------------------------------------------------------------------------------------------------

//! Longest increasing subsequence of pairs by second index (pairs sorted by first): monotone anchors.
std::vector<std::pair<std::size_t, std::size_t>> monotone(std::vector<std::pair<std::size_t, std::size_t>> pairs)
{
    std::vector<std::size_t> tails; // index into pairs of the smallest tail of each length
    std::vector<std::size_t> previous(pairs.size(), SIZE_MAX);
    for (std::size_t i = 0; i < pairs.size(); ++i)
    {
        auto position =
            std::lower_bound(tails.begin(), tails.end(), pairs[i].second,
                             [&](std::size_t tail, std::size_t value) { return pairs[tail].second < value; });
        if (position != tails.begin())
        {
            previous[i] = *(position - 1);
        }
        if (position == tails.end())
        {
            tails.push_back(i);
        }
        else
        {
            *position = i;
        }
    }
    std::vector<std::pair<std::size_t, std::size_t>> result;
    for (std::size_t i = tails.empty() ? SIZE_MAX : tails.back(); i != SIZE_MAX; i = previous[i])
    {
        result.push_back(pairs[i]);
    }
    std::reverse(result.begin(), result.end());
    return result;
}

//! LCS by kind over a[aBegin, aEnd) and b[bBegin, bEnd); appends matched index pairs.
void alignGap(const std::vector<Occurrence>& a, std::size_t aBegin, std::size_t aEnd, const std::vector<Occurrence>& b,
              std::size_t bBegin, std::size_t bEnd, std::vector<std::pair<std::size_t, std::size_t>>& matches)
{
    std::size_t n = aEnd - aBegin;
    std::size_t m = bEnd - bBegin;
    if (n == 0 || m == 0)
    {
        return;
    }
    if (n * m > 4'000'000)
    {
        // Too large for the table: greedy in order.
        std::size_t j = bBegin;
        for (std::size_t i = aBegin; i < aEnd && j < bEnd; ++i)
        {
            for (std::size_t k = j; k < bEnd && k < j + 64; ++k)
            {
                if (a[i].kind == b[k].kind)
                {
                    matches.emplace_back(i, k);
                    j = k + 1;
                    break;
                }
            }
        }
        return;
    }
    std::vector<std::uint32_t> table((n + 1) * (m + 1), 0);
    auto cell = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return table[i * (m + 1) + j]; };
    for (std::size_t i = n; i-- > 0;)
    {
        for (std::size_t j = m; j-- > 0;)
        {
            cell(i, j) = a[aBegin + i].kind == b[bBegin + j].kind ? cell(i + 1, j + 1) + 1
                                                                  : std::max(cell(i + 1, j), cell(i, j + 1));
        }
    }
    std::size_t i = 0;
    std::size_t j = 0;
    while (i < n && j < m)
    {
        if (a[aBegin + i].kind == b[bBegin + j].kind && cell(i, j) == cell(i + 1, j + 1) + 1)
        {
            matches.emplace_back(aBegin + i, bBegin + j);
            ++i;
            ++j;
        }
        else if (cell(i + 1, j) >= cell(i, j + 1))
        {
            ++i;
        }
        else
        {
            ++j;
        }
    }
}

//! Anchor pairs (monotone) from a key of each occurrence; keys that repeat on either side are ignored.
std::vector<std::pair<std::size_t, std::size_t>> anchorsByKey(const Side& baseline, const Side& candidate,
                                                              const std::function<std::string(const Occurrence&)>& key)
{
    std::unordered_map<std::string, std::size_t> candidateByKey;
    std::unordered_set<std::string> repeated;
    for (std::size_t j = 0; j < candidate.ops.size(); ++j)
    {
        std::string k = key(candidate.ops[j]);
        if (!k.empty() && !candidateByKey.emplace(k, j).second)
        {
            repeated.insert(k);
        }
    }
    std::unordered_set<std::string> seenBaseline;
    std::vector<std::pair<std::size_t, std::size_t>> pairs;
    for (std::size_t i = 0; i < baseline.ops.size(); ++i)
    {
        std::string k = key(baseline.ops[i]);
        if (k.empty() || !seenBaseline.insert(k).second)
        {
            repeated.insert(k);
            continue;
        }
        auto found = candidateByKey.find(k);
        if (found != candidateByKey.end() && candidate.ops[found->second].kind == baseline.ops[i].kind)
        {
            pairs.emplace_back(i, found->second);
        }
    }
    pairs.erase(std::remove_if(pairs.begin(), pairs.end(),
                               [&](const auto& pair) { return repeated.count(key(baseline.ops[pair.first])) > 0; }),
                pairs.end());
    return monotone(pairs);
}

std::vector<std::pair<std::size_t, std::size_t>> alignOps(const Side& baseline, const Side& candidate,
                                                          std::size_t& anchoredByName, std::string& anchorKind)
{
    // Node names identify operations only when both engines come from the same export: node numbering changes
    // whenever Q/DQ nodes are inserted. Trust them when most operations share their names; otherwise anchor on
    // weight initializer names (stable across exports) and align the rest by structure.
    auto byName = anchorsByKey(baseline, candidate, [](const Occurrence& op) { return op.name; });
    std::size_t smaller = std::min(baseline.ops.size(), candidate.ops.size());
    std::vector<std::pair<std::size_t, std::size_t>> anchors;
    if (smaller > 0 && byName.size() * 10 >= smaller * 8)
    {
        anchors = byName;
        anchorKind = "ONNX node name";
    }
    else
    {
        anchors = anchorsByKey(baseline, candidate, [](const Occurrence& op) { return op.weight; });
        anchorKind = "weight name";
    }
    anchoredByName = anchors.size();
    std::vector<std::pair<std::size_t, std::size_t>> matches;
    std::size_t aStart = 0;
    std::size_t bStart = 0;
    for (const auto& [i, j] : anchors)
    {
        alignGap(baseline.ops, aStart, i, candidate.ops, bStart, j, matches);
        matches.emplace_back(i, j);
        aStart = i + 1;
        bStart = j + 1;
    }
    alignGap(baseline.ops, aStart, baseline.ops.size(), candidate.ops, bStart, candidate.ops.size(), matches);
    return matches;
}

//! The layer a layer without comparable operations belongs with: the one it reformats for, the consumer of its
//! output, or the producer of its input; else its engine-order neighbour.
std::optional<std::size_t> attachmentOf(const Side& side, std::size_t layer)
{
    const LayerMapping& mapping = side.correlation.layers[layer];
    if (mapping.reformatTarget)
    {
        return mapping.reformatTarget;
    }
    const EngineLayer& engineLayer = side.plan->layers[layer];
    for (const auto& output : engineLayer.outputs)
    {
        auto consumers = side.consumers.find(output.name);
        if (consumers != side.consumers.end())
        {
            for (std::size_t consumer : consumers->second)
            {
                if (consumer != layer)
                {
                    return consumer;
                }
            }
        }
    }
    for (const auto& input : engineLayer.inputs)
    {
        auto producer = side.producer.find(input.name);
        if (producer != side.producer.end() && producer->second != layer)
        {
            return producer->second;
        }
    }
    if (engineLayer.inputs.empty() && engineLayer.outputs.empty() && side.plan->layers.size() > 1)
    {
        // Names-only lists: a Quantize or reformat runs right before the layer it feeds; a no-op after its source.
        bool feedsNext = mapping.state == LayerState::kInsertedQdq || mapping.state == LayerState::kInsertedReformat;
        if (feedsNext && layer + 1 < side.plan->layers.size())
        {
            return layer + 1;
        }
        return layer > 0 ? layer - 1 : layer + 1;
    }
    return std::nullopt;
}

std::string precisionSummary(const Side& side, const std::vector<std::size_t>& layers)
{
    std::set<std::string> precisions;
    for (std::size_t layer : layers)
    {
        if (side.correlation.layers[layer].state == LayerState::kMapped)
        {
            Precision p = patterns::outputPrecision(side.plan->layers[layer]);
            if (p != Precision::kUnknown)
            {
                precisions.insert(std::string(precisionName(p)));
            }
        }
    }
    std::string text;
    for (const auto& p : precisions)
    {
        text += (text.empty() ? "" : "+") + p;
    }
    return text;
}

// ---- explanations only a diff can give (tactic-gap, int8-slower-than-fp16) ----------------------------------------

//! The math precision of a mapped layer: its weights' type, else its first quantized input's, else its first input's.
std::string mathPrecisionOf(const Side& side, std::size_t layer)
{
    return layerPrecisionLabel(side.plan->layers[layer], side.correlation.layers[layer].state);
}

Evidence tacticEvidence(const Side& side, std::size_t layer, const KernelName& kernel, const std::string& which)
{
    Evidence evidence;
    evidence.file = kernel.file;
    evidence.line = kernel.line;
    evidence.field = which + " layer \"" + side.plan->layers[layer].name + "\" " +
                     (kernel.source == "TacticName" ? "TacticName" : "tactic choice");
    const auto time = side.correlation.layers[layer].timeMs;
    evidence.text = kernel.name + (time ? ", " + patterns::formatMs(*time) : std::string());
    return evidence;
}

//! The input and output shapes of a side's convolution, deconvolution and GEMM layers among layers, sorted: two regions
//! do the same math only when these agree (an alignment by operation kinds alone can pair different convolutions).
std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>>
matrixShapes(const Side& side, const std::vector<std::size_t>& layers)
{
    std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> shapes;
    for (std::size_t layer : layers)
    {
        const EngineLayer& l = side.plan->layers[layer];
        if (isMatrixKind(layerKind(l, side.correlation.layers[layer].state)) && !l.inputs.empty() && !l.outputs.empty())
        {
            shapes.emplace_back(l.inputs[0].dimensions, l.outputs[0].dimensions);
        }
    }
    std::sort(shapes.begin(), shapes.end());
    return shapes;
}

//! R28 tactic-gap: pairs of layers that execute the same operations on both sides (one layer each), in the same math
//! precision, with different kernels, slower in the candidate.
void addTacticGaps(DiffRegion& region, const Side& base, const Side& cand,
                   const std::vector<std::pair<std::size_t, std::size_t>>& pairs, bool timed)
{
    for (const auto& [b, c] : pairs)
    {
        const KernelName baseKernel = kernelNameOf(*base.inputs, b);
        const KernelName candKernel = kernelNameOf(*cand.inputs, c);
        if (baseKernel.name.empty() || candKernel.name.empty() || baseKernel.name == candKernel.name ||
            mathPrecisionOf(base, b) != mathPrecisionOf(cand, c) || matrixShapes(base, {b}) != matrixShapes(cand, {c}))
        {
            continue;
        }
        const auto baseMs = base.correlation.layers[b].timeMs;
        const auto candMs = cand.correlation.layers[c].timeMs;
        const bool measured = timed && baseMs && candMs;
        if (measured && *candMs <= *baseMs)
        {
            continue; // the candidate's kernel is as fast or faster
        }
        const EngineLayer& baseLayer = base.plan->layers[b];
        const EngineLayer& candLayer = cand.plan->layers[c];
        Finding finding;
        finding.rule = "tactic-gap";
        finding.severity = measured ? Severity::kWarning : Severity::kInfo;
        finding.likely = true;
        finding.engineLayers = {candLayer.name};
        for (const auto& node : cand.correlation.layers[c].onnxNodes)
        {
            finding.onnxNodes.emplace_back(node);
        }
        std::string outputs;
        const Precision baseOut = patterns::outputPrecision(baseLayer);
        const Precision candOut = patterns::outputPrecision(candLayer);
        if (baseOut != candOut && baseOut != Precision::kUnknown && candOut != Precision::kUnknown)
        {
            outputs = "; the candidate writes " + std::string(precisionName(candOut)) + " where the baseline wrote " +
                      std::string(precisionName(baseOut)) +
                      ", an output format its Q/DQ impose, which rules out the baseline's kernel";
        }
        finding.message =
            "The same fused layer runs a different kernel in the two builds" +
            (measured ? " and is " + patterns::formatMs(*candMs - *baseMs) + " (" +
                            std::to_string(static_cast<int>(100.0 * (*candMs - *baseMs) / *baseMs + 0.5)) +
                            "%) slower in the candidate (" + patterns::formatMs(*baseMs) + " -> " +
                            patterns::formatMs(*candMs) + ")"
                      : std::string(" (no per-layer times to weigh it)")) +
            ": baseline \"" + baseLayer.name + "\" ran " + baseKernel.name + ", candidate \"" + candLayer.name +
            "\" runs " + candKernel.name + outputs + ". Part of a small gap can be timing noise of the builds.";
        finding.evidence.push_back(tacticEvidence(base, b, baseKernel, "baseline"));
        finding.evidence.push_back(tacticEvidence(cand, c, candKernel, "candidate"));
        if (measured)
        {
            finding.costMs = *candMs - *baseMs;
        }
        finding.fix =
            "build both with one timing cache (trtexec --timingCacheFile=...) and a higher "
            "--builderOptimizationLevel or --avgTiming so each build can find the faster kernel; if an output "
            "Q/DQ forces an output type the baseline did not have, reconsider it (INT8 output on a "
            "memory-light layer)";
        region.findings.push_back(std::move(finding));
    }
}

//! int8-slower-than-fp16, measured: a region whose layers run INT8 on one side and float on the other, where the INT8
//! side (its Q/DQ and reformat layers included) takes longer.
void addInt8Slower(DiffRegion& region, const Side& base, const Side& cand)
{
    if (!region.hasTimes || region.baselineLayers.empty() || region.candidateLayers.empty())
    {
        return;
    }
    const auto precisions = [](const Side& side, const std::vector<std::size_t>& layers)
    {
        std::set<std::string> labels;
        for (std::size_t layer : layers)
        {
            if (side.correlation.layers[layer].state == LayerState::kMapped)
            {
                labels.insert(mathPrecisionOf(side, layer));
            }
        }
        return labels;
    };
    const auto baseLabels = precisions(base, region.baselineLayers);
    const auto candLabels = precisions(cand, region.candidateLayers);
    const auto isFloatOnly = [](const std::set<std::string>& labels)
    {
        return !labels.empty() &&
               std::all_of(labels.begin(), labels.end(),
                           [](const std::string& l) { return l == "FP16" || l == "FP32" || l == "BF16"; });
    };
    const bool candInt8 = candLabels.count("INT8") > 0 && isFloatOnly(baseLabels);
    const bool baseInt8 = baseLabels.count("INT8") > 0 && isFloatOnly(candLabels);
    const double int8Ms = candInt8 ? region.candidateMs : region.baselineMs;
    const double floatMs = candInt8 ? region.baselineMs : region.candidateMs;
    // Profiles of one build to the next vary by a few percent (TREx profiles a single iteration): a difference under
    // a tenth of the float time is left as noise.
    constexpr double kNoise = 0.10;
    if ((!candInt8 && !baseInt8) || int8Ms <= floatMs * (1.0 + kNoise) ||
        matrixShapes(base, region.baselineLayers) != matrixShapes(cand, region.candidateLayers))
    {
        return;
    }
    const Side& int8Side = candInt8 ? cand : base;
    const std::vector<std::size_t>& int8Layers = candInt8 ? region.candidateLayers : region.baselineLayers;
    const std::set<std::string>& floatLabels = candInt8 ? baseLabels : candLabels;
    std::string floatText;
    for (const auto& label : floatLabels)
    {
        floatText += (floatText.empty() ? "" : "+") + label;
    }
    std::vector<std::string> names;
    std::size_t conversions = 0;
    for (std::size_t layer : int8Layers)
    {
        names.push_back(int8Side.plan->layers[layer].name);
        const LayerState state = int8Side.correlation.layers[layer].state;
        conversions += state == LayerState::kInsertedQdq || state == LayerState::kInsertedReformat ? 1 : 0;
    }
    Finding finding;
    finding.rule = "int8-slower-than-fp16";
    finding.severity = Severity::kWarning;
    finding.engineLayers = candInt8 ? names : std::vector<std::string>{};
    finding.costMs = int8Ms - floatMs;
    finding.message = "This region runs INT8 in the " + std::string(candInt8 ? "candidate" : "baseline") + " (" +
                      patterns::formatMs(int8Ms) + ", " + std::to_string(int8Layers.size()) + " layer(s), " +
                      std::to_string(conversions) + " of them Q/DQ or reformat layers) and " + floatText + " in the " +
                      (candInt8 ? "baseline" : "candidate") + " (" + patterns::formatMs(floatMs) +
                      "): INT8 is slower here by " + patterns::formatMs(int8Ms - floatMs) + ": " +
                      patterns::nameList(names, 3) + ".";
    for (std::size_t layer : int8Layers)
    {
        Evidence evidence;
        const auto [file, line] = int8Side.plan->factSource(layer, LayerFact::kRecord);
        evidence.file = std::string(file);
        evidence.line = line;
        evidence.field = "layer \"" + int8Side.plan->layers[layer].name + "\"";
        const auto time = int8Side.correlation.layers[layer].timeMs;
        evidence.text = mathPrecisionOf(int8Side, layer) + ", " + patterns::formatMs(time.value_or(0.0));
        finding.evidence.push_back(std::move(evidence));
    }
    finding.fix = "leave this region in " + floatText +
                  " (remove its Q/DQ), or remove what makes the INT8 side slow: its standalone Q/DQ and reformat "
                  "layers (see the other findings of the region), a CUDA-core kernel (kernel-without-tensor-cores) or "
                  "unaligned channels (channels-not-aligned)";
    region.findings.push_back(std::move(finding));
}

std::optional<double> sideTotal(const Inputs& inputs, std::string& source)
{
    if (const Profile* profile = inputs.timings())
    {
        source = "profile";
        return profile->totalAverageMs();
    }
    if (inputs.buildLog && inputs.buildLog->gpuComputeMeanMs)
    {
        source = "GPU Compute Time";
        return inputs.buildLog->gpuComputeMeanMs;
    }
    source = "none";
    return std::nullopt;
}

} // namespace

//! The headline: the candidate's root causes, each with the deltas of the regions whose candidate time it owns most
//! of (a region counts for one cause, so the causes' deltas add up to at most the regions').
static std::vector<DiffCause> causesOfTheDifference(const Report& candidate, const std::vector<DiffRegion>& regions)
{
    std::vector<DiffCause> causes;
    std::vector<std::optional<std::size_t>> ownerOf(candidate.correlation.layers.size());
    for (std::size_t c = 0; c < candidate.causes.size(); ++c)
    {
        const RootCause& cause = candidate.causes[c];
        causes.push_back({cause.title, cause.severity, cause.savingMs, 0.0, 0});
        for (std::size_t layer : cause.layers)
        {
            if (layer < ownerOf.size())
            {
                ownerOf[layer] = c;
            }
        }
    }
    for (const DiffRegion& region : regions)
    {
        if (!region.hasTimes)
        {
            continue;
        }
        std::map<std::size_t, double> owned; // cause -> candidate time of the region it owns
        for (std::size_t layer : region.candidateLayers)
        {
            if (layer < ownerOf.size() && ownerOf[layer])
            {
                owned[*ownerOf[layer]] += candidate.correlation.layers[layer].timeMs.value_or(0.0);
            }
        }
        if (owned.empty())
        {
            continue;
        }
        auto most = std::max_element(owned.begin(), owned.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
        causes[most->first].deltaMs += region.deltaMs;
        ++causes[most->first].regions;
    }
    return causes;
}

DiffReport diffEngines(const Inputs& baseline, const Inputs& candidate)
{
    DiffReport report;
    report.baselineInputs = baseline.sources;
    report.candidateInputs = candidate.sources;
    Side sides[2];
    const Inputs* inputs[2] = {&baseline, &candidate};
    for (int s = 0; s < 2; ++s)
    {
        sides[s].inputs = inputs[s];
        sides[s].plan = inputs[s]->engine();
        if (sides[s].plan == nullptr)
        {
            SourceLocation where;
            where.path = inputs[s]->sources.empty() ? "" : inputs[s]->sources.front().path;
            throw InputError(
                where, std::string("the ") + (s == 0 ? "baseline" : "candidate") +
                           " has no engine layer list (give its --exportLayerInfo JSON, verbose build log or profile)");
        }
        sides[s].report = diagnose(*inputs[s]);
        sides[s].correlation = sides[s].report.correlation;
        const Inputs* other = inputs[1 - s];
        sides[s].otherGraph = !inputs[s]->onnx && other->onnx ? &*other->onnx : nullptr;
        buildOccurrences(sides[s]);
    }
    Side& base = sides[0];
    Side& cand = sides[1];
    const std::size_t nb = base.plan->layers.size();
    const std::size_t nc = cand.plan->layers.size();

    std::size_t anchoredByName = 0;
    std::string anchorKind;
    auto matches = alignOps(base, cand, anchoredByName, anchorKind);
    UnionFind regions(nb + nc);
    std::vector<std::string> alignmentOf(nb + nc, "unmatched");
    std::set<std::pair<std::size_t, std::size_t>> namedPairs;
    for (const auto& [i, j] : matches)
    {
        std::size_t a = base.ops[i].layer;
        std::size_t b = nb + cand.ops[j].layer;
        regions.unite(a, b);
        bool byName = base.ops[i].name == cand.ops[j].name ||
                      (!base.ops[i].weight.empty() && base.ops[i].weight == cand.ops[j].weight);
        for (std::size_t x : {a, b})
        {
            if (alignmentOf[x] != "onnx-names")
            {
                alignmentOf[x] = byName ? "onnx-names" : "structure";
            }
        }
    }
    // Layers without comparable operations join their neighbours.
    for (int s = 0; s < 2; ++s)
    {
        std::size_t offset = s == 0 ? 0 : nb;
        std::set<std::size_t> withOps;
        for (const auto& op : sides[s].ops)
        {
            withOps.insert(op.layer);
        }
        for (std::size_t layer = 0; layer < sides[s].plan->layers.size(); ++layer)
        {
            if (withOps.count(layer) > 0)
            {
                continue;
            }
            if (auto target = attachmentOf(sides[s], layer))
            {
                regions.unite(offset + layer, offset + *target);
                alignmentOf[offset + layer] = "neighbour";
            }
        }
    }

    // Collect regions in a stable order (first baseline layer, else first candidate layer).
    std::map<std::size_t, DiffRegion> byRoot;
    std::vector<std::size_t> rootOrder;
    for (std::size_t x = 0; x < nb + nc; ++x)
    {
        std::size_t root = regions.find(x);
        auto [it, inserted] = byRoot.try_emplace(root);
        if (inserted)
        {
            rootOrder.push_back(root);
        }
        if (x < nb)
        {
            it->second.baselineLayers.push_back(x);
        }
        else
        {
            it->second.candidateLayers.push_back(x - nb);
        }
        if (it->second.alignment.empty() || alignmentOf[x] == "onnx-names" ||
            (alignmentOf[x] == "structure" && it->second.alignment != "onnx-names"))
        {
            it->second.alignment = alignmentOf[x];
        }
    }

    const bool baseTimed = base.inputs->timings() != nullptr;
    const bool candTimed = cand.inputs->timings() != nullptr;
    report.perLayerTimes = baseTimed && candTimed;
    report.baselineMs = sideTotal(baseline, report.baselineTotalSource);
    report.candidateMs = sideTotal(candidate, report.candidateTotalSource);

    // Candidate findings by engine layer name.
    std::unordered_map<std::string, std::vector<const Finding*>> findingsByLayer;
    for (const auto& finding : cand.report.findings)
    {
        for (const auto& layerName : finding.engineLayers)
        {
            findingsByLayer[layerName].push_back(&finding);
        }
    }

    for (std::size_t root : rootOrder)
    {
        DiffRegion region = std::move(byRoot[root]);
        std::set<std::string> nodes;
        std::size_t baseMapped = 0;
        std::size_t candMapped = 0;
        std::size_t baseQdq = 0;
        std::size_t candQdq = 0;
        std::size_t baseReformat = 0;
        std::size_t candReformat = 0;
        for (std::size_t layer : region.baselineLayers)
        {
            const auto& mapping = base.correlation.layers[layer];
            region.baselineMs += mapping.timeMs.value_or(0.0);
            nodes.insert(mapping.onnxNodes.begin(), mapping.onnxNodes.end());
            baseMapped += mapping.state == LayerState::kMapped;
            baseQdq += mapping.state == LayerState::kInsertedQdq;
            baseReformat += mapping.state == LayerState::kInsertedReformat;
        }
        for (std::size_t layer : region.candidateLayers)
        {
            const auto& mapping = cand.correlation.layers[layer];
            region.candidateMs += mapping.timeMs.value_or(0.0);
            nodes.insert(mapping.onnxNodes.begin(), mapping.onnxNodes.end());
            candMapped += mapping.state == LayerState::kMapped;
            candQdq += mapping.state == LayerState::kInsertedQdq;
            candReformat += mapping.state == LayerState::kInsertedReformat;
        }
        region.onnxNodes.assign(nodes.begin(), nodes.end());
        region.hasTimes = report.perLayerTimes;
        region.deltaMs = report.perLayerTimes ? region.candidateMs - region.baselineMs : 0.0;

        if (region.baselineLayers.empty())
        {
            region.differences.push_back("only in the candidate");
        }
        else if (region.candidateLayers.empty())
        {
            region.differences.push_back("only in the baseline");
        }
        if (candQdq > baseQdq)
        {
            region.differences.push_back(std::to_string(candQdq - baseQdq) + " standalone Q/DQ layer(s) added");
        }
        else if (baseQdq > candQdq)
        {
            region.differences.push_back(std::to_string(baseQdq - candQdq) + " standalone Q/DQ layer(s) removed");
        }
        if (candReformat != baseReformat)
        {
            region.differences.push_back(
                std::string(candReformat > baseReformat ? "reformats added: " : "reformats removed: ") +
                std::to_string(baseReformat) + " -> " + std::to_string(candReformat));
        }
        if (baseMapped > 0 && candMapped > 0 && baseMapped != candMapped)
        {
            // Which operations were fused on one side and split on the other.
            std::map<std::size_t, std::set<std::size_t>> baseToCand;
            std::map<std::size_t, std::set<std::size_t>> candToBase;
            for (const auto& [i, j] : matches)
            {
                if (regions.find(base.ops[i].layer) == root)
                {
                    baseToCand[base.ops[i].layer].insert(cand.ops[j].layer);
                    candToBase[cand.ops[j].layer].insert(base.ops[i].layer);
                }
            }
            auto kindsOf = [&](const Side& side, std::size_t layer)
            {
                std::string text;
                for (const auto& op : side.ops)
                {
                    if (op.layer == layer)
                    {
                        text += (text.empty() ? "" : "+") + op.kind;
                    }
                }
                return text;
            };
            for (const auto& [layer, split] : baseToCand)
            {
                if (split.size() > 1)
                {
                    region.differences.push_back("lost fusion " + kindsOf(base, layer) + ": one baseline layer, " +
                                                 std::to_string(split.size()) + " candidate layers");
                }
            }
            for (const auto& [layer, merged] : candToBase)
            {
                if (merged.size() > 1)
                {
                    region.differences.push_back("gained fusion " + kindsOf(cand, layer) + ": " +
                                                 std::to_string(merged.size()) +
                                                 " baseline layers, one candidate layer");
                }
            }
            if (region.differences.empty() || region.differences.back().find("fusion") == std::string::npos)
            {
                region.differences.push_back("layer count " + std::to_string(baseMapped) + " -> " +
                                             std::to_string(candMapped));
            }
        }
        std::string basePrecision = precisionSummary(base, region.baselineLayers);
        std::string candPrecision = precisionSummary(cand, region.candidateLayers);
        if (!basePrecision.empty() && !candPrecision.empty() && basePrecision != candPrecision)
        {
            region.differences.push_back("output precision " + basePrecision + " -> " + candPrecision);
        }
        if (baseMapped == candMapped && baseMapped > 0 && region.differences.empty())
        {
            std::set<std::string> baseTactics;
            std::set<std::string> candTactics;
            for (std::size_t layer : region.baselineLayers)
            {
                if (!base.plan->layers[layer].tacticName.empty())
                {
                    baseTactics.insert(base.plan->layers[layer].tacticName);
                }
            }
            for (std::size_t layer : region.candidateLayers)
            {
                if (!cand.plan->layers[layer].tacticName.empty())
                {
                    candTactics.insert(cand.plan->layers[layer].tacticName);
                }
            }
            if (!baseTactics.empty() && !candTactics.empty() && baseTactics != candTactics)
            {
                region.differences.push_back("tactic change: " + *baseTactics.begin() + " -> " + *candTactics.begin());
            }
        }
        {
            // Layers that execute the same operations on both sides, one layer each.
            std::map<std::size_t, std::set<std::size_t>> toCand;
            std::map<std::size_t, std::set<std::size_t>> toBase;
            for (const auto& [i, j] : matches)
            {
                if (regions.find(base.ops[i].layer) == root)
                {
                    toCand[base.ops[i].layer].insert(cand.ops[j].layer);
                    toBase[cand.ops[j].layer].insert(base.ops[i].layer);
                }
            }
            std::vector<std::pair<std::size_t, std::size_t>> pairs;
            for (const auto& [b, candidates] : toCand)
            {
                if (candidates.size() == 1 && toBase[*candidates.begin()].size() == 1)
                {
                    pairs.emplace_back(b, *candidates.begin());
                }
            }
            addTacticGaps(region, base, cand, pairs, report.perLayerTimes);
            addInt8Slower(region, base, cand);
        }
        // A measured int8-slower-than-fp16 of the region replaces the candidate's own "likely" one.
        const bool measuredInt8Slower =
            std::any_of(region.findings.begin(), region.findings.end(),
                        [](const Finding& finding) { return finding.rule == "int8-slower-than-fp16"; });
        std::set<const Finding*> attached;
        for (std::size_t layer : region.candidateLayers)
        {
            auto found = findingsByLayer.find(cand.plan->layers[layer].name);
            if (found != findingsByLayer.end())
            {
                for (const Finding* finding : found->second)
                {
                    if (measuredInt8Slower && finding->rule == "int8-slower-than-fp16")
                    {
                        continue;
                    }
                    if (attached.insert(finding).second)
                    {
                        region.findings.push_back(*finding);
                    }
                }
            }
        }
        bool structural = false;
        for (const auto& difference : region.differences)
        {
            structural = structural || difference.rfind("only in the", 0) != 0;
        }
        region.explained = structural || !region.findings.empty();
        report.regions.push_back(std::move(region));
    }

    // Totals. With per-layer times on both sides, region deltas add up to the difference of the profile totals;
    // profile entries that match no engine layer form one region of their own so nothing is lost.
    if (report.perLayerTimes)
    {
        double baseInLayers = 0.0;
        double candInLayers = 0.0;
        for (const auto& region : report.regions)
        {
            baseInLayers += region.baselineMs;
            candInLayers += region.candidateMs;
        }
        double baseRest = *report.baselineMs - baseInLayers;
        double candRest = *report.candidateMs - candInLayers;
        if (std::abs(baseRest) > 1e-9 || std::abs(candRest) > 1e-9)
        {
            DiffRegion rest;
            rest.baselineMs = baseRest;
            rest.candidateMs = candRest;
            rest.deltaMs = candRest - baseRest;
            rest.hasTimes = true;
            rest.alignment = "unmatched";
            rest.differences.push_back("profile entries that match no engine layer");
            report.regions.push_back(std::move(rest));
        }
    }
    if (report.baselineMs && report.candidateMs)
    {
        report.deltaMs = *report.candidateMs - *report.baselineMs;
    }
    for (const auto& region : report.regions)
    {
        if (region.explained && region.hasTimes)
        {
            report.explainedMs += region.deltaMs;
        }
    }
    report.unexplainedMs = report.deltaMs - report.explainedMs;
    report.causes = causesOfTheDifference(cand.report, report.regions);
    // Largest change first, whichever its sign: a region that got 0.2 ms faster matters as much as one that got
    // 0.2 ms slower when explaining a total.
    std::stable_sort(report.regions.begin(), report.regions.end(),
                     [](const DiffRegion& a, const DiffRegion& b)
                     { return std::abs(a.deltaMs) > std::abs(b.deltaMs); });

    report.notes.push_back(std::to_string(anchoredByName) + " operation(s) aligned by " + anchorKind + ", " +
                           std::to_string(matches.size() - anchoredByName) +
                           " by structure (operation kinds in engine order)");
    if (!report.perLayerTimes)
    {
        report.notes.push_back(
            std::string("per-layer times are missing on ") +
            (baseTimed   ? "the candidate"
             : candTimed ? "the baseline"
                         : "both sides") +
            " (give --exportProfile JSON or a log with --dumpProfile): regions show structure only, and the whole "
            "delta is unexplained");
    }
    if (!report.baselineMs || !report.candidateMs)
    {
        report.notes.push_back("no total time on " +
                               std::string(!report.baselineMs ? "the baseline" : "the candidate") +
                               ": the delta is unknown");
    }
    return report;
}

} // namespace qdq
