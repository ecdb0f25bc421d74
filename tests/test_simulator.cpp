// The engine simulator: each documented fusion with a graph that makes it and a near-identical one that must not,
// and the predictions held against real engines (the A100 ResNet18 engines of the recipes in ../shared/models and the
// build logs whose parser lines describe the model they built).
#include "graph_builder.h"
#include "test_support.h"

#include "qdq/load_inputs.h"
#include "qdq/predict.h"
#include "qdq/prediction_check.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <ostream>
#include <set>

using namespace qdq;
using namespace qdq::test;

namespace
{

SimulationOptions version(int major, int minor, bool fp16 = true)
{
    SimulationOptions options;
    options.trtMajor = major;
    options.trtMinor = minor;
    options.fp16 = fp16;
    return options;
}

std::size_t countRole(const Prediction& prediction, std::string_view role)
{
    return static_cast<std::size_t>(std::count_if(prediction.layers.begin(), prediction.layers.end(),
                                                  [&](const PredictedLayer& layer) { return layer.role == role; }));
}

//! in -> Q/DQ -> conv0 -> relu0 -> MaxPool [-> Q/DQ] -> conv1
OnnxGraph stem(bool quantizeAfterPool)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images"));
    std::string c0 = g.node("Conv", "/conv0/Conv", {x, g.quantizedWeight("conv0", 8, 3)});
    std::string r0 = g.node("Relu", "/relu0/Relu", {c0});
    std::string p0 = g.node("MaxPool", "/pool/MaxPool", {r0});
    std::string next = quantizeAfterPool ? g.qdq("/conv1/in_q", p0) : p0;
    std::string c1 =
        g.node("Conv", "/conv1/Conv",
               {next, quantizeAfterPool ? g.quantizedWeight("conv1", 8, 8) : g.weight("conv1.w", {8, 8, 3, 3})});
    g.output(c1);
    return g.build();
}

} // namespace

TEST(Simulator, ConvActPoolWhenThePoolRunsInTheConvsInt8)
{
    OnnxGraph graph = stem(true);
    Prediction prediction = predictEngine(graph, version(8, 4));
    const PredictedLayer* conv = layerWith(prediction, "/conv0/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->kind, "ConvActPool");
    EXPECT_EQ(layerWith(prediction, "/pool/MaxPool"), conv);
    EXPECT_EQ(layerWith(prediction, "/relu0/Relu"), conv);
    EXPECT_EQ(conv->inputPrecision, "INT8");
    EXPECT_EQ(conv->outputPrecision, "INT8");
    Prediction ten = predictEngine(graph, version(10, 8));
    ASSERT_NE(layerWith(ten, "/conv0/Conv"), nullptr);
    EXPECT_EQ(layerWith(ten, "/conv0/Conv")->kind, "CaskConvActPool");
}

TEST(Simulator, NoConvActPoolWhenThePoolOutputIsFloat)
{
    OnnxGraph graph = stem(false);
    Prediction prediction = predictEngine(graph, version(8, 4));
    const PredictedLayer* conv = layerWith(prediction, "/conv0/Conv");
    const PredictedLayer* pool = layerWith(prediction, "/pool/MaxPool");
    ASSERT_NE(conv, nullptr);
    ASSERT_NE(pool, nullptr);
    EXPECT_NE(conv, pool);
    EXPECT_EQ(conv->kind, "CaskConvolution");
    EXPECT_EQ(pool->kind, "Pooling");
    EXPECT_EQ(conv->outputPrecision, "FP16");
}

namespace
{

//! x -> conv_a -> bn_a -> Add(conv_a path, conv_b path) -> relu, where conv_b reads x too. quantizeB puts a Q/DQ
//! between conv_b and the Add.
OnnxGraph residual(bool quantizeB)
{
    GraphBuilder g;
    std::string x = g.input("x");
    std::string a = g.node("Conv", "/a/Conv", {x, g.weight("a.w", {8, 8, 3, 3})});
    std::string bn =
        g.node("BatchNormalization", "/a/bn",
               {a, g.weight("bn.s", {8}), g.weight("bn.b", {8}), g.weight("bn.m", {8}), g.weight("bn.v", {8}, 1.0f)});
    std::string b = g.node("Conv", "/b/Conv", {x, g.weight("b.w", {8, 8, 1, 1})});
    std::string side = quantizeB ? g.qdq("/b/out_q", b) : b;
    std::string sum = g.node("Add", "/add/Add", {bn, side});
    g.output(g.node("Relu", "/relu/Relu", {sum}));
    return g.build();
}

} // namespace

TEST(Simulator, ResidualAddJoinsTheConvThatCompletesIt)
{
    OnnxGraph graph = residual(false);
    Prediction prediction = predictEngine(graph, version(8, 4));
    const PredictedLayer* b = layerWith(prediction, "/b/Conv");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(layerWith(prediction, "/add/Add"), b);
    EXPECT_EQ(layerWith(prediction, "/relu/Relu"), b);
    EXPECT_NE(layerWith(prediction, "/a/Conv"), b);
    EXPECT_EQ(layerWith(prediction, "/a/bn"), layerWith(prediction, "/a/Conv"));
    EXPECT_EQ(b->name, "/b/Conv + /add/Add + /relu/Relu");
}

TEST(Simulator, ResidualAddAvoidsTheConvBehindAQdqPair)
{
    OnnxGraph graph = residual(true);
    Prediction prediction = predictEngine(graph, version(8, 4));
    const PredictedLayer* a = layerWith(prediction, "/a/Conv");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(layerWith(prediction, "/add/Add"), a);
    EXPECT_NE(layerWith(prediction, "/b/Conv"), a);
}

// ---- layer names ----------------------------------------------------------------------------------------------

namespace
{

//! A pytorch-quantization Conv [-> BatchNormalization] -> activation block: in -> Q/DQ -> conv -> [bn ->] act -> Q/DQ
//! -> conv2. Unquantized, the conv reads the input and float weights directly.
OnnxGraph convBlock(bool batchNorm, const std::string& activation, bool quantized = true)
{
    GraphBuilder g;
    std::string x = g.input("images");
    std::string t = g.node("Conv", "/conv/Conv",
                           {quantized ? g.qdq("/conv/_input_quantizer", x) : x,
                            quantized ? g.quantizedWeight("conv", 8, 8) : g.weight("conv.weight", {8, 8, 3, 3})});
    if (batchNorm)
    {
        t = g.node("BatchNormalization", "/bn/BatchNormalization",
                   {t, g.weight("bn.weight", {8}), g.weight("bn.bias", {8}), g.weight("bn.running_mean", {8}),
                    g.weight("bn.running_var", {8}, 1.0f)});
    }
    t = g.node(activation, "/act/" + activation, {t});
    g.output(g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/_input_quantizer", t), g.quantizedWeight("conv2", 8, 8)}));
    return g.build();
}

const char* const kQuantizedConvName = "conv.weight + conv/_weight_quantizer/QuantizeLinear + /conv/Conv";

} // namespace

// TensorRT 8.4 and 8.5 leave the BatchNormalization folded into a quantized conv and the Relu fused with it out of the
// layer's name (QConvScaleFusion "Removing .../bn1/BatchNormalization + .../relu/Relu" in the 8.5.2 and 8.4.12 logs
// of ../shared/realdata); the layer still executes both.
TEST(Simulator, QuantizedConvNameLeavesOutItsFoldedBatchNormAndRelu)
{
    OnnxGraph graph = convBlock(true, "Relu");
    for (int minor : {4, 5})
    {
        Prediction prediction = predictEngine(graph, version(8, minor));
        const PredictedLayer* conv = layerWith(prediction, "/conv/Conv");
        ASSERT_NE(conv, nullptr);
        EXPECT_EQ(conv->name, kQuantizedConvName) << "8." << minor;
        EXPECT_EQ(layerWith(prediction, "/bn/BatchNormalization"), conv);
        EXPECT_EQ(layerWith(prediction, "/act/Relu"), conv);
        EXPECT_TRUE(conv->guess.empty()) << conv->guess;
    }
}

// TensorRT 8.0 names the Relu after the folded BatchNormalization, and a Quantize node's layer
// "<Q>_quantize_scale_node" (NVIDIA/TensorRT#1293: "QuantizeLinear_151_quantize_scale_node", "layer2.2.conv1.weight +
// QuantizeLinear_156_quantize_scale_node + Conv_158 + Relu_160"); 8.2 names the Quantize layer after the node.
TEST(Simulator, QuantizedConvNameOn80KeepsTheReluAfterItsFoldedBatchNorm)
{
    OnnxGraph graph = convBlock(true, "Relu");
    Prediction prediction = predictEngine(graph, version(8, 0));
    const PredictedLayer* conv = layerWith(prediction, "/conv/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->name,
              "conv.weight + conv/_weight_quantizer/QuantizeLinear_quantize_scale_node + /conv/Conv + /act/Relu");
    EXPECT_EQ(layerWith(prediction, "/bn/BatchNormalization"), conv);
    const PredictedLayer* input = layerWith(prediction, "/conv/_input_quantizer/QuantizeLinear");
    ASSERT_NE(input, nullptr);
    EXPECT_EQ(input->name, "/conv/_input_quantizer/QuantizeLinear_quantize_scale_node");
    Prediction eightTwo = predictEngine(graph, version(8, 2));
    ASSERT_NE(layerWith(eightTwo, "/conv/_input_quantizer/QuantizeLinear"), nullptr);
    EXPECT_EQ(layerWith(eightTwo, "/conv/_input_quantizer/QuantizeLinear")->name,
              "/conv/_input_quantizer/QuantizeLinear");
}

// Without a BatchNormalization the Relu is named (ConvReluFusion: "... + Conv_118 + Relu_119" in NVIDIA/TensorRT#2823).
TEST(Simulator, QuantizedConvWithoutBatchNormNamesItsRelu)
{
    OnnxGraph graph = convBlock(false, "Relu");
    Prediction prediction = predictEngine(graph, version(8, 5));
    const PredictedLayer* conv = layerWith(prediction, "/conv/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->name, std::string(kQuantizedConvName) + " + /act/Relu");
}

// A LeakyRelu is not fused with the BatchNormalization and stays, as PWN(...) (8.5.2: "/neck/conv1/conv/Conv +
// PWN(/neck/conv1/relu/LeakyRelu)").
TEST(Simulator, QuantizedConvNamesALeakyReluAfterItsFoldedBatchNorm)
{
    OnnxGraph graph = convBlock(true, "LeakyRelu");
    Prediction prediction = predictEngine(graph, version(8, 5));
    const PredictedLayer* conv = layerWith(prediction, "/conv/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->name, std::string(kQuantizedConvName) + " + PWN(/act/LeakyRelu)");
    EXPECT_EQ(layerWith(prediction, "/bn/BatchNormalization"), conv);
}

// A float conv keeps the name of the scale it fuses (ConvScaleFusion "Convolution28 + Parameter6 + ... + Plus30 +
// ReLU32" in the 8.5.10 log of ../shared/realdata/lix-mnist-orin-trt8510-best).
TEST(Simulator, FloatConvNamesItsBatchNormAndRelu)
{
    OnnxGraph graph = convBlock(true, "Relu", false);
    Prediction prediction = predictEngine(graph, version(8, 5));
    const PredictedLayer* conv = layerWith(prediction, "/conv/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->name, "/conv/Conv + /bn/BatchNormalization + /act/Relu");
}

// Where no engine shows the names (10.x, an unknown version) the 8.4/8.5 names are predicted, and said to be a guess.
TEST(Simulator, QuantizedConvNameOnAnUnseenVersionIsAGuess)
{
    OnnxGraph graph = convBlock(true, "Relu");
    for (int major : {0, 10})
    {
        Prediction prediction = predictEngine(graph, version(major, 8));
        const PredictedLayer* conv = layerWith(prediction, "/conv/Conv");
        ASSERT_NE(conv, nullptr);
        EXPECT_EQ(conv->name, kQuantizedConvName);
        EXPECT_NE(conv->guess.find("name inferred"), std::string::npos) << conv->guess;
    }
}

namespace
{

//! conv -> relu -> Q/DQ -> conv2, and relu also feeds an Add in float when fanOut.
OnnxGraph quantizedFanOut(bool fanOut)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string c = g.node("Conv", "/c/Conv", {x, g.quantizedWeight("c", 8, 8)});
    std::string r = g.node("Relu", "/c/Relu", {c});
    std::string c2 = g.node("Conv", "/c2/Conv", {g.qdq("/c2/in_q", r), g.quantizedWeight("c2", 8, 8)});
    std::string out = fanOut ? g.node("Add", "/add/Add", {c2, r}) : c2;
    g.output(out);
    return g.build();
}

} // namespace

namespace
{

//! A LayerNormalization whose gamma comes through Q -> DQ from an Identity copy. With a constant source the Identity
//! reads a weight's DQ (a torch export sharing one initializer, then ONNX Runtime's quantizer: ConvNeXt); otherwise it
//! reads an activation.
OnnxGraph sharedGamma(bool constantSource)
{
    GraphBuilder g;
    std::string x = g.input("x", {1, 8});
    std::string source =
        constantSource
            ? g.node("DequantizeLinear", "/w/DequantizeLinear",
                     {g.int8Constant("w_int8", {8}), g.scale("/w/scale", 0.01f), g.zeroPoint("/w/zero_point")})
            : g.node("Relu", "/act/Relu", {x});
    std::string gamma = g.qdq("/gamma_q", g.node("Identity", "/gamma/Identity", {source}), 0.01f);
    g.output(g.node("LayerNormalization", "/ln/LayerNormalization", {x, gamma, g.weight("beta", {8})}));
    return g.build();
}

} // namespace

TEST(Simulator, QdqOfAWeightSharedThroughIdentityIsFolded)
{
    OnnxGraph graph = sharedGamma(true);
    Prediction prediction = predictEngine(graph, version(10, 8));
    for (const char* node : {"/gamma_q/QuantizeLinear", "/gamma_q/DequantizeLinear"})
    {
        const PredictedQdq* qdq = prediction.find(node);
        ASSERT_NE(qdq, nullptr) << node;
        EXPECT_EQ(qdq->fate, PredictedQdq::Fate::kFolded) << node << ": " << qdq->reason();
    }
}

TEST(Simulator, QdqOfAnActivationThroughIdentityIsNotFolded)
{
    OnnxGraph graph = sharedGamma(false);
    Prediction prediction = predictEngine(graph, version(10, 8));
    const PredictedQdq* dq = prediction.find("/gamma_q/DequantizeLinear");
    ASSERT_NE(dq, nullptr);
    EXPECT_NE(dq->fate, PredictedQdq::Fate::kFolded) << dq->reason();
}

namespace
{

//! in -> Q/DQ -> conv1 (weight Q/DQ) -> Relu -> Q/DQ -> conv2 -> out, every zero point of the given ONNX type.
OnnxGraph quantizedPair(int zeroPointType)
{
    GraphBuilder g;
    const std::string zero = g.typedZeroPoint("zp", zeroPointType);
    const auto qdq = [&](const std::string& prefix, const std::string& tensor, float scale)
    {
        const std::string s = g.scale(prefix + "/scale", scale);
        const std::string q = g.node("QuantizeLinear", prefix + "/QuantizeLinear", {tensor, s, zero});
        return g.node("DequantizeLinear", prefix + "/DequantizeLinear", {q, s, zero});
    };
    std::string x = qdq("/in_q", g.input("x", {1, 3, 16, 16}), 0.02f);
    std::string c1 = g.node("Conv", "/c1/Conv", {x, qdq("/c1/w_q", g.weight("w1", {8, 3, 3, 3}), 0.01f)});
    std::string r = qdq("/r_q", g.node("Relu", "/c1/Relu", {c1}), 0.05f);
    g.output(g.node("Conv", "/c2/Conv", {r, qdq("/c2/w_q", g.weight("w2", {8, 8, 3, 3}), 0.01f)}));
    return g.build();
}

//! The same network as NVIDIA ModelOpt exports FP8: trt::TRT_FP8QuantizeLinear / TRT_FP8DequantizeLinear with a
//! scale and no zero point, in the given domain ("trt"; another domain makes them the user's plugins).
OnnxGraph tensorRtFp8Pair(const std::string& domain)
{
    GraphBuilder g;
    g.opset(domain, 1);
    const auto qdq = [&](const std::string& prefix, const std::string& tensor, float scale)
    {
        const std::string s = g.scale(prefix + "/scale", scale);
        const std::string q = g.node("TRT_FP8QuantizeLinear", prefix + "/QuantizeLinear", {tensor, s}, {}, domain);
        return g.node("TRT_FP8DequantizeLinear", prefix + "/DequantizeLinear", {q, s}, {}, domain);
    };
    std::string x = qdq("/in_q", g.input("x", {1, 3, 16, 16}), 0.02f);
    std::string c1 = g.node("Conv", "/c1/Conv", {x, qdq("/c1/w_q", g.weight("w1", {8, 3, 3, 3}), 0.01f)});
    std::string r = qdq("/r_q", g.node("Relu", "/c1/Relu", {c1}), 0.05f);
    g.output(g.node("Conv", "/c2/Conv", {r, qdq("/c2/w_q", g.weight("w2", {8, 8, 3, 3}), 0.01f)}));
    return g.build();
}

std::string precisionsOf(const Prediction& prediction, const std::string& node)
{
    const PredictedLayer* layer = layerWith(prediction, node);
    return layer == nullptr ? "(no layer)" : layer->inputPrecision + " -> " + layer->outputPrecision;
}

} // namespace

// TensorRT's FP8 recipe: Q/DQ whose zero points are FLOAT8E4M3FN. The layers read and write FP8, not INT8.
TEST(Simulator, Fp8QdqGivesFp8Layers)
{
    OnnxGraph graph = quantizedPair(17); // FLOAT8E4M3FN
    Prediction prediction = predictEngine(graph, version(10, 8));
    EXPECT_EQ(precisionsOf(prediction, "/c1/Conv"), "FP8 -> FP8");
    EXPECT_EQ(precisionsOf(prediction, "/in_q/QuantizeLinear"), "FP16 -> FP8");
}

// NVIDIA ModelOpt's FP8 export: TensorRT's parser imports the trt-domain ops as Q/DQ of FP8, so the engine is the
// one of the ONNX FP8 Q/DQ above. In another domain the same ops are plugins.
TEST(Simulator, TensorRtDomainFp8QdqIsQdq)
{
    const OnnxGraph standard = quantizedPair(17);
    const OnnxGraph modelOpt = tensorRtFp8Pair("trt");
    const Prediction expected = predictEngine(standard, version(10, 8));
    const Prediction prediction = predictEngine(modelOpt, version(10, 8));
    EXPECT_EQ(modelOpt.qdq.size(), 8u);
    EXPECT_EQ(precisionsOf(prediction, "/c1/Conv"), "FP8 -> FP8");
    EXPECT_EQ(precisionsOf(prediction, "/in_q/QuantizeLinear"), "FP16 -> FP8");
    ASSERT_EQ(prediction.layers.size(), expected.layers.size());
    for (std::size_t i = 0; i < expected.layers.size(); ++i)
    {
        EXPECT_EQ(prediction.layers[i].kind, expected.layers[i].kind) << i;
    }
    EXPECT_EQ(countRole(prediction, "plugin"), 0u);

    const OnnxGraph plugins = tensorRtFp8Pair("my.plugins");
    EXPECT_TRUE(plugins.qdq.empty());
    const Prediction pluginPrediction = predictEngine(plugins, version(10, 8));
    EXPECT_EQ(layerWith(pluginPrediction, "/in_q/QuantizeLinear")->kind, "PluginV2");
}

TEST(Simulator, Int8QdqGivesInt8Layers)
{
    OnnxGraph graph = quantizedPair(3); // INT8
    Prediction prediction = predictEngine(graph, version(10, 8));
    EXPECT_EQ(precisionsOf(prediction, "/c1/Conv"), "INT8 -> INT8");
    EXPECT_EQ(precisionsOf(prediction, "/in_q/QuantizeLinear"), "FP16 -> INT8");
}

TEST(Simulator, QuantizeStaysStandaloneWhenItsTensorAlsoFeedsFloat)
{
    OnnxGraph graph = quantizedFanOut(true);
    Prediction prediction = predictEngine(graph, version(8, 4));
    const PredictedQdq* q = prediction.find("/c2/in_q/QuantizeLinear");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->fate, PredictedQdq::Fate::kStandalone) << q->reason();
    EXPECT_NE(q->reason().find("/add/Add"), std::string::npos) << q->reason();
    const PredictedLayer* layer = layerWith(prediction, "/c2/in_q/QuantizeLinear");
    ASSERT_NE(layer, nullptr);
    EXPECT_EQ(layer->role, "standalone-quantize");
    EXPECT_EQ(layer->kind, "Reformat");
}

TEST(Simulator, QuantizeFusesIntoTheConvWithoutTheFloatReader)
{
    OnnxGraph graph = quantizedFanOut(false);
    Prediction prediction = predictEngine(graph, version(8, 4));
    const PredictedQdq* q = prediction.find("/c2/in_q/QuantizeLinear");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->fate, PredictedQdq::Fate::kFusedIntoProducer) << q->reason();
    EXPECT_EQ(layerWith(prediction, "/c2/in_q/QuantizeLinear"), layerWith(prediction, "/c/Conv"));
    EXPECT_EQ(countRole(prediction, "standalone-quantize"), 1u); // the network input's
}

namespace
{

//! relu -> two Q (scales a, b) -> DQ -> one conv each.
OnnxGraph twinQuantizers(float scaleA, float scaleB)
{
    GraphBuilder g;
    std::string x = g.input("x");
    std::string r = g.node("Relu", "/r/Relu", {g.node("Sigmoid", "/s/Sigmoid", {x})});
    std::string a = g.node("Conv", "/a/Conv", {g.qdq("/a/iq", r, scaleA), g.quantizedWeight("a", 8, 8)});
    std::string b = g.node("Conv", "/b/Conv", {g.qdq("/b/iq", r, scaleB), g.quantizedWeight("b", 8, 8)});
    g.output(a);
    g.output(b);
    return g.build();
}

} // namespace

TEST(Simulator, DuplicateQuantizersWithOneScaleAreOneLayer)
{
    OnnxGraph graph = twinQuantizers(0.05f, 0.05f);
    Prediction prediction = predictEngine(graph, version(8, 4));
    EXPECT_EQ(countRole(prediction, "standalone-quantize"), 1u);
    const PredictedQdq* twin = prediction.find("/b/iq/QuantizeLinear");
    ASSERT_NE(twin, nullptr);
    EXPECT_EQ(twin->fate, PredictedQdq::Fate::kCancelled);
    EXPECT_EQ(layerWith(prediction, "/b/iq/QuantizeLinear"), layerWith(prediction, "/a/iq/QuantizeLinear"));
}

TEST(Simulator, QuantizersWithDifferentScalesStayTwoLayers)
{
    OnnxGraph graph = twinQuantizers(0.05f, 0.07f);
    Prediction prediction = predictEngine(graph, version(8, 4));
    EXPECT_EQ(countRole(prediction, "standalone-quantize"), 2u);
}

TEST(Simulator, PointwiseChainIsOneLayer)
{
    GraphBuilder g;
    std::string x = g.input("x");
    std::string s = g.node("Sigmoid", "/s", {x});
    std::string m = g.node("Mul", "/m", {x, s});
    std::string a = g.node("Add", "/a", {m, g.weight("bias", {1})});
    g.output(a);
    OnnxGraph graph = g.build();
    Prediction prediction = predictEngine(graph, version(10, 8));
    // Mul reads x besides the Sigmoid's output: it cannot join a PointWise layer that starts at the Sigmoid...
    const PredictedLayer* sigmoid = layerWith(prediction, "/s");
    ASSERT_NE(sigmoid, nullptr);
    EXPECT_EQ(sigmoid->kind, "PointWise");
    // ...but the constant Add joins the Mul.
    EXPECT_EQ(layerWith(prediction, "/a"), layerWith(prediction, "/m"));
}

TEST(Simulator, ShufflesMergeAndPureReshapesAreNoOps)
{
    GraphBuilder g;
    std::string x = g.input("x");
    std::string t = g.node("Transpose", "/t", {x});
    std::string r = g.node("Reshape", "/r", {t, g.int32Constant("shape", {2})});
    std::string r2 = g.node("Reshape", "/r2", {g.node("Relu", "/relu", {r}), g.int32Constant("shape2", {2})});
    g.output(r2);
    OnnxGraph graph = g.build();
    Prediction prediction = predictEngine(graph, version(8, 6));
    const PredictedLayer* shuffle = layerWith(prediction, "/t");
    ASSERT_NE(shuffle, nullptr);
    EXPECT_EQ(shuffle->kind, "Shuffle");
    EXPECT_EQ(layerWith(prediction, "/r"), shuffle);
    const PredictedLayer* reshape = layerWith(prediction, "/r2");
    ASSERT_NE(reshape, nullptr);
    EXPECT_EQ(reshape->kind, "NoOp");
}

TEST(Simulator, UnquantizedGemmIsMyelinOnTensorRT10AndAConvolutionOn8)
{
    GraphBuilder g;
    std::string x = g.input("x");
    std::string y = g.node("Gemm", "/fc/Gemm", {x, g.weight("fc.w", {10, 16}), g.weight("fc.b", {10})});
    g.output(g.node("Relu", "/fc/Relu", {y}));
    OnnxGraph graph = g.build();
    Prediction ten = predictEngine(graph, version(10, 14));
    ASSERT_NE(layerWith(ten, "/fc/Gemm"), nullptr);
    EXPECT_EQ(layerWith(ten, "/fc/Gemm")->kind, "Myelin");
    ASSERT_NE(layerWith(ten, "/fc/Relu"), nullptr);
    EXPECT_EQ(layerWith(ten, "/fc/Relu")->kind, "PointWise");
    Prediction eight = predictEngine(graph, version(8, 4));
    ASSERT_NE(layerWith(eight, "/fc/Gemm"), nullptr);
    EXPECT_EQ(layerWith(eight, "/fc/Gemm")->kind, "CaskConvolution");
    EXPECT_EQ(layerWith(eight, "/fc/Relu"), layerWith(eight, "/fc/Gemm"));
}

TEST(Simulator, ASpatialMeanIsAPoolingLayerAndALayerNormMeanSeedsMyelin)
{
    // torch's newer exporter writes adaptive_avg_pool2d as ReduceMean over the spatial axes: TensorRT makes the
    // average-pool-like Reduce a Pooling layer (reference 1.8), and the conv keeps its activation.
    GraphBuilder cnn;
    std::string x = cnn.qdq("/in_q", cnn.input("images", {1, 3, 8, 8}));
    std::string c = cnn.node("Conv", "/conv/Conv", {x, cnn.quantizedWeight("conv", 8, 3)});
    std::string mean = cnn.node("ReduceMean", "/pool/ReduceMean", {cnn.node("Relu", "/relu/Relu", {c})});
    cnn.intsAttribute("/pool/ReduceMean", "axes", {2, 3});
    cnn.output(mean);
    const OnnxGraph pooled = cnn.build();
    const Prediction pooling = predictEngine(pooled, version(10, 8));
    ASSERT_NE(layerWith(pooling, "/pool/ReduceMean"), nullptr);
    EXPECT_EQ(layerWith(pooling, "/pool/ReduceMean")->kind, "Pooling");
    EXPECT_EQ(layerWith(pooling, "/relu/Relu"), layerWith(pooling, "/conv/Conv"));

    // LayerNorm written out: the mean is subtracted from the ReduceMean's input; the region goes to Myelin.
    GraphBuilder ln;
    std::string t = ln.input("tokens", {1, 4, 16});
    std::string mu = ln.node("ReduceMean", "/ln/ReduceMean", {t});
    ln.intsAttribute("/ln/ReduceMean", "axes", {-1});
    std::string centred = ln.node("Sub", "/ln/Sub", {t, mu});
    std::string variance = ln.node("ReduceMean", "/ln/ReduceMean_1",
                                   {ln.node("Pow", "/ln/Pow", {centred, ln.weight("/ln/two", {}, 2.0f)})});
    ln.intsAttribute("/ln/ReduceMean_1", "axes", {-1});
    std::string deviation =
        ln.node("Sqrt", "/ln/Sqrt", {ln.node("Add", "/ln/Add", {variance, ln.weight("/ln/eps", {}, 1e-5f)})});
    ln.output(ln.node("Div", "/ln/Div", {centred, deviation}));
    const OnnxGraph normalized = ln.build();
    const Prediction norm = predictEngine(normalized, version(10, 8));
    ASSERT_NE(layerWith(norm, "/ln/ReduceMean"), nullptr);
    EXPECT_EQ(layerWith(norm, "/ln/ReduceMean")->kind, "Myelin");
    EXPECT_EQ(layerWith(norm, "/ln/Div"), layerWith(norm, "/ln/ReduceMean"));
}

TEST(Simulator, ConcatIsEliminatedAndSharedInputsAreCopied)
{
    GraphBuilder g;
    std::string x = g.input("x");
    std::string a = g.node("Relu", "/a", {x});
    std::string b = g.node("Sigmoid", "/b", {x});
    std::string c = g.node("Concat", "/cat", {a, b});
    g.intAttribute("/cat", "axis", 1);
    g.output(c);
    OnnxGraph alone = g.build();
    Prediction prediction = predictEngine(alone, version(8, 6));
    EXPECT_EQ(layerWith(prediction, "/cat"), nullptr);
    EXPECT_EQ(countRole(prediction, "concat-copy"), 0u);

    GraphBuilder shared;
    std::string x2 = shared.input("x");
    std::string a2 = shared.node("Relu", "/a", {x2});
    std::string b2 = shared.node("Sigmoid", "/b", {x2});
    std::string c2 = shared.node("Concat", "/cat", {a2, b2});
    shared.intAttribute("/cat", "axis", 1);
    shared.output(c2);
    shared.output(shared.node("Tanh", "/also_reads_a", {a2}));
    OnnxGraph reused = shared.build();
    EXPECT_EQ(countRole(predictEngine(reused, version(8, 6)), "concat-copy"), 1u);
}

TEST(Simulator, PrecisionFollowsTheBuildFlags)
{
    OnnxGraph graph = stem(false);
    Prediction fp32 = predictEngine(graph, version(8, 4, false));
    EXPECT_EQ(layerWith(fp32, "/pool/MaxPool")->outputPrecision, "FP32");
    Prediction fp16 = predictEngine(graph, version(8, 4, true));
    EXPECT_EQ(layerWith(fp16, "/pool/MaxPool")->outputPrecision, "FP16");
}

TEST(PredictCommand, JsonCarriesEveryLayerAndRejectsBadVersions)
{
    auto result = runCli({"predict", "--format", "json", "--trt-version", "8.4",
                          std::string(QDQ_SOURCE_DIR) + "/samples/c-resnet-conv-maxpool/model.onnx"});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    auto json = nlohmann::json::parse(result.out);
    EXPECT_EQ(json["schema"], "qdq-doctor/predict/1");
    ASSERT_FALSE(json["layers"].empty());
    for (const auto& layer : json["layers"])
    {
        for (const char* key : {"name", "kind", "onnx_nodes", "input_precision", "output_precision"})
        {
            EXPECT_TRUE(layer.contains(key)) << key << " missing in " << layer.dump();
        }
    }
    auto bad = runCli({"predict", "--trt-version", "eight",
                       std::string(QDQ_SOURCE_DIR) + "/samples/c-resnet-conv-maxpool/model.onnx"});
    EXPECT_EQ(bad.exitStatus, 2);
    EXPECT_NE(bad.err.find("--trt-version"), std::string::npos) << bad.err;
    auto notModel = runCli({"predict", std::string(QDQ_SOURCE_DIR) + "/samples/c-resnet-conv-maxpool/profile.json"});
    EXPECT_EQ(notModel.exitStatus, 2);
    EXPECT_NE(notModel.err.find("profile.json"), std::string::npos) << notModel.err;
}

// ---- real engines -------------------------------------------------------------------------------------------

namespace
{

struct RealEngineCounts
{
    std::size_t layers = 0; //!< ignoring reformats and no-ops
    std::size_t standaloneQdq = 0;
    std::size_t convWithAdd = 0;
    bool convActPool = false;
};

//! Counts of a real engine read from its layer-info alone (its node names are not those of our export).
RealEngineCounts realCounts(const std::filesystem::path& layerInfo)
{
    Inputs inputs;
    inputs.layerInfo = readLayerInfo(layerInfo.string());
    Correlation correlation = correlate(inputs);
    RealEngineCounts counts;
    for (const auto& mapping : correlation.layers)
    {
        const EngineLayer& layer = inputs.layerInfo->layers[mapping.layer];
        if (mapping.state == LayerState::kInsertedReformat || mapping.state == LayerState::kDropped ||
            layer.type == "NoOp")
        {
            continue;
        }
        ++counts.layers;
        counts.standaloneQdq += mapping.state == LayerState::kInsertedQdq;
        counts.convActPool = counts.convActPool || layer.type.find("ConvActPool") != std::string::npos;
        if (layer.type.find("Convolution") != std::string::npos || layer.type.find("ConvActPool") != std::string::npos)
        {
            counts.convWithAdd += layer.name.find(" + Add_") != std::string::npos;
        }
    }
    return counts;
}

//! A model of ../shared/models and the real A100 engine built from the same recipe.
struct ResnetRecipe
{
    const char* model;
    const char* folder;
};

//! How GoogleTest shows a parameter in test listings (instead of its bytes or pointers).
void PrintTo(const ResnetRecipe& recipe, std::ostream* out)
{
    *out << recipe.model << " vs " << recipe.folder;
}

} // namespace

class RealDataSimulatorResnet : public ::testing::TestWithParam<ResnetRecipe>
{
};

TEST_P(RealDataSimulatorResnet, MatchesTheA100EngineOfTheSameRecipe)
{
    REQUIRE_SHARED();
    const auto [model, folder] = GetParam();
    std::filesystem::path engineFolder = realdata(folder);
    std::filesystem::path layerInfo;
    for (const auto& entry : std::filesystem::directory_iterator(engineFolder))
    {
        if (entry.path().string().ends_with(".graph.json"))
        {
            layerInfo = entry.path();
        }
    }
    ASSERT_FALSE(layerInfo.empty());
    RealEngineCounts real = realCounts(layerInfo);

    OnnxGraph graph = readOnnx(sharedModel(model).string());
    // The engines were built by TensorRT 8.4 (MANIFEST.tsv), the QAT ones with --best, fp16 with --fp16.
    Prediction prediction = predictEngine(graph, version(8, 4));
    PredictionSummary summary = summarizePrediction(prediction, graph);
    std::size_t predicted = 0;
    for (const auto& layer : prediction.layers)
    {
        predicted += !layer.onnxNodes.empty() && layer.kind != "NoOp";
    }
    EXPECT_LE(predicted, real.layers + 1) << model;
    EXPECT_GE(predicted + 1, real.layers) << model;
    EXPECT_EQ(summary.standaloneQdq, real.standaloneQdq) << model;
    EXPECT_EQ(summary.convWithResidualAdd, real.convWithAdd) << model;
    EXPECT_EQ(summary.convActPool > 0, real.convActPool) << model;
}

namespace
{

//! What a layer name says, node by node, without the node names: "weight + QuantizeLinear + Conv + Add + Relu" for
//! both "layer1.0.conv2.weight + QuantizeLinear_32 + Conv_34 + Add_36 + Relu_37" (the A100 engines' older torch
//! names) and "layer1.0.conv2.conv.weight + /layer1/layer1.0/conv2/QuantizeLinear + /layer1/layer1.0/conv2/Conv +
//! ..." (the models in ../shared/models).
std::string opsOfName(std::string_view name)
{
    std::string ops;
    for (std::size_t start = 0; start <= name.size();)
    {
        std::size_t end = name.find(" + ", start);
        end = end == std::string_view::npos ? name.size() : end;
        std::string_view part = name.substr(start, end - start);
        std::string op;
        if (part.size() > 7 && part.substr(part.size() - 7) == ".weight")
        {
            op = "weight";
        }
        else
        {
            part = part.substr(part.rfind('/') == std::string_view::npos ? 0 : part.rfind('/') + 1);
            std::size_t digits = part.size();
            while (digits > 0 && part[digits - 1] >= '0' && part[digits - 1] <= '9')
            {
                --digits;
            }
            op = std::string(digits < part.size() && digits > 0 && part[digits - 1] == '_' ? part.substr(0, digits - 1)
                                                                                           : part);
        }
        ops += (ops.empty() ? "" : " + ") + op;
        start = end + 3;
    }
    return ops;
}

} // namespace

// The predicted conv layers are named as the real A100 engine of the same recipe names its convs (TensorRT 8.4): the
// quantized ones without their folded BatchNormalization and the Relu fused with it, the same multiset of names read
// op by op.
TEST_P(RealDataSimulatorResnet, NamesItsConvsAsTheA100EngineDoes)
{
    REQUIRE_SHARED();
    const auto [model, folder] = GetParam();
    std::filesystem::path layerInfo;
    for (const auto& entry : std::filesystem::directory_iterator(realdata(folder)))
    {
        if (entry.path().string().ends_with(".graph.json"))
        {
            layerInfo = entry.path();
        }
    }
    ASSERT_FALSE(layerInfo.empty());
    const EnginePlan engine = readLayerInfo(layerInfo.string());
    std::multiset<std::string> real;
    for (const auto& layer : engine.layers)
    {
        const std::string ops = opsOfName(layer.baseName());
        if (ops.find("Conv") != std::string::npos && layer.name.find("Reformatting") == std::string::npos)
        {
            real.insert(ops);
        }
    }
    const OnnxGraph graph = readOnnx(sharedModel(model).string());
    const Prediction prediction = predictEngine(graph, version(8, 4));
    std::multiset<std::string> predicted;
    for (const auto& layer : prediction.layers)
    {
        const std::string ops = opsOfName(layer.name);
        if (ops.find("Conv") != std::string::npos)
        {
            predicted.insert(ops);
        }
    }
    std::string realText;
    std::string predictedText;
    for (const auto& ops : real)
    {
        realText += "\n  " + ops;
    }
    for (const auto& ops : predicted)
    {
        predictedText += "\n  " + ops;
    }
    EXPECT_EQ(predicted, real) << "predicted:" << predictedText << "\nreal:" << realText;
}

INSTANTIATE_TEST_SUITE_P(
    Recipes, RealDataSimulatorResnet,
    ::testing::Values(ResnetRecipe{"resnet18-qat-convs.onnx", "trex-pt-resnet-a100-qat"},
                      ResnetRecipe{"resnet18-qat-residual.onnx", "trex-pt-resnet-a100-qat-residual"},
                      ResnetRecipe{"resnet18-qat-residual-qgap.onnx", "trex-pt-resnet-a100-qat-residual-qgap"},
                      ResnetRecipe{"resnet18-fp32.onnx", "trex-pt-resnet-a100-fp16"}),
    [](const auto& param)
    {
        std::string name = std::string(param.param.folder).substr(std::string("trex-pt-resnet-a100-").size());
        std::replace(name.begin(), name.end(), '-', '_');
        return name;
    });
TEST(RealDataSimulator, MnistLogWithItsModelIsPredictedExactly)
{
    REQUIRE_SHARED();
    InputFiles files;
    files.files = {realdata("lix-mnist-orin-trt8510-best/mnist.onnx").string(),
                   realdata("lix-mnist-orin-trt8510-best/trt_build_best.log").string()};
    Inputs inputs = loadInputs(files, Limits{});
    Report report = diagnose(inputs);
    ASSERT_TRUE(report.predictionCheck.has_value());
    const PredictionCheck& check = *report.predictionCheck;
    EXPECT_EQ(check.realLayers, 6u);
    EXPECT_EQ(check.predictedLayers, check.realLayers);
    EXPECT_EQ(check.exact, check.realLayers) << (check.disagreements.empty() ? "" : check.disagreements[0]);
}

TEST(RealDataSimulator, DiffHoldsAModelsPredictionAgainstItsRealEngine)
{
    REQUIRE_SHARED();
    auto result =
        runCli({"diff", "--format", "json", "--baseline", realdata("lix-mnist-orin-trt8510-best/mnist.onnx").string(),
                "--candidate", realdata("lix-mnist-orin-trt8510-best/trt_build_best.log").string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    auto json = nlohmann::json::parse(result.out);
    bool notedPrediction = false;
    for (const auto& note : json["notes"])
    {
        notedPrediction = notedPrediction || note.get<std::string>().find("predicted from") != std::string::npos;
    }
    EXPECT_TRUE(notedPrediction);
    // Every conv and pool of the model is one region with the real layer of the same nodes.
    std::size_t alignedByName = 0;
    for (const auto& region : json["regions"])
    {
        if (region["alignment"] == "onnx-names" && !region["baseline_layers"].empty() &&
            !region["candidate_layers"].empty())
        {
            ++alignedByName;
        }
    }
    EXPECT_GE(alignedByName, 4u) << result.out.substr(0, 2000);
}

TEST(Simulator, CyclesAndDanglingInputsEndInALayerListNotACrash)
{
    GraphBuilder g;
    std::string x = g.input("x");
    // /a reads /c's output, which /c computes from /b, which reads /a: a cycle; /d reads a tensor nobody writes.
    std::string a = g.node("Add", "/a", {x, "/c_out"}, {"/a_out"});
    std::string b = g.node("Relu", "/b", {a}, {"/b_out"});
    g.node("Sigmoid", "/c", {b}, {"/c_out"});
    std::string d = g.node("Mul", "/d", {b, "nowhere"}, {"/d_out"});
    g.output(d);
    OnnxGraph graph = g.build();
    for (int major : {0, 8, 10})
    {
        Prediction prediction = predictEngine(graph, version(major, 6));
        for (const char* node : {"/a", "/b", "/c", "/d"})
        {
            EXPECT_NE(layerWith(prediction, node), nullptr) << node << " on " << major;
        }
    }
}

TEST(Simulator, LongChainsArePredictedLayerByLayer)
{
    GraphBuilder g;
    std::string t = g.qdq("/in_q", g.input("x"));
    for (int i = 0; i < 2000; ++i)
    {
        const std::string name = "/b" + std::to_string(i);
        t = g.node("Conv", name + "/Conv", {t, g.quantizedWeight(name, 4, 4, 1)});
        t = g.qdq(name + "/out_q", g.node("Relu", name + "/Relu", {t}));
    }
    g.output(t);
    OnnxGraph graph = g.build();
    Prediction prediction = predictEngine(graph, version(10, 8));
    EXPECT_EQ(summarizePrediction(prediction, graph).standaloneQdq, 2u); // the input's Q and the output's DQ
    std::size_t convLayers = 0;
    for (const auto& layer : prediction.layers)
    {
        convLayers +=
            layer.kind == "CaskConvolution" && layer.inputPrecision == "INT8" && layer.outputPrecision == "INT8";
    }
    // Every conv takes its output Q (the last one too: its DQ, on the network output, is the standalone layer).
    EXPECT_EQ(convLayers, 2000u);
}

namespace
{

//! in -> Q/DQ -> conv -> {gate, Mul(conv, gate)} -> Q/DQ -> conv2, the gate a Sigmoid (SiLU) or a HardSigmoid
//! (HardSwish as torch exports it below opset 14), named /act/Sigmoid either way. sigmoidAlsoOutput makes the gate's
//! output a network output too (then it is not the conv's private activation).
OnnxGraph silu(bool sigmoidAlsoOutput, const std::string& gate = "Sigmoid")
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images"));
    std::string c = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)});
    std::string s = g.node(gate, "/act/Sigmoid", {c});
    std::string m = g.node("Mul", "/act/Mul", {c, s});
    std::string c2 = g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", m), g.quantizedWeight("conv2", 8, 8)});
    g.output(c2);
    if (sigmoidAlsoOutput)
    {
        g.output(s);
    }
    return g.build();
}

} // namespace

// Reference 1.8: Sigmoid and Mul(x, sigmoid(x)) are the conv's generic activation: `conv + PWN(Sigmoid, Mul)`.
TEST(Simulator, SiluIsTheConvsActivation)
{
    OnnxGraph graph = silu(false);
    Prediction prediction = predictEngine(graph, version(8, 6));
    const PredictedLayer* conv = layerWith(prediction, "/conv/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(layerWith(prediction, "/act/Sigmoid"), conv);
    EXPECT_EQ(layerWith(prediction, "/act/Mul"), conv);
    EXPECT_NE(conv->name.find("/conv/Conv + PWN(/act/Sigmoid, /act/Mul)"), std::string::npos) << conv->name;
    EXPECT_EQ(conv->outputPrecision, "INT8"); // the next conv's input Q fuses into it
}

// The same for HardSwish exported as Mul(x, HardSigmoid(x)): after PointWise fusion it is one single-input pointwise
// layer, the conv's generic activation (reference 1.8).
TEST(Simulator, HardSwishOfAHardSigmoidIsTheConvsActivation)
{
    OnnxGraph graph = silu(false, "HardSigmoid");
    Prediction prediction = predictEngine(graph, version(8, 6));
    const PredictedLayer* conv = layerWith(prediction, "/conv/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(layerWith(prediction, "/act/Sigmoid"), conv);
    EXPECT_EQ(layerWith(prediction, "/act/Mul"), conv);
    EXPECT_EQ(conv->outputPrecision, "INT8");
}

TEST(Simulator, SiluWhoseSigmoidIsAlsoANetworkOutputStaysOutOfTheConv)
{
    for (const std::string gate : {"Sigmoid", "HardSigmoid"})
    {
        OnnxGraph graph = silu(true, gate);
        Prediction prediction = predictEngine(graph, version(8, 6));
        const PredictedLayer* conv = layerWith(prediction, "/conv/Conv");
        const PredictedLayer* sigmoid = layerWith(prediction, "/act/Sigmoid");
        const PredictedLayer* mul = layerWith(prediction, "/act/Mul");
        ASSERT_NE(conv, nullptr);
        ASSERT_NE(sigmoid, nullptr);
        ASSERT_NE(mul, nullptr);
        EXPECT_NE(conv, sigmoid);
        EXPECT_NE(conv, mul);
        EXPECT_EQ(conv->name.find("Sigmoid"), std::string::npos) << conv->name;
    }
}

// Without a conv before it, a SiLU is one PointWise layer: the Mul reads the Sigmoid's own input.
TEST(Simulator, SiluAfterAnAddIsOnePointWiseLayer)
{
    GraphBuilder g;
    std::string x = g.node("Add", "/add/Add", {g.input("a"), g.input("b")});
    std::string s = g.node("Sigmoid", "/act/Sigmoid", {x});
    g.output(g.node("Mul", "/act/Mul", {x, s}));
    OnnxGraph graph = g.build();
    Prediction prediction = predictEngine(graph, version(8, 6));
    const PredictedLayer* sigmoid = layerWith(prediction, "/act/Sigmoid");
    ASSERT_NE(sigmoid, nullptr);
    EXPECT_EQ(layerWith(prediction, "/act/Mul"), sigmoid);
    EXPECT_EQ(sigmoid->kind, "PointWise");
}

namespace
{

//! in -> Q/DQ -> conv0 -> Relu -> Q/DQ x -> conv1 -> Reshape(conv1, dims) -> out, where dims = Concat(Cast(Shape(x))),
//! computed from x's DQ output. With floatReader, x's DQ output also feeds a float Sigmoid (a network output) instead
//! of the Shape, and the Reshape's dims come from the network input's shape.
OnnxGraph shapeFromQuantizedTensor(bool floatReader)
{
    GraphBuilder g;
    std::string in = g.input("images");
    std::string c0 = g.node("Conv", "/conv0/Conv", {g.qdq("/in_q", in), g.quantizedWeight("conv0", 8, 3)});
    std::string x = g.qdq("/x_q", g.node("Relu", "/relu0/Relu", {c0}));
    std::string c1 = g.node("Conv", "/conv1/Conv", {x, g.quantizedWeight("conv1", 8, 8)});
    std::string shape = g.node("Shape", "/dims/Shape", {floatReader ? in : x});
    std::string dims = g.node("Concat", "/dims/Concat", {g.node("Cast", "/dims/Cast", {shape})});
    g.intAttribute("/dims/Concat", "axis", 0);
    g.intAttribute("/dims/Cast", "to", 7);
    g.output(g.node("Reshape", "/out/Reshape", {c1, dims}));
    if (floatReader)
    {
        g.output(g.node("Sigmoid", "/side/Sigmoid", {x}));
    }
    return g.build();
}

} // namespace

// Shape reads dimensions only: what computes on them folds at build time (no layer), and a DQ read by a Shape still
// fuses into its quantized consumer (ShuffleNet's channel split and Swin's window reshapes compute their shapes so).
TEST(Simulator, ShapeComputationsFoldAndDoNotReadTheDequantizedValues)
{
    OnnxGraph graph = shapeFromQuantizedTensor(false);
    Prediction prediction = predictEngine(graph, version(10, 8));
    for (const char* node : {"/dims/Shape", "/dims/Cast", "/dims/Concat"})
    {
        EXPECT_EQ(layerWith(prediction, node), nullptr) << node;
    }
    const PredictedQdq* dq = prediction.find("/x_q/DequantizeLinear");
    ASSERT_NE(dq, nullptr);
    EXPECT_EQ(dq->fate, PredictedQdq::Fate::kFusedIntoConsumer) << dq->reason();
}

TEST(Simulator, AFloatReaderOfTheDequantizedValuesKeepsTheDequantizeStandalone)
{
    OnnxGraph graph = shapeFromQuantizedTensor(true);
    Prediction prediction = predictEngine(graph, version(10, 8));
    const PredictedQdq* dq = prediction.find("/x_q/DequantizeLinear");
    ASSERT_NE(dq, nullptr);
    EXPECT_NE(dq->fate, PredictedQdq::Fate::kFusedIntoConsumer) << dq->reason();
    EXPECT_NE(layerWith(prediction, "/side/Sigmoid"), nullptr);
}

namespace
{

//! in -> Q/DQ -> conv0 -> Relu -> Q/DQ -> Resize(x, "", "", sizes) -> Q/DQ -> conv1, where sizes is computed from the
//! network input's Shape (F.interpolate(size=...), DeepLabV3 and LR-ASPP) or, with sizesFromInput, is a network input.
OnnxGraph resizeWithComputedSizes(bool sizesFromInput)
{
    GraphBuilder g;
    std::string in = g.input("images");
    std::string c0 = g.node("Conv", "/conv0/Conv", {g.qdq("/in_q", in), g.quantizedWeight("conv0", 8, 3)});
    std::string x = g.qdq("/x_q", g.node("Relu", "/relu0/Relu", {c0}));
    std::string sizes =
        sizesFromInput ? g.input("sizes") : g.node("Cast", "/sizes/Cast", {g.node("Shape", "/sizes/Shape", {in})});
    if (!sizesFromInput)
    {
        g.intAttribute("/sizes/Cast", "to", 7);
    }
    std::string up = g.node("Resize", "/up/Resize", {x, "", "", sizes});
    g.output(g.node("Conv", "/conv1/Conv", {g.qdq("/conv1/in_q", up), g.quantizedWeight("conv1", 8, 8)}));
    return g.build();
}

} // namespace

// Sizes computed from a Shape are a build-time value, not an input that runs in float: DQ -> Resize -> Q is an INT8
// Resize (reference 1.8, quantizable non-weighted ops).
TEST(Simulator, ResizeWithSizesFromAShapeRunsInInt8)
{
    OnnxGraph graph = resizeWithComputedSizes(false);
    Prediction prediction = predictEngine(graph, version(10, 8));
    const PredictedLayer* resize = layerWith(prediction, "/up/Resize");
    ASSERT_NE(resize, nullptr);
    EXPECT_EQ(resize->inputPrecision, "INT8");
    EXPECT_EQ(resize->outputPrecision, "INT8");
    const PredictedQdq* dq = prediction.find("/x_q/DequantizeLinear");
    ASSERT_NE(dq, nullptr);
    EXPECT_NE(dq->fate, PredictedQdq::Fate::kStandalone) << dq->reason();
}

TEST(Simulator, ResizeWithSizesFromANetworkInputStaysFloat)
{
    OnnxGraph graph = resizeWithComputedSizes(true);
    Prediction prediction = predictEngine(graph, version(10, 8));
    const PredictedQdq* dq = prediction.find("/x_q/DequantizeLinear");
    ASSERT_NE(dq, nullptr);
    EXPECT_EQ(dq->fate, PredictedQdq::Fate::kStandalone) << dq->reason();
}

namespace
{

//! x -> Q/DQ twins (one per consumer, one scale) -> conv_a + relu, conv_b + relu; kernelB is conv_b's kernel size.
OnnxGraph siblings(long kernelB)
{
    GraphBuilder g;
    std::string x = g.node("Relu", "/stem/Relu", {g.input("images")});
    std::string a = g.node("Conv", "/a/Conv", {g.qdq("/a/in_q", x), g.quantizedWeight("a", 8, 3, 3)});
    std::string b = g.node("Conv", "/b/Conv", {g.qdq("/b/in_q", x), g.quantizedWeight("b", 16, 3, kernelB)});
    g.output(g.node("Relu", "/a/Relu", {a}));
    g.output(g.node("Relu", "/b/Relu", {b}));
    return g.build();
}

} // namespace

// Reference 1.8 and the 8.4 log lines `Merging layers: A + relu || B + relu`: sibling convs on one quantized input
// with the same kernel become one layer.
TEST(Simulator, SiblingConvsWithOneKernelMergeHorizontally)
{
    OnnxGraph graph = siblings(3);
    Prediction prediction = predictEngine(graph, version(8, 4));
    const PredictedLayer* a = layerWith(prediction, "/a/Conv");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(layerWith(prediction, "/b/Conv"), a);
    EXPECT_EQ(layerWith(prediction, "/b/Relu"), a);
    EXPECT_NE(a->name.find(" || "), std::string::npos) << a->name;
    EXPECT_FALSE(a->guess.empty());
}

// The real A100 ResNet engines keep a block's 1x1 downsample and its 3x3 conv apart: different kernels, no merge.
TEST(Simulator, SiblingConvsWithDifferentKernelsStayApart)
{
    OnnxGraph graph = siblings(1);
    Prediction prediction = predictEngine(graph, version(8, 4));
    const PredictedLayer* a = layerWith(prediction, "/a/Conv");
    const PredictedLayer* b = layerWith(prediction, "/b/Conv");
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_NE(a, b);
    EXPECT_EQ(a->name.find(" || "), std::string::npos);
}

// Merged layers hold at most 8 convs, in graph order: 36 siblings on one input give 5 layers of 8, 8, 8, 8 and 4
// convs (issue 29's TensorRT 8.2 FP16 build); 8 siblings still give one.
TEST(Simulator, SiblingConvsMergeInGroupsOfAtMostEight)
{
    for (int count : {36, 8})
    {
        GraphBuilder g;
        std::string x = g.node("Relu", "/stem/Relu", {g.input("images")});
        for (int i = 0; i < count; ++i)
        {
            const std::string name = "/c" + std::to_string(i);
            std::string conv =
                g.node("Conv", name + "/Conv", {g.qdq(name + "/in_q", x), g.quantizedWeight(name, 8, 3, 3)});
            g.output(g.node("Relu", name + "/Relu", {conv}));
        }
        OnnxGraph graph = g.build();
        Prediction prediction = predictEngine(graph, version(8, 2));
        std::vector<std::size_t> sizes;
        for (const PredictedLayer& layer : prediction.layers)
        {
            if (layer.name.find("/Conv") != std::string::npos)
            {
                std::size_t convs = 1;
                for (std::size_t at = layer.name.find(" || "); at != std::string::npos;
                     at = layer.name.find(" || ", at + 4))
                {
                    ++convs;
                }
                sizes.push_back(convs);
            }
        }
        if (count == 36)
        {
            EXPECT_EQ(sizes, std::vector<std::size_t>({8, 8, 8, 8, 4}));
            // In graph order: the first merged layer holds /c0 ... /c7.
            const PredictedLayer* first = layerWith(prediction, "/c0/Conv");
            ASSERT_NE(first, nullptr);
            EXPECT_EQ(layerWith(prediction, "/c7/Conv"), first);
            EXPECT_NE(layerWith(prediction, "/c8/Conv"), first);
        }
        else
        {
            EXPECT_EQ(sizes, std::vector<std::size_t>({8}));
        }
    }
}

// `predict --format json` writes the Q/DQ nodes' part of the JSON on a second thread while the layers are built, from
// 10,000 Q/DQ nodes on. The text must be the one the single-threaded writer gives, byte for byte.
TEST(PredictJson, WrittenBesideTheLayerBuilderItIsTheSameText)
{
    GraphBuilder builder;
    std::string x = builder.input("x", {1, 8, 16, 16});
    constexpr int kBlocks = 2600; // 2 Q/DQ pairs each: above the 10,000 Q/DQ nodes that start the second thread
    for (int i = 0; i < kBlocks; ++i)
    {
        const std::string prefix = "/block" + std::to_string(i);
        const std::string in = builder.qdq(prefix + "/in", x);
        const std::string w = builder.quantizedWeight(prefix + "/w", 8, 8, 1);
        const std::string conv = builder.node("Conv", prefix + "/Conv", {in, w});
        // Every third block adds its input back (a residual Add in float), the others end in a Relu.
        x = i % 3 == 0 ? builder.node("Add", prefix + "/Add", {conv, x})
                       : builder.node("Relu", prefix + "/Relu", {conv});
    }
    builder.output(x);
    const OnnxGraph graph = builder.build("many-qdq.onnx");

    const Prediction single = predictEngine(graph);
    ASSERT_GE(single.qdq.size(), 10000U);
    const std::string expected = renderPredictionJson(single, graph, "many-qdq.onnx");

    std::string streamed;
    std::size_t pieces = 0;
    const Prediction beside = predictEngineWritingJson(graph, SimulationOptions{}, "many-qdq.onnx",
                                                       [&](std::string_view text)
                                                       {
                                                           streamed += text;
                                                           ++pieces;
                                                       });
    EXPECT_EQ(streamed, expected);
    EXPECT_GT(pieces, 2U); // handed over in pieces, not as one string
    EXPECT_EQ(beside.layers.size(), single.layers.size());
    const auto json = nlohmann::json::parse(streamed);
    EXPECT_EQ(json["qdq_nodes"].size(), single.qdq.size());
}

// Below the threshold the same function writes on one thread; the text is the same too.
TEST(PredictJson, SmallModelWrittenInOnePieceIsTheSameText)
{
    GraphBuilder builder;
    const std::string in = builder.qdq("/in", builder.input("x", {1, 8, 16, 16}));
    const std::string conv = builder.node("Conv", "/Conv", {in, builder.quantizedWeight("/w", 8, 8, 1)});
    builder.output(builder.node("Relu", "/Relu", {conv}));
    const OnnxGraph graph = builder.build("small.onnx");
    std::string streamed;
    predictEngineWritingJson(graph, SimulationOptions{}, "small.onnx",
                             [&](std::string_view text) { streamed += text; });
    EXPECT_EQ(streamed, renderPredictionJson(predictEngine(graph), graph, "small.onnx"));
}
