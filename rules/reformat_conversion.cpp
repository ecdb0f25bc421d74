// reformat-conversion: every builder reformat (Reformatting CopyNode ..., Origin: REFORMAT) that no other rule
// explains, with where its conversion comes from: the precision and format its producer writes and its consumer
// reads. A fallback explanation (Finding::fallbackGroup): where io-reformat, standalone-qdq, conv-act-pool-blocked or
// another rule names the layer, diagnose keeps theirs, so that each layer is explained once.
#include "rules/build_mode_advice.h"
#include "rules/kernel_common.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace kernels;

bool isCopyLayer(const EngineLayer& layer)
{
    return layer.name.size() > 5 && layer.name.compare(layer.name.size() - 5, 5, " copy") == 0;
}

class ReformatConversion final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"reformat-conversion",
                                    "",
                                    "A builder reformat converts the data type or layout between two layers; says "
                                    "which producer and consumer precisions and formats cause it",
                                    Severity::kWarning,
                                    "8.0-10.x",
                                    kNeedsOnnxOrEngine | kReadsCorrelation,
                                    "the reformat follows from the precisions and kernels of its neighbours: the "
                                    "Q/DQ edits that change those are the other rules' fixes, a layout change is "
                                    "TensorRT's kernel choice, and a type change at the I/O is a build option"};
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
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            if (mappings[i].state != LayerState::kInsertedReformat || isCopyLayer(plan.layers[i]))
            {
                continue;
            }
            sink.add(explain(context, i));
        }
    }

private:
    static std::string neighbourText(const Context& context, std::size_t layer)
    {
        const EngineLayer& l = context.engine()->layers[layer];
        return "\"" + l.name + "\" (" + (l.type.empty() ? std::string("type not listed") : l.type) + ", " +
               layerPrecisionLabel(l, context.correlation.layers[layer].state) + ")";
    }

    Finding explain(const Context& context, std::size_t index) const
    {
        const EnginePlan& plan = *context.engine();
        const EngineLayer& layer = plan.layers[index];
        const LayerMapping& mapping = context.correlation.layers[index];
        Finding finding = makeFinding(info(), "");
        finding.engineLayers = {layer.name};
        finding.costMs = layerTime(context, index);
        const LayerNameParts parts = parseLayerName(layer.name);

        if (layer.type == "NoOp")
        {
            explainNoOp(context, index, finding);
            return finding;
        }

        if (layer.inputs.empty() || layer.outputs.empty() || layer.inputs[0].precision == Precision::kUnknown ||
            layer.outputs[0].precision == Precision::kUnknown)
        {
            explainNamesOnly(context, index, parts, finding);
            return finding;
        }

        const EngineTensor& in = layer.inputs[0];
        const EngineTensor& out = layer.outputs[0];
        const auto producer = producerLayer(plan, in.name);
        const auto consumers = consumerLayers(plan, out.name);
        const std::string producerText = producer ? neighbourText(context, *producer) : "the network input " + in.name;
        const std::string consumerText = consumersText(context, consumers, out);
        const std::string cause = conversionCause(context, in, out, producer, consumers, finding);
        finding.message = "Reformat \"" + layer.name + "\" converts " + in.name + " from " + in.format.str() + " to " +
                          out.format.str() + ": " + cause + ". Producer " + producerText + ", consumer " +
                          consumerText + ".";
        finding.evidence.push_back(layerEvidence(context, index, "Inputs[0]/Outputs[0]",
                                                 describeTensor(in) + " -> " + describeTensor(out) + "; producer " +
                                                     producerText + "; consumer " + consumerText));
        for (const auto& node : mapping.onnxNodes)
        {
            finding.onnxNodes.emplace_back(node);
        }
        return finding;
    }

    static void explainNoOp(const Context& context, std::size_t index, Finding& finding)
    {
        const EngineLayer& layer = context.engine()->layers[index];
        // TensorRT found the two formats compatible: the reformat it planned runs nothing.
        finding.severity = Severity::kInfo;
        finding.fallbackGroup = "reformat layer(s) that TensorRT turned into no-ops (the formats on both sides "
                                "are compatible): nothing runs, nothing to change";
        finding.message = "Reformat \"" + layer.name +
                          "\" is a NoOp: TensorRT planned a format change between its neighbours, found the two "
                          "formats compatible (the same data in memory) and runs nothing for it.";
        finding.evidence.push_back(layerEvidence(
            context, index, "LayerType",
            "NoOp" + (layer.inputs.empty() || layer.outputs.empty()
                          ? std::string()
                          : "; " + describeTensor(layer.inputs[0]) + " -> " + describeTensor(layer.outputs[0]))));
        finding.fix = "nothing to do: it costs no time";
    }

    static void explainNamesOnly(const Context& context, std::size_t index, const LayerNameParts& parts,
                                 Finding& finding)
    {
        const EngineLayer& layer = context.engine()->layers[index];
        // A names-only list: the name tells the layer the reformat serves, not what it converts.
        std::string target =
            parts.reformatTarget.empty() ? std::string("its neighbour") : "\"" + parts.reformatTarget + "\"";
        finding.severity = Severity::kInfo;
        finding.likely = true;
        finding.fallbackGroup = "reformat layer(s) known by name only: each converts the format or precision its "
                                "producer writes to the one its consumer's kernel reads; the layer list has no "
                                "tensor formats to tell which";
        finding.message = "Reformat \"" + layer.name + "\": TensorRT inserted it because " + target + " reads " +
                          (parts.reformatOfInput ? "its input" : "its output") +
                          " in another format or precision than the other side uses; the layer list has no tensor "
                          "formats to tell which.";
        finding.evidence.push_back(layerEvidence(
            context, index, "Name",
            parts.reformatCopyNode ? "Reformatting CopyNode for " +
                                         std::string(parts.reformatOfInput ? "input" : "output") + " of " + target
                                   : "Origin: REFORMAT"));
        finding.fix = "export the layer list with trtexec --profilingVerbosity=detailed --exportLayerInfo (or give "
                      "the --verbose build log) and diagnose again: the formats then tell the cause";
    }

    static std::string consumersText(const Context& context, const std::vector<std::size_t>& consumers,
                                     const EngineTensor& out)
    {
        std::string consumerText;
        for (std::size_t k = 0; k < consumers.size() && k < 3; ++k)
        {
            consumerText += (k == 0 ? "" : ", ") + neighbourText(context, consumers[k]);
        }
        if (consumers.size() > 3)
        {
            consumerText += " and " + std::to_string(consumers.size() - 3) + " more";
        }
        if (consumerText.empty())
        {
            consumerText = "the network output " + out.name;
        }
        return consumerText;
    }

    //! Why the reformat converts `in` to `out`; sets the finding's group, fix and (for a layout change) severity.
    static std::string conversionCause(const Context& context, const EngineTensor& in, const EngineTensor& out,
                                       const std::optional<std::size_t>& producer,
                                       const std::vector<std::size_t>& consumers, Finding& finding)
    {
        const bool feedsStandaloneQdq =
            std::any_of(consumers.begin(), consumers.end(),
                        [&](std::size_t c) { return precision::isStandaloneQdq(context, c); }) ||
            (producer && precision::isStandaloneQdq(context, *producer));
        const std::string from(precisionName(in.precision));
        const std::string to(precisionName(out.precision));
        std::string cause;
        if (feedsStandaloneQdq)
        {
            finding.fallbackGroup = "reformat layer(s) next to a standalone Quantize/Dequantize layer";
            cause =
                "it converts for a standalone Q/DQ layer next to it, which reads or writes " +
                (feedsStandaloneQdq && !consumers.empty() && precision::isStandaloneQdq(context, consumers[0]) ? to
                                                                                                               : from);
            finding.fix = "follows from the standalone Q/DQ layer next to it (see standalone-qdq): the Q/DQ edit that "
                          "lets that layer fuse removes this reformat too";
        }
        else if (isQuantized(in.precision) && isFloat(out.precision))
        {
            finding.fallbackGroup = "reformat layer(s) that dequantize " + from + " data for " + to + " consumers";
            cause = "the producer emits " + from + " but the consumer runs in " + to +
                    " (it has no Q/DQ on its input, or no " + from + " kernel)";
            finding.fix =
                "quantize the consumer's input (a QuantizeLinear -> DequantizeLinear pair before it) so it runs "
                "in " +
                from + " too, or, if it must stay float, let the producer emit float (remove the Q after it)";
        }
        else if (isFloat(in.precision) && isQuantized(out.precision))
        {
            finding.fallbackGroup = "reformat layer(s) that quantize " + from + " data for " + to + " consumers";
            cause = "the consumer runs " + to + " but the producer emits " + from;
            finding.fix = "quantize the producer's inputs too, so it runs " + to +
                          " and the quantization fuses into it; or accept it at a float network input";
        }
        else if (in.precision != out.precision)
        {
            finding.fallbackGroup = "reformat layer(s) that convert " + from + " to " + to;
            cause = "the producer runs in " + from + " and the consumer in " + to;
            finding.fix =
                (isFloat(in.precision) && isFloat(out.precision))
                    ? (precisionFlagsApply(context)
                           ? "run both in one float type: build with --fp16 (weak typing) or give the model one "
                             "float type (strong typing); a layer without an FP16 kernel, or a precision constraint, "
                             "keeps one side in FP32" +
                                 assumedTypingNote(context)
                           : "run both in one float type: strongly typed, each layer runs in the graph's type, so "
                             "give the model one float type there (remove the Cast between them, or make both FP16: "
                             "`qdq-doctor fix --autocast fp16`)")
                    : "give both layers one type (the model's Cast ops or output types)";
        }
        else
        {
            finding.severity = Severity::kInfo;
            finding.fallbackGroup = "reformat layer(s) that change only the layout of " + from + " data";
            cause = in.format.str() == out.format.str() && in.vectorWidth == out.vectorWidth
                        ? "the consumer's kernel reads another layout than the producer writes (the layer list gives "
                          "the type only, " +
                              from + " on both sides, not the layout)"
                        : "the consumer's kernel reads another layout (" + out.format.str() +
                              ") than the producer writes (" + in.format.str() + ")";
            finding.fix =
                "nothing to change in the graph: TensorRT chose both kernels with this reformat as the fastest "
                "combination it timed; a layout that a kernel cannot read (channels not a multiple of the "
                "vector width) is the one thing to check (see channels-not-aligned)";
        }
        return cause;
    }
};

} // namespace

std::unique_ptr<Rule> makeReformatConversion()
{
    return std::make_unique<ReformatConversion>();
}

} // namespace qdq::rules
