// Graph and engine helpers shared by the rules: operator classes (reference section 0), walks through commuting
// ops, Q/DQ predicates (qin/qout), and finding construction.
#pragma once

#include "qdq/analysis.h"

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qdq::patterns
{

// ---- operator classes -------------------------------------------------------------------------------------------

// Operation types are compared as string_views: a length check and a fixed-size compare the compiler inlines.
inline bool isQuantize(const OnnxNode& node)
{
    return node.qdqKind == OnnxNode::QdqKind::kQuantize;
}
inline bool isDequantize(const OnnxNode& node)
{
    return node.qdqKind == OnnxNode::QdqKind::kDequantize;
}
inline bool isQdq(const OnnxNode& node)
{
    return node.qdqKind != OnnxNode::QdqKind::kNone;
}
//! Conv, ConvTranspose, Gemm, and MatMul whose second input is constant (possibly through Q/DQ).
bool isWeighted(const OnnxGraph& graph, const OnnxNode& node);
//! Data-movement ops Q/DQ commute with: MaxPool, Concat, Slice, Split, Reshape, Transpose, Flatten, Squeeze,
//! Unsqueeze, Identity, GlobalMaxPool, Pad (constant zero padding assumed).
bool isCommuting(const std::string& opType);
//! Shape and Size read a tensor's dimensions, never its values: they neither dequantize nor run on a quantized
//! tensor's data, and their outputs are build-time values for TensorRT (its ONNX parser computes shape values of
//! static dimensions at parse time).
inline bool readsShapeOnly(std::string_view opType)
{
    return opType == "Shape" || opType == "Size";
}
//! True when tensor (an id, or a name) reaches node as the data a Q/DQ moves with: any input of a Concat, input 0 of
//! the other ops. A Reshape's shape, a Slice's starts or a Pad's pads carry no quantized values (Swin computes its
//! Reshape shapes with Shape -> Gather -> Cast -> Unsqueeze -> Concat), so walks through commuting ops stop there.
bool carriesData(const OnnxGraph& graph, const OnnxNode& node, std::uint32_t tensor);
bool carriesData(const OnnxNode& node, const std::string& tensor);
//! Single-input pointwise ops TensorRT fuses as a conv epilogue ("generic activation") and BatchNormalization.
bool isEpilogue(const std::string& opType);
bool isActivation(const std::string& opType);
//! The gate g of a self-gated activation Mul(x, g(x)): Sigmoid (SiLU) or HardSigmoid (HardSwish, as torch exports it
//! below opset 14). TensorRT's PointWise fusion makes the pair one single-input pointwise layer, which a conv then
//! takes as its generic activation (reference 1.8), so both are handled alike.
inline bool isSelfGate(std::string_view opType)
{
    return opType == "Sigmoid" || opType == "HardSigmoid";
}
//! The gate of mul when mul is Mul(x, gate(x)) with isSelfGate(gate) (x is the gate's input 0), else nullptr.
const OnnxNode* selfGateOf(const OnnxGraph& graph, const OnnxNode& mul);
//! What Mul(x, gate(x)) is called: "HardSwish" for a HardSigmoid gate, "SiLU" otherwise.
inline std::string_view selfGatedName(std::string_view gateOpType)
{
    return gateOpType == "HardSigmoid" ? "HardSwish" : "SiLU";
}
//! A ReduceMean that computes a normalization statistic: its output is subtracted from its input (x - mean(x)), or
//! it averages a square (the variance of LayerNorm and GroupNorm written out as ReduceMean -> Sub -> Pow -> ...).
bool isNormalizationMean(const OnnxGraph& graph, const OnnxNode& node);
//! A ReduceMean over axes 2 and 3 (or -2 and -1) keeping its dimensions and no normalization statistic: a global
//! average pooling, as torch's newer exporter writes adaptive_avg_pool2d. TensorRT turns such a Reduce into a
//! Pooling layer (reference 1.8, "Reduce").
bool isSpatialMean(const OnnxGraph& graph, const OnnxNode& node);
//! AveragePool, GlobalAveragePool, or a spatial mean (isSpatialMean).
bool isAveragePooling(const OnnxGraph& graph, const OnnxNode& node);
//! Non-weighted ops that run INT8 when wrapped `DQ > op > Q`: Add, Mul, Sub, AveragePool, GlobalAveragePool, ...
bool isQuantizableNonWeighted(const std::string& opType);
//! Activations that run as one quantized PointWise layer when wrapped `DQ > op > Q` (the simulator's guess, marked as
//! such: the "Q/DQ fusion" best practice fuses `DQ > node > Q` for any non-weighted node, and onnx-tensorrt's operator
//! matrix lists INT8 for these; no real engine here shows one). Not PRelu (a weighted slope) nor Gelu (a Myelin seed).
bool isQuantizableActivation(const std::string& opType);
bool isCustomOp(const OnnxNode& node);
//! ONNX's operator-format quantized ops (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger,
//! DynamicQuantizeLinear) and ONNX Runtime's quantized com.microsoft ops (QLinearAdd, QGemm, QAttention,
//! DynamicQuantizeMatMul, MatMulNBits, ...): integer arithmetic inside one node. TensorRT's ONNX parser imports none
//! of them (it looks each up as a plugin and fails); it takes quantization only as QuantizeLinear/DequantizeLinear.
bool isOperatorFormatQuantized(const OnnxNode& node);
//! The op types isOperatorFormatQuantized takes, whatever their domain (a build log's parser lines name none).
bool isIntegerOpName(std::string_view opType);
//! The node whose integer output tensor is, walking back through commuting ops other than Concat (their input 0): a
//! QuantizeLinear, or a QOperator op with a quantized output (QLinearConv, com.microsoft QLinearAdd, ...). nullptr
//! when tensor holds float data. ONNX Runtime's QOperator format runs MaxPool, Flatten, Reshape, ... directly on
//! such uint8/int8 tensors.
const OnnxNode* quantizingSource(const OnnxGraph& graph, const std::string& tensor);

// ---- graph navigation ---------------------------------------------------------------------------------------------

const OnnxNode* producerOf(const OnnxGraph& graph, const std::string& tensor);
//! The nodes reading tensor, in graph order (a view into the graph: no copy).
NodeRefs consumersOf(const OnnxGraph& graph, const std::string& tensor);
bool isConstantTensor(const OnnxGraph& graph, const std::string& tensor);
//! True when tensor is constant, possibly through Q, DQ, Identity, Transpose, Reshape or Cast of constants (torch
//! exports a shared parameter through an Identity).
bool isConstantLike(const OnnxGraph& graph, const std::string& tensor, int depth = 0);
//! True when tensor is computed from a Shape or Size (and constants) only: a build-time value such as the sizes of a
//! Resize that F.interpolate(size=x.shape[-2:]) exports, never an activation.
bool isShapeValue(const OnnxGraph& graph, const std::string& tensor);
//! The answers a recursive walk over what tensors are computed from has given so far, for one question ("is every
//! input constant", "is it non-negative"): each tensor is decided once, so a walk over shared inputs (a chain of
//! Add(t, t), a Concat of one tensor a hundred times) takes time linear in the tensors it meets rather than exponential
//! in its depth, and a tensor met again while it is still being decided (a cycle, which a graph the reader accepts may
//! hold) counts as "no". Tensors the graph does not know (kNone) are decided every time: they have no producer.
class TensorMemo
{
public:
    template <typename Decide>
    bool decide(std::uint32_t tensor, Decide&& decideOnce)
    {
        if (tensor == OnnxGraph::kNone)
        {
            return decideOnce();
        }
        if (auto [known, fresh] = mAnswers.try_emplace(tensor, false); !fresh)
        {
            return known->second;
        }
        const bool answer = decideOnce();
        mAnswers[tensor] = answer; // looked up again: deciding may have rehashed the map
        return answer;
    }

private:
    std::unordered_map<std::uint32_t, bool> mAnswers;
};
bool isGraphInput(const OnnxGraph& graph, const std::string& tensor);
bool isGraphOutput(const OnnxGraph& graph, const std::string& tensor);

//! The DQ feeding tensor, walking back through commuting ops (qin in the reference); nullptr when float.
const OnnxNode* feedingDequantize(const OnnxGraph& graph, const std::string& tensor);

//! The Qs reached from tensor going forward through commuting ops (and, when throughEpilogue, through single-
//! consumer epilogue ops). allPaths is set false when some path ends at a non-Q op or a graph output first.
struct ForwardQuantizers
{
    std::vector<const OnnxNode*> quantizers;
    bool allPaths = true;
};
ForwardQuantizers forwardQuantizers(const OnnxGraph& graph, const std::string& tensor, bool throughEpilogue);

//! Follows single-consumer epilogue ops (BN, activations, SiLU's Sigmoid*Mul) from a weighted op's output; returns
//! the last tensor of the epilogue chain and the nodes passed.
struct EpilogueChain
{
    const std::string* output = nullptr; //!< the chain's output tensor, a string of the graph's tensor table
    std::vector<const OnnxNode*> nodes;

    const std::string& tensor() const
    {
        static const std::string none;
        return output != nullptr ? *output : none;
    }
};
EpilogueChain epilogueChain(const OnnxGraph& graph, const OnnxNode& weighted);

//! The scale of a Q/DQ node as a single value when per-tensor and constant.
std::optional<double> perTensorScale(const OnnxGraph& graph, const OnnxNode& qdqNode);
bool scalesEqual(double a, double b);

//! The most fix lets the largest scale of a group exceed its smallest when it gives the group one scale (docs/fix.md,
//! "Scales"). A Q whose scale grows R times rounds with an R times larger step: it loses log2(R) of its 8 bits, and
//! values below half the new step become 0. At 4 the tensor with the smallest scale keeps 6 bits (about 32 steps on
//! each side of zero) and its rounding error grows at most 4 times. Measured on ../shared/models and samples/
//! (2026-11-27): the groups fix unified differ by 1.01x to 3.54x; the others by 16.5x, 19.3x, 886x and 959x
//! (yolov8lite-qat-convs: /h2/iq/QuantizeLinear 7.87e-09 vs 7.55e-06, which would zero the head's input), so 4 keeps
//! every ordinary group and refuses the degenerate ones; 8 would do the same on these models at twice the cost in
//! rounding. This is qdq-doctor's choice, not a TensorRT limit: TensorRT takes any positive scales; equal ones only
//! let it cancel DQ -> Q pairs and merge Qs (reference 1.3, "scale-equality dependent rewrites").
inline constexpr double kMostUnifiedScaleRatio = 4.0;
//! Whether one scale may serve a group whose scales range from smallest to largest (kMostUnifiedScaleRatio).
bool withinUnificationBound(double smallest, double largest);

//! The Q whose scale a new Q/DQ pair on a tensor takes when quantizers (the Qs that already quantize the tensor, or
//! that its values reach) are known: one decision per tensor, whichever rule asks. Equal scales: the first Q, which
//! TensorRT merges the new one with. Scales within kMostUnifiedScaleRatio: the first Q with the largest, the scale
//! fanout-scale-mismatch and the Concat rules give them all. Further apart, or no scale known: nullptr, and whyNot
//! (when given) says why the tensor needs a calibrated scale instead.
const OnnxNode* scaleSourceAmong(const OnnxGraph& graph, const std::vector<const OnnxNode*>& quantizers,
                                 std::string* whyNot = nullptr);
//! Advice text for that decision: " with the scale of Q (scale s)", or " with a calibrated scale (why)".
std::string scaleAdviceAmong(const OnnxGraph& graph, const std::vector<const OnnxNode*>& quantizers);

// ---- engine side ------------------------------------------------------------------------------------------------

//! Average time of a layer when a profile is present.
std::optional<double> layerTime(const Context& context, std::size_t layer);
//! Sum of the times of the given layers; nullopt when no profile.
std::optional<double> sumTimes(const Context& context, const std::vector<std::size_t>& layers);
//! Engine layers executing an ONNX node.
std::vector<std::size_t> layersOf(const Context& context, const std::string& onnxNode);
//! Precision of a layer's first output / first input.
Precision outputPrecision(const EngineLayer& layer);
Precision inputPrecision(const EngineLayer& layer, std::size_t input = 0);
//! True when a token of the layer's name (PWN(), " + ", " || " unwrapped) contains `op`, e.g. "Add" or "MaxPool".
bool layerNameHas(const EngineLayer& layer, std::string_view op);
//! Layers producing / consuming a tensor name.
std::optional<std::size_t> producerLayer(const EnginePlan& plan, const std::string& tensor);
std::vector<std::size_t> consumerLayers(const EnginePlan& plan, const std::string& tensor);

// ---- findings ---------------------------------------------------------------------------------------------------

//! Evidence pointing at an engine layer record (layer-info or build-log line).
Evidence layerEvidence(const Context& context, std::size_t layer, const std::string& field, const std::string& text);
//! Evidence pointing at an ONNX node.
Evidence nodeEvidence(const Context& context, const OnnxNode& node, std::string text);
//! Evidence for each error line of the build log (none without a log) whose text `matches` accepts.
std::vector<Evidence> buildLogErrorEvidence(const Context& context, bool (*matches)(const std::string& text));
//! Starts a finding with the rule's slug and default severity.
Finding makeFinding(const RuleInfo& info, std::string message);
//! Names of engine layers.
std::vector<std::string> layerNames(const Context& context, const std::vector<std::size_t>& layers);
//! "Conv_9" style list for messages: first few names then "and N more".
std::string nameList(const std::vector<std::string>& names, std::size_t shown = 4);
std::string formatMs(double ms);

// ---- fix edits (docs/fix.md) --------------------------------------------------------------------------------------

//! Whether tensor reaches a QuantizeLinear through ops TensorRT can run in INT8 when their input is quantized
//! (activations, pooling, shape ops), within a few steps: where an op's result goes on quantized, quantizing its
//! input pays.
bool reachesQuantizer(const OnnxGraph& graph, const std::string& tensor);

//! Insert Q -> DQ on tensor where consumer reads it (every input of consumer that reads it), with the scale and zero
//! point of the Q/DQ node scaleFrom.
//! A Pad that writes zeros (mode "constant", no value or a zero value), with non-negative pads when they are known:
//! TensorRT folds such a Pad into the convolution that reads it (Padding + Convolution).
bool isZeroPad(const OnnxGraph& graph, const OnnxNode& pad);
FixEdit insertQdqEdit(const OnnxNode& consumer, const std::string& tensor, const std::string& scaleFrom,
                      std::string scaleReason);
//! Give the Q/DQ nodes (closed over their pairs by fix) the scale and zero point of scaleFrom.
FixEdit setScaleEdit(std::vector<std::string> nodes, std::string scaleFrom, std::string scaleReason);
//! Remove the pair q -> dq: the DQ's readers read the Q's input.
FixEdit removeQdqPairEdit(const OnnxNode& q, const OnnxNode& dq);

} // namespace qdq::patterns
