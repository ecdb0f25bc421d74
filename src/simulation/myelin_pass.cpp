// The engine simulator's Myelin pass (myelin_pass.h).
//
// What TensorRT hands to Myelin, and the evidence:
//  - Attention, LayerNorm, GELU and the MatMul chains of transformer blocks: TensorRT's docs,
//    ../shared/docs/tensorrt-10-11.md section 4; a Myelin region is named {ForeignNode[first...last]} (the TensorRT
//    8.4 YOLOv8 log in ../shared/realdata/blogdoc-yolov8-qdq-orin-trt8412: "MYELIN:
//    {ForeignNode[/model/taskhead22/Constant_12_output_0.../model/taskhead22/Unsqueeze_6]}").
//  - TensorRT 10 runs Q/DQ inside a region as part of its kernels and runs a MatMul whose inputs both come from a
//    DequantizeLinear in the quantized type: ../shared/realdata/ivit-simple-mlp-qdq-trt10-myelin, a 10.x engine, lists
//    the kgen kernel "__myl_MulMinMaxRounCast" for /qact_input/QuantizeLinear, the gemm "/fc1/Gemm_myl0_2" with an
//    i8i8 tactic whose Metadata holds /fc1/Gemm, both its DequantizeLinear nodes and the QuantizeLinear after it, and
//    "/fc2/Gemm_myl0_4", whose input is not a DequantizeLinear's output, with an f32 tactic.
//  - A whole transformer body as one region: NVIDIA/TensorRT#3186 (FasterViT, 8.6: "the last two stages of the network
//    are fused into a single Myelin layer"); how far a region reaches is TensorRT's choice, and each region says so.
//  - TensorRT 8.x Myelin had no INT8 path: implicit INT8 ran a transformer body in FP16 (NVIDIA/TensorRT#3186, read in
//    ../shared/docs/tensorrt-10-11.md section 4); 8.x regions here stop at Q/DQ nodes as before.
#include "src/simulation/myelin_pass.h"

#include "src/simulation/op_classes.h"

#include "qdq/patterns.h"

#include <algorithm>

namespace qdq::simulation
{

using namespace patterns;

namespace
{

constexpr std::uint32_t kNone = 0xFFFFFFFFu;

//! ONNX ops that make TensorRT hand their region to Myelin on the versions that make Myelin regions: attention,
//! LayerNorm and GELU blocks, and the gather/top-k/index arithmetic of detection heads (the TensorRT 8.5 YOLO engine
//! in ../shared/realdata/trex-notebooks-yolo-orin-trt852 runs its whole post-processing as two Myelin layers).
bool isMyelinSeed(std::string_view op)
{
    return isOneOfOps(op, {"LayerNormalization", "Softmax", "ReduceMean", "Erf", "Gelu", "Einsum", "Gather",
                           "GatherElements", "GatherND", "TopK", "Expand", "Tile", "Where", "ScatterND", "NonZero",
                           "Range", "CumSum"});
}

//! Ops a Myelin region grows over from its seed.
bool isMyelinMember(std::string_view op)
{
    return isMyelinSeed(op) || isPointwiseOp(op) || isShuffleOp(op) ||
           isOneOfOps(op, {"MatMul", "ReduceSum", "ReduceMax", "ReduceMin", "Slice", "Split", "Concat", "Cast", "Shape",
                           "ConstantOfShape", "ArgMax", "ArgMin"});
}

bool versionCompilesTransformers(const SimulationOptions& options)
{
    return options.trtMajor == 0 || options.trtMajor >= 10;
}

constexpr std::string_view kInsideRegionPrefix = "inside the Myelin region with ";
constexpr std::string_view kInsideRegionSuffix =
    ": TensorRT 10 runs the Q/DQ of a Myelin region within the region's kernels (kgen kernels such as "
    "__myl_MulMinMaxRounCast for a QuantizeLinear in ../shared/realdata/ivit-simple-mlp-qdq-trt10-myelin), not as a "
    "layer of its own";

} // namespace

//! The ops of a transformer block that make TensorRT 10 compile it with Myelin: LayerNorm and GELU; attention
//! blocks are found by findAttentionBlocks.
bool isLayerNormOrGelu(const OnnxGraph& graph, const OnnxNode& node)
{
    return node.opType == "LayerNormalization" || node.opType == "Erf" || node.opType == "Gelu" ||
           (node.opType == "ReduceMean" && isNormalizationMean(graph, node));
}

bool hasLayerNormOrGelu(const OnnxGraph& graph)
{
    return std::any_of(graph.nodes.begin(), graph.nodes.end(),
                       [&](const OnnxNode& node) { return isLayerNormOrGelu(graph, node); });
}

bool compilesTransformerWithMyelin(const TransformerParts& parts, const SimulationOptions& options)
{
    return versionCompilesTransformers(options) && (!parts.attention.empty() || parts.layerNormOrGelu);
}

MyelinPass::MyelinPass(const BuilderState& state) : mState(state) {}

void MyelinPass::prepare(TransformerParts parts)
{
    const OnnxGraph& graph = mState.graph;
    mAttention = std::move(parts.attention);
    mAttentionSoftmax.assign(graph.nodes.size(), false);
    for (const auto& block : mAttention)
    {
        mAttentionSoftmax[block.softmax] = true;
    }
    mTransformer = versionCompilesTransformers(mState.options) && (!mAttention.empty() || parts.layerNormOrGelu);
}

bool MyelinPass::makesRegions() const
{
    const SimulationOptions& options = mState.options;
    return options.trtMajor == 0 || options.trtMajor >= 10 || (options.trtMajor == 8 && options.trtMinor >= 5);
}

bool MyelinPass::usesMyelinForGemm() const
{
    return mState.options.trtMajor == 0 || mState.options.trtMajor >= 10;
}

//! A Myelin seed (isMyelinSeed), except a ReduceMean that computes no normalization statistic: LayerNorm and
//! GroupNorm written out seed Myelin, a mean over a CNN's spatial axes (torch's newer exporter writes
//! adaptive_avg_pool2d and x.mean((2, 3)) as ReduceMean) is one layer, like a GlobalAveragePool.
bool MyelinPass::seeds(const OnnxNode& node) const
{
    return isMyelinSeed(node.opType) && (node.opType != "ReduceMean" || isNormalizationMean(mState.graph, node));
}

bool MyelinPass::seedsFirstPass(const OnnxNode& node) const
{
    // A Softmax outside an attention block (a classifier's, SoftMax + TopK) stays a SoftMax layer.
    const bool attentionSoftmax = mTransformer && node.opType == "Softmax" && mAttentionSoftmax[node.index];
    return (seedsLater(node) || attentionSoftmax || takesGemm(node)) && eligible(node);
}

bool MyelinPass::seedsLater(const OnnxNode& node) const
{
    return seeds(node) && node.opType != "Softmax";
}

bool MyelinPass::takesGemm(const OnnxNode& node) const
{
    const SimulationOptions& options = mState.options;
    return options.trtMajor >= 10 && (options.trtMajor > 10 || options.trtMinor >= 15) &&
           (node.opType == "Gemm" || node.opType == "MatMul") && !node.inputs.empty() &&
           feedingDequantize(mState.graph, node.inputs[0]) == nullptr;
}

//! A node next to a Q/DQ node: it belongs to the quantized part of the network, which Myelin regions leave before
//! TensorRT 10 (and, from 10 on, outside transformer graphs).
bool MyelinPass::isQuantizedRegionEdge(const OnnxNode& node) const
{
    const OnnxGraph& graph = mState.graph;
    for (std::uint32_t input : graph.inputIds(node.index))
    {
        const OnnxNode* producer = input == kNone ? nullptr : graph.producerOf(input);
        if (producer != nullptr && isQdq(*producer) && !mState.folded[producer->index])
        {
            return true;
        }
    }
    for (std::uint32_t output : graph.outputIds(node.index))
    {
        for (std::uint32_t consumer : graph.consumersOf(output))
        {
            if (isQdq(graph.nodes[consumer]))
            {
                return true;
            }
        }
    }
    return false;
}

//! A Q/DQ node a transformer region runs in its kernels: an activation's, or one on a value known at build time that
//! the fates pass left standalone (torchvision's ViT quantizes the attention scale computed from the input's shape); a
//! weight's folds into its MatMul, and one the fates pass gave to a convolution stays with it (a ViT's patch
//! embedding).
bool MyelinPass::qdqEligible(const OnnxNode& node) const
{
    const PredictedQdq* fate = mState.qdqOf[node.index];
    if (fate == nullptr)
    {
        return true;
    }
    if (fate->fate == PredictedQdq::Fate::kFolded)
    {
        return false;
    }
    if ((fate->fate == PredictedQdq::Fate::kFusedIntoConsumer ||
         fate->fate == PredictedQdq::Fate::kFusedIntoProducer) &&
        fate->partnerIndex < mState.graph.nodes.size())
    {
        const std::string& partner = mState.graph.nodes[fate->partnerIndex].opType;
        return partner != "Conv" && partner != "ConvTranspose";
    }
    return true;
}

bool MyelinPass::eligible(const OnnxNode& node) const
{
    if (mState.layerOf[node.index] != kNoLayer || mState.folded[node.index])
    {
        return false;
    }
    if (mTransformer)
    {
        if (isQdq(node))
        {
            return qdqEligible(node);
        }
        // Quantized or not, the MatMuls and Gemms of a transformer body run in its region.
        return node.opType == "MatMul" || node.opType == "Gemm" || node.opType == "Softmax" ||
               isMyelinMember(node.opType);
    }
    if (isQdq(node) || isQuantizedRegionEdge(node))
    {
        return false;
    }
    if (isWeighted(mState.graph, node))
    {
        return takesGemm(node);
    }
    return isMyelinMember(node.opType);
}

GrownMyelinRegion MyelinPass::grow(const OnnxNode& seed)
{
    const OnnxGraph& graph = mState.graph;
    // Grow over eligible neighbours, marking members without assigning them yet.
    std::vector<std::uint32_t> stack = {static_cast<std::uint32_t>(seed.index)};
    std::vector<std::uint32_t> members;
    mRegionMark.resize(graph.nodes.size(), 0);
    const std::uint32_t mark = ++mRegionCounter * 2; // mark: member; mark + 1: outside, downstream of the region
    while (!stack.empty() && members.size() < 1000000)
    {
        const std::uint32_t current = stack.back();
        stack.pop_back();
        if (mRegionMark[current] == mark || !eligible(graph.nodes[current]))
        {
            continue;
        }
        mRegionMark[current] = mark;
        members.push_back(current);
        for (std::uint32_t input : graph.inputIds(current))
        {
            const OnnxNode* producer = input == kNone ? nullptr : graph.producerOf(input);
            if (producer != nullptr)
            {
                stack.push_back(static_cast<std::uint32_t>(producer->index));
            }
        }
        for (std::uint32_t output : graph.outputIds(current))
        {
            for (std::uint32_t consumer : graph.consumersOf(output))
            {
                stack.push_back(consumer);
            }
        }
    }
    keepConvex(members, mark);
    GrownMyelinRegion region;
    if (members.empty())
    {
        return region;
    }
    std::sort(members.begin(), members.end(),
              [this](std::uint32_t a, std::uint32_t b) { return mState.position[a] < mState.position[b]; });
    region.members = std::move(members);
    describe(region);
    return region;
}

//! A region is convex: a member that reads, through a node outside the region, what the region wrote (the head's
//! outputs go through NMS and come back) starts a region of its own, with everything after it.
void MyelinPass::keepConvex(std::vector<std::uint32_t>& members, std::uint32_t mark)
{
    const OnnxGraph& graph = mState.graph;
    std::vector<std::uint32_t> frontier;
    const auto pushConsumers = [&](std::uint32_t node)
    {
        for (std::uint32_t output : graph.outputIds(node))
        {
            for (std::uint32_t consumer : graph.consumersOf(output))
            {
                frontier.push_back(consumer);
            }
        }
    };
    for (std::uint32_t member : members)
    {
        pushConsumers(member);
    }
    std::vector<std::uint32_t> reentered;
    while (!frontier.empty())
    {
        const std::uint32_t node = frontier.back();
        frontier.pop_back();
        if (mRegionMark[node] == mark)
        {
            // Reached a member from outside: it and what follows it inside leave this region.
            bool fromOutside = false;
            for (std::uint32_t input : graph.inputIds(node))
            {
                const OnnxNode* producer = input == kNone ? nullptr : graph.producerOf(input);
                fromOutside = fromOutside || (producer != nullptr && mRegionMark[producer->index] == mark + 1);
            }
            if (fromOutside)
            {
                reentered.push_back(node);
            }
            continue;
        }
        // A node that runs at build time (a Shape of a member, the scale computed from it) is no path at run time.
        if (mRegionMark[node] == mark + 1 || mState.folded[node])
        {
            continue;
        }
        mRegionMark[node] = mark + 1;
        pushConsumers(node);
    }
    for (std::size_t i = 0; i < reentered.size(); ++i)
    {
        const std::uint32_t node = reentered[i];
        if (mRegionMark[node] != mark)
        {
            continue;
        }
        mRegionMark[node] = kCutFromRegion;
        for (std::uint32_t output : graph.outputIds(node))
        {
            for (std::uint32_t consumer : graph.consumersOf(output))
            {
                if (mRegionMark[consumer] == mark)
                {
                    reentered.push_back(consumer);
                }
            }
        }
    }
    // Members that only feed the part cut off go with it: the region ends where its outside readers are.
    for (bool moved = !reentered.empty(); moved;)
    {
        moved = false;
        for (std::uint32_t member : members)
        {
            if (mRegionMark[member] != mark)
            {
                continue;
            }
            bool onlyCut = true;
            bool anyReader = false;
            for (std::uint32_t output : graph.outputIds(member))
            {
                onlyCut = onlyCut && !isGraphOutput(graph, graph.tensors.names[output]);
                for (std::uint32_t consumer : graph.consumersOf(output))
                {
                    anyReader = true;
                    onlyCut = onlyCut && mRegionMark[consumer] == kCutFromRegion;
                }
            }
            if (anyReader && onlyCut)
            {
                mRegionMark[member] = kCutFromRegion;
                moved = true;
            }
        }
    }
    members.erase(
        std::remove_if(members.begin(), members.end(), [&](std::uint32_t node) { return mRegionMark[node] != mark; }),
        members.end());
}

//! The region's name, its guess, and whether it reads or writes a quantized tensor across its edge.
void MyelinPass::describe(GrownMyelinRegion& region) const
{
    const OnnxGraph& graph = mState.graph;
    const std::string& first = graph.nodes[region.members.front()].name;
    const std::string& last = graph.nodes[region.members.back()].name;
    region.name =
        region.members.size() == 1 ? "{ForeignNode[" + first + "]}" : "{ForeignNode[" + first + "..." + last + "]}";
    if (!mTransformer)
    {
        region.guess = "Myelin region (attention, LayerNorm, GELU, detection-head arithmetic): its extent is "
                       "TensorRT's choice";
        return;
    }
    region.guess =
        "Myelin region of a transformer body: TensorRT 10 compiles attention, LayerNorm, GELU and the MatMuls "
        "between them with Myelin and runs their Q/DQ inside the region; how far one region reaches is "
        "TensorRT's choice (one region here)";
    if (mState.options.trtMajor == 0)
    {
        region.guess += "; TensorRT version unknown: taken as 10.x";
    }
    // Members carry the region's mark (grow just made it): a DequantizeLinear reading from outside, a QuantizeLinear
    // read outside.
    const std::uint32_t mark = mRegionCounter * 2;
    const auto isMember = [&](std::uint32_t node) { return mRegionMark[node] == mark; };
    for (std::uint32_t member : region.members)
    {
        const OnnxNode& node = graph.nodes[member];
        if (isDequantize(node))
        {
            const auto inputs = graph.inputIds(member);
            const OnnxNode* producer = inputs.empty() || inputs[0] == kNone ? nullptr : graph.producerOf(inputs[0]);
            region.int8Input = region.int8Input || producer == nullptr || !isMember(producer->index);
        }
        else if (isQuantize(node))
        {
            for (std::uint32_t output : graph.outputIds(member))
            {
                for (std::uint32_t consumer : graph.consumersOf(output))
                {
                    region.int8Output = region.int8Output || !isMember(consumer);
                }
            }
        }
    }
}

std::string MyelinPass::attentionReason(const AttentionBlock& block) const
{
    const SimulationOptions& options = mState.options;
    std::string reason = describeAttention(mState.graph, block);
    if (options.trtMajor == 8)
    {
        reason += "; TensorRT 8.x: the \"Fused Attention\" page describes TensorRT 10, and 8.x Myelin had no INT8 path "
                  "(implicit INT8 ran a transformer body in FP16, NVIDIA/TensorRT#3186); no fused attention predicted "
                  "(guess)";
    }
    else if (options.trtMajor == 0)
    {
        reason += "; TensorRT version unknown: taken as 10.x";
    }
    return reason;
}

void MyelinPass::reportAttention(Prediction& prediction, const std::vector<std::uint32_t>& layerOf) const
{
    const OnnxGraph& graph = mState.graph;
    const auto inMyelin = [&](std::uint32_t node)
    { return node < layerOf.size() && layerOf[node] != kNoLayer && prediction.layers[layerOf[node]].kind == "Myelin"; };
    for (const auto& block : mAttention)
    {
        PredictedAttention attention;
        attention.scoresMatMul = graph.nodes[block.scoresMatMul].name;
        attention.softmax = graph.nodes[block.softmax].name;
        attention.contextMatMul = graph.nodes[block.contextMatMul].name;
        attention.quantized = block.quantized;
        const bool oneRegion = inMyelin(block.scoresMatMul) && layerOf[block.scoresMatMul] == layerOf[block.softmax] &&
                               layerOf[block.softmax] == layerOf[block.contextMatMul];
        attention.fused = block.fuses() && oneRegion && mTransformer;
        attention.reason = attentionReason(block);
        for (const auto& blocker : block.blockers)
        {
            attention.notFusedBecause.push_back(blocker.reason);
        }
        if (block.fuses() && !attention.fused)
        {
            // The block meets the documented conditions; what keeps it from fusing is the engine around it, and the
            // reason must say so instead of ending on "fuses" (the issue "One model of TensorRT", contradiction 6).
            attention.notFusedBecause.push_back(
                !mTransformer ? "this TensorRT version compiles no transformer body with Myelin (fused attention is "
                                "described for TensorRT 10; see the Fused Attention page)"
                              : "its MatMuls and Softmax are not predicted in one Myelin region (a node between them "
                                "runs outside the region)");
            attention.reason += "; not fused: " + attention.notFusedBecause.back();
        }
        if (oneRegion)
        {
            attention.reason += "; in " + prediction.layers[layerOf[block.softmax]].name;
        }
        prediction.attention.push_back(std::move(attention));
    }
}

void MyelinPass::report(Prediction& prediction) const
{
    const OnnxGraph& graph = mState.graph;
    std::vector<std::uint32_t> layerOf(graph.nodes.size(), kNoLayer);
    for (std::size_t i = 0; i < prediction.layers.size(); ++i)
    {
        for (std::uint32_t node : prediction.layers[i].nodeIndices)
        {
            layerOf[node] = static_cast<std::uint32_t>(i);
        }
    }
    const auto inMyelin = [&](std::uint32_t node)
    { return node < layerOf.size() && layerOf[node] != kNoLayer && prediction.layers[layerOf[node]].kind == "Myelin"; };
    // The MatMuls of the regions: quantized when both inputs come straight from a DequantizeLinear.
    for (std::uint32_t node = 0; node < graph.nodes.size(); ++node)
    {
        const OnnxNode& n = graph.nodes[node];
        if ((n.opType != "MatMul" && n.opType != "Gemm") || !inMyelin(node) || n.inputs.size() < 2)
        {
            continue;
        }
        const OnnxNode* a = producerOf(graph, n.inputs[0]);
        const OnnxNode* b = producerOf(graph, n.inputs[1]);
        const bool quantized = a != nullptr && b != nullptr && isDequantize(*a) && isDequantize(*b);
        (quantized ? prediction.myelinQuantizedMatMuls : prediction.myelinFloatMatMuls).push_back(n.name);
    }
    reportAttention(prediction, layerOf);
    if (!mTransformer)
    {
        return;
    }
    // The Q/DQ nodes a region took run in its kernels: fused with a neighbour inside the region.
    for (auto& fate : prediction.qdq)
    {
        const std::uint32_t node = fate.nodeIndex;
        if (node >= graph.nodes.size() || !inMyelin(node) || fate.fate == PredictedQdq::Fate::kFolded ||
            fate.fate == PredictedQdq::Fate::kCancelled)
        {
            continue;
        }
        std::uint32_t partner = kNone;
        bool intoProducer = false;
        const auto inputs = graph.inputIds(node);
        const OnnxNode* producer = inputs.empty() || inputs[0] == kNone ? nullptr : graph.producerOf(inputs[0]);
        if (fate.isQuantize && producer != nullptr && layerOf[producer->index] == layerOf[node])
        {
            partner = static_cast<std::uint32_t>(producer->index);
            intoProducer = true;
        }
        for (std::uint32_t output : graph.outputIds(node))
        {
            for (std::uint32_t consumer : graph.consumersOf(output))
            {
                if (partner == kNone && layerOf[consumer] == layerOf[node])
                {
                    partner = consumer;
                }
            }
        }
        if (partner == kNone && producer != nullptr && layerOf[producer->index] == layerOf[node])
        {
            partner = static_cast<std::uint32_t>(producer->index);
            intoProducer = true;
        }
        if (partner == kNone)
        {
            continue;
        }
        fate.fate = intoProducer ? PredictedQdq::Fate::kFusedIntoProducer : PredictedQdq::Fate::kFusedIntoConsumer;
        fate.partner = graph.nodes[partner].name;
        fate.partnerIndex = partner;
        fate.why = PredictedQdq::Reason{};
        fate.why.prefix = kInsideRegionPrefix;
        fate.why.subject = graph.nodes[partner].name;
        fate.why.suffix = kInsideRegionSuffix;
    }
}

} // namespace qdq::simulation
