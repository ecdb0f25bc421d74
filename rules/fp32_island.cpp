// R24 fp32-island: in an explicitly quantized (Q/DQ) build, layers outside the Q/DQ regions run in the network's float
// type: FP32 unless FP16 is enabled (weak typing, --fp16) or the ONNX itself is FP16 (strong typing). A Q/DQ engine
// built without FP16 leaves its unquantized layers in FP32 with Int8<->FP32 conversions around them.
//
// Under strong typing (TensorRT 10 --stronglyTyped, every TensorRT 11 build) no flag picks a precision: each tensor has
// the graph's type ("Precision Control" page, "Strongly Typed Networks",
// https://docs.nvidia.com/deeplearning/tensorrt/11.0.0/inference-library/precision-control.html), so an FP32 Q/DQ
// model runs its unquantized part in FP32 and the remedy is in the graph (FP16 initializers and Casts; "Migrating from
// TensorRT 10.x to 11.x" names ModelOpt AutoCast as the replacement of BuilderFlag::kFP16). The finding then says that
// part of the graph is FP32, with its cost: the profile's time, else the predicted layer count.
#include "rules/build_mode_advice.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

#include <set>
#include <string_view>

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
            "Unquantized layers of a Q/DQ network run in FP32: the build did not enable FP16 (weak typing) or the "
            "graph is FP32 (strong typing)",
            Severity::kWarning,
            "8.0-11.x",
            kNeedsOnnxOrEngine | kReadsPrediction | kReadsCorrelation,
            "weak typing: a build flag, not the graph; strong typing: the model's float type, which `fix --autocast "
            "fp16` changes"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        if (context.buildMode().stronglyTyped())
        {
            if (context.engine() != nullptr)
            {
                checkStronglyTypedEngine(context, sink);
            }
            else if (context.graph() != nullptr)
            {
                checkStronglyTypedGraph(context, sink);
            }
            return;
        }
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
    };

    static BuildConfig buildConfig(const Context& context)
    {
        BuildConfig config;
        const auto& log = context.inputs.buildLog;
        if (!log)
        {
            return config;
        }
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
        finding.fix = fp16Remedy(context);
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
        // The MatMuls a predicted Myelin region runs in the quantized type are no float ops, although the region's
        // layer is a float one (src/simulation/myelin_pass.cpp: both inputs straight from a DequantizeLinear).
        const std::set<std::string_view> quantizedInMyelin(context.prediction.myelinQuantizedMatMuls.begin(),
                                                           context.prediction.myelinQuantizedMatMuls.end());
        for (const auto& layer : context.prediction.layers)
        {
            if (layer.role.rfind("quantized-", 0) == 0 || layer.role == "requantize")
            {
                continue;
            }
            for (auto name : layer.onnxNodes)
            {
                if (quantizedInMyelin.count(name) > 0)
                {
                    continue;
                }
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
        finding.claims.push_back({EngineClaim::Kind::kRunsFloat, floatOps});
        if (const OnnxNode* first = graph.findNode(floatOps.front()))
        {
            finding.evidence.push_back(
                nodeEvidence(context, *first, "not between DequantizeLinear and QuantizeLinear"));
        }
        finding.fix = fp16Remedy(context);
        sink.add(std::move(finding));
    }

    //! Whether the predicted layer runs float ops of the model (not only Q/DQ, data movement or shape arithmetic);
    //! those ops are added to nodes.
    static bool runsFloatOps(const OnnxGraph& graph, const PredictedLayer& layer, std::vector<std::string>& nodes)
    {
        if (layer.role.rfind("quantized-", 0) == 0 || layer.role == "requantize" ||
            layer.role.rfind("standalone-", 0) == 0 || layer.role == "reformat")
        {
            return false;
        }
        bool any = false;
        for (auto name : layer.onnxNodes)
        {
            const OnnxNode* node = graph.findNode(name);
            // Integer ops (QLinearConv, ...) are not float: quantized-op-not-importable explains them.
            if (node != nullptr && !isQdq(*node) && !isCommuting(node->opType) && node->opType != "Shape" &&
                node->opType != "Constant" && node->opType != "Gather" && node->opType != "Cast" &&
                !isOperatorFormatQuantized(*node))
            {
                nodes.push_back(node->name);
                any = true;
            }
        }
        return any;
    }

    //! The remedy under strong typing, and what the FP32 part costs.
    static std::string strongFix()
    {
        return "this part of the graph is FP32: make it FP16 in the graph (FP16 initializers and Cast nodes: "
               "`qdq-doctor fix --autocast fp16`, or NVIDIA ModelOpt AutoCast) and keep the Q/DQ; a strongly typed "
               "build has no flag that picks FP16";
    }

    //! A mixed model (some float layers FP16) keeps the others FP32 on purpose, mostly (AutoCast keeps reductions and
    //! values outside the FP16 range in FP32): said as info. A model whose whole float part is FP32: a warning.
    static void setStrongSeverity(Finding& finding, bool mixed)
    {
        finding.severity = mixed ? Severity::kInfo : Severity::kWarning;
        finding.likely = false;
    }

    //! The predicted engine's FP32 part under strong typing: float layers the graph types FP32, INT8 layers that
    //! write their float output in FP32, and how many float layers or outputs are FP16 instead.
    struct Fp32Part
    {
        std::vector<std::string> floatLayers;
        std::vector<std::string> floatOps;
        std::vector<std::string> writers;     //!< INT8-in layers writing an FP32 output
        std::vector<std::string> writerNodes; //!< their ops (not their Q/DQ)
        std::size_t halfLayers = 0;
    };

    static Fp32Part fp32PartOf(const OnnxGraph& graph, const Prediction& prediction)
    {
        Fp32Part part;
        for (const auto& layer : prediction.layers)
        {
            const bool half = layer.outputPrecision == "FP16" || layer.outputPrecision == "BF16";
            if (layer.role.rfind("quantized-", 0) == 0 && layer.int8Input && !layer.int8Output)
            {
                if (layer.outputPrecision == "FP32")
                {
                    part.writers.push_back(layer.name);
                    for (auto name : layer.onnxNodes)
                    {
                        const OnnxNode* node = graph.findNode(name);
                        if (node != nullptr && !isQdq(*node))
                        {
                            part.writerNodes.push_back(node->name);
                        }
                    }
                }
                part.halfLayers += half ? 1 : 0;
                continue;
            }
            std::vector<std::string> ops;
            if (!runsFloatOps(graph, layer, ops))
            {
                continue;
            }
            if (layer.inputPrecision == "FP32" || layer.outputPrecision == "FP32")
            {
                part.floatLayers.push_back(layer.name);
                part.floatOps.insert(part.floatOps.end(), ops.begin(), ops.end());
            }
            part.halfLayers += half ? 1 : 0;
        }
        return part;
    }

    //! Strong typing, ONNX only: the predicted layers whose float part the graph types FP32.
    void checkStronglyTypedGraph(const Context& context, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        if (graph.quantizeCount() == 0)
        {
            return;
        }
        const Fp32Part part = fp32PartOf(graph, context.prediction);
        if (part.floatLayers.empty() && part.writers.empty())
        {
            return;
        }
        const bool mixed = part.halfLayers > 0;
        std::string what;
        if (!part.floatLayers.empty())
        {
            what = std::to_string(part.floatLayers.size()) +
                   " predicted layer(s) outside the Q/DQ regions run in FP32 (" + nameList(part.floatLayers, 4) + ")";
        }
        if (!part.writers.empty())
        {
            what += std::string(what.empty() ? "" : ", and ") + std::to_string(part.writers.size()) +
                    " INT8 layer(s) write their float output in FP32 (" + nameList(part.writers, 3) + ")";
        }
        Finding finding = makeFinding(
            info(),
            what + ": the build is strongly typed (" + context.buildMode().typingSource +
                "), so TensorRT gives each tensor the graph's type, and this part of the graph is FP32. Cost: " +
                std::to_string(part.floatLayers.size()) + " FP32 layer(s) and " + std::to_string(part.writers.size()) +
                " FP32 output(s) of the predicted engine (no profile to time them)" +
                (mixed ? "; " + std::to_string(part.halfLayers) +
                             " other float layer(s) or outputs are FP16, so these may have been kept FP32 on "
                             "purpose (reductions, values outside the FP16 range): check that they need to be."
                       : "."));
        setStrongSeverity(finding, mixed);
        finding.onnxNodes = part.floatOps;
        finding.claims.push_back({EngineClaim::Kind::kRunsFloat, part.floatOps});
        finding.onnxNodes.insert(finding.onnxNodes.end(), part.writerNodes.begin(), part.writerNodes.end());
        const auto& firstOf = part.floatOps.empty() ? part.writerNodes : part.floatOps;
        if (const OnnxNode* node = firstOf.empty() ? nullptr : graph.findNode(firstOf.front()))
        {
            finding.evidence.push_back(nodeEvidence(context, *node, "FP32 in the graph, not between Q/DQ"));
        }
        finding.fix = strongFix();
        sink.add(std::move(finding));
    }

    //! Strong typing with an engine: its FP32-only compute layers are the graph's FP32 part; their time (or count).
    void checkStronglyTypedEngine(const Context& context, FindingSink& sink) const
    {
        const EnginePlan& plan = *context.engine();
        if (!isQdqEngine(context))
        {
            return;
        }
        std::vector<std::size_t> island;
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& layer = plan.layers[index];
            const LayerState state = context.correlation.layers[index].state;
            if ((state == LayerState::kMapped || state == LayerState::kUnattributed) && onlyFp32(layer) &&
                layer.type != "Constant" && layer.type != "NoOp" && layer.type != "Shuffle" &&
                layer.type != "TrainStation")
            {
                island.push_back(index);
            }
        }
        if (island.empty())
        {
            return;
        }
        const bool mixed = anyFloat16(plan);
        std::vector<std::string> names = layerNames(context, island);
        const std::optional<double> cost = sumTimes(context, island);
        Finding finding = makeFinding(
            info(), std::to_string(island.size()) +
                        " unquantized layer(s) run in FP32 in this strongly typed engine (" + nameList(names, 4) +
                        "): TensorRT gives each tensor the graph's type (" + context.buildMode().typingSource +
                        "), so this part of the graph is FP32" + (cost ? "" : "; no profile times them") +
                        (mixed ? "; the engine has FP16 layers too, so these may have been kept FP32 on purpose: "
                                 "check that they need to be."
                               : "."));
        setStrongSeverity(finding, mixed);
        finding.engineLayers = names;
        for (std::size_t index : island)
        {
            for (const auto& node : context.correlation.layers[index].onnxNodes)
            {
                finding.onnxNodes.emplace_back(node);
            }
            if (finding.evidence.size() < 6)
            {
                finding.evidence.push_back(
                    layerEvidence(context, index, "",
                                  plan.layers[index].type + " " + precisionText(inputPrecision(plan.layers[index])) +
                                      " -> " + precisionText(outputPrecision(plan.layers[index]))));
            }
        }
        finding.costMs = cost;
        finding.fix = strongFix();
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeFp32Island()
{
    return std::make_unique<Fp32Island>();
}

} // namespace qdq::rules
