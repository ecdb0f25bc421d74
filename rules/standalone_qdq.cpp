// R20 standalone-qdq: a Q or DQ that TensorRT could not fuse runs as its own Quantize/Dequantize layer.
#include "qdq/layer_names.h"
#include "qdq/patterns.h"
#include "rules/rules.h"

#include <map>

namespace qdq::rules
{

namespace
{

using namespace patterns;

bool nameHasOp(const EngineLayer& layer, std::string_view op)
{
    for (const auto& token : parseLayerName(layer.name).tokens)
    {
        if (token.find(op) != std::string::npos)
        {
            return true;
        }
    }
    return false;
}

class StandaloneQdq final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"standalone-qdq", "R20",
            "A Quantize or Dequantize that TensorRT could not fuse runs as its own layer", Severity::kWarning,
            "8.0-10.x", kNeedsOnnxOrEngine};
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
            checkPrediction(context, sink);
        }
    }

private:
    //! Why one standalone layer exists, read from its neighbours in the engine.
    std::string explain(const Context& context, std::size_t index, std::string& fix) const
    {
        const EnginePlan& plan = *context.engine();
        const EngineLayer& layer = plan.layers[index];
        if (layer.inputs.empty())
        {
            fix = "move the Q/DQ pair to the input of the nearest weighted op (Conv, Gemm, MatMul)";
            return "its input is not listed";
        }
        const std::string& input = layer.inputs[0].name;
        auto producer = producerLayer(plan, input);
        if (!producer)
        {
            bool bindingInput = std::find(plan.bindings.begin(), plan.bindings.end(), input) != plan.bindings.end()
                || layer.inputs[0].precision == Precision::kFP32 || layer.inputs[0].precision == Precision::kFP16;
            fix = "expected for a float network input; feed INT8 directly with --inputIOFormats=int8:chw32 if the "
                  "preprocessing can quantize (see io-reformat)";
            return bindingInput ? "it quantizes the network input " + input : "nothing in the engine produces " + input;
        }
        const EngineLayer& source = plan.layers[*producer];
        // The same tensor used as the residual input of a fused Conv+Add.
        for (std::size_t consumer : consumerLayers(plan, input))
        {
            const EngineLayer& user = plan.layers[consumer];
            if (consumer != index && user.inputs.size() >= 2 && user.inputs[0].name != input && nameHasOp(user, "Add"))
            {
                fix = "quantize the residual input of the Add fused into \"" + user.name
                    + "\" with the same scale as this Quantize (see residual-input-not-quantized)";
                return "its input " + input + " is also the float-scaled residual input of \"" + user.name + "\"";
            }
        }
        if (nameHasOp(source, "Add") && (nameHasOp(source, "Conv") || nameHasOp(source, "Gemm")))
        {
            fix = "quantize the residual (identity) input of the Add in \"" + source.name
                + "\" so the fused Conv+Add emits INT8 and this Quantize fuses into it (see "
                  "residual-input-not-quantized)";
            return "it requantizes the output of the fused Conv+Add \"" + source.name + "\"";
        }
        if (isFloat(outputPrecision(source)))
        {
            fix = "quantize the input of \"" + source.name + "\" (Q/DQ before it) so it runs INT8 and emits INT8, or "
                  "move this Q/DQ to the input of the next weighted op";
            return "its producer \"" + source.name + "\" (" + source.type + ") runs in "
                + std::string(precisionName(outputPrecision(source)));
        }
        fix = "make the scales of the Q/DQ around \"" + source.name + "\" equal so the pair cancels, or remove it";
        return "it requantizes the INT8 output of \"" + source.name + "\"";
    }

    void checkEngine(const Context& context, FindingSink& sink) const
    {
        const EnginePlan& plan = *context.engine();
        std::vector<std::size_t> standalone;
        for (const auto& mapping : context.correlation.layers)
        {
            if (mapping.state == LayerState::kInsertedQdq)
            {
                standalone.push_back(mapping.layer);
            }
        }
        if (standalone.empty())
        {
            return;
        }
        Finding finding = makeFinding(info(), "");
        std::map<std::string, std::vector<std::string>> layersByFix;
        std::string details;
        for (std::size_t index : standalone)
        {
            const EngineLayer& layer = plan.layers[index];
            std::string fix;
            std::string why = explain(context, index, fix);
            finding.engineLayers.push_back(layer.name);
            for (const auto& node : context.correlation.layers[index].onnxNodes)
            {
                finding.onnxNodes.push_back(node);
            }
            auto time = layerTime(context, index);
            std::string text = layer.type + (layer.origin.empty() ? "" : ", Origin: " + layer.origin) + ", "
                + std::string(precisionName(inputPrecision(layer))) + " -> "
                + std::string(precisionName(outputPrecision(layer))) + (time ? ", " + formatMs(*time) : "") + "; "
                + why;
            finding.evidence.push_back(layerEvidence(context, index, "", text));
            layersByFix[fix].push_back(layer.name);
        }
        finding.costMs = sumTimes(context, standalone);
        finding.message = std::to_string(standalone.size()) + " Q/DQ node(s) run as their own layer"
            + (finding.costMs ? " and cost " + formatMs(*finding.costMs) + " in total" : "") + ": "
            + nameList(finding.engineLayers, 6) + ".";
        for (const auto& [fix, layers] : layersByFix)
        {
            finding.fix += (finding.fix.empty() ? "" : " | ") + nameList(layers, 3) + ": " + fix;
        }
        sink.add(std::move(finding));
    }

    void checkPrediction(const Context& context, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& predicted : context.prediction.qdq)
        {
            if (predicted.fate != PredictedQdq::Fate::kStandalone)
            {
                continue;
            }
            const OnnxNode* node = graph.findNode(predicted.node);
            if (node == nullptr)
            {
                continue;
            }
            bool networkInput = !node->inputs.empty() && isGraphInput(graph, node->inputs[0]);
            Finding finding = makeFinding(info(),
                std::string(predicted.isQuantize ? "QuantizeLinear " : "DequantizeLinear ") + node->name
                    + " is likely to run as its own layer: " + predicted.reason + ".");
            finding.likely = true;
            finding.severity = networkInput ? Severity::kInfo : Severity::kWarning;
            finding.onnxNodes.push_back(node->name);
            finding.evidence.push_back(nodeEvidence(context, *node, predicted.reason));
            finding.fix = networkInput
                ? "expected for a float network input (see io-reformat)"
                : "remove this Q/DQ pair or move it to the input of the nearest weighted op; a lone "
                  + std::string(predicted.isQuantize ? "Q needs a quantized producer to fuse into"
                                                     : "DQ needs a quantized consumer to fuse into");
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeStandaloneQdq()
{
    return std::make_unique<StandaloneQdq>();
}

} // namespace qdq::rules
