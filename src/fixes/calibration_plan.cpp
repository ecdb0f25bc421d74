// fix --calibration-cache: the Q/DQ of an explicitly quantized build placed in an FP32 model, with the scales of an
// implicit build's calibration cache (docs/fix.md#calibration-cache).
//
// Where the pairs go follows TensorRT's fusion rules as the simulator's passes apply them
// (../shared/docs/tensorrt-qdq-reference.md sections 1.3-1.8), not which tensors the cache names (an implicit build
// stores a scale for nearly every tensor):
//  - a weighted op (Conv, ConvTranspose, Gemm, MatMul with a constant weight) runs INT8 when its input and its weight
//    are dequantized: a pair on the input with the cache's scale, a pair on the weight with per-channel scales
//    max |w| / 127 (the TensorRT 8.x developer guide, "Introduction to Quantization": a weight's scale is
//    max(|min|, |max|) / 127; per-channel on the output-channel axis, reference section 1.5);
//  - a residual Add that TensorRT fuses into the conv writing one of its inputs takes the other input quantized
//    (section 1.8 "ElementWise fusion": the real -qat-residual engines of ../shared/realdata run every Conv+Add INT8);
//  - a MaxPool after Conv -> activation is left for the Conv-Act-Pool fusion: no pair between them (report c,
//    section 1.8 "Conv-Act-Pool"); other pools run INT8 with their input quantized when what they write is;
//  - Concat inputs share one scale, the largest of its inputs' and output's, when those lie within
//    patterns::kMostUnifiedScaleRatio of each other (section 3 "Concat"; report e);
//  - nothing inside a conv's epilogue: a conv's output read by its activation, BatchNormalization, a constant bias
//    or scale (Add, Mul: BatchNormalization exported unfolded) or the fused Add gets no pair;
//  - with the implicit engine's layer list or log given, a weighted op whose layer ran float there stays float.
// The fixed model is then diagnosed and fixed again by the rules like any other (fix's passes): a placement the rules
// disagree with is corrected there, and the report shows it.
#include "qdq/fix.h"
#include "qdq/patterns.h"

#include "../simulation/op_classes.h"
#include "fix_planner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

namespace qdq
{
namespace
{

constexpr const char* kRule = "calibration-cache";
//! Per-channel Q/DQ (the axis attribute) needs opset 13.
constexpr std::int64_t kPerChannelOpset = 13;

using fix_planning::formatScale;

bool isInternalName(const std::string& tensor)
{
    return tensor.find("(Unnamed Layer") != std::string::npos;
}

//! One pair to insert: the tensor, who reads it through the pair, and its scale.
struct PairRequest
{
    std::string tensor;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> reads; //!< (node, input slot)
    std::vector<float> scales;                                  //!< one: per tensor; more: per channel on axis
    std::int64_t axis = 0;
    bool weight = false;
    std::string why;         //!< the finding's text: what the pair lets TensorRT do
    std::string scaleWhy;    //!< where the scale came from
    std::string cacheTensor; //!< the cache entry it took (activations)
    std::string key;
};

class CalibrationPlanner
{
public:
    CalibrationPlanner(const OnnxGraph& graph, const CalibrationCache& cache, CalibrationFixSummary& summary,
                       const std::map<std::string, std::string>& refused, const ImplicitEngineRuns* implicit)
        : mGraph(graph), mCache(cache), mSummary(summary), mRefused(refused), mImplicit(implicit)
    {
    }

    FixPlan run()
    {
        describeTheCache();
        refuseAQuantizedModel();
        raiseTheOpset();
        planWeightedOps();
        planResidualAdds();
        planConcats();
        planPools();
        emitPairs();
        return std::move(mPlan);
    }

private:
    // ----- the cache ----------------------------------------------------------------------------------------------
    void describeTheCache()
    {
        mSummary.cache = mCache.sourcePath;
        mSummary.header = mCache.header;
        mSummary.version = mCache.version;
        mSummary.algorithm = mCache.algorithm;
        mSummary.entries = mCache.scales.size();
        for (const CalibrationScale& entry : mCache.scales)
        {
            if (mGraph.tensors.find(TensorKey(entry.tensor)) != OnnxGraph::kNone)
            {
                continue;
            }
            (isInternalName(entry.tensor) ? mSummary.internalNames : mSummary.namesNotInModel).push_back(entry.tensor);
        }
    }

    void refuseAQuantizedModel() const
    {
        const std::size_t qdq = mGraph.quantizeCount() + mGraph.dequantizeCount();
        if (qdq > 0)
        {
            throw InputError(SourceLocation{mGraph.sourcePath},
                             "already holds " + std::to_string(qdq) +
                                 " QuantizeLinear/DequantizeLinear nodes: --calibration-cache quantizes an FP32 "
                                 "model; run fix without it to correct this model's Q/DQ");
        }
    }

    //! The scale the cache gives tensor, or nullptr. A tensor that only a shape op (Reshape, Flatten, Squeeze,
    //! Unsqueeze, Transpose) made holds its input's values: without an entry of its own it takes its input's. An
    //! implicit build stores none for such a tensor when the shape op left the network (the TensorRT 8.4.1 cache of
    //! ../shared/calibration/g5-cnn-depthwise-trt841 has re_lu_10_1/Relu:0 and not the Reshape of it,
    //! conv2d_13_1/BiasAdd__13:0, that its conv reads).
    const CalibrationScale* scaleOf(const std::string& tensor) const
    {
        std::string current = tensor;
        for (int hops = 0; hops < 8; ++hops)
        {
            if (const CalibrationScale* scale = mCache.find(current))
            {
                return scale;
            }
            const std::uint32_t id = mGraph.tensors.find(TensorKey(current));
            const OnnxNode* producer = id == OnnxGraph::kNone ? nullptr : mGraph.producerOf(id);
            if (producer == nullptr || !simulation::isShuffleOp(producer->opType) || producer->inputs.empty())
            {
                return nullptr;
            }
            current = std::string(producer->inputs[0]);
        }
        return nullptr;
    }

    // ----- the opset ----------------------------------------------------------------------------------------------
    std::int64_t defaultOpset() const
    {
        for (const auto& [domain, version] : mGraph.opsets)
        {
            if (domain.empty() || domain == "ai.onnx")
            {
                return version;
            }
        }
        return 0;
    }

    //! Opsets 7 to 12 are raised to 13 (per-channel Q/DQ needs its axis attribute). Squeeze and Unsqueeze, whose
    //! axes became an input in 13, are rewritten; the other ops whose form changed (refuseChangedForms; Softmax,
    //! LogSoftmax and Hardmax, whose axis no longer flattens) refuse the raise unless their form reads the same in
    //! 13. The ONNX checker and shape inference then run on what is written, as on every fix.
    void raiseTheOpset()
    {
        mSummary.opsetFrom = defaultOpset();
        mSummary.opsetTo = std::max(mSummary.opsetFrom, kPerChannelOpset);
        if (mSummary.opsetFrom >= kPerChannelOpset)
        {
            return;
        }
        if (mSummary.opsetFrom < 7)
        {
            refuseTheRaise("its default-domain opset is " + std::to_string(mSummary.opsetFrom) +
                           "; convert it to opset 13 first (onnx.version_converter)");
        }
        for (const OnnxNode& node : mGraph.nodes)
        {
            if (node.isCustomDomain())
            {
                continue;
            }
            rewriteForOpset13(node);
        }
        mPlan.modelEdits.defaultOpset = kPerChannelOpset;
    }

    [[noreturn]] void refuseTheRaise(const std::string& why) const
    {
        throw InputError(SourceLocation{mGraph.sourcePath}, "cannot take per-channel Q/DQ: " + why);
    }

    //! The ops whose form changed between opset 7 and 13 in a way the raise does not rewrite (the ONNX operator
    //! changelog): an attribute that became an input (Split's split, ReduceSum's axes, Dropout's ratio, Pad's pads
    //! and value, Clip's min and max, Slice's starts, ends and axes, TopK's k), an attribute removed
    //! (BatchNormalization's spatial), new input slots (Resize before 11), ops gone (Upsample, Scatter).
    void refuseChangedForms(const OnnxNode& node) const
    {
        const auto has = [&](std::string_view attribute) { return node.attribute(attribute) != nullptr; };
        const bool attributeBecameInput =
            (node.opType == "Split" && has("split")) || (node.opType == "ReduceSum" && has("axes")) ||
            (node.opType == "Dropout" && has("ratio")) || (node.opType == "Pad" && has("pads")) ||
            (node.opType == "Clip" && (has("min") || has("max"))) || (node.opType == "Slice" && has("starts")) ||
            (node.opType == "TopK" && has("k"));
        if (attributeBecameInput || (node.opType == "BatchNormalization" && has("spatial")))
        {
            refuseTheRaise(node.opType + " node " + node.name +
                           " has an attribute that opset 13 no longer takes; "
                           "convert the model to opset 13 first");
        }
        if ((node.opType == "Resize" && mSummary.opsetFrom < 11) || node.opType == "Upsample" ||
            node.opType == "Scatter")
        {
            refuseTheRaise(node.opType + " node " + node.name +
                           " reads otherwise in opset 13; convert the model "
                           "to opset 13 first");
        }
    }

    void rewriteForOpset13(const OnnxNode& node)
    {
        const auto has = [&](std::string_view attribute) { return node.attribute(attribute) != nullptr; };
        refuseChangedForms(node);
        for (const OnnxAttribute& attribute : node.attributes)
        {
            if (attribute.kind == OnnxAttribute::Kind::kGraph)
            {
                refuseTheRaise("node " + node.name + " has a subgraph; convert the model to opset 13 first");
            }
        }
        if (simulation::isOneOfOps(node.opType, {"Softmax", "LogSoftmax", "Hardmax"}))
        {
            const auto axis = node.intAttribute("axis");
            if (!axis || *axis != -1)
            {
                refuseTheRaise(node.opType + " node " + node.name +
                               " normalizes over a flattened axis in opset 12 and before, over one axis from 13; "
                               "convert the model to opset 13 first");
            }
        }
        if ((node.opType == "Squeeze" || node.opType == "Unsqueeze") && has("axes") && !node.inputs.empty())
        {
            rewriteAxesAsInput(node);
        }
    }

    //! Squeeze/Unsqueeze(x) with attribute axes becomes Squeeze/Unsqueeze(x, axes) with an INT64 initializer.
    void rewriteAxesAsInput(const OnnxNode& node)
    {
        const std::uint32_t index = static_cast<std::uint32_t>(node.index);
        NewInitializer axes;
        axes.name = freshName("qdq_doctor/opset13/" + node.name + "/axes");
        axes.dataType = 7;
        const std::vector<std::int64_t>& values = node.attribute("axes")->ints;
        axes.dims = {static_cast<std::int64_t>(values.size())};
        axes.rawData.resize(values.size() * sizeof(std::int64_t));
        std::memcpy(axes.rawData.data(), values.data(), axes.rawData.size()); // little-endian, as ONNX stores it
        NewNode rewritten;
        rewritten.name = node.name;
        rewritten.opType = node.opType;
        rewritten.inputs = {std::string(node.inputs[0]), axes.name};
        for (const auto& output : node.outputs)
        {
            rewritten.outputs.emplace_back(output);
        }
        mPlan.modelEdits.removeNodes.push_back(index);
        mPlan.modelEdits.insertNodes.push_back({index, std::move(rewritten)});
        mPlan.modelEdits.addInitializers.push_back(std::move(axes));
        mSummary.rewrittenForOpset.push_back(node.name + ": axes as an input");
    }

    std::string freshName(const std::string& base) { return fix_planning::freshModelName(mGraph, mUsedNames, base); }

    // ----- weighted ops -------------------------------------------------------------------------------------------
    //! The constant weight input of a weighted op, or -1.
    int weightSlot(const OnnxNode& node) const
    {
        if (simulation::isOneOfOps(node.opType, {"Conv", "ConvTranspose", "Gemm"}))
        {
            return node.inputs.size() > 1 && mGraph.isConstant(node.inputs[1]) ? 1 : -1;
        }
        if (node.opType == "MatMul" && node.inputs.size() == 2 && mGraph.isConstant(node.inputs[1]) &&
            !mGraph.isConstant(node.inputs[0]))
        {
            return 1;
        }
        return -1;
    }

    //! The axis of a weight's output channels, or nullopt for a per-tensor scale.
    std::optional<std::int64_t> channelAxis(const OnnxNode& node, const OnnxConstant& weight) const
    {
        if (node.opType == "Conv")
        {
            return 0;
        }
        if (node.opType == "ConvTranspose")
        {
            // Per tensor: which axis TensorRT's deconvolution kernels take per channel depends on the version (8.x
            // assumes axis 0 of [C_in, C_out / group, k...]); the reference (R04) recommends per tensor.
            return std::nullopt;
        }
        if (weight.dims.size() != 2)
        {
            return std::nullopt;
        }
        if (node.opType == "Gemm" && node.intAttribute("transB").value_or(0) != 0)
        {
            return 0;
        }
        return 1;
    }

    void keepFloat(const OnnxNode& node, std::string why) { mSummary.keptFloat.push_back({node.name, std::move(why)}); }

    void planWeightedOps()
    {
        for (const OnnxNode& node : mGraph.nodes)
        {
            const int slot = weightSlot(node);
            if (slot < 0 || node.isCustomDomain())
            {
                continue;
            }
            if (ranFloatInTheImplicitEngine(node))
            {
                continue;
            }
            const std::string input(node.inputs[0]);
            const CalibrationScale* scale = scaleOf(input);
            if (scale == nullptr)
            {
                keepFloat(node, "the cache has no scale for its input " + input + " (never invented)");
                continue;
            }
            const OnnxConstant* weight = mGraph.constant(node.inputs[slot]);
            std::optional<PairRequest> weightPair = weightRequest(node, static_cast<std::uint32_t>(slot), *weight);
            if (!weightPair)
            {
                continue;
            }
            requestActivation(input, {static_cast<std::uint32_t>(node.index), 0}, *scale,
                              node.opType + " " + node.name + " runs INT8: its input quantized");
            mPairs.push_back(std::move(*weightPair));
            mQuantizedOps.insert(static_cast<std::uint32_t>(node.index));
        }
        mSummary.quantizedOps = mQuantizedOps.size();
    }

    //! With the implicit engine given: a weighted op whose layer there ran float stays float (what ran INT8 is
    //! quantized; a node the engine's layers do not name is quantized as the cache allows).
    bool ranFloatInTheImplicitEngine(const OnnxNode& node)
    {
        if (mImplicit == nullptr)
        {
            return false;
        }
        const auto layer = mImplicit->layerOfNode.find(node.name);
        if (layer == mImplicit->layerOfNode.end() || mImplicit->quantizedNodes.count(node.name) != 0)
        {
            return false;
        }
        keepFloat(node, "its layer ran in float in the implicit engine (" + layer->second + ", " + mImplicit->source +
                            "): kept float, as that build chose");
        return true;
    }

    std::optional<PairRequest> weightRequest(const OnnxNode& node, std::uint32_t slot, const OnnxConstant& weight)
    {
        if (weight.dataType != OnnxDataType::kFloat)
        {
            keepFloat(node, "its weight " + weight.name + " is " + std::string(onnxDataTypeName(weight.dataType)) +
                                ", not FLOAT");
            return std::nullopt;
        }
        if (!weight.dataLoaded || static_cast<std::int64_t>(weight.values.size()) != weight.elementCount ||
            weight.elementCount == 0 || weight.dims.empty() ||
            std::any_of(weight.dims.begin(), weight.dims.end(), [](std::int64_t dim) { return dim <= 0; }))
        {
            keepFloat(node, "its weight " + weight.name +
                                " has no values in the model (graph-only, or its external data is missing): the "
                                "per-channel scales are computed from them");
            return std::nullopt;
        }
        if (std::any_of(weight.values.begin(), weight.values.end(), [](double value) { return !std::isfinite(value); }))
        {
            keepFloat(node, "its weight " + weight.name + " holds an infinite or NaN value: no scale covers it");
            return std::nullopt;
        }
        PairRequest pair;
        pair.tensor = weight.name;
        pair.reads = {{static_cast<std::uint32_t>(node.index), slot}};
        pair.weight = true;
        const std::optional<std::int64_t> axis = channelAxis(node, weight);
        pair.axis = axis.value_or(0);
        pair.scales = weightScales(weight, axis);
        pair.why = node.opType + " " + node.name + " runs INT8: its weight quantized";
        pair.scaleWhy = axis ? "per channel on axis " + std::to_string(*axis) + ", max |w| / 127 of each of " +
                                   std::to_string(pair.scales.size()) + " channels, from the weights"
                             : "per tensor, max |w| / 127, from the weights";
        return pair;
    }

    //! max |w| / 127 per channel of axis (or of the whole tensor); a channel of zeros takes 1 (every value is 0).
    static std::vector<float> weightScales(const OnnxConstant& weight, std::optional<std::int64_t> axis)
    {
        std::size_t channels = 1;
        std::size_t inner = static_cast<std::size_t>(weight.elementCount);
        std::size_t outer = 1;
        if (axis)
        {
            channels = static_cast<std::size_t>(weight.dims[static_cast<std::size_t>(*axis)]);
            inner = 1;
            for (std::size_t d = static_cast<std::size_t>(*axis) + 1; d < weight.dims.size(); ++d)
            {
                inner *= static_cast<std::size_t>(weight.dims[d]);
            }
            outer = static_cast<std::size_t>(weight.elementCount) / std::max<std::size_t>(1, channels * inner);
        }
        std::vector<double> amax(channels, 0.0);
        for (std::size_t o = 0; o < outer; ++o)
        {
            for (std::size_t c = 0; c < channels; ++c)
            {
                const std::size_t start = (o * channels + c) * inner;
                for (std::size_t i = 0; i < inner; ++i)
                {
                    amax[c] = std::max(amax[c], std::fabs(weight.values[start + i]));
                }
            }
        }
        std::vector<float> scales(channels);
        for (std::size_t c = 0; c < channels; ++c)
        {
            scales[c] = amax[c] > 0.0 ? static_cast<float>(amax[c] / 127.0) : 1.0f;
        }
        return scales;
    }

    //! A pair on an activation read at (node, slot), with the cache's scale (or a Concat's shared one).
    void requestActivation(const std::string& tensor, std::pair<std::uint32_t, std::uint32_t> read,
                           const CalibrationScale& scale, const std::string& why)
    {
        PairRequest pair;
        pair.tensor = tensor;
        pair.reads = {read};
        pair.scales = {scale.scale};
        pair.cacheTensor = scale.tensor;
        pair.scaleWhy = "from the cache, " + mCache.sourcePath + ":" + std::to_string(scale.line) +
                        (scale.tensor == tensor ? std::string() : " (of " + scale.tensor + ", which it only reshapes)");
        pair.why = why;
        mPairs.push_back(std::move(pair));
        mQuantizedTensors.insert(tensor);
    }

    // ----- residual Adds ------------------------------------------------------------------------------------------
    //! Whether node is a linear epilogue TensorRT folds into the conv before it: a BatchNormalization, or an Add,
    //! Sub, Mul or Div with a constant operand (a bias; Keras' unfolded BatchNormalization as Mul and Add, the
    //! depthwise CNN of ../shared/calibration). Its data input is returned through dataInput.
    bool isLinearEpilogue(const OnnxNode& node, std::string& dataInput) const
    {
        if (node.opType == "BatchNormalization" && !node.inputs.empty())
        {
            dataInput = std::string(node.inputs[0]);
            return true;
        }
        if (!simulation::isOneOfOps(node.opType, {"Add", "Sub", "Mul", "Div"}) || node.inputs.size() != 2)
        {
            return false;
        }
        const bool constant0 = mGraph.isConstant(node.inputs[0]);
        const bool constant1 = mGraph.isConstant(node.inputs[1]);
        if (constant0 == constant1 || (constant0 && node.opType != "Add" && node.opType != "Mul"))
        {
            return false;
        }
        dataInput = std::string(node.inputs[constant0 ? 1 : 0]);
        return true;
    }

    //! The quantized weighted op whose epilogue tensor ends, every tensor on the way read once (TensorRT can fuse
    //! the reader into it), or kNone. withActivations: activations may be on the way too (Conv-Act-Pool).
    std::uint32_t convBehind(const std::string& tensor, bool withActivations) const
    {
        std::string current = tensor;
        for (int hops = 0; hops < 6; ++hops)
        {
            const std::uint32_t id = mGraph.tensors.find(TensorKey(current));
            if (id == OnnxGraph::kNone || mGraph.consumersOf(id).size() != 1)
            {
                return OnnxGraph::kNone;
            }
            const OnnxNode* producer = mGraph.producerOf(id);
            if (producer == nullptr)
            {
                return OnnxGraph::kNone;
            }
            if (mQuantizedOps.count(static_cast<std::uint32_t>(producer->index)) != 0)
            {
                return static_cast<std::uint32_t>(producer->index);
            }
            std::string dataInput;
            if (isLinearEpilogue(*producer, dataInput))
            {
                current = dataInput;
                continue;
            }
            if (!withActivations || producer->inputs.empty() ||
                !simulation::isOneOfOps(producer->opType, {"Relu", "Clip", "LeakyRelu", "PRelu", "Sigmoid"}))
            {
                return OnnxGraph::kNone;
            }
            current = std::string(producer->inputs[0]);
        }
        return OnnxGraph::kNone;
    }

    //! The quantized weighted op that writes tensor, through its linear epilogue, for this reader alone, or kNone.
    std::uint32_t fusableWeightedProducer(const std::string& tensor) const { return convBehind(tensor, false); }

    void planResidualAdds()
    {
        for (const OnnxNode& node : mGraph.nodes)
        {
            if (node.opType != "Add" || node.inputs.size() != 2 || node.isCustomDomain() ||
                mGraph.isConstant(node.inputs[0]) || mGraph.isConstant(node.inputs[1]))
            {
                continue;
            }
            int fused = -1;
            for (int slot = 0; slot < 2 && fused < 0; ++slot)
            {
                if (fusableWeightedProducer(std::string(node.inputs[slot])) != OnnxGraph::kNone)
                {
                    fused = slot;
                }
            }
            if (fused < 0)
            {
                continue;
            }
            const std::uint32_t other = fused == 0 ? 1 : 0;
            const std::string residual(node.inputs[other]);
            const CalibrationScale* scale = scaleOf(residual);
            if (scale == nullptr)
            {
                keepFloat(node, "the cache has no scale for its residual input " + residual +
                                    ": the Add fuses into its conv with a float residual");
                continue;
            }
            requestActivation(residual, {static_cast<std::uint32_t>(node.index), other}, *scale,
                              "Add " + node.name + " fuses into " +
                                  mGraph.nodes[fusableWeightedProducer(std::string(node.inputs[fused]))].name +
                                  " with its residual input quantized");
        }
    }

    // ----- Concats ------------------------------------------------------------------------------------------------
    //! Readers of tensor, through single-reader data movement (Flatten, Reshape, ...), that a pair now quantizes.
    bool writesQuantized(const std::string& tensor, int depth = 0) const
    {
        if (mQuantizedTensors.count(tensor) != 0)
        {
            return true;
        }
        const std::uint32_t id = mGraph.tensors.find(TensorKey(tensor));
        if (id == OnnxGraph::kNone || depth > 8)
        {
            return false;
        }
        for (const std::uint32_t reader : mGraph.consumersOf(id))
        {
            const OnnxNode& node = mGraph.nodes[reader];
            if (simulation::isShuffleOp(node.opType) && node.inputs[0] == tensor && !node.outputs.empty() &&
                writesQuantized(std::string(node.outputs[0]), depth + 1))
            {
                return true;
            }
        }
        return false;
    }

    void planConcats()
    {
        for (const OnnxNode& node : mGraph.nodes)
        {
            if (node.opType != "Concat" || node.outputs.empty() || !writesQuantized(std::string(node.outputs[0])))
            {
                continue;
            }
            planConcat(node);
        }
    }

    void planConcat(const OnnxNode& node)
    {
        const std::string output(node.outputs[0]);
        std::vector<const CalibrationScale*> scales;
        for (std::size_t slot = 0; slot < node.inputs.size(); ++slot)
        {
            const std::string input(node.inputs[slot]);
            const CalibrationScale* scale = mGraph.isConstant(node.inputs[slot]) ? nullptr : scaleOf(input);
            if (scale == nullptr)
            {
                keepFloat(node, "the cache has no scale for its input " + input +
                                    ": its inputs stay float (a Reformat may join them)");
                return;
            }
            scales.push_back(scale);
        }
        if (const CalibrationScale* own = scaleOf(output))
        {
            scales.push_back(own);
        }
        const auto [least, most] = std::minmax_element(scales.begin(), scales.end(),
                                                       [](const CalibrationScale* a, const CalibrationScale* b)
                                                       { return a->scale < b->scale; });
        if (!patterns::withinUnificationBound((*least)->scale, (*most)->scale))
        {
            keepFloat(node, "its inputs' scales range from " + formatScale((*least)->scale) + " to " +
                                formatScale((*most)->scale) + ", more than " +
                                formatScale(patterns::kMostUnifiedScaleRatio) +
                                "x apart: one shared scale would cost the smaller ones their bits, so they stay float");
            return;
        }
        for (std::size_t slot = 0; slot < node.inputs.size(); ++slot)
        {
            requestActivation(std::string(node.inputs[slot]), {static_cast<std::uint32_t>(node.index), slot}, **most,
                              "Concat " + node.name + " runs INT8 with one scale on every input (no requantize)");
            mPairs.back().scaleWhy = "the largest of the Concat's scales in the cache, " + mCache.sourcePath + ":" +
                                     std::to_string((*most)->line) + " (" + (*most)->tensor + ")";
        }
        // The Concat's readers' pairs take the same scale: the Concat's output is its inputs side by side.
        for (PairRequest& pair : mPairs)
        {
            if (pair.tensor == output && !pair.weight)
            {
                pair.scales = {(*most)->scale};
                pair.scaleWhy = mPairs.back().scaleWhy;
            }
        }
    }

    // ----- pools --------------------------------------------------------------------------------------------------
    //! Whether input comes from a quantized conv through its epilogue and activations: the Conv-Act-Pool fusion.
    //! The tensor itself may have other readers: that keeps TensorRT from the fusion, but a pair there is still what
    //! the rule conv-act-pool-blocked removes (fix's next pass would take it out again), so none is placed.
    bool isConvActOutput(const std::string& tensor) const
    {
        const std::uint32_t id = mGraph.tensors.find(TensorKey(tensor));
        const OnnxNode* producer = id == OnnxGraph::kNone ? nullptr : mGraph.producerOf(id);
        if (producer == nullptr || producer->inputs.empty())
        {
            return false;
        }
        if (mQuantizedOps.count(static_cast<std::uint32_t>(producer->index)) != 0)
        {
            return true;
        }
        std::string dataInput = std::string(producer->inputs[0]);
        const bool activation =
            simulation::isOneOfOps(producer->opType, {"Relu", "Clip", "LeakyRelu", "PRelu", "Sigmoid"});
        return (activation || isLinearEpilogue(*producer, dataInput)) &&
               convBehind(dataInput, true) != OnnxGraph::kNone;
    }

    void planPools()
    {
        for (const OnnxNode& node : mGraph.nodes)
        {
            if (!simulation::isOneOfOps(node.opType,
                                        {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) ||
                node.outputs.empty() || node.inputs.empty() || !writesQuantized(std::string(node.outputs[0])))
            {
                continue;
            }
            const std::string input(node.inputs[0]);
            if (node.opType == "MaxPool" && isConvActOutput(input))
            {
                mSummary.notes.push_back("MaxPool " + node.name +
                                         " is left to TensorRT's Conv-Act-Pool fusion: no Q/DQ between it and its "
                                         "conv (../shared/docs/tensorrt-qdq-reference.md section 1.8)");
                continue;
            }
            const CalibrationScale* scale = scaleOf(input);
            if (scale == nullptr)
            {
                keepFloat(node, "the cache has no scale for its input " + input);
                continue;
            }
            requestActivation(input, {static_cast<std::uint32_t>(node.index), 0}, *scale,
                              node.opType + " " + node.name + " runs INT8: its input quantized");
        }
    }

    // ----- the pairs ----------------------------------------------------------------------------------------------
    //! Requests on one tensor with one scale share one pair, inserted before their first reader.
    void emitPairs()
    {
        std::map<std::pair<std::string, std::string>, std::size_t> byTensorAndScales;
        std::vector<PairRequest> merged;
        for (PairRequest& pair : mPairs)
        {
            std::string bits(reinterpret_cast<const char*>(pair.scales.data()), pair.scales.size() * sizeof(float));
            bits += pair.weight ? "w" : "a";
            const auto [it, added] = byTensorAndScales.emplace(std::make_pair(pair.tensor, bits), merged.size());
            if (added)
            {
                pair.key = std::string(kRule) + "|" + pair.tensor + "|" + std::to_string(merged.size());
                merged.push_back(std::move(pair));
                continue;
            }
            PairRequest& into = merged[it->second];
            into.reads.insert(into.reads.end(), pair.reads.begin(), pair.reads.end());
            if (into.why.find(pair.why) == std::string::npos)
            {
                into.why += "; " + pair.why;
            }
        }
        std::set<std::string> used;
        for (const PairRequest& pair : merged)
        {
            if (const auto refused = mRefused.find(pair.key); refused != mRefused.end())
            {
                mSummary.notes.push_back("the pair on " + pair.tensor + " was left out: " + refused->second);
                continue;
            }
            emitPair(pair);
            (pair.weight ? mSummary.weightQdq : mSummary.activationQdq) += 1;
            if (!pair.weight)
            {
                used.insert(pair.cacheTensor);
            }
        }
        for (const CalibrationScale& entry : mCache.scales)
        {
            mSummary.used += used.count(entry.tensor);
        }
    }

    void emitPair(const PairRequest& pair)
    {
        const std::string base = "qdq_doctor/" + std::string(kRule) + "/" +
                                 (pair.tensor.rfind('/', 0) == 0 ? pair.tensor.substr(1) : pair.tensor);
        const bool perChannel = pair.scales.size() > 1;
        NewInitializer scale;
        scale.name = freshName(base + "/scale");
        scale.dataType = 1;
        NewInitializer zeroPoint;
        zeroPoint.name = freshName(base + "/zero_point");
        zeroPoint.dataType = 3; // INT8 0: TensorRT takes symmetric signed INT8
        if (perChannel)
        {
            scale.dims = zeroPoint.dims = {static_cast<std::int64_t>(pair.scales.size())};
        }
        for (const float value : pair.scales)
        {
            scale.rawData += rawFloatData(value);
        }
        zeroPoint.rawData.assign(pair.scales.size(), '\0');

        NewNode q;
        q.name = freshName(base + "/QuantizeLinear");
        q.opType = "QuantizeLinear";
        const std::string quantized = freshName(base + "/quantized");
        const std::string dequantized = freshName(base + "/dequantized");
        q.inputs = {pair.tensor, scale.name, zeroPoint.name};
        q.outputs = {quantized};
        NewNode dq;
        dq.name = freshName(base + "/DequantizeLinear");
        dq.opType = "DequantizeLinear";
        dq.inputs = {quantized, scale.name, zeroPoint.name};
        dq.outputs = {dequantized};
        if (perChannel)
        {
            q.attributes.push_back(NewAttribute::ofInt("axis", pair.axis));
            dq.attributes.push_back(NewAttribute::ofInt("axis", pair.axis));
        }
        q.docString = dq.docString = "added by qdq-doctor fix --calibration-cache: " + pair.scaleWhy;

        PlannedEdit planned;
        planned.edit.kind = FixEdit::Kind::kInsertQdq;
        planned.edit.tensor = pair.tensor;
        planned.edit.fixedScale = pair.scales.front();
        planned.edit.scaleReason = pair.scaleWhy;
        planned.rule = kRule;
        planned.rules = {kRule};
        planned.finding = pair.why;
        planned.keys = {pair.key};
        planned.added = {q.name, dq.name, scale.name, zeroPoint.name};
        planned.scale = (pair.scales.size() > 1 ? std::to_string(pair.scales.size()) + " scales"
                                                : formatScale(pair.scales.front())) +
                        ": " + pair.scaleWhy;
        NumericCost cost;
        cost.summary = pair.weight ? "weights rounded to 8 bits per channel, nothing clamped (the scale covers max |w|)"
                                   : "a new rounding of step " + formatScale(pair.scales.front()) +
                                         " on a float tensor, clamped to +-127 steps (the calibrated range)";
        planned.numericCost = std::move(cost);
        std::uint32_t before = static_cast<std::uint32_t>(mGraph.nodes.size());
        for (const auto& [node, slot] : pair.reads)
        {
            before = std::min(before, node);
            planned.touched.push_back(mGraph.nodes[node].name);
            mPlan.modelEdits.rewireInputs.push_back({node, slot, dequantized});
            planned.changed.push_back(mGraph.nodes[node].name + " input " + std::to_string(slot) + ": " + pair.tensor +
                                      " -> " + dequantized);
            planned.edit.consumers.emplace_back(mGraph.nodes[node].name, slot);
        }
        mPlan.modelEdits.addInitializers.push_back(std::move(scale));
        mPlan.modelEdits.addInitializers.push_back(std::move(zeroPoint));
        mPlan.modelEdits.insertNodes.push_back({before, std::move(q)});
        mPlan.modelEdits.insertNodes.push_back({before, std::move(dq)});
        mPlan.edits.push_back(std::move(planned));
    }

    const OnnxGraph& mGraph;
    const CalibrationCache& mCache;
    CalibrationFixSummary& mSummary;
    const std::map<std::string, std::string>& mRefused;
    const ImplicitEngineRuns* mImplicit;
    FixPlan mPlan;
    std::vector<PairRequest> mPairs;
    std::set<std::uint32_t> mQuantizedOps;
    std::set<std::string> mQuantizedTensors;
    std::set<std::string> mUsedNames;
};

} // namespace

FixPlan planCalibrationFix(const OnnxGraph& graph, const CalibrationCache& cache, CalibrationFixSummary& summary,
                           const std::map<std::string, std::string>& refused, const ImplicitEngineRuns* implicit)
{
    summary = CalibrationFixSummary{};
    if (implicit != nullptr)
    {
        summary.implicitEngine = implicit->source;
    }
    CalibrationPlanner planner(graph, cache, summary, refused, implicit);
    return planner.run();
}

} // namespace qdq
