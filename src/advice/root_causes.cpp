// Root causes: which findings one change to the model fixes, which findings are only their symptoms, which engine
// layers' time each owns, and what fixing it saves (docs/savings.md). Runs after the rules, on their findings.
//
// The steps, in order:
//   1. classify each finding: a cause (its fix is a change to the model) or a symptom (a standalone Q/DQ, a reformat,
//      a float output, a CUDA-core kernel: an effect whose fix is another finding's);
//   2. group the causes: all findings of one rule are one cause (the same mistake in several places), causes whose
//      edits change the same tensor or that name the same node of the model are one fix, and a symptom that names
//      layers of two causes shows they are one mechanism (a conv writes float because the tensor after it also feeds an
//      unquantized residual), so they merge;
//   3. give each engine layer to one group: causes claim the layers they name first, symptoms then keep what no
//      cause claimed as a group of their own;
//   4. estimate each group's saving from its layers (advice/savings.h);
//   5. order the groups (errors first, then by saving) and the findings by group, causes before symptoms.

#include "qdq/root_causes.h"

#include "qdq/patterns.h"
#include "qdq/union_find.h"
#include "src/advice/savings.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <numeric>
#include <span>
#include <sstream>
#include <unordered_map>

namespace qdq
{

std::string_view savingConfidenceName(SavingConfidence confidence)
{
    switch (confidence)
    {
    case SavingConfidence::kNone:
        return "none";
    case SavingConfidence::kLow:
        return "low";
    case SavingConfidence::kMedium:
        return "medium";
    case SavingConfidence::kHigh:
        return "high";
    }
    return "none";
}

namespace
{

using advice::LayerChange;
using advice::LayerSaving;

//! Rules whose findings describe an effect whose remedy is another finding's (the "symptoms": standalone Q,
//! reformats, FP16/FP32 outputs, CUDA-core kernels).
constexpr std::array<std::string_view, 9> kSymptomRules = {"standalone-qdq",
                                                           "reformat-conversion",
                                                           "copy-not-eliminated",
                                                           "kernel-without-tensor-cores",
                                                           "channels-not-aligned",
                                                           "io-reformat",
                                                           "int8-conv-float-output",
                                                           "tactic-gap",
                                                           "depthwise-conv-on-cuda-cores"};

//! Symptoms that name one site and the layers on both sides of it: a float output that is re-quantized further on.
//! The causes owning those layers are one mechanism.
constexpr std::array<std::string_view, 1> kBridgingRules = {"int8-conv-float-output"};

//! Causes ordered from the most fundamental: the first of a group's rules in this list titles it. A float residual
//! blocks the ConvActPool fusion and makes the conv before it write float, not the other way round.
constexpr std::array<std::string_view, 8> kRootOrder = {
    "quantized-op-not-importable",     "nonzero-zero-point",
    "residual-input-not-quantized",    "residual-precision-mismatch",
    "conv-act-pool-blocked",           "int8-op-without-output-q",
    "weighted-op-input-not-quantized", "fp32-island"};

//! Rules whose fix makes a fused layer out of separate ones: their non-GEMM layers (the pooling, the activation, the
//! PointWise epilogue) disappear into the conv (reference section 1.8).
//! A BatchNormalization folded into its convolution leaves no layer of its own either (batchnorm-not-folded), nor
//! does a Pad folded into its convolution (explicit-pad-layer) or an input transpose the export removes
//! (input-layout-transpose). Post-processing moved out of the engine (myelin-head-dominates) is not among them: its
//! work moves to a plugin or the host, whose cost no artifact shows; its saving is that of its other fix, FP16 for
//! the FP32 head (changeOf).
constexpr std::array<std::string_view, 9> kFusingRules = {
    "conv-act-pool-blocked",    "depthwise-act-not-fused",  "convtranspose-epilogue-not-fused",
    "qdq-inside-conv-epilogue", "qdq-between-conv-and-add", "activation-before-residual-add",
    "batchnorm-not-folded",     "explicit-pad-layer",       "input-layout-transpose"};

//! Causes whose fix is no Q/DQ placement and removes the layers they name whatever else changes: a BatchNormalization
//! that constant folding lets the parser fold into its convolution; the export changes of explicit-pad-layer and
//! input-layout-transpose; the post-processing that myelin-head-dominates moves out of the engine. They claim their
//! layers before the causes whose fix would only change those layers' precision (fp32-island), and join no other
//! cause through the nodes they share.
constexpr std::array<std::string_view, 4> kSeparateFixRules = {"batchnorm-not-folded", "explicit-pad-layer",
                                                               "input-layout-transpose", "myelin-head-dominates"};

//! Rules whose fix places or moves Q/DQ so that the layers they name read and write INT8.
constexpr std::array<std::string_view, 17> kQuantizingRules = {"residual-input-not-quantized",
                                                               "residual-precision-mismatch",
                                                               "conv-act-pool-blocked",
                                                               "int8-conv-float-output",
                                                               "int8-op-without-output-q",
                                                               "weighted-op-input-not-quantized",
                                                               "qdq-between-conv-and-add",
                                                               "qdq-inside-conv-epilogue",
                                                               "qdq-between-pad-and-conv",
                                                               "concat-quantize-hoisted",
                                                               "concat-scale-mismatch",
                                                               "concat-mixed-precision",
                                                               "fanout-scale-mismatch",
                                                               "maxpool-scale-mismatch",
                                                               "requantize-before-split",
                                                               "activation-before-residual-add",
                                                               "standalone-qdq"};

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& list, std::string_view rule)
{
    return std::find(list.begin(), list.end(), rule) != list.end();
}

std::size_t rootRank(std::string_view rule)
{
    auto it = std::find(kRootOrder.begin(), kRootOrder.end(), rule);
    return static_cast<std::size_t>(it - kRootOrder.begin());
}

//! Only Q/DQ-placement and fusion causes join causes of other rules: a build flag (fp32-island) or a kernel choice is
//! another change, even where it names the same layers.
bool joinsOtherRules(std::string_view rule)
{
    return (listed(kQuantizingRules, rule) || listed(kFusingRules, rule)) && !listed(kSeparateFixRules, rule);
}

int severityRank(Severity severity)
{
    return severity == Severity::kError ? 0 : severity == Severity::kWarning ? 1 : 2;
}

bool isGemmLike(const EngineLayer& layer)
{
    for (std::string_view kind : {"Convolution", "Deconvolution", "Gemm", "MatrixMultiply", "FullyConnected"})
    {
        if (layer.type.find(kind) != std::string::npos || layer.parameterType.find(kind) != std::string::npos)
        {
            return true;
        }
    }
    return false;
}

//! The working state of the stage: findings are referred to by their index in report.findings.
struct Grouping
{
    std::vector<char> isSymptom;                             //!< per finding
    std::vector<std::vector<std::size_t>> layersOf;          //!< per finding: engine layers it names
    std::vector<std::optional<std::size_t>> explainedBy;     //!< per finding: its Finding::explainedByLayer
    std::vector<std::size_t> groupOf;                        //!< per finding: its group (after union)
    std::vector<std::optional<std::size_t>> owner;           //!< per engine layer: the finding that owns it
    std::map<std::size_t, std::vector<std::size_t>> members; //!< group -> cause findings (or the symptoms owning)
};

//! Step 1: which findings are symptoms, and which engine layers each names.
void classifyFindings(const Report& report, const EnginePlan* plan, Grouping& grouping)
{
    // Only the names findings give are indexed, then one pass over the layers finds them: a map of every layer of a
    // 100,000-layer engine cost more than the rest of the stage.
    std::unordered_map<std::string_view, std::size_t> layerByName;
    for (const Finding& finding : report.findings)
    {
        for (const auto& name : finding.engineLayers)
        {
            layerByName.emplace(name, SIZE_MAX);
        }
        if (!finding.explainedByLayer.empty())
        {
            layerByName.emplace(finding.explainedByLayer, SIZE_MAX);
        }
    }
    if (plan != nullptr && !layerByName.empty())
    {
        for (std::size_t i = 0; i < plan->layers.size(); ++i)
        {
            if (auto it = layerByName.find(plan->layers[i].name); it != layerByName.end() && it->second == SIZE_MAX)
            {
                it->second = i; // the first layer of that name, as before
            }
        }
    }
    const std::size_t count = report.findings.size();
    grouping.isSymptom.assign(count, 0);
    grouping.layersOf.assign(count, {});
    grouping.explainedBy.assign(count, std::nullopt);
    for (std::size_t f = 0; f < count; ++f)
    {
        const Finding& finding = report.findings[f];
        grouping.isSymptom[f] = listed(kSymptomRules, finding.rule) ? 1 : 0;
        if (auto it = finding.explainedByLayer.empty() ? layerByName.end() : layerByName.find(finding.explainedByLayer);
            grouping.isSymptom[f] != 0 && it != layerByName.end() && it->second != SIZE_MAX)
        {
            grouping.explainedBy[f] = it->second;
        }
        for (const auto& name : finding.engineLayers)
        {
            if (auto it = layerByName.find(name); it != layerByName.end() && it->second != SIZE_MAX)
            {
                grouping.layersOf[f].push_back(it->second);
            }
        }
        std::sort(grouping.layersOf[f].begin(), grouping.layersOf[f].end());
        grouping.layersOf[f].erase(std::unique(grouping.layersOf[f].begin(), grouping.layersOf[f].end()),
                                   grouping.layersOf[f].end());
    }
}

//! Joins finding f to the first finding that gave the same key (a rule, a tensor, a node).
template <class Key>
void uniteByKey(UnionFind& sets, std::map<Key, std::size_t>& firstWith, const Key& key, std::size_t f)
{
    auto [it, inserted] = firstWith.try_emplace(key, f);
    if (!inserted)
    {
        sets.unite(it->second, f);
    }
}

//! One decision per tensor: Q/DQ-placement causes whose edits change the same tensor are one fix. Without edits (a
//! fix the rule only describes), causes of one site name the same nodes of the model: the ConvActPool finding and the
//! residual finding both name the MaxPool whose output is the float residual. Only site findings (a few nodes) join
//! so: a finding that names a whole region would join everything.
void joinCausesOfOneSite(const Report& report, const Grouping& grouping, UnionFind& sets)
{
    constexpr std::size_t kSiteNodes = 8;
    std::map<std::string_view, std::size_t> firstEditing;
    std::map<std::string_view, std::size_t> firstNaming;
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        const Finding& finding = report.findings[f];
        if (grouping.isSymptom[f] != 0 || !joinsOtherRules(finding.rule))
        {
            continue;
        }
        for (const FixEdit& edit : finding.edits)
        {
            if (!edit.tensor.empty())
            {
                uniteByKey(sets, firstEditing, std::string_view(edit.tensor), f);
            }
        }
        if (finding.onnxNodes.size() <= kSiteNodes && finding.severity != Severity::kInfo)
        {
            for (const auto& node : finding.onnxNodes)
            {
                uniteByKey(sets, firstNaming, std::string_view(node), f);
            }
        }
    }
}

//! A bridging symptom (a conv writing float whose output is re-quantized where a residual reads it) joins the causes
//! that name any of its layers: they are one mechanism.
void joinThroughBridgingSymptoms(const Report& report, std::size_t layerCount, const Grouping& grouping,
                                 UnionFind& sets)
{
    std::vector<std::vector<std::size_t>> causesNaming(layerCount);
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        if (grouping.isSymptom[f] == 0 && joinsOtherRules(report.findings[f].rule))
        {
            for (std::size_t layer : grouping.layersOf[f])
            {
                causesNaming[layer].push_back(f);
            }
        }
    }
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        const Finding& finding = report.findings[f];
        if (grouping.isSymptom[f] == 0 || !listed(kBridgingRules, finding.rule) || finding.severity == Severity::kInfo)
        {
            continue;
        }
        std::optional<std::size_t> first;
        for (std::size_t layer : grouping.layersOf[f])
        {
            for (std::size_t cause : causesNaming[layer])
            {
                first = first.value_or(cause);
                sets.unite(*first, cause);
            }
        }
    }
}

//! Step 2: one group per rule (the same mistake in several places; for symptoms, what they keep), joined where
//! causes act on one site or a bridging symptom shows one mechanism.
void groupCauses(const Report& report, std::size_t layerCount, Grouping& grouping)
{
    const std::size_t count = report.findings.size();
    UnionFind sets(count);
    std::map<std::string_view, std::size_t> firstOfRule;
    for (std::size_t f = 0; f < count; ++f)
    {
        uniteByKey(sets, firstOfRule, std::string_view(report.findings[f].rule), f);
    }
    joinCausesOfOneSite(report, grouping, sets);
    joinThroughBridgingSymptoms(report, layerCount, grouping, sets);
    grouping.groupOf.resize(count);
    for (std::size_t f = 0; f < count; ++f)
    {
        grouping.groupOf[f] = sets.find(f);
    }
}

//! The order in which findings claim layers: infos last, causes before symptoms, causes with a separate fix first,
//! errors before warnings, then the larger time involved.
std::vector<std::size_t> claimOrder(const Report& report, const Grouping& grouping)
{
    std::vector<std::size_t> order(report.findings.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b)
                     {
                         const Finding& fa = report.findings[a];
                         const Finding& fb = report.findings[b];
                         // An info finding asks for no change (its layers save nothing): it claims only what no
                         // finding asking for an edit names, else it would hide that edit's saving.
                         const bool aInfo = fa.severity == Severity::kInfo;
                         if (aInfo != (fb.severity == Severity::kInfo))
                         {
                             return !aInfo;
                         }
                         if (grouping.isSymptom[a] != grouping.isSymptom[b])
                         {
                             return grouping.isSymptom[a] < grouping.isSymptom[b];
                         }
                         const bool aSeparate = listed(kSeparateFixRules, fa.rule);
                         if (aSeparate != listed(kSeparateFixRules, fb.rule))
                         {
                             return aSeparate;
                         }
                         // Q/DQ placement next: the layers a placement fix removes are its, not a build flag's.
                         if (joinsOtherRules(fa.rule) != joinsOtherRules(fb.rule))
                         {
                             return joinsOtherRules(fa.rule);
                         }
                         if (severityRank(fa.severity) != severityRank(fb.severity))
                         {
                             return severityRank(fa.severity) < severityRank(fb.severity);
                         }
                         return fa.costMs.value_or(-1.0) > fb.costMs.value_or(-1.0);
                     });
    return order;
}

//! The finding owning the layer symptom f names as its explanation (Finding::explainedByLayer), when another one does.
std::optional<std::size_t> explainingOwner(const Grouping& grouping, std::size_t f)
{
    if (!grouping.explainedBy[f])
    {
        return std::nullopt;
    }
    const auto& owner = grouping.owner[*grouping.explainedBy[f]];
    return owner && *owner != f ? owner : std::nullopt;
}

//! Step 3: every named layer gets one owner; a symptom that owns nothing joins the group owning most of its time,
//! or the group owning the layer it names as its explanation.
void claimLayers(const Report& report, std::size_t layerCount, Grouping& grouping)
{
    grouping.owner.assign(layerCount, std::nullopt);
    for (std::size_t f : claimOrder(report, grouping))
    {
        bool ownsAny = false;
        for (std::size_t layer : grouping.layersOf[f])
        {
            if (!grouping.owner[layer])
            {
                grouping.owner[layer] = f;
                ownsAny = true;
            }
        }
        if (grouping.isSymptom[f] == 0 || ownsAny || grouping.layersOf[f].empty())
        {
            continue;
        }
        // Explained by the group owning the layer the finding names as its explanation, where another finding owns it.
        if (const auto explainer = explainingOwner(grouping, f))
        {
            grouping.groupOf[f] = grouping.groupOf[*explainer];
            continue;
        }
        // Explained by the group that owns most of its time (most of its layers without a profile).
        std::map<std::size_t, std::pair<double, std::size_t>> share;
        for (std::size_t layer : grouping.layersOf[f])
        {
            auto& entry = share[grouping.groupOf[*grouping.owner[layer]]];
            entry.first += report.correlation.layers[layer].timeMs.value_or(0.0);
            ++entry.second;
        }
        auto best = std::max_element(share.begin(), share.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
        grouping.groupOf[f] = best->first;
    }
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        const bool ownsAny =
            std::any_of(grouping.layersOf[f].begin(), grouping.layersOf[f].end(),
                        [&](std::size_t layer) { return grouping.owner[layer] && *grouping.owner[layer] == f; });
        // A symptom stands as a cause of its own where it keeps layers no cause explains, or names none at all.
        if (grouping.isSymptom[f] == 0 || ownsAny || grouping.layersOf[f].empty())
        {
            grouping.members[grouping.groupOf[f]].push_back(f);
        }
    }
}

//! Step 3b: beside its cost (the layers its rule names), a timed finding gets the measured time of the layers it owns,
//! so that these add up to at most the engine's time, a finding owns no more than its root cause, and its saving (at
//! most its layers' time, layer by layer) never exceeds what it owns. Several findings may name one layer, and a
//! cause finding also owns the layers of the symptoms it explains: summed, the costs of
//! `trex-notebooks-yolo-orin-trt852`'s report come to 123% of the engine.
void costOwnedLayers(Report& report, const Grouping& grouping)
{
    std::vector<double> owned(report.findings.size(), 0.0);
    for (std::size_t layer = 0; layer < grouping.owner.size(); ++layer)
    {
        if (grouping.owner[layer] && *grouping.owner[layer] < owned.size())
        {
            owned[*grouping.owner[layer]] += report.correlation.layers[layer].timeMs.value_or(0.0);
        }
    }
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        if (report.findings[f].costMs)
        {
            report.findings[f].ownedMs = owned[f];
        }
    }
}

//! What the fix of `finding` does to `layer`, which it owns.
LayerChange changeOf(const Finding& finding, std::size_t layer, const EnginePlan& plan, const Correlation& correlation)
{
    if (finding.severity == Severity::kInfo)
    {
        return LayerChange::kNothing;
    }
    if (finding.rule == "fp32-island" || finding.rule == "fp32-graph-strongly-typed" ||
        finding.rule == "myelin-head-dominates")
    {
        // myelin-head-dominates: of its fixes, building with FP16 as well is the one whose effect the engine can
        // tell (moving the head out leaves its work to a plugin or the host, which no artifact times).
        return LayerChange::kHalved; // the float part runs FP16: every FP32 tensor of its layers halves
    }
    if (finding.rule == "myelin-body-ran-fp16")
    {
        return LayerChange::kQuantized; // the region's GEMMs run INT8: its float activations become INT8
    }
    const EngineLayer& engineLayer = plan.layers[layer];
    // Placement fixes and the symptoms that stand for themselves (a lone Q/DQ, a reformat, a copy) remove layers;
    // other causes change kernels, which no artifact shows.
    const bool removesLayers = joinsOtherRules(finding.rule) || listed(kSymptomRules, finding.rule);
    switch (correlation.layers[layer].state)
    {
    case LayerState::kDropped:
        return LayerChange::kNothing;
    case LayerState::kInsertedReformat:
        return removesLayers ? LayerChange::kRemoved : LayerChange::kKept;
    case LayerState::kInsertedQdq:
        if (!removesLayers)
        {
            return LayerChange::kKept;
        }
        // The Quantize of a float network input stays: nothing writes its input inside the engine.
        if (!engineLayer.inputs.empty() && !patterns::producerLayer(plan, engineLayer.inputs[0].name) &&
            isQuantized(patterns::outputPrecision(engineLayer)))
        {
            return LayerChange::kNothing;
        }
        return LayerChange::kRemoved;
    case LayerState::kMapped:
    case LayerState::kUnattributed:
        break;
    }
    if (listed(kFusingRules, finding.rule) && !isGemmLike(engineLayer))
    {
        return LayerChange::kRemoved;
    }
    if (listed(kQuantizingRules, finding.rule))
    {
        return LayerChange::kQuantized;
    }
    return LayerChange::kKept;
}

//! What one group's fix saves, summed over its layers, and how.
struct GroupSaving
{
    std::optional<double> ms;
    SavingConfidence confidence = SavingConfidence::kNone;
    std::string basis;
    std::map<std::size_t, double> byFinding; //!< the saving of the layers each finding owns
};

std::string describeSaving(const std::map<LayerSaving::Basis, std::pair<std::size_t, double>>& parts,
                           std::size_t unestimated, const advice::MemorySpeed& speed, const std::string& peers)
{
    std::vector<std::string> pieces;
    using Basis = LayerSaving::Basis;
    if (auto it = parts.find(Basis::kRemovedMeasured); it != parts.end())
    {
        pieces.push_back(std::to_string(it->second.first) + " layer(s) removed or fused away: their measured " +
                         patterns::formatMs(it->second.second));
    }
    if (auto it = parts.find(Basis::kPeerLayer); it != parts.end())
    {
        pieces.push_back(std::to_string(it->second.first) + " layer(s) in the target precision, timed like " + peers +
                         " of this engine: " + patterns::formatMs(it->second.second));
    }
    if (auto it = parts.find(Basis::kBytes); it != parts.end())
    {
        std::ostringstream speedText;
        speedText.precision(3);
        speedText << speed.gigabytesPerSecond();
        pieces.push_back(std::to_string(it->second.first) +
                         " layer(s) move fewer bytes in the target precision, at the " + speedText.str() +
                         " GB/s this engine's " + std::to_string(speed.layers) +
                         " Q/DQ and reformat layers move: " + patterns::formatMs(it->second.second));
    }
    if (auto it = parts.find(Basis::kHalvedTime); it != parts.end())
    {
        pieces.push_back(std::to_string(it->second.first) +
                         " FP32 Myelin layer(s) in FP16: about half their measured time, " +
                         patterns::formatMs(it->second.second) +
                         " (their inner tensors are not in the layer list; a memory-bound region's time halves with "
                         "its bytes)");
    }
    if (auto it = parts.find(Basis::kNothingToDo); it != parts.end())
    {
        pieces.push_back(std::to_string(it->second.first) + " layer(s) with nothing to change");
    }
    if (unestimated > 0)
    {
        pieces.push_back(std::to_string(unestimated) +
                         " layer(s) not estimated (no artifact shows what the fix does to their kernels)");
    }
    std::string text;
    for (const auto& piece : pieces)
    {
        text += (text.empty() ? "" : "; ") + piece;
    }
    return text;
}

//! Step 4.
GroupSaving estimateGroup(const Report& report, const Grouping& grouping, const std::vector<std::size_t>& layers,
                          const advice::SavingEstimator& estimator, const EnginePlan& plan)
{
    GroupSaving result;
    std::map<LayerSaving::Basis, std::pair<std::size_t, double>> parts;
    std::size_t unestimated = 0;
    std::vector<std::string> peers;
    SavingConfidence lowest = SavingConfidence::kHigh;
    double total = 0.0;
    bool any = false;
    for (std::size_t layer : layers)
    {
        const std::size_t finding = *grouping.owner[layer];
        LayerSaving saving =
            estimator.estimate(layer, changeOf(report.findings[finding], layer, plan, report.correlation));
        if (!saving.ms)
        {
            unestimated += report.correlation.layers[layer].timeMs.value_or(0.0) > 0.0 ? 1 : 0;
            continue;
        }
        any = true;
        total += *saving.ms;
        result.byFinding[finding] += *saving.ms;
        auto& part = parts[saving.basis];
        ++part.first;
        part.second += *saving.ms;
        if (saving.basis == LayerSaving::Basis::kPeerLayer && peers.size() < 2)
        {
            peers.push_back("\"" + plan.layers[saving.peer].name + "\"");
        }
        if (*saving.ms > 0.0 && saving.confidence < lowest)
        {
            lowest = saving.confidence;
        }
    }
    if (!any)
    {
        result.basis = unestimated > 0 ? describeSaving(parts, unestimated, estimator.memorySpeed(), "")
                                       : "no engine layer with a measured time";
        double owned = 0.0;
        for (std::size_t layer : layers)
        {
            owned += report.correlation.layers[layer].timeMs.value_or(0.0);
        }
        if (owned > 0.0)
        {
            // The bound that holds whatever the fix does to the kernels: it cannot save more than its layers take.
            result.basis += "; at most " + patterns::formatMs(owned) + ", the measured time of the layers it owns";
        }
        return result;
    }
    result.ms = total;
    result.confidence = total > 0.0 ? lowest : SavingConfidence::kHigh;
    result.basis = describeSaving(parts, unestimated, estimator.memorySpeed(), patterns::nameList(peers, 2));
    return result;
}

std::string titleOf(const Report& report, const std::vector<std::size_t>& findings)
{
    std::map<std::string, std::size_t> countByRule;
    for (std::size_t f : findings)
    {
        ++countByRule[report.findings[f].rule];
    }
    std::vector<std::pair<std::string, std::size_t>> rules(countByRule.begin(), countByRule.end());
    std::stable_sort(rules.begin(), rules.end(),
                     [](const auto& a, const auto& b) { return rootRank(a.first) < rootRank(b.first); });
    std::string title;
    for (const auto& [rule, count] : rules)
    {
        title += (title.empty() ? "" : " + ") + rule + (count > 1 ? " (" + std::to_string(count) + ")" : "");
    }
    return title;
}

//! Builds the root causes from the groups, unordered.
//! Per group: the layers it owns (in layer order) and the symptoms that name one of them or joined it. One pass over
//! the layers and one over the findings: a 100,000-layer engine may have thousands of findings.
struct GroupContents
{
    std::map<std::size_t, std::vector<std::size_t>> layers;
    std::map<std::size_t, std::vector<std::size_t>> symptoms;
};

GroupContents contentsOf(const Report& report, const Grouping& grouping)
{
    GroupContents contents;
    for (std::size_t layer = 0; layer < grouping.owner.size(); ++layer)
    {
        if (grouping.owner[layer])
        {
            contents.layers[grouping.groupOf[*grouping.owner[layer]]].push_back(layer);
        }
    }
    std::vector<char> member(report.findings.size(), 0);
    for (const auto& [group, findings] : grouping.members)
    {
        for (std::size_t f : findings)
        {
            member[f] = 1;
        }
    }
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        if (grouping.isSymptom[f] == 0)
        {
            continue;
        }
        std::vector<std::size_t> groups;
        if (member[f] == 0)
        {
            groups.push_back(grouping.groupOf[f]);
        }
        // A symptom placed by its explanation is listed there only, not under the groups owning its own layers.
        const bool placedByExplanation = member[f] == 0 && explainingOwner(grouping, f).has_value();
        for (std::size_t layer : placedByExplanation ? std::span<const std::size_t>{} : grouping.layersOf[f])
        {
            if (grouping.owner[layer] && *grouping.owner[layer] != f)
            {
                groups.push_back(grouping.groupOf[*grouping.owner[layer]]);
            }
        }
        std::sort(groups.begin(), groups.end());
        groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
        for (std::size_t group : groups)
        {
            // A member of the group is one of its causes, not a symptom of it.
            const auto& members =
                grouping.members.count(group) > 0 ? grouping.members.at(group) : std::vector<std::size_t>{};
            if (std::find(members.begin(), members.end(), f) == members.end())
            {
                contents.symptoms[group].push_back(f);
            }
        }
    }
    return contents;
}

std::vector<RootCause> buildCauses(Report& report, const Grouping& grouping, const Inputs& inputs)
{
    const EnginePlan* plan = inputs.engine();
    std::optional<advice::SavingEstimator> estimator;
    if (plan != nullptr && inputs.timings() != nullptr)
    {
        estimator.emplace(*plan, report.correlation);
    }
    GroupContents contents = contentsOf(report, grouping);
    std::vector<RootCause> causes;
    for (const auto& [group, findings] : grouping.members)
    {
        RootCause cause;
        cause.findings = findings;
        std::stable_sort(cause.findings.begin(), cause.findings.end(),
                         [&](std::size_t a, std::size_t b)
                         { return rootRank(report.findings[a].rule) < rootRank(report.findings[b].rule); });
        cause.title = titleOf(report, findings);
        cause.severity = Severity::kInfo;
        for (std::size_t f : findings)
        {
            if (severityRank(report.findings[f].severity) < severityRank(cause.severity))
            {
                cause.severity = report.findings[f].severity;
            }
        }
        cause.layers = std::move(contents.layers[group]);
        for (std::size_t layer : cause.layers)
        {
            cause.involvedMs += report.correlation.layers[layer].timeMs.value_or(0.0);
        }
        cause.symptoms = std::move(contents.symptoms[group]);
        if (estimator)
        {
            GroupSaving saving = estimateGroup(report, grouping, cause.layers, *estimator, *plan);
            cause.savingMs = saving.ms;
            cause.confidence = saving.confidence;
            cause.basis = saving.basis;
            for (std::size_t f : findings)
            {
                Finding& finding = report.findings[f];
                auto it = saving.byFinding.find(f);
                finding.savingMs = it != saving.byFinding.end() ? std::optional<double>(it->second)
                                   : saving.ms                  ? std::optional<double>(0.0)
                                                                : std::nullopt;
            }
        }
        else
        {
            cause.basis = "not estimated: savings need the engine's layer list and profile";
        }
        causes.push_back(std::move(cause));
    }
    return causes;
}

//! One plan: a symptom's own advice would act on the effect (quantize the input of a layer the builder inserted, make
//! a float pooling INT8 where the cause says to keep Q/DQ out of the ConvActPool chain); it points to its cause
//! instead.
void deferSymptomAdvice(Report& report)
{
    for (Finding& finding : report.findings)
    {
        if (!finding.symptom || !finding.rootCause || *finding.rootCause >= report.causes.size())
        {
            continue;
        }
        const RootCause& cause = report.causes[*finding.rootCause];
        // Only under a cause whose fix is a change to the model: a symptom under another symptom (an input reformat
        // under the input's standalone Quantize) has the more specific advice, and an info symptom asks for nothing.
        const bool realCause =
            std::any_of(cause.findings.begin(), cause.findings.end(),
                        [&](std::size_t f) { return !listed(kSymptomRules, report.findings[f].rule); });
        if (cause.findings.empty() || !realCause || finding.severity == Severity::kInfo)
        {
            continue;
        }
        finding.fix = "an effect of " + cause.title + " (root cause " + std::to_string(*finding.rootCause + 1) +
                      ", finding " + std::to_string(cause.findings.front() + 1) +
                      " of the diagnose report): fixed with it, not a change of its own";
    }
}

//! 0: a saving estimated above zero; 1: not estimated; 2: estimated to save nothing.
int savingRank(const RootCause& cause)
{
    if (!cause.savingMs)
    {
        return 1;
    }
    return *cause.savingMs > 0.0 ? 0 : 2;
}

//! Step 5: causes worst severity first, then by saving (not estimated after a positive saving, before none), then by
//! time involved, then (nothing timed) by the layers owned; findings by cause.
void orderReport(Report& report, std::vector<RootCause> causes, const Grouping& grouping)
{
    std::stable_sort(causes.begin(), causes.end(),
                     [](const RootCause& a, const RootCause& b)
                     {
                         if (severityRank(a.severity) != severityRank(b.severity))
                         {
                             return severityRank(a.severity) < severityRank(b.severity);
                         }
                         // A saving estimated above zero first; then the causes whose saving is not estimated
                         // (they may save up to the time they own); a cause that saves nothing last.
                         if (savingRank(a) != savingRank(b))
                         {
                             return savingRank(a) < savingRank(b);
                         }
                         if (a.savingMs.value_or(0.0) != b.savingMs.value_or(0.0))
                         {
                             return a.savingMs.value_or(0.0) > b.savingMs.value_or(0.0);
                         }
                         if (a.involvedMs != b.involvedMs)
                         {
                             return a.involvedMs > b.involvedMs;
                         }
                         // Without a profile nothing is timed: the cause owning more layers first.
                         return a.layers.size() > b.layers.size();
                     });
    std::vector<std::size_t> newIndex(report.findings.size(), 0);
    std::vector<std::size_t> order;
    std::vector<char> placed(report.findings.size(), 0);
    std::vector<char> isCause(report.findings.size(), 0);
    for (const RootCause& cause : causes)
    {
        for (std::size_t f : cause.findings)
        {
            isCause[f] = 1;
        }
    }
    for (std::size_t c = 0; c < causes.size(); ++c)
    {
        for (std::size_t f : causes[c].findings)
        {
            report.findings[f].rootCause = c;
            report.findings[f].symptom = false;
            placed[f] = 1;
            order.push_back(f);
        }
        std::vector<std::size_t> primary;
        for (std::size_t f : causes[c].symptoms)
        {
            // A symptom that owns nothing is placed under the cause it joined in claimLayers.
            if (placed[f] == 0 && isCause[f] == 0 &&
                grouping.groupOf[f] == grouping.groupOf[causes[c].findings.front()])
            {
                report.findings[f].rootCause = c;
                report.findings[f].symptom = true;
                report.findings[f].savingMs = causes[c].savingMs ? std::optional<double>(0.0) : std::nullopt;
                report.findings[f].savingBasis = "counted under its root cause";
                placed[f] = 1;
                primary.push_back(f);
            }
        }
        order.insert(order.end(), primary.begin(), primary.end());
    }
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        if (placed[f] == 0)
        {
            order.push_back(f); // not reached: every finding is a cause or joined one; kept so none is lost
        }
    }
    for (std::size_t i = 0; i < order.size(); ++i)
    {
        newIndex[order[i]] = i;
    }
    std::vector<Finding> reordered;
    reordered.reserve(order.size());
    for (std::size_t f : order)
    {
        reordered.push_back(std::move(report.findings[f]));
    }
    report.findings = std::move(reordered);
    for (RootCause& cause : causes)
    {
        for (auto* list : {&cause.findings, &cause.symptoms})
        {
            for (std::size_t& f : *list)
            {
                f = newIndex[f];
            }
        }
    }
    report.causes = std::move(causes);
    deferSymptomAdvice(report);
}

} // namespace

void attributeRootCauses(Report& report, const Inputs& inputs)
{
    report.causes.clear();
    if (report.findings.empty())
    {
        return;
    }
    const EnginePlan* plan = inputs.engine();
    const std::size_t layerCount =
        plan != nullptr ? std::min(plan->layers.size(), report.correlation.layers.size()) : std::size_t{0};
    Grouping grouping;
    classifyFindings(report, layerCount > 0 ? plan : nullptr, grouping);
    for (auto& layers : grouping.layersOf)
    {
        layers.erase(std::remove_if(layers.begin(), layers.end(), [&](std::size_t l) { return l >= layerCount; }),
                     layers.end());
    }
    groupCauses(report, layerCount, grouping);
    claimLayers(report, layerCount, grouping);
    costOwnedLayers(report, grouping);
    std::vector<RootCause> causes = buildCauses(report, grouping, inputs);
    for (RootCause& cause : causes)
    {
        for (std::size_t f : cause.findings)
        {
            Finding& finding = report.findings[f];
            if (finding.savingBasis.empty())
            {
                finding.savingBasis = cause.basis;
            }
        }
    }
    orderReport(report, std::move(causes), grouping);
}

} // namespace qdq
