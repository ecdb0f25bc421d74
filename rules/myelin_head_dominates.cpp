// myelin-head-dominates: a Myelin layer (`{ForeignNode[first...last]}`, LayerType Myelin, `__myl_` kernels) that runs
// after the engine's last convolution or matrix layer, that takes a large share of the engine's time and that (or a
// layer after it) selects boxes (TopK, NMS): the detection post-processing (box decode, top-k, NMS-like ops)
// compiled into one layer, usually in float
// (docs/rules/myelin-head-dominates.md).
#include "rules/build_mode_advice.h"
#include "rules/kernel_common.h"
#include "rules/rules.h"

#include <string>

namespace qdq::rules
{

namespace
{

using namespace patterns;

//! The share of the engine's time above which a post-processing Myelin layer is reported. qdq-doctor's choice, not a
//! TensorRT limit: at 15% removing the layer saves more than the usual gain of one precision step on the backbone's
//! largest layer; the real YOLO build (trex-notebooks-yolo-orin-trt852) has 28%.
constexpr double kDominantShare = 0.15;

//! A layer that TensorRT's Myelin compiler built: LayerType "Myelin", its `{ForeignNode[...]}` name, or a `__myl_`
//! kernel (NVIDIA/TensorRT issue 2308: ForeignNode layers are Myelin's).
bool isMyelin(const EngineLayer& layer)
{
    return layer.type == "Myelin" || layer.name.starts_with("{ForeignNode[") ||
           layer.tacticName.find("__myl_") != std::string::npos;
}

//! A convolution, deconvolution or matrix multiplication layer that is no Myelin layer.
bool isMatrixLayer(const EngineLayer& layer)
{
    if (isMyelin(layer))
    {
        return false;
    }
    if (layer.type.find("Convolution") != std::string::npos || layer.type.find("MatrixMultiply") != std::string::npos ||
        layer.type.find("Gemm") != std::string::npos)
    {
        return true;
    }
    return layer.type.empty() &&
           (layerNameHas(layer, "Conv") || layerNameHas(layer, "Gemm") || layerNameHas(layer, "MatMul"));
}

bool allFloat(const std::vector<EngineTensor>& tensors)
{
    bool any = false;
    for (const auto& tensor : tensors)
    {
        if (tensor.precision == Precision::kFP32)
        {
            any = true;
        }
        else if (tensor.precision == Precision::kFP16 || tensor.precision == Precision::kINT8 ||
                 tensor.precision == Precision::kBF16 || tensor.precision == Precision::kFP8)
        {
            return false;
        }
    }
    return any;
}

bool engineHasHalf(const EnginePlan& plan)
{
    for (const auto& layer : plan.layers)
    {
        for (const auto& tensor : layer.outputs)
        {
            if (tensor.precision == Precision::kFP16)
            {
                return true;
            }
        }
    }
    return false;
}

//! Whether the layers from `from` on select boxes: a TopK or NMS layer (LayerType, or the ONNX op in its name), or a
//! tensor written by a TopK or NonMaxSuppression node. What tells post-processing apart from network work that Myelin
//! also compiles after the last convolution (a transformer decoder, BEV heads).
bool selectsBoxes(const EnginePlan& plan, std::size_t from)
{
    static constexpr std::string_view kSelecting[] = {"TopK", "NonMaxSuppression", "NMS"};
    for (std::size_t i = from; i < plan.layers.size(); ++i)
    {
        const EngineLayer& layer = plan.layers[i];
        for (std::string_view op : kSelecting)
        {
            if (layer.type.find(op) != std::string::npos || layer.pluginType.find(op) != std::string::npos ||
                (!isMyelin(layer) && layerNameHas(layer, op)))
            {
                return true;
            }
            for (const auto& tensor : layer.outputs)
            {
                if (tensor.name.find(op) != std::string::npos)
                {
                    return true;
                }
            }
        }
    }
    return false;
}

class MyelinHeadDominates final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"myelin-head-dominates",
                                    "",
                                    "A Myelin layer after the network's last convolution (the detection "
                                    "post-processing: decode, top-k, NMS) takes a large share of the engine's time",
                                    Severity::kWarning,
                                    "8.0-10.x",
                                    kNeedsEngine | kReadsCorrelation,
                                    "the post-processing moves out of the model (an NMS plugin, or host code), which "
                                    "changes the model's outputs; `fix` edits Q/DQ only"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan* plan = context.engine();
        const Profile* profile = context.timings();
        if (plan == nullptr || profile == nullptr || context.correlation.layers.size() != plan->layers.size())
        {
            return; // the share needs the profile's times of the engine's layers
        }
        const double totalMs = profile->totalAverageMs();
        std::optional<std::size_t> lastMatrix;
        for (std::size_t i = 0; i < plan->layers.size(); ++i)
        {
            if (isMatrixLayer(plan->layers[i]))
            {
                lastMatrix = i;
            }
        }
        if (!lastMatrix || totalMs <= 0.0)
        {
            return; // no convolution to come after: the whole network may be one Myelin graph (a transformer)
        }
        for (std::size_t i = *lastMatrix + 1; i < plan->layers.size(); ++i)
        {
            const auto layerMs = layerTime(context, i);
            if (isMyelin(plan->layers[i]) && layerMs && *layerMs / totalMs > kDominantShare && selectsBoxes(*plan, i))
            {
                sink.add(describe(context, i, *lastMatrix, *layerMs, totalMs));
            }
        }
    }

private:
    Finding describe(const Context& context, std::size_t index, std::size_t lastMatrix, double timeMs,
                     double totalMs) const
    {
        const EnginePlan& plan = *context.engine();
        const EngineLayer& layer = plan.layers[index];
        const int percent = static_cast<int>(timeMs / totalMs * 100.0 + 0.5);
        const bool floatLayer = allFloat(layer.inputs) && allFloat(layer.outputs);
        Finding finding = makeFinding(info(), "");
        finding.engineLayers = {layer.name};
        finding.costMs = timeMs;
        for (const auto& node : context.correlation.layers[index].onnxNodes)
        {
            finding.onnxNodes.emplace_back(node);
        }
        finding.evidence.push_back(layerEvidence(context, index, "LayerType",
                                                 (layer.type.empty() ? std::string("Myelin (by name)") : layer.type) +
                                                     ", after the last convolution layer"));
        finding.evidence.push_back(
            layerEvidence(context, lastMatrix, "Name",
                          "the engine's last convolution/matrix layer: " + plan.layers[lastMatrix].name));
        for (const auto& entry : context.timings()->entries)
        {
            if (entry.name == layer.name)
            {
                Evidence evidence;
                evidence.file = context.timings()->sourcePath;
                evidence.line = entry.line;
                evidence.field = "averageMs";
                evidence.text = formatMs(timeMs) + " of " + formatMs(totalMs) + " (" + std::to_string(percent) + "%)";
                finding.evidence.push_back(std::move(evidence));
                break;
            }
        }
        finding.message =
            "Myelin layer \"" + layer.name + "\" takes " + formatMs(timeMs) + ", " + std::to_string(percent) +
            "% of the engine's " + formatMs(totalMs) + ", after the network's last convolution (\"" +
            plan.layers[lastMatrix].name +
            "\"): likely the model's post-processing (box decode, top-k, NMS-like ops) compiled into one layer" +
            (floatLayer ? ", in FP32" : std::string()) + ", dominates the engine.";
        finding.fix = "move the post-processing out of the engine: end the model at the head's outputs and use "
                      "TensorRT's EfficientNMS_TRT plugin (its fused box decoder mode decodes and suppresses on the "
                      "GPU) or BatchedNMS_TRT, or run decode and NMS on the host";
        if (floatLayer)
        {
            finding.fix += engineHasHalf(plan)
                               ? "; the layer runs in FP32 although the build has FP16: likely a cast or a type "
                                 "constraint in the post-processing keeps it in float"
                           : precisionFlagsApply(context)
                               ? "; or build with FP16 as well (--fp16) so its float part can run in FP16" +
                                     assumedTypingNote(context)
                               : "; or make its float part FP16 in the graph (strongly typed: the layer runs in "
                                 "the graph's type; `qdq-doctor fix --autocast fp16`)";
        }
        return finding;
    }
};

} // namespace

std::unique_ptr<Rule> makeMyelinHeadDominates()
{
    return std::make_unique<MyelinHeadDominates>();
}

} // namespace qdq::rules
