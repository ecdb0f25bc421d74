// R14 activation-before-residual-add: Conv -> [BN] -> Sigmoid -> Mul (SiLU) -> Add(residual). TensorRT absorbs the
// SiLU into the conv as a generic activation, but the two-input Add after it becomes a separate PointWise layer; unless
// both Add inputs are quantized and a Q follows the Add, that layer reads and writes float.
#include "rules/precision_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace precision;

class ActivationBeforeResidualAdd final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"activation-before-residual-add",
                                    "R14",
                                    "Conv -> SiLU -> Add(residual): the Add runs as a separate PointWise layer, in "
                                    "float unless both its inputs "
                                    "and its output are quantized",
                                    Severity::kWarning,
                                    "8.4-10.x",
                                    kNeedsOnnxOrEngine | kReadsCorrelation,
                                    "a Q/DQ after the Add needs its scale from calibration data"};
        return kInfo;
    }

private:
    struct Silu
    {
        const OnnxNode* conv = nullptr;
        const OnnxNode* sigmoid = nullptr;
        const OnnxNode* mul = nullptr;
        bool throughQdq = false; //!< Mul -> Q -> DQ -> Add
    };

    //! tensor = Mul(x, Sigmoid(x)) with x from a quantized weighted op through BN, optionally behind a Q/DQ pair.
    static std::optional<Silu> siluBehind(const OnnxGraph& graph, const std::string& tensor)
    {
        Silu silu;
        const OnnxNode* mul = producerOf(graph, tensor);
        if (mul != nullptr && isDequantize(*mul) && !mul->inputs.empty())
        {
            const OnnxNode* q = producerOf(graph, mul->inputs[0]);
            if (q == nullptr || !isQuantize(*q) || q->inputs.empty())
            {
                return std::nullopt;
            }
            silu.throughQdq = true;
            mul = producerOf(graph, q->inputs[0]);
        }
        const OnnxNode* gate = mul == nullptr ? nullptr : selfGateOf(graph, *mul);
        if (gate == nullptr)
        {
            return std::nullopt;
        }
        silu.sigmoid = gate;
        silu.mul = mul;
        silu.conv = quantizedWeightedBehind(graph, gate->inputs[0]);
        return silu.conv != nullptr ? std::optional<Silu>(silu) : std::nullopt;
    }

    //! True when tensor is a conv's output, through single-reader BN and single-input activations, that only the Add
    //! reads: TensorRT fuses the Add into that conv (Conv + ElementWise, reference 1.8) and the SiLU's output is its
    //! residual input, so no PointWise Add is left (MobileNetV3's first block: stem conv + HardSwish, then a residual).
    static bool convTakesTheAdd(const OnnxGraph& graph, const std::string& tensor)
    {
        const std::string* current = &tensor;
        for (int depth = 0; depth < 8; ++depth)
        {
            const OnnxNode* producer = producerOf(graph, *current);
            if (producer == nullptr || consumersOf(graph, *current).size() != 1)
            {
                return false;
            }
            if (producer->opType == "Conv" || producer->opType == "ConvTranspose")
            {
                return true;
            }
            if (!(producer->opType == "BatchNormalization" || isEpilogue(producer->opType)) || producer->inputs.empty())
            {
                return false;
            }
            current = &producer->inputs[0];
        }
        return false;
    }

    //! The Add's layers, with their precisions.
    static void addEngineLayers(const Context& context, const OnnxNode& add, Finding& finding)
    {
        const EnginePlan* plan = context.engine();
        if (plan == nullptr)
        {
            return;
        }
        std::vector<std::size_t> layers = layersOf(context, add.name);
        for (std::size_t layer : layers)
        {
            finding.engineLayers.push_back(plan->layers[layer].name);
            finding.evidence.push_back(layerEvidence(context, layer, "",
                                                     plan->layers[layer].type + " " +
                                                         precisionText(inputPrecision(plan->layers[layer])) + " -> " +
                                                         precisionText(outputPrecision(plan->layers[layer]))));
        }
        finding.costMs = sumTimes(context, layers);
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& add : graph.nodes)
        {
            if (add.opType != "Add" || add.inputs.size() != 2 || add.outputs.empty() ||
                activationInputs(graph, add).size() != 2)
            {
                continue;
            }
            std::optional<Silu> silu;
            std::size_t convSide = 0;
            for (std::size_t k = 0; k < 2 && !silu; ++k)
            {
                silu = siluBehind(graph, add.inputs[k]);
                convSide = k;
            }
            if (!silu)
            {
                continue;
            }
            std::size_t residualSide = 1 - convSide;
            const std::string& convInput = add.inputs[convSide];
            const std::string& residual = add.inputs[residualSide];
            if (convTakesTheAdd(graph, residual))
            {
                continue;
            }
            bool convQuantized = silu->throughQdq;
            bool residualQuantized = feedingDequantize(graph, residual) != nullptr;
            auto forward = forwardQuantizers(graph, add.outputs[0], true);
            bool outputQuantized = !forward.quantizers.empty() && forward.allPaths;
            if (convQuantized && residualQuantized && outputQuantized)
            {
                continue; // the PointWise Add runs INT8 in and out: the documented workaround is in place
            }
            const std::string activation(selfGatedName(silu->sigmoid->opType)); // SiLU or HardSwish
            std::vector<std::string> missing;
            std::vector<std::string> fixes;
            if (!convQuantized)
            {
                missing.push_back("its " + activation + " input " + convInput);
                fixes.push_back("QuantizeLinear -> DequantizeLinear on " + convInput + " (the output of " +
                                silu->mul->name + ")");
            }
            if (!residualQuantized)
            {
                std::string scale;
                auto existing = forwardQuantizers(graph, residual, false);
                if (!existing.quantizers.empty())
                {
                    scale = scaleAdviceAmong(graph, existing.quantizers); // one decision per tensor
                }
                missing.push_back("its residual input " + residual);
                fixes.push_back("QuantizeLinear -> DequantizeLinear on the residual " + residual + scale);
            }
            if (!outputQuantized)
            {
                missing.push_back("its output " + add.outputs[0]);
                if (forward.quantizers.empty())
                {
                    fixes.push_back("a QuantizeLinear after " + add.name + " on " + add.outputs[0] +
                                    " (the input quantization of the next conv)");
                }
                else
                {
                    // Quantized for some consumers already: the float paths need the same Q/DQ.
                    std::vector<std::string> users;
                    for (const OnnxNode* user : floatEnds(graph, add.outputs[0], true).users)
                    {
                        users.push_back(user->name);
                    }
                    fixes.push_back("QuantizeLinear -> DequantizeLinear on " + add.outputs[0] + " before " +
                                    nameList(users, 3) + scaleAdviceAmong(graph, forward.quantizers));
                }
            }
            Finding finding =
                makeFinding(info(), "Add " + add.name + " follows " + silu->conv->opType + " " + silu->conv->name +
                                        " + " + activation + " (" + silu->sigmoid->name + ", " + silu->mul->name +
                                        "): TensorRT fuses the " + activation +
                                        " into the conv but likely runs the Add as a separate PointWise layer, and " +
                                        nameList(missing, 3) + (missing.size() == 1 ? " is" : " are") +
                                        " not quantized, so that layer reads or writes float.");
            finding.likely = true;
            finding.onnxNodes = {add.name, silu->conv->name, silu->sigmoid->name, silu->mul->name};
            finding.evidence.push_back(nodeEvidence(context, add, "not quantized: " + nameList(missing, 3)));
            finding.fix =
                "keep the PointWise Add in INT8: add " + nameList(fixes, 3) +
                "; fusing the Add into the conv as well needs TensorRT >= 8.5 on Ampere/Hopper and INT8 I/O formats";
            addEngineLayers(context, add, finding);
            sink.add(std::move(finding));
        }
    }

    //! Engine: a PointWise layer with an Add whose input comes from a conv layer with a fused SiLU (or that holds the
    //! Sigmoid/Mul itself behind a conv), reading or writing float.
    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& layer = plan.layers[index];
            if (layer.type.find("PointWise") == std::string::npos || !tokensHave(layer, "Add") || layer.outputs.empty())
            {
                continue;
            }
            std::optional<std::size_t> conv;
            bool siluInPwn = tokensHave(layer, "Sigmoid") && tokensHave(layer, "Mul");
            for (const auto& input : layer.inputs)
            {
                auto producer = producerLayer(plan, input.name);
                if (producer && isWeightedLayer(plan.layers[*producer]) &&
                    (siluInPwn ||
                     (tokensHave(plan.layers[*producer], "Sigmoid") && tokensHave(plan.layers[*producer], "Mul"))))
                {
                    conv = producer;
                }
            }
            if (!conv)
            {
                continue;
            }
            bool floatIo = isFloat(outputPrecision(layer));
            for (const auto& input : layer.inputs)
            {
                floatIo = floatIo || isFloat(input.precision);
            }
            if (!floatIo)
            {
                continue;
            }
            std::string add = tokenWith(layer, "Add");
            Finding finding = makeFinding(
                info(),
                "\"" + layer.name + "\" runs " + add + " as a separate PointWise layer after the conv + SiLU \"" +
                    plan.layers[*conv].name + "\" and reads or writes float (" + precisionText(inputPrecision(layer)) +
                    " -> " + precisionText(outputPrecision(layer)) +
                    "): the residual Add after an activation is likely not quantized on both inputs and its output.");
            finding.likely = true;
            finding.engineLayers = {layer.name, plan.layers[*conv].name};
            finding.onnxNodes.assign(context.correlation.layers[index].onnxNodes.begin(),
                                     context.correlation.layers[index].onnxNodes.end());
            finding.evidence.push_back(layerEvidence(context, index, "Outputs[0]",
                                                     layer.type + " " + precisionText(inputPrecision(layer)) + " -> " +
                                                         precisionText(outputPrecision(layer))));
            finding.costMs = sumTimes(context, {index});
            finding.fix = "in the ONNX model, put QuantizeLinear -> DequantizeLinear on both inputs of " + add +
                          " (the SiLU output and the residual) and a QuantizeLinear after " + add +
                          " so the PointWise layer runs INT8 in and out";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeActivationBeforeResidualAdd()
{
    return std::make_unique<ActivationBeforeResidualAdd>();
}

} // namespace qdq::rules
