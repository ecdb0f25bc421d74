// R18 concat-mixed-precision: a Concat whose inputs are partly INT8 and partly float, or whose input tensor is also
// needed elsewhere in float while the Concat wants it in INT8. TensorRT then runs the concat in float with separate
// dequantize layers, or generates a copy of the input (`<tensor> copy`, "stomping hazard").
#include "rules/rules.h"
#include "rules/scale_walks.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace walks;

class ConcatMixedPrecision final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "concat-mixed-precision",
            "R18",
            "A Concat mixes INT8 and float inputs, or an input tensor is needed in float elsewhere, so the concat runs "
            "in float or is executed as copies",
            Severity::kWarning,
            "8.4-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "quantizing the float Concat inputs needs their scales from calibration data"};
        return kInfo;
    }

private:
    //! Copy layers of the engine that copy one of the Concat's inputs.
    static void attachCopies(const Context& context, const OnnxNode& concat, Finding& finding)
    {
        const EnginePlan* plan = context.engine();
        if (plan == nullptr)
        {
            return;
        }
        std::vector<std::size_t> costly;
        for (std::size_t layer : layersOf(context, concat.name))
        {
            finding.engineLayers.push_back(plan->layers[layer].name);
        }
        for (std::size_t index = 0; index < plan->layers.size(); ++index)
        {
            LayerNameParts parts = parseLayerName(plan->layers[index].name);
            if (!parts.tensorCopy)
            {
                continue;
            }
            for (const auto& input : concat.inputs)
            {
                if (!input.empty() && parts.copiedTensor.find(input) != std::string::npos)
                {
                    costly.push_back(index);
                    finding.engineLayers.push_back(plan->layers[index].name);
                    finding.evidence.push_back(layerEvidence(
                        context, index, "",
                        "copy of " + input + ", " + std::string(precisionName(inputPrecision(plan->layers[index]))) +
                            " -> " + std::string(precisionName(outputPrecision(plan->layers[index])))));
                    break;
                }
            }
        }
        finding.costMs = sumTimes(context, costly);
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& concat : graph.nodes)
        {
            if (concat.opType != "Concat" || concat.outputs.empty())
            {
                continue;
            }
            bool allPaths = true;
            auto reached = reachedQuantizers(graph, concat.outputs[0], {}, &allPaths);
            if (reached.empty())
            {
                checkFloatConcat(context, concat, sink);
            }
            else if (allPaths)
            {
                checkReusedInput(context, concat, *reached.front().q, sink);
            }
        }
    }

    //! No Q after the Concat: it runs in float; DQ-fed inputs next to float inputs mean separate dequantize layers.
    void checkFloatConcat(const Context& context, const OnnxNode& concat, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        std::vector<std::string> dqs;
        std::vector<std::string> floats;
        for (const auto& input : concat.inputs)
        {
            ConcatSource source = concatSource(graph, input);
            if (source.kind == ConcatSource::Kind::kDequantized)
            {
                if (std::find(dqs.begin(), dqs.end(), source.node->name) == dqs.end())
                {
                    dqs.push_back(source.node->name);
                }
            }
            else if (source.kind != ConcatSource::Kind::kConstant)
            {
                floats.push_back(input);
            }
        }
        if (dqs.empty() || floats.empty())
        {
            return;
        }
        Finding finding =
            makeFinding(info(), "Concat " + concat.name + " mixes INT8 inputs (dequantized by " + nameList(dqs, 3) +
                                    ") with float inputs (" + nameList(floats, 3) +
                                    ") and has no Q on its output: it runs in float, and " + nameList(dqs, 3) +
                                    " likely execute as separate dequantize layers in front of it.");
        finding.likely = true;
        finding.onnxNodes.push_back(concat.name);
        finding.onnxNodes.insert(finding.onnxNodes.end(), dqs.begin(), dqs.end());
        finding.evidence.push_back(nodeEvidence(context, concat,
                                                "DQ-fed inputs from " + nameList(dqs, 3) + ", float inputs " +
                                                    nameList(floats, 3) + ", output not quantized"));
        finding.fix = "either quantize every input of " + concat.name + " with one scale (Q/DQ on " +
                      nameList(floats, 3) + " with the scale of " + dqs.front() +
                      ") and put a Q/DQ after the Concat so it runs INT8 and is eliminated, "
                      "or remove " +
                      nameList(dqs, 3) + " and their Qs so the whole concat stays float";
        attachEngine(context, dqs, finding);
        attachCopies(context, concat, finding);
        sink.add(std::move(finding));
    }

    //! The Concat is quantized, so each input's producer emits INT8 for it; an input tensor also read by a float
    //! consumer must then exist in two precisions.
    void checkReusedInput(const Context& context, const OnnxNode& concat, const OnnxNode& q, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        std::vector<std::string> seen;
        for (const auto& input : concat.inputs)
        {
            if (input.empty() || std::find(seen.begin(), seen.end(), input) != seen.end())
            {
                continue;
            }
            seen.push_back(input);
            ConcatSource source = concatSource(graph, input);
            if (source.kind != ConcatSource::Kind::kCanAbsorb)
            {
                continue; // a DQ-fed input is dequantized per consumer; a float producer is concat-quantize-hoisted
            }
            // The tensors between the producer and the Concat (through ops a Q moves across) and their other readers.
            std::vector<std::string> floatReaders;
            std::string tensor = input;
            const OnnxNode* next = &concat;
            for (int depth = 0; depth < 16; ++depth)
            {
                for (const OnnxNode* consumer : consumersOf(graph, tensor))
                {
                    if (consumer != next && !isQuantize(*consumer) && !movesQ(*consumer) &&
                        !readsShapeOnly(consumer->opType)) // a Shape reads the dimensions, not the values
                    {
                        floatReaders.push_back(consumer->name + " (" + consumer->opType + ")");
                    }
                }
                const OnnxNode* producer = producerOf(graph, tensor);
                if (producer == nullptr || !movesQ(*producer) || producer->opType == "Concat" ||
                    producer->inputs.empty())
                {
                    break;
                }
                next = producer;
                tensor = producer->inputs[0];
            }
            if (floatReaders.empty())
            {
                continue;
            }
            Finding finding = makeFinding(
                info(),
                "Concat " + concat.name + " is quantized by " + q.name + ", so its input " + input + " from " +
                    source.node->name + " is wanted in INT8, but " + nameList(floatReaders, 3) +
                    " also reads it in float: the tensor must exist in two precisions, which costs a copy or an "
                    "extra Quantize/Dequantize layer and blocks the concat elimination.");
            finding.likely = true;
            finding.onnxNodes = {concat.name, q.name, source.node->name};
            for (const auto& reader : floatReaders)
            {
                finding.onnxNodes.push_back(reader.substr(0, reader.find(" (")));
            }
            finding.evidence.push_back(nodeEvidence(context, concat,
                                                    "input " + input + " also read by " + nameList(floatReaders, 3) +
                                                        " without quantization"));
            std::vector<std::string> readerNames;
            for (const auto& reader : floatReaders)
            {
                readerNames.push_back(reader.substr(0, reader.find(" (")));
            }
            // The scale: one decision for the input, over every Q it reaches (the Concat's among them).
            std::vector<const OnnxNode*> reached = forwardQuantizers(graph, input, false).quantizers;
            if (std::find(reached.begin(), reached.end(), &q) == reached.end())
            {
                reached.push_back(&q);
            }
            finding.fix = "quantize the other reader(s) of " + input + " (" + nameList(readerNames, 3) + ")" +
                          scaleAdviceAmong(graph, reached) +
                          " (a Q/DQ on that input) so every consumer sees the same INT8 "
                          "tensor, or stop reusing the Concat input elsewhere in a different precision";
            attachCopies(context, concat, finding);
            sink.add(std::move(finding));
        }
    }

    //! Engine only: copy layers that change precision, and copies the build log made for a stomping hazard.
    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        std::set<std::size_t> reported;
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& layer = plan.layers[index];
            LayerNameParts parts = parseLayerName(layer.name);
            if (!parts.tensorCopy || layer.inputs.empty() || layer.outputs.empty())
            {
                continue;
            }
            Precision in = inputPrecision(layer);
            Precision out = outputPrecision(layer);
            if (in == Precision::kUnknown || out == Precision::kUnknown || in == out)
            {
                continue;
            }
            Finding finding = makeFinding(
                info(),
                "\"" + layer.name + "\" copies " + parts.copiedTensor + " into a concat buffer converting " +
                    std::string(precisionName(in)) + " to " + std::string(precisionName(out)) +
                    ": the concat likely mixes INT8 and float inputs (or the input is needed in another precision "
                    "elsewhere).");
            finding.likely = true;
            finding.engineLayers.push_back(layer.name);
            finding.evidence.push_back(layerEvidence(
                context, index, "", std::string(precisionName(in)) + " -> " + std::string(precisionName(out))));
            finding.costMs = sumTimes(context, {index});
            finding.fix =
                "in the ONNX model, quantize every input of that Concat with one scale (or none of them), and "
                "do not reuse a Concat input elsewhere in a different precision";
            reported.insert(index);
            sink.add(std::move(finding));
        }
        for (const OptimizerEvent* event : logEvents(context, OptimizerEventKind::kGenerateCopy))
        {
            if (event->detail.find("stomping") == std::string::npos)
            {
                continue; // e.g. "input does not support striding": a layout copy, not a precision one
            }
            std::optional<std::size_t> copy;
            for (std::size_t index = 0; index < plan.layers.size(); ++index)
            {
                LayerNameParts parts = parseLayerName(plan.layers[index].name);
                if (parts.tensorCopy && parts.copiedTensor == event->subject)
                {
                    copy = index;
                }
            }
            if (copy && reported.count(*copy) > 0)
            {
                continue;
            }
            Finding finding = makeFinding(
                info(),
                "TensorRT generated a copy of " + event->subject + " into " + event->object +
                    " because of a stomping hazard: the tensor is likely also read elsewhere, so the concat cannot "
                    "be elided for this input.");
            finding.likely = true;
            finding.severity = Severity::kInfo;
            finding.evidence.push_back(logEvidence(context, *event,
                                                   "Generating copy for " + event->subject + " to " + event->object +
                                                       " because " + event->detail));
            if (copy)
            {
                finding.engineLayers.push_back(plan.layers[*copy].name);
                finding.evidence.push_back(layerEvidence(context, *copy, "", plan.layers[*copy].type));
                finding.costMs = sumTimes(context, {*copy});
            }
            finding.fix =
                "avoid reading a Concat input tensor (" + event->subject +
                ") in another consumer, or accept the copy; when the copy also changes precision, quantize that "
                "consumer with the Concat's scale";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeConcatMixedPrecision()
{
    return std::make_unique<ConcatMixedPrecision>();
}

} // namespace qdq::rules
