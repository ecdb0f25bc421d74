// R03 per-channel-activation: a Q/DQ on an activation (not a weight) with more than one scale value. TensorRT
// quantizes activations per tensor only; per-channel scales are for weights.
#include "qdq/patterns.h"
#include "rules/rules.h"
#include "rules/weight_paths.h"

#include <algorithm>
#include <set>

namespace qdq::rules
{

namespace
{

using namespace patterns;

class PerChannelActivation final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "per-channel-activation",
            "R03",
            "A Q/DQ on an activation has a per-channel (multi-value) scale; TensorRT quantizes activations per tensor "
            "only",
            Severity::kError,
            "8.0-10.x",
            kNeedsOnnx | kReadsCorrelation | kReadsModelValues,
            "per-tensor activation scales come from calibration data: re-export with a per-tensor activation "
            "quantizer"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        std::set<std::size_t> done;
        for (const auto& parameters : graph.qdq)
        {
            if (done.count(parameters.node) > 0 || parameters.scaleElements <= 1 || parameters.blockSize)
            {
                continue;
            }
            const OnnxNode& node = graph.nodes[parameters.node];
            if (!isActivation(graph, node))
            {
                continue;
            }
            done.insert(node.index);
            std::vector<const OnnxNode*> site = {&node};
            // A Q and the DQ it feeds form one site.
            if (isQuantize(node) && !node.outputs.empty())
            {
                for (const OnnxNode* consumer : consumersOf(graph, node.outputs[0]))
                {
                    const QdqParameters* other = graph.qdqOf(consumer->index);
                    if (isDequantize(*consumer) && other != nullptr && other->scaleElements > 1)
                    {
                        done.insert(consumer->index);
                        site.push_back(consumer);
                    }
                }
            }
            report(context, site, sink);
        }
    }

private:
    //! An activation Q/DQ: not on a weight path. Q/DQ on other constants count only when the dequantized value
    //! feeds the data input of a weighted op (it is then used as an activation); constants feeding elementwise ops
    //! are left alone.
    static bool isActivation(const OnnxGraph& graph, const OnnxNode& node)
    {
        if (weights::quantizesWeight(graph, node))
        {
            return false;
        }
        if (!weights::quantizesConstant(graph, node))
        {
            return true;
        }
        return weights::reachesWeightedInput(graph, node, 0,
                                             [](const OnnxNode& consumer) { return isCommuting(consumer.opType); });
    }

    void report(const Context& context, const std::vector<const OnnxNode*>& site, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        const OnnxNode& first = *site.front();
        const QdqParameters& parameters = *graph.qdqOf(first.index);
        const std::string& tensor = first.inputs.empty() ? first.name : first.inputs[0];
        std::string axisText =
            parameters.axis ? "axis " + std::to_string(*parameters.axis) : "no axis attribute (ONNX default axis 1)";
        std::string names;
        for (const OnnxNode* member : site)
        {
            names += (names.empty() ? "" : " -> ") + member->name;
        }
        std::vector<std::string> consumers;
        for (const OnnxNode* consumer : consumersOf(graph, site.back()->outputs.empty() ? "" : site.back()->outputs[0]))
        {
            consumers.push_back(consumer->name);
        }
        std::string valuesText = parameters.scale.empty() ? std::to_string(parameters.scaleElements) + " values"
                                                          : weights::formatValues(parameters.scale);
        Finding finding = makeFinding(
            info(), names + " quantizes the activation " + tensor +
                        (consumers.empty() ? "" : " (input of " + nameList(consumers, 3) + ")") +
                        " per channel: its scale " + first.inputs[1] + " has " +
                        std::to_string(parameters.scaleElements) + " values " + valuesText + " with " + axisText +
                        ". TensorRT supports per-channel scales for weights only; activations must be quantized per "
                        "tensor (the build fails or the layer does not run INT8).");
        for (const OnnxNode* member : site)
        {
            finding.onnxNodes.push_back(member->name);
            const QdqParameters* memberParameters = graph.qdqOf(member->index);
            finding.evidence.push_back(nodeEvidence(context, *member,
                                                    "scale " + member->inputs[1] + " has " +
                                                        std::to_string(memberParameters->scaleElements) +
                                                        " elements; input " + member->inputs[0] + " is not a weight"));
        }
        double largest = 0.0;
        for (double value : parameters.scale)
        {
            largest = std::max(largest, value);
        }
        finding.fix =
            "give " + names + " a single per-tensor scale (a scalar " +
            (largest > 0.0 ? "no smaller than the largest channel scale, " + weights::formatValue(largest) + ", "
                           : std::string()) +
            "calibrated over the whole tensor " + tensor +
            ") and drop the axis attribute; keep per-channel scales "
            "for weight Q/DQ only";
        finding.engineLayers = layerNames(context, layersOf(context, first.name));
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makePerChannelActivation()
{
    return std::make_unique<PerChannelActivation>();
}

} // namespace qdq::rules
