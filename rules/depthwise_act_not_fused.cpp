// R27 depthwise-act-not-fused: a depthwise convolution and its activation (Sigmoid * Mul = SiLU/Swish, HardSwish,
// ...) run as two layers, the activation a separate PointWise layer reading the convolution's float output, while the
// engine's other convolutions carry their activations fused. TensorRT prefers a depthwise kernel that cannot chain a
// pointwise epilogue (NVIDIA/TensorRT#3205).
#include "rules/kernel_common.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace kernels;

//! An activation a conv epilogue would carry, by the name tokens of a PointWise layer.
bool runsActivation(const EngineLayer& layer)
{
    for (std::string_view op : {"Sigmoid", "Swish", "SiLU", "Silu", "HardSwish", "Relu", "Clip", "Gelu", "Mish"})
    {
        if (layerNameHas(layer, op))
        {
            return true;
        }
    }
    return false;
}

class DepthwiseActNotFused final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "depthwise-act-not-fused",
            "R27",
            "A depthwise convolution and its activation run as two layers (a separate PointWise layer in float)",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "the remedy (a Q/DQ on the depthwise output so the activation runs INT8) pays only if TensorRT then "
            "picks INT8 kernels for both, which the model's owner has to measure; `fix` does not guess it"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        if (context.engine() == nullptr)
        {
            return; // the engine tells whether the activation was fused
        }
        const EnginePlan& plan = *context.engine();
        const auto& mappings = context.correlation.layers;
        if (mappings.size() != plan.layers.size())
        {
            return;
        }
        // "Other convolutions in the same engine fuse": some non-depthwise convolution carries an activation.
        bool othersFuse = false;
        std::vector<std::size_t> depthwise;
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            const EngineLayer& layer = plan.layers[i];
            if (layer.type.find("onv") == std::string::npos)
            {
                continue; // cheapest test first: every convolution type says so
            }
            auto shape = matrixLayer(layer, mappings[i].state);
            if (!shape || shape->kind != "convolution")
            {
                continue;
            }
            if (shape->depthwise)
            {
                depthwise.push_back(i);
            }
            else if (!othersFuse && (!layer.activation.empty() && layer.activation != "NONE"))
            {
                othersFuse = true;
            }
        }
        for (std::size_t conv : depthwise)
        {
            const EngineLayer& layer = plan.layers[conv];
            const auto readers = consumerLayers(plan, layer.outputs[0].name);
            if (readers.size() != 1)
            {
                continue;
            }
            const std::size_t act = readers.front();
            const EngineLayer& activation = plan.layers[act];
            if (layerKind(activation, mappings[act].state) != "pointwise" || !runsActivation(activation) ||
                !isFloat(outputPrecision(layer)))
            {
                continue;
            }
            Finding finding = makeFinding(
                info(), "Depthwise convolution \"" + layer.name + "\" and its activation \"" + activation.name +
                            "\" run as two layers, with " + std::string(precisionName(outputPrecision(layer))) +
                            " data between them" +
                            (othersFuse ? ", while the engine's other convolutions carry their activations" : "") +
                            ": TensorRT likely chose a depthwise kernel that cannot chain a pointwise epilogue.");
            finding.likely = true;
            finding.engineLayers = {layer.name, activation.name};
            for (std::size_t l : {conv, act})
            {
                for (const auto& node : mappings[l].onnxNodes)
                {
                    finding.onnxNodes.emplace_back(node);
                }
            }
            finding.evidence.push_back(
                layerEvidence(context, conv, "Outputs[0]",
                              describeTensor(layer.outputs[0]) + " read only by \"" + activation.name + "\""));
            finding.evidence.push_back(layerEvidence(context, act, "LayerType", activation.type));
            finding.costMs = layerTime(context, act);
            // The convolution node of the one layer and the activation node of the other, when the model is given.
            if (const OnnxGraph* graph = context.graph())
            {
                const auto nodeOf = [&](std::size_t l, bool wantConv) -> std::string
                {
                    for (const auto& name : mappings[l].onnxNodes)
                    {
                        const OnnxNode* node = graph->findNode(std::string(name));
                        if (node != nullptr && (node->opType == "Conv") == wantConv && !isQuantize(*node) &&
                            !isDequantize(*node))
                        {
                            return node->name;
                        }
                    }
                    return {};
                };
                const std::string convNode = nodeOf(conv, true);
                const std::string actNode = nodeOf(act, false);
                if (!convNode.empty() && !actNode.empty())
                {
                    finding.claims.push_back({EngineClaim::Kind::kSeparateLayers, {convNode, actNode}});
                    finding.claims.push_back({EngineClaim::Kind::kKeepApart, {convNode, actNode}});
                }
            }
            finding.fix = "quantize the depthwise convolution's output (a Q/DQ pair before the activation, on both "
                          "inputs of a Sigmoid * Mul) so the activation runs INT8 in and out, and measure; or accept "
                          "the separate layer (the depthwise kernel TensorRT chose is faster than the fused one)";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeDepthwiseActNotFused()
{
    return std::make_unique<DepthwiseActNotFused>();
}

} // namespace qdq::rules
