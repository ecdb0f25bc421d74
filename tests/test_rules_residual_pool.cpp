// Positive and near-identical negative cases for the ResNet-family rules: qdq-inside-conv-epilogue,
// conv-act-pool-blocked, residual-input-not-quantized, qdq-between-conv-and-add, standalone-qdq, quantized-bias.
#include "graph_builder.h"

#include <gtest/gtest.h>

using namespace qdq;
using namespace qdq::test;

namespace
{

//! in -> Q/DQ -> conv0 -> relu0 -> [pool] -> r0; r0 -> Q/DQ -> conv1 -> relu1 -> Q/DQ -> conv2 -> Add(conv2, residual)
struct ResidualBlockOptions
{
    bool quantizeResidual = false;      //!< Q/DQ on the residual input of the Add
    bool quantizeConvSideOfAdd = false; //!< Q/DQ on the conv-output input of the Add
    bool qdqBetweenConvAndRelu = false; //!< conv0 -> Q/DQ -> relu0
    bool qdqBeforePool = false;         //!< relu0 -> Q/DQ -> MaxPool
};

OnnxGraph residualBlock(const ResidualBlockOptions& options)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images"));
    std::string c0 = g.node("Conv", "/conv0/Conv", {x, g.quantizedWeight("conv0", 8, 3)});
    if (options.qdqBetweenConvAndRelu)
    {
        c0 = g.qdq("/conv0/out_q", c0);
    }
    std::string r0 = g.node("Relu", "/relu0/Relu", {c0});
    if (options.qdqBeforePool)
    {
        r0 = g.qdq("/pool/in_q", r0);
    }
    std::string p0 = g.node("MaxPool", "/pool/MaxPool", {r0});
    std::string c1 = g.node("Conv", "/conv1/Conv", {g.qdq("/conv1/in_q", p0), g.quantizedWeight("conv1", 8, 8)});
    std::string r1 = g.node("Relu", "/relu1/Relu", {c1});
    std::string c2 = g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", r1), g.quantizedWeight("conv2", 8, 8)});
    std::string convSide = options.quantizeConvSideOfAdd ? g.qdq("/add/conv_q", c2) : c2;
    std::string residual = options.quantizeResidual ? g.qdq("/add/residual_q", p0) : p0;
    std::string sum = g.node("Add", "/add/Add", {convSide, residual});
    std::string out = g.node("Relu", "/relu2/Relu", {sum});
    g.output(out);
    return g.build();
}

} // namespace

TEST(RuleResidualInputNotQuantized, TriggersOnFloatResidual)
{
    Report report = runDiagnose(residualBlock({}), std::nullopt);
    auto findings = findingsOf(report, "residual-input-not-quantized");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_NE(findings[0].message.find("/add/Add"), std::string::npos);
    EXPECT_NE(findings[0].fix.find("/pool/MaxPool_out"), std::string::npos) << findings[0].fix;
}

TEST(RuleResidualInputNotQuantized, SilentWhenResidualQuantized)
{
    ResidualBlockOptions options;
    options.quantizeResidual = true;
    Report report = runDiagnose(residualBlock(options), std::nullopt);
    EXPECT_TRUE(findingsOf(report, "residual-input-not-quantized").empty());
}

namespace
{

//! ConvNeXt's Linear as torch exports it: x -> Q/DQ -> MatMul(x, W) -> Add(., b) where b is an Identity of an
//! initializer (a shared parameter); with biasFromIdentity false, the Add's other input is a second network input.
OnnxGraph matMulBiasAdd(bool biasFromIdentity)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("tokens", {1, 4, 8}));
    std::string mm = g.node("MatMul", "/fc/MatMul", {x, g.qdq("/fc/w_q", g.weight("fc.weight", {8, 8}))});
    std::string other =
        biasFromIdentity ? g.node("Identity", "/fc/Identity", {g.weight("fc.bias", {8})}) : g.input("skip", {1, 4, 8});
    g.output(g.node("Add", "/fc/Add", {mm, other}));
    return g.build();
}

} // namespace

// The constant second input of the Add is the MatMul's bias, not a residual, also through an Identity.
TEST(RuleResidualInputNotQuantized, SilentOnABiasBehindAnIdentity)
{
    EXPECT_TRUE(findingsOf(runDiagnose(matMulBiasAdd(true), std::nullopt), "residual-input-not-quantized").empty());
}

TEST(RuleResidualInputNotQuantized, TriggersOnAFloatInputBesideTheMatMul)
{
    auto findings = findingsOf(runDiagnose(matMulBiasAdd(false), std::nullopt), "residual-input-not-quantized");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_NE(findings[0].message.find("skip"), std::string::npos) << findings[0].message;
}

TEST(RuleQdqBetweenConvAndAdd, TriggersWhenBothAddInputsQuantized)
{
    ResidualBlockOptions options;
    options.quantizeResidual = true;
    options.quantizeConvSideOfAdd = true;
    Report report = runDiagnose(residualBlock(options), std::nullopt);
    auto findings = findingsOf(report, "qdq-between-conv-and-add");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_NE(findings[0].fix.find("/add/conv_q/QuantizeLinear"), std::string::npos) << findings[0].fix;
    EXPECT_NE(findings[0].message.find("instead of one Conv+Add"), std::string::npos) << findings[0].message;
    EXPECT_NE(findings[0].fix.find("keep the Q/DQ on the residual input"), std::string::npos) << findings[0].fix;
}

// ONNX Runtime quantizes a Linear's bias as a constant behind a DQ: the Add is the layer's bias, not a residual.
TEST(RuleQdqBetweenConvAndAdd, CallsAConstantSecondInputTheBias)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("tokens", {1, 4, 8}));
    std::string matmul = g.node("MatMul", "/fc/MatMul", {x, g.int8Weight("fc", 8, 8, 1)});
    std::string bias =
        g.node("DequantizeLinear", "/fc/bias_dq",
               {g.int8Constant("fc_bias", {8}), g.scale("/fc/bias_scale", 0.01f), g.zeroPoint("/fc/bias_zp")});
    std::string sum = g.node("Add", "/fc/Add", {bias, g.qdq("/fc/out_q", matmul)});
    g.output(g.qdq("/next_q", sum));
    Report report = runDiagnose(g.build(), std::nullopt);
    auto findings = findingsOf(report, "qdq-between-conv-and-add");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_NE(findings[0].message.find("instead of one MatMul with its bias"), std::string::npos)
        << findings[0].message;
    EXPECT_NE(findings[0].fix.find("folded into the layer as its bias"), std::string::npos) << findings[0].fix;
}

TEST(RuleQdqBetweenConvAndAdd, SilentWithOnlyResidualQuantized)
{
    ResidualBlockOptions options;
    options.quantizeResidual = true;
    Report report = runDiagnose(residualBlock(options), std::nullopt);
    EXPECT_TRUE(findingsOf(report, "qdq-between-conv-and-add").empty());
}

namespace
{

//! MobileNetV2 under ONNX Runtime's quantizer: block A's projection conv output (Q/DQ) feeds block B's expand conv and
//! B's Add; B's projection conv output (Q/DQ) is the Add's other input. With bothSidesShared, B's projection output
//! is read by a second conv too, so neither conv can take the Add.
OnnxGraph twoConvAdd(bool bothSidesShared)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images"));
    std::string a = g.qdq("/a/out_q", g.node("Conv", "/a/project/Conv", {x, g.quantizedWeight("a", 8, 3)}));
    std::string expand =
        g.node("Relu", "/b/expand/Relu", {g.node("Conv", "/b/expand/Conv", {a, g.quantizedWeight("bexpand", 8, 8)})});
    std::string b = g.qdq("/b/out_q", g.node("Conv", "/b/project/Conv",
                                             {g.qdq("/b/expand_q", expand), g.quantizedWeight("bproject", 8, 8)}));
    std::string sum = g.node("Add", "/b/Add", {a, b});
    if (bothSidesShared)
    {
        g.output(g.node("Conv", "/side/Conv", {b, g.quantizedWeight("side", 8, 8)}));
    }
    g.output(g.qdq("/b/add_q", sum));
    return g.build();
}

} // namespace

// The Add's first input comes from block A's conv, but that output also feeds block B's conv: it is the residual. The
// finding names block B's conv, whose output only the Add reads (removing A's Q/DQ would leave B's expand conv with a
// float input and not let the Add fuse anyway).
TEST(RuleQdqBetweenConvAndAdd, NamesTheConvWhoseOutputOnlyTheAddReads)
{
    Report report = runDiagnose(twoConvAdd(false), std::nullopt);
    auto findings = findingsOf(report, "qdq-between-conv-and-add");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_NE(findings[0].message.find("/b/project/Conv"), std::string::npos) << findings[0].message;
    ASSERT_EQ(findings[0].edits.size(), 1u);
    EXPECT_EQ(findings[0].edits[0].nodes,
              (std::vector<std::string>{"/b/out_q/QuantizeLinear", "/b/out_q/DequantizeLinear"}));
}

TEST(RuleQdqBetweenConvAndAdd, SilentWhenBothConvOutputsHaveOtherReaders)
{
    Report report = runDiagnose(twoConvAdd(true), std::nullopt);
    EXPECT_TRUE(findingsOf(report, "qdq-between-conv-and-add").empty());
}

TEST(RuleQdqInsideConvEpilogue, TriggersOnQdqBetweenConvAndRelu)
{
    ResidualBlockOptions options;
    options.quantizeResidual = true;
    options.qdqBetweenConvAndRelu = true;
    Report report = runDiagnose(residualBlock(options), std::nullopt);
    auto findings = findingsOf(report, "qdq-inside-conv-epilogue");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_NE(findings[0].message.find("/conv0/Conv"), std::string::npos);
    EXPECT_NE(findings[0].message.find("/relu0/Relu"), std::string::npos);
}

TEST(RuleQdqInsideConvEpilogue, SilentWhenQuantizedAfterActivation)
{
    ResidualBlockOptions options;
    options.quantizeResidual = true;
    Report report = runDiagnose(residualBlock(options), std::nullopt);
    EXPECT_TRUE(findingsOf(report, "qdq-inside-conv-epilogue").empty());
}

TEST(RuleConvActPoolBlocked, TriggersOnQdqBeforeMaxPool)
{
    ResidualBlockOptions options;
    options.quantizeResidual = true;
    options.qdqBeforePool = true;
    Report report = runDiagnose(residualBlock(options), std::nullopt);
    auto findings = findingsOf(report, "conv-act-pool-blocked");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_NE(findings[0].fix.find("/pool/in_q/QuantizeLinear"), std::string::npos) << findings[0].fix;
}

TEST(RuleConvActPoolBlocked, TriggersWhenPoolOutputFeedsFloatResidual)
{
    Report report = runDiagnose(residualBlock({}), std::nullopt);
    auto findings = findingsOf(report, "conv-act-pool-blocked");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_NE(findings[0].message.find("/add/Add"), std::string::npos) << findings[0].message;
}

TEST(RuleConvActPoolBlocked, SilentWhenEveryPoolConsumerIsQuantized)
{
    ResidualBlockOptions options;
    options.quantizeResidual = true;
    Report report = runDiagnose(residualBlock(options), std::nullopt);
    EXPECT_TRUE(findingsOf(report, "conv-act-pool-blocked").empty());
}

TEST(RuleQuantizedBias, TriggersOnInt32BiasBehindDequantize)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string bias = g.node("DequantizeLinear", "/conv/bias_DequantizeLinear",
                              {g.int32Constant("conv.bias_quantized", {8}), g.scale("/conv/bias_scale", 0.0005f)});
    g.output(g.node("Conv", "/conv/Conv", {x, g.int8Weight("conv", 8, 3), bias}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "quantized-bias");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kError);
    EXPECT_NE(findings[0].message.find("conv.bias_quantized"), std::string::npos);
}

TEST(RuleQuantizedBias, SilentOnFloatBias)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    g.output(g.node("Conv", "/conv/Conv", {x, g.int8Weight("conv", 8, 3), g.weight("conv.bias", {8})}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "quantized-bias").empty());
}

TEST(RuleStandaloneQdq, PredictsLoneQuantizeBeforeFloatOp)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string c = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)});
    std::string s = g.node("Softmax", "/head/Softmax", {c});
    std::string q = g.qdq("/head/out_q", s);
    g.output(g.node("Sigmoid", "/head/Sigmoid", {q}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "standalone-qdq");
    std::vector<std::string> nodes;
    for (const auto& finding : findings)
    {
        nodes.insert(nodes.end(), finding.onnxNodes.begin(), finding.onnxNodes.end());
    }
    EXPECT_NE(std::find(nodes.begin(), nodes.end(), "/head/out_q/QuantizeLinear"), nodes.end());
    EXPECT_NE(std::find(nodes.begin(), nodes.end(), "/head/out_q/DequantizeLinear"), nodes.end());
}

TEST(RuleStandaloneQdq, NoPredictionWhenQuantizeFeedsAConv)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string c = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)});
    std::string r = g.node("Relu", "/relu/Relu", {c});
    std::string c2 = g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", r), g.quantizedWeight("conv2", 8, 8)});
    g.output(c2);
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "standalone-qdq");
    for (const auto& finding : findings)
    {
        // Only the network-input Quantize may remain, as info.
        EXPECT_EQ(finding.severity, Severity::kInfo) << finding.message;
    }
}

namespace
{

const char* kInt8 = "Thirty-two wide channel vectorized row major Int8 format";
const char* kFp32 = "Row major linear FP32";

//! The TREx ResNet18 "qat" shape: conv1 FP32 out -> separate MaxPool -> reformat -> standalone Q; the pool output is
//! also the residual of a fused Conv+Add whose output is requantized by another standalone Q.
EnginePlan residualEngine(bool quantizedResidual)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    if (!quantizedResidual)
    {
        plan.layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"input.1", kFp32}}, {{"t125", kInt8}}, "QDQ"));
        plan.layers.push_back(
            layer("conv1.weight + QuantizeLinear_7 + Conv_9", "CaskConvolution", {{"t125", kInt8}}, {{"t136", kFp32}}));
        plan.layers.push_back(layer("MaxPool_12", "TiledPooling", {{"t136", kFp32}}, {{"r0", kFp32}}));
        plan.layers.push_back(layer("Reformatting CopyNode for Output Tensor 0 to MaxPool_12", "Reformat",
                                    {{"r0", kFp32}}, {{"inputs", kInt8}}, "REFORMAT"));
        plan.layers.push_back(layer("QuantizeLinear_15", "Reformat", {{"inputs", kInt8}}, {{"t140", kInt8}}, "QDQ"));
        plan.layers.push_back(layer("layer1.0.conv1.weight + QuantizeLinear_20 + Conv_22", "CaskConvolution",
                                    {{"t140", kInt8}}, {{"t154", kInt8}}));
        plan.layers.push_back(layer("layer1.0.conv2.weight + QuantizeLinear_32 + Conv_34 + Add_36 + Relu_37",
                                    "CaskConvolution", {{"t154", kInt8}, {"inputs", kInt8}}, {{"inputs.4", kInt8}}));
        plan.layers.push_back(layer("QuantizeLinear_40", "Reformat", {{"inputs.4", kInt8}}, {{"t169", kInt8}}, "QDQ"));
    }
    else
    {
        plan.layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"input.1", kFp32}}, {{"t125", kInt8}}, "QDQ"));
        plan.layers.push_back(layer("conv1.weight + QuantizeLinear_7 + Conv_9 + MaxPool_12", "ConvActPool",
                                    {{"t125", kInt8}}, {{"t140", kInt8}}));
        plan.layers.push_back(layer("layer1.0.conv1.weight + QuantizeLinear_20 + Conv_22", "CaskConvolution",
                                    {{"t140", kInt8}}, {{"t154", kInt8}}));
        plan.layers.push_back(layer("layer1.0.conv2.weight + QuantizeLinear_32 + Conv_34 + Add_42 + Relu_43",
                                    "CaskConvolution", {{"t154", kInt8}, {"t140", kInt8}}, {{"t175", kInt8}}));
    }
    plan.bindings = {"input.1"};
    plan.form = LayerListForm::kDetailed;
    return plan;
}

} // namespace

TEST(RuleEngineOnly, QatResidualShapeTriggersThreeRules)
{
    EnginePlan plan = residualEngine(false);
    Report report = runDiagnose(std::nullopt, plan, profileFor(plan));
    auto standalone = findingsOf(report, "standalone-qdq");
    ASSERT_EQ(standalone.size(), 1u);
    EXPECT_EQ(standalone[0].engineLayers.size(), 3u);
    ASSERT_TRUE(standalone[0].costMs.has_value());
    EXPECT_NEAR(*standalone[0].costMs, 0.03, 1e-9);
    auto residual = findingsOf(report, "residual-input-not-quantized");
    ASSERT_EQ(residual.size(), 1u);
    EXPECT_NE(residual[0].message.find("Add_36"), std::string::npos);
    // QuantizeLinear_15, QuantizeLinear_40 and the reformat of MaxPool_12's output that feeds both QuantizeLinear_15
    // and the residual input of Add_36.
    EXPECT_NEAR(residual[0].costMs.value_or(0), 0.03, 1e-9);
    auto pool = findingsOf(report, "conv-act-pool-blocked");
    ASSERT_EQ(pool.size(), 1u);
    EXPECT_TRUE(pool[0].likely);
}

TEST(RuleEngineOnly, QuantizedResidualShapeIsQuiet)
{
    EnginePlan plan = residualEngine(true);
    Report report = runDiagnose(std::nullopt, plan, profileFor(plan));
    EXPECT_TRUE(findingsOf(report, "residual-input-not-quantized").empty());
    EXPECT_TRUE(findingsOf(report, "conv-act-pool-blocked").empty());
    auto standalone = findingsOf(report, "standalone-qdq");
    ASSERT_EQ(standalone.size(), 1u); // only the network-input Quantize
    EXPECT_EQ(standalone[0].engineLayers, std::vector<std::string>{"QuantizeLinear_2"});
}

namespace
{

const char* kInt8Chw32 = "Thirty-two wide channel vectorized row major Int8 format";
const char* kInt8Chw4 = "Four wide channel vectorized row major Int8 format";
const char* kFp32Chw32 = "Thirty-two wide channel vectorized row major FP32 format";

//! Two MobileNetV2 inverted-residual blocks as the TRT 8.2 engine of trex-tests-mobilenet-qat-2022-04 builds them
//! (graph.json layers 27-35): the projection conv writes chw32 FP32, a builder reformat makes it linear FP32 for the
//! Scale-layer Quantize, and the same chw32 FP32 tensor is the residual of the next block's fused Conv+Add, whose
//! output goes the same way. With quantizedResidual, the Q/DQ on the residual lets every conv write INT8: the only
//! reformat left changes the residual's vector width (chw32 -> chw4), and no Quantize stands alone.
EnginePlan mobilenetResidualEngine(bool quantizedResidual)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    const std::string addLayer = "features.8.conv.2.weight + QuantizeLinear_381 + Conv_385 + Add_387";
    plan.layers.push_back(layer("QuantizeLinear_2", "Scale", {{"input1", kFp32}}, {{"317", kInt8Chw32}}));
    plan.layers.push_back(layer("features.7.conv.2.weight + QuantizeLinear_333 + Conv_337", "CaskConvolution",
                                {{"317", kInt8Chw32}}, {{"653", quantizedResidual ? kInt8Chw32 : kFp32Chw32}}));
    if (quantizedResidual)
    {
        plan.layers.push_back(layer("features.8.conv.0.0.weight + QuantizeLinear_347 + Conv_351 + PWN(Clip_355)",
                                    "CaskConvolution", {{"653", kInt8Chw32}}, {{"673", kInt8Chw32}}));
        plan.layers.push_back(layer("Reformatting CopyNode for Input Tensor 1 to " + addLayer, "Reformat",
                                    {{"653", kInt8Chw32}}, {{"Reformatted Input Tensor 1 to " + addLayer, kInt8Chw4}}));
        plan.layers.push_back(layer(addLayer, "CaskConvolution",
                                    {{"673", kInt8Chw32}, {"Reformatted Input Tensor 1 to " + addLayer, kInt8Chw4}},
                                    {{"705", kInt8Chw32}}));
    }
    else
    {
        plan.layers.push_back(layer("Reformatting CopyNode for Input Tensor 0 to QuantizeLinear_341", "Reformat",
                                    {{"653", kFp32Chw32}},
                                    {{"Reformatted Input Tensor 0 to QuantizeLinear_341", kFp32}}));
        plan.layers.push_back(layer("QuantizeLinear_341", "Scale",
                                    {{"Reformatted Input Tensor 0 to QuantizeLinear_341", kFp32}},
                                    {{"656", kInt8Chw32}}));
        plan.layers.push_back(layer("features.8.conv.0.0.weight + QuantizeLinear_347 + Conv_351 + PWN(Clip_355)",
                                    "CaskConvolution", {{"656", kInt8Chw32}}, {{"673", kInt8Chw32}}));
        plan.layers.push_back(
            layer(addLayer, "CaskConvolution", {{"673", kInt8Chw32}, {"653", kFp32Chw32}}, {{"702", kFp32Chw32}}));
        plan.layers.push_back(layer("Reformatting CopyNode for Input Tensor 0 to QuantizeLinear_390", "Reformat",
                                    {{"702", kFp32Chw32}},
                                    {{"Reformatted Input Tensor 0 to QuantizeLinear_390", kFp32}}));
        plan.layers.push_back(layer("QuantizeLinear_390", "Scale",
                                    {{"Reformatted Input Tensor 0 to QuantizeLinear_390", kFp32}},
                                    {{"705", kInt8Chw32}}));
    }
    plan.layers.push_back(layer("features.9.conv.0.0.weight + QuantizeLinear_396 + Conv_400 + PWN(Clip_404)",
                                "CaskConvolution", {{"705", kInt8Chw32}}, {{"722", kInt8Chw32}}));
    plan.bindings = {"input1", "722"};
    plan.form = LayerListForm::kDetailed;
    return plan;
}

bool names(const Finding& finding, const std::string& layerName)
{
    return std::find(finding.engineLayers.begin(), finding.engineLayers.end(), layerName) != finding.engineLayers.end();
}

} // namespace

TEST(RuleEngineOnly, ResidualThroughBuilderReformatsNamesTheAddAndItsReformats)
{
    EnginePlan plan = mobilenetResidualEngine(false);
    Report report = runDiagnose(std::nullopt, plan, profileFor(plan));
    auto residual = findingsOf(report, "residual-input-not-quantized");
    ASSERT_EQ(residual.size(), 1u);
    EXPECT_EQ(residual[0].onnxNodes, std::vector<std::string>{"Add_387"});
    for (const char* explained :
         {"Reformatting CopyNode for Input Tensor 0 to QuantizeLinear_341", "QuantizeLinear_341",
          "Reformatting CopyNode for Input Tensor 0 to QuantizeLinear_390", "QuantizeLinear_390"})
    {
        EXPECT_TRUE(names(residual[0], explained)) << explained;
    }
    // Four layers of 0.01 ms each, as profileFor gives them.
    EXPECT_NEAR(residual[0].costMs.value_or(0.0), 0.04, 1e-9);
}

TEST(RuleEngineOnly, ResidualQuantizedThroughABuilderReformatIsNotFlagged)
{
    EnginePlan plan = mobilenetResidualEngine(true);
    Report report = runDiagnose(std::nullopt, plan, profileFor(plan));
    EXPECT_TRUE(findingsOf(report, "residual-input-not-quantized").empty());
    auto standalone = findingsOf(report, "standalone-qdq");
    ASSERT_EQ(standalone.size(), 1u); // only the network-input Quantize
    EXPECT_EQ(standalone[0].engineLayers, std::vector<std::string>{"QuantizeLinear_2"});
}

TEST(RuleStandaloneQdq, QuantizeBehindABuilderReformatIsExplainedByTheResidual)
{
    EnginePlan plan = mobilenetResidualEngine(false);
    Report report = runDiagnose(std::nullopt, plan, profileFor(plan));
    auto standalone = findingsOf(report, "standalone-qdq");
    ASSERT_EQ(standalone.size(), 1u);
    // Not "add a Q/DQ pair on the input of \"Reformatting CopyNode for Input Tensor 0 to QuantizeLinear_341\"": the
    // walk goes through the reformat to the tensor 653, which is also the residual input of Add_387.
    EXPECT_EQ(standalone[0].fix.find("Reformatting CopyNode"), std::string::npos) << standalone[0].fix;
    EXPECT_NE(standalone[0].fix.find("for QuantizeLinear_341, QuantizeLinear_390: quantize the residual"),
              std::string::npos)
        << standalone[0].fix;
}

namespace
{

//! A float pooling whose output a standalone Quantize reads for the next conv, with or without a builder reformat
//! between them (the TRT 8.2 MobilenetV2 engine reformats chw32 FP32 to linear FP32 before its Scale-layer Quantize).
EnginePlan floatPoolThenQuantize(bool reformatBeforeQuantize)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.layers.push_back(layer("QuantizeLinear_2", "Scale", {{"input1", kFp32}}, {{"317", kInt8Chw32}}));
    plan.layers.push_back(layer("features.18.0.weight + QuantizeLinear_834 + Conv_838", "CaskConvolution",
                                {{"317", kInt8Chw32}}, {{"1157", kFp32Chw32}}));
    plan.layers.push_back(layer("AveragePool_843", "CaskPooling", {{"1157", kFp32Chw32}}, {{"1158", kFp32Chw32}}));
    std::string quantizeInput = "1158";
    if (reformatBeforeQuantize)
    {
        quantizeInput = "Reformatted Input Tensor 0 to QuantizeLinear_854";
        plan.layers.push_back(layer("Reformatting CopyNode for Input Tensor 0 to QuantizeLinear_854", "Reformat",
                                    {{"1158", kFp32Chw32}}, {{quantizeInput, kFp32}}));
    }
    plan.layers.push_back(layer("QuantizeLinear_854", "Scale", {{quantizeInput, kFp32}}, {{"1166", kInt8Chw4}}));
    plan.layers.push_back(layer("classifier.1.weight + QuantizeLinear_860 + Conv_864", "CaskConvolution",
                                {{"1166", kInt8Chw4}}, {{"1179", kFp32}}));
    plan.bindings = {"input1", "1179"};
    plan.form = LayerListForm::kDetailed;
    return plan;
}

} // namespace

TEST(RuleStandaloneQdq, FixNamesTheModelLayerBehindABuilderReformat)
{
    for (bool reformat : {false, true})
    {
        EnginePlan plan = floatPoolThenQuantize(reformat);
        Report report = runDiagnose(std::nullopt, plan, profileFor(plan));
        auto standalone = findingsOf(report, "standalone-qdq");
        ASSERT_EQ(standalone.size(), 1u) << reformat;
        // With or without the reformat, the advice is about the pooling that writes float, the layer of the model.
        EXPECT_NE(standalone[0].fix.find("for QuantizeLinear_854: add a Q/DQ pair on the input of \"AveragePool_843\""),
                  std::string::npos)
            << reformat << ": " << standalone[0].fix;
        EXPECT_EQ(standalone[0].fix.find("Reformatting CopyNode"), std::string::npos) << standalone[0].fix;
    }
}
