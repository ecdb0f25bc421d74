// int8-slower-than-fp16: INT8 layers that cost more than their FP16 counterpart would. Measured by `qdq-doctor diff`
// when a float build of the same model is the other side (per region, src/diff.cpp); in `diagnose`, from the layer
// kind and its neighbours ("likely"): an INT8 convolution/GEMM that is an island, its input quantized inside the
// network by a standalone Quantize layer and its output float, so the conversion is paid for one layer only.
#include "rules/kernel_common.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

#include <algorithm>

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace kernels;

class Int8SlowerThanFp16 final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "int8-slower-than-fp16",
            "",
            "An INT8 layer or region costs more than the same work in FP16 (measured by diff against a float build, or "
            "likely for an INT8 island that pays its own Quantize)",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "whether a layer stays INT8 is an accuracy and speed trade-off for the model's owner: removing its Q/DQ "
            "(or adding more around it) is a decision `fix` does not take"};
        return kInfo;
    }

    //! The standalone Quantize that writes the layer's INT8 input (first) and the reformat between them, when they
    //! serve this layer alone; empty otherwise.
    static std::vector<std::size_t> islandConversions(const Context& context, const EnginePlan& plan,
                                                      const EngineLayer& layer)
    {
        // Its INT8 input: written by a standalone Quantize, directly or through one reformat.
        std::vector<std::size_t> conversions;
        auto producer = producerLayer(plan, layer.inputs[0].name);
        if (producer && precision::isInsertedReformat(context, *producer) && !plan.layers[*producer].inputs.empty())
        {
            conversions.push_back(*producer);
            producer = producerLayer(plan, plan.layers[*producer].inputs[0].name);
        }
        if (!producer || !precision::isStandaloneQuantize(context, *producer))
        {
            return {};
        }
        // An island only when nothing else reads the quantized data: a Quantize shared with other INT8 layers
        // pays off for all of them.
        const bool shared =
            std::any_of(conversions.begin(), conversions.end(),
                        [&](std::size_t c)
                        {
                            for (const auto& output : plan.layers[c].outputs)
                            {
                                if (consumerLayers(plan, output.name).size() > 1)
                                {
                                    return true;
                                }
                            }
                            return false;
                        }) ||
            consumerLayers(plan, plan.layers[*producer].outputs.empty() ? std::string()
                                                                        : plan.layers[*producer].outputs[0].name)
                    .size() > 1;
        if (shared)
        {
            return {};
        }
        // The Quantize of a float network input is no island: an FP16 layer would convert that input too.
        const EngineLayer& quantize = plan.layers[*producer];
        if (quantize.inputs.empty() || precision::isNetworkInput(plan, quantize.inputs[0].name))
        {
            return {};
        }
        conversions.insert(conversions.begin(), *producer);
        return conversions;
    }

    Finding islandFinding(const Context& context, const EnginePlan& plan, std::size_t i,
                          const std::vector<std::size_t>& conversions, double own, double converting) const
    {
        const EngineLayer& layer = plan.layers[i];
        const auto& mappings = context.correlation.layers;
        std::vector<std::string> conversionNames = layerNames(context, conversions);
        Finding finding = makeFinding(info(), "");
        finding.likely = true;
        finding.engineLayers = {layer.name};
        for (const auto& node : mappings[i].onnxNodes)
        {
            finding.onnxNodes.emplace_back(node);
        }
        finding.costMs = converting;
        const std::string outText(precisionName(outputPrecision(layer)));
        // FP16 only where the build enables it: without --fp16 a layer taken out of INT8 runs in FP32.
        const std::string floatType = floatTypeOfBuild(context);
        finding.message = "INT8 layer \"" + layer.name + "\" (" + formatMs(own) +
                          ") is likely slower than it would be in " + floatType +
                          ": it is an INT8 island, its input quantized "
                          "by the standalone layer(s) " +
                          nameList(conversionNames, 2) + " (" + formatMs(converting) + ", " +
                          std::to_string(static_cast<int>(100.0 * converting / own + 0.5)) +
                          "% of the layer's own time) and its output written in " + outText +
                          ", so no INT8 neighbour shares the conversion; in float it would need neither.";
        finding.evidence.push_back(layerEvidence(context, i, "Inputs[0]/Outputs[0]",
                                                 describeTensor(layer.inputs[0]) + " -> " +
                                                     describeTensor(layer.outputs[0]) + ", " + formatMs(own)));
        for (std::size_t c : conversions)
        {
            finding.evidence.push_back(layerEvidence(context, c, "",
                                                     std::string(layerKind(plan.layers[c], mappings[c].state)) + " " +
                                                         layerPrecisionLabel(plan.layers[c], mappings[c].state) + ", " +
                                                         formatMs(layerTime(context, c).value_or(0.0)) + ", feeds it"));
        }
        finding.fix = "either leave this layer in " + floatType +
                      " (remove the Q/DQ on its input and weights), or extend INT8 to its neighbours so the "
                      "conversion pays off: quantize the input of the layer before the Quantize so it fuses "
                      "there, and put a Q/DQ after this layer's output; measure both builds with qdq-doctor diff";
        return finding;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan* mapped = kernels::mappedEngine(context);
        if (mapped == nullptr || context.timings() == nullptr)
        {
            return; // the heuristic weighs the times of the mapped engine's layers
        }
        const EnginePlan& plan = *mapped;
        const auto& mappings = context.correlation.layers;
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            const EngineLayer& layer = plan.layers[i];
            if (mappings[i].state != LayerState::kMapped || layer.inputs.empty() || layer.outputs.empty() ||
                !isFloat(outputPrecision(layer)) || mathPrecision(layer) != Precision::kINT8 ||
                !isMatrixKind(layerKind(layer, mappings[i].state)))
            {
                continue;
            }
            std::vector<std::size_t> conversions = islandConversions(context, plan, layer);
            if (conversions.empty())
            {
                continue;
            }
            const auto own = layerTime(context, i);
            const auto converting = sumTimes(context, conversions);
            // The conversion must weigh against the layer: a Quantize of a few percent of a large convolution's
            // time is paid back by INT8.
            constexpr double kWeighs = 0.25;
            if (!own || !converting || *own <= 0.0 || *converting < kWeighs * *own)
            {
                continue;
            }
            Finding finding = islandFinding(context, plan, i, conversions, *own, *converting);
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeInt8SlowerThanFp16()
{
    return std::make_unique<Int8SlowerThanFp16>();
}

} // namespace qdq::rules
