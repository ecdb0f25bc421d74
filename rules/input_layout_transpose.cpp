// input-layout-transpose: a Transpose with perm [0,3,1,2] that reads a network input: the model takes NHWC images
// (a TensorFlow export without tf2onnx's --inputs-as-nchw) and turns them into NCHW first, which TensorRT runs as a
// Shuffle layer that copies the whole input (docs/rules/input-layout-transpose.md).
#include "rules/kernel_common.h"
#include "rules/rules.h"

#include <string>

namespace qdq::rules
{

namespace
{

using namespace patterns;

bool isNhwcToNchw(const OnnxNode& node)
{
    const OnnxAttribute* perm = node.attribute("perm");
    return node.opType == "Transpose" && perm != nullptr && perm->ints == std::vector<std::int64_t>{0, 3, 1, 2};
}

class InputLayoutTranspose final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"input-layout-transpose",
                                    "",
                                    "A Transpose from NHWC to NCHW on a network input runs as a Shuffle layer that "
                                    "copies the whole input",
                                    Severity::kWarning,
                                    "8.0-10.x",
                                    kNeedsOnnx | kReadsCorrelation | kReadsModelValues,
                                    "the input's layout is the exporter's choice (tf2onnx --inputs-as-nchw) and the "
                                    "application's, which feeds the data; `fix` does not change the model's inputs"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph* graph = context.graph();
        if (graph == nullptr)
        {
            return;
        }
        for (const OnnxNode& node : graph->nodes)
        {
            if (node.inputs.empty() || !isNhwcToNchw(node) || !isGraphInput(*graph, node.inputs[0]))
            {
                continue;
            }
            // With an engine: the layers that execute the Transpose; a Transpose folded into a convolution's layer
            // costs no copy of its own.
            std::vector<std::size_t> own;
            bool folded = false;
            if (kernels::mappedEngine(context) != nullptr)
            {
                for (std::size_t layer : layersOf(context, node.name))
                {
                    const EngineLayer& engineLayer = context.engine()->layers[layer];
                    if (engineLayer.type.find("Convolution") != std::string::npos || layerNameHas(engineLayer, "Conv"))
                    {
                        folded = true;
                    }
                    else
                    {
                        own.push_back(layer);
                    }
                }
            }
            if (folded)
            {
                continue;
            }
            sink.add(describe(context, node, own));
        }
    }

private:
    Finding describe(const Context& context, const OnnxNode& node, const std::vector<std::size_t>& layers) const
    {
        Finding finding = makeFinding(info(), "");
        finding.onnxNodes = {node.name};
        finding.evidence.push_back(
            nodeEvidence(context, node, "perm [0,3,1,2] on the network input " + node.inputs[0] + " (NHWC -> NCHW)"));
        const bool confirmed = !layers.empty();
        if (confirmed)
        {
            finding.engineLayers = layerNames(context, layers);
            finding.costMs = sumTimes(context, layers);
            for (std::size_t layer : layers)
            {
                finding.evidence.push_back(layerEvidence(
                    context, layer, "LayerType", context.engine()->layers[layer].type + ": copies the input to NCHW"));
            }
        }
        finding.likely = !confirmed;
        finding.message =
            "Transpose " + node.name + " turns the network input " + node.inputs[0] +
            " from NHWC into NCHW: TensorRT runs it as a Shuffle layer that reads and writes the whole "
            "input" +
            (confirmed                     ? (finding.costMs ? " (" + formatMs(*finding.costMs) + ")" : std::string())
             : context.engine() != nullptr ? std::string(" (likely; no engine layer is mapped to it)")
                                           : std::string(" (likely; give the engine's layer list to confirm)")) +
            ", before the first convolution can start.";
        finding.fix = "export the model with an NCHW input (tf2onnx --inputs-as-nchw " + node.inputs[0] +
                      ", which lets the converter remove the transpose) and feed NCHW data, or keep NHWC and "
                      "accept the copy";
        return finding;
    }
};

} // namespace

std::unique_ptr<Rule> makeInputLayoutTranspose()
{
    return std::make_unique<InputLayoutTranspose>();
}

} // namespace qdq::rules
