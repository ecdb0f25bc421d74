// The layers of weighted ops (Conv, ConvTranspose, Gemm, MatMul with constant weights): the conv with its
// epilogue (BatchNormalization, bias, scale, activations, SiLU, the residual Add, an INT8 MaxPool), as the fusions
// of reference section 1.8 describe, and the names TensorRT gives them.

#include "src/simulation/layer_formation.h"
#include "src/simulation/op_classes.h"

#include "qdq/patterns.h"

namespace qdq::simulation
{

using namespace patterns;

namespace
{

//! Epilogue ops that TensorRT names plainly inside a conv layer (others appear as PWN(...)). A Clip is PWN(...) in
//! every real engine here: `features.1.conv.0.0.weight + QuantizeLinear_25 + Conv_29 + PWN(Clip_33)` (TensorRT 8.2
//! and 8.4, ../shared/realdata/trex-tests-mobilenet-qat*), `Pad_6 + ... + Conv_13 + PWN(Clip_14)` (8.5.1,
//! issue-trt-2527-qdq-trt851), `Conv_0 + PWN(Clip_3)` (8.4 implicit INT8, blogdoc-fpn-mbv2-int8-calib-trt84).
bool isPlainEpilogueName(std::string_view op)
{
    return isOneOfOps(op, {"Relu", "BatchNormalization", "Add", "Sub", "Mul", "Div"});
}

//! Versions whose names of a quantized conv with a folded BatchNormalization were seen: 8.0, 8.2, 8.4, 8.5.
bool foldedScaleNameSeen(const SimulationState& s)
{
    return s.options.trtMajor == 8 && (s.options.trtMinor == 0 || s.options.trtMinor == 2 || s.options.trtMinor >= 4) &&
           s.options.trtMinor <= 5;
}

//! Versions whose name of the Relu after that BatchNormalization was seen: 8.0 (named), 8.4 and 8.5 (left out).
bool scaleReluNameSeen(const SimulationState& s)
{
    return s.options.trtMajor == 8 && (s.options.trtMinor == 0 || s.options.trtMinor == 4 || s.options.trtMinor == 5);
}

//! Whether that Relu leaves the name: 8.4 on (and an unknown version), not 8.0 to 8.3.
bool scaleReluLeavesName(const SimulationState& s)
{
    return s.options.trtMajor != 8 || s.options.trtMinor >= 4;
}

//! Whether the name of a conv layer lists epilogue node next, which the layer takes after last; afterUnnamedScale
//! when last is a BatchNormalization the name leaves out. guess says why when the version's names are inferred.
bool namedInConvLayer(const SimulationState& s, const OnnxNode& weighted, bool quantized, const OnnxNode& last,
                      const OnnxNode& next, bool afterUnnamedScale, std::string& guess)
{
    if (!quantized || weighted.opType != "Conv")
    {
        return true;
    }
    if (next.opType == "BatchNormalization" && &last == &weighted)
    {
        if (!foldedScaleNameSeen(s))
        {
            guess = "name inferred: TensorRT 8.0 to 8.5 leave a BatchNormalization folded into a quantized conv out "
                    "of the layer's name (QConvScaleFusion), 8.4 and 8.5 also a Relu right after it";
        }
        return false;
    }
    if (next.opType == "Relu" && afterUnnamedScale)
    {
        if (!scaleReluNameSeen(s))
        {
            guess = "name inferred: TensorRT 8.0 names a Relu right after a BatchNormalization folded into a "
                    "quantized conv, 8.4 and 8.5 leave both out of the layer's name";
        }
        return !scaleReluLeavesName(s);
    }
    return true;
}

//! Which Conv takes the residual Add: among the Add's inputs written directly (no Q/DQ) by a conv chain, the
//! conv that comes last in topological order (TensorRT fuses the Add into the conv that completes it).
const OnnxNode* residualOwner(const SimulationState& s, const OnnxNode& add)
{
    const OnnxNode* owner = nullptr;
    for (std::uint32_t input : s.activationInputs(add))
    {
        const OnnxNode* producer = s.graph.producerOf(input);
        std::uint32_t tensor = input;
        for (int hop = 0; producer != nullptr && hop < 6; ++hop)
        {
            if (s.soleConsumer(tensor) == nullptr)
            {
                producer = nullptr;
                break;
            }
            if (producer->opType == "Conv" || producer->opType == "ConvTranspose")
            {
                break;
            }
            const bool epilogue = (producer->opType == "BatchNormalization" && s.batchNormFoldable(*producer)) ||
                                  (isActivation(producer->opType) && producer->opType != "PRelu") ||
                                  (isPointwiseOp(producer->opType) && s.activationInputs(*producer).size() == 1);
            if (!epilogue)
            {
                producer = nullptr;
                break;
            }
            tensor = s.activationInputs(*producer).empty() ? kNone : s.activationInputs(*producer)[0];
            producer = tensor == kNone ? nullptr : s.graph.producerOf(tensor);
        }
        if (producer != nullptr && (producer->opType == "Conv" || producer->opType == "ConvTranspose") &&
            (owner == nullptr || s.position[producer->index] > s.position[owner->index]))
        {
            owner = producer;
        }
    }
    return owner;
}

//! The gate and Mul of a SiLU or HardSwish reading node's output (x * gate(x), patterns::isSelfGate), when nothing
//! else reads x or the gate and neither has a layer yet; {nullptr, nullptr} otherwise.
std::pair<const OnnxNode*, const OnnxNode*> siluAfter(const SimulationState& s, const OnnxNode& node)
{
    const std::uint32_t x = s.firstOutput(node);
    if (x == kNone || s.isNetworkOutput(x))
    {
        return {nullptr, nullptr};
    }
    auto readers = s.consumers(x);
    if (readers.size() != 2)
    {
        return {nullptr, nullptr};
    }
    const OnnxNode* sigmoid = &s.graph.nodes[readers[0]];
    const OnnxNode* mul = &s.graph.nodes[readers[1]];
    if (!patterns::isSelfGate(sigmoid->opType))
    {
        std::swap(sigmoid, mul);
    }
    if (!patterns::isSelfGate(sigmoid->opType) || mul->opType != "Mul" || s.layerOf[sigmoid->index] != kNone ||
        s.layerOf[mul->index] != kNone || s.soleConsumer(s.firstOutput(*sigmoid)) != mul)
    {
        return {nullptr, nullptr};
    }
    const auto inputs = s.graph.inputIds(mul->index);
    if (inputs.size() != 2 || !((inputs[0] == x && inputs[1] == s.firstOutput(*sigmoid)) ||
                                (inputs[1] == x && inputs[0] == s.firstOutput(*sigmoid))))
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
void nameWeights(const SimulationState& s, const OnnxNode& weighted, WeightedLayerParts& parts)
{
    const OnnxNode* dq = producerOf(s.graph, weighted.inputs[1]);
    const OnnxNode* q = dq != nullptr && !dq->inputs.empty() ? producerOf(s.graph, dq->inputs[0]) : nullptr;
    if (q != nullptr && isQuantize(*q) && !q->inputs.empty())
    {
        parts.nameParts.emplace_back(q->inputs[0], false);
        if (s.namesQuantizeScaleNodes())
        {
            parts.weightQuantizer = s.quantizeLayerName(*q);
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

//! Whether a Q fused into the conv follows this MaxPool (the pool then runs in the conv's INT8).
bool outputQuantizedAfter(const SimulationState& s, const OnnxNode& pool)
{
    const std::uint32_t output = s.firstOutput(pool);
    auto readers = s.consumers(output);
    if (readers.empty())
    {
        return false;
    }
    for (std::uint32_t reader : readers)
    {
        const PredictedQdq* predicted = s.qdqOf[reader];
        // A Q twin merged into a fused Q (same tensor, same scale) counts as that Q.
        if (predicted != nullptr && predicted->fate == PredictedQdq::Fate::kCancelled &&
            predicted->partnerIndex < s.qdqOf.size())
        {
            predicted = s.qdqOf[predicted->partnerIndex];
        }
        if (predicted == nullptr || !predicted->isQuantize || predicted->fate != PredictedQdq::Fate::kFusedIntoProducer)
        {
            return false;
        }
    }
    return true;
}

//! Whether the weighted layer takes next, its sole reader, into its epilogue (and so whether the epilogue now has
//! its residual Add or pool).
bool takesIntoEpilogue(const SimulationState& s, const OnnxNode& weighted, const OnnxNode& next,
                       WeightedLayerParts& parts)
{
    const bool isConv = weighted.opType == "Conv" || weighted.opType == "ConvTranspose";
    const std::string& op = next.opType;
    const auto inputs = s.activationInputs(next);
    if (op == "BatchNormalization")
    {
        return !parts.residualTaken && s.batchNormFoldable(next);
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
        residualOwner(s, next) == &weighted)
    {
        parts.residualTaken = true;
        return true;
    }
    if (isConv && op == "MaxPool" && !parts.pooled && !parts.residualTaken && outputQuantizedAfter(s, next))
    {
        parts.pooled = true; // Conv + activation + MaxPool, both in INT8
        return true;
    }
    return false;
}

//! Takes the epilogue after the weighted node into layer index: BatchNormalization, bias, scale, activations, a
//! SiLU, the residual Add and the activation after it, a MaxPool in INT8.
void takeEpilogue(SimulationState& s, const OnnxNode& weighted, bool quantized, std::uint32_t index,
                  WeightedLayerParts& parts)
{
    const bool isConv = weighted.opType == "Conv" || weighted.opType == "ConvTranspose";
    const OnnxNode* last = &weighted;
    for (int step = 0; step < 16; ++step)
    {
        if (const auto silu = siluAfter(s, *last); silu.first != nullptr && isConv && parts.silu.empty())
        {
            // A gate (Sigmoid or HardSigmoid) and Mul(x, gate(x)) run as the conv's generic activation:
            // `conv + PWN(Sigmoid, Mul)`.
            // A residual Add after it stays a PointWise layer of its own (reference R14).
            s.assign(index, *silu.first);
            s.assign(index, *silu.second);
            parts.silu = silu.first->name + ", " + silu.second->name;
            if (weighted.intAttribute("group").value_or(1) > 1)
            {
                // Depthwise (grouped) conv + SiLU/HardSwish: NVIDIA/TensorRT#3205 saw them unfused (the depthwise
                // kernel chains no pointwise epilogue), #3385 fused on 8.5.2 (docs/simulator.md).
                parts.nameGuess = "a grouped (depthwise) conv with a SiLU or HardSwish is fused in some builds and not "
                                  "in others (NVIDIA/TensorRT#3205, #3385)";
            }
            parts.nameParts.emplace_back(parts.silu, true);
            last = silu.second;
            parts.residualTaken = true;
            parts.unnamedScale = false;
            continue;
        }
        const OnnxNode* next = s.soleConsumer(s.firstOutput(*last));
        if (next == nullptr || s.layerOf[next->index] != kNone || isQdq(*next) ||
            !takesIntoEpilogue(s, weighted, *next, parts))
        {
            break;
        }
        s.assign(index, *next);
        const bool named = namedInConvLayer(s, weighted, quantized, *last, *next, parts.unnamedScale, parts.nameGuess);
        parts.unnamedScale = !named && next->opType == "BatchNormalization";
        if (named)
        {
            const bool plain = isPlainEpilogueName(next->opType) || next->opType == "MaxPool";
            parts.nameParts.emplace_back(next->name, !plain);
        }
        last = next;
    }
}

//! TensorRT 10 hands an unquantized Gemm/MatMul to Myelin; the parser's bias add and a following activation form
//! a PointWise layer beside it.
void buildMyelinGemm(SimulationState& s, const OnnxNode& weighted)
{
    PredictedLayer gemm;
    gemm.kind = "Myelin";
    gemm.role = "float-" + weighted.opType;
    gemm.name = "{ForeignNode[" + weighted.name + "]}";
    gemm.guess = s.options.trtMajor == 0 ? "TensorRT version unknown: 10.x runs an unquantized Gemm/MatMul in Myelin, "
                                           "8.x as a convolution"
                                         : "";
    const std::uint32_t index = s.newLayer(std::move(gemm));
    if (s.pendingPad != nullptr)
    {
        s.pendingPad = nullptr;
    }
    s.assign(index, weighted);
    const bool hasBias = weighted.opType == "Gemm" && weighted.inputs.size() >= 3 && !weighted.inputs[2].empty();
    const OnnxNode* next = s.soleConsumer(s.firstOutput(weighted));
    bool biasAdd = false;
    if (!hasBias && next != nullptr && next->opType == "Add" && s.activationInputs(*next).size() == 1 &&
        s.layerOf[next->index] == kNone)
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
    const std::uint32_t pw = s.newLayer(std::move(pointwise));
    std::vector<std::string> parts;
    const OnnxNode* last = &weighted;
    if (hasBias)
    {
        s.out.layers[pw].partOf.push_back(weighted.name);
        parts.push_back("bias of " + weighted.name);
    }
    else
    {
        s.assign(pw, *next);
        parts.push_back(next->name);
        last = next;
    }
    extendPointwise(s, pw, last, parts);
    s.out.layers[pw].name = pwnName(parts);
    s.out.layers[pw].guess = "the parser splits the bias of " + weighted.name + " into an element-wise layer";
}

} // namespace

void buildWeighted(SimulationState& s, const OnnxNode& weighted)
{
    const bool quantized = weighted.inputs.size() >= 2 && feedingDequantize(s.graph, weighted.inputs[0]) != nullptr;
    const bool isConv = weighted.opType == "Conv" || weighted.opType == "ConvTranspose";
    const bool fullyConnected = weighted.opType == "Gemm" || weighted.opType == "MatMul";
    PredictedLayer layer;
    layer.role = (quantized ? "quantized-" : "float-") + weighted.opType;
    WeightedLayerParts parts;
    if (quantized)
    {
        nameWeights(s, weighted, parts);
    }
    // Padding + Convolution: a Pad read only by the conv becomes part of it.
    if (isConv && !weighted.inputs.empty())
    {
        const OnnxNode* pad = producerOf(s.graph, weighted.inputs[0]);
        if (pad != nullptr && s.layerOf[pad->index] == kNone && s.foldsIntoConv(*pad))
        {
            s.pendingPad = pad;
        }
    }

    if (fullyConnected && !quantized && s.usesMyelinForGemm())
    {
        buildMyelinGemm(s, weighted);
        return;
    }

    const std::uint32_t index = s.newLayer(std::move(layer));
    if (s.pendingPad != nullptr)
    {
        s.assign(index, *s.pendingPad);
        // The Pad leads the name: "Pad_6 + <weights> + QuantizeLinear_9 + Conv_13" (NVIDIA/TensorRT#2527).
        parts.nameParts.emplace(parts.nameParts.begin(), s.pendingPad->name, false);
        s.pendingPad = nullptr;
    }
    s.assign(index, weighted);
    parts.nameParts.emplace_back(weighted.name, false);
    takeEpilogue(s, weighted, quantized, index, parts);

    PredictedLayer& built = s.out.layers[index];
    built.kind = weighted.opType == "ConvTranspose" ? "CaskDeconvolution"
                 : parts.pooled                     ? (s.options.trtMajor >= 10 ? "CaskConvActPool" : "ConvActPool")
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
        for (std::uint32_t node : s.layerNodes[index])
        {
            if (node != weighted.index && !isQdq(s.graph.nodes[node]))
            {
                epilogue += s.graph.nodes[node].opType + ",";
            }
        }
        s.siblingCandidates.push_back({index, static_cast<std::uint32_t>(weighted.index), std::move(epilogue)});
    }
}

} // namespace qdq::simulation
