// `fix --autocast fp16|bf16` (include/qdq/autocast.h, docs/fix.md#autocast). Under strong typing TensorRT runs each
// tensor in the type the graph gives it, so an FP32 Q/DQ model runs its unquantized part in FP32; the remedy is in the
// graph (../shared/docs/tensorrt-10-11.md section 1; ModelOpt's AutoCast does it in Python:
// https://nvidia.github.io/Model-Optimizer/guides/8_autocast.html).
//
// Steps: infer every tensor's element type; give each node that reads or writes a float tensor a precision (low, or
// FP32 with a documented reason); give each constant the type its readers need; rewire the readers of a tensor whose
// precision differs from what they need through one Cast per tensor and type; convert initializers, Constant nodes,
// Cast targets, value infos and (with --autocast-io) the graph's inputs and outputs.
#include "qdq/autocast.h"
#include "src/fixes/autocast_graph.h"

#include "qdq/diagnostics.h"
#include "qdq/name_index.h"

#include "parsers/external_data_ref.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unistd.h>
#include <unordered_map>

namespace qdq
{

using namespace autocast_detail;

namespace
{

// ----- which nodes stay FP32 -----------------------------------------------------------------------------------------

enum class Precision
{
    kNone, //!< no float tensor in or out: untouched
    kLow,
    kFp32,
};

struct Keep
{
    std::string reason;
    std::string why;
};

class NodePrecisions
{
public:
    NodePrecisions(const onnx::GraphProto& graph, const GraphFacts& facts, const AutocastOptions& options,
                   std::int64_t opset)
        : mGraph(graph), mFacts(facts), mOptions(options), mOpset(opset), mPrecision(graph.node_size()),
          mKeep(graph.node_size(), -1)
    {
        markFloatNodes();
        keepQdqWithFp32Scales();
        keepByOpType();
        keepWritersOfSubgraphReads();
        keepHandWrittenLayerNorms();
        keepReadersOfOutOfRangeConstants();
        keepDqReaders();
        keepQuantizedEpilogues();
    }

    Precision precision(std::size_t node) const { return mPrecision[node]; }
    const std::vector<Keep>& reasons() const { return mReasons; }
    int reasonIndex(std::size_t node) const { return mKeep[node]; }
    std::size_t qdqKeptFp32() const { return mQdqKept; }

private:
    bool low() const { return mOptions.target == AutocastOptions::Target::kFp16; }

    //! Keeps the node in FP32 under reason (its sentence, why, is the same for every node of the reason: nodes hold
    //! an index into mReasons, so 500,000 kept nodes hold no string each).
    //! Views, not strings: the callers pass literals, and a string made per call (two heap blocks for most reasons)
    //! was about a tenth of the analysis on the 500,000-node bench model.
    void setFp32(std::size_t node, std::string_view reason, std::string_view why)
    {
        if (mPrecision[node] != Precision::kLow)
        {
            return;
        }
        mPrecision[node] = Precision::kFp32;
        auto found = std::find_if(mReasons.begin(), mReasons.end(), [&](const Keep& k) { return k.reason == reason; });
        if (found == mReasons.end())
        {
            mReasons.push_back({std::string(reason), std::string(why)});
            found = mReasons.end() - 1;
        }
        mKeep[node] = static_cast<int>(found - mReasons.begin());
    }

    bool keptFor(std::size_t node, const char* reason) const
    {
        return mKeep[node] >= 0 && mReasons[mKeep[node]].reason == reason;
    }

    const std::string& op(std::size_t node) const { return mGraph.node(static_cast<int>(node)).op_type(); }

    void markFloatNodes()
    {
        for (int i = 0; i < mGraph.node_size(); ++i)
        {
            const onnx::NodeProto& node = mGraph.node(i);
            const auto isFloat = [this](std::uint32_t id) { return mFacts.isFloatId(id); };
            const auto inputs = mFacts.inputsOf(static_cast<std::size_t>(i));
            const auto outputs = mFacts.outputsOf(static_cast<std::size_t>(i));
            const bool readsFloat = std::any_of(inputs.begin(), inputs.end(), isFloat);
            const bool writesFloat = std::any_of(outputs.begin(), outputs.end(), isFloat);
            // A Constant node computes nothing: its value takes the type its readers want (Rewriter::constantType).
            const bool constant = node.op_type() == "Constant" && isStandardDomain(node.domain());
            mPrecision[i] =
                (readsFloat || writesFloat) && !constant && !isBoundaryCast(node) ? Precision::kLow : Precision::kNone;
        }
    }

    //! A Cast that is not a float op to lower: one to a type other than FLOAT, or from FLOAT16/BFLOAT16 to FLOAT (a
    //! boundary the model or an earlier autocast placed: the Cast before a graph output keeps it FP32). A Cast to FLOAT
    //! from an integer, bool or double type is lowered (its `to` becomes the target type).
    bool isBoundaryCast(const onnx::NodeProto& node) const
    {
        if (node.op_type() != "Cast" || !isStandardDomain(node.domain()))
        {
            return false;
        }
        const int from = node.input_size() > 0 ? mFacts.type(node.input(0)) : 0;
        return intAttribute(node, "to", 0) != kFloat || from == kFloat16 || from == kBfloat16;
    }

    //! The constant values of a tensor (an initializer or a Constant node's value), when the model holds them.
    std::optional<std::vector<float>> constantValues(const std::string& tensor) const
    {
        if (const onnx::TensorProto* initializer = mFacts.initializerOf(tensor))
        {
            if (initializer->data_type() != kFloat || isExternal(*initializer))
            {
                return std::nullopt;
            }
            return floatValues(*initializer);
        }
        const auto producer = mFacts.producerOf(tensor);
        if (!producer)
        {
            return std::nullopt;
        }
        const onnx::NodeProto& node = mGraph.node(static_cast<int>(*producer));
        if (node.op_type() != "Constant" || !isStandardDomain(node.domain()))
        {
            return std::nullopt;
        }
        if (const auto* value = findAttribute(node, "value"); value != nullptr && value->t().data_type() == kFloat)
        {
            // A value in external data is not read for a decision (like an external initializer).
            return isExternal(value->t()) ? std::nullopt : std::optional(floatValues(value->t()));
        }
        if (const auto* value = findAttribute(node, "value_float"))
        {
            return std::vector<float>{value->f()};
        }
        if (const auto* value = findAttribute(node, "value_floats"))
        {
            return std::vector<float>(value->floats().begin(), value->floats().end());
        }
        return std::nullopt;
    }

    //! Q/DQ keep FP32 scales before opset 19 (no FLOAT16 scale there), and where a scale does not fit the low type's
    //! normal range (a scale that becomes subnormal or 0 in FP16 would change every quantized value).
    void keepQdqWithFp32Scales()
    {
        // One sentence for every Q/DQ node of an old opset, made once (made per node, it was a tenth of the analysis
        // on the 300,000 Q/DQ nodes of the bench model).
        const std::string oldOpsetWhy = "opset " + std::to_string(mOpset) +
                                        " < 19: QuantizeLinear and DequantizeLinear take FP32 "
                                        "scales only (FLOAT16/BFLOAT16 scales arrive with opset 19); a DQ writes FP32 "
                                        "here";
        for (int i = 0; i < mGraph.node_size(); ++i)
        {
            const onnx::NodeProto& node = mGraph.node(i);
            if (mPrecision[i] != Precision::kLow || !isStandardDomain(node.domain()) ||
                (node.op_type() != "QuantizeLinear" && node.op_type() != "DequantizeLinear"))
            {
                continue;
            }
            std::string_view why;
            std::string_view reason = "qdq-fp32-scale";
            if (mOpset < kFirstOpsetWithLowScales)
            {
                why = oldOpsetWhy;
            }
            else if (const auto scale = node.input_size() > 1 ? constantValues(node.input(1)) : std::nullopt; !scale)
            {
                reason = "qdq-scale-not-constant";
                why = "the scale is not a constant FP32 tensor in the model: it is left as it is";
            }
            else if (low())
            {
                const auto outside =
                    std::find_if(scale->begin(), scale->end(),
                                 [](float v) { return !(std::fabs(v) >= kFp16MinNormal && std::fabs(v) <= kFp16Max); });
                if (outside != scale->end())
                {
                    reason = "qdq-scale-range";
                    why = "a scale outside FP16's normal range [6.1e-05, 65504]: in FP16 it would lose its precision "
                          "or become 0";
                }
            }
            if (!why.empty())
            {
                setFp32(static_cast<std::size_t>(i), reason, why);
                ++mQdqKept;
            }
        }
    }

    void keepByOpType()
    {
        // Reductions and normalizations accumulate over many elements: sums overflow FP16's 65504 and means lose
        // precision. TensorRT warns "Running layernorm after self-attention with FP16 Reduce or Pow may cause
        // overflow. Forcing Reduce or Pow Layers in FP32 precision ... can help" (pytorch/TensorRT #4061,
        // NVIDIA/TensorRT #3692, whose log lists the ReduceMean, Pow, Sqrt, Div of hand-written LayerNorms).
        static const std::set<std::string> reductions = {"ReduceMean",      "ReduceSum",          "ReduceSumSquare",
                                                         "ReduceL1",        "ReduceL2",           "ReduceLogSum",
                                                         "ReduceLogSumExp", "ReduceProd",         "Softmax",
                                                         "LogSoftmax",      "LayerNormalization", "GroupNormalization"};
        // Exp overflows FP16 above 11.09 and Pow(x, 2) above |x| = 255.9 (NVIDIA/TensorRT #3101, ttyio: "only 5
        // exponent bits in fp16 ... overflow depends on the input data flow into operation like pow"). BF16 has FP32's
        // exponent: these keep FP32 only for FP16.
        static const std::set<std::string> overflowing = {"Exp", "Pow"};
        // Ops whose float types ONNX fixes: NonMaxSuppression reads float boxes only; the Random* ops and EyeLike take
        // their output type from an attribute this pass does not rewrite.
        static const std::set<std::string> fixedTypes = {
            "NonMaxSuppression", "RandomNormal", "RandomUniform", "RandomNormalLike",
            "RandomUniformLike", "Multinomial",  "Bernoulli",     "EyeLike"};
        for (int i = 0; i < mGraph.node_size(); ++i)
        {
            const onnx::NodeProto& node = mGraph.node(i);
            const auto index = static_cast<std::size_t>(i);
            if (!isStandardDomain(node.domain()))
            {
                setFp32(index, "custom-op",
                        "a custom-domain op (plugin): its plugin decides its types; its float inputs and outputs stay "
                        "FP32");
                continue;
            }
            const bool hasSubgraph =
                std::any_of(node.attribute().begin(), node.attribute().end(),
                            [](const onnx::AttributeProto& a) { return a.has_g() || a.graphs_size() > 0; });
            if (hasSubgraph)
            {
                setFp32(index, "subgraph", "an op with a subgraph, which autocast does not convert");
            }
            else if (reductions.count(node.op_type()) != 0)
            {
                setFp32(index, "reduction",
                        "reductions and normalizations accumulate statistics over many elements: in " +
                            autocastTargetName(mOptions.target) + " their sums overflow or lose precision");
            }
            else if (low() && overflowing.count(node.op_type()) != 0)
            {
                setFp32(index, "overflow-op",
                        "overflows FP16 (largest value 65504: Exp beyond 11.09, Pow(x, 2) beyond |x| = 255.9)");
            }
            else if (fixedTypes.count(node.op_type()) != 0)
            {
                setFp32(index, "fixed-type", "ONNX fixes the op's float type (or an attribute does)");
            }
        }
    }

    //! A node that writes a float tensor a subgraph reads stays FP32: the subgraph is not converted, and its body's
    //! types follow the tensor's (with it in the low type, ONNX shape inference fails on the body).
    void keepWritersOfSubgraphReads()
    {
        for (std::uint32_t id = 0; id < mFacts.names.size(); ++id)
        {
            const std::uint32_t producer = mFacts.producers[id];
            if ((mFacts.flags[id] & GraphFacts::kSubgraphRead) != 0 && mFacts.types[id] == kFloat &&
                producer != GraphFacts::kNone)
            {
                setFp32(producer, "subgraph-input",
                        "writes a tensor that a subgraph (an If, Loop or Scan body) reads: autocast does not convert "
                        "subgraphs, so the tensor keeps FP32");
            }
        }
    }

    //! The first reader of tensor with opType among candidates, or none.
    std::optional<std::size_t> readerOf(const std::string& tensor, std::initializer_list<const char*> opTypes) const
    {
        for (const Slot& slot : mFacts.readersOf(tensor))
        {
            for (const char* opType : opTypes)
            {
                if (op(slot.node) == opType)
                {
                    return slot.node;
                }
            }
        }
        return std::nullopt;
    }

    const std::string& out(std::size_t node) const { return mGraph.node(static_cast<int>(node)).output(0); }

    //! mean = ReduceMean(x); d = Sub(x, mean); v = ReduceMean(Pow(d, 2) or Mul(d, d)); Add(v, eps) -> Sqrt -> Div(d,
    //! .): the LayerNorm of exports before opset 17 (TensorRT's log names exactly these nodes, NVIDIA/TensorRT #3692).
    void keepHandWrittenLayerNorms()
    {
        for (int i = 0; i < mGraph.node_size(); ++i)
        {
            if (op(static_cast<std::size_t>(i)) != "ReduceMean" || mGraph.node(i).output_size() == 0)
            {
                continue;
            }
            const auto sub = readerOf(out(static_cast<std::size_t>(i)), {"Sub"});
            const auto square = sub ? readerOf(out(*sub), {"Pow", "Mul"}) : std::nullopt;
            const auto variance = square ? readerOf(out(*square), {"ReduceMean"}) : std::nullopt;
            if (!variance)
            {
                continue;
            }
            std::vector<std::size_t> chain = {static_cast<std::size_t>(i), *sub, *square, *variance};
            auto next = readerOf(out(*variance), {"Add"});
            for (const auto& step : {std::initializer_list<const char*>{"Sqrt"}, {"Div", "Reciprocal"}})
            {
                if (!next)
                {
                    break;
                }
                chain.push_back(*next);
                next = readerOf(out(*next), step);
            }
            if (next)
            {
                chain.push_back(*next);
            }
            for (std::size_t node : chain)
            {
                mPrecision[node] = mPrecision[node] == Precision::kNone ? Precision::kNone : Precision::kLow;
                mKeep[node] = -1;
                setFp32(node, "layernorm-pattern",
                        "part of a hand-written LayerNorm (ReduceMean -> Sub -> Pow -> ReduceMean -> Add -> Sqrt -> "
                        "Div): its variance overflows or loses precision in " +
                            autocastTargetName(mOptions.target));
            }
        }
    }

    //! An initializer with values beyond FP16's range keeps its readers in FP32 (ModelOpt AutoCast's init_max, 65504
    //! by default). BF16 has FP32's range.
    void keepReadersOfOutOfRangeConstants()
    {
        if (!low())
        {
            return;
        }
        for (int i = 0; i < mGraph.node_size(); ++i)
        {
            const onnx::NodeProto& node = mGraph.node(i);
            if (mPrecision[i] != Precision::kLow)
            {
                continue;
            }
            for (const std::string& input : node.input())
            {
                if (!mFacts.isFloat(input))
                {
                    continue;
                }
                const auto values = constantValues(input);
                if (!values)
                {
                    continue;
                }
                const auto big = std::find_if(values->begin(), values->end(),
                                              [](float v) { return std::isfinite(v) && std::fabs(v) > kFp16Max; });
                if (big != values->end())
                {
                    setFp32(static_cast<std::size_t>(i), "init-range",
                            "reads a constant with a value beyond FP16's largest, 65504 (ModelOpt AutoCast's "
                            "init_max)");
                    break;
                }
            }
        }
    }

    bool writesFp32DqId(std::uint32_t id) const
    {
        const std::uint32_t producer = id == GraphFacts::kNone ? GraphFacts::kNone : mFacts.producers[id];
        return producer != GraphFacts::kNone && op(producer) == "DequantizeLinear" &&
               mPrecision[producer] == Precision::kFp32;
    }

    //! A DQ that keeps FP32 writes FP32; a Cast between it and its reader would keep TensorRT from fusing the DQ into
    //! the op (../shared/docs/tensorrt-10-11.md section 1, Model-Optimizer PR #1289, which folds such Casts into FP16
    //! scales where the opset allows). Its readers stay FP32, and Casts follow their outputs instead.
    void keepDqReaders()
    {
        for (int i = 0; i < mGraph.node_size(); ++i)
        {
            const onnx::NodeProto& node = mGraph.node(i);
            if (mPrecision[i] != Precision::kLow || node.op_type() == "QuantizeLinear")
            {
                continue;
            }
            for (const std::uint32_t input : mFacts.inputsOf(static_cast<std::size_t>(i)))
            {
                if (writesFp32DqId(input))
                {
                    setFp32(static_cast<std::size_t>(i), "dq-reader",
                            "reads a DequantizeLinear that keeps an FP32 scale: a Cast between them would keep "
                            "TensorRT from fusing the DQ into the op");
                    break;
                }
            }
        }
    }

    //! Whether every non-constant float input of the node comes from an FP32 DQ or a node isSource marks (and there is
    //! one at least).
    template <typename IsSource>
    bool fedByFp32(std::size_t node, const IsSource& isSource) const
    {
        bool any = false;
        for (const std::uint32_t input : mFacts.inputsOf(node))
        {
            if (!mFacts.isFloatId(input) || mFacts.initializers[input] != nullptr)
            {
                continue;
            }
            const std::uint32_t producer = mFacts.producers[input];
            if (producer != GraphFacts::kNone && op(producer) == "Constant")
            {
                continue;
            }
            if (!writesFp32DqId(input) && !(producer != GraphFacts::kNone && isSource(producer)))
            {
                return false;
            }
            any = true;
        }
        return any;
    }

    //! Before opset 19 (or where a Q/DQ keeps an FP32 scale) the quantized part stays FP32 as a whole, so that no Cast
    //! cuts what TensorRT fuses or runs quantized:
    //! - the ops TensorRT fuses into a quantized convolution or GEMM after it (Conv -> BatchNormalization -> Sigmoid ->
    //!   Mul -> Add -> Relu -> MaxPool), fed only by FP32 DQs, their readers and other such ops (`quantized-epilogue`);
    //! - data movement between FP32 DQs (or those ops) and FP32 Qs (Concat, Split, Resize, Reshape, ...), which
    //!   TensorRT runs quantized by moving the Q/DQ across it (`quantized-data-movement`).
    //! The Cast to the target type follows the last of them, before an op that computes in float.
    void keepQuantizedEpilogues()
    {
        // What TensorRT fuses into a convolution or GEMM: BatchNormalization (Convolution + Scale), activations
        // (Convolution + ReLU / Clip / GELU / Generic Activation), an elementwise sum, min or max (Convolution +
        // ElementWise), pointwise chains, max pooling (Convolution + Pooling): the "Layer Fusion Catalog" summarized
        // in ../shared/docs/tensorrt-qdq-reference.md section 1.8. An average pooling is a layer of its own.
        static const std::set<std::string> fusible = {"BatchNormalization",
                                                      "Relu",
                                                      "LeakyRelu",
                                                      "PRelu",
                                                      "Clip",
                                                      "Sigmoid",
                                                      "Tanh",
                                                      "HardSigmoid",
                                                      "HardSwish",
                                                      "Elu",
                                                      "Selu",
                                                      "Softplus",
                                                      "Gelu",
                                                      "Add",
                                                      "Sub",
                                                      "Mul",
                                                      "Div",
                                                      "Max",
                                                      "Min",
                                                      "Sum",
                                                      "MaxPool",
                                                      "Identity"};
        // Data movement that Q/DQ propagate across (the reference's section 1.4, "commute Q/DQ").
        static const std::set<std::string> dataMovement = {
            "Concat", "Split",    "Slice",  "Reshape", "Flatten", "Transpose", "Squeeze",  "Unsqueeze",
            "Resize", "Upsample", "Gather", "Pad",     "Expand",  "Tile",      "Identity", "MaxPool"};
        const std::size_t count = mPrecision.size();
        // Forward, in node order: an epilogue op fed by FP32 sources becomes one; a data-movement op fed by them is a
        // candidate (fedFp32), counted as a source for what follows (a C2f's Split feeds its bottleneck's Add), and
        // kept below when its readers are FP32 too.
        std::vector<bool> fp32Source(count, false); //!< a DQ reader, an epilogue node, or a data-movement candidate
        std::vector<bool> fedFp32(count, false);    //!< data-movement candidates
        const auto isSource = [&](std::size_t producer) { return fp32Source[producer]; };
        for (std::size_t i = 0; i < count; ++i)
        {
            const onnx::NodeProto& node = mGraph.node(static_cast<int>(i));
            if (mPrecision[i] != Precision::kLow)
            {
                fp32Source[i] = mPrecision[i] == Precision::kFp32 && keptFor(i, "dq-reader");
                continue;
            }
            if (fusible.count(node.op_type()) != 0 && fedByFp32(i, isSource))
            {
                fp32Source[i] = true;
                setFp32(i, "quantized-epilogue",
                        "fused by TensorRT into the quantized op before it (BatchNormalization, activation, residual "
                        "Add, max pooling): a Cast inside would cut that fusion, so the Cast follows it");
            }
            else if (dataMovement.count(node.op_type()) != 0 && fedByFp32(i, isSource))
            {
                fp32Source[i] = true;
                fedFp32[i] = true;
            }
        }
        keepDataMovementReadByFp32(fedFp32);
    }

    //! The data-movement candidates (fedFp32) whose every reader is an FP32 Q, an FP32 node or such a candidate: the
    //! Q/DQ move across them, so they stay FP32 (`quantized-data-movement`).
    void keepDataMovementReadByFp32(const std::vector<bool>& fedFp32)
    {
        const std::size_t count = mPrecision.size();
        std::vector<bool> readByFp32(count, false);
        for (std::size_t i = count; i-- > 0;)
        {
            const onnx::NodeProto& node = mGraph.node(static_cast<int>(i));
            if (mPrecision[i] != Precision::kLow || !fedFp32[i])
            {
                readByFp32[i] = mPrecision[i] == Precision::kFp32;
                continue;
            }
            bool any = false;
            bool all = true;
            for (const std::string& output : node.output())
            {
                all = all && !mFacts.isGraphOutput(output);
                for (const Slot& reader : mFacts.readersOf(output))
                {
                    any = true;
                    all = all && readByFp32[reader.node];
                }
            }
            readByFp32[i] = any && all;
        }
        for (std::size_t i = 0; i < count; ++i)
        {
            if (mPrecision[i] == Precision::kLow && fedFp32[i] && readByFp32[i])
            {
                setFp32(i, "quantized-data-movement",
                        "moves data between FP32 Q/DQ (Concat, Split, Resize, Reshape, ...): TensorRT moves the Q/DQ "
                        "across it and runs it quantized, and a Cast inside would stop that");
            }
        }
    }

    const onnx::GraphProto& mGraph;
    const GraphFacts& mFacts;
    const AutocastOptions& mOptions;
    std::int64_t mOpset = 0;
    std::vector<Precision> mPrecision;
    std::vector<int> mKeep; //!< node -> index into mReasons, -1 when not kept
    std::vector<Keep> mReasons;
    std::size_t mQdqKept = 0;
};

// ----- rewriting -----------------------------------------------------------------------------------------------------

//! Inputs ONNX types as FP32 whatever the node's type: Resize's scales (input 2) and Upsample's scales (input 1).
bool slotIsFp32Only(const onnx::NodeProto& node, int input)
{
    // The slot's index first: it rules out most slots without a string compared.
    return ((input == 2 && node.op_type() == "Resize") || (input == 1 && node.op_type() == "Upsample")) &&
           isStandardDomain(node.domain());
}

class Rewriter
{
public:
    Rewriter(onnx::ModelProto& model, GraphFacts& facts, const NodePrecisions& precisions,
             const AutocastOptions& options, AutocastSummary& summary, const AutocastDataSource& data)
        : mGraph(*model.mutable_graph()), mFacts(facts), mPrecisions(precisions), mOptions(options), mSummary(summary),
          mData(data), mLowType(options.target == AutocastOptions::Target::kFp16 ? kFloat16 : kBfloat16)
    {
    }

    void run()
    {
        decideTensorTypes();
        if (!anythingToDo())
        {
            return;
        }
        mSummary.changed = true;
        renameLowGraphOutputs();
        rewireReaders();
        convertConstantsAndNodes();
        retypeValueInfos();
        rebuildNodeList();
    }

private:
    //! The type each reader slot needs.
    //! base, or base_1, base_2, ... when a tensor of the model or an earlier new one has the name (a second autocast of
    //! an autocast model meets the names of the first).
    std::string freshName(const std::string& base)
    {
        std::string name = base;
        for (int k = 1; mFacts.id(name) != GraphFacts::kNone || mNewNames.count(name) != 0; ++k)
        {
            name = base + "_" + std::to_string(k);
        }
        mNewNames.insert(name);
        return name;
    }

    //! The type a reader slot needs, 0 when any will do (a Cast's input).
    int wanted(const Slot& slot) const
    {
        const onnx::NodeProto& node = mGraph.node(static_cast<int>(slot.node));
        if (slotIsFp32Only(node, slot.input))
        {
            return kFloat;
        }
        if (node.op_type() == "Cast" && isStandardDomain(node.domain()))
        {
            return 0;
        }
        return mPrecisions.precision(slot.node) == Precision::kLow ? mLowType : kFloat;
    }

    //! The type of each float tensor as written: its producer's precision; a graph input's (low with castIo); a
    //! constant's: low when every reader wants low, else FP32 (with a low copy for low readers).
    void decideTensorTypes()
    {
        mWritten.assign(mFacts.names.size(), 0);
        for (std::uint32_t id = 0; id < mFacts.names.size(); ++id)
        {
            if (mFacts.types[id] != kFloat)
            {
                continue;
            }
            const std::string& name = mFacts.names[id];
            int written = kFloat;
            if ((mFacts.flags[id] & GraphFacts::kGraphInput) != 0)
            {
                written = mOptions.castIo ? mLowType : kFloat;
                if (written == mLowType && (mFacts.flags[id] & GraphFacts::kSubgraphRead) != 0)
                {
                    throw InputError(SourceLocation{mData.modelPath},
                                     "--autocast-io: graph input '" + printable(name, 256) +
                                         "' is read by a subgraph (an If, Loop or Scan body), which autocast does not "
                                         "convert: run --autocast without --autocast-io");
                }
            }
            else if (const std::uint32_t producer = mFacts.producers[id]; producer != GraphFacts::kNone)
            {
                const onnx::NodeProto& node = mGraph.node(static_cast<int>(producer));
                const bool constant = node.op_type() == "Constant" && isStandardDomain(node.domain());
                written = constant                                             ? constantType(id)
                          : mPrecisions.precision(producer) == Precision::kLow ? mLowType
                                                                               : kFloat;
            }
            else if (onnx::TensorProto* initializer = mFacts.initializers[id])
            {
                written = constantType(id);
                if (written == mLowType && isExternal(*initializer))
                {
                    loadExternalData(*initializer, name);
                }
                if (written == mLowType)
                {
                    checkFloatValues(*initializer, name);
                }
            }
            mWritten[id] = written;
        }
    }

    //! An external tensor to convert is read from its data file, checked first (checkExternalData: inside the
    //! model's folder, a regular file, offset and length numbers that fit the file and the tensor's size), and
    //! written inline in the target type; the other external tensors keep their data file.
    void loadExternalData(onnx::TensorProto& tensor, const std::string& name)
    {
        ExternalDataEntries entries;
        entries.tensor = name;
        entries.dataType = tensor.data_type();
        entries.dims.assign(tensor.dims().begin(), tensor.dims().end());
        for (const auto& entry : tensor.external_data())
        {
            if (entry.key() == "location")
            {
                entries.location = entry.value();
            }
            else if (entry.key() == "offset")
            {
                entries.offset = entry.value();
            }
            else if (entry.key() == "length")
            {
                entries.length = entry.value();
            }
        }
        const bool own = !mData.ownLocation.empty() && entries.location == mData.ownLocation;
        const std::filesystem::path folder =
            own ? std::filesystem::path(mData.ownFolder) : std::filesystem::path(mData.modelPath).parent_path();
        const CheckedExternalData checked =
            checkExternalData(mData.modelPath, folder.empty() ? std::filesystem::path(".") : folder, entries);
        tensor.set_raw_data(readExternalData(checked, name));
        tensor.clear_external_data();
        tensor.clear_data_location();
        ++mSummary.externalInlined;
    }

    //! Refuses a FLOAT tensor whose data does not hold the values its dims ask for: converted, it would be written
    //! short.
    void checkFloatValues(const onnx::TensorProto& tensor, const std::string& name) const
    {
        if (const std::string why = floatValuesMismatch(tensor); !why.empty())
        {
            throw InputError(SourceLocation{mData.modelPath}, "--autocast: float tensor '" + printable(name, 256) +
                                                                  "' " + why + ": it cannot be converted");
        }
    }

    int constantType(std::uint32_t id) const
    {
        const std::span<const Slot> readers = mFacts.readers(id);
        if (readers.empty() || (mFacts.flags[id] & GraphFacts::kSubgraphRead) != 0)
        {
            return kFloat; // a subgraph reads it in FP32 (a low copy serves the converted readers)
        }
        const bool noneFp32 =
            std::none_of(readers.begin(), readers.end(), [&](const Slot& slot) { return wanted(slot) == kFloat; });
        const bool anyLow =
            std::any_of(readers.begin(), readers.end(), [&](const Slot& slot) { return wanted(slot) == mLowType; });
        return noneFp32 && anyLow && (mFacts.flags[id] & GraphFacts::kGraphOutput) == 0 ? mLowType : kFloat;
    }

    //! The type a float tensor is written in (0: not a float tensor).
    int writtenType(const std::string& tensor) const
    {
        const std::uint32_t id = mFacts.id(tensor);
        return id == GraphFacts::kNone ? 0 : mWritten[id];
    }

    //! Whether the model changes: a FLOAT tensor becomes the target type, or a reader wants the target type of a
    //! tensor that stays FP32 (a Cast). A model autocast already converted has neither.
    bool anythingToDo() const
    {
        for (std::uint32_t id = 0; id < mWritten.size(); ++id)
        {
            if (mWritten[id] == mLowType)
            {
                return true;
            }
            if (mWritten[id] == kFloat &&
                std::ranges::any_of(mFacts.readers(id), [&](const Slot& slot) { return wanted(slot) == mLowType; }))
            {
                return true;
            }
        }
        return false;
    }

    std::string typeSuffix(int type) const { return type == kFloat ? "fp32" : autocastTargetName(mOptions.target); }

    //! A float graph output written in the low type while the output keeps FP32 (or the reverse): the producer writes
    //! "<name>/autocast_<type>" and a Cast after it writes the output's name.
    void renameLowGraphOutputs()
    {
        for (const auto& output : mGraph.output())
        {
            const std::string& name = output.name();
            const int written = writtenType(name);
            const auto producer = mFacts.producerOf(name);
            if (written == 0 || !producer)
            {
                continue;
            }
            const int want = mOptions.castIo ? mLowType : kFloat;
            if (written == want)
            {
                continue;
            }
            const std::string renamed = freshName(name + "/autocast_" + typeSuffix(written));
            onnx::NodeProto& node = *mGraph.mutable_node(static_cast<int>(*producer));
            for (auto& out : *node.mutable_output())
            {
                out = out == name ? renamed : out;
            }
            mReadName[name] = renamed;
            addCast(renamed, name, want, *producer);
        }
    }

    const std::string& readName(const std::string& tensor) const
    {
        const auto found = mReadName.find(tensor);
        return found == mReadName.end() ? tensor : found->second;
    }

    void addCast(const std::string& from, const std::string& to, int type, std::optional<std::size_t> after)
    {
        onnx::NodeProto cast;
        cast.set_op_type("Cast");
        cast.set_name("qdq_doctor/autocast/" + to);
        cast.add_input(from);
        cast.add_output(to);
        auto* attribute = cast.add_attribute();
        attribute->set_name("to");
        attribute->set_type(onnx::AttributeProto::INT);
        attribute->set_i(type);
        (after ? mAfter[*after] : mAtStart).push_back(std::move(cast));
        ++mSummary.castsInserted;
    }

    //! Each reader slot that wants another type than the tensor is written in reads a Cast (one per tensor and type,
    //! right after the producer) or, for a constant, a copy in that type.
    void rewireReaders()
    {
        std::map<std::pair<std::uint32_t, int>, std::string> made;
        for (std::uint32_t id = 0; id < mFacts.names.size(); ++id)
        {
            const int written = mWritten[id];
            if (written == 0)
            {
                continue;
            }
            const std::string& tensor = mFacts.names[id];
            for (const Slot& slot : mFacts.readers(id))
            {
                const int want = wanted(slot);
                std::string source = readName(tensor);
                if (want != 0 && want != written)
                {
                    auto [entry, inserted] = made.try_emplace({id, want});
                    if (inserted)
                    {
                        entry->second = freshName(tensor + "/autocast_" + typeSuffix(want));
                        makeOtherType(tensor, source, entry->second, want);
                    }
                    source = entry->second;
                }
                if (source != tensor)
                {
                    mGraph.mutable_node(static_cast<int>(slot.node))->set_input(slot.input, source);
                }
            }
        }
    }

    void makeOtherType(const std::string& tensor, const std::string& source, const std::string& name, int type)
    {
        const onnx::TensorProto* initializer = mFacts.initializerOf(tensor);
        if (initializer != nullptr && !isExternal(*initializer) && type != kFloat)
        {
            onnx::TensorProto copy = *initializer;
            copy.set_name(name);
            convertTensor(copy, mLowType);
            mNewInitializers.push_back(std::move(copy));
            ++mSummary.constantCopies;
            return;
        }
        addCast(source, name, type, mFacts.producerOf(tensor));
    }

    void countUnderflow(const onnx::TensorProto& tensor)
    {
        if (mLowType != kFloat16)
        {
            return;
        }
        for (float value : floatValues(tensor))
        {
            mSummary.underflowValues += value != 0.0f && std::fabs(value) < kFp16MinSubnormal / 2 ? 1 : 0;
        }
    }

    void convertConstantsAndNodes()
    {
        for (std::uint32_t id = 0; id < mFacts.names.size(); ++id)
        {
            onnx::TensorProto* initializer = mFacts.initializers[id];
            if (initializer != nullptr && mWritten[id] == mLowType)
            {
                countUnderflow(*initializer);
                const auto [before, after] = convertTensor(*initializer, mLowType);
                mSummary.bytesBefore += before;
                mSummary.bytesAfter += after;
                ++mSummary.initializersConverted;
            }
        }
        for (int i = 0; i < mGraph.node_size(); ++i)
        {
            onnx::NodeProto& node = *mGraph.mutable_node(i);
            const auto index = static_cast<std::size_t>(i);
            if (!isStandardDomain(node.domain()))
            {
                continue;
            }
            if (node.op_type() == "Constant")
            {
                if (node.output_size() == 1 && writtenType(node.output(0)) == mLowType)
                {
                    lowerConstantNode(node);
                }
            }
            else if (mPrecisions.precision(index) == Precision::kLow)
            {
                // Counted when a FLOAT output of it becomes the target type (a Resize of an FP16 model reads FP32
                // scales and is a float node, but nothing of it changes).
                mSummary.nodesLowered +=
                    std::any_of(node.output().begin(), node.output().end(),
                                [&](const std::string& out) { return writtenType(out) == mLowType; })
                        ? 1
                        : 0;
                lowerTypeAttributes(node);
            }
        }
    }

    void lowerConstantNode(onnx::NodeProto& node)
    {
        onnx::TensorProto tensor;
        for (const auto& attribute : node.attribute())
        {
            if (attribute.name() == "value")
            {
                tensor = attribute.t();
            }
            else if (attribute.name() == "value_float")
            {
                tensor.set_data_type(kFloat);
                tensor.add_float_data(attribute.f());
            }
            else if (attribute.name() == "value_floats")
            {
                tensor.set_data_type(kFloat);
                tensor.add_dims(attribute.floats_size());
                for (float value : attribute.floats())
                {
                    tensor.add_float_data(value);
                }
            }
        }
        const std::string name = node.name().empty() ? node.output(0) : node.name();
        if (isExternal(tensor))
        {
            loadExternalData(tensor, name);
        }
        checkFloatValues(tensor, name);
        countUnderflow(tensor);
        convertTensor(tensor, mLowType);
        node.clear_attribute();
        auto* value = node.add_attribute();
        value->set_name("value");
        value->set_type(onnx::AttributeProto::TENSOR);
        *value->mutable_t() = std::move(tensor);
        ++mSummary.initializersConverted;
    }

    //! Cast(to=FLOAT) becomes Cast(to=low); ConstantOfShape's value takes the low type.
    void lowerTypeAttributes(onnx::NodeProto& node)
    {
        if (node.op_type() == "Cast")
        {
            for (auto& attribute : *node.mutable_attribute())
            {
                if (attribute.name() == "to" && attribute.i() == kFloat)
                {
                    attribute.set_i(mLowType);
                }
            }
        }
        else if (node.op_type() == "ConstantOfShape")
        {
            bool found = false;
            for (auto& attribute : *node.mutable_attribute())
            {
                if (attribute.name() == "value" && attribute.t().data_type() == kFloat)
                {
                    const std::string name = node.name().empty() ? node.output(0) : node.name();
                    if (isExternal(attribute.t()))
                    {
                        loadExternalData(*attribute.mutable_t(), name);
                    }
                    checkFloatValues(attribute.t(), name);
                    convertTensor(*attribute.mutable_t(), mLowType);
                    found = true;
                }
            }
            if (!found && findAttribute(node, "value") == nullptr)
            {
                auto* value = node.add_attribute();
                value->set_name("value");
                value->set_type(onnx::AttributeProto::TENSOR);
                value->mutable_t()->set_data_type(mLowType);
                value->mutable_t()->add_dims(1);
                value->mutable_t()->set_raw_data(std::string(2, '\0'));
            }
        }
    }

    void retypeValueInfos()
    {
        const auto retype = [&](onnx::ValueInfoProto& info, bool boundary)
        {
            auto* tensorType = info.mutable_type()->mutable_tensor_type();
            if (tensorType->elem_type() != kFloat)
            {
                return;
            }
            if (boundary)
            {
                tensorType->set_elem_type(mOptions.castIo ? mLowType : kFloat);
                return;
            }
            if (const int written = writtenType(info.name()); written != 0)
            {
                tensorType->set_elem_type(written);
            }
        };
        for (auto& info : *mGraph.mutable_value_info())
        {
            retype(info, false);
        }
        for (auto& input : *mGraph.mutable_input())
        {
            retype(input, mFacts.initializerOf(input.name()) == nullptr);
        }
        for (auto& output : *mGraph.mutable_output())
        {
            retype(output, true);
        }
    }

    //! The nodes in order with the Casts placed: those of graph inputs first, each other right after its producer.
    void rebuildNodeList()
    {
        if (mAtStart.empty() && mAfter.empty() && mNewInitializers.empty())
        {
            return;
        }
        // The Casts are appended (on the graph's arena) and the list is then put in order by swapping element
        // pointers: no node of the model is copied.
        auto& nodes = *mGraph.mutable_node();
        const int original = nodes.size();
        std::vector<int> order;
        order.reserve(static_cast<std::size_t>(original) + mSummary.castsInserted);
        const auto append = [&](onnx::NodeProto& cast)
        {
            order.push_back(nodes.size());
            *nodes.Add() = std::move(cast);
        };
        for (auto& cast : mAtStart)
        {
            append(cast);
        }
        for (int i = 0; i < original; ++i)
        {
            order.push_back(i);
            if (const auto found = mAfter.find(static_cast<std::size_t>(i)); found != mAfter.end())
            {
                for (auto& cast : found->second)
                {
                    append(cast);
                }
            }
        }
        // order[k]: the element that goes to position k. where/at track the permutation as elements are swapped.
        std::vector<int> where(order.size());
        std::vector<int> at(order.size());
        for (std::size_t k = 0; k < order.size(); ++k)
        {
            where[k] = static_cast<int>(k);
            at[k] = static_cast<int>(k);
        }
        for (std::size_t k = 0; k < order.size(); ++k)
        {
            const int element = order[k];
            const int position = where[static_cast<std::size_t>(element)];
            if (position == static_cast<int>(k))
            {
                continue;
            }
            nodes.SwapElements(static_cast<int>(k), position);
            const int displaced = at[k];
            at[static_cast<std::size_t>(position)] = displaced;
            where[static_cast<std::size_t>(displaced)] = position;
            at[k] = element;
            where[static_cast<std::size_t>(element)] = static_cast<int>(k);
        }
        for (auto& initializer : mNewInitializers)
        {
            *mGraph.add_initializer() = std::move(initializer);
        }
    }

    onnx::GraphProto& mGraph;
    GraphFacts& mFacts;
    const NodePrecisions& mPrecisions;
    const AutocastOptions& mOptions;
    AutocastSummary& mSummary;
    const AutocastDataSource& mData;
    int mLowType;
    std::vector<int> mWritten; //!< tensor id -> the type it is written in (0: not a float tensor)
    std::unordered_map<std::string, std::string> mReadName;
    std::vector<onnx::NodeProto> mAtStart;
    std::map<std::size_t, std::vector<onnx::NodeProto>> mAfter;
    std::vector<onnx::TensorProto> mNewInitializers;
    std::set<std::string> mNewNames; //!< tensors this rewrite named (freshName)
};

[[noreturn]] void failPath(const std::string& path, const std::string& message)
{
    throw InputError(SourceLocation{path}, message);
}

//! The Concats ONNX Runtime's QDQ fusion turns into QLinearConcat (every input written by a DequantizeLinear, every
//! reader a QuantizeLinear) whose Q/DQ scales are FP16 or BF16 initializers in the converted model: ONNX Runtime 1.30
//! refuses such a model with its default graph optimizations ("Type 'tensor(float16)' of input parameter ... of
//! operator (QLinearConcat) ... is invalid", measured on the zoo's yolo-like and googlenet at opset 19,
//! docs/fix.md#autocast); the model is valid ONNX.
std::vector<std::string> lowScaleQuantizedConcats(const onnx::GraphProto& graph)
{
    std::unordered_map<std::string, int> initializerTypes;
    for (const auto& tensor : graph.initializer())
    {
        initializerTypes.emplace(tensor.name(), tensor.data_type());
    }
    std::unordered_map<std::string, const onnx::NodeProto*> producers;
    std::unordered_map<std::string, std::vector<const onnx::NodeProto*>> readers;
    for (const auto& node : graph.node())
    {
        for (const auto& output : node.output())
        {
            producers.emplace(output, &node);
        }
        for (const auto& input : node.input())
        {
            readers[input].push_back(&node);
        }
    }
    const auto lowScale = [&](const onnx::NodeProto& node)
    {
        const auto type = node.input_size() > 1 ? initializerTypes.find(node.input(1)) : initializerTypes.end();
        return type != initializerTypes.end() &&
               (type->second == onnx::TensorProto::FLOAT16 || type->second == onnx::TensorProto::BFLOAT16);
    };
    std::vector<std::string> concats;
    for (const auto& node : graph.node())
    {
        if (node.op_type() != "Concat" || node.input_size() == 0 || node.output_size() != 1)
        {
            continue;
        }
        const bool dequantizedInputs = std::all_of(node.input().begin(), node.input().end(),
                                                   [&](const std::string& input)
                                                   {
                                                       const auto producer = producers.find(input);
                                                       return producer != producers.end() &&
                                                              producer->second->op_type() == "DequantizeLinear" &&
                                                              lowScale(*producer->second);
                                                   });
        const auto& read = readers[node.output(0)];
        const bool quantizedOutput = !read.empty() && std::all_of(read.begin(), read.end(),
                                                                  [](const onnx::NodeProto* reader)
                                                                  { return reader->op_type() == "QuantizeLinear"; });
        if (dequantizedInputs && quantizedOutput)
        {
            concats.push_back(node.name().empty() ? node.output(0) : node.name());
        }
    }
    return concats;
}

} // namespace

std::string autocastTargetName(AutocastOptions::Target target)
{
    switch (target)
    {
    case AutocastOptions::Target::kFp16:
        return "fp16";
    case AutocastOptions::Target::kBf16:
        return "bf16";
    case AutocastOptions::Target::kNone:
        break;
    }
    return "";
}

AutocastSummary autocastModel(onnx::ModelProto& model, const AutocastOptions& options, const AutocastDataSource& data)
{
    AutocastSummary summary;
    summary.target = autocastTargetName(options.target);
    summary.castIo = options.castIo;
    summary.opset = defaultOpset(model);
    if (!options.enabled())
    {
        return summary;
    }
    GraphFacts facts = gatherFacts(*model.mutable_graph());
    const NodePrecisions precisions(model.graph(), facts, options, summary.opset);
    summary.qdqScalesLowered = summary.opset >= kFirstOpsetWithLowScales;
    summary.qdqKeptFp32 = precisions.qdqKeptFp32();
    for (const auto& reason : precisions.reasons())
    {
        summary.kept.push_back({reason.reason, reason.why, {}});
    }
    for (int i = 0; i < model.graph().node_size(); ++i)
    {
        if (const int reason = precisions.reasonIndex(static_cast<std::size_t>(i)); reason >= 0)
        {
            const onnx::NodeProto& node = model.graph().node(i);
            summary.kept[static_cast<std::size_t>(reason)].nodes.push_back(node.name().empty() ? node.output(0)
                                                                                               : node.name());
        }
    }
    summary.kept.erase(std::remove_if(summary.kept.begin(), summary.kept.end(),
                                      [](const AutocastKeptGroup& group) { return group.nodes.empty(); }),
                       summary.kept.end());
    Rewriter(model, facts, precisions, options, summary, data).run();
    if (summary.opset < kFirstOpsetWithLowScales && summary.qdqKeptFp32 > 0)
    {
        summary.notes.push_back(
            "opset " + std::to_string(summary.opset) +
            " < 19: the Q/DQ scales stay FP32, the ops that read a DQ and their fused epilogues stay "
            "FP32, and Casts follow them; exported at opset 19 or later the scales become " +
            summary.target + " and these Casts go (Model-Optimizer PR #1289)");
    }
    if (options.target == AutocastOptions::Target::kBf16 && summary.opset < kFirstOpsetWithBf16Ops)
    {
        summary.notes.push_back("bf16: most ONNX ops list bfloat16 from version 22 (Model-Optimizer's AutoCast exports "
                                "BF16 at opset 22, PR #809); at opset " +
                                std::to_string(summary.opset) +
                                " ONNX Runtime and ONNX's checker may refuse the BF16 ops (a guess for TensorRT: its "
                                "parser reads the tensor types)");
    }
    if (const auto concats = lowScaleQuantizedConcats(model.graph()); !concats.empty())
    {
        summary.notes.push_back(
            std::to_string(concats.size()) + " quantized Concat(s) (" + concats.front() +
            (concats.size() > 1 ? ", ..." : "") + ") now have " + summary.target +
            " Q/DQ scales: ONNX Runtime 1.30 with its default graph optimizations refuses to load such a model (its "
            "QLinearConcat fusion takes FP32 scales only); the model is valid ONNX and runs in ONNX Runtime with "
            "graph_optimization_level ORT_ENABLE_BASIC or ORT_DISABLE_ALL");
    }
    if (summary.underflowValues > 0)
    {
        summary.notes.push_back(
            std::to_string(summary.underflowValues) +
            " non-zero initializer values are below half of FP16's smallest subnormal (2^-25) and became 0 "
            "(TensorRT reports the same for weights it converts, NVIDIA/TensorRT #3101)");
    }
    return summary;
}

AutocastSummary autocastModelFile(const std::string& path, const AutocastOptions& options, const Limits& limits,
                                  const AutocastDataSource& data, std::shared_ptr<void>* parsedModel)
{
    (void)limits; // the file was written by fix from a model that passed the limits
    // On an arena: freed in one piece (the check copy of model_writer.cpp does the same, for the same reason), here or
    // by the caller (parsedModel).
    auto arena = std::make_shared<google::protobuf::Arena>();
    struct HandOver
    {
        std::shared_ptr<google::protobuf::Arena>& arena;
        std::shared_ptr<void>* to;
        ~HandOver()
        {
            if (to != nullptr)
            {
                *to = std::move(arena);
            }
        }
    } handOver{arena, parsedModel};
    onnx::ModelProto& model = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(arena.get());
    {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
        {
            failPath(path, std::string("cannot open: ") + std::strerror(errno));
        }
        google::protobuf::io::FileInputStream stream(fd);
        stream.SetCloseOnDelete(true);
        if (!model.ParseFromZeroCopyStream(&stream))
        {
            failPath(path, "cannot be parsed as an ONNX ModelProto");
        }
    }
    AutocastSummary summary = autocastModel(model, options, data);
    if (!summary.changed)
    {
        return summary;
    }
    const std::string temporary = path + ".autocast-tmp";
    {
        const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
        {
            failPath(temporary, std::string("cannot be created: ") + std::strerror(errno));
        }
        google::protobuf::io::FileOutputStream stream(fd);
        stream.SetCloseOnDelete(true);
        const bool written = model.SerializeToZeroCopyStream(&stream) && stream.Flush();
        if (!written)
        {
            std::remove(temporary.c_str());
            failPath(temporary, "cannot be written");
        }
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error)
    {
        std::remove(temporary.c_str());
        failPath(path, "cannot be replaced: " + error.message());
    }
    return summary;
}

} // namespace qdq
