// softmax-output-not-quantized: a quantized attention (query, key and value all come from DequantizeLinear nodes)
// whose Softmax output reaches the second MatMul in float. TensorRT's developer guide (MHA fusion, quoted in
// NVIDIA/TensorRT#2981 and #4167) generates an INT8 fused MHA "only if quantized and dequantized layers are placed
// before the first batched matrix multiplication, after softmax, and after the second batched matrix
// multiplication"; ModelOpt's FP8 attention export (NVIDIA/Model-Optimizer PR #1289) inserts an FP8 Q/DQ on every
// Softmax output that feeds a MatMul, "required by TRT MHA fusion", with the fixed scale 1/448.
#include "rules/attention_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace attention;

//! FP8 E4M3's largest value is 448: a scale of 1/448 maps the Softmax's [0, 1] onto the whole FP8 range, 1.0 exactly
//! at its top (ModelOpt's _FP8_E4M3_SOFTMAX_SCALE).
constexpr double kFp8SoftmaxScale = 1.0 / 448.0;
//! INT8: qdq-doctor's choice (no NVIDIA source gives one). The Softmax output lies in [0, 1], so a symmetric int8
//! scale of 1/127 puts 1.0 on 127 and loses nothing to clipping; the negative half of the range goes unused, which
//! costs one bit against a calibrated scale (steps of 1/127 instead of 1/255). TensorRT takes only zero point 0.
constexpr double kInt8SoftmaxScale = 1.0 / 127.0;

class SoftmaxOutputNotQuantized final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"softmax-output-not-quantized",
                                    "",
                                    "A quantized attention's Softmax output reaches the second MatMul in float: "
                                    "TensorRT's INT8/FP8 fused attention wants a Q/DQ after the Softmax",
                                    Severity::kWarning,
                                    "8.6-10.x",
                                    kNeedsOnnx | kReadsModelValues,
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
        for (const Attention& attention : findAttentions(*graph))
        {
            if (!attention.quantized() || attention.probsQuantize != nullptr)
            {
                continue;
            }
            const QuantType type = attention.type(*graph);
            if (type != QuantType::kInt8 && type != QuantType::kFp8)
            {
                continue; // INT4/FP4 attention operands: no documented softmax placement
            }
            report(context, attention, type, sink);
        }
    }

private:
    void report(const Context& context, const Attention& attention, QuantType type, FindingSink& sink) const
    {
        const OnnxNode& softmax = *attention.softmax;
        const OnnxNode& bmm2 = *attention.context;
        const bool fp8 = type == QuantType::kFp8;
        Finding finding =
            makeFinding(info(), "Softmax " + softmax.name + " feeds the second attention MatMul " + bmm2.name +
                                    " in float, although query, key and value are " + quantTypeName(type) + " (from " +
                                    attention.query.dequantize->name + ", " + attention.key.dequantize->name + " and " +
                                    attention.value.dequantize->name + "): TensorRT's " + quantTypeName(type) +
                                    " fused attention wants a Q/DQ after the Softmax, and without it " + bmm2.name +
                                    " runs on a float input.");
        finding.onnxNodes = {attention.scores->name, softmax.name, bmm2.name};
        finding.evidence.push_back(nodeEvidence(context, softmax, "output read by " + bmm2.name + " in float"));
        // The new pair takes the type and op set of the value's DQ, the scale fixed by the Softmax's range.
        FixEdit insert =
            insertQdqEdit(bmm2, softmax.outputs[0], attention.value.dequantize->name,
                          fp8 ? "FP8 E4M3 with the fixed scale 1/448 of ModelOpt's recipe: the Softmax output lies in "
                                "[0, 1] whatever the data, and 1.0 maps onto 448, the largest E4M3 value"
                              : "INT8 with the fixed scale 1/127 (qdq-doctor's choice): the Softmax output lies in "
                                "[0, 1] whatever the data, so 1.0 maps onto 127 and nothing is clipped; zero point "
                                "0, as TensorRT requires");
        insert.fixedScale = fp8 ? kFp8SoftmaxScale : kInt8SoftmaxScale;
        finding.edits.push_back(std::move(insert));
        finding.fix = std::string("quantize the Softmax output for ") + bmm2.name + ": a Q/DQ pair with " +
                      (fp8 ? "FP8 scale 1/448 (ModelOpt's fixed Softmax scale)" : "INT8 scale 1/127, zero point 0");
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeSoftmaxOutputNotQuantized()
{
    return std::make_unique<SoftmaxOutputNotQuantized>();
}

} // namespace qdq::rules
