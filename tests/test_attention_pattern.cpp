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
