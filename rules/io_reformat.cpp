// R23 io-reformat: work at the network boundary: the Quantize of a float network input (expected, info) and builder
// reformats of network inputs/outputs whose type or layout differs from the adjacent kernel (e.g. FP16 I/O next to
// FP32 layers).
#include "rules/build_mode_advice.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

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
using namespace precision;

class IoReformat final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "io-reformat",
            "R23",
            "Quantize and reformat work at the network inputs and outputs",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "a build option (trtexec --inputIOFormats/--outputIOFormats) or the preprocessing, not the graph"};
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
    //! How to feed INT8 to the input that the standalone Quantize layer `quantize` converts: in the format the first
    //! layer reads (the layer list), with the scale of the model's Q when a model is given.
    static std::string feedInt8AdviceFor(const Context& context, std::size_t quantize)
    {
        const EngineLayer& layer = context.engine()->layers[quantize];
        const auto& nodes = context.correlation.layers[quantize].onnxNodes;
        const std::string node = nodes.empty() ? layer.name : std::string(nodes.front());
        std::string scale;
        if (const OnnxGraph* graph = context.graph())
        {
            if (const OnnxNode* q = graph->findNode(node))
            {
                scale = scaleSuffix(*graph, *q);
            }
        }
        const EngineTensor* read = firstLayerInput(context, quantize);
        std::string format = read != nullptr ? trtexecIoFormat(*read) : std::string();
        if (format.rfind("int8:", 0) != 0)
        {
            format.clear();
        }
        else
        {
            format = int8InputFormat(*read, format);
        }
        return feedInt8Advice(node, scale, format);
    }

    void checkGraph(const Context& context, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& input : graph.graphInputs)
        {
            for (const OnnxNode* consumer : consumersOf(graph, input))
            {
                if (!isQuantize(*consumer))
                {
                    continue;
                }
                auto type = graph.tensorType(input);
                std::string typeName = type ? std::string(onnxDataTypeName(*type)) : std::string("float");
                Finding finding = makeFinding(
                    info(),
                    "Network input " + input + " (" + typeName + ") is quantized by " + consumer->name +
                        ": TensorRT runs this Quantize as its own layer at the input (with the layout change to the "
                        "INT8 conv format); expected for a float input.");
                finding.severity = Severity::kInfo;
                finding.onnxNodes = {consumer->name};
                finding.evidence.push_back(nodeEvidence(context, *consumer, "quantizes network input " + input));
                finding.fix = "nothing to do for a float input; if the preprocessing can produce quantized data: " +
                              feedInt8Advice(consumer->name, scaleSuffix(graph, *consumer), "");
                sink.add(std::move(finding));
            }
        }
    }

    //! The network input quantized by standalone Quantize layers: expected for a float input, with the INT8-input
    //! advice for preprocessing that can emit quantized data.
    void reportInputQuantize(const Context& context, const std::vector<std::size_t>& inputQuantize,
                             FindingSink& sink) const
    {
        const EnginePlan& plan = *context.engine();
        std::vector<std::string> names = layerNames(context, inputQuantize);
        Finding finding = makeFinding(
            info(), "The network input is quantized by the standalone layer(s) " + nameList(names, 3) +
                        ": expected for a float input (the Quantize also converts to the INT8 conv layout).");
        finding.severity = Severity::kInfo;
        finding.engineLayers = names;
        for (std::size_t q : inputQuantize)
        {
            for (const auto& node : context.correlation.layers[q].onnxNodes)
            {
                finding.onnxNodes.emplace_back(node);
            }
            finding.evidence.push_back(
                layerEvidence(context, q, "Inputs[0]",
                              plan.layers[q].inputs[0].name + " " + plan.layers[q].inputs[0].format + " -> " +
                                  (plan.layers[q].outputs.empty() ? std::string() : plan.layers[q].outputs[0].format)));
        }
        finding.costMs = sumTimes(context, inputQuantize);
        std::vector<std::string> advice;
        for (std::size_t q : inputQuantize)
        {
            advice.push_back(feedInt8AdviceFor(context, q));
        }
        finding.fix =
            "nothing to do for a float input; if the preprocessing can emit quantized data: " + nameList(advice, 2);
        sink.add(std::move(finding));
    }

    //! Reformat layers at the network boundary, with the trtexec I/O formats of the kernels beside them.
    void reportBoundaryReformats(const Context& context, const std::vector<std::size_t>& reformats,
                                 const std::vector<std::string>& reasons, const std::vector<std::string>& kernelFormats,
                                 FindingSink& sink) const
    {
        std::vector<std::string> names = layerNames(context, reformats);
        Finding finding =
            makeFinding(info(), std::to_string(reformats.size()) +
                                    " reformat layer(s) at the network inputs/outputs: " + nameList(reasons, 3) +
                                    "; the declared I/O type or layout differs from the adjacent kernels.");
        finding.engineLayers = names;
        for (std::size_t r : reformats)
        {
            finding.evidence.push_back(layerEvidence(context, r, "Origin", "REFORMAT at the network boundary"));
        }
        finding.costMs = sumTimes(context, reformats);
        finding.fix =
            "declare the I/O formats the adjacent kernels use (" +
            (kernelFormats.empty() ? std::string("trtexec --inputIOFormats / --outputIOFormats")
                                   : nameList(kernelFormats, 4)) +
            "), or make the first/last float layers run in the I/O type (" +
            (precisionFlagsApply(context) ? "--fp16, or an FP16 ONNX under strong typing)" + assumedTypingNote(context)
                                          : std::string("strongly typed: the graph's type there, so "
                                                        "FP16 I/O for FP16 layers, or FP32 layers at "
                                                        "FP32 I/O)"));
        sink.add(std::move(finding));
    }

    void checkEngine(const Context& context, FindingSink& sink) const
    {
        const EnginePlan& plan = *context.engine();
        std::vector<std::size_t> inputQuantize;
        std::vector<std::size_t> reformats;
        std::vector<std::string> reasons;
        std::vector<std::string> kernelFormats;
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& layer = plan.layers[index];
            if (layer.inputs.empty() && layer.outputs.empty())
            {
                continue;
            }
            if (isStandaloneQuantize(context, index) && !layer.inputs.empty() &&
                isNetworkInput(plan, layer.inputs[0].name))
            {
                if (quantizesToFp8OrFp4(layer))
                {
                    continue; // no INT8 conv layout to convert to
                }
                inputQuantize.push_back(index);
                continue;
            }
            if (!isInsertedReformat(context, index) || layer.type == "NoOp")
            {
                continue;
            }
            LayerNameParts parts = parseLayerName(layer.name);
            bool atInput = !layer.inputs.empty() && isNetworkInput(plan, layer.inputs[0].name);
            bool atOutput = !layer.outputs.empty() && isBinding(plan, layer.outputs[0].name);
            if (!parts.reformatCopyNode || (!atInput && !atOutput))
            {
                continue;
            }
            reformats.push_back(index);
            const EngineTensor& from = layer.inputs.empty() ? layer.outputs[0] : layer.inputs[0];
            const EngineTensor& to = layer.outputs.empty() ? layer.inputs[0] : layer.outputs[0];
            reasons.push_back("\"" + layer.name + "\" converts network " + (atInput ? "input " : "output ") +
                              (atInput ? from.name : to.name) + " from " + from.format + " to " + to.format);
            // The format the kernel next to the boundary uses: what an input reformat writes, what an output one reads.
            const std::string kernelFormat = trtexecIoFormat(atInput ? to : from);
            if (!kernelFormat.empty())
            {
                kernelFormats.push_back(std::string(atInput ? "--inputIOFormats=" : "--outputIOFormats=") +
                                        kernelFormat + " for " + (atInput ? from.name : to.name));
            }
        }
        if (!inputQuantize.empty())
        {
            reportInputQuantize(context, inputQuantize, sink);
        }
        if (!reformats.empty())
        {
            reportBoundaryReformats(context, reformats, reasons, kernelFormats, sink);
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeIoReformat()
{
    return std::make_unique<IoReformat>();
}

} // namespace qdq::rules
