// fp32-graph-strongly-typed: a strongly typed engine (every TensorRT 11 build, TensorRT 10 --stronglyTyped) whose
// time goes mostly to FP32 layers because the graph is FP32. Under strong typing TensorRT gives each tensor the graph's
// type and no flag picks a precision ("Precision Control" page, "Strongly Typed Networks",
// https://docs.nvidia.com/deeplearning/tensorrt/11.0.0/inference-library/precision-control.html), so an FP32 export
// builds an FP32 engine: roboflow/rf-detr#1453 (TensorRT 11, an FP32 engine of 26.26 ms where the FP16 graph gives
// 5.75 ms), ultralytics/ultralytics#26167 (TensorRT 11: the float head of a QAT graph ran FP32 until ModelOpt AutoCast
// made it FP16). The fix is in the graph: FP16 initializers and Casts (`qdq-doctor fix --autocast fp16`, ModelOpt
// AutoCast) or the exporter's FP16. A Q/DQ engine's FP32 part is fp32-island's; this rule judges engines without
// quantized layers.
#include "rules/precision_common.h"
#include "rules/rules.h"

#include <algorithm>
#include <filesystem>

namespace qdq::rules
{

namespace
{

using namespace patterns;

enum class LayerFloat
{
    kNone, //!< not a compute layer, or no float type told
    kFp32,
    kHalf,
    kQuantized,
};

//! What float type a compute layer of the engine runs in, from its tensors.
LayerFloat floatOf(const EngineLayer& layer, LayerState state)
{
    static constexpr std::string_view kDataMovement[] = {
        "Constant", "NoOp", "Shuffle", "Reformat", "custom_layer", "shape_call", "signal", "wait", "TrainStation"};
    if (state != LayerState::kMapped && state != LayerState::kUnattributed)
    {
        return state == LayerState::kInsertedQdq ? LayerFloat::kQuantized : LayerFloat::kNone;
    }
    if (std::find(std::begin(kDataMovement), std::end(kDataMovement), layer.type) != std::end(kDataMovement))
    {
        return LayerFloat::kNone;
    }
    bool fp32 = false;
    bool half = false;
    for (const auto* tensors : {&layer.inputs, &layer.outputs})
    {
        for (const auto& tensor : *tensors)
        {
            if (isQuantized(tensor.precision))
            {
                return LayerFloat::kQuantized;
            }
            half = half || tensor.precision == Precision::kFP16 || tensor.precision == Precision::kBF16;
            fp32 = fp32 || tensor.precision == Precision::kFP32;
        }
    }
    return half ? LayerFloat::kHalf : fp32 ? LayerFloat::kFp32 : LayerFloat::kNone;
}

class Fp32GraphStronglyTyped final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "fp32-graph-strongly-typed",
            "",
            "A strongly typed engine spends most of its time in FP32 layers because the graph is FP32: no build flag "
            "picks FP16, the graph has to say it",
            Severity::kWarning,
            "10.x (--stronglyTyped), 11.x",
            kNeedsEngine | kReadsCorrelation,
            "the model's float type: `fix --autocast fp16` writes the FP16 graph (it is not one of the Q/DQ edits "
            "`fix` applies by default)"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan* plan = context.engine();
        if (!context.buildMode().stronglyTyped() || plan == nullptr ||
            context.correlation.layers.size() != plan->layers.size())
        {
            return;
        }
        Shares shares = sharesOf(context, *plan);
        // Most of the time (or, without a profile, most compute layers) in FP32, and no quantized layer: an FP32 graph.
        if (shares.quantizedLayers > 0 || shares.fp32.size() < 2 || shares.fp32Measure <= shares.halfMeasure)
        {
            return;
        }
        sink.add(describe(context, *plan, shares));
    }

private:
    struct Shares
    {
        std::vector<std::size_t> fp32;
        std::size_t halfLayers = 0;
        std::size_t quantizedLayers = 0;
        double fp32Measure = 0.0; //!< milliseconds with a profile, else layers
        double halfMeasure = 0.0;
        double totalMs = 0.0;
        bool timed = false;
    };

    static Shares sharesOf(const Context& context, const EnginePlan& plan)
    {
        Shares shares;
        shares.timed = context.timings() != nullptr;
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            const auto& mapping = context.correlation.layers[i];
            const double measure = shares.timed ? mapping.timeMs.value_or(0.0) : 1.0;
            shares.totalMs += mapping.timeMs.value_or(0.0);
            switch (floatOf(plan.layers[i], mapping.state))
            {
            case LayerFloat::kFp32:
                shares.fp32.push_back(i);
                shares.fp32Measure += measure;
                break;
            case LayerFloat::kHalf:
                ++shares.halfLayers;
                shares.halfMeasure += measure;
                break;
            case LayerFloat::kQuantized:
                ++shares.quantizedLayers;
                break;
            case LayerFloat::kNone:
                break;
            }
        }
        return shares;
    }

    static std::string shareText(const Shares& shares)
    {
        const std::size_t compute = shares.fp32.size() + shares.halfLayers;
        std::string text = std::to_string(shares.fp32.size()) + " of its " + std::to_string(compute) +
                           " float compute layers run FP32";
        if (shares.timed && shares.totalMs > 0.0)
        {
            text += ", " + formatMs(shares.fp32Measure) + " of the engine's " + formatMs(shares.totalMs) + " (" +
                    std::to_string(static_cast<int>(100.0 * shares.fp32Measure / shares.totalMs + 0.5)) + "%)";
        }
        else
        {
            text += " (no profile: counted by layers)";
        }
        return text;
    }

    //! The fix in the graph: with the model, the fix command on it; otherwise the exporter's FP16.
    static std::string graphFix(const Context& context)
    {
        const std::string sources = " (what RF-DETR and Ultralytics do for TensorRT 11: roboflow/rf-detr#1454, "
                                    "ultralytics/ultralytics#26167)";
        if (context.graph() != nullptr)
        {
            const std::filesystem::path model(context.graph()->sourcePath);
            const std::string fixed = (model.parent_path() / (model.stem().string() + "-fp16.onnx")).string();
            return "make the graph FP16: `qdq-doctor fix " + model.string() + " --autocast fp16 -o " + fixed +
                   "` writes its float part in FP16 (FP16 initializers and Cast nodes; reductions, normalizations, "
                   "Exp and Pow stay FP32), then build the engine from " +
                   fixed + " with the same command" + sources;
        }
        return "make the graph FP16: export the model with FP16 in the graph (the exporter's FP16, for PyTorch "
               "`model.half()` and FP16 example inputs before `torch.onnx.export`, or NVIDIA ModelOpt AutoCast on the "
               "ONNX; given the model, `qdq-doctor fix MODEL.onnx --autocast fp16` writes it) and build the engine "
               "from it with the same command" +
               sources;
    }

    Finding describe(const Context& context, const EnginePlan& plan, const Shares& shares) const
    {
        Finding finding = makeFinding(info(), "");
        finding.message =
            "The engine runs FP32 because the graph is FP32: " + shareText(shares) +
            (shares.halfLayers == 0 ? " and none FP16" : ", " + std::to_string(shares.halfLayers) + " FP16") +
            ". The build is strongly typed (" + context.buildMode().typingSource +
            "): TensorRT gives each tensor the type the graph gives it, and no build option picks FP16 instead "
            "(NVIDIA, \"Strongly Typed Networks\"). RF-DETR's FP32 graph built this way ran 26.26 ms where its FP16 "
            "graph ran 5.75 ms (roboflow/rf-detr#1453).";
        finding.engineLayers = layerNames(context, shares.fp32);
        for (std::size_t index : shares.fp32)
        {
            for (const auto& node : context.correlation.layers[index].onnxNodes)
            {
                finding.onnxNodes.emplace_back(node);
            }
            if (finding.evidence.size() < 4)
            {
                const EngineLayer& layer = plan.layers[index];
                finding.evidence.push_back(layerEvidence(context, index, "Datatype",
                                                         (layer.type.empty() ? std::string("layer") : layer.type) +
                                                             " " + precision::precisionText(inputPrecision(layer)) +
                                                             " -> " +
                                                             precision::precisionText(outputPrecision(layer))));
            }
        }
        finding.costMs = shares.timed ? std::optional<double>(shares.fp32Measure) : std::nullopt;
        finding.fix = graphFix(context);
        return finding;
    }
};

} // namespace

std::unique_ptr<Rule> makeFp32GraphStronglyTyped()
{
    return std::make_unique<Fp32GraphStronglyTyped>();
}

} // namespace qdq::rules
