// int4-not-weight-only: an INT4 Q/DQ on an activation, or an INT4 weight read by an op other than MatMul/Gemm.
// Sources: TensorRT "Working with Quantized Types" (10.11-11.x): "Weight-only quantization is supported for INT4"
// (activations quantize to INT8, FP8 and FP4 only); the TensorRT-RTX support matrix lists INT4 only as "INT4 WoQ GEMM"
// and Model Optimizer's support matrix only as W4A16 block-wise weights of linear layers. No page lists INT4
// convolution kernels: that part is marked as a guess (likely).
#include "qdq/patterns.h"
#include "qdq/quantized_types.h"
#include "rules/rules.h"
#include "rules/weight_paths.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;

class Int4NotWeightOnly final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "int4-not-weight-only",
            "",
            "An INT4 Q/DQ quantizes an activation (TensorRT's INT4 is weight-only), or an INT4 weight feeds an op "
            "other "
            "than MatMul/Gemm",
            Severity::kError,
            "10.0-11.x",
            kNeedsOnnx,
            "INT4 must be re-exported as weight-only MatMul/Gemm quantization (activations in INT8/FP8 or float)"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const QdqParameters& parameters : graph.qdq)
        {
            if (quantizedTypeOfQdq(graph, parameters.node) != QuantizedType::kInt4)
            {
                continue;
            }
            const OnnxNode& node = graph.nodes[parameters.node];
            if (node.inputs.empty() || node.inputs[0].empty())
            {
                continue;
            }
            if (!quantizesConstant(graph, node))
            {
                reportActivation(context, node, sink);
                continue;
            }
            if (parameters.isQuantize)
            {
                continue; // the weight's DQ is judged with its reader
            }
            for (const OnnxNode* reader : weightReaders(graph, node))
            {
                if (reader->opType != "MatMul" && reader->opType != "Gemm")
                {
                    reportNonGemmWeight(context, node, *reader, sink);
                }
            }
        }
    }

private:
    //! Whether the Q/DQ's data comes from a constant: directly, through weight transforms, or (a DQ) from a Q of one.
    static bool quantizesConstant(const OnnxGraph& graph, const OnnxNode& node)
    {
        const std::string* tensor = &node.inputs[0];
        for (int depth = 0; depth < 8; ++depth)
        {
            if (graph.isConstant(*tensor))
            {
                return true;
            }
            const OnnxNode* producer = producerOf(graph, *tensor);
            if (producer == nullptr || producer->inputs.empty())
            {
                return false;
            }
            if (!isQuantize(*producer) && !weights::isWeightTransform(producer->opType))
            {
                return false;
            }
            tensor = &producer->inputs[0];
        }
        return false;
    }

    //! The ops that read the DQ's output, through weight transforms.
    static std::vector<const OnnxNode*> weightReaders(const OnnxGraph& graph, const OnnxNode& dq)
    {
        std::vector<const OnnxNode*> readers;
        std::vector<const std::string*> frontier = {&dq.outputs[0]};
        for (int depth = 0; depth < 8 && !frontier.empty(); ++depth)
        {
            std::vector<const std::string*> next;
            for (const std::string* tensor : frontier)
            {
                for (std::uint32_t index : graph.consumers(*tensor))
                {
                    const OnnxNode& consumer = graph.nodes[index];
                    if (weights::isWeightTransform(consumer.opType) && !consumer.outputs.empty())
                    {
                        next.push_back(&consumer.outputs[0]);
                    }
                    else
                    {
                        readers.push_back(&consumer);
                    }
                }
            }
            frontier = std::move(next);
        }
        return readers;
    }

    void reportActivation(const Context& context, const OnnxNode& node, FindingSink& sink) const
    {
        Finding finding = makeFinding(info(), "");
        finding.message = node.opType + " " + node.name + " quantizes the activation " + node.inputs[0] +
                          " to INT4. TensorRT quantizes activations to INT8, FP8 and FP4 only; INT4 is weight-only "
                          "(\"Working with Quantized Types\"), so TensorRT does not support this node.";
        finding.onnxNodes = {node.name};
        finding.evidence.push_back(nodeEvidence(context, node, "INT4 on a tensor that is not a constant"));
        finding.fix = "quantize the activation " + node.inputs[0] +
                      " to INT8 or FP8 (or leave it in float, W4A16), and keep INT4 for MatMul/Gemm weights";
        sink.add(std::move(finding));
    }

    void reportNonGemmWeight(const Context& context, const OnnxNode& dq, const OnnxNode& reader,
                             FindingSink& sink) const
    {
        Finding finding = makeFinding(info(), "");
        finding.message = "The INT4 weight of " + reader.opType + " " + reader.name + " (through " + dq.name +
                          ") is not a MatMul/Gemm weight. TensorRT documents INT4 only as weight-only GEMM "
                          "quantization (TensorRT-RTX support matrix: INT4 WoQ GEMM; Model Optimizer: W4A16 linear "
                          "layers); no page lists INT4 " +
                          reader.opType +
                          " kernels, so it is likely rejected or run in float with the weight "
                          "dequantized first (a guess: the documentation does not say which).";
        finding.likely = true;
        finding.severity = Severity::kWarning;
        finding.onnxNodes = {reader.name, dq.name};
        finding.evidence.push_back(nodeEvidence(context, dq, "INT4 weight DQ read by " + reader.opType));
        finding.fix = "quantize the weight of " + reader.name +
                      " to INT8 (per channel) or FP8, and keep INT4 for "
                      "MatMul/Gemm weights";
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeInt4NotWeightOnly()
{
    return std::make_unique<Int4NotWeightOnly>();
}

} // namespace qdq::rules
