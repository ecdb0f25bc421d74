// R05 weighted-op-input-not-quantized: a Conv/ConvTranspose/Gemm/MatMul-with-constant-weight with a DQ on one of
// its two inputs but not on the other. TensorRT fuses a weighted op into a quantized kernel only when both its data
// and its weight are dequantized; half-quantized ops run in float with a standalone dequantize in front.
#include "qdq/patterns.h"
#include "rules/rules.h"
#include "rules/weight_paths.h"

#include <set>

namespace qdq::rules
{

namespace
{

using namespace patterns;

//! True when tensor is dequantized: produced by a DQ, walking back through commuting ops (every non-constant input
//! of a Concat must be dequantized).
bool activationQuantized(const OnnxGraph& graph, const std::string& tensor, int depth, TensorMemo& memo);

bool decideActivationQuantized(const OnnxGraph& graph, const std::string& tensor, int depth, TensorMemo& memo)
{
    const OnnxNode* producer = producerOf(graph, tensor);
    if (producer == nullptr || depth > 64)
    {
        return false;
    }
    if (isDequantize(*producer))
    {
        return true;
    }
    if (!isCommuting(producer->opType) || producer->inputs.empty())
    {
        return false;
    }
    if (producer->opType == "Concat")
    {
        bool any = false;
        for (const auto& input : producer->inputs)
        {
            if (input.empty() || isConstantTensor(graph, input))
            {
                continue;
            }
            if (!activationQuantized(graph, input, depth + 1, memo))
            {
                return false;
            }
            any = true;
        }
        return any;
    }
    return activationQuantized(graph, producer->inputs[0], depth + 1, memo);
}

//! Each tensor decided once (TensorMemo): a Concat of one tensor at every level stays linear, a cycle ends the walk.
bool activationQuantized(const OnnxGraph& graph, const std::string& tensor, int depth, TensorMemo& memo)
{
    return memo.decide(graph.tensors.find(TensorKey(tensor)),
                       [&] { return decideActivationQuantized(graph, tensor, depth, memo); });
}

bool activationQuantized(const OnnxGraph& graph, const std::string& tensor)
{
    TensorMemo memo;
    return decideActivationQuantized(graph, tensor, 0, memo);
}

bool isWeightedLayer(const EngineLayer& layer)
{
    const std::string& type = layer.type;
    return type.find("Conv") != std::string::npos || type.find("Deconv") != std::string::npos ||
           type.find("Gemm") != std::string::npos || type.find("FullyConnected") != std::string::npos ||
           type.find("MatrixMultiply") != std::string::npos;
}

class WeightedOpInputNotQuantized final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "weighted-op-input-not-quantized",
            "R05",
            "A weighted op (Conv, ConvTranspose, Gemm, MatMul with a constant weight) has a Q/DQ on only one of its "
            "data and weight inputs, so it cannot run as a quantized layer",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "quantizing the input needs its scale from calibration data (re-export with an input quantizer on the op)"};
        return kInfo;
    }

private:
    //! True when the graph quantizes any activation (a DQ whose input is not computed from constants).
    static bool quantizesActivations(const OnnxGraph& graph)
    {
        for (const auto& parameters : graph.qdq)
        {
            const OnnxNode& node = graph.nodes[parameters.node];
            if (!parameters.isQuantize && !weights::quantizesConstant(graph, node))
            {
                return true;
            }
        }
        return false;
    }

    //! Weight-only quantization (TensorRT 10 WoQ): INT4 or block-quantized MatMul/Gemm weights with float data.
    static bool isWeightOnlyQuantization(const OnnxGraph& graph, const OnnxNode& node, const OnnxNode& weightDq)
    {
        if (node.opType != "MatMul" && node.opType != "Gemm")
        {
            return false;
        }
        const QdqParameters* parameters = graph.qdqOf(weightDq.index);
        if (parameters != nullptr && parameters->blockSize)
        {
            return true;
        }
        const OnnxConstant* weight = weights::weightConstant(graph, weightDq, nullptr);
        return weight != nullptr &&
               (weight->dataType == OnnxDataType::kInt4 || weight->dataType == OnnxDataType::kUint4);
    }

    //! Engine layers and cost for a weighted node plus any standalone layer executing the given Q/DQ nodes.
    static void attachEngine(const Context& context, const OnnxNode& node, const std::vector<const OnnxNode*>& qdq,
                             Finding& finding, std::vector<std::size_t>& costly)
    {
        if (context.engine() == nullptr)
        {
            return;
        }
        auto layers = layersOf(context, node.name);
        for (std::size_t layer : layers)
        {
            costly.push_back(layer);
            const EngineLayer& l = context.engine()->layers[layer];
            std::string text = "inputs " + std::string(precisionName(inputPrecision(l, 0)));
            if (l.weightsPrecision)
            {
                text += ", weights " + std::string(precisionName(*l.weightsPrecision));
            }
            finding.evidence.push_back(layerEvidence(context, layer, "", text));
        }
        for (const OnnxNode* member : qdq)
        {
            for (std::size_t layer : layersOf(context, member->name))
            {
                if (context.correlation.layers[layer].state == LayerState::kInsertedQdq)
                {
                    layers.push_back(layer);
                    costly.push_back(layer);
                    finding.evidence.push_back(
                        layerEvidence(context, layer, "", "standalone layer executing " + member->name));
                }
            }
        }
        auto names = layerNames(context, layers);
        finding.engineLayers.insert(finding.engineLayers.end(), names.begin(), names.end());
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        const bool activationsQuantized = quantizesActivations(graph);
        std::vector<const OnnxNode*> floatOps;
        bool anyQuantizedOp = false;
        for (const auto& node : graph.nodes)
        {
            if (!isWeighted(graph, node) || node.inputs.size() < 2 || node.inputs[0].empty() || node.inputs[1].empty())
            {
                continue;
            }
            const bool dataQuantized = activationQuantized(graph, node.inputs[0]);
            const OnnxNode* weightDq = weights::weightDequantize(graph, node.inputs[1]);
            if (dataQuantized && weightDq != nullptr)
            {
                anyQuantizedOp = true;
                continue;
            }
            if (!dataQuantized && weightDq == nullptr)
            {
                floatOps.push_back(&node);
                continue;
            }
            if (dataQuantized)
            {
                reportFloatWeight(context, node, sink);
            }
            else if (activationsQuantized && !isWeightOnlyQuantization(graph, node, *weightDq))
            {
                reportFloatData(context, node, *weightDq, sink);
            }
        }
        if (anyQuantizedOp && !floatOps.empty())
        {
            reportFloatOps(context, floatOps, sink);
        }
    }

    void reportFloatWeight(const Context& context, const OnnxNode& node, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        const std::string& weight = node.inputs[1];
        const OnnxNode* dataDq = feedingDequantize(graph, node.inputs[0]);
        const OnnxConstant* constant = graph.constant(weight);
        Finding finding = makeFinding(
            info(),
            node.opType + " " + node.name + " has a dequantized data input" +
                (dataDq ? " (from " + dataDq->name + ")" : "") + " but its weight " + weight +
                " has no QuantizeLinear/DequantizeLinear: TensorRT needs Q/DQ on both inputs to build a quantized "
                "layer, so " +
                node.name + " runs in float and the input dequantize runs as a separate layer.");
        finding.onnxNodes = {node.name};
        if (dataDq != nullptr)
        {
            finding.onnxNodes.push_back(dataDq->name);
        }
        finding.evidence.push_back(nodeEvidence(context, node, "input 1 (weight) " + weight + " is not dequantized"));
        auto expected = weights::expectedWeightAxis(node, constant != nullptr ? constant->dims.size() : 0);
        std::string axis =
            expected ? "per-channel with axis=" + std::to_string(*expected) : std::string("per-tensor (ConvTranspose)");
        finding.fix = "insert QuantizeLinear -> DequantizeLinear on the weight " + weight + " of " + node.name + " (" +
                      axis + ", scale = max|w| / 127 per channel), or remove " +
                      (dataDq ? dataDq->name + " and its QuantizeLinear" : std::string("the Q/DQ on its data input")) +
                      " if " + node.name + " is meant to stay in float";
        std::vector<std::size_t> costly;
        attachEngine(context, node, dataDq ? std::vector<const OnnxNode*>{dataDq} : std::vector<const OnnxNode*>{},
                     finding, costly);
        finding.costMs = sumTimes(context, costly);
        sink.add(std::move(finding));
    }

    void reportFloatData(const Context& context, const OnnxNode& node, const OnnxNode& weightDq,
                         FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        const std::string& data = node.inputs[0];
        const OnnxNode* producer = producerOf(graph, data);
        // A scale for the new Q/DQ: another consumer of the same tensor may already quantize it.
        std::string scaleHint;
        auto existing = forwardQuantizers(graph, data, false);
        if (!existing.quantizers.empty())
        {
            if (auto scale = perTensorScale(graph, *existing.quantizers[0]))
            {
                scaleHint = " with the scale of " + existing.quantizers[0]->name + " (" + weights::formatValue(*scale) +
                            ") that already quantizes this tensor";
            }
        }
        Finding finding = makeFinding(
            info(), node.opType + " " + node.name + " has a quantized weight (" + weightDq.name +
                        ") but its data input " + data +
                        (producer                    ? " (from " + producer->name + ")"
                         : isGraphInput(graph, data) ? " (a network input)"
                                                     : "") +
                        " has no DequantizeLinear: explicit quantization never quantizes an input on its own, so " +
                        node.name + " runs in float with dequantized float weights.");
        finding.onnxNodes = {node.name, weightDq.name};
        if (producer != nullptr)
        {
            finding.onnxNodes.push_back(producer->name);
        }
        finding.evidence.push_back(nodeEvidence(context, node, "input 0 (data) " + data + " is not dequantized"));
        finding.fix = "insert QuantizeLinear -> DequantizeLinear (per-tensor scale" + scaleHint + ") on tensor " +
                      data + " (input 0 of " + node.name + "), or remove the weight Q/DQ " + weightDq.name + " if " +
                      node.name + " is meant to stay in float";
        std::vector<std::size_t> costly;
        attachEngine(context, node, {}, finding, costly);
        finding.costMs = sumTimes(context, costly);
        sink.add(std::move(finding));
    }

    void reportFloatOps(const Context& context, const std::vector<const OnnxNode*>& floatOps, FindingSink& sink) const
    {
        std::vector<std::string> names;
        for (const OnnxNode* node : floatOps)
        {
            names.push_back(node->name);
        }
        Finding finding = makeFinding(
            info(),
            std::to_string(floatOps.size()) + " weighted op" + (floatOps.size() == 1 ? "" : "s") + " (" +
                nameList(names, 4) + ") " + (floatOps.size() == 1 ? "has" : "have") +
                " no Q/DQ on either input and will run in float while the rest of the model is quantized. Models "
                "often keep the first or last layer in float on purpose (accuracy); check that this is intended.");
        finding.severity = Severity::kInfo;
        finding.onnxNodes = names;
        std::vector<std::size_t> costly;
        for (const OnnxNode* node : floatOps)
        {
            finding.evidence.push_back(nodeEvidence(context, *node, "neither input is dequantized"));
            attachEngine(context, *node, {}, finding, costly);
        }
        finding.costMs = sumTimes(context, costly);
        finding.fix =
            "nothing to do if these layers are meant to stay in float; otherwise insert Q/DQ on both the data "
            "input (per-tensor) and the weight (per-channel, output-channel axis) of " +
            nameList(names, 4);
        sink.add(std::move(finding));
    }

    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& layer = plan.layers[index];
            if (!isWeightedLayer(layer) || !layer.weightsPrecision || layer.inputs.empty())
            {
                continue;
            }
            const Precision input = inputPrecision(layer, 0);
            const Precision weightsType = *layer.weightsPrecision;
            if (isQuantized(weightsType) && isFloat(input))
            {
                Finding finding = makeFinding(
                    info(),
                    "Layer \"" + layer.name + "\" has " + std::string(precisionName(weightsType)) + " weights but a " +
                        std::string(precisionName(input)) +
                        " input: likely only its weight was quantized (a DQ on the weight, none on the data input).");
                finding.likely = true;
                finding.engineLayers = {layer.name};
                finding.onnxNodes = onnxNodesOf(context, index);
                finding.evidence.push_back(layerEvidence(context, index, "Inputs[0]",
                                                         layer.inputs[0].name + " " +
                                                             std::string(precisionName(input)) + ", weights " +
                                                             std::string(precisionName(weightsType))));
                finding.costMs = sumTimes(context, {index});
                finding.fix = "in the ONNX model, insert QuantizeLinear -> DequantizeLinear (per-tensor) on the data "
                              "input of the weighted op in \"" +
                              layer.name + "\" (tensor " + layer.inputs[0].name +
                              "), or drop its weight Q/DQ if it is meant "
                              "to stay in float (TensorRT 10 weight-only quantization excepted)";
                sink.add(std::move(finding));
                continue;
            }
            if (!isFloat(weightsType) || !isFloat(input))
            {
                continue;
            }
            // A float weighted layer whose input was dequantized from INT8 just before it: the data input carried
            // a DQ, the weight did not.
            auto dequantizer = dequantizingProducer(context, layer.inputs[0].name);
            if (!dequantizer)
            {
                continue;
            }
            const EngineLayer& dq = plan.layers[*dequantizer];
            Finding finding = makeFinding(
                info(), "Layer \"" + layer.name + "\" runs with " + std::string(precisionName(weightsType)) +
                            " weights although its input " + layer.inputs[0].name + " was dequantized from INT8 by \"" +
                            dq.name +
                            "\": likely its data input has a Q/DQ but its weight does not, so it could not run "
                            "as a quantized layer.");
            finding.likely = true;
            finding.engineLayers = {layer.name, dq.name};
            finding.onnxNodes = onnxNodesOf(context, index);
            finding.evidence.push_back(layerEvidence(context, index, "Weights.Type",
                                                     std::string(precisionName(weightsType)) + " weights, input " +
                                                         std::string(precisionName(input))));
            finding.evidence.push_back(layerEvidence(context, *dequantizer, "",
                                                     std::string(precisionName(inputPrecision(dq, 0))) + " -> " +
                                                         std::string(precisionName(outputPrecision(dq)))));
            finding.costMs = sumTimes(context, {index, *dequantizer});
            finding.fix = "in the ONNX model, insert QuantizeLinear -> DequantizeLinear (per-channel, output-channel "
                          "axis) on the weight of the weighted op in \"" +
                          layer.name + "\", or remove the Q/DQ on its data input if it is meant to stay in float";
            sink.add(std::move(finding));
        }
    }

    //! The standalone Dequantize layer that turned INT8 data into the float tensor, walking back through builder
    //! reformats; nullopt otherwise.
    static std::optional<std::size_t> dequantizingProducer(const Context& context, const std::string& tensor)
    {
        const EnginePlan& plan = *context.engine();
        std::string current = tensor;
        for (int depth = 0; depth < 4; ++depth)
        {
            auto producer = producerLayer(plan, current);
            if (!producer || plan.layers[*producer].inputs.empty())
            {
                return std::nullopt;
            }
            const EngineLayer& l = plan.layers[*producer];
            LayerState state = context.correlation.layers[*producer].state;
            if (state != LayerState::kInsertedQdq && state != LayerState::kInsertedReformat)
            {
                return std::nullopt;
            }
            // Only a Q/DQ layer of the model counts: a builder reformat from INT8 also feeds float layers that
            // share a tensor with a quantized consumer, which is no sign of a missing weight Q/DQ.
            if (state == LayerState::kInsertedQdq && isQuantized(inputPrecision(l, 0)) && isFloat(outputPrecision(l)))
            {
                return producer;
            }
            current = l.inputs[0].name;
        }
        return std::nullopt;
    }

    static std::vector<std::string> onnxNodesOf(const Context& context, std::size_t layer)
    {
        if (layer < context.correlation.layers.size() && !context.correlation.layers[layer].onnxNodes.empty())
        {
            const auto& nodes = context.correlation.layers[layer].onnxNodes;
            return std::vector<std::string>(nodes.begin(), nodes.end());
        }
        return {};
    }
};

} // namespace

std::unique_ptr<Rule> makeWeightedOpInputNotQuantized()
{
    return std::make_unique<WeightedOpInputNotQuantized>();
}

} // namespace qdq::rules
