// R24 fp32-island: in an explicitly quantized (Q/DQ) build, layers outside the Q/DQ regions run in the network's float
// type: FP32 unless FP16 is enabled (weak typing, --fp16) or the ONNX itself is FP16 (strong typing). A Q/DQ engine
// built without FP16 leaves its unquantized layers in FP32 with Int8<->FP32 conversions around them.
#include "rules/precision_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace precision;

class Fp32Island final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "fp32-island",
            "R24",
            "Unquantized layers of a Q/DQ network run in FP32 because the build did not enable FP16",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsPrediction | kReadsCorrelation,
            "a build flag (--fp16, or BuilderFlag::kFP16), not the graph"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        if (context.engine() != nullptr)
        {
            checkEngine(context, sink);
        }
        else if (context.graph() != nullptr)
        {
            checkGraph(context, sink);
        }
    }

private:
    enum class Fp16Setting
    {
        kUnknown,
        kEnabled,
        kDisabled,
    };

    struct BuildConfig
    {
        Fp16Setting fp16 = Fp16Setting::kUnknown;
        std::string precision; //!< the Build Options Precision value
        bool stronglyTyped = false;
    };

    static BuildConfig buildConfig(const Context& context)
    {
        BuildConfig config;
        const auto& log = context.inputs.buildLog;
        if (!log)
        {
            return config;
        }
        config.stronglyTyped = log->commandLine.find("--stronglyTyped") != std::string::npos;
        for (const auto& [key, value] : log->buildOptions)
        {
            if (key == "Precision")
            {
                config.precision = value;
                bool fp16 = value.find("FP16") != std::string::npos || value.find("BF16") != std::string::npos;
                config.fp16 = fp16 ? Fp16Setting::kEnabled : Fp16Setting::kDisabled;
            }
        }
        if (config.fp16 == Fp16Setting::kUnknown && !log->commandLine.empty())
        {
            const std::string& cmd = log->commandLine;
            if (cmd.find("--fp16") != std::string::npos || cmd.find("--best") != std::string::npos)
            {
                config.fp16 = Fp16Setting::kEnabled;
            }
        }
        return config;
    }

    static std::string fixText(bool stronglyTyped, int trtMajor)
    {
        if (stronglyTyped)
        {
            return "the build is strongly typed: convert the unquantized part of the ONNX model to FP16 (e.g. NVIDIA "
                   "ModelOpt AutoCast) and keep the Q/DQ";
        }
        return "rebuild with FP16 enabled as well (trtexec --int8 --fp16, or BuilderFlag::kFP16) so the unquantized "
               "layers run FP16" +
               std::string(trtMajor >= 10 ? "; with strong typing (TensorRT 11 drops weak typing) convert the "
                                            "unquantized part of the ONNX model to FP16 instead"
                                          : "");
    }

    static bool isQdqEngine(const Context& context)
    {
        const EnginePlan& plan = *context.engine();
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            if (isStandaloneQdq(context, index) ||
                (plan.layers[index].weightsPrecision && isQuantized(*plan.layers[index].weightsPrecision)))
            {
                return true;
            }
            for (const auto& token : parseLayerName(plan.layers[index].name).tokens)
            {
                if (looksLikeQuantizeName(token) || looksLikeDequantizeName(token))
                {
                    return true;
                }
            }
        }
        return false;
    }

    static bool onlyFp32(const EngineLayer& layer)
    {
        bool anyFp32 = false;
        for (const auto* tensors : {&layer.inputs, &layer.outputs})
        {
            for (const auto& tensor : *tensors)
            {
                if (tensor.precision == Precision::kFP32)
                {
                    anyFp32 = true;
                }
                else if (tensor.precision != Precision::kUnknown && tensor.precision != Precision::kINT32 &&
                         tensor.precision != Precision::kINT64 && tensor.precision != Precision::kBool)
                {
                    return false;
                }
            }
        }
        return anyFp32;
    }

    void checkEngine(const Context& context, FindingSink& sink) const
    {
        const EnginePlan& plan = *context.engine();
        BuildConfig config = buildConfig(context);
        if (config.fp16 == Fp16Setting::kEnabled || !isQdqEngine(context))
        {
            return;
        }
        bool engineHasFp16 = anyFloat16(plan);
        if (config.fp16 == Fp16Setting::kUnknown && engineHasFp16)
        {
            return; // FP16 was enabled: FP32 layers are TensorRT's choice
        }
        std::vector<std::size_t> island;
        std::vector<std::size_t> conversions;
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& layer = plan.layers[index];
            LayerState state = context.correlation.layers[index].state;
            bool crossesInt8 = (isQuantized(inputPrecision(layer)) && outputPrecision(layer) == Precision::kFP32) ||
                               (inputPrecision(layer) == Precision::kFP32 && isQuantized(outputPrecision(layer)));
            if ((state == LayerState::kInsertedQdq || state == LayerState::kInsertedReformat) && crossesInt8 &&
                !(layer.inputs.size() == 1 && isNetworkInput(plan, layer.inputs[0].name)))
            {
                conversions.push_back(index);
                continue;
            }
            if ((state == LayerState::kMapped || state == LayerState::kUnattributed ||
                 state == LayerState::kInsertedReformat) &&
                onlyFp32(layer) && layer.type != "Constant" && layer.type != "NoOp" && layer.type != "Shuffle" &&
                layer.type != "TrainStation")
            {
                island.push_back(index);
            }
        }
        // Without the build configuration, a single FP32 layer is weak evidence: TensorRT may pick FP32 for a small
        // layer even with FP16 enabled.
        if (island.empty() || (config.fp16 == Fp16Setting::kUnknown && island.size() < 2))
        {
            return;
        }
        std::vector<std::string> names = layerNames(context, island);
        std::vector<std::size_t> costly = island;
        costly.insert(costly.end(), conversions.begin(), conversions.end());
        Finding finding = makeFinding(info(), "");
        bool certain = config.fp16 == Fp16Setting::kDisabled;
        finding.likely = !certain;
        finding.severity = certain ? Severity::kWarning : Severity::kInfo;
        std::string why =
            certain
                ? "the build log's Build Options say Precision: " + config.precision + " (no FP16)"
                : "the engine has no FP16 tensor at all, so it was likely built without FP16 (pass the build log to "
                  "confirm: Build Options, Precision)";
        finding.message =
            std::to_string(island.size()) + " unquantized layer(s) run in FP32 in this Q/DQ engine (" +
            nameList(names, 4) + ")" +
            (conversions.empty() ? std::string()
                                 : " with " + std::to_string(conversions.size()) + " Int8<->FP32 conversion layer(s)") +
            ": " + why + ".";
        finding.engineLayers = names;
        for (std::size_t c : conversions)
        {
            finding.engineLayers.push_back(plan.layers[c].name);
        }
        for (std::size_t index : island)
        {
            for (const auto& node : context.correlation.layers[index].onnxNodes)
            {
                finding.onnxNodes.emplace_back(node);
            }
        }
        for (std::size_t index : island)
        {
            if (finding.evidence.size() >= 6)
            {
                break;
            }
            finding.evidence.push_back(layerEvidence(context, index, "",
                                                     plan.layers[index].type + " " +
                                                         precisionText(inputPrecision(plan.layers[index])) + " -> " +
                                                         precisionText(outputPrecision(plan.layers[index]))));
        }
        if (certain)
        {
            Evidence evidence;
            evidence.file = context.inputs.buildLog->sourcePath;
            evidence.field = "Build Options: Precision";
            evidence.text = config.precision;
            finding.evidence.push_back(evidence);
        }
        finding.costMs = sumTimes(context, costly);
        finding.fix = fixText(config.stronglyTyped, context.inputs.trtMajor());
        sink.add(std::move(finding));
    }

    //! ONNX only: whether the float regions run FP32 or FP16 is a build setting; say which input decides it.
    void checkGraph(const Context& context, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        if (graph.quantizeCount() == 0)
        {
            return;
        }
        BuildConfig config = buildConfig(context);
        if (config.fp16 == Fp16Setting::kEnabled)
        {
            return;
        }
        std::vector<std::string> floatOps;
        for (const auto& layer : context.prediction.layers)
        {
            if (layer.role.rfind("quantized-", 0) == 0 || layer.role == "requantize")
            {
                continue;
            }
            for (auto name : layer.onnxNodes)
            {
                const OnnxNode* node = graph.findNode(name);
                // Integer ops (QLinearConv, ...) are not float: quantized-op-not-importable explains them.
                if (node != nullptr && !isQdq(*node) && !isCommuting(node->opType) && node->opType != "Shape" &&
                    node->opType != "Constant" && node->opType != "Gather" && node->opType != "Cast" &&
                    !isOperatorFormatQuantized(*node))
                {
                    floatOps.push_back(node->name);
                }
            }
        }
        if (floatOps.empty())
        {
            return;
        }
        bool certain = config.fp16 == Fp16Setting::kDisabled;
        Finding finding = makeFinding(
            info(),
            std::to_string(floatOps.size()) + " op(s) lie outside the Q/DQ regions (" + nameList(floatOps, 4) + "); " +
                (certain ? "the build log says Precision: " + config.precision + " without FP16, so they run in FP32."
                         : "they run in FP32 unless the build enables FP16 (weak typing) or the ONNX is FP16 (strong "
                           "typing): this cannot be decided from the ONNX model alone; the build log (Build Options, "
                           "Precision) or the engine layer info settles it."));
        finding.likely = !certain;
        finding.severity = certain ? Severity::kWarning : Severity::kInfo;
        finding.onnxNodes = floatOps;
        if (const OnnxNode* first = graph.findNode(floatOps.front()))
        {
            finding.evidence.push_back(
                nodeEvidence(context, *first, "not between DequantizeLinear and QuantizeLinear"));
        }
        finding.fix = fixText(config.stronglyTyped, context.inputs.trtMajor());
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeFp32Island()
{
    return std::make_unique<Fp32Island>();
}

} // namespace qdq::rules
