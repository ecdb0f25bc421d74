// Engine-vs-engine diff. Alignment: every mapped layer contributes the ONNX operations it executes, in engine order;
// operations with the same node name on both sides anchor the alignment, and a longest-common-subsequence over
// operation kinds fills the gaps (different exporters name nodes differently). Layers that execute no comparable
// operation (reformats, standalone Q/DQ, no-ops) join the region of the layer they feed or drain. Regions are the
// connected groups of layers; each layer is in exactly one region, so region deltas add up to the total delta.
#include "qdq/diff.h"

#include "qdq/layer_names.h"
#include "qdq/patterns.h"
#include "qdq/precision.h"
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

//! Pairs of occurrences with the same key (and kind), in baseline order; keys that repeat on either side are
//! ignored.
std::vector<std::pair<std::size_t, std::size_t>> pairsByKey(const Side& baseline, const Side& candidate,
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
    return pairs;
}

//! Anchor pairs (monotone) from a key of each occurrence; keys that repeat on either side are ignored.
std::vector<std::pair<std::size_t, std::size_t>> anchorsByKey(const Side& baseline, const Side& candidate,
                                                              const std::function<std::string(const Occurrence&)>& key)
{
    return monotone(pairsByKey(baseline, candidate, key));
}

std::vector<std::pair<std::size_t, std::size_t>> alignOps(const Side& baseline, const Side& candidate,
                                                          std::size_t& anchoredByName, std::string& anchorKind)
{
    // Node names identify operations only when both engines come from the same export: node numbering changes
    // whenever Q/DQ nodes are inserted. Trust them when most operations share their names; otherwise anchor on
    // weight initializer names (stable across exports) and align the rest by structure.
    auto byName = anchorsByKey(baseline, candidate, [](const Occurrence& op) { return op.name; });
    // A name both exports use for weighted operations with different weights is a renumbering collision, not one
    // operation: the A100 -qat and -qat-residual exports both have a Conv_242, layer4.1.conv2 in one and
    // layer4.0.conv2 in the other, and the pair split the moved residual Add's region in two.
    byName.erase(std::remove_if(byName.begin(), byName.end(),
                                [&](const auto& pair)
                                {
                                    const std::string& a = baseline.ops[pair.first].weight;
                                    const std::string& b = candidate.ops[pair.second].weight;
                                    return !a.empty() && !b.empty() && a != b;
                                }),
                 byName.end());
    const auto byWeight = pairsByKey(baseline, candidate, [](const Occurrence& op) { return op.weight; });
    std::size_t smaller = std::min(baseline.ops.size(), candidate.ops.size());
    std::vector<std::pair<std::size_t, std::size_t>> anchors;
    if (smaller > 0 && byName.size() * 10 >= smaller * 8)
    {
        anchors = byName;
        anchorKind = "ONNX node name";
    }
    else
    {
        anchors = monotone(byWeight);
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
    // A weight name identifies an operation across exports whatever the engine order: a pair the monotone alignment
    // dropped because two layers swapped places still puts both in one region (the A100 -qat-residual engine runs
    // layer4.0's downsample conv before its conv2, the -qat engine after; conv2 was left "only in the baseline").
    std::vector<char> baseMatched(baseline.ops.size(), 0);
    std::vector<char> candMatched(candidate.ops.size(), 0);
    for (const auto& [i, j] : matches)
    {
        baseMatched[i] = 1;
        candMatched[j] = 1;
    }
    for (const auto& [i, j] : byWeight)
    {
        if (baseMatched[i] == 0 && candMatched[j] == 0)
        {
            matches.emplace_back(i, j);
            baseMatched[i] = 1;
            candMatched[j] = 1;
        }
    }
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

// ---- explanations only a diff can give (tactic-gap, int8-slower-than-fp16)
// ----------------------------------------

//! The math precision of a mapped layer: its weights' type, else its first quantized input's, else its first
//! input's.
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

//! The input and output shapes of a side's convolution, deconvolution and GEMM layers among layers, sorted: two
//! regions do the same math only when these agree (an alignment by operation kinds alone can pair different
//! convolutions).
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

//! R28 tactic-gap: pairs of layers that execute the same operations on both sides (one layer each), in the same
//! math precision, with different kernels, slower in the candidate.
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
        // When the output type changed, the kernel follows from it: timing-cache advice would chase a kernel the
        // candidate cannot use (the A100 pair's last Conv+Add writes FP32 for its float pooling in -qat-residual,
        // which its residual-precision-mismatch finding fixes).
        finding.fix =
            outputs.empty()
                ? "build both with one timing cache (trtexec --timingCacheFile=...) and a higher "
                  "--builderOptimizationLevel or --avgTiming so each build can find the faster kernel"
                : "fix the output type first: the candidate's " + std::string(precisionName(candOut)) +
                      " output rules out the baseline's kernel, so a timing cache or more tactics cannot bring it "
                      "back; give the layer's consumer the quantization that lets it write " +
                      std::string(precisionName(baseOut)) +
                      " or INT8 again (the residual-precision-mismatch or int8-conv-float-output finding of the "
                      "candidate names it), or reconsider the output Q/DQ on a memory-light layer";
        region.findings.push_back(std::move(finding));
    }
}

//! The advice of a measured int8-slower-than-fp16. The INT8 side's own layers (those that execute the model's
//! operations) against the whole float side: when they alone are faster, the conversions make the difference and
//! the region is worth keeping in INT8 (the A100 -fp16 -> -qat pair: each conv is faster in INT8; the standalone
//! Quantize before it is what costs).
std::string int8SlowerFix(const Side& int8Side, const std::vector<std::size_t>& int8Layers, std::size_t conversions,
                          double floatMs, const std::string& floatText)
{
    double computeMs = 0.0;
    for (std::size_t layer : int8Layers)
    {
        if (int8Side.correlation.layers[layer].state == LayerState::kMapped)
        {
            computeMs += int8Side.correlation.layers[layer].timeMs.value_or(0.0);
        }
    }
    if (conversions > 0 && computeMs < floatMs)
    {
        return "keep this region in INT8 and remove what makes it slow: its INT8 layers alone take " +
               patterns::formatMs(computeMs) + " against " + patterns::formatMs(floatMs) + " in " + floatText +
               ", and its " + std::to_string(conversions) +
               " standalone Q/DQ and reformat layer(s) take the rest (see the other findings of the region for the "
               "Q/DQ placement that fuses them)";
    }
    return "leave this region in " + floatText +
           " (remove its Q/DQ), or remove what makes the INT8 side slow: its standalone Q/DQ and reformat layers "
           "(see "
           "the other findings of the region), a CUDA-core kernel (kernel-without-tensor-cores) or unaligned "
           "channels "
           "(channels-not-aligned)";
}

//! int8-slower-than-fp16, measured: a region whose layers run INT8 on one side and float on the other, where the
//! INT8 side (its Q/DQ and reformat layers included) takes longer.
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
    // Profiles of one build to the next vary by a few percent (TREx profiles a single iteration): a difference
    // under a tenth of the float time is left as noise.
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
    finding.fix = int8SlowerFix(int8Side, int8Layers, conversions, floatMs, floatText);
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

//! The headline: the candidate's root causes, each with the deltas of the slower regions whose candidate time it
//! owns most of (a region counts for one cause, so the causes' deltas add up to at most the regions').
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
        // A region the candidate made faster is not explained by what is still wrong in it: on the A100 pair
        // (-qat -> -qat-residual) the -0.227 ms of the gained ConvActPool went to standalone-qdq, whose
        // network-input Quantize is in the region on both sides. Only slower regions count for the candidate's
        // causes.
        if (!region.hasTimes || region.deltaMs <= 0.0)
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

namespace
{

//! The counts of one region's layers on one side: how many execute model operations, how many are standalone Q/DQ
//! and how many reformats.
struct LayerCounts
{
    std::size_t mapped = 0;
    std::size_t qdq = 0;
    std::size_t reformat = 0;
};

//! One engine-vs-engine diff as named steps (run()): each side is diagnosed and its operations listed, the
//! operations are aligned, layers are grouped into regions, and each region is described by what differs in it and
//! the candidate findings on its layers; the totals, the causes and the notes come last.
class EngineDiff
{
public:
    EngineDiff(const Inputs& baseline, const Inputs& candidate)
        : mInputs{&baseline, &candidate}, mBase(mSides[0]), mCand(mSides[1])
    {
    }

    DiffReport run()
    {
        mReport.baselineInputs = mInputs[0]->sources;
        mReport.candidateInputs = mInputs[1]->sources;
        readSides();
        alignOperations();
        attachLayersWithoutOperations();
        collectRegions();
        readTotals();
        indexCandidateFindings();
        for (std::size_t root : mRootOrder)
        {
            mReport.regions.push_back(describeRegion(root));
        }
        addUnmatchedProfileTime();
        sumExplainedTime();
        mReport.causes = causesOfTheDifference(mCand.report, mReport.regions);
        sortRegionsByChange();
        addNotes();
        return std::move(mReport);
    }

private:
    //! Each side's engine, its diagnosis and its operations in engine order.
    void readSides()
    {
        for (int s = 0; s < 2; ++s)
        {
            Side& side = mSides[s];
            side.inputs = mInputs[s];
            side.plan = mInputs[s]->engine();
            if (side.plan == nullptr)
            {
                SourceLocation where;
                where.path = mInputs[s]->sources.empty() ? "" : mInputs[s]->sources.front().path;
                throw InputError(where, std::string("the ") + (s == 0 ? "baseline" : "candidate") +
                                            " has no engine layer list (give its --exportLayerInfo JSON, verbose "
                                            "build log or profile)");
            }
            side.report = diagnose(*mInputs[s]);
            side.correlation = side.report.correlation;
            const Inputs* other = mInputs[1 - s];
            side.otherGraph = !mInputs[s]->onnx && other->onnx ? &*other->onnx : nullptr;
            buildOccurrences(side);
        }
        mBaseCount = mBase.plan->layers.size();
        mCandCount = mCand.plan->layers.size();
        mRegions = UnionFind(mBaseCount + mCandCount);
        mAlignmentOf.assign(mBaseCount + mCandCount, "unmatched");
    }

    //! Aligned operations put their layers in one region; a layer is aligned by ONNX names when any of its
    //! operations matched by name or weight.
    void alignOperations()
    {
        mMatches = alignOps(mBase, mCand, mAnchoredByName, mAnchorKind);
        for (const auto& [i, j] : mMatches)
        {
            std::size_t a = mBase.ops[i].layer;
            std::size_t b = mBaseCount + mCand.ops[j].layer;
            mRegions.unite(a, b);
            bool byName = mBase.ops[i].name == mCand.ops[j].name ||
                          (!mBase.ops[i].weight.empty() && mBase.ops[i].weight == mCand.ops[j].weight);
            for (std::size_t x : {a, b})
            {
                if (mAlignmentOf[x] != "onnx-names")
                {
                    mAlignmentOf[x] = byName ? "onnx-names" : "structure";
                }
            }
        }
    }

    //! Layers without comparable operations join their neighbours.
    void attachLayersWithoutOperations()
    {
        for (int s = 0; s < 2; ++s)
        {
            std::size_t offset = s == 0 ? 0 : mBaseCount;
            std::set<std::size_t> withOps;
            for (const auto& op : mSides[s].ops)
            {
                withOps.insert(op.layer);
            }
            for (std::size_t layer = 0; layer < mSides[s].plan->layers.size(); ++layer)
            {
                if (withOps.count(layer) > 0)
                {
                    continue;
                }
                if (auto target = attachmentOf(mSides[s], layer))
                {
                    mRegions.unite(offset + layer, offset + *target);
                    mAlignmentOf[offset + layer] = "neighbour";
                }
            }
        }
    }

    //! Regions in a stable order (first baseline layer, else first candidate layer), each with its layers and the
    //! strongest alignment of any of them.
    void collectRegions()
    {
        for (std::size_t x = 0; x < mBaseCount + mCandCount; ++x)
        {
            std::size_t root = mRegions.find(x);
            auto [it, inserted] = mByRoot.try_emplace(root);
            if (inserted)
            {
                mRootOrder.push_back(root);
            }
            if (x < mBaseCount)
            {
                it->second.baselineLayers.push_back(x);
            }
            else
            {
                it->second.candidateLayers.push_back(x - mBaseCount);
            }
            if (it->second.alignment.empty() || mAlignmentOf[x] == "onnx-names" ||
                (mAlignmentOf[x] == "structure" && it->second.alignment != "onnx-names"))
            {
                it->second.alignment = mAlignmentOf[x];
            }
        }
    }

    void readTotals()
    {
        mBaseTimed = mBase.inputs->timings() != nullptr;
        mCandTimed = mCand.inputs->timings() != nullptr;
        mReport.perLayerTimes = mBaseTimed && mCandTimed;
        mReport.baselineMs = sideTotal(*mInputs[0], mReport.baselineTotalSource);
        mReport.candidateMs = sideTotal(*mInputs[1], mReport.candidateTotalSource);
    }

    //! Candidate findings by engine layer name.
    void indexCandidateFindings()
    {
        for (const auto& finding : mCand.report.findings)
        {
            for (const auto& layerName : finding.engineLayers)
            {
                mFindingsByLayer[layerName].push_back(&finding);
            }
        }
    }

    DiffRegion describeRegion(std::size_t root)
    {
        DiffRegion region = std::move(mByRoot[root]);
        std::set<std::string> nodes;
        const LayerCounts base = sumLayers(mBase, region.baselineLayers, region.baselineMs, nodes);
        const LayerCounts cand = sumLayers(mCand, region.candidateLayers, region.candidateMs, nodes);
        region.onnxNodes.assign(nodes.begin(), nodes.end());
        region.hasTimes = mReport.perLayerTimes;
        region.deltaMs = mReport.perLayerTimes ? region.candidateMs - region.baselineMs : 0.0;
        addPresenceAndLayerKindDifferences(region, base, cand);
        // With as many layers on both sides too: an Add that moved from one conv into another leaves the counts
        // alone.
        if (base.mapped > 0 && cand.mapped > 0)
        {
            addFusionDifferences(region, root, base, cand);
        }
        std::string basePrecision = precisionSummary(mBase, region.baselineLayers);
        std::string candPrecision = precisionSummary(mCand, region.candidateLayers);
        if (!basePrecision.empty() && !candPrecision.empty() && basePrecision != candPrecision)
        {
            region.differences.push_back("output precision " + basePrecision + " -> " + candPrecision);
        }
        if (base.mapped == cand.mapped && base.mapped > 0 && region.differences.empty())
        {
            addTacticChange(region);
        }
        addTacticGaps(region, mBase, mCand, oneToOneLayers(root), mReport.perLayerTimes);
        addInt8Slower(region, mBase, mCand);
        attachCandidateFindings(region);
        bool structural = false;
        for (const auto& difference : region.differences)
        {
            structural = structural || difference.rfind("only in the", 0) != 0;
        }
        region.explained = structural || !region.findings.empty();
        return region;
    }

    //! Adds the times of a side's layers in a region to timeMs and their ONNX nodes to nodes; counts their kinds.
    static LayerCounts sumLayers(const Side& side, const std::vector<std::size_t>& layers, double& timeMs,
                                 std::set<std::string>& nodes)
    {
        LayerCounts counts;
        for (std::size_t layer : layers)
        {
            const auto& mapping = side.correlation.layers[layer];
            timeMs += mapping.timeMs.value_or(0.0);
            nodes.insert(mapping.onnxNodes.begin(), mapping.onnxNodes.end());
            counts.mapped += mapping.state == LayerState::kMapped;
            counts.qdq += mapping.state == LayerState::kInsertedQdq;
            counts.reformat += mapping.state == LayerState::kInsertedReformat;
        }
        return counts;
    }

    //! A region on one side only, and standalone Q/DQ or reformat layers added or removed.
    static void addPresenceAndLayerKindDifferences(DiffRegion& region, const LayerCounts& base, const LayerCounts& cand)
    {
        if (region.baselineLayers.empty())
        {
            region.differences.push_back("only in the candidate");
        }
        else if (region.candidateLayers.empty())
        {
            region.differences.push_back("only in the baseline");
        }
        if (cand.qdq > base.qdq)
        {
            region.differences.push_back(std::to_string(cand.qdq - base.qdq) + " standalone Q/DQ layer(s) added");
        }
        else if (base.qdq > cand.qdq)
        {
            region.differences.push_back(std::to_string(base.qdq - cand.qdq) + " standalone Q/DQ layer(s) removed");
        }
        if (cand.reformat != base.reformat)
        {
            region.differences.push_back(
                std::string(cand.reformat > base.reformat ? "reformats added: " : "reformats removed: ") +
                std::to_string(base.reformat) + " -> " + std::to_string(cand.reformat));
        }
    }

    //! Which layers of the other side each layer of the region executes aligned operations with, both ways.
    void alignedLayers(std::size_t root, std::map<std::size_t, std::set<std::size_t>>& baseToCand,
                       std::map<std::size_t, std::set<std::size_t>>& candToBase)
    {
        for (const auto& [i, j] : mMatches)
        {
            if (mRegions.find(mBase.ops[i].layer) == root)
            {
                baseToCand[mBase.ops[i].layer].insert(mCand.ops[j].layer);
                candToBase[mCand.ops[j].layer].insert(mBase.ops[i].layer);
            }
        }
    }

    //! Which operations were fused on one side and split on the other.
    void addFusionDifferences(DiffRegion& region, std::size_t root, const LayerCounts& base, const LayerCounts& cand)
    {
        std::map<std::size_t, std::set<std::size_t>> baseToCand;
        std::map<std::size_t, std::set<std::size_t>> candToBase;
        alignedLayers(root, baseToCand, candToBase);
        auto kindsOf = [](const Side& side, std::size_t layer)
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
        // A fusion the other side still makes, on another conv, moved rather than was lost or gained: the A100
        // pair's residual Adds fuse into the downsample conv in -qat and into conv2 in -qat-residual (about 0.003
        // ms each), which read as three "lost fusion conv+add+relu".
        const auto sameKindIn = [&](const Side& side, const std::set<std::size_t>& layers, const std::string& kinds) {
            return std::any_of(layers.begin(), layers.end(),
                               [&](std::size_t other) { return kindsOf(side, other) == kinds; });
        };
        for (const auto& [layer, split] : baseToCand)
        {
            if (split.size() > 1)
            {
                const std::string kinds = kindsOf(mBase, layer);
                region.differences.push_back(
                    (sameKindIn(mCand, split, kinds) ? "fusion " + kinds + " moved to another layer: one baseline "
                                                     : "lost fusion " + kinds + ": one baseline ") +
                    std::string("layer, ") + std::to_string(split.size()) + " candidate layers");
            }
        }
        for (const auto& [layer, merged] : candToBase)
        {
            if (merged.size() > 1)
            {
                const std::string kinds = kindsOf(mCand, layer);
                const std::string moved = "fusion " + kinds + " moved to another layer";
                if (std::any_of(region.differences.begin(), region.differences.end(),
                                [&](const std::string& said) { return said.rfind(moved, 0) == 0; }))
                {
                    continue; // the same move, seen from the baseline's layer
                }
                region.differences.push_back((sameKindIn(mBase, merged, kinds)
                                                  ? "fusion " + kinds + " moved to another layer: "
                                                  : "gained fusion " + kinds + ": ") +
                                             std::to_string(merged.size()) + " baseline layers, one candidate layer");
            }
        }
        if (base.mapped != cand.mapped &&
            (region.differences.empty() || region.differences.back().find("fusion") == std::string::npos))
        {
            region.differences.push_back("layer count " + std::to_string(base.mapped) + " -> " +
                                         std::to_string(cand.mapped));
        }
    }

    //! The same layers on both sides with different tactics.
    void addTacticChange(DiffRegion& region) const
    {
        const auto tactics = [](const Side& side, const std::vector<std::size_t>& layers)
        {
            std::set<std::string> names;
            for (std::size_t layer : layers)
            {
                if (!side.plan->layers[layer].tacticName.empty())
                {
                    names.insert(side.plan->layers[layer].tacticName);
                }
            }
            return names;
        };
        const std::set<std::string> baseTactics = tactics(mBase, region.baselineLayers);
        const std::set<std::string> candTactics = tactics(mCand, region.candidateLayers);
        if (!baseTactics.empty() && !candTactics.empty() && baseTactics != candTactics)
        {
            region.differences.push_back("tactic change: " + *baseTactics.begin() + " -> " + *candTactics.begin());
        }
    }

    //! Layers that execute the same operations on both sides, one layer each.
    std::vector<std::pair<std::size_t, std::size_t>> oneToOneLayers(std::size_t root)
    {
        std::map<std::size_t, std::set<std::size_t>> toCand;
        std::map<std::size_t, std::set<std::size_t>> toBase;
        alignedLayers(root, toCand, toBase);
        std::vector<std::pair<std::size_t, std::size_t>> pairs;
        for (const auto& [b, candidates] : toCand)
        {
            if (candidates.size() == 1 && toBase[*candidates.begin()].size() == 1)
            {
                pairs.emplace_back(b, *candidates.begin());
            }
        }
        return pairs;
    }

    //! The candidate's findings on the region's layers, each once. A measured int8-slower-than-fp16 of the region
    //! replaces the candidate's own "likely" one.
    void attachCandidateFindings(DiffRegion& region) const
    {
        const bool measuredInt8Slower =
            std::any_of(region.findings.begin(), region.findings.end(),
                        [](const Finding& finding) { return finding.rule == "int8-slower-than-fp16"; });
        std::set<const Finding*> attached;
        for (std::size_t layer : region.candidateLayers)
        {
            auto found = mFindingsByLayer.find(mCand.plan->layers[layer].name);
            if (found == mFindingsByLayer.end())
            {
                continue;
            }
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

    //! With per-layer times on both sides, region deltas add up to the difference of the profile totals; profile
    //! entries that match no engine layer form one region of their own so nothing is lost.
    void addUnmatchedProfileTime()
    {
        if (!mReport.perLayerTimes)
        {
            return;
        }
        double baseInLayers = 0.0;
        double candInLayers = 0.0;
        for (const auto& region : mReport.regions)
        {
            baseInLayers += region.baselineMs;
            candInLayers += region.candidateMs;
        }
        double baseRest = *mReport.baselineMs - baseInLayers;
        double candRest = *mReport.candidateMs - candInLayers;
        if (std::abs(baseRest) > 1e-9 || std::abs(candRest) > 1e-9)
        {
            DiffRegion rest;
            rest.baselineMs = baseRest;
            rest.candidateMs = candRest;
            rest.deltaMs = candRest - baseRest;
            rest.hasTimes = true;
            rest.alignment = "unmatched";
            rest.differences.push_back("profile entries that match no engine layer");
            mReport.regions.push_back(std::move(rest));
        }
    }

    void sumExplainedTime()
    {
        if (mReport.baselineMs && mReport.candidateMs)
        {
            mReport.deltaMs = *mReport.candidateMs - *mReport.baselineMs;
        }
        for (const auto& region : mReport.regions)
        {
            if (region.explained && region.hasTimes)
            {
                mReport.explainedMs += region.deltaMs;
            }
        }
        mReport.unexplainedMs = mReport.deltaMs - mReport.explainedMs;
    }

    //! Largest change first, whichever its sign: a region that got 0.2 ms faster matters as much as one that got
    //! 0.2 ms slower when explaining a total.
    void sortRegionsByChange()
    {
        std::stable_sort(mReport.regions.begin(), mReport.regions.end(),
                         [](const DiffRegion& a, const DiffRegion& b)
                         { return std::abs(a.deltaMs) > std::abs(b.deltaMs); });
    }

    void addNotes()
    {
        mReport.notes.push_back(std::to_string(mAnchoredByName) + " operation(s) aligned by " + mAnchorKind + ", " +
                                std::to_string(mMatches.size() - mAnchoredByName) +
                                " by structure (operation kinds in engine order)");
        if (!mReport.perLayerTimes)
        {
            mReport.notes.push_back(std::string("per-layer times are missing on ") +
                                    (mBaseTimed   ? "the candidate"
                                     : mCandTimed ? "the baseline"
                                                  : "both sides") +
                                    " (give --exportProfile JSON or a log with --dumpProfile): regions show "
                                    "structure only, and the whole "
                                    "delta is unexplained");
        }
        if (!mReport.baselineMs || !mReport.candidateMs)
        {
            mReport.notes.push_back("no total time on " +
                                    std::string(!mReport.baselineMs ? "the baseline" : "the candidate") +
                                    ": the delta is unknown");
        }
    }

    const Inputs* mInputs[2];
    Side mSides[2];
    Side& mBase;
    Side& mCand;
    DiffReport mReport;
    std::size_t mBaseCount = 0;
    std::size_t mCandCount = 0;
    std::size_t mAnchoredByName = 0;
    std::string mAnchorKind;
    std::vector<std::pair<std::size_t, std::size_t>> mMatches;
    UnionFind mRegions{0};
    std::vector<std::string> mAlignmentOf; // per layer of both sides: how it joined its region
    std::map<std::size_t, DiffRegion> mByRoot;
    std::vector<std::size_t> mRootOrder;
    bool mBaseTimed = false;
    bool mCandTimed = false;
    std::unordered_map<std::string, std::vector<const Finding*>> mFindingsByLayer;
};

} // namespace

namespace
{

//! Whether a side is an implicit INT8 build: its log says so, or its model has no Q/DQ node while its engine runs
//! INT8 layers.
bool isImplicitInt8Build(const Inputs& side)
{
    if (side.buildLog && side.buildLog->implicitInt8Marker)
    {
        return true;
    }
    const EnginePlan* engine = side.engine();
    if (!side.onnx || engine == nullptr || side.onnx->quantizeCount() + side.onnx->dequantizeCount() > 0)
    {
        return false;
    }
    return std::any_of(engine->layers.begin(), engine->layers.end(),
                       [](const EngineLayer& layer)
                       { return !layer.outputs.empty() && isQuantized(layer.outputs.front().precision); });
}

bool isExplicitlyQuantized(const Inputs& side)
{
    return side.onnx && side.onnx->quantizeCount() + side.onnx->dequantizeCount() > 0;
}

//! An implicit INT8 build against an explicitly quantized model: their builds differ in typing.
std::optional<std::string> typingDifference(const Inputs& baseline, const Inputs& candidate)
{
    const bool baselineImplicit = isImplicitInt8Build(baseline) && isExplicitlyQuantized(candidate);
    const bool candidateImplicit = isImplicitInt8Build(candidate) && isExplicitlyQuantized(baseline);
    if (!baselineImplicit && !candidateImplicit)
    {
        return std::nullopt;
    }
    const std::string implicitSide = baselineImplicit ? "baseline" : "candidate";
    const std::string explicitSide = baselineImplicit ? "candidate" : "baseline";
    return "the two builds differ in typing: the " + implicitSide +
           " is an implicit INT8 build, weakly typed (TensorRT chose each layer's precision; TensorRT 11 has no "
           "such "
           "build), the " +
           explicitSide +
           " explicitly quantized (Q/DQ): built strongly typed (--stronglyTyped, and always in TensorRT 11) its "
           "float "
           "layers run in the model's type, not in FP16";
}

} // namespace

DiffReport diffEngines(const Inputs& baseline, const Inputs& candidate)
{
    DiffReport report = EngineDiff(baseline, candidate).run();
    if (std::optional<std::string> typing = typingDifference(baseline, candidate))
    {
        report.notes.insert(report.notes.begin(), std::move(*typing));
    }
    return report;
}

} // namespace qdq
