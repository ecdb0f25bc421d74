// R20 standalone-qdq: a Q or DQ that TensorRT could not fuse runs as its own Quantize/Dequantize layer.
#include "qdq/layer_names.h"
#include "qdq/patterns.h"
#include "qdq/reformat_walks.h"
#include "rules/attention_common.h"
#include "rules/rules.h"

#include <map>

namespace qdq::rules
{

namespace
{

//! Whether a Q/DQ layer quantizes to FP8 or FP4 (TensorRT's DynamicQuantize: ../shared/realdata/FORMATS-trt11.md L4,
//! `(Unnamed Layer* 0) [DynamicQuantize]_output (FP8[3,16])`): the INT8-specific advice (INT8 conv layouts, INT8
//! input formats) does not apply to it.
bool quantizesToFp8OrFp4(const EngineLayer& layer)
{
    for (const auto* tensors : {&layer.inputs, &layer.outputs})
    {
        for (const EngineTensor& tensor : *tensors)
        {
            if (tensor.precision == Precision::kFP8 || tensor.precision == Precision::kFP4)
            {
                return true;
            }
        }
    }
    return false;
}

using namespace patterns;

bool isShapeOnly(const std::string& op)
{
    return op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze";
}

class StandaloneQdq final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "standalone-qdq",
            "R20",
            "A Quantize or Dequantize that TensorRT could not fuse runs as its own layer",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsPrediction | kReadsCorrelation,
            "the fixes of its causes (residual-input-not-quantized, conv-act-pool-blocked, qdq-inside-conv-epilogue, "
            "...) remove these layers; a lone Q/DQ with no such cause needs a decision about the model's accuracy"};
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
    struct Explanation
    {
        std::string why;   //!< per layer, for the evidence
        std::string cause; //!< groups layers in the fix
        std::string fix;
        bool expected = false; //!< a Quantize of a float network input
    };

    //! Why one standalone layer exists, read from its neighbours in the engine.
    Explanation explain(const Context& context, std::size_t index) const
    {
        const EnginePlan& plan = *context.engine();
        const EngineLayer& layer = plan.layers[index];
        Explanation result;
        if (layer.inputs.empty())
        {
            result.why = "its input is not listed";
            result.cause = "unknown";
            result.fix = "move the Q/DQ pair to the input of the nearest weighted op (Conv, Gemm, MatMul)";
            return result;
        }
        // Builder reformats between the producer and this layer carry the same data in another format (the TRT 8.2
        // MobileNetV2 engine of trex-tests-mobilenet-qat-2022-04 reformats every chw32 FP32 conv output to the linear
        // FP32 its Scale-layer Quantize reads): the producer and readers that matter are those of the model.
        const ReformatSource upstream = sourceThroughReformats(context, layer.inputs[0].name);
        const std::string& input = upstream.tensor;
        const std::string& modelTensor = upstream.modelTensor;
        const bool isQuantizeLayer = isQuantized(outputPrecision(layer));
        if (!upstream.producer)
        {
            result.why = "it quantizes the network input " + modelTensor;
            result.cause = "network input";
            result.fix =
                "expected for a float network input; if the preprocessing can quantize, io-reformat says how "
                "to feed FP16 with this Q kept, or INT8 instead (remove this Q from the model and keep its DQ, "
                "declare the INT8 format with --inputIOFormats, quantize with the Q's scale)";
            result.expected = isQuantizeLayer;
            return result;
        }
        const EngineLayer& source = plan.layers[*upstream.producer];
        auto isConvAdd = [&](const EngineLayer& l) {
            return l.inputs.size() >= 2 && layerNameHas(l, "Add") &&
                   (layerNameHas(l, "Conv") || layerNameHas(l, "Gemm"));
        };
        if (isQuantizeLayer)
        {
            for (const ReformatReader& reader : readersThroughReformats(context, input))
            {
                const EngineLayer& user = plan.layers[reader.layer];
                if (reader.layer != index && isConvAdd(user) && reader.input != 0)
                {
                    result.why = "its input " + modelTensor + " is also the residual input of \"" + user.name + "\"";
                    result.cause = "residual";
                    break;
                }
            }
            if (result.cause.empty() && isConvAdd(source))
            {
                result.why = "it requantizes the output of the fused Conv+Add \"" + source.name + "\"";
                result.cause = "residual";
            }
            if (!result.cause.empty())
            {
                result.fix = "quantize the residual (identity) inputs of those Adds with the scale of the Q/DQ that "
                             "follows them (see residual-input-not-quantized)";
                return result;
            }
        }
        else
        {
            for (const ReformatReader& reader :
                 readersThroughReformats(context, layer.outputs.empty() ? "" : layer.outputs[0].name))
            {
                const EngineLayer& user = plan.layers[reader.layer];
                if (isConvAdd(user) && isFloat(outputPrecision(user)))
                {
                    result.why = "it dequantizes the residual input of \"" + user.name + "\", whose output is " +
                                 std::string(precisionName(outputPrecision(user)));
                    result.cause = "float Conv+Add output";
                    result.fix =
                        "quantize the consumer of the last fused Conv+Add output (e.g. the pooling after it) so "
                        "that layer can emit INT8 and keep its residual INT8 (see residual-precision-mismatch)";
                    return result;
                }
            }
        }
        if (isFloat(outputPrecision(source)))
        {
            result.why = "its producer \"" + source.name + "\" (" + source.type + ") runs in " +
                         std::string(precisionName(outputPrecision(source)));
            result.cause = "float producer " + source.name;
            result.fix = "add a Q/DQ pair on the input of \"" + source.name +
                         "\" so it runs INT8 and absorbs this "
                         "Quantize, or move the Q/DQ to the input of the next weighted op";
            return result;
        }
        result.why = "it requantizes the INT8 output of \"" + source.name + "\"";
        result.cause = "requantize";
        result.fix = "give the Q/DQ around \"" + source.name + "\" one scale so the pair cancels, or remove the pair";
        return result;
    }

    void checkEngine(const Context& context, FindingSink& sink) const
    {
        const EnginePlan& plan = *context.engine();
        std::vector<std::size_t> standalone;
        std::vector<std::size_t> floatQuantizers;
        for (const auto& mapping : context.correlation.layers)
        {
            if (mapping.state == LayerState::kInsertedQdq)
            {
                (quantizesToFp8OrFp4(plan.layers[mapping.layer]) ? floatQuantizers : standalone)
                    .push_back(mapping.layer);
            }
        }
        if (!floatQuantizers.empty())
        {
            sink.add(describeFloatQuantizers(context, floatQuantizers));
        }
        if (standalone.empty())
        {
            return;
        }
        Finding finding = makeFinding(info(), "");
        std::map<std::string, std::pair<std::string, std::vector<std::string>>> layersByCause;
        bool allExpected = true;
        for (std::size_t index : standalone)
        {
            const EngineLayer& layer = plan.layers[index];
            Explanation explanation = explain(context, index);
            allExpected = allExpected && explanation.expected;
            finding.engineLayers.push_back(layer.name);
            for (const auto& node : context.correlation.layers[index].onnxNodes)
            {
                finding.onnxNodes.emplace_back(node);
            }
            auto time = layerTime(context, index);
            std::string text = layer.type + (layer.origin.empty() ? "" : ", Origin: " + layer.origin) + ", " +
                               std::string(precisionName(inputPrecision(layer))) + " -> " +
                               std::string(precisionName(outputPrecision(layer))) +
                               (time ? ", " + formatMs(*time) : "") + "; " + explanation.why;
            finding.evidence.push_back(layerEvidence(context, index, "", text));
            auto& group = layersByCause[explanation.cause];
            group.first = explanation.fix;
            group.second.push_back(layer.name);
        }
        if (allExpected)
        {
            finding.severity = Severity::kInfo;
        }
        finding.costMs = sumTimes(context, standalone);
        finding.message = std::to_string(standalone.size()) + " Q/DQ node(s) run as their own layer" +
                          (finding.costMs ? " and cost " + formatMs(*finding.costMs) + " in total" : "") + ": " +
                          nameList(finding.engineLayers, 6) + ".";
        for (const auto& [cause, group] : layersByCause)
        {
            finding.fix += (finding.fix.empty() ? "" : "; ") + std::string("for ") + nameList(group.second, 3) + ": " +
                           group.first;
        }
        sink.add(std::move(finding));
    }

    //! FP8/FP4 quantize layers of their own (TensorRT's DynamicQuantize, `{ForeignNode[(Unnamed Layer* 0)
    //! [DynamicQuantize]]}`: ../shared/realdata/cookbook111-dynquant-fp8-fp4-h100/log-main.py.log:83): Myelin compiles
    //! the quantizer, which computes its block scales at run time, as a kernel. Named, with none of the INT8 advice.
    Finding describeFloatQuantizers(const Context& context, const std::vector<std::size_t>& layers) const
    {
        const EnginePlan& plan = *context.engine();
        Finding finding = makeFinding(info(), "");
        finding.severity = Severity::kInfo;
        finding.engineLayers = layerNames(context, layers);
        for (std::size_t index : layers)
        {
            const EngineLayer& layer = plan.layers[index];
            for (const auto& node : context.correlation.layers[index].onnxNodes)
            {
                finding.onnxNodes.emplace_back(node);
            }
            finding.evidence.push_back(layerEvidence(context, index, "",
                                                     layer.type + ", " +
                                                         std::string(precisionName(inputPrecision(layer))) + " -> " +
                                                         std::string(precisionName(outputPrecision(layer)))));
        }
        finding.costMs = sumTimes(context, layers);
        finding.message = std::to_string(layers.size()) +
                          " FP8/FP4 quantize layer(s) run as their own kernel: " + nameList(finding.engineLayers, 6) +
                          ". A DynamicQuantize computes its scales at run time; alone in its region it fused into "
                          "no consumer.";
        finding.fix = "expected where the quantizer reads a network input or its consumer is not compiled with it; "
                      "otherwise keep the quantizer and the layer that reads its output in one Myelin region (no "
                      "float-only op between them)";
        finding.likely = true;
        return finding;
    }

    //! A lone Q behind a float average pooling (through shape ops such as Flatten): TensorRT runs the pooling in INT8
    //! when its input is quantized, and the Q then fuses into it (the GlobalAveragePool recipe of the real A100
    //! ResNet engines). Adds the edit that quantizes the pooling's input, which needs a calibrated scale.
    static void addPoolingInputEdit(const OnnxGraph& graph, const OnnxNode& q, Finding& finding)
    {
        const OnnxNode* producer = q.inputs.empty() ? nullptr : producerOf(graph, q.inputs[0]);
        for (int step = 0; producer != nullptr && step < 4 && isShapeOnly(producer->opType); ++step)
        {
            producer = producer->inputs.empty() ? nullptr : producerOf(graph, producer->inputs[0]);
        }
        if (producer == nullptr || !isAveragePooling(graph, *producer) || producer->inputs.empty() ||
            feedingDequantize(graph, producer->inputs[0]) != nullptr || isGraphInput(graph, producer->inputs[0]))
        {
            return;
        }
        // The Q after the pooling measures the average, whose range is narrower than its input's (the mean of a
        // channel is at most its largest value): its scale would clip the input (resnet18-qat-residual: the largest
        // difference of the fixes measured in docs/fix.md). The edit goes in without a scale, so fix lists it as
        // skipped with this reason and the input is left to calibration.
        finding.edits.push_back(insertQdqEdit(*producer, producer->inputs[0], std::string(),
                                              "calibrate this tensor: the pooling's input " + producer->inputs[0] +
                                                  " needs its own scale; " + q.name +
                                                  " after the pooling measures the average, whose range is "
                                                  "narrower, so its scale would clip the input"));
    }

    //! A lone DQ that writes a network output behind a Q it alone reads, of the output of a weighted op (Conv, Gemm,
    //! MatMul, ...): the pair only rounds the output to INT8 and costs a Dequantize layer; without it the op, INT8 in,
    //! writes the float output itself (ONNX Runtime's QDQ models end so: Gemm -> Q -> DQ -> output). Adds the edit that
    //! removes the pair. Not behind other ops: an INT8 Resize, Add or pooling needs its output Q (reference 1.8), so
    //! the lone DQ would only move before it (SqueezeNet's Flatten, DeepLabV3's Resize before the output).
    static void addOutputPairEdit(const OnnxGraph& graph, const OnnxNode& dq, Finding& finding)
    {
        if (dq.inputs.empty() || dq.outputs.empty() || !isGraphOutput(graph, dq.outputs[0]))
        {
            return;
        }
        const OnnxNode* q = producerOf(graph, dq.inputs[0]);
        if (q == nullptr || !isQuantize(*q) || q->inputs.empty() || consumersOf(graph, dq.inputs[0]).size() != 1 ||
            isGraphOutput(graph, dq.inputs[0]) || isGraphOutput(graph, q->inputs[0]))
        {
            return;
        }
        const OnnxNode* producer = producerOf(graph, q->inputs[0]);
        if (producer == nullptr || !isWeighted(graph, *producer))
        {
            return;
        }
        finding.edits.push_back(removeQdqPairEdit(*q, dq));
    }

    //! A DQ of an integer op's output, or a Q read by integer ops (ONNX Runtime's QOperator format): its fate after
    //! the re-quantization that format needs is not this graph's.
    static bool nextToIntegerOp(const OnnxGraph& graph, const OnnxNode& node)
    {
        if (isDequantize(node))
        {
            const OnnxNode* producer = node.inputs.empty() ? nullptr : producerOf(graph, node.inputs[0]);
            return producer != nullptr && isOperatorFormatQuantized(*producer);
        }
        for (const auto& output : node.outputs)
        {
            for (const OnnxNode* consumer : consumersOf(graph, output))
            {
                if (isOperatorFormatQuantized(*consumer))
                {
                    return true;
                }
            }
        }
        return false;
    }

    void checkPrediction(const Context& context, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        // One finding for the Quantize of network inputs (expected), one for every other lone Q/DQ.
        Finding inputs = makeFinding(info(), "");
        Finding lone = makeFinding(info(), "");
        inputs.severity = Severity::kInfo;
        inputs.likely = lone.likely = true;
        std::map<std::string, std::vector<std::string>> byReason;
        // The Q/DQ of an attention with the documented placement are consumed by TensorRT's fused attention (developer
        // guide, MHA fusion); the simulator predicts activation MatMuls apart from it.
        const std::vector<const OnnxNode*> attentionQdq = attention::documentedAttentionQdq(graph);
        for (const auto& predicted : context.prediction.qdq)
        {
            if (predicted.fate != PredictedQdq::Fate::kStandalone)
            {
                continue;
            }
            const OnnxNode* node = graph.findNode(predicted.node);
            if (node == nullptr || std::find(attentionQdq.begin(), attentionQdq.end(), node) != attentionQdq.end())
            {
                continue;
            }
            bool networkInput = predicted.isQuantize && !node->inputs.empty() && isGraphInput(graph, node->inputs[0]);
            if (!networkInput && nextToIntegerOp(graph, *node))
            {
                continue; // the model does not import at all: quantized-op-not-importable
            }
            Finding& target = networkInput ? inputs : lone;
            target.onnxNodes.push_back(node->name);
            target.evidence.push_back(nodeEvidence(context, *node, predicted.reason()));
            if (!networkInput && predicted.isQuantize)
            {
                addPoolingInputEdit(graph, *node, lone);
            }
            else if (!predicted.isQuantize)
            {
                addOutputPairEdit(graph, *node, lone);
            }
        }
        if (!inputs.onnxNodes.empty())
        {
            inputs.message = "QuantizeLinear " + nameList(inputs.onnxNodes, 4) +
                             " quantizes a float network input and is likely to run as its own layer (expected).";
            inputs.fix = "nothing to do for a float input (see io-reformat)";
            sink.add(std::move(inputs));
        }
        if (!lone.onnxNodes.empty())
        {
            lone.message =
                std::to_string(lone.onnxNodes.size()) +
                " Q/DQ node(s) are likely to run as their own layers, with no quantized neighbour to fuse into: " +
                nameList(lone.onnxNodes, 6) +
                " (each node's reason is in the evidence). Regions TensorRT compiles with Myelin (attention, "
                "LayerNorm, GELU in transformers) can absorb some of these.";
            lone.fix = "remove each lone pair, or move it to the input of the nearest weighted op; a Q needs a "
                       "quantized producer and a DQ a quantized consumer to fuse into";
            std::vector<std::string> poolingInputs;
            std::vector<std::string> outputPairs;
            for (const FixEdit& edit : lone.edits)
            {
                (edit.kind == FixEdit::Kind::kInsertQdq ? poolingInputs : outputPairs).push_back(edit.tensor);
            }
            if (!poolingInputs.empty())
            {
                lone.fix += "; a Q after a float pooling: quantize the pooling's input too (" +
                            nameList(poolingInputs, 1) +
                            ") with a scale calibrated for that tensor (the Q after the pooling measures the "
                            "average, a narrower range), so the pooling runs in INT8 and the Q fuses into it";
            }
            if (!outputPairs.empty())
            {
                lone.fix += "; a Q -> DQ pair before a network output only rounds it to INT8: remove it, so that the "
                            "layer writing " +
                            nameList(outputPairs, 1) + " writes the float output itself";
            }
            sink.add(std::move(lone));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeStandaloneQdq()
{
    return std::make_unique<StandaloneQdq>();
}

} // namespace qdq::rules
