// R16 concat-quantize-hoisted: the Q after a Concat is split into one clone per Concat input; clones landing on
// producers that cannot absorb them (float ops, ConvTranspose, plugins, network inputs) run as standalone Quantize
// layers, one per input, where the implicit engine has one Quantize after an elided concat.
#include "rules/build_mode_advice.h"
#include "rules/rules.h"
#include "rules/scale_walks.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace walks;

constexpr const char* kLimitation =
    "when a producer can only run in float, no Q/DQ placement reproduces the implicit engine's single Quantize "
    "after an elided concat: this is a known limitation of explicit quantization (NVIDIA/TensorRT#4366)";

class ConcatQuantizeHoisted final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "concat-quantize-hoisted",
            "R16",
            "The Q after a Concat is moved onto every Concat input and runs as a standalone Quantize where the input's "
            "producer cannot absorb it",
            Severity::kWarning,
            "8.4-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "not automated yet: moving the Q onto producers that may be float-only needs a scale for each, from "
            "calibration data"};
        return kInfo;
    }

private:
    //! The Concat's inputs whose producer cannot absorb a Quantize clone, one per producer.
    static std::vector<ConcatSource> blockedSources(const OnnxGraph& graph, const OnnxNode& concat)
    {
        std::vector<ConcatSource> blocked;
        std::vector<std::string> seen;
        for (const auto& input : concat.inputs)
        {
            ConcatSource source = concatSource(graph, input);
            if (source.kind != ConcatSource::Kind::kCannotAbsorb)
            {
                continue;
            }
            std::string key = source.node != nullptr ? source.node->name : input;
            if (std::find(seen.begin(), seen.end(), key) != seen.end())
            {
                continue;
            }
            seen.push_back(key);
            blocked.push_back(source);
        }
        return blocked;
    }

    //! The build log's SplitQAcrossPrecedingFanIn passes on the Concat.
    static void addSplitEvidence(const Context& context, const OnnxNode& concat, Finding& finding)
    {
        for (const OptimizerEvent* event :
             logEvents(context, OptimizerEventKind::kRunning, "SplitQAcrossPrecedingFanIn"))
        {
            if (event->subject == concat.name)
            {
                finding.evidence.push_back(
                    logEvidence(context, *event, "Running: SplitQAcrossPrecedingFanIn on " + concat.name));
            }
        }
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
                continue; // nothing to hoist: a float concat (concat-mixed-precision looks at that)
            }
            const std::vector<ConcatSource> blocked = blockedSources(graph, concat);
            if (blocked.empty())
            {
                continue;
            }
            const OnnxNode& q = *reached.front().q;
            std::vector<std::string> producers;
            std::vector<std::string> whys;
            std::vector<std::string> quantizeFixes;
            bool onlyFloat = true;
            for (const auto& source : blocked)
            {
                producers.push_back(source.node != nullptr ? source.node->name : "the network input");
                whys.push_back(source.why);
                if (!source.floatInputs.empty() && source.node != nullptr)
                {
                    onlyFloat = false;
                    quantizeFixes.push_back("Q/DQ on " + nameList(source.floatInputs, 3) + " (input of " +
                                            source.node->name + ") so it runs INT8 and absorbs the clone");
                }
            }
            Finding finding =
                makeFinding(info(), "TensorRT likely moves " + q.name + " above Concat " + concat.name +
                                        " (one Quantize clone per input, SplitQAcrossPrecedingFanIn); the clone for " +
                                        nameList(producers, 3) +
                                        " cannot fuse into its producer and runs as a standalone Quantize " +
                                        "layer: " + nameList(whys, 2) + ".");
            finding.likely = true;
            finding.onnxNodes.push_back(concat.name);
            finding.onnxNodes.push_back(q.name);
            for (const auto& source : blocked)
            {
                if (source.node != nullptr)
                {
                    finding.onnxNodes.push_back(source.node->name);
                }
            }
            finding.evidence.push_back(nodeEvidence(context, concat,
                                                    "output quantized by " + withScale(graph, q) + "; inputs from " +
                                                        nameList(producers, 3) + " cannot emit INT8"));
            std::string fix;
            if (!quantizeFixes.empty())
            {
                fix = "make the producers emit INT8: " + nameList(quantizeFixes, 3) + "; ";
            }
            fix += "if every Concat producer can be quantized, keep " + q.name +
                   " after the Concat and give all Concat inputs its scale so each clone fuses into its producer "
                   "(see concat-scale-mismatch); otherwise move the Q/DQ from the Concat output to after the next "
                   "non-commuting op, or drop it and let the consumer run in " +
                   floatTypeWithoutQdq(context) + ". Note: " + kLimitation;
            if (onlyFloat)
            {
                fix = "quantize " + nameList(producers, 3) +
                      " (Q/DQ on their inputs) if they have an INT8 implementation, so the clones fuse; otherwise "
                      "move the Q/DQ from the Concat output to after the next non-commuting op, or drop it and let "
                      "the consumer run in " +
                      floatTypeWithoutQdq(context) + ". Note: " + kLimitation;
            }
            finding.fix = fix;
            attachEngine(context, {q.name}, finding);
            addSplitEvidence(context, concat, finding);
            sink.add(std::move(finding));
        }
    }

    //! Engine only: a Quantize clone (`<Q>_clone_N`) running as its own layer with a float input. The build log's
    //! SplitQAcrossPrecedingFanIn events corroborate.
    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        std::vector<std::size_t> clones;
        for (const auto& mapping : context.correlation.layers)
        {
            const EngineLayer& layer = plan.layers[mapping.layer];
            if (mapping.state != LayerState::kInsertedQdq || !hasCloneSuffix(layer.name) ||
                !looksLikeQuantizeName(layer.name) || !isQuantized(outputPrecision(layer)) ||
                !isFloat(inputPrecision(layer)))
            {
                continue;
            }
            clones.push_back(mapping.layer);
        }
        if (clones.empty())
        {
            return;
        }
        auto splits = logEvents(context, OptimizerEventKind::kRunning, "SplitQAcrossPrecedingFanIn");
        for (std::size_t index : clones)
        {
            const EngineLayer& layer = plan.layers[index];
            std::string q = singleToken(layer);
            auto producer = producerLayer(plan, layer.inputs.empty() ? std::string() : layer.inputs[0].name);
            std::string from = producer ? "\"" + plan.layers[*producer].name + "\"" : "the network input";
            std::string floatInputs;
            if (producer)
            {
                const EngineLayer& source = plan.layers[*producer];
                for (std::size_t i = 0; i < source.inputs.size(); ++i)
                {
                    if (isFloat(source.inputs[i].precision))
                    {
                        floatInputs += (floatInputs.empty() ? "" : ", ") + source.inputs[i].name;
                    }
                }
            }
            Finding finding =
                makeFinding(info(), "\"" + layer.name + "\" is a clone of " + (q.empty() ? layer.name : q) +
                                        " running as its own Quantize layer on the " +
                                        std::string(precisionName(inputPrecision(layer))) + " output of " + from +
                                        ": TensorRT likely moved a Q from after a Concat onto each Concat input "
                                        "(SplitQAcrossPrecedingFanIn) and this producer could not absorb it.");
            finding.likely = true;
            finding.engineLayers.push_back(layer.name);
            if (!q.empty())
            {
                finding.onnxNodes.push_back(q);
            }
            finding.evidence.push_back(
                layerEvidence(context, index, "",
                              layer.type + (layer.origin.empty() ? "" : " (Origin: " + layer.origin + ")") + ", " +
                                  std::string(precisionName(inputPrecision(layer))) + " -> " +
                                  std::string(precisionName(outputPrecision(layer)))));
            // Tie the clone to its Concat when the log names both (a copy into the Q's output), else cite them all.
            std::vector<const OptimizerEvent*> cited;
            std::string qOutput = q.empty() ? std::string() : q + "_output_0";
            for (const OptimizerEvent* event : logEvents(context, OptimizerEventKind::kGenerateCopy))
            {
                if (qOutput.empty() || event->object != qOutput)
                {
                    continue;
                }
                // The copy's tensor is named "<Concat>_<input>"; take the longest Concat name that prefixes it.
                const OptimizerEvent* best = nullptr;
                for (const OptimizerEvent* split : splits)
                {
                    if (event->subject.rfind(split->subject + "_", 0) == 0 &&
                        (best == nullptr || split->subject.size() > best->subject.size()))
                    {
                        best = split;
                    }
                }
                if (best != nullptr && std::find(cited.begin(), cited.end(), best) == cited.end())
                {
                    cited.push_back(best);
                }
            }
            if (cited.empty())
            {
                cited = splits;
            }
            for (std::size_t i = 0; i < cited.size() && i < 4; ++i)
            {
                finding.evidence.push_back(
                    logEvidence(context, *cited[i], "Running: SplitQAcrossPrecedingFanIn on " + cited[i]->subject));
            }
            finding.costMs = sumTimes(context, {index});
            finding.fix =
                "in the ONNX model, make the producer of this Concat input (" + from +
                ") emit INT8 (quantize its inputs" +
                (floatInputs.empty() ? std::string() : ", here the float input " + floatInputs) +
                ", so it absorbs the clone), or give all Concat inputs the scale of " +
                (q.empty() ? std::string("the Q after the Concat") : q) +
                "; if the producer can only run in float, move the Q/DQ off the Concat output (after the next "
                "non-commuting op) or let the consumer run in " +
                floatTypeWithoutQdq(context) + ". Note: " + kLimitation;
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeConcatQuantizeHoisted()
{
    return std::make_unique<ConcatQuantizeHoisted>();
}

} // namespace qdq::rules
