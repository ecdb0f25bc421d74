// copy-not-eliminated: Slice, Concatenation and copy layers (`<tensor> copy`) that move data instead of being
// eliminated, with the reason: the build log's own ("because of stomping hazard", "because input does not support
// striding"), else what the layer list shows (a type change, a fan-out, a network input or output). A fallback
// explanation (Finding::fallbackGroup): where another rule (concat-mixed-precision, ...) names the layer, diagnose
// keeps theirs.
#include "rules/kernel_common.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

#include <unordered_map>

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace kernels;

class CopyNotEliminated final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"copy-not-eliminated",
                                    "",
                                    "A Slice, Concatenation or copy layer moves data that TensorRT usually eliminates "
                                    "by writing in place",
                                    Severity::kWarning,
                                    "8.0-10.x",
                                    kNeedsOnnxOrEngine | kReadsCorrelation,
                                    "the copy follows from how the producers write their outputs (their kernels, "
                                    "fan-out, types); the Q/DQ edits that change the types are other rules' fixes "
                                    "(concat-mixed-precision, concat-scale-mismatch)"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan* mapped = kernels::mappedEngine(context);
        if (mapped == nullptr)
        {
            return; // the engine's layer list, mapped to the model, is what this rule reads
        }
        const EnginePlan& plan = *mapped;
        const auto& mappings = context.correlation.layers;
        // The build log's reasons for generated copies, by copied tensor.
        std::unordered_map<std::string_view, const OptimizerEvent*> copyReasons;
        if (context.inputs.buildLog)
        {
            for (const auto& event : context.inputs.buildLog->events)
            {
                if (event.kind == OptimizerEventKind::kGenerateCopy)
                {
                    copyReasons[event.subject] = &event;
                }
            }
        }
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            const EngineLayer& layer = plan.layers[i];
            // Cheapest test first: copies are builder reformats, Slice and Concatenation layers say so in LayerType.
            if (mappings[i].state != LayerState::kInsertedReformat && layer.type.find("lice") == std::string::npos &&
                layer.type.find("oncat") == std::string::npos)
            {
                continue;
            }
            const std::string_view kind = layerKind(layer, mappings[i].state);
            if (kind == "copy")
            {
                sink.add(explainCopy(context, i, copyReasons));
            }
            else if (kind == "slice" || kind == "concatenation")
            {
                sink.add(explainMove(context, i, kind));
            }
        }
    }

private:
    Finding explainCopy(const Context& context, std::size_t index,
                        const std::unordered_map<std::string_view, const OptimizerEvent*>& copyReasons) const
    {
        const EnginePlan& plan = *context.engine();
        const EngineLayer& layer = plan.layers[index];
        const LayerNameParts parts = parseLayerName(layer.name);
        const std::string copied = parts.tensorCopy ? parts.copiedTensor : layer.name.substr(0, layer.name.size() - 5);
        Finding finding = makeFinding(info(), "");
        finding.engineLayers = {layer.name};
        finding.costMs = layerTime(context, index);
        finding.fix = "make the concatenation's input writable in place: one consumer for it (no other reader), the "
                      "concatenation's type (the same Q/DQ scale on every input, see concat-scale-mismatch), and a "
                      "producer that writes strided output (a convolution or pointwise layer rather than a Resize or "
                      "plugin); or accept the copy when it is cheap";
        auto reason = copyReasons.find(copied);
        std::string cause;
        if (reason != copyReasons.end())
        {
            const OptimizerEvent& event = *reason->second;
            const std::string why = event.detail.empty() ? std::string("no reason given") : event.detail;
            finding.fallbackGroup = "copy layer(s) for a concatenation, because " + why;
            cause = "TensorRT eliminated the concatenation by writing its inputs in place into its output, but "
                    "generated this copy of " +
                    copied + " because " + why;
            Evidence evidence;
            evidence.file = context.inputs.buildLog->sourcePath;
            evidence.line = event.line;
            evidence.field = "Generating copy";
            evidence.text = "Generating copy for " + event.subject + " to " + event.object + " because " + why;
            finding.evidence.push_back(std::move(evidence));
            if (why.find("striding") != std::string::npos)
            {
                auto producer = producerLayer(plan, copied);
                cause += ": its producer" + (producer ? " \"" + plan.layers[*producer].name + "\"" : std::string()) +
                         " cannot write into a strided part of the concatenation's output";
            }
            else if (why.find("stomping") != std::string::npos)
            {
                cause += ": writing it in place would overwrite (stomp) data that another layer still reads";
            }
        }
        else if (!layer.inputs.empty() && !layer.outputs.empty() && layer.inputs[0].precision != Precision::kUnknown &&
                 layer.outputs[0].precision != Precision::kUnknown)
        {
            const EngineTensor& in = layer.inputs[0];
            const EngineTensor& out = layer.outputs[0];
            const auto readers = consumerLayers(plan, in.name);
            if (in.precision != out.precision)
            {
                finding.fallbackGroup = "copy layer(s) that convert a concatenation input's type";
                cause = "the input's type (" + std::string(precisionName(in.precision)) +
                        ") differs from the concatenation's (" + std::string(precisionName(out.precision)) +
                        ") (see concat-mixed-precision)";
            }
            else if (readers.size() > 1)
            {
                finding.fallbackGroup = "copy layer(s) of a concatenation input that other layers also read";
                cause = in.name + " is also read by " + std::to_string(readers.size() - 1) +
                        " other layer(s), so it cannot live inside the concatenation's output";
            }
            else if (precision::isNetworkInput(plan, in.name) || precision::isBinding(plan, in.name))
            {
                finding.fallbackGroup = "copy layer(s) of a network input or output into a concatenation";
                cause = in.name + " is a network input or output, which has its own buffer";
            }
            else
            {
                finding.fallbackGroup = "copy layer(s) for a concatenation";
                cause = "its producer likely cannot write into a strided part of the concatenation's output (the "
                        "build log's \"Generating copy ... because\" line tells; give the --verbose log)";
                finding.likely = true;
            }
            finding.evidence.push_back(layerEvidence(context, index, "Inputs[0]/Outputs[0]",
                                                     describeTensor(in) + " -> " + describeTensor(out)));
        }
        else
        {
            finding.severity = Severity::kInfo;
            finding.likely = true;
            finding.fallbackGroup = "copy layer(s) known by name only";
            cause = "TensorRT could not write " + copied +
                    " in place into the concatenation's output (it is read elsewhere too, its type differs, or its "
                    "producer cannot write strided output); the layer list has no tensor types and no build log "
                    "says which";
            finding.evidence.push_back(
                layerEvidence(context, index, "Name", "\"<tensor> copy\": a concatenation copy"));
        }
        finding.message =
            "Copy layer \"" + layer.name + "\" copies " + copied + " into a concatenation's output: " + cause + ".";
        return finding;
    }

    Finding explainMove(const Context& context, std::size_t index, std::string_view kind) const
    {
        const EngineLayer& layer = context.engine()->layers[index];
        Finding finding = makeFinding(info(), "");
        finding.engineLayers = {layer.name};
        finding.costMs = layerTime(context, index);
        for (const auto& node : context.correlation.layers[index].onnxNodes)
        {
            finding.onnxNodes.emplace_back(node);
        }
        const bool converts = !layer.inputs.empty() && !layer.outputs.empty() &&
                              layer.inputs[0].precision != Precision::kUnknown &&
                              layer.outputs[0].precision != Precision::kUnknown &&
                              layer.inputs[0].precision != layer.outputs[0].precision;
        if (!layer.inputs.empty() && !layer.outputs.empty())
        {
            finding.evidence.push_back(
                layerEvidence(context, index, "Inputs[0]/Outputs[0]",
                              describeTensor(layer.inputs[0]) + " -> " + describeTensor(layer.outputs[0])));
        }
        else
        {
            finding.evidence.push_back(layerEvidence(context, index, "LayerType", layer.type));
        }
        finding.likely = true;
        if (kind == "slice")
        {
            finding.fallbackGroup = converts ? "Slice layer(s) that also convert the data type"
                                             : "Slice layer(s) that copy their part of the input";
            finding.message =
                "Slice layer \"" + layer.name +
                "\" runs as its own kernel: TensorRT eliminates a slice only when its consumer can read "
                "the part in place (a contiguous range of the outer axis)" +
                (converts ? "; this one also converts " + std::string(precisionName(layer.inputs[0].precision)) +
                                " to " + std::string(precisionName(layer.outputs[0].precision))
                          : std::string()) +
                ".";
            finding.fix = converts
                              ? "quantize around the float operations next to the slice so both sides use one type "
                                "(the Slice commutes with Q/DQ)"
                              : "slice along the outermost axis, or split the producer (one convolution per part) "
                                "so no copy is needed";
        }
        else
        {
            finding.fallbackGroup = converts ? "Concatenation layer(s) that also convert the data type"
                                             : "Concatenation layer(s) that are not eliminated";
            finding.message = "Concatenation layer \"" + layer.name +
                              "\" copies its inputs: TensorRT eliminates a concatenation when every producer can write "
                              "into its part of the output (same type and format, no other reader)" +
                              (converts ? "; this one also converts the data type" : std::string()) + ".";
            finding.fix = "give the concatenation's inputs one type and one Q/DQ scale (see concat-scale-mismatch, "
                          "concat-mixed-precision) and no other readers";
        }
        return finding;
    }
};

} // namespace

std::unique_ptr<Rule> makeCopyNotEliminated()
{
    return std::make_unique<CopyNotEliminated>();
}

} // namespace qdq::rules
