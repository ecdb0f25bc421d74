// The simulator's Myelin pass (src/simulation/myelin_pass.cpp): transformer regions, the Q/DQ they consume, which
// MatMuls run quantized, and whether each attention fuses, on hand-built attention blocks and on DeiT-tiny.
#include "attention_builder.h"
#include "test_support.h"

#include "qdq/predict.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

SimulationOptions trt(int major, int minor)
{
    SimulationOptions options;
    options.trtMajor = major;
    options.trtMinor = minor;
    options.int8 = true;
    options.fp16 = true;
    return options;
}

std::size_t standaloneQdqLayers(const Prediction& prediction)
{
    return static_cast<std::size_t>(std::count_if(prediction.layers.begin(), prediction.layers.end(),
                                                  [](const PredictedLayer& layer) {
                                                      return layer.role == "standalone-quantize" ||
                                                             layer.role == "standalone-dequantize";
                                                  }));
}

//! An attention block between two LayerNorms, as a transformer block has it.
OnnxGraph attentionModel(const AttentionShape& shape)
{
    GraphBuilder g;
    std::string context = addAttention(g, "/attn", shape, false);
    std::string norm = g.node("LayerNormalization", "/norm/LayerNormalization",
                              {context, g.weight("/norm/gamma", {8}, 1.0f), g.weight("/norm/beta", {8}, 0.0f)});
    g.output(norm, {1, 2, 4, 8});
    return g.build();
}

} // namespace

TEST(MyelinSimulation, AQuantizedAttentionInModelOptsPlacementIsOneFusedRegionOnTensorRT10)
{
    const OnnxGraph graph = attentionModel(AttentionShape{});
    const Prediction prediction = predictEngine(graph, trt(10, 8));
    const PredictedLayer* region = layerWith(prediction, "/attn/MatMul");
    ASSERT_NE(region, nullptr);
    EXPECT_EQ(region->kind, "Myelin");
    EXPECT_EQ(layerWith(prediction, "/attn/Softmax"), region);
    EXPECT_EQ(layerWith(prediction, "/attn/MatMul_1"), region);
    EXPECT_EQ(layerWith(prediction, "/attn/p_qdq/QuantizeLinear"), region);
    EXPECT_EQ(standaloneQdqLayers(prediction), 0u);
    ASSERT_EQ(prediction.attention.size(), 1u);
    EXPECT_TRUE(prediction.attention[0].fused) << prediction.attention[0].reason;
    EXPECT_TRUE(prediction.attention[0].quantized);
    // Both attention MatMuls read two DequantizeLinear outputs: they run in INT8.
    EXPECT_EQ(prediction.myelinQuantizedMatMuls.size(), 2u);
    const PredictedQdq* softmaxQ = prediction.find("/attn/p_qdq/QuantizeLinear");
    ASSERT_NE(softmaxQ, nullptr);
    EXPECT_EQ(softmaxQ->fate, PredictedQdq::Fate::kFusedIntoProducer);
    EXPECT_EQ(softmaxQ->partner, "/attn/Softmax");
    EXPECT_NE(softmaxQ->reason().find("Myelin region"), std::string::npos);
}

TEST(MyelinSimulation, AKTransposeAfterItsDequantizeKeepsTheRegionButTheAttentionDoesNotFuse)
{
    AttentionShape shape;
    shape.keyTransposeAfterDequantize = true;
    const OnnxGraph graph = attentionModel(shape);
    const Prediction prediction = predictEngine(graph, trt(10, 8));
    ASSERT_EQ(prediction.attention.size(), 1u);
    const PredictedAttention& attention = prediction.attention[0];
    EXPECT_FALSE(attention.fused);
    EXPECT_NE(attention.reason.find("/attn/k_transpose"), std::string::npos) << attention.reason;
    EXPECT_NE(attention.reason.find("/attn/MatMul"), std::string::npos);
    EXPECT_NE(attention.reason.find("Model-Optimizer PR #1289"), std::string::npos);
    // The first MatMul reads K through the Transpose, not straight from its DequantizeLinear: float.
    EXPECT_NE(std::find(prediction.myelinFloatMatMuls.begin(), prediction.myelinFloatMatMuls.end(), "/attn/MatMul"),
              prediction.myelinFloatMatMuls.end());
    EXPECT_EQ(layerWith(prediction, "/attn/k_transpose"), layerWith(prediction, "/attn/MatMul"));
}

TEST(MyelinSimulation, TensorRT8KeepsItsRegionsAtTheQdqEdgesAndPredictsNoFusedAttention)
{
    const OnnxGraph graph = attentionModel(AttentionShape{});
    const Prediction prediction = predictEngine(graph, trt(8, 6));
    ASSERT_EQ(prediction.attention.size(), 1u);
    EXPECT_FALSE(prediction.attention[0].fused);
    EXPECT_NE(prediction.attention[0].reason.find("NVIDIA/TensorRT#3186"), std::string::npos);
    EXPECT_NE(layerWith(prediction, "/attn/MatMul"), layerWith(prediction, "/attn/Softmax"));
    EXPECT_GT(standaloneQdqLayers(prediction), 0u);
}

TEST(MyelinSimulation, ACnnHasNoTransformerRegions)
{
    GraphBuilder g;
    std::string x = g.qdq("/in", g.input("images", {1, 3, 8, 8}));
    std::string c = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)});
    std::string r = g.node("Relu", "/relu/Relu", {c});
    std::string pooled = g.node("GlobalAveragePool", "/pool", {g.qdq("/pool_in", r)});
    std::string flat = g.node("Flatten", "/flatten", {pooled});
    std::string y =
        g.node("Gemm", "/fc/Gemm", {g.qdq("/fc_in", flat), g.weight("fc.w", {10, 8}), g.weight("fc.b", {10})});
    g.output(g.node("Softmax", "/softmax", {y}));
    const OnnxGraph graph = g.build(); // the prediction names its nodes by views into it
    const Prediction prediction = predictEngine(graph, trt(10, 8));
    EXPECT_TRUE(prediction.attention.empty());
    EXPECT_TRUE(prediction.myelinQuantizedMatMuls.empty());
    ASSERT_NE(layerWith(prediction, "/softmax"), nullptr);
    EXPECT_EQ(layerWith(prediction, "/softmax")->kind, "SoftMax");
}

// DeiT-tiny, torch export quantized by ONNX Runtime (../shared/models): on TensorRT 10 each block's attention (both
// MatMuls and the Softmax) is in one predicted layer and every attention meets the documented conditions; the Q/DQ
// nodes of the transformer body run inside its region, and every standalone Q/DQ left says why.
TEST(MyelinSimulation, DeitTinyAttentionIsOneLayerPerBlockOnTensorRT10)
{
    REQUIRE_SHARED();
    const OnnxGraph graph = readOnnx(sharedModel("deit-tiny-ort-qdq.onnx").string());
    const Prediction prediction = predictEngine(graph, trt(10, 0));
    ASSERT_EQ(prediction.attention.size(), 12u);
    for (int block = 0; block < 12; ++block)
    {
        const std::string prefix = "/blocks/blocks." + std::to_string(block) + "/attn/";
        const PredictedLayer* layer = layerWith(prediction, prefix + "MatMul");
        ASSERT_NE(layer, nullptr) << prefix;
        EXPECT_EQ(layer->kind, "Myelin");
        EXPECT_EQ(layerWith(prediction, prefix + "Softmax"), layer) << prefix;
        EXPECT_EQ(layerWith(prediction, prefix + "MatMul_1"), layer) << prefix;
        EXPECT_TRUE(prediction.attention[static_cast<std::size_t>(block)].fused)
            << prediction.attention[static_cast<std::size_t>(block)].reason;
    }
    const PredictionSummary summary = summarizePrediction(prediction, graph);
    std::printf("[ deit     ] TensorRT 10: %zu layers, %zu standalone Q/DQ, %zu guessed, %zu quantized MatMuls in "
                "Myelin, %zu float\n",
                summary.layers, summary.standaloneQdq, summary.guessed, prediction.myelinQuantizedMatMuls.size(),
                prediction.myelinFloatMatMuls.size());
    for (const auto& qdq : prediction.qdq)
    {
        if (qdq.fate == PredictedQdq::Fate::kStandalone)
        {
            EXPECT_FALSE(qdq.reason().empty()) << qdq.node;
        }
    }
}
