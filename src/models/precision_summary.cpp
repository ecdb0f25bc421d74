// The precision summary (precision_summary.h): time and layers by precision and by layer kind, tensor-core share,
// and how many quantized operations run in INT8.
#include "qdq/precision_summary.h"
#include "qdq/quantized_types.h"

#include "qdq/layer_names.h"
#include "qdq/patterns.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <unordered_map>

namespace qdq
{

namespace
{

std::string lowerCase(std::string_view text)
{
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return lower;
}

bool contains(std::string_view haystack, std::string_view needle)
{
    return haystack.find(needle) != std::string_view::npos;
}

//! The "tensorMxNxK" token of an xmma name, or "tensor".
std::string tensorToken(std::string_view lower, std::size_t at)
{
    std::size_t end = at + 6;
    while (end < lower.size() && (std::isdigit(static_cast<unsigned char>(lower[end])) || lower[end] == 'x'))
    {
        ++end;
    }
    return std::string(lower.substr(at, end - at));
}

} // namespace

std::string_view tensorCoreUseName(TensorCoreUse use)
{
    switch (use)
    {
    case TensorCoreUse::kYes:
        return "tensor-core";
    case TensorCoreUse::kNo:
        return "cuda-core";
    case TensorCoreUse::kUnknown:
        break;
    }
    return "unknown";
}

KernelClass classifyKernel(std::string_view kernelName)
{
    KernelClass result;
    if (kernelName.empty())
    {
        return result;
    }
    const std::string lower = lowerCase(kernelName);
    // CUDA-core markers first: a DP4A name such as "ampere_fp32_icudnn_int8x4_..." also names a float type.
    static constexpr std::array<std::string_view, 7> kCudaCore = {"simt",   "ffma", "int8x4", "icudnn",
                                                                  "scudnn", "gemv", "dp4a"};
    for (std::string_view marker : kCudaCore)
    {
        if (contains(lower, marker))
        {
            result.use = TensorCoreUse::kNo;
            result.marker = std::string(marker);
            return result;
        }
    }
    if (std::size_t at = lower.find("tensor"); at != std::string::npos)
    {
        result.use = TensorCoreUse::kYes;
        result.marker = tensorToken(lower, at); // "tensorop" (cutlass) or "tensor16x8x32" (xmma)
        if (contains(lower, "tensorop"))
        {
            result.marker = "tensorop";
        }
        return result;
    }
    // cuDNN/cutlass MMA shapes: h884/h1688/h16816 (FP16), i8816 (INT8), s1688/s16816 (TF32); hmma/imma by name.
    static constexpr std::array<std::string_view, 10> kTensorCore = {"hmma",   "imma",  "i8816",  "h884", "h1688",
                                                                     "h16816", "s1688", "s16816", "_mha", "wgmma"};
    for (std::string_view marker : kTensorCore)
    {
        if (contains(lower, marker))
        {
            result.use = TensorCoreUse::kYes;
            result.marker = std::string(marker[0] == '_' ? marker.substr(1) : marker);
            return result;
        }
    }
    // Architectures without tensor cores (Maxwell, Pascal) name their kernels sm5x/sm6x.
    for (std::string_view prefix : {"sm50_", "sm52_", "sm53_", "sm60_", "sm61_", "sm62_", "maxwell_", "pascal_"})
    {
        if (lower.rfind(prefix, 0) == 0)
        {
            result.use = TensorCoreUse::kNo;
            result.marker = std::string(prefix.substr(0, prefix.size() - 1));
            return result;
        }
    }
    return result;
}

KernelName kernelNameOf(const Inputs& inputs, std::size_t layer)
{
    KernelName result;
    const EnginePlan* plan = inputs.engine();
    if (plan == nullptr || layer >= plan->layers.size())
    {
        return result;
    }
    const EngineLayer& entry = plan->layers[layer];
    if (!entry.tacticName.empty())
    {
        auto [file, line] = plan->factSource(layer, LayerFact::kTactic);
        result.name = entry.tacticName;
        result.source = "TacticName";
        result.file = std::string(file);
        result.line = line;
        return result;
    }
    if (!inputs.buildLog)
    {
        return result;
    }
    // The build log's tactic choice for a layer of that name: the one with the layer's tactic value when the layer
    // tells it, else the last one timed.
    const TacticChoice* chosen = nullptr;
    for (const TacticChoice& choice : inputs.buildLog->tactics)
    {
        if (choice.tacticName.empty() || choice.layer != entry.baseName())
        {
            continue;
        }
        if (!entry.tacticValue.empty() && choice.tactic == entry.tacticValue)
        {
            chosen = &choice;
            break;
        }
        chosen = &choice;
    }
    if (chosen != nullptr)
    {
        result.name = chosen->tacticName;
        result.source = "build log";
        result.file = inputs.buildLog->sourcePath;
        result.line = chosen->line;
    }
    return result;
}

namespace
{

//! The kind of a lower-cased LayerType.
std::string_view kindOfType(const std::string& type)
{
    struct Kind
    {
        std::string_view marker;
        std::string_view kind;
    };
    // Order matters: "CaskGemmConvolution" is a convolution, "GemmDeconvolution" a deconvolution, "conv_act_pool" a
    // convolution with its pooling.
    // TensorRT 11 Myelin types (../shared/realdata/FORMATS-trt11.md J10, J11): "correlation" is Myelin's convolution;
    // "custom_layer" the builder's L2-cache management kernels, which run no layer of the network.
    static constexpr std::array<Kind, 35> kKinds = {{{"deconv", "deconvolution"},
                                                     {"conv", "convolution"},
                                                     {"correlation", "convolution"},
                                                     {"custom_layer", "L2 cache (builder)"},
                                                     {"gemm", "gemm"},
                                                     {"matrixmultiply", "gemm"},
                                                     {"fullyconnected", "gemm"},
                                                     {"matmul", "gemm"},
                                                     {"pointwise", "pointwise"},
                                                     {"elementwise", "pointwise"},
                                                     {"activation", "pointwise"},
                                                     {"unary", "pointwise"},
                                                     {"scale", "pointwise"},
                                                     {"pool", "pooling"},
                                                     {"norm", "normalization"},
                                                     {"softmax", "softmax"},
                                                     {"topk", "softmax"},
                                                     {"reduce", "reduce"},
                                                     {"resize", "resize"},
                                                     {"shuffle", "shuffle"},
                                                     {"slice", "slice"},
                                                     {"concat", "concatenation"},
                                                     {"padding", "padding"},
                                                     {"reformat", "reformat"},
                                                     {"plugin", "plugin"},
                                                     {"myelin", "myelin"},
                                                     {"kgen", "myelin"},
                                                     {"fusion", "myelin"},
                                                     {"shape_call", "myelin"},
                                                     {"noop", "bookkeeping"},
                                                     {"trainstation", "bookkeeping"},
                                                     {"signal", "bookkeeping"},
                                                     {"wait", "bookkeeping"},
                                                     {"constant", "bookkeeping"},
                                                     {"gather", "shuffle"}}};
    for (const Kind& kind : kKinds)
    {
        if (contains(type, kind.marker))
        {
            return kind.kind;
        }
    }
    return "other";
}

} // namespace

std::string_view layerKind(const EngineLayer& layer, LayerState state)
{
    if (state == LayerState::kInsertedQdq)
    {
        return "quantize/dequantize";
    }
    if (state == LayerState::kInsertedReformat)
    {
        const bool copy = layer.name.size() > 5 && layer.name.compare(layer.name.size() - 5, 5, " copy") == 0;
        return copy ? "copy" : "reformat";
    }
    if (layer.type.empty())
    {
        return "unknown";
    }
    // The kind is a function of the LayerType alone, and an engine repeats a handful of them: each thread remembers
    // the ones it has seen (a 100,000-layer engine would otherwise lower-case and search each type 100,000 times).
    thread_local std::unordered_map<std::string, std::string_view> known;
    if (auto found = known.find(layer.type); found != known.end())
    {
        return found->second;
    }
    if (known.size() > 4096)
    {
        known.clear(); // a hostile list with endless distinct types: keep the memory bounded
    }
    std::string_view& result = known[layer.type];
    result = kindOfType(lowerCase(layer.type));
    return result;
}

bool isMatrixKind(std::string_view kind)
{
    return kind == "convolution" || kind == "deconvolution" || kind == "gemm";
}

std::string layerPrecisionLabel(const EngineLayer& layer, LayerState state)
{
    if (layer.type == "custom_layer")
    {
        // TensorRT 11's L2-cache layers read UInt8/UInt64 cache policies, not data (FORMATS-trt11.md J4, J10).
        return "none";
    }
    if (layer.weightsPrecision && *layer.weightsPrecision != Precision::kUnknown)
    {
        return std::string(precisionName(*layer.weightsPrecision));
    }
    const Precision in = patterns::inputPrecision(layer);
    const Precision out = patterns::outputPrecision(layer);
    if ((state == LayerState::kInsertedQdq || state == LayerState::kInsertedReformat) && in != Precision::kUnknown &&
        out != Precision::kUnknown && in != out)
    {
        return std::string(precisionName(in)) + "->" + std::string(precisionName(out));
    }
    for (const EngineTensor& tensor : layer.inputs)
    {
        if (isQuantized(tensor.precision))
        {
            return std::string(precisionName(tensor.precision));
        }
    }
    if (in != Precision::kUnknown)
    {
        return std::string(precisionName(in));
    }
    if (out != Precision::kUnknown)
    {
        return std::string(precisionName(out));
    }
    if (!layer.type.empty() && layer.inputs.empty() && layer.outputs.empty())
    {
        // A typed record with no tensors at all (Myelin's shape_call: "Inputs: [], Outputs: []",
        // ../shared/realdata/cookbook11-mnist-fp32-inspector-b200/log-main.py.log:9): it has no precision to know.
        return "none";
    }
    return "unknown";
}

namespace
{

constexpr std::string_view kUnmatched = "unmatched profile entries";
constexpr std::size_t kNamesShown = 10;

using GroupMap = std::map<std::string, PrecisionSummary::Group, std::less<>>;

//! Adds layers to the groups of a map; consecutive layers mostly fall in the same group, which it remembers.
class GroupAdder
{
public:
    explicit GroupAdder(GroupMap& groups) : mGroups(groups) {}
    void add(std::string_view name, double ms)
    {
        if (mLast == nullptr || name != mLast->name)
        {
            auto found = mGroups.find(name);
            if (found == mGroups.end())
            {
                found = mGroups.emplace(std::string(name), PrecisionSummary::Group{std::string(name), 0, 0.0}).first;
            }
            mLast = &found->second; // map nodes stay where they are
        }
        ++mLast->layers;
        mLast->ms += ms;
    }

private:
    GroupMap& mGroups;
    PrecisionSummary::Group* mLast = nullptr;
};

std::vector<PrecisionSummary::Group> sorted(GroupMap& groups)
{
    std::vector<PrecisionSummary::Group> list;
    list.reserve(groups.size());
    for (auto& entry : groups)
    {
        list.push_back(std::move(entry.second));
    }
    std::sort(list.begin(), list.end(),
              [](const PrecisionSummary::Group& a, const PrecisionSummary::Group& b)
              {
                  if (a.ms != b.ms)
                  {
                      return a.ms > b.ms;
                  }
                  if (a.layers != b.layers)
                  {
                      return a.layers > b.layers;
                  }
                  return a.name < b.name;
              });
    return list;
}

enum class Int8Verdict
{
    kInt8,
    kFloat,
    kUnknown,
};

//! Whether the layers executing an operation run it in INT8: an INT8 (or other quantized) input or weights.
Int8Verdict verdictOf(const EnginePlan& plan, std::span<const std::size_t> layers)
{
    bool typed = false;
    for (std::size_t index : layers)
    {
        const EngineLayer& layer = plan.layers[index];
        if (layer.weightsPrecision && isQuantized(*layer.weightsPrecision))
        {
            return Int8Verdict::kInt8;
        }
        for (const EngineTensor& tensor : layer.inputs)
        {
            if (isQuantized(tensor.precision))
            {
                return Int8Verdict::kInt8;
            }
            typed = typed || tensor.precision != Precision::kUnknown;
        }
    }
    return typed ? Int8Verdict::kFloat : Int8Verdict::kUnknown;
}

void countInt8(PrecisionSummary::Int8& int8, Int8Verdict verdict, std::string_view name)
{
    ++int8.quantized;
    switch (verdict)
    {
    case Int8Verdict::kInt8:
        ++int8.int8;
        break;
    case Int8Verdict::kFloat:
        ++int8.notInt8;
        if (int8.notInt8Names.size() < kNamesShown)
        {
            int8.notInt8Names.emplace_back(name);
        }
        break;
    case Int8Verdict::kUnknown:
        ++int8.unknown;
        break;
    }
}

void summarizeInt8(PrecisionSummary& summary, const Report& report, const Inputs& inputs, const EnginePlan& plan)
{
    PrecisionSummary::Int8& int8 = summary.int8;
    const Correlation& correlation = report.correlation;
    if (correlation.layers.size() != plan.layers.size())
    {
        return;
    }
    if (inputs.onnx)
    {
        // The operations the model quantizes: every node other than Q/DQ with a DequantizeLinear on an input.
        const OnnxGraph& graph = *inputs.onnx;
        int8.basis = "model";
        for (const OnnxNode& node : graph.nodes)
        {
            if (patterns::isQdq(node) || node.opType == "Constant")
            {
                continue;
            }
            bool quantized = false;
            for (std::uint32_t id : graph.inputIds(node.index))
            {
                const OnnxNode* producer = id == OnnxGraph::kNone ? nullptr : graph.producerOf(id);
                if (producer != nullptr && patterns::isDequantize(*producer))
                {
                    quantized = true;
                    break;
                }
            }
            if (!quantized)
            {
                continue;
            }
            auto layers = correlation.layersOfNode.findNode(static_cast<std::uint32_t>(node.index));
            countInt8(int8, layers.empty() ? Int8Verdict::kUnknown : verdictOf(plan, layers), node.name);
        }
    }
    else
    {
        // Without a model: the engine layers that absorbed a Q/DQ node (an input DequantizeLinear, or a weight
        // Quantize folded into their weights).
        int8.basis = "engine";
        std::vector<char> absorbed(plan.layers.size(), 0);
        for (const QdqNodeState& node : correlation.qdqNodes)
        {
            if ((node.state == QdqState::kFused || node.state == QdqState::kFolded) && node.layer &&
                *node.layer < absorbed.size())
            {
                absorbed[*node.layer] = 1;
            }
        }
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            if (absorbed[i] != 0 && correlation.layers[i].state == LayerState::kMapped)
            {
                const std::size_t one[1] = {i};
                countInt8(int8, verdictOf(plan, one), plan.layers[i].name);
            }
        }
    }
    if (int8.quantized == 0)
    {
        int8.basis.clear();
    }
    if (int8.int8 + int8.notInt8 > 0)
    {
        int8.share = static_cast<double>(int8.int8) / static_cast<double>(int8.int8 + int8.notInt8);
    }
}

//! The kernel each layer runs and whether it uses tensor cores. The kernel is the layer list's TacticName, else the
//! build log's tactic choice: by layer (the last one timed) and by layer and tactic (a layer timed in several format
//! combinations has one choice each, and the engine runs the one with its tactic value, as kernelNameOf picks it).
class KernelLookup
{
public:
    explicit KernelLookup(const Inputs& inputs)
    {
        if (!inputs.buildLog)
        {
            return;
        }
        for (const TacticChoice& choice : inputs.buildLog->tactics)
        {
            if (!choice.tacticName.empty())
            {
                mLogChoices[choice.layer] = &choice;
                mLogChoicesByTactic[tacticKey(choice.layer, choice.tactic)] = &choice;
            }
        }
    }

    std::string_view kernelOf(const EngineLayer& layer)
    {
        std::string_view kernel = layer.tacticName;
        if (kernel.empty() && !mLogChoices.empty())
        {
            auto exact = layer.tacticValue.empty()
                             ? mLogChoicesByTactic.end()
                             : mLogChoicesByTactic.find(tacticKey(layer.baseName(), layer.tacticValue));
            auto found = mLogChoices.find(layer.baseName());
            if (exact != mLogChoicesByTactic.end())
            {
                kernel = exact->second->tacticName;
                fromLog = true;
            }
            else if (found != mLogChoices.end())
            {
                kernel = found->second->tacticName;
                fromLog = true;
            }
        }
        else if (!kernel.empty())
        {
            fromTacticName = true;
        }
        return kernel;
    }

    //! Kernel names repeat (one tactic for many layers): each is classified once.
    TensorCoreUse useOf(std::string_view kernel)
    {
        if (kernel.empty())
        {
            return TensorCoreUse::kUnknown;
        }
        if (kernel == mLastKernel)
        {
            return mLastUse;
        }
        auto [found, inserted] = mClasses.try_emplace(kernel);
        if (inserted)
        {
            found->second = classifyKernel(kernel);
        }
        mLastKernel = kernel;
        mLastUse = found->second.use;
        return mLastUse;
    }

    bool fromTacticName = false; //!< a kernel came from the layer list
    bool fromLog = false;        //!< a kernel came from the build log

private:
    static std::string tacticKey(std::string_view layerName, std::string_view tactic)
    {
        std::string key(layerName);
        key.append(1, '\x1f').append(tactic);
        return key;
    }

    std::unordered_map<std::string_view, KernelClass> mClasses;
    std::unordered_map<std::string_view, const TacticChoice*> mLogChoices;
    std::unordered_map<std::string, const TacticChoice*> mLogChoicesByTactic;
    std::string_view mLastKernel;
    TensorCoreUse mLastUse = TensorCoreUse::kUnknown;
};

void countTensorCoreUse(PrecisionSummary::TensorCores& cores, TensorCoreUse use, double ms, std::string_view kind)
{
    switch (use)
    {
    case TensorCoreUse::kYes:
        ++cores.yesLayers;
        cores.yesMs += ms;
        break;
    case TensorCoreUse::kNo:
        ++cores.noLayers;
        cores.noMs += ms;
        break;
    case TensorCoreUse::kUnknown:
        ++cores.unknownLayers;
        cores.unknownMs += ms;
        break;
    }
    if (isMatrixKind(kind))
    {
        ++cores.matrixLayers;
        cores.matrixNoLayers += use == TensorCoreUse::kNo ? 1 : 0;
    }
}

//! Every listed layer's time by precision and by kind, and its tensor-core use. Returns the time in listed layers.
double tallyLayers(PrecisionSummary& summary, const Report& report, const EnginePlan& plan, KernelLookup& kernels,
                   GroupMap& byPrecision, GroupMap& byKind)
{
    double inLayers = 0.0;
    GroupAdder precisionAdder(byPrecision);
    GroupAdder kindAdder(byKind);
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        const EngineLayer& layer = plan.layers[i];
        const LayerMapping& mapping = report.correlation.layers[i];
        const double ms = summary.hasTimings ? mapping.timeMs.value_or(0.0) : 0.0;
        inLayers += ms;
        const std::string_view kind = layerKind(layer, mapping.state);
        precisionAdder.add(layerPrecisionLabel(layer, mapping.state), ms);
        kindAdder.add(kind, ms);
        const TensorCoreUse use = kernels.useOf(kernels.kernelOf(layer));
        countTensorCoreUse(summary.tensorCores, use, ms, kind);
    }
    return inLayers;
}

//! The groupings, sorted. With a profile, its entries that match no listed layer (Myelin's internal kernels, a
//! profile of another build) are one group of their own, so every grouping adds up to the profile's total.
void finishGroups(PrecisionSummary& summary, const EnginePlan* plan, double inLayers, GroupMap& byPrecision,
                  GroupMap& byKind)
{
    if (summary.hasTimings)
    {
        const double rest = summary.totalMs - inLayers;
        if (std::abs(rest) > 1e-9 || plan == nullptr)
        {
            PrecisionSummary::Group group{std::string(kUnmatched), 0, rest};
            summary.tensorCores.unknownMs += rest;
            auto precision = sorted(byPrecision);
            auto kind = sorted(byKind);
            precision.push_back(group);
            kind.push_back(group);
            summary.byPrecision = std::move(precision);
            summary.byKind = std::move(kind);
            summary.notes.push_back(plan == nullptr
                                        ? std::string("no layer list: the profile's time is not split by layer")
                                        : "profile entries that match no engine layer take " +
                                              patterns::formatMs(rest) + " of the total");
        }
    }
    if (summary.byPrecision.empty() && summary.byKind.empty())
    {
        summary.byPrecision = sorted(byPrecision);
        summary.byKind = sorted(byKind);
    }
}

//! Where the kernel names came from, and the tensor-core share of the total time when they and times are there.
void describeTensorCoreEvidence(PrecisionSummary& summary, const EnginePlan* plan, const KernelLookup& kernels)
{
    auto& cores = summary.tensorCores;
    if (kernels.fromTacticName || kernels.fromLog)
    {
        cores.evidence = kernels.fromTacticName && kernels.fromLog
                             ? "TacticName of the layer list and the build log's tactic choices"
                         : kernels.fromTacticName ? "the layer list's TacticName"
                                                  : "the build log's tactic choices";
        if (summary.hasTimings && summary.totalMs > 0.0)
        {
            cores.share = cores.yesMs / summary.totalMs;
        }
    }
    else if (plan != nullptr)
    {
        cores.evidence = plan->form == LayerListForm::kNamesOnly
                             ? "no kernel names: the layer list has names only (export it with trtexec "
                               "--profilingVerbosity=detailed --exportLayerInfo)"
                             : "no kernel names: the layer list has no TacticName (exported without "
                               "--profilingVerbosity=detailed, or an older TensorRT)";
        summary.notes.push_back("tensor-core share unknown: " + cores.evidence);
    }
}

} // namespace

//! The model's Q/DQ nodes by quantized type, and the label of the types the quantized operations run in.
static void summarizeQuantizedTypes(PrecisionSummary& summary, const Inputs& inputs)
{
    if (!inputs.onnx)
    {
        return;
    }
    std::string label;
    for (const QuantizedTypeCount& count : countQuantizedTypes(*inputs.onnx))
    {
        summary.quantizedTypes.push_back({std::string(quantizedTypeLabel(count.type)), count.nodes, 0.0});
        label += (label.empty() ? "" : "/") + std::string(quantizedTypeLabel(count.type));
    }
    if (!label.empty())
    {
        summary.quantizedLabel = label;
    }
}

PrecisionSummary summarizePrecision(const Report& report, const Inputs& inputs)
{
    PrecisionSummary summary;
    summarizeQuantizedTypes(summary, inputs);
    const EnginePlan* plan = inputs.engine();
    const Profile* profile = inputs.timings();
    summary.hasTimings = profile != nullptr;
    if (summary.hasTimings)
    {
        summary.totalMs = profile->totalAverageMs();
    }
    GroupMap byPrecision;
    GroupMap byKind;
    double inLayers = 0.0;
    KernelLookup kernels(inputs);
    if (plan != nullptr && report.correlation.layers.size() == plan->layers.size())
    {
        summary.layers = plan->layers.size();
        inLayers = tallyLayers(summary, report, *plan, kernels, byPrecision, byKind);
        summarizeInt8(summary, report, inputs, *plan);
    }
    finishGroups(summary, plan, inLayers, byPrecision, byKind);
    describeTensorCoreEvidence(summary, plan, kernels);
    return summary;
}

} // namespace qdq
