// The engine simulator's second half: from the model's graph and the predicted fate of every Q/DQ node, the layer
// list TensorRT will build. It follows the documented layer fusions (reference section 1.8): weighted ops with their
// BatchNorm, bias, scale and activation epilogues, the residual Add and the activation after it, Conv + activation +
// MaxPool, pointwise chains, shuffles merged or turned into no-ops, Concat elimination, SoftMax + TopK, Myelin regions
// on the versions that make them, and reformats at the network's inputs and outputs. Where TensorRT's choice depends
// on tactics or on undocumented behaviour, the layer carries a guess that says so.
#include "src/simulation/engine_simulator.h"
#include "src/simulation/myelin_pass.h"
#include "src/simulation/op_classes.h"

#include "qdq/patterns.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>

namespace qdq::simulation
{

using namespace patterns;

namespace
{

constexpr std::uint32_t kNone = 0xFFFFFFFFu;

bool isPoolingOp(std::string_view op)
{
    return isOneOfOps(op, {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"});
}

//! Ops that need no layer: they vanish at parse or build time.
bool isEliminatedOp(std::string_view op)
{
    return isOneOfOps(op, {"Identity", "Dropout", "Constant"});
}

//! Epilogue ops that TensorRT names plainly inside a conv layer (others appear as PWN(...)). A Clip is PWN(...) in
//! every real engine here: `features.1.conv.0.0.weight + QuantizeLinear_25 + Conv_29 + PWN(Clip_33)` (TensorRT 8.2
//! and 8.4, ../shared/realdata/trex-tests-mobilenet-qat*), `Pad_6 + ... + Conv_13 + PWN(Clip_14)` (8.5.1,
//! issue-trt-2527-qdq-trt851), `Conv_0 + PWN(Clip_3)` (8.4 implicit INT8, blogdoc-fpn-mbv2-int8-calib-trt84).
bool isPlainEpilogueName(std::string_view op)
{
    return isOneOfOps(op, {"Relu", "BatchNormalization", "Add", "Sub", "Mul", "Div"});
}

std::string precisionName(bool quantized, bool fp16, std::string_view quantizedType = "INT8")
{
    return quantized ? std::string(quantizedType) : fp16 ? "FP16" : "FP32";
}

//! The name of an ONNX quantized element type as TensorRT's layer list writes it; "" for another type.
std::string_view quantizedTypeName(OnnxDataType type)
{
    switch (type)
    {
    case OnnxDataType::kInt8:
    case OnnxDataType::kUint8:
        return "INT8";
    case OnnxDataType::kFloat8E4M3FN:
    case OnnxDataType::kFloat8E4M3FNUZ:
    case OnnxDataType::kFloat8E5M2:
    case OnnxDataType::kFloat8E5M2FNUZ:
        return "FP8";
    case OnnxDataType::kInt4:
    case OnnxDataType::kUint4:
        return "INT4";
    case OnnxDataType::kFloat4E2M1:
        return "FP4";
    default:
        return {};
    }
}

//! The type a Q/DQ node quantizes to: its zero point's type, a Q's output_dtype, a DQ's constant input's type or its
//! Q's; "" when the model does not say (ONNX then means uint8; exporters for TensorRT write an int8 zero point).
std::string_view quantizedTypeOf(const OnnxGraph& graph, std::uint32_t node, int depth = 0)
{
    const QdqParameters* parameters = graph.qdqOf(node);
    if (parameters == nullptr)
    {
        return {};
    }
    if (parameters->hasZeroPoint)
    {
        return quantizedTypeName(parameters->zeroPointType);
    }
    if (parameters->outputDtype)
    {
        return quantizedTypeName(static_cast<OnnxDataType>(*parameters->outputDtype));
    }
    if (parameters->isQuantize)
    {
        return {};
    }
    const OnnxNode& dq = graph.nodes[node];
    if (dq.inputs.empty())
    {
        return {};
    }
    if (auto type = graph.tensorType(TensorKey(dq.inputs[0])); type && isConstantTensor(graph, dq.inputs[0]))
    {
        return quantizedTypeName(*type);
    }
    const OnnxNode* producer = producerOf(graph, dq.inputs[0]);
    return producer != nullptr && isQuantize(*producer) && depth == 0
               ? quantizedTypeOf(graph, static_cast<std::uint32_t>(producer->index), depth + 1)
               : std::string_view();
}

class LayerBuilder
{
public:
    LayerBuilder(const OnnxGraph& graph, const SimulationOptions& options, Prediction& prediction,
                 std::optional<TransformerParts> transformer)
        : mGraph(graph), mOptions(options), mOut(prediction), mTransformer(std::move(transformer))
    {
    }

    void run()
    {
        const std::size_t count = mGraph.nodes.size();
        mLayerOf.assign(count, kNone);
        mFolded.assign(count, false);
        mQdqOf.assign(count, nullptr);
        for (const auto& entry : mOut.qdq)
        {
            if (entry.nodeIndex < count)
            {
                mQdqOf[entry.nodeIndex] = &entry;
            }
        }
        topologicalOrder();
        foldConstants();
        mOut.layers.reserve(count / 2 + 8);
        // Myelin regions first: they take the shuffles and pointwise ops around their seeds before those become
        // layers of their own. A region cut for convexity leaves its rest to a later seed or to ordinary layers.
        mMyelin.prepare(mTransformer ? std::move(*mTransformer)
                                     : TransformerParts{findAttentionBlocks(mGraph), hasLayerNormOrGelu(mGraph)});
        if (mMyelin.makesRegions())
        {
            for (std::uint32_t node : mOrder)
            {
                const OnnxNode& n = mGraph.nodes[node];
                if (mMyelin.seedsFirstPass(n))
                {
                    buildMyelin(n);
                }
            }
        }
        // A zero Pad read only by a convolution waits for it: the conv's layer takes it (Padding + Convolution).
        std::vector<std::uint32_t> deferredPads;
        for (std::uint32_t node : mOrder)
        {
            const OnnxNode& n = mGraph.nodes[node];
            if (mLayerOf[node] != kNone || mFolded[node] || isQdq(n))
            {
                continue;
            }
            if (foldsIntoConv(n))
            {
                deferredPads.push_back(node);
                continue;
            }
            buildFrom(n);
        }
        for (std::uint32_t node : deferredPads)
        {
            if (mLayerOf[node] == kNone) // its conv went another way (a Myelin region)
            {
                buildSingle(mGraph.nodes[node]);
            }
        }
        placeQdqNodes();
        mMyelin.report(mOut);
        finishPrecisions();
        if (mOptions.stronglyTyped())
        {
            // Each tensor keeps the graph's type; the network I/O has the graph's types too, so no I/O reformat.
            applyStrongTyping(mGraph, mOrder, mOut);
            return;
        }
        addIoReformats();
    }

private:
    // ---- graph helpers --------------------------------------------------------------------------------------

    void topologicalOrder()
    {
        const std::size_t count = mGraph.nodes.size();
        std::vector<std::uint32_t> pending(count, 0);
        for (std::size_t i = 0; i < count; ++i)
        {
            for (std::uint32_t input : mGraph.inputIds(i))
            {
                const OnnxNode* producer = input == kNone ? nullptr : mGraph.producerOf(input);
                if (producer != nullptr && producer->index != i)
                {
                    ++pending[i];
                }
            }
        }
        mOrder.clear();
        mOrder.reserve(count);
        std::vector<std::uint32_t> ready;
        for (std::size_t i = count; i-- > 0;)
        {
            if (pending[i] == 0)
            {
                ready.push_back(static_cast<std::uint32_t>(i));
            }
        }
        // Nodes become ready in graph order where the graph is sorted: a stack fed in reverse keeps that order.
        std::vector<std::uint32_t> released;
        while (!ready.empty())
        {
            std::uint32_t node = ready.back();
            ready.pop_back();
            mOrder.push_back(node);
            released.clear();
            for (std::uint32_t output : mGraph.outputIds(node))
            {
                if (output == kNone)
                {
                    continue;
                }
                for (std::uint32_t consumer : mGraph.consumersOf(output))
                {
                    if (consumer != node && pending[consumer] > 0)
                    {
                        // A consumer reading two outputs of this node counts each input once.
                        for (std::uint32_t input : mGraph.inputIds(consumer))
                        {
                            if (input == output && pending[consumer] > 0)
                            {
                                if (--pending[consumer] == 0)
                                {
                                    released.push_back(consumer);
                                }
                            }
                        }
                    }
                }
            }
            std::sort(released.rbegin(), released.rend());
            ready.insert(ready.end(), released.begin(), released.end());
        }
        mPosition.assign(count, kNone);
        for (std::size_t i = 0; i < mOrder.size(); ++i)
        {
            mPosition[mOrder[i]] = static_cast<std::uint32_t>(i);
        }
        // Nodes on a cycle are never ready; they keep graph order at the end.
        for (std::size_t i = 0; i < count; ++i)
        {
            if (mPosition[i] == kNone)
            {
                mPosition[i] = static_cast<std::uint32_t>(mOrder.size());
                mOrder.push_back(static_cast<std::uint32_t>(i));
            }
        }
    }

    //! Constant folding: a node whose inputs are all constant, or Shape/Size, runs at build time, and Identity/Dropout
    //! vanish.
    void foldConstants()
    {
        mConstant.assign(mGraph.tensors.names.size(), false);
        for (std::size_t id = 0; id < mConstant.size(); ++id)
        {
            mConstant[id] = id < mGraph.tensors.constant.size() && mGraph.tensors.constant[id] != kNone;
        }
        for (std::uint32_t node : mOrder)
        {
            const OnnxNode& n = mGraph.nodes[node];
            bool allConstant = true;
            bool anyInput = false;
            for (std::uint32_t input : mGraph.inputIds(node))
            {
                if (input == kNone)
                {
                    continue;
                }
                anyInput = true;
                allConstant = allConstant && mConstant[input];
            }
            // Shape and Size give build-time values (patterns::readsShapeOnly): what only computes on them (Gather,
            // Cast, Unsqueeze, Concat of the dims, Swin's and ShuffleNet's Reshape shapes and Slice starts) folds too.
            const bool constantNode =
                n.opType == "Constant" || readsShapeOnly(n.opType) || (anyInput && allConstant && !n.isCustomDomain());
            if (constantNode)
            {
                for (std::uint32_t output : mGraph.outputIds(node))
                {
                    if (output != kNone)
                    {
                        mConstant[output] = true;
                    }
                }
                if (!isQdq(n))
                {
                    mFolded[node] = true;
                }
            }
            else if (isEliminatedOp(n.opType))
            {
                mFolded[node] = true;
            }
        }
    }

    bool constantTensor(std::uint32_t id) const { return id != kNone && id < mConstant.size() && mConstant[id]; }

    std::span<const std::uint32_t> consumers(std::uint32_t tensor) const
    {
        return tensor == kNone ? std::span<const std::uint32_t>() : mGraph.consumersOf(tensor);
    }

    bool isNetworkOutput(std::uint32_t tensor) const
    {
        for (const auto& output : mGraph.graphOutputs)
        {
            if (mGraph.tensors.find(output) == tensor)
            {
                return true;
            }
        }
        return false;
    }

    //! The only consumer of tensor, when exactly one node reads it and it is not a network output.
    const OnnxNode* soleConsumer(std::uint32_t tensor) const
    {
        auto readers = consumers(tensor);
        if (readers.size() != 1 || isNetworkOutput(tensor))
        {
            return nullptr;
        }
        return &mGraph.nodes[readers[0]];
    }

    std::uint32_t firstOutput(const OnnxNode& node) const
    {
        auto outputs = mGraph.outputIds(node.index);
        return outputs.empty() ? kNone : outputs[0];
    }

    //! The sole reader of tensor, looking through a Q -> DQ pair that sits alone on it.
    const OnnxNode* consumerThroughQdq(std::uint32_t tensor) const
    {
        const OnnxNode* reader = soleConsumer(tensor);
        for (int hop = 0; reader != nullptr && isQdq(*reader) && hop < 4; ++hop)
        {
            reader = soleConsumer(firstOutput(*reader));
        }
        return reader;
    }

    //! The non-constant inputs of a node (tensor ids).
    std::vector<std::uint32_t> activationInputs(const OnnxNode& node) const
    {
        std::vector<std::uint32_t> result;
        for (std::uint32_t input : mGraph.inputIds(node.index))
        {
            if (input != kNone && !constantTensor(input))
            {
                result.push_back(input);
            }
        }
        return result;
    }

    const PredictedQdq* qdqOf(const OnnxNode& node) const { return mQdqOf[node.index]; }

    //! A Q/DQ node seen through: the producer of tensor, skipping Q/DQ nodes that are folded, cancelled or fused.
    const OnnxNode* producerThroughQdq(std::uint32_t tensor, bool& crossedQdq) const
    {
        for (int hop = 0; hop < 8; ++hop)
        {
            const OnnxNode* producer = mGraph.producerOf(tensor);
            if (producer == nullptr || !isQdq(*producer))
            {
                return producer;
            }
            crossedQdq = true;
            auto inputs = mGraph.inputIds(producer->index);
            if (inputs.empty())
            {
                return nullptr;
            }
            tensor = inputs[0];
        }
        return nullptr;
    }

    // The names of a quantized conv's epilogue. TensorRT's QDQ optimizer folds a BatchNormalization into a quantized
    // conv (QConvScaleFusion) and leaves it out of the layer's name; from 8.4 on the Relu that ScaleActivationFusion
    // fused with that BatchNormalization first goes with it. The layer still computes both. Seen in:
    //  - 8.5.2, ../shared/realdata/trex-notebooks-yolo-orin-trt852/trt.out: "ScaleActivationFusion: Fusing
    //    /backbone/bn1/BatchNormalization with /backbone/relu/Relu", "Running: QConvScaleFusion on
    //    /backbone/conv1/Conv" "Removing /backbone/bn1/BatchNormalization + /backbone/relu/Relu", and the layer
    //    "backbone.conv1.weight + /backbone/conv1/_weight_quantizer/QuantizeLinear + /backbone/conv1/Conv". A LeakyRelu
    //    after the BatchNormalization is not fused with it and stays in the name, as PWN(...) ("/neck/conv1/conv/Conv +
    //    PWN(/neck/conv1/relu/LeakyRelu)"), and so do the Add and Relu after a residual conv's BatchNormalization
    //    ("/backbone/layer1/layer1.0/conv2/Conv + /backbone/layer1/layer1.0/Add +
    //    /backbone/layer1/layer1.0/relu_1/Relu").
    //  - 8.4.12, ../shared/realdata/blogdoc-yolov8-qdq-orin-trt8412: the same fusion lines and layer names; the A100
    //    ResNet18 engines of trex-pt-resnet-a100-qat* (8.4, inferred): "layer1.0.conv1.weight + QuantizeLinear_20 +
    //    Conv_22" (BatchNormalization_23 and Relu_24 by the numbering; the model is not here).
    //  - 8.2 (inferred), trex-tests-mobilenet-qat-2022-04: "features.1.conv.0.0.weight + QuantizeLinear_25 + Conv_29 +
    //    PWN(Clip_33)": a BatchNormalization (30, by the numbering) left out, the Clip not fused with it named.
    //  - 8.0, NVIDIA/TensorRT#1293 (a pytorch-quantization ResNet's profile): "layer2.2.conv1.weight +
    //    QuantizeLinear_156_quantize_scale_node + Conv_158 + Relu_160": the BatchNormalization (159, by the numbering)
    //    left out, the Relu after it named.
    // Elsewhere (8.1, 8.3, 8.6 and later, an unknown version) the names are inferred, and the layer says so.

    //! Versions whose names of a quantized conv with a folded BatchNormalization were seen: 8.0, 8.2, 8.4, 8.5.
    bool foldedScaleNameSeen() const
    {
        return mOptions.trtMajor == 8 && (mOptions.trtMinor == 0 || mOptions.trtMinor == 2 || mOptions.trtMinor >= 4) &&
               mOptions.trtMinor <= 5;
    }
    //! Versions whose name of the Relu after that BatchNormalization was seen: 8.0 (named), 8.4 and 8.5 (left out).
    bool scaleReluNameSeen() const
    {
        return mOptions.trtMajor == 8 && (mOptions.trtMinor == 0 || mOptions.trtMinor == 4 || mOptions.trtMinor == 5);
    }
    //! Whether that Relu leaves the name: 8.4 on (and an unknown version), not 8.0 to 8.3.
    bool scaleReluLeavesName() const { return mOptions.trtMajor != 8 || mOptions.trtMinor >= 4; }

    //! Whether the name of a conv layer lists epilogue node next, which the layer takes after last; afterUnnamedScale
    //! when last is a BatchNormalization the name leaves out. guess says why when the version's names are inferred.
    bool namedInConvLayer(const OnnxNode& weighted, bool quantized, const OnnxNode& last, const OnnxNode& next,
                          bool afterUnnamedScale, std::string& guess) const
    {
        if (!quantized || weighted.opType != "Conv")
        {
            return true;
        }
        if (next.opType == "BatchNormalization" && &last == &weighted)
        {
            if (!foldedScaleNameSeen())
            {
                guess =
                    "name inferred: TensorRT 8.0 to 8.5 leave a BatchNormalization folded into a quantized conv out "
                    "of the layer's name (QConvScaleFusion), 8.4 and 8.5 also a Relu right after it";
            }
            return false;
        }
        if (next.opType == "Relu" && afterUnnamedScale)
        {
            if (!scaleReluNameSeen())
            {
                guess = "name inferred: TensorRT 8.0 names a Relu right after a BatchNormalization folded into a "
                        "quantized conv, 8.4 and 8.5 leave both out of the layer's name";
            }
            return !scaleReluLeavesName();
        }
        return true;
    }

    //! The name TensorRT gives the layer of a Quantize node: TensorRT 8.0 appends "_quantize_scale_node" (the profile
    //! in NVIDIA/TensorRT#1293: "QuantizeLinear_151_quantize_scale_node", "layer2.2.conv1.weight +
    //! QuantizeLinear_156_quantize_scale_node + Conv_158 + Relu_160"); the 8.2 engine of
    //! ../shared/realdata/trex-tests-mobilenet-qat-2022-04 and later ones write the node's name ("QuantizeLinear_2").
    std::string quantizeLayerName(const OnnxNode& q) const
    {
        return namesQuantizeScaleNodes() ? q.name + "_quantize_scale_node" : q.name;
    }
    bool namesQuantizeScaleNodes() const { return mOptions.trtMajor == 8 && mOptions.trtMinor < 2; }

    bool usesMyelinForGemm() const { return mMyelin.usesMyelinForGemm(); }

    //! The ONNX parser folds a BatchNormalization into the conv before it only when its scale, bias, mean and
    //! variance are initializers; computed ones (even an Identity of an initializer) make it a Scale layer of its own.
    bool batchNormFoldable(const OnnxNode& node) const
    {
        auto inputs = mGraph.inputIds(node.index);
        for (std::size_t i = 1; i < inputs.size(); ++i)
        {
            const std::uint32_t id = inputs[i];
            if (id == kNone || mGraph.tensors.constant[id] == kNone || mGraph.producerOf(id) != nullptr)
            {
                return false;
            }
        }
        return true;
    }

    //! A zero Pad whose only reader is a Conv or ConvTranspose (no Q/DQ between them).
    bool foldsIntoConv(const OnnxNode& node) const
    {
        if (node.opType != "Pad" || node.outputs.empty() || !isZeroPad(mGraph, node))
        {
            return false;
        }
        const OnnxNode* conv = soleConsumer(firstOutput(node));
        return conv != nullptr && (conv->opType == "Conv" || conv->opType == "ConvTranspose") &&
               !conv->inputs.empty() && conv->inputs[0] == node.outputs[0];
    }

    // ---- layers ---------------------------------------------------------------------------------------------

    std::uint32_t newLayer(PredictedLayer layer)
    {
        mOut.layers.push_back(std::move(layer));
        mLayerNodes.emplace_back();
        return static_cast<std::uint32_t>(mOut.layers.size() - 1);
    }

    void assign(std::uint32_t layer, const OnnxNode& node)
    {
        mLayerOf[node.index] = layer;
        mLayerNodes[layer].push_back(static_cast<std::uint32_t>(node.index));
    }

    void buildFrom(const OnnxNode& node)
    {
        if (isWeighted(mGraph, node))
        {
            buildWeighted(node);
        }
        else if (isShuffleOp(node.opType))
        {
            buildShuffle(node);
        }
        else if (node.opType == "Concat")
        {
            buildConcat(node);
        }
        else if (mMyelin.makesRegions() && mMyelin.seedsLater(node) && mMyelin.eligible(node))
        {
            buildMyelin(node);
        }
        else if (isPointwiseOp(node.opType))
        {
            buildPointwise(node);
        }
        else
        {
            buildSingle(node);
        }
    }

    //! Which Conv takes the residual Add: among the Add's inputs written directly (no Q/DQ) by a conv chain, the
    //! conv that comes last in topological order (TensorRT fuses the Add into the conv that completes it).
    const OnnxNode* residualOwner(const OnnxNode& add) const
    {
        const OnnxNode* owner = nullptr;
        for (std::uint32_t input : activationInputs(add))
        {
            const OnnxNode* producer = mGraph.producerOf(input);
            std::uint32_t tensor = input;
            for (int hop = 0; producer != nullptr && hop < 6; ++hop)
            {
                if (soleConsumer(tensor) == nullptr)
                {
                    producer = nullptr;
                    break;
                }
                if (producer->opType == "Conv" || producer->opType == "ConvTranspose")
                {
                    break;
                }
                const bool epilogue = (producer->opType == "BatchNormalization" && batchNormFoldable(*producer)) ||
                                      (isActivation(producer->opType) && producer->opType != "PRelu") ||
                                      (isPointwiseOp(producer->opType) && activationInputs(*producer).size() == 1);
                if (!epilogue)
                {
                    producer = nullptr;
                    break;
                }
                tensor = activationInputs(*producer).empty() ? kNone : activationInputs(*producer)[0];
                producer = tensor == kNone ? nullptr : mGraph.producerOf(tensor);
            }
            if (producer != nullptr && (producer->opType == "Conv" || producer->opType == "ConvTranspose") &&
                (owner == nullptr || mPosition[producer->index] > mPosition[owner->index]))
            {
                owner = producer;
            }
        }
        return owner;
    }

    //! The gate and Mul of a SiLU or HardSwish reading node's output (x * gate(x), patterns::isSelfGate), when nothing
    //! else reads x or the gate and neither has a layer yet; {nullptr, nullptr} otherwise.
    std::pair<const OnnxNode*, const OnnxNode*> siluAfter(const OnnxNode& node) const
    {
        const std::uint32_t x = firstOutput(node);
        if (x == kNone || isNetworkOutput(x))
        {
            return {nullptr, nullptr};
        }
        auto readers = consumers(x);
        if (readers.size() != 2)
        {
            return {nullptr, nullptr};
        }
        const OnnxNode* sigmoid = &mGraph.nodes[readers[0]];
        const OnnxNode* mul = &mGraph.nodes[readers[1]];
        if (!patterns::isSelfGate(sigmoid->opType))
        {
            std::swap(sigmoid, mul);
        }
        if (!patterns::isSelfGate(sigmoid->opType) || mul->opType != "Mul" || mLayerOf[sigmoid->index] != kNone ||
            mLayerOf[mul->index] != kNone || soleConsumer(firstOutput(*sigmoid)) != mul)
        {
            return {nullptr, nullptr};
        }
        const auto inputs = mGraph.inputIds(mul->index);
        if (inputs.size() != 2 || !((inputs[0] == x && inputs[1] == firstOutput(*sigmoid)) ||
                                    (inputs[1] == x && inputs[0] == firstOutput(*sigmoid))))
        {
            return {nullptr, nullptr};
        }
        return {sigmoid, mul};
    }

    //! A weighted layer's name and epilogue while it is built. nameParts holds views of the model's names (a name in
    //! PWN(...) when flagged) and of the strings here, joined once: composing the name part by part cost a fifth of
    //! the simulation on a 100,000-conv model.
    struct WeightedLayerParts
    {
        std::vector<std::pair<std::string_view, bool>> nameParts;
        std::string weightQuantizer; // the weight Q's name as TensorRT 8.0 writes it
        std::string silu;            // "Sigmoid, Mul" of a fused SiLU or HardSwish
        std::string nameGuess;       // why the name is inferred, when it is
        bool residualTaken = false;
        bool pooled = false;
        bool unnamedScale = false; // the last node taken is a BatchNormalization the name leaves out
    };

    //! The weights and their quantizer lead the name in TensorRT 8.x and 10.x alike.
    void nameWeights(const OnnxNode& weighted, WeightedLayerParts& parts) const
    {
        const OnnxNode* dq = producerOf(mGraph, weighted.inputs[1]);
        const OnnxNode* q = dq != nullptr && !dq->inputs.empty() ? producerOf(mGraph, dq->inputs[0]) : nullptr;
        if (q != nullptr && isQuantize(*q) && !q->inputs.empty())
        {
            parts.nameParts.emplace_back(q->inputs[0], false);
            if (namesQuantizeScaleNodes())
            {
                parts.weightQuantizer = quantizeLayerName(*q);
                parts.nameParts.emplace_back(parts.weightQuantizer, false);
            }
            else
            {
                parts.nameParts.emplace_back(q->name, false);
            }
        }
        else if (dq != nullptr && isDequantize(*dq) && !dq->inputs.empty())
        {
            parts.nameParts.emplace_back(dq->inputs[0], false);
        }
    }

    //! Whether the weighted layer takes next, its sole reader, into its epilogue (and so whether the epilogue now has
    //! its residual Add or pool).
    bool takesIntoEpilogue(const OnnxNode& weighted, const OnnxNode& next, WeightedLayerParts& parts) const
    {
        const bool isConv = weighted.opType == "Conv" || weighted.opType == "ConvTranspose";
        const std::string& op = next.opType;
        const auto inputs = activationInputs(next);
        if (op == "BatchNormalization")
        {
            return !parts.residualTaken && batchNormFoldable(next);
        }
        if (isActivation(op))
        {
            return op != "PRelu";
        }
        if (isOneOfOps(op, {"Add", "Sub"}) && inputs.size() == 1 && !parts.residualTaken)
        {
            return true; // a bias: the other input is constant
        }
        if (isPointwiseOp(op) && inputs.size() == 1 && isOneOfOps(op, {"Mul", "Div"}) && !parts.residualTaken)
        {
            return true; // Convolution + Scale
        }
        if (isConv && op == "Add" && inputs.size() == 2 && !parts.residualTaken && !parts.pooled &&
            residualOwner(next) == &weighted)
        {
            parts.residualTaken = true;
            return true;
        }
        if (isConv && op == "MaxPool" && !parts.pooled && !parts.residualTaken && outputQuantizedAfter(next))
        {
            parts.pooled = true; // Conv + activation + MaxPool, both in INT8
            return true;
        }
        return false;
    }

    //! Takes the epilogue after the weighted node into layer index: BatchNormalization, bias, scale, activations, a
    //! SiLU, the residual Add and the activation after it, a MaxPool in INT8.
    void takeEpilogue(const OnnxNode& weighted, bool quantized, std::uint32_t index, WeightedLayerParts& parts)
    {
        const bool isConv = weighted.opType == "Conv" || weighted.opType == "ConvTranspose";
        const OnnxNode* last = &weighted;
        for (int step = 0; step < 16; ++step)
        {
            if (const auto silu = siluAfter(*last); silu.first != nullptr && isConv && parts.silu.empty())
            {
                // A gate (Sigmoid or HardSigmoid) and Mul(x, gate(x)) run as the conv's generic activation:
                // `conv + PWN(Sigmoid, Mul)`.
                // A residual Add after it stays a PointWise layer of its own (reference R14).
                assign(index, *silu.first);
                assign(index, *silu.second);
                parts.silu = silu.first->name + ", " + silu.second->name;
                parts.nameParts.emplace_back(parts.silu, true);
                last = silu.second;
                parts.residualTaken = true;
                parts.unnamedScale = false;
                continue;
            }
            const OnnxNode* next = soleConsumer(firstOutput(*last));
            if (next == nullptr || mLayerOf[next->index] != kNone || isQdq(*next) ||
                !takesIntoEpilogue(weighted, *next, parts))
            {
                break;
            }
            assign(index, *next);
            const bool named = namedInConvLayer(weighted, quantized, *last, *next, parts.unnamedScale, parts.nameGuess);
            parts.unnamedScale = !named && next->opType == "BatchNormalization";
            if (named)
            {
                const bool plain = isPlainEpilogueName(next->opType) || next->opType == "MaxPool";
                parts.nameParts.emplace_back(next->name, !plain);
            }
            last = next;
        }
    }

    void buildWeighted(const OnnxNode& weighted)
    {
        const bool quantized = weighted.inputs.size() >= 2 && feedingDequantize(mGraph, weighted.inputs[0]) != nullptr;
        const bool isConv = weighted.opType == "Conv" || weighted.opType == "ConvTranspose";
        const bool fullyConnected = weighted.opType == "Gemm" || weighted.opType == "MatMul";
        PredictedLayer layer;
        layer.role = (quantized ? "quantized-" : "float-") + weighted.opType;
        WeightedLayerParts parts;
        if (quantized)
        {
            nameWeights(weighted, parts);
        }
        // Padding + Convolution: a Pad read only by the conv becomes part of it.
        if (isConv && !weighted.inputs.empty())
        {
            const OnnxNode* pad = producerOf(mGraph, weighted.inputs[0]);
            if (pad != nullptr && mLayerOf[pad->index] == kNone && foldsIntoConv(*pad))
            {
                mPendingPad = pad;
            }
        }

        if (fullyConnected && !quantized && usesMyelinForGemm())
        {
            buildMyelinGemm(weighted);
            return;
        }

        const std::uint32_t index = newLayer(std::move(layer));
        if (mPendingPad != nullptr)
        {
            assign(index, *mPendingPad);
            // The Pad leads the name: "Pad_6 + <weights> + QuantizeLinear_9 + Conv_13" (NVIDIA/TensorRT#2527).
            parts.nameParts.emplace(parts.nameParts.begin(), mPendingPad->name, false);
            mPendingPad = nullptr;
        }
        assign(index, weighted);
        parts.nameParts.emplace_back(weighted.name, false);
        takeEpilogue(weighted, quantized, index, parts);

        PredictedLayer& built = mOut.layers[index];
        built.kind = weighted.opType == "ConvTranspose" ? "CaskDeconvolution"
                     : parts.pooled                     ? (mOptions.trtMajor >= 10 ? "CaskConvActPool" : "ConvActPool")
                                                        : "CaskConvolution";
        if (parts.pooled)
        {
            built.role = "quantized-ConvActPool";
        }
        if (fullyConnected)
        {
            built.guess = "a fully connected layer runs as a convolution; the kernel family (CaskConvolution, "
                          "CublasConvolution, CaskGemmConvolution) depends on the tactic";
        }
        built.name = joinViews(parts.nameParts);
        if (!parts.nameGuess.empty())
        {
            built.guess = built.guess.empty() ? parts.nameGuess : built.guess + "; " + parts.nameGuess;
        }
        built.int8Input = quantized;
        if (weighted.opType == "Conv" && !parts.residualTaken && !parts.pooled)
        {
            std::string epilogue;
            for (std::uint32_t node : mLayerNodes[index])
            {
                if (node != weighted.index && !isQdq(mGraph.nodes[node]))
                {
                    epilogue += mGraph.nodes[node].opType + ",";
                }
            }
            mSiblingCandidates.push_back({index, static_cast<std::uint32_t>(weighted.index), std::move(epilogue)});
        }
    }

    //! What makes two convs on one input candidates for one horizontally merged layer: the same kernel (weight
    //! dims after the output channels), strides, pads, dilations, groups and the same epilogue ops. Empty when the
    //! conv cannot be merged (its weights' shape is unknown).
    std::string siblingSignature(const OnnxNode& conv, const std::string& epilogue) const
    {
        if (conv.inputs.size() < 2)
        {
            return {};
        }
        // The weight tensor: the initializer itself, or what its DQ (and Q) read.
        const std::string* weight = &conv.inputs[1];
        for (int step = 0; step < 2; ++step)
        {
            const OnnxNode* producer = producerOf(mGraph, *weight);
            if (producer == nullptr || !isQdq(*producer) || producer->inputs.empty())
            {
                break;
            }
            weight = &producer->inputs[0];
        }
        const OnnxConstant* weights = mGraph.constant(*weight);
        if (weights == nullptr || weights->dims.size() < 3)
        {
            return {};
        }
        std::string signature = "k";
        for (std::size_t i = 1; i < weights->dims.size(); ++i)
        {
            signature += std::to_string(weights->dims[i]) + "x";
        }
        for (const auto& attribute : conv.attributes)
        {
            signature += ";" + attribute.name + "=" + std::to_string(attribute.i) + ":" + attribute.s;
            for (std::int64_t value : attribute.ints)
            {
                signature += "," + std::to_string(value);
            }
        }
        return signature + ";" + epilogue;
    }

    //! Where a conv's activation input comes from, for the horizontal merge: the Quantize behind its DQ (a duplicate
    //! Q merged into a twin counts as the twin), or the float tensor itself. Empty when unknown.
    std::string siblingSource(const OnnxNode& conv) const
    {
        if (conv.inputs.empty())
        {
            return {};
        }
        const OnnxNode* dq = feedingDequantize(mGraph, conv.inputs[0]);
        if (dq == nullptr)
        {
            return "t:" + std::string(conv.inputs[0]);
        }
        const OnnxNode* q = dq->inputs.empty() ? nullptr : producerOf(mGraph, dq->inputs[0]);
        if (q == nullptr || !isQuantize(*q))
        {
            return "dq:" + std::string(dq->inputs.empty() ? std::string_view() : std::string_view(dq->inputs[0]));
        }
        std::uint32_t quantize = static_cast<std::uint32_t>(q->index);
        const PredictedQdq* fate = mQdqOf[quantize];
        if (fate != nullptr && fate->fate == PredictedQdq::Fate::kCancelled &&
            fate->partnerIndex != PredictedQdq::kNoNode && fate->partnerIndex < mQdqOf.size() &&
            mQdqOf[fate->partnerIndex] != nullptr && mQdqOf[fate->partnerIndex]->isQuantize)
        {
            quantize = fate->partnerIndex;
        }
        return "q:" + std::to_string(quantize);
    }

    //! Whether another conv can share this conv's input: some tensor on the way from its source (the float tensor, or
    //! the Q's input behind its DQ) to the conv has a second reader. Most convs have none; skipping them saves
    //! building a signature and a map entry for each (3-4% of predict on the 100,000-conv bench model).
    bool mayHaveSibling(const OnnxNode& conv) const
    {
        const std::string* current = &conv.inputs[0];
        for (int depth = 0; depth < 64; ++depth)
        {
            if (consumersOf(mGraph, *current).size() >= 2)
            {
                return true;
            }
            const OnnxNode* producer = mGraph.producer(*current);
            if (producer == nullptr || producer->inputs.empty())
            {
                return false;
            }
            if (isQuantize(*producer))
            {
                return consumersOf(mGraph, producer->inputs[0]).size() >= 2; // a twin Q on the same tensor
            }
            if (!isDequantize(*producer) && (!isCommuting(producer->opType) || producer->opType == "Concat"))
            {
                return false;
            }
            current = &producer->inputs[0];
        }
        return true;
    }

    //! Horizontal merge (reference 1.8, `Merging layers: A || B` in 8.x logs): convs that read the same tensor
    //! through the same (or merged twin) Quantize, with the same kernel, strides, pads, groups and epilogue, become
    //! one layer named `A || B`. Runs after the Q/DQ nodes found their layers, before the node lists are made.
    //! A merged layer holds at most 8 convs, filled in graph order: the 8-way merge of the FPN-MobileNetV2 TensorRT
    //! 8.4 log (`Conv_171 + Relu_172 || ... `, 8 convs, blogdoc-fpn-mbv2-int8-calib-trt84 in ../shared/realdata) is
    //! the largest any real build here shows, and a TensorRT 8.2 FP16 build reported in issue 29 split 36 sibling
    //! 3x3 convs into merged layers of 8, 8, 8, 8 and 4.
    static constexpr std::size_t kMaxMergedConvs = 8;

    void mergeSiblingConvs()
    {
        std::unordered_map<std::string, std::pair<std::uint32_t, std::size_t>> openGroup; // key -> (layer, convs)
        for (const auto& candidate : mSiblingCandidates)
        {
            const OnnxNode& conv = mGraph.nodes[candidate.conv];
            if (mLayerOf[candidate.conv] != candidate.layer || conv.inputs.empty() || !mayHaveSibling(conv))
            {
                continue;
            }
            std::string signature = siblingSignature(conv, candidate.epilogue);
            std::string source = siblingSource(conv);
            if (signature.empty() || source.empty())
            {
                continue;
            }
            const auto [group, inserted] =
                openGroup.try_emplace(source + "|" + signature, std::make_pair(candidate.layer, std::size_t{1}));
            if (inserted)
            {
                continue;
            }
            if (group->second.second == kMaxMergedConvs)
            {
                group->second = {candidate.layer, 1}; // the group is full: this conv opens the next merged layer
                continue;
            }
            ++group->second.second;
            const std::uint32_t into = group->second.first;
            for (std::uint32_t node : mLayerNodes[candidate.layer])
            {
                mLayerOf[node] = into;
                mLayerNodes[into].push_back(node);
            }
            mLayerNodes[candidate.layer].clear();
            PredictedLayer& merged = mOut.layers[into];
            PredictedLayer& sibling = mOut.layers[candidate.layer];
            merged.name += " || " + sibling.name;
            merged.int8Input = merged.int8Input || sibling.int8Input;
            merged.int8Output = merged.int8Output || sibling.int8Output;
            merged.guess = "sibling convolutions on one input are merged horizontally in TensorRT 8.x logs; whether "
                           "a build merges them depends on the version and the tactics";
            sibling.role = "merged";
        }
    }

    //! TensorRT 10 hands an unquantized Gemm/MatMul to Myelin; the parser's bias add and a following activation form
    //! a PointWise layer beside it.
    void buildMyelinGemm(const OnnxNode& weighted)
    {
        PredictedLayer gemm;
        gemm.kind = "Myelin";
        gemm.role = "float-" + weighted.opType;
        gemm.name = "{ForeignNode[" + weighted.name + "]}";
        gemm.guess = mOptions.trtMajor == 0
                         ? "TensorRT version unknown: 10.x runs an unquantized Gemm/MatMul in Myelin, "
                           "8.x as a convolution"
                         : "";
        const std::uint32_t index = newLayer(std::move(gemm));
        if (mPendingPad != nullptr)
        {
            mPendingPad = nullptr;
        }
        assign(index, weighted);
        const bool hasBias = weighted.opType == "Gemm" && weighted.inputs.size() >= 3 && !weighted.inputs[2].empty();
        const OnnxNode* next = soleConsumer(firstOutput(weighted));
        bool biasAdd = false;
        if (!hasBias && next != nullptr && next->opType == "Add" && activationInputs(*next).size() == 1 &&
            mLayerOf[next->index] == kNone)
        {
            biasAdd = true;
        }
        if (!hasBias && !biasAdd)
        {
            return;
        }
        PredictedLayer pointwise;
        pointwise.kind = "PointWise";
        pointwise.role = "float-PointWise";
        const std::uint32_t pw = newLayer(std::move(pointwise));
        std::vector<std::string> parts;
        const OnnxNode* last = &weighted;
        if (hasBias)
        {
            mOut.layers[pw].partOf.push_back(weighted.name);
            parts.push_back("bias of " + weighted.name);
        }
        else
        {
            assign(pw, *next);
            parts.push_back(next->name);
            last = next;
        }
        extendPointwise(pw, last, parts);
        mOut.layers[pw].name = pwnName(parts);
        mOut.layers[pw].guess = "the parser splits the bias of " + weighted.name + " into an element-wise layer";
    }

    //! Whether a Q fused into the conv follows this MaxPool (the pool then runs in the conv's INT8).
    bool outputQuantizedAfter(const OnnxNode& pool) const
    {
        const std::uint32_t output = firstOutput(pool);
        auto readers = consumers(output);
        if (readers.empty())
        {
            return false;
        }
        for (std::uint32_t reader : readers)
        {
            const PredictedQdq* predicted = mQdqOf[reader];
            // A Q twin merged into a fused Q (same tensor, same scale) counts as that Q.
            if (predicted != nullptr && predicted->fate == PredictedQdq::Fate::kCancelled &&
                predicted->partnerIndex < mQdqOf.size())
            {
                predicted = mQdqOf[predicted->partnerIndex];
            }
            if (predicted == nullptr || !predicted->isQuantize ||
                predicted->fate != PredictedQdq::Fate::kFusedIntoProducer)
            {
                return false;
            }
        }
        return true;
    }

    //! Pointwise nodes that follow `last` with nothing else reading in between join the PointWise layer.
    void extendPointwise(std::uint32_t layer, const OnnxNode* last, std::vector<std::string>& parts)
    {
        // What the layer reads from outside: a binary op on one of them joins too (x * sigmoid(x)).
        const auto layerInputs = activationInputs(*last);
        for (int step = 0; step < 64; ++step)
        {
            const OnnxNode* next = soleConsumer(firstOutput(*last));
            if (next == nullptr || mLayerOf[next->index] != kNone || !isPointwiseOp(next->opType) ||
                mFolded[next->index])
            {
                break;
            }
            // A binary op joins when its other input is constant or already computed by this layer's nodes.
            bool joins = true;
            for (std::uint32_t input : activationInputs(*next))
            {
                if (input == firstOutput(*last))
                {
                    continue;
                }
                if (std::find(layerInputs.begin(), layerInputs.end(), input) != layerInputs.end())
                {
                    continue;
                }
                const OnnxNode* producer = mGraph.producerOf(input);
                if (producer == nullptr || mLayerOf[producer->index] != layer)
                {
                    joins = false;
                }
            }
            if (!joins)
            {
                break;
            }
            assign(layer, *next);
            parts.push_back(next->name);
            last = next;
        }
    }

    static std::string pwnName(const std::vector<std::string>& parts)
    {
        std::string name = "PWN(" + (parts.empty() ? std::string() : parts[0]) + ")";
        for (std::size_t i = 1; i < parts.size(); ++i)
        {
            name = "PWN(" + name + ", " + parts[i] + ")";
        }
        return name;
    }

    static std::string joinViews(const std::vector<std::pair<std::string_view, bool>>& parts)
    {
        std::size_t size = 0;
        for (const auto& [part, pwn] : parts)
        {
            size += part.size() + 3 + (pwn ? 5 : 0);
        }
        std::string name;
        name.reserve(size);
        for (const auto& [part, pwn] : parts)
        {
            if (!name.empty())
            {
                name += " + ";
            }
            if (pwn)
            {
                name += "PWN(";
            }
            name += part;
            if (pwn)
            {
                name += ')';
            }
        }
        return name;
    }

    static std::string join(const std::vector<std::string>& parts)
    {
        std::string name;
        for (const auto& part : parts)
        {
            if (!name.empty())
            {
                name += " + ";
            }
            name += part;
        }
        return name;
    }

    void buildPointwise(const OnnxNode& node)
    {
        PredictedLayer layer;
        layer.kind = "PointWise";
        layer.role = "float-" + node.opType;
        const std::uint32_t index = newLayer(std::move(layer));
        assign(index, node);
        std::vector<std::string> parts = {node.name};
        extendPointwise(index, &node, parts);
        mOut.layers[index].name = pwnName(parts);
        if (parts.size() == 1 && node.opType == "BatchNormalization")
        {
            mOut.layers[index].kind = "Scale";
        }
    }

    //! Consecutive shuffles are one layer: a Shuffle when one transposes, else a NoOp (a reshape of the same
    //! memory); a reshape of (N, C, 1, 1) into a fully connected layer vanishes into it.
    void buildShuffle(const OnnxNode& node)
    {
        PredictedLayer layer;
        layer.role = "float-" + node.opType;
        const std::uint32_t index = newLayer(std::move(layer));
        assign(index, node);
        std::vector<std::string> parts = {node.name};
        bool transposes = node.opType == "Transpose";
        const OnnxNode* last = &node;
        for (int step = 0; step < 16; ++step)
        {
            const OnnxNode* next = soleConsumer(firstOutput(*last));
            if (next == nullptr || mLayerOf[next->index] != kNone || !isShuffleOp(next->opType) || mFolded[next->index])
            {
                break;
            }
            assign(index, *next);
            parts.push_back(next->name);
            transposes = transposes || next->opType == "Transpose";
            last = next;
        }
        PredictedLayer& built = mOut.layers[index];
        built.name = join(parts);
        built.kind = transposes ? "Shuffle" : "NoOp";
        const OnnxNode* consumer = consumerThroughQdq(firstOutput(*last));
        const OnnxNode* source = node.inputs.empty() ? nullptr : producerOf(mGraph, node.inputs[0]);
        if (!transposes && consumer != nullptr && isWeighted(mGraph, *consumer) &&
            (consumer->opType == "Gemm" || consumer->opType == "MatMul") && source != nullptr &&
            isOneOfOps(source->opType, {"GlobalAveragePool", "GlobalMaxPool", "ReduceMean"}))
        {
            // Flatten of a pooled (N, C, 1, 1) tensor: the fully connected layer reads it as it is.
            built.kind = "NoOp";
            built.role = "eliminated";
            built.guess = "a flatten of a globally pooled tensor into a fully connected layer needs no layer";
        }
    }

    //! Concat elimination: producers write into the concatenated tensor. An input that is also read elsewhere, or
    //! a network input, is copied ("<tensor> copy").
    void buildConcat(const OnnxNode& node)
    {
        std::vector<std::string> copies;
        for (std::uint32_t input : activationInputs(node))
        {
            const OnnxNode* producer = mGraph.producerOf(input);
            if (producer == nullptr || consumers(input).size() > 1)
            {
                copies.push_back(mGraph.tensors.names[input]);
            }
        }
        PredictedLayer layer;
        layer.role = "eliminated";
        layer.kind = "NoOp";
        layer.name = node.name;
        layer.guess = "Concat elimination: the inputs are written in place";
        const std::uint32_t index = newLayer(std::move(layer));
        assign(index, node);
        for (const auto& tensor : copies)
        {
            PredictedLayer copy;
            copy.kind = "Reformat";
            copy.role = "concat-copy";
            copy.name = tensor + " copy";
            copy.guess = "the input is read elsewhere too, so TensorRT copies it into the concatenation";
            mCopies.push_back(std::move(copy));
        }
    }

    //! A Myelin region on the versions that make them (src/simulation/myelin_pass.cpp).
    void buildMyelin(const OnnxNode& seed)
    {
        GrownMyelinRegion region = mMyelin.grow(seed);
        if (region.members.empty())
        {
            return;
        }
        PredictedLayer layer;
        layer.kind = "Myelin";
        layer.role = "float-Myelin";
        layer.name = std::move(region.name);
        layer.guess = std::move(region.guess);
        layer.int8Input = region.int8Input;
        layer.int8Output = region.int8Output;
        const std::uint32_t index = newLayer(std::move(layer));
        for (std::uint32_t member : region.members)
        {
            mLayerOf[member] = index;
        }
        mLayerNodes[index] = std::move(region.members);
    }

    void buildSingle(const OnnxNode& node)
    {
        PredictedLayer layer;
        layer.role = "float-" + node.opType;
        layer.name = node.name;
        const std::string& op = node.opType;
        if (isPoolingOp(op) || isSpatialMean(mGraph, node))
        {
            layer.kind = "Pooling";
        }
        else if (op == "Softmax" || op == "LogSoftmax")
        {
            layer.kind = "SoftMax";
        }
        else if (isOneOfOps(op, {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2"}))
        {
            layer.kind = "Reduce";
        }
        else if (isOneOfOps(op, {"Resize", "Upsample"}))
        {
            layer.kind = "Resize";
        }
        else if (isOneOfOps(op, {"Slice", "Split"}))
        {
            layer.kind = "Slice";
        }
        else if (op == "Pad")
        {
            layer.kind = "Padding";
        }
        else if (op == "MatMul")
        {
            layer.kind = usesMyelinForGemm() ? "Myelin" : "MatrixMultiply";
            if (usesMyelinForGemm())
            {
                layer.name = "{ForeignNode[" + node.name + "]}";
            }
        }
        else if (isOneOfOps(op, {"Gather", "GatherElements", "GatherND"}))
        {
            layer.kind = "Gather";
        }
        else if (isOneOfOps(op, {"ArgMax", "ArgMin", "TopK"}))
        {
            layer.kind = "TopK";
        }
        else if (op == "Cast")
        {
            layer.kind = "Cast";
        }
        else if (op == "NonMaxSuppression")
        {
            layer.kind = "NMS";
        }
        else if (op == "BatchNormalization")
        {
            layer.kind = "Scale";
            layer.guess = "a BatchNormalization whose parameters are computed (not initializers) is not folded into "
                          "the conv: a Scale layer, with a PointWise layer for its variance";
        }
        else if (patterns::isOperatorFormatQuantized(node))
        {
            layer.kind = op;
            layer.guess = "TensorRT's ONNX parser has no importer for " + op +
                          " and the build fails here (quantized-op-not-importable); one layer is shown in its place";
        }
        else if (node.isCustomDomain())
        {
            layer.kind = "PluginV2";
            layer.guess = "a custom-domain op becomes a plugin layer when a plugin of that name is registered";
            // Q -> plugin -> DQ: the plugin takes and gives INT8 itself (TensorRT never fuses Q/DQ into a plugin,
            // but a plugin that declares INT8 formats reads a Quantize's output as it is).
            bool readsQuantized = false;
            for (const auto& input : node.inputs)
            {
                const OnnxNode* producer = input.empty() ? nullptr : mGraph.producer(input);
                readsQuantized = readsQuantized || (producer != nullptr && isQuantize(*producer));
            }
            bool writesQuantized = !node.outputs.empty();
            for (const auto& output : node.outputs)
            {
                const auto readers = patterns::consumersOf(mGraph, output);
                writesQuantized = writesQuantized && !readers.empty() &&
                                  std::all_of(readers.begin(), readers.end(),
                                              [](const OnnxNode* reader) { return isDequantize(*reader); });
            }
            layer.int8Input = readsQuantized;
            layer.int8Output = writesQuantized;
            if (readsQuantized || writesQuantized)
            {
                layer.guess += "; it reads or writes INT8 here (Q -> plugin -> DQ), which the plugin must support";
            }
        }
        else
        {
            layer.kind = op;
            layer.guess = "no documented TensorRT layer for " + op + ": one layer assumed";
        }
        const std::uint32_t index = newLayer(std::move(layer));
        assign(index, node);
        // SoftMax + TopK: one layer (ArgMax is a TopK with k = 1).
        if (op == "Softmax" || op == "LogSoftmax")
        {
            const OnnxNode* next = soleConsumer(firstOutput(node));
            if (next != nullptr && mLayerOf[next->index] == kNone && isOneOfOps(next->opType, {"ArgMax", "TopK"}))
            {
                assign(index, *next);
                mOut.layers[index].name += " + " + next->name;
                mOut.layers[index].kind = "LogSoftmaxTopK";
            }
        }
    }

    // ---- Q/DQ -----------------------------------------------------------------------------------------------

    //! The first node downstream of a weight's Q/DQ that is not a Q/DQ (the weighted op that folds it).
    const OnnxNode* weightConsumer(const OnnxNode& node) const
    {
        const OnnxNode* current = &node;
        for (int hop = 0; hop < 4; ++hop)
        {
            auto readers = consumers(firstOutput(*current));
            if (readers.empty())
            {
                return nullptr;
            }
            const OnnxNode* reader = &mGraph.nodes[readers[0]];
            if (!isQdq(*reader))
            {
                return reader;
            }
            current = reader;
        }
        return nullptr;
    }

    void placeQdqNodes()
    {
        for (const auto& predicted : mOut.qdq)
        {
            // A Q/DQ node a Myelin region took runs in the region's kernels (myelin_pass.cpp).
            if (predicted.nodeIndex >= mGraph.nodes.size() || mLayerOf[predicted.nodeIndex] != kNone)
            {
                continue;
            }
            const OnnxNode& node = mGraph.nodes[predicted.nodeIndex];
            std::uint32_t partner = predicted.partnerIndex != PredictedQdq::kNoNode ? predicted.partnerIndex : kNone;
            if (partner == kNone && !predicted.partner.empty())
            {
                partner = mGraph.nodeIndex(predicted.partner);
            }
            switch (predicted.fate)
            {
            case PredictedQdq::Fate::kFolded:
                if (const OnnxNode* consumer = weightConsumer(node); consumer && mLayerOf[consumer->index] != kNone)
                {
                    assign(mLayerOf[consumer->index], node);
                }
                break;
            case PredictedQdq::Fate::kFusedIntoConsumer:
            case PredictedQdq::Fate::kFusedIntoProducer:
                if (partner != kNone && partner < mLayerOf.size() && mLayerOf[partner] != kNone)
                {
                    assign(mLayerOf[partner], node);
                    if (predicted.fate == PredictedQdq::Fate::kFusedIntoProducer)
                    {
                        mOut.layers[mLayerOf[partner]].int8Output = true;
                    }
                    else
                    {
                        mOut.layers[mLayerOf[partner]].int8Input = true;
                    }
                }
                break;
            case PredictedQdq::Fate::kCancelled:
                // A duplicate Q merged into a standalone twin runs in the twin's layer; other cancelled pairs vanish.
                if (predicted.isQuantize && partner != kNone && partner < mLayerOf.size() &&
                    mQdqOf[partner] != nullptr && mQdqOf[partner]->isQuantize)
                {
                    mMergedInto.emplace_back(static_cast<std::uint32_t>(node.index), partner);
                }
                break;
            case PredictedQdq::Fate::kRequantize:
            {
                if (partner != kNone && partner < mLayerOf.size() && mLayerOf[partner] != kNone &&
                    mOut.layers[mLayerOf[partner]].role == "requantize")
                {
                    PredictedLayer& pair = mOut.layers[mLayerOf[partner]];
                    assign(mLayerOf[partner], node);
                    pair.name = predicted.isQuantize ? pair.name + " + " + node.name : node.name + " + " + pair.name;
                    break;
                }
                PredictedLayer layer;
                layer.kind = "Scale";
                layer.role = "requantize";
                layer.name = node.name;
                layer.int8Input = layer.int8Output = true;
                layer.guess = "TensorRT runs a requantize as a Scale or Reformat layer depending on the version";
                assign(newLayer(std::move(layer)), node);
                break;
            }
            case PredictedQdq::Fate::kStandalone:
            {
                PredictedLayer layer;
                layer.kind = "Reformat";
                layer.role = predicted.isQuantize ? "standalone-quantize" : "standalone-dequantize";
                layer.name = predicted.isQuantize ? quantizeLayerName(node) : node.name;
                layer.int8Input = !predicted.isQuantize;
                layer.int8Output = predicted.isQuantize;
                if (mOptions.trtMajor == 8 && mOptions.trtMinor < 4)
                {
                    layer.kind = "Scale";
                }
                assign(newLayer(std::move(layer)), node);
                break;
            }
            }
        }
        for (const auto& [node, twin] : mMergedInto)
        {
            if (mLayerOf[twin] != kNone)
            {
                assign(mLayerOf[twin], mGraph.nodes[node]);
            }
        }
        for (auto& copy : mCopies)
        {
            newLayer(std::move(copy));
        }
        mCopies.clear();
        mergeSiblingConvs();
        // Node lists in graph order (TensorRT's names follow it too).
        for (std::size_t i = 0; i < mOut.layers.size(); ++i)
        {
            auto& nodes = mLayerNodes[i];
            std::sort(nodes.begin(), nodes.end(),
                      [this](std::uint32_t a, std::uint32_t b) { return mPosition[a] < mPosition[b]; });
            nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
            PredictedLayer& layer = mOut.layers[i];
            layer.onnxNodes.clear();
            layer.onnxNodes.reserve(nodes.size());
            for (std::uint32_t node : nodes)
            {
                layer.onnxNodes.push_back(mGraph.nodes[node].name);
            }
            layer.nodeIndices = std::move(nodes);
        }
        // Layers in the model's order (Myelin regions were made first), those without nodes after them. The layers
        // are sorted by key and index, then moved once: a stable sort of the layers themselves moved each
        // PredictedLayer log(n) times and was 7% of `predict` on the 500,000-node bench model; most graphs are
        // already in order and skip the move.
        std::vector<std::pair<std::uint32_t, std::uint32_t>> order(mOut.layers.size());
        for (std::size_t i = 0; i < mOut.layers.size(); ++i)
        {
            // The layer's first node that is not a Q/DQ: a conv's weight quantizer often sits at the top of the
            // model's node list, long before the conv runs.
            const PredictedLayer& layer = mOut.layers[i];
            std::uint32_t key = layer.nodeIndices.empty() ? kNone : mPosition[layer.nodeIndices.front()];
            for (std::uint32_t node : layer.nodeIndices)
            {
                if (!isQdq(mGraph.nodes[node]))
                {
                    key = mPosition[node];
                    break;
                }
            }
            order[i] = {key, static_cast<std::uint32_t>(i)};
        }
        if (!std::is_sorted(order.begin(), order.end()))
        {
            std::sort(order.begin(), order.end());
            std::vector<PredictedLayer> sorted;
            sorted.reserve(mOut.layers.size());
            for (const auto& entry : order)
            {
                sorted.push_back(std::move(mOut.layers[entry.second]));
            }
            mOut.layers = std::move(sorted);
        }
        // Eliminated layers (Concat, an absorbed flatten) are dropped; their nodes are listed as eliminated. Layers
        // merged into a sibling are dropped too (their nodes run in the merged layer).
        if (std::none_of(mOut.layers.begin(), mOut.layers.end(),
                         [](const PredictedLayer& layer)
                         { return layer.role == "eliminated" || layer.role == "merged"; }))
        {
            return;
        }
        std::vector<PredictedLayer> kept;
        kept.reserve(mOut.layers.size());
        for (auto& layer : mOut.layers)
        {
            if (layer.role == "eliminated")
            {
                mOut.eliminated.insert(mOut.eliminated.end(), layer.onnxNodes.begin(), layer.onnxNodes.end());
                continue;
            }
            if (layer.role == "merged")
            {
                continue;
            }
            kept.push_back(std::move(layer));
        }
        mOut.layers = std::move(kept);
    }

    void finishPrecisions()
    {
        // The quantized type a layer reads or writes: that of its own Q/DQ nodes (activation ones first), else the
        // model's (its first Q/DQ that says). FP8 and INT4 models are named so, not INT8.
        std::string_view modelType;
        for (std::uint32_t node = 0; node < mGraph.nodes.size() && modelType.empty(); ++node)
        {
            modelType = isQdq(mGraph.nodes[node]) ? quantizedTypeOf(mGraph, node) : std::string_view();
        }
        if (modelType.empty())
        {
            modelType = "INT8";
        }
        for (auto& layer : mOut.layers)
        {
            std::string_view layerType;
            bool fromActivation = false;
            for (std::uint32_t node : layer.nodeIndices)
            {
                if (node >= mGraph.nodes.size() || !isQdq(mGraph.nodes[node]))
                {
                    continue;
                }
                const bool activation =
                    mQdqOf[node] == nullptr || mQdqOf[node]->fate != PredictedQdq::Fate::kFolded; // not a weight's
                const std::string_view type = quantizedTypeOf(mGraph, node);
                if (!type.empty() && (layerType.empty() || (activation && !fromActivation)))
                {
                    layerType = type;
                    fromActivation = activation;
                }
            }
            if (layerType.empty())
            {
                layerType = modelType;
            }
            if (layer.role == "float-MaxPool" || layer.role == "float-Resize" || layer.kind == "Slice" ||
                layer.kind == "Shuffle" || layer.kind == "NoOp")
            {
                // Data movement runs in the precision it is given: INT8 when a DQ was moved past it into a Q.
                bool int8 = false;
                for (std::uint32_t node : layer.nodeIndices)
                {
                    int8 = int8 || isQdq(mGraph.nodes[node]);
                }
                layer.int8Input = layer.int8Input || int8;
                layer.int8Output = layer.int8Output || int8;
            }
            if (layer.role.rfind("float-", 0) == 0 && layer.int8Input && layer.int8Output)
            {
                layer.role = "quantized-" + layer.role.substr(6);
            }
            layer.inputPrecision = precisionName(layer.int8Input, mOptions.fp16, layerType);
            layer.outputPrecision = precisionName(layer.int8Output, mOptions.fp16, layerType);
        }
    }

    //! Network inputs are FP32: a first layer that reads FP16 (or INT8 without its own Quantize) needs a reformat;
    //! likewise an FP16 layer writing a network output.
    void addIoReformats()
    {
        if (!mOptions.fp16)
        {
            return;
        }
        std::vector<PredictedLayer> added;
        for (const auto& input : mGraph.graphInputs)
        {
            const std::uint32_t id = mGraph.tensors.find(input);
            auto type = mGraph.tensorType(input);
            if (id == kNone || (type && *type != OnnxDataType::kFloat))
            {
                continue;
            }
            for (std::uint32_t reader : consumers(id))
            {
                if (isQdq(mGraph.nodes[reader]) || mLayerOf[reader] == kNone)
                {
                    continue;
                }
                PredictedLayer reformat;
                reformat.kind = "Reformat";
                reformat.role = "reformat";
                reformat.name = "Reformatting CopyNode for Network Input " + input;
                reformat.inputPrecision = "FP32";
                reformat.outputPrecision = "FP16";
                reformat.guess = "an FP32 network input read by an FP16 layer is converted; TensorRT may instead "
                                 "choose an FP32 kernel for that layer";
                added.push_back(std::move(reformat));
                break;
            }
        }
        for (const auto& output : mGraph.graphOutputs)
        {
            const OnnxNode* producer = producerOf(mGraph, output);
            auto type = mGraph.tensorType(output);
            if (producer == nullptr || isQdq(*producer) || (type && *type != OnnxDataType::kFloat) ||
                mLayerOf[producer->index] == kNone)
            {
                continue;
            }
            PredictedLayer reformat;
            reformat.kind = "Reformat";
            reformat.role = "reformat";
            reformat.name = "Reformatting CopyNode for Network Output " + output;
            reformat.inputPrecision = "FP16";
            reformat.outputPrecision = "FP32";
            reformat.guess = "an FP16 layer writing an FP32 network output is converted; TensorRT may instead "
                             "choose an FP32 kernel for that layer";
            added.push_back(std::move(reformat));
        }
        for (auto& layer : added)
        {
            mOut.layers.push_back(std::move(layer));
        }
    }

    const OnnxGraph& mGraph;
    const SimulationOptions& mOptions;
    Prediction& mOut;
    std::vector<std::uint32_t> mOrder;    //!< topological order of node indices
    std::vector<std::uint32_t> mPosition; //!< node -> position in mOrder
    std::vector<std::uint32_t> mLayerOf;  //!< node -> predicted layer, or kNone
    std::vector<std::vector<std::uint32_t>> mLayerNodes;
    std::vector<bool> mFolded;   //!< node runs at build time or vanishes
    std::vector<bool> mConstant; //!< tensor id -> known at build time
    std::vector<const PredictedQdq*> mQdqOf;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> mMergedInto;
    struct SiblingCandidate
    {
        std::uint32_t layer;
        std::uint32_t conv;
        std::string epilogue; //!< op types fused after the conv, in order
    };
    std::vector<SiblingCandidate> mSiblingCandidates; //!< conv layers a horizontal merge may join
    std::vector<PredictedLayer> mCopies;
    const OnnxNode* mPendingPad = nullptr;
    std::optional<TransformerParts> mTransformer; //!< given by the caller, else found in run()
    MyelinPass mMyelin{BuilderState{mGraph, mOptions, mPosition, mLayerOf, mFolded, mConstant, mQdqOf}};
};

} // namespace

void buildPredictedLayers(const OnnxGraph& graph, const SimulationOptions& options, Prediction& prediction)
{
    LayerBuilder(graph, options, prediction, std::nullopt).run();
}

void buildPredictedLayers(const OnnxGraph& graph, const SimulationOptions& options, Prediction& prediction,
                          TransformerParts transformer)
{
    LayerBuilder(graph, options, prediction, std::move(transformer)).run();
}

FirstStages runFirstStages(const OnnxGraph& graph, const SimulationOptions& options)
{
    FirstStages stages;
    // One scan for both questions (each scan of the 500,000-node bench CNN's op types cost about 1% of its predict).
    bool softmax = false;
    for (const OnnxNode& node : graph.nodes)
    {
        softmax = softmax || node.opType == "Softmax";
        stages.transformer.layerNormOrGelu = stages.transformer.layerNormOrGelu || isLayerNormOrGelu(graph, node);
    }
    // An attention block needs a Softmax. A second thread pays only on a large graph: on the 500,000-node bench
    // transformer the search took about 7% of predict, which now overlaps the Q/DQ fates.
    constexpr std::size_t kSearchBesideFrom = 20000;
    if (!softmax || graph.nodes.size() < kSearchBesideFrom)
    {
        stages.prediction = predictQdqFates(graph, options);
        if (softmax)
        {
            stages.transformer.attention = findAttentionBlocks(graph);
        }
        return stages;
    }
    std::exception_ptr searchError;
    {
        std::jthread search(
            [&]
            {
                try
                {
                    stages.transformer.attention = findAttentionBlocks(graph);
                }
                catch (...)
                {
                    searchError = std::current_exception();
                }
            });
        stages.prediction = predictQdqFates(graph, options);
    } // joined here, also when predictQdqFates throws
    if (searchError)
    {
        std::rethrow_exception(searchError);
    }
    return stages;
}

} // namespace qdq::simulation
