// R10 qdq-between-pad-and-conv: `Pad -> Q -> DQ -> Conv`: the Q/DQ pair between a zero Pad and the convolution keeps
// TensorRT from folding the padding into the convolution (Padding + Convolution fusion), so the Pad runs as its own
// float layer before an INT8 conv. Zero padding commutes with quantization: the pair belongs before the Pad.
#include "qdq/patterns.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;

class QdqBetweenPadAndConv final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"qdq-between-pad-and-conv",
                                    "R10",
                                    "A Q/DQ pair between a zero Pad and a Conv keeps TensorRT from folding the padding "
                                    "into the convolution",
                                    Severity::kWarning,
                                    "8.0-10.x",
                                    kNeedsOnnx | kReadsCorrelation | kReadsModelValues,
                                    ""};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph* graph = context.graph();
        if (graph == nullptr)
        {
            return;
        }
        for (const OnnxNode& conv : graph->nodes)
        {
            if (conv.opType != "Conv" || conv.inputs.empty())
            {
                continue;
            }
            const OnnxNode* dq = producerOf(*graph, conv.inputs[0]);
            if (dq == nullptr || !isDequantize(*dq) || dq->inputs.empty())
            {
                continue;
            }
            const OnnxNode* q = producerOf(*graph, dq->inputs[0]);
            if (q == nullptr || !isQuantize(*q) || q->inputs.empty() || consumersOf(*graph, dq->inputs[0]).size() != 1)
            {
                continue;
            }
            const OnnxNode* pad = producerOf(*graph, q->inputs[0]);
            if (pad == nullptr || pad->opType != "Pad" || pad->inputs.empty() || !isZeroPad(*graph, *pad) ||
                consumersOf(*graph, q->inputs[0]).size() != 1)
            {
                continue;
            }
            // With an engine: the Pad folded into the convolution's layer after all means nothing to report.
            const auto padLayers = layersOf(context, pad->name);
            const auto convLayers = layersOf(context, conv.name);
            if (context.engine() != nullptr && !padLayers.empty() && padLayers == convLayers)
            {
                continue;
            }
            // Confirmed when the engine runs the Pad in a layer of its own.
            const bool haveEngine = context.engine() != nullptr && !padLayers.empty() && !convLayers.empty();
            Finding finding = makeFinding(
                info(), "Pad " + pad->name + " -> " + q->name + " -> " + dq->name + " -> Conv " + conv.name +
                            ": the Q/DQ pair between the zero padding and the convolution keeps TensorRT from "
                            "folding the Pad into the convolution (Padding + Convolution fusion), so the Pad runs as "
                            "its own float layer" +
                            (haveEngine ? "" : " (likely; give the engine's layer list to confirm)") + ".");
            finding.likely = !haveEngine;
            finding.onnxNodes = {pad->name, q->name, dq->name, conv.name};
            finding.evidence.push_back(nodeEvidence(context, *pad, "Pad (constant, zero) feeding " + q->name));
            if (haveEngine)
            {
                for (std::size_t layer : padLayers)
                {
                    finding.engineLayers.push_back(context.engine()->layers[layer].name);
                    finding.evidence.push_back(
                        layerEvidence(context, layer, "", "the Pad runs in its own layer, apart from the conv's"));
                }
                finding.costMs = sumTimes(context, padLayers);
            }
            // Zero padding commutes with quantization: the pair moves before the Pad (unless its input is quantized
            // already), and the convolution reads the padded INT8 data.
            finding.edits.push_back(removeQdqPairEdit(*q, *dq));
            if (feedingDequantize(*graph, pad->inputs[0]) == nullptr)
            {
                finding.edits.push_back(
                    insertQdqEdit(*pad, pad->inputs[0], q->name,
                                  "the scale of " + q->name + ": zero padding does not change the range"));
            }
            finding.fix = "move the Q/DQ pair before the Pad: remove " + q->name + " -> " + dq->name +
                          (finding.edits.size() > 1 ? " and quantize " + pad->inputs[0] +
                                                          " (the Pad's input) with the "
                                                          "scale of " +
                                                          q->name
                                                    : std::string(" (the Pad's input is quantized already)")) +
                          "; TensorRT then fuses the padding into the INT8 convolution";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeQdqBetweenPadAndConv()
{
    return std::make_unique<QdqBetweenPadAndConv>();
}

} // namespace qdq::rules
