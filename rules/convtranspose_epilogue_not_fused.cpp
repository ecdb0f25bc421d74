// R25 convtranspose-epilogue-not-fused: DQ -> ConvTranspose -> {BatchNormalization | activation} -> Q. TensorRT does
// not fuse BN into a quantized ConvTranspose, and the ConvTranspose + activation fusion is fragile, so the
// deconvolution runs INT8-in / float-out followed by separate BN/activation layers and a standalone Quantize.
#include "rules/build_mode_advice.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace precision;

class ConvTransposeEpilogueNotFused final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "convtranspose-epilogue-not-fused",
            "R25",
            "A quantized ConvTranspose followed by BatchNormalization or an activation and a Q is likely not fused: "
            "INT8-in / float-out deconvolution plus separate layers",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "folding BatchNormalization into the ConvTranspose weights needs the weights and a re-export"};
        return kInfo;
    }

private:
    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& node : graph.nodes)
        {
            if (node.opType != "ConvTranspose" || node.inputs.size() < 2 || node.outputs.empty() ||
                feedingDequantize(graph, node.inputs[0]) == nullptr)
            {
                continue;
            }
            EpilogueChain chain = epilogueChain(graph, node);
            if (chain.nodes.empty())
            {
                continue;
            }
            auto forward = forwardQuantizers(graph, chain.tensor(), true);
            if (forward.quantizers.empty())
            {
                continue; // no Q after the epilogue: the float output is int8-conv-float-output's business
            }
            sink.add(unfusedFinding(context, node, chain, *forward.quantizers[0]));
        }
    }

    //! Weight quantization axis: per-channel ConvTranspose weights are version dependent.
    static std::string weightAxisNote(const OnnxGraph& graph, const OnnxNode& node)
    {
        std::string axisNote;
        if (const OnnxNode* weightDq = feedingDequantize(graph, node.inputs[1]))
        {
            const QdqParameters* parameters = graph.qdqOf(weightDq->index);
            if (parameters != nullptr && parameters->scale.size() > 1)
            {
                axisNote = " Its weights are quantized per channel (" + weightDq->name + ", axis " +
                           std::to_string(parameters->axis.value_or(1)) +
                           "): TensorRT 8.x deconvolution kernels expect axis 0 and later versions differ; per-tensor "
                           "weights are the portable choice.";
            }
        }
        return axisNote;
    }

    static std::string unfusedFix(const Context& context, const OnnxNode& node, const OnnxNode* bn,
                                  const std::vector<std::string>& activations, const std::string& axisNote)
    {
        std::vector<std::string> fixes;
        if (bn != nullptr)
        {
            fixes.push_back("fold " + bn->name + " into the weights and bias of " + node.name + " before export");
        }
        if (!activations.empty())
        {
            fixes.push_back(
                "if " + nameList(activations, 2) +
                " still does not fuse, place QuantizeLinear -> DequantizeLinear directly on the output of " +
                node.name + " (ConvT -> Q -> DQ -> activation) and accept a separate INT8 PointWise layer");
        }
        if (!axisNote.empty())
        {
            fixes.push_back("quantize the ConvTranspose weights per tensor");
        }
        fixes.push_back("or keep " + node.name + " in " + floatTypeWithoutQdq(context) + " (remove its input Q/DQ)");
        return nameList(fixes, 4);
    }

    Finding unfusedFinding(const Context& context, const OnnxNode& node, const EpilogueChain& chain,
                           const OnnxNode& quantizer) const
    {
        const OnnxGraph& graph = *context.graph();
        const OnnxNode* bn = nullptr;
        std::vector<std::string> activations;
        for (const OnnxNode* epilogue : chain.nodes)
        {
            if (epilogue->opType == "BatchNormalization")
            {
                bn = epilogue;
            }
            else
            {
                activations.push_back(epilogue->name);
            }
        }
        const std::string axisNote = weightAxisNote(graph, node);
        std::vector<std::string> epilogueNames;
        for (const OnnxNode* epilogue : chain.nodes)
        {
            epilogueNames.push_back(epilogue->name);
        }
        Finding finding = makeFinding(
            info(), "ConvTranspose " + node.name + " is quantized and followed by " + nameList(epilogueNames, 4) +
                        " and then " + quantizer.name + ": " +
                        (bn != nullptr ? "TensorRT does not fuse BatchNormalization into a quantized ConvTranspose"
                                       : "the quantized ConvTranspose + activation fusion is fragile") +
                        ", so the deconvolution likely runs INT8-in / float-out with separate " +
                        (bn != nullptr ? "BN/activation" : "activation") + " layers and a standalone Quantize." +
                        axisNote);
        finding.likely = true;
        finding.onnxNodes = {node.name};
        finding.onnxNodes.insert(finding.onnxNodes.end(), epilogueNames.begin(), epilogueNames.end());
        finding.onnxNodes.push_back(quantizer.name);
        finding.evidence.push_back(
            nodeEvidence(context, node,
                         "DQ-fed ConvTranspose, epilogue " + nameList(epilogueNames, 4) + ", then " + quantizer.name));
        finding.fix = unfusedFix(context, node, bn, activations, axisNote);
        if (const EnginePlan* plan = context.engine())
        {
            addEngineLayers(context, *plan, node, chain, quantizer, finding);
        }
        return finding;
    }

    //! The deconvolution's layers, and the epilogue and Quantize layers that run separately (the cost).
    static void addEngineLayers(const Context& context, const EnginePlan& plan, const OnnxNode& node,
                                const EpilogueChain& chain, const OnnxNode& quantizer, Finding& finding)
    {
        std::vector<std::size_t> separate;
        std::vector<std::size_t> convLayers = layersOf(context, node.name);
        for (const OnnxNode* epilogue : chain.nodes)
        {
            for (std::size_t layer : layersOf(context, epilogue->name))
            {
                if (std::find(convLayers.begin(), convLayers.end(), layer) == convLayers.end())
                {
                    addUnique(separate, layer);
                }
            }
        }
        for (std::size_t layer : layersOf(context, quantizer.name))
        {
            if (isStandaloneQdq(context, layer))
            {
                addUnique(separate, layer);
            }
        }
        finding.engineLayers = layerNames(context, convLayers);
        for (std::size_t layer : separate)
        {
            finding.engineLayers.push_back(plan.layers[layer].name);
            finding.evidence.push_back(layerEvidence(context, layer, "", "separate " + plan.layers[layer].type));
        }
        finding.costMs = sumTimes(context, separate);
    }

    //! Engine: a deconvolution layer with INT8 input and float output whose consumer is a separate activation /
    //! PointWise / Scale layer.
    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& layer = plan.layers[index];
            if (layer.type.find("Deconvolution") == std::string::npos || layer.outputs.empty() ||
                !isQuantized(inputPrecision(layer)) || !isFloat(outputPrecision(layer)))
            {
                continue;
            }
            std::vector<std::size_t> separate;
            for (std::size_t consumer : consumerLayers(plan, layer.outputs[0].name))
            {
                const std::string& type = plan.layers[consumer].type;
                if (type.find("PointWise") != std::string::npos || type == "Scale" || type == "Activation" ||
                    type.find("Activation") != std::string::npos)
                {
                    separate.push_back(consumer);
                    for (const auto& output : plan.layers[consumer].outputs)
                    {
                        for (std::size_t next : consumerLayers(plan, output.name))
                        {
                            if (isStandaloneQuantize(context, next))
                            {
                                separate.push_back(next);
                            }
                        }
                    }
                }
            }
            if (separate.empty())
            {
                continue;
            }
            std::vector<std::string> names = layerNames(context, separate);
            Finding finding = makeFinding(
                info(), "Deconvolution \"" + layer.name + "\" runs INT8-in / " + precisionText(outputPrecision(layer)) +
                            "-out and its epilogue runs separately in " + nameList(names, 3) +
                            ": the ConvTranspose BN/activation fusion likely did not happen with Q/DQ.");
            finding.likely = true;
            finding.engineLayers = {layer.name};
            finding.engineLayers.insert(finding.engineLayers.end(), names.begin(), names.end());
            finding.onnxNodes.assign(context.correlation.layers[index].onnxNodes.begin(),
                                     context.correlation.layers[index].onnxNodes.end());
            finding.evidence.push_back(
                layerEvidence(context, index, "Outputs[0]",
                              precisionText(inputPrecision(layer)) + " -> " + precisionText(outputPrecision(layer))));
            for (std::size_t s : separate)
            {
                finding.evidence.push_back(layerEvidence(context, s, "", plan.layers[s].type));
            }
            finding.costMs = sumTimes(context, separate);
            finding.fix = "in the ONNX model, fold the BatchNormalization into the ConvTranspose weights; if the "
                          "activation still does not fuse, put Q/DQ directly after the ConvTranspose (ConvT -> Q -> DQ "
                          "-> activation); use per-tensor ConvTranspose weights; or keep the ConvTranspose in " +
                          floatTypeWithoutQdq(context);
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeConvTransposeEpilogueNotFused()
{
    return std::make_unique<ConvTransposeEpilogueNotFused>();
}

} // namespace qdq::rules
