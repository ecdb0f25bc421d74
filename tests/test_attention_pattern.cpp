// The attention matcher (qdq/attention_pattern.h) on hand-built attention blocks and on the DeiT-tiny export in
// ../shared/models.
#include "attention_builder.h"
#include "test_support.h"

#include "qdq/attention_pattern.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>

using namespace qdq;
using namespace qdq::test;

namespace
{

std::string nodeName(const OnnxGraph& graph, std::uint32_t node)
{
    return node == AttentionOperand::kNoNode ? std::string("(none)") : graph.nodes[node].name;
}

} // namespace

TEST(AttentionPattern, AQuantizedAttentionInModelOptsPlacementMeetsTheConditions)
{
    GraphBuilder g;
    addAttention(g, "/attn", AttentionShape{});
    const OnnxGraph graph = g.build();
    const auto blocks = findAttentionBlocks(graph);
    ASSERT_EQ(blocks.size(), 1u);
    const AttentionBlock& block = blocks[0];
    EXPECT_EQ(nodeName(graph, block.scoresMatMul), "/attn/MatMul");
    EXPECT_EQ(nodeName(graph, block.softmax), "/attn/Softmax");
    EXPECT_EQ(nodeName(graph, block.contextMatMul), "/attn/MatMul_1");
    EXPECT_TRUE(block.quantized);
    EXPECT_TRUE(block.softmaxOutputQuantized);
    EXPECT_EQ(block.scale, AttentionScale::kIntoBoth);
    EXPECT_EQ(nodeName(graph, block.key.dequantize), "/attn/k_qdq/DequantizeLinear");
    EXPECT_TRUE(block.key.readsDequantizeStraight());
    EXPECT_TRUE(block.fuses()) << describeAttention(graph, block);
}

TEST(AttentionPattern, AKTransposeAfterItsDequantizeBlocksTheFusionAndIsNamed)
{
    GraphBuilder g;
    AttentionShape shape;
    shape.keyTransposeAfterDequantize = true;
    addAttention(g, "/attn", shape);
    const OnnxGraph graph = g.build();
    const auto blocks = findAttentionBlocks(graph);
    ASSERT_EQ(blocks.size(), 1u);
    const AttentionBlock& block = blocks[0];
    EXPECT_FALSE(block.fuses());
    ASSERT_EQ(block.blockers.size(), 1u) << describeAttention(graph, block);
    EXPECT_EQ(nodeName(graph, block.blockers[0].node), "/attn/k_transpose");
    EXPECT_EQ(nodeName(graph, block.blockers[0].matmul), "/attn/MatMul");
    EXPECT_NE(block.blockers[0].reason.find("Model-Optimizer PR #1289"), std::string::npos);
}

TEST(AttentionPattern, AnUnquantizedSoftmaxOutputInAQuantizedAttentionIsABlocker)
{
    GraphBuilder g;
    AttentionShape shape;
    shape.softmaxOutputQuantized = false;
    addAttention(g, "/attn", shape);
    const OnnxGraph graph = g.build();
    const auto blocks = findAttentionBlocks(graph);
    ASSERT_EQ(blocks.size(), 1u);
    ASSERT_EQ(blocks[0].blockers.size(), 1u) << describeAttention(graph, blocks[0]);
    EXPECT_EQ(nodeName(graph, blocks[0].blockers[0].node), "/attn/Softmax");
    EXPECT_FALSE(blocks[0].softmaxOutputQuantized);
}

TEST(AttentionPattern, AScaleOnTheScoresIsABlockerAndAFloatAttentionWithTheScaleInQFuses)
{
    GraphBuilder onScores;
    AttentionShape shape;
    shape.quantized = false;
    shape.scaleOnScores = true;
    addAttention(onScores, "/attn", shape);
    const OnnxGraph scored = onScores.build();
    auto blocks = findAttentionBlocks(scored);
    ASSERT_EQ(blocks.size(), 1u);
    EXPECT_EQ(blocks[0].scale, AttentionScale::kOnScores);
    ASSERT_EQ(blocks[0].blockers.size(), 1u);
    EXPECT_EQ(nodeName(scored, blocks[0].blockers[0].node), "/attn/scale_scores");
    EXPECT_NE(blocks[0].blockers[0].reason.find("Fused Attention"), std::string::npos);

    GraphBuilder intoQ;
    shape.scaleOnScores = false;
    addAttention(intoQ, "/attn", shape);
    const OnnxGraph scaledQ = intoQ.build();
    blocks = findAttentionBlocks(scaledQ);
    ASSERT_EQ(blocks.size(), 1u);
    EXPECT_FALSE(blocks[0].quantized);
    EXPECT_EQ(blocks[0].scale, AttentionScale::kIntoBoth);
    EXPECT_TRUE(blocks[0].fuses()) << describeAttention(scaledQ, blocks[0]);
}

TEST(AttentionPattern, ASoftmaxThatIsNoAttentionIsNotMatched)
{
    // A classifier's Softmax after a Gemm (a weight, not a second activation) is no attention.
    GraphBuilder g;
    std::string x = g.input("x", {1, 16});
    std::string y = g.node("Gemm", "/fc/Gemm", {x, g.weight("fc.w", {10, 16}), g.weight("fc.b", {10})});
    g.output(g.node("Softmax", "/softmax", {y}));
    EXPECT_TRUE(findAttentionBlocks(g.build()).empty());
}

// DeiT-tiny exported by torch and quantized by ONNX Runtime (../shared/models/README.md): 12 blocks, each with the
// attention scale's square root multiplied into Q and K before their Q/DQ, a DequantizeLinear straight before each
// attention MatMul input and a Q/DQ after the Softmax; ONNX Runtime also quantizes Q * K^T before the Softmax.
TEST(AttentionPattern, DeitTinyHasTwelveAttentionsThatMeetTheConditions)
{
    REQUIRE_SHARED();
    const OnnxGraph graph = readOnnx(sharedModel("deit-tiny-ort-qdq.onnx").string());
    const auto blocks = findAttentionBlocks(graph);
    ASSERT_EQ(blocks.size(), 12u);
    for (const auto& block : blocks)
    {
        EXPECT_TRUE(block.quantized);
        EXPECT_TRUE(block.softmaxOutputQuantized);
        EXPECT_EQ(block.scale, AttentionScale::kIntoBoth) << describeAttention(graph, block);
        EXPECT_EQ(block.scoreQdq.size(), 2u);
        EXPECT_TRUE(block.fuses()) << describeAttention(graph, block);
    }
    EXPECT_EQ(nodeName(graph, blocks[0].scoresMatMul), "/blocks/blocks.0/attn/MatMul");
    EXPECT_EQ(nodeName(graph, blocks[0].query.scaledBy), "/blocks/blocks.0/attn/Mul");
    EXPECT_EQ(nodeName(graph, blocks[0].key.scaledBy), "/blocks/blocks.0/attn/Mul_1");
}

namespace
{

//! A float window attention as torchvision's Swin writes it: Q * K^T regrouped per window, the window mask added, and
//! regrouped back before the Softmax. peekAtWindows: another node also reads the regrouped scores.
OnnxGraph windowAttention(bool peekAtWindows)
{
    GraphBuilder g;
    const std::string q = g.input("q", {4, 2, 16, 8});
    const std::string kt = g.input("kt", {4, 2, 8, 16});
    const std::string v = g.input("v", {4, 2, 16, 8});
    const std::string scores = g.node("MatMul", "/attn/MatMul", {q, kt});
    const std::string windows = g.node("Reshape", "/attn/Reshape", {scores, g.weight("/attn/window_shape", {5})});
    const std::string masked = g.node("Add", "/attn/Add", {windows, g.weight("/attn/window_mask", {1, 4, 1, 16, 16})});
    const std::string regrouped = g.node("Reshape", "/attn/Reshape_1", {masked, g.weight("/attn/heads_shape", {4})});
    const std::string probabilities = g.node("Softmax", "/attn/Softmax", {regrouped});
    g.output(g.node("MatMul", "/attn/MatMul_1", {probabilities, v}));
    if (peekAtWindows)
    {
        g.output(g.node("ReduceMax", "/attn/peek", {windows}));
    }
    return g.build();
}

} // namespace

TEST(AttentionPattern, AWindowAttentionIsFoundThroughItsScoreReshapesWithANote)
{
    const OnnxGraph graph = windowAttention(false);
    const auto blocks = findAttentionBlocks(graph);
    ASSERT_EQ(blocks.size(), 1u);
    EXPECT_EQ(nodeName(graph, blocks[0].scoresMatMul), "/attn/MatMul");
    EXPECT_EQ(nodeName(graph, blocks[0].contextMatMul), "/attn/MatMul_1");
    ASSERT_EQ(blocks[0].scoreReshapes.size(), 2u);
    const std::string text = describeAttention(graph, blocks[0]);
    EXPECT_NE(text.find("reshapes Q * K^T"), std::string::npos) << text;
    EXPECT_NE(text.find("guess"), std::string::npos) << text;
}

TEST(AttentionPattern, AWindowAttentionWhoseRegroupedScoresAreReadElsewhereIsNotMatched)
{
    // The fused kernel keeps Q * K^T to itself: scores another node reads are no attention's inner tensor.
    EXPECT_TRUE(findAttentionBlocks(windowAttention(true)).empty());
}
