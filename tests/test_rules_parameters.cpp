// Positive and near-identical negative cases for the Q/DQ parameter and weight-path rules: nonzero-zero-point (R01),
// invalid-scale (R02), per-channel-activation (R03), weight-axis (R04), weighted-op-input-not-quantized (R05),
// weight-qdq-not-foldable (R06), int8-weight-initializer (R33); plus their findings on the real models.
#include "graph_builder.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

bool hasNode(const Finding& finding, const std::string& node)
{
    return std::find(finding.onnxNodes.begin(), finding.onnxNodes.end(), node) != finding.onnxNodes.end();
}

//! x -> Q -> DQ with the given scale and zero point initializers (names <prefix>/QuantizeLinear, .../DequantizeLinear).
std::string qdqWith(GraphBuilder& g, const std::string& prefix, const std::string& tensor, const std::string& scale,
                    const std::string& zeroPoint = "")
{
    std::vector<std::string> qInputs = {tensor, scale};
    if (!zeroPoint.empty())
    {
        qInputs.push_back(zeroPoint);
    }
    std::string q = g.node("QuantizeLinear", prefix + "/QuantizeLinear", qInputs);
    std::vector<std::string> dqInputs = {q, scale};
    if (!zeroPoint.empty())
    {
        dqInputs.push_back(zeroPoint);
    }
    return g.node("DequantizeLinear", prefix + "/DequantizeLinear", dqInputs);
}

//! A float weight initializer with a Q/DQ pair: `scaleCount` scale values, optional axis on both nodes.
std::string weightQdq(GraphBuilder& g, const std::string& prefix, std::vector<long> dims, long scaleCount,
                      std::optional<long> axis, float scaleValue = 0.01f)
{
    std::string w = g.weight(prefix + ".weight", dims);
    std::string s =
        scaleCount == 1
            ? g.scale(prefix + "/w_scale", scaleValue)
            : g.scaleVector(prefix + "/w_scale", std::vector<float>(static_cast<std::size_t>(scaleCount), scaleValue));
    std::string q = g.node("QuantizeLinear", prefix + "/_weight_quantizer/QuantizeLinear", {w, s});
    std::string dq = g.node("DequantizeLinear", prefix + "/_weight_quantizer/DequantizeLinear", {q, s});
    if (axis)
    {
        g.intAttribute(prefix + "/_weight_quantizer/QuantizeLinear", "axis", *axis);
        g.intAttribute(prefix + "/_weight_quantizer/DequantizeLinear", "axis", *axis);
    }
    return dq;
}

Report diagnoseWithVersion(const OnnxGraph& graph, const std::string& version)
{
    Inputs inputs;
    inputs.onnx = graph;
    Inputs::Source source;
    source.kind = InputKind::kBuildLog;
    source.path = "build.log";
    source.trtVersion = version;
    inputs.sources.push_back(source);
    return diagnose(inputs);
}

} // namespace

// ---- R01 nonzero-zero-point ---------------------------------------------------------------------------------------

TEST(RuleNonzeroZeroPoint, TriggersOnUint8ZeroPoint)
{
    GraphBuilder g;
    std::string x =
        qdqWith(g, "/in_q", g.input("x"), g.scale("/in_q/scale", 0.02f), g.zeroPoint("/in_q/zero_point", true, 128));
    g.output(g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "nonzero-zero-point");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kError);
    EXPECT_TRUE(hasNode(findings[0], "/in_q/QuantizeLinear"));
    EXPECT_TRUE(hasNode(findings[0], "/in_q/DequantizeLinear"));
    EXPECT_TRUE(contains(findings[0].message, "uint8")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].fix, "/in_q/zero_point")) << findings[0].fix;
    // The symmetric weight quantizer of the same conv is not reported.
    EXPECT_FALSE(hasNode(findings[0], "conv/_weight_quantizer/QuantizeLinear"));
}

TEST(RuleNonzeroZeroPoint, TriggersOnNonZeroInt8ZeroPoint)
{
    GraphBuilder g;
    std::string x =
        qdqWith(g, "/in_q", g.input("x"), g.scale("/in_q/scale", 0.02f), g.zeroPoint("/in_q/zero_point", false, 5));
    g.output(g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "nonzero-zero-point");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "[5]")) << findings[0].message;
    EXPECT_TRUE(hasNode(findings[0], "/in_q/QuantizeLinear"));
}

TEST(RuleNonzeroZeroPoint, SilentOnSymmetricInt8AndAbsentZeroPoints)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x")); // int8 zero point 0
    std::string c = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)});
    std::string y = qdqWith(g, "/out_q", c, g.scale("/out_q/scale", 0.02f)); // no zero point
    g.output(g.node("Conv", "/conv2/Conv", {y, g.quantizedWeight("conv2", 8, 8)}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "nonzero-zero-point").empty());
}

TEST(RuleNonzeroZeroPoint, AttachesTheParserErrorFromTheBuildLog)
{
    GraphBuilder g;
    std::string x =
        qdqWith(g, "/in_q", g.input("x"), g.scale("/in_q/scale", 0.02f), g.zeroPoint("/in_q/zero_point", true, 128));
    g.output(g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)}));
    Inputs inputs;
    inputs.onnx = g.build();
    BuildLog log;
    log.sourcePath = "build.log";
    log.errors.push_back({"[E] [TRT] ModelImporter.cpp:726: Assertion failed: shiftIsAllZeros(zeroPoint) && "
                          "\"Non-zero zero point is not supported\"",
                          42});
    inputs.buildLog = log;
    auto findings = findingsOf(diagnose(inputs), "nonzero-zero-point");
    ASSERT_EQ(findings.size(), 1u);
    bool logLine = false;
    for (const auto& evidence : findings[0].evidence)
    {
        logLine = logLine || (evidence.file == "build.log" && evidence.line == 42);
    }
    EXPECT_TRUE(logLine);
}

// ---- R02 invalid-scale ----------------------------------------------------------------------------------------------

// The log alone: the parser's scale assertion is the finding; an error line about something else is not.
TEST(RuleInvalidScale, LogAloneReportsTheParsersScaleErrorAndNotOtherErrors)
{
    const auto diagnoseLog = [](const std::string& errorText)
    {
        Inputs inputs;
        BuildLog log;
        log.sourcePath = "build.log";
        log.errors.push_back({errorText, 17});
        inputs.buildLog = log;
        return findingsOf(diagnose(inputs), "invalid-scale");
    };
    const auto findings = diagnoseLog("[E] [TRT] 3: [scaleLayer.cpp::validate::42] Error Code 3: API Usage Error "
                                      "(Parameter check failed: Scale coefficients must all be positive)");
    ASSERT_EQ(findings.size(), 1u);
    ASSERT_FALSE(findings[0].evidence.empty());
    EXPECT_EQ(findings[0].evidence.front().file, "build.log");
    EXPECT_EQ(findings[0].evidence.front().line, 17u);
    EXPECT_TRUE(diagnoseLog("[E] [TRT] 3: [convolutionLayer.cpp::validate::42] Error Code 3: API Usage Error "
                            "(Parameter check failed: kernel weights has count 0)")
                    .empty());
}

TEST(RuleInvalidScale, TriggersOnZeroChannelOfAWeightScale)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string w = g.weight("conv.weight", {4, 3, 3, 3});
    std::string s = g.scaleVector("conv/w_scale", {0.01f, 0.0f, 0.02f, 0.03f});
    std::string q = g.node("QuantizeLinear", "conv/_weight_quantizer/QuantizeLinear", {w, s});
    std::string dq = g.node("DequantizeLinear", "conv/_weight_quantizer/DequantizeLinear", {q, s});
    g.intAttribute("conv/_weight_quantizer/QuantizeLinear", "axis", 0);
    g.intAttribute("conv/_weight_quantizer/DequantizeLinear", "axis", 0);
    g.output(g.node("Conv", "/conv/Conv", {x, dq}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "invalid-scale");
    ASSERT_EQ(findings.size(), 1u); // one finding for the scale the Q and the DQ share
    EXPECT_EQ(findings[0].severity, Severity::kError);
    EXPECT_TRUE(hasNode(findings[0], "conv/_weight_quantizer/QuantizeLinear"));
    EXPECT_TRUE(hasNode(findings[0], "conv/_weight_quantizer/DequantizeLinear"));
    EXPECT_FALSE(hasNode(findings[0], "/in_q/QuantizeLinear"));
    EXPECT_TRUE(contains(findings[0].message, "channel 1")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].fix, "conv/w_scale")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "0.01")) << findings[0].fix; // the smallest positive scale
}

TEST(RuleInvalidScale, TriggersOnNegativeActivationScale)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"), -0.05f);
    g.output(g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "invalid-scale");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/in_q/QuantizeLinear"));
    EXPECT_TRUE(contains(findings[0].message, "-0.05")) << findings[0].message;
}

TEST(RuleInvalidScale, TriggersOnScaleComputedAtRunTime)
{
    GraphBuilder g;
    std::string x = g.input("x");
    std::string amax = g.node("ReduceMax", "/calib/ReduceMax", {x});
    std::string scale = g.node("Div", "/calib/Div", {amax, g.scale("/calib/127", 127.0f)});
    std::string dq = qdqWith(g, "/in_q", x, scale);
    g.output(g.node("Conv", "/conv/Conv", {dq, g.quantizedWeight("conv", 8, 3)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "invalid-scale");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "/calib/Div")) << findings[0].message;
    EXPECT_TRUE(hasNode(findings[0], "/calib/Div"));
    EXPECT_TRUE(hasNode(findings[0], "/in_q/DequantizeLinear"));
    EXPECT_FALSE(contains(findings[0].fix, "fold-constants")) << findings[0].fix; // not foldable: from the input
}

TEST(RuleInvalidScale, SuggestsFoldingAScaleComputedFromConstants)
{
    GraphBuilder g;
    std::string scale = g.node("Div", "/scale/Div", {g.scale("/scale/amax", 6.35f), g.scale("/scale/127", 127.0f)});
    std::string dq = qdqWith(g, "/in_q", g.input("x"), scale);
    g.output(g.node("Conv", "/conv/Conv", {dq, g.quantizedWeight("conv", 8, 3)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "invalid-scale");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].fix, "fold-constants")) << findings[0].fix;
}

TEST(RuleInvalidScale, SilentOnPositiveConstantScales)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"), 0.05f);
    g.output(g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "invalid-scale").empty());
}

// A scale below 2^-24 (the smallest FP16 value): 1e-6 / 127, the amax floor of ../shared/models/gen_qdq_models.py
// that yolov8lite-qat-convs' head quantizer has. Valid for TensorRT, so an info of its own, naming the Q and its scale.
TEST(RuleInvalidScale, InfoOnAnActivationScaleBelowTheSmallestHalfValue)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"), 1e-6f / 127.0f);
    g.output(g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "invalid-scale");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kInfo);
    EXPECT_TRUE(hasNode(findings[0], "/in_q/QuantizeLinear"));
    EXPECT_FALSE(hasNode(findings[0], "/in_q/DequantizeLinear")); // one name per quantizer
    EXPECT_TRUE(contains(findings[0].message, "/in_q/QuantizeLinear (7.87402e-09)")) << findings[0].message;
    EXPECT_TRUE(findings[0].edits.empty());
}

// The near-identical scale just above 2^-24 is an FP16 value: no finding.
TEST(RuleInvalidScale, SilentOnAnActivationScaleAHalfCanHold)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"), 6e-8f);
    g.output(g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "invalid-scale").empty());
}

// ---- R03 per-channel-activation ------------------------------------------------------------------------------------

TEST(RulePerChannelActivation, TriggersOnMultiValueActivationScale)
{
    GraphBuilder g;
    std::string x = qdqWith(g, "/in_q", g.input("x"), g.scaleVector("/in_q/scale", {0.02f, 0.04f, 0.03f}));
    g.output(g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "per-channel-activation");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/in_q/QuantizeLinear"));
    EXPECT_TRUE(hasNode(findings[0], "/in_q/DequantizeLinear"));
    EXPECT_FALSE(hasNode(findings[0], "conv/_weight_quantizer/DequantizeLinear"));
    EXPECT_TRUE(contains(findings[0].message, "default axis 1")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].fix, "per-tensor")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "0.04")) << findings[0].fix; // the largest channel scale
}

TEST(RulePerChannelActivation, SilentOnPerChannelWeightsAndPerTensorActivations)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string c = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)});
    g.output(g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", c), weightQdq(g, "conv2", {8, 8, 3, 3}, 8, 0)}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "per-channel-activation").empty());
}

TEST(RulePerChannelActivation, SilentOnPerChannelConstantOfAnElementwiseOp)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string c = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 3, 3)});
    std::string k = qdqWith(g, "/k_q", g.weight("k", {1, 3, 1, 1}), g.scaleVector("/k_q/scale", {0.1f, 0.2f, 0.3f}));
    g.output(g.node("Mul", "/mul/Mul", {c, k}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "per-channel-activation").empty());
}

// ---- R04 weight-axis ---------------------------------------------------------------------------------------------

TEST(RuleWeightAxis, TriggersOnConvWeightQuantizedAlongInputChannels)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    g.output(g.node("Conv", "/conv/Conv", {x, weightQdq(g, "conv", {8, 8, 3, 3}, 8, 1)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "weight-axis");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kWarning);
    EXPECT_TRUE(hasNode(findings[0], "/conv/Conv"));
    EXPECT_TRUE(hasNode(findings[0], "conv/_weight_quantizer/DequantizeLinear"));
    EXPECT_TRUE(contains(findings[0].message, "axis 1 instead of axis 0")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].fix, "axis=0")) << findings[0].fix;
}

TEST(RuleWeightAxis, SilentOnConvWeightQuantizedAlongOutputChannels)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    g.output(g.node("Conv", "/conv/Conv", {x, weightQdq(g, "conv", {8, 8, 3, 3}, 8, 0)}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "weight-axis").empty());
}

TEST(RuleWeightAxis, ErrorWhenScaleLengthDoesNotMatchTheWeight)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    g.output(g.node("Conv", "/conv/Conv", {x, weightQdq(g, "conv", {8, 3, 3, 3}, 3, 0)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "weight-axis");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kError);
    EXPECT_TRUE(contains(findings[0].message, "do not match dimension 0")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].fix, "with 8 scale values")) << findings[0].fix;
}

TEST(RuleWeightAxis, GemmAxisFollowsTransB)
{
    auto gemm = [](long transB, long axis)
    {
        GraphBuilder g;
        std::string x = g.qdq("/in_q", g.input("x"));
        // transB=1: B is [N=16, K=32]; transB=0: B is [K=32, N=16].
        std::vector<long> dims = transB != 0 ? std::vector<long>{16, 32} : std::vector<long>{32, 16};
        long count = dims[static_cast<std::size_t>(axis)];
        g.output(g.node("Gemm", "/fc/Gemm", {x, weightQdq(g, "fc", dims, count, axis)}));
        g.intAttribute("/fc/Gemm", "transB", transB);
        return findingsOf(runDiagnose(g.build(), std::nullopt), "weight-axis");
    };
    EXPECT_TRUE(gemm(1, 0).empty());
    EXPECT_TRUE(gemm(0, 1).empty());
    auto wrongTransposed = gemm(1, 1);
    ASSERT_EQ(wrongTransposed.size(), 1u);
    EXPECT_TRUE(contains(wrongTransposed[0].message, "transB=1")) << wrongTransposed[0].message;
    EXPECT_TRUE(contains(wrongTransposed[0].fix, "axis=0")) << wrongTransposed[0].fix;
    auto wrongPlain = gemm(0, 0);
    ASSERT_EQ(wrongPlain.size(), 1u);
    EXPECT_TRUE(contains(wrongPlain[0].fix, "axis=1")) << wrongPlain[0].fix;
}

TEST(RuleWeightAxis, MatMulConstantWeightUsesTheLastAxis)
{
    auto matmul = [](long axis)
    {
        GraphBuilder g;
        std::string x = g.qdq("/in_q", g.input("x"));
        std::vector<long> dims = {32, 16};
        g.output(
            g.node("MatMul", "/fc/MatMul", {x, weightQdq(g, "fc", dims, dims[static_cast<std::size_t>(axis)], axis)}));
        return findingsOf(runDiagnose(g.build(), std::nullopt), "weight-axis");
    };
    EXPECT_TRUE(matmul(1).empty());
    auto wrong = matmul(0);
    ASSERT_EQ(wrong.size(), 1u);
    EXPECT_TRUE(hasNode(wrong[0], "/fc/MatMul"));
    EXPECT_TRUE(contains(wrong[0].fix, "axis=1")) << wrong[0].fix;
}

TEST(RuleWeightAxis, ConvTransposeIsVersionDependent)
{
    // ConvTranspose weight [C_in=8, C_out=4, 2, 2].
    auto deconv = [](std::optional<long> axis, long count, const std::string& version)
    {
        GraphBuilder g;
        std::string x = g.qdq("/in_q", g.input("x"));
        g.output(g.node("ConvTranspose", "/up/ConvTranspose", {x, weightQdq(g, "up", {8, 4, 2, 2}, count, axis)}));
        return version.empty() ? findingsOf(runDiagnose(g.build(), std::nullopt), "weight-axis")
                               : findingsOf(diagnoseWithVersion(g.build(), version), "weight-axis");
    };
    // Per-output-channel (axis 1): warned on 8.x and when the version is unknown; info on 10.x.
    auto on8 = deconv(1, 4, "8.5.2");
    ASSERT_EQ(on8.size(), 1u);
    EXPECT_EQ(on8[0].severity, Severity::kWarning);
    EXPECT_TRUE(on8[0].likely);
    EXPECT_TRUE(contains(on8[0].message, "version-dependent")) << on8[0].message;
    EXPECT_TRUE(contains(on8[0].fix, "per tensor")) << on8[0].fix;
    auto unknown = deconv(1, 4, "");
    ASSERT_EQ(unknown.size(), 1u);
    EXPECT_EQ(unknown[0].severity, Severity::kWarning);
    auto on10 = deconv(1, 4, "10.8.0");
    ASSERT_EQ(on10.size(), 1u);
    EXPECT_EQ(on10[0].severity, Severity::kInfo);
    // Axis 0 is what the 8.x kernels assume: silent on 8.x; per-tensor is silent everywhere.
    EXPECT_TRUE(deconv(0, 8, "8.5.2").empty());
    EXPECT_TRUE(deconv(std::nullopt, 1, "").empty());
    EXPECT_TRUE(deconv(std::nullopt, 1, "8.5.2").empty());
}

// ---- R05 weighted-op-input-not-quantized --------------------------------------------------------------------------

TEST(RuleWeightedOpInputNotQuantized, TriggersOnFloatWeightWithQuantizedData)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string c = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)});
    std::string r = g.node("Relu", "/relu/Relu", {c});
    g.output(g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", r), g.weight("conv2.weight", {8, 8, 3, 3})}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "weighted-op-input-not-quantized");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kWarning);
    EXPECT_TRUE(hasNode(findings[0], "/conv2/Conv"));
    EXPECT_TRUE(hasNode(findings[0], "/conv2/in_q/DequantizeLinear"));
    EXPECT_TRUE(contains(findings[0].fix, "conv2.weight")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "axis=0")) << findings[0].fix;
}

TEST(RuleWeightedOpInputNotQuantized, TriggersOnFloatDataWithQuantizedWeight)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string c = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)});
    std::string r = g.node("Relu", "/relu/Relu", {c});
    std::string c2 = g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", r, 0.07f), g.quantizedWeight("conv2", 8, 8)});
    g.output(g.node("Conv", "/conv3/Conv", {r, g.quantizedWeight("conv3", 8, 8)}));
    g.output(c2);
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "weighted-op-input-not-quantized");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/conv3/Conv"));
    EXPECT_TRUE(hasNode(findings[0], "conv3/_weight_quantizer/DequantizeLinear"));
    EXPECT_TRUE(contains(findings[0].fix, "/relu/Relu_out")) << findings[0].fix;
    // The same tensor is already quantized for /conv2/Conv with scale 0.07: the fix reuses it.
    EXPECT_TRUE(contains(findings[0].fix, "/conv2/in_q/QuantizeLinear")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "0.07")) << findings[0].fix;
}

TEST(RuleWeightedOpInputNotQuantized, SilentOnFullyQuantizedOpsThroughConcat)
{
    GraphBuilder g;
    std::string a = g.qdq("/a_q", g.input("a"));
    std::string b = g.qdq("/b_q", g.input("b"));
    std::string cat = g.node("Concat", "/cat/Concat", {a, b});
    g.intAttribute("/cat/Concat", "axis", 1);
    g.output(g.node("Conv", "/conv/Conv", {cat, g.quantizedWeight("conv", 8, 6)}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "weighted-op-input-not-quantized").empty());
}

TEST(RuleWeightedOpInputNotQuantized, FullyFloatOpIsOnlyInfo)
{
    GraphBuilder g;
    std::string stem = g.node("Conv", "/stem/Conv", {g.input("x"), g.weight("stem.weight", {8, 3, 3, 3})});
    std::string c = g.node("Conv", "/conv/Conv", {g.qdq("/conv/in_q", stem), g.quantizedWeight("conv", 8, 8)});
    g.output(c);
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "weighted-op-input-not-quantized");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kInfo);
    EXPECT_EQ(findings[0].onnxNodes, std::vector<std::string>{"/stem/Conv"});
}

TEST(RuleWeightedOpInputNotQuantized, SilentOnFloatModelAndWeightOnlyModel)
{
    {
        GraphBuilder g;
        g.output(g.node("Conv", "/conv/Conv", {g.input("x"), g.weight("conv.weight", {8, 3, 3, 3})}));
        EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "weighted-op-input-not-quantized").empty());
    }
    {
        // Weight-only quantization: DQ on the MatMul weights, no activation Q/DQ anywhere.
        GraphBuilder g;
        std::string h = g.node("MatMul", "/fc1/MatMul", {g.input("x"), weightQdq(g, "fc1", {32, 16}, 16, 1)});
        g.output(g.node("MatMul", "/fc2/MatMul", {h, weightQdq(g, "fc2", {16, 8}, 8, 1)}));
        EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "weighted-op-input-not-quantized").empty());
    }
}

namespace
{

const char* kInt8 = "Thirty-two wide channel vectorized row major Int8 format";
const char* kFp32 = "Row major linear FP32";

EngineLayer withWeights(EngineLayer l, Precision weights)
{
    l.weightsPrecision = weights;
    return l;
}

} // namespace

TEST(RuleWeightedOpInputNotQuantized, EngineFloatConvBehindAStandaloneDequantize)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"input", kFp32}}, {{"t1", kInt8}}, "QDQ"));
    plan.layers.push_back(withWeights(
        layer("conv1.weight + QuantizeLinear_7 + Conv_9", "CaskConvolution", {{"t1", kInt8}}, {{"t2", kInt8}}),
        Precision::kINT8));
    plan.layers.push_back(layer("DequantizeLinear_12", "Reformat", {{"t2", kInt8}}, {{"t3", kFp32}}, "QDQ"));
    plan.layers.push_back(
        withWeights(layer("Conv_14", "CaskConvolution", {{"t3", kFp32}}, {{"t4", kFp32}}), Precision::kFP32));
    auto findings = findingsOf(runDiagnose(std::nullopt, plan), "weighted-op-input-not-quantized");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_TRUE(contains(findings[0].message, "likely")) << findings[0].message;
    EXPECT_EQ(findings[0].engineLayers, (std::vector<std::string>{"Conv_14", "DequantizeLinear_12"}));
}

TEST(RuleWeightedOpInputNotQuantized, EngineInt8WeightsWithFloatInput)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(withWeights(
        layer("fc.weight + /fc/Gemm", "CaskGemmConvolution", {{"x", kFp32}}, {{"y", kFp32}}), Precision::kINT8));
    auto findings = findingsOf(runDiagnose(std::nullopt, plan), "weighted-op-input-not-quantized");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].engineLayers, std::vector<std::string>{"fc.weight + /fc/Gemm"});
}

TEST(RuleWeightedOpInputNotQuantized, EngineSilentOnQuantizedAndPlainFloatConvs)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    // A float stem conv fed by the network input, then a quantized conv, then a float head conv fed through a builder
    // reformat (not a Q/DQ of the model).
    plan.layers.push_back(
        withWeights(layer("Conv_0", "CaskConvolution", {{"input", kFp32}}, {{"t0", kFp32}}), Precision::kFP32));
    plan.layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"t0", kFp32}}, {{"t1", kInt8}}, "QDQ"));
    plan.layers.push_back(withWeights(
        layer("conv1.weight + QuantizeLinear_7 + Conv_9", "CaskConvolution", {{"t1", kInt8}}, {{"t2", kInt8}}),
        Precision::kINT8));
    plan.layers.push_back(layer("Reformatting CopyNode for Input Tensor 0 to Conv_14", "Reformat", {{"t2", kInt8}},
                                {{"t3", kFp32}}, "REFORMAT"));
    plan.layers.push_back(
        withWeights(layer("Conv_14", "CaskConvolution", {{"t3", kFp32}}, {{"t4", kFp32}}), Precision::kFP32));
    EXPECT_TRUE(findingsOf(runDiagnose(std::nullopt, plan), "weighted-op-input-not-quantized").empty());
}

// ---- R06 weight-qdq-not-foldable ----------------------------------------------------------------------------------

TEST(RuleWeightQdqNotFoldable, TriggersOnTransposeBetweenInitializerAndQuantize)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string t = g.node("Transpose", "/fc/weight/Transpose", {g.weight("fc.weight", {16, 32})});
    g.intsAttribute("/fc/weight/Transpose", "perm", {1, 0});
    std::string s = g.scaleVector("fc/w_scale", std::vector<float>(16, 0.01f));
    std::string q = g.node("QuantizeLinear", "/fc/_weight_quantizer/QuantizeLinear", {t, s});
    std::string dq = g.node("DequantizeLinear", "/fc/_weight_quantizer/DequantizeLinear", {q, s});
    g.intAttribute("/fc/_weight_quantizer/QuantizeLinear", "axis", 1);
    g.intAttribute("/fc/_weight_quantizer/DequantizeLinear", "axis", 1);
    g.output(g.node("MatMul", "/fc/MatMul", {x, dq}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "weight-qdq-not-foldable");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/fc/MatMul"));
    EXPECT_TRUE(hasNode(findings[0], "/fc/weight/Transpose"));
    EXPECT_TRUE(contains(findings[0].message, "fc.weight -> Transpose -> /fc/_weight_quantizer/QuantizeLinear"))
        << findings[0].message;
    EXPECT_TRUE(contains(findings[0].fix, "Transpose /fc/weight/Transpose into the initializer fc.weight"))
        << findings[0].fix;
}

TEST(RuleWeightQdqNotFoldable, TriggersOnTransposeBetweenDequantizeAndOp)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string dq = weightQdq(g, "fc", {16, 32}, 16, 0);
    std::string t = g.node("Transpose", "/fc/Transpose", {dq});
    g.intsAttribute("/fc/Transpose", "perm", {1, 0});
    g.output(g.node("MatMul", "/fc/MatMul", {x, t}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "weight-qdq-not-foldable");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/fc/Transpose"));
    EXPECT_TRUE(contains(findings[0].fix, "fc/_weight_quantizer/DequantizeLinear feeds /fc/MatMul directly"))
        << findings[0].fix;
}

TEST(RuleWeightQdqNotFoldable, SilentOnDirectAndIdentityWeightPaths)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    std::string h = g.node("MatMul", "/fc/MatMul", {x, weightQdq(g, "fc", {32, 16}, 16, 1)});
    // A shared weight exported through Identity.
    std::string shared = g.node("Identity", "/fc2/Identity", {g.weight("fc2.weight", {16, 8})});
    std::string s = g.scaleVector("fc2/w_scale", std::vector<float>(8, 0.01f));
    std::string q = g.node("QuantizeLinear", "/fc2/_weight_quantizer/QuantizeLinear", {shared, s});
    std::string dq = g.node("DequantizeLinear", "/fc2/_weight_quantizer/DequantizeLinear", {q, s});
    g.intAttribute("/fc2/_weight_quantizer/QuantizeLinear", "axis", 1);
    g.intAttribute("/fc2/_weight_quantizer/DequantizeLinear", "axis", 1);
    g.output(g.node("MatMul", "/fc2/MatMul", {g.qdq("/fc2/in_q", h), dq}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "weight-qdq-not-foldable").empty());
}

TEST(RuleWeightQdqNotFoldable, EngineStandaloneWeightQuantizer)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(
        layer("/fc/_input_quantizer/QuantizeLinear", "Reformat", {{"x", kFp32}}, {{"x_q", kInt8}}, "QDQ"));
    plan.layers.push_back(
        layer("/fc/_weight_quantizer/QuantizeLinear", "Reformat", {{"fc.weight_t", kFp32}}, {{"w_q", kInt8}}, "QDQ"));
    plan.layers.push_back(
        layer("/fc/MatMul", "CaskGemmMatrixMultiply", {{"x_q", kInt8}, {"w_q", kInt8}}, {{"y", kFp32}}));
    auto findings = findingsOf(runDiagnose(std::nullopt, plan), "weight-qdq-not-foldable");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_EQ(findings[0].engineLayers, std::vector<std::string>{"/fc/_weight_quantizer/QuantizeLinear"});
}

// ---- R33 int8-weight-initializer -----------------------------------------------------------------------------------

TEST(RuleInt8WeightInitializer, InfoWhenVersionUnknownErrorOnTensorRT84)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    g.output(g.node("Conv", "/conv/Conv", {x, g.int8Weight("conv", 8, 3)}));
    OnnxGraph graph = g.build();
    auto unknown = findingsOf(runDiagnose(graph, std::nullopt), "int8-weight-initializer");
    ASSERT_EQ(unknown.size(), 1u);
    EXPECT_EQ(unknown[0].severity, Severity::kInfo);
    EXPECT_EQ(unknown[0].onnxNodes, std::vector<std::string>{"conv/weight_DequantizeLinear"});
    EXPECT_TRUE(contains(unknown[0].message, "conv.weight_quantized")) << unknown[0].message;
    auto on84 = findingsOf(diagnoseWithVersion(graph, "8.4.3"), "int8-weight-initializer");
    ASSERT_EQ(on84.size(), 1u);
    EXPECT_EQ(on84[0].severity, Severity::kError);
    EXPECT_TRUE(contains(on84[0].fix, "AddQDQPairToWeight")) << on84[0].fix;
    // A TensorRT 8.5.2 build log shows the parser taking an INT8 weight behind a DQ: info, likely.
    auto on85 = findingsOf(diagnoseWithVersion(graph, "8.5.2"), "int8-weight-initializer");
    ASSERT_EQ(on85.size(), 1u);
    EXPECT_EQ(on85[0].severity, Severity::kInfo);
    EXPECT_TRUE(on85[0].likely);
    auto on10 = findingsOf(diagnoseWithVersion(graph, "10.3.0"), "int8-weight-initializer");
    ASSERT_EQ(on10.size(), 1u);
    EXPECT_EQ(on10[0].severity, Severity::kInfo);
}

TEST(RuleInt8WeightInitializer, SilentOnFloatWeightsWithQdqPair)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x"));
    g.output(g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)}));
    EXPECT_TRUE(findingsOf(diagnoseWithVersion(g.build(), "8.4.3"), "int8-weight-initializer").empty());
}

// ---- real models ---------------------------------------------------------------------------------------------------

namespace
{

Report diagnoseFiles(const std::vector<std::string>& files)
{
    InputFiles input;
    input.files = files;
    return diagnose(loadInputs(input, Limits{}));
}

const std::vector<std::string> kParameterRules = {"nonzero-zero-point",
                                                  "invalid-scale",
                                                  "per-channel-activation",
                                                  "weight-axis",
                                                  "weighted-op-input-not-quantized",
                                                  "weight-qdq-not-foldable",
                                                  "int8-weight-initializer"};

} // namespace

TEST(RealDataRulesParameters, PolygraphyQdqConvHasAsymmetricPerChannelActivation)
{
    REQUIRE_SHARED();
    Report report = diagnoseFiles({realdata("polygraphy-qdq-conv-onnx/qdq_conv.onnx").string()});
    // Q and DQ on the Conv's data input use uint8 zero points [84, 24, 196] and a 3-value scale without axis.
    auto zeroPoint = findingsOf(report, "nonzero-zero-point");
    ASSERT_EQ(zeroPoint.size(), 1u);
    EXPECT_TRUE(hasNode(zeroPoint[0], "onnx_graphsurgeon_node_1"));
    EXPECT_TRUE(hasNode(zeroPoint[0], "onnx_graphsurgeon_node_3"));
    EXPECT_TRUE(contains(zeroPoint[0].message, "84, 24, 196")) << zeroPoint[0].message;
    auto perChannel = findingsOf(report, "per-channel-activation");
    ASSERT_EQ(perChannel.size(), 1u);
    EXPECT_TRUE(hasNode(perChannel[0], "onnx_graphsurgeon_node_1"));
    EXPECT_TRUE(hasNode(perChannel[0], "onnx_graphsurgeon_node_3"));
    EXPECT_TRUE(contains(perChannel[0].message, "Conv_0")) << perChannel[0].message;
    EXPECT_TRUE(findingsOf(report, "invalid-scale").empty());
    // Conv_0's weight Weights_0 is a plain float initializer while its data input is dequantized: half-quantized.
    auto weighted = findingsOf(report, "weighted-op-input-not-quantized");
    ASSERT_EQ(weighted.size(), 1u);
    EXPECT_EQ(weighted[0].severity, Severity::kWarning);
    EXPECT_TRUE(hasNode(weighted[0], "Conv_0"));
    EXPECT_TRUE(contains(weighted[0].fix, "Weights_0")) << weighted[0].fix;
}

TEST(RealDataRulesParameters, OrtResnet18HasInt8WeightInitializersOnly)
{
    REQUIRE_SHARED();
    Report report = diagnoseFiles({sharedModel("resnet18-ort-qdq.onnx").string()});
    auto int8 = findingsOf(report, "int8-weight-initializer");
    ASSERT_EQ(int8.size(), 1u);
    EXPECT_EQ(int8[0].severity, Severity::kInfo);
    // 20 convs and the fc: 21 INT8 weight initializers behind a DQ, no Q.
    EXPECT_EQ(int8[0].onnxNodes.size(), 21u);
    for (const auto& rule : kParameterRules)
    {
        if (rule != "int8-weight-initializer")
        {
            EXPECT_TRUE(findingsOf(report, rule).empty()) << rule;
        }
    }
}

TEST(RealDataRulesParameters, PytorchQuantizationModelsAreClean)
{
    REQUIRE_SHARED();
    for (const char* model : {"resnet18-qat-convs.onnx", "resnet18-qat-residual.onnx",
                              "resnet18-qat-residual-qgap.onnx", "resnet50-qat-convs.onnx", "yolov8lite-qat-convs.onnx",
                              "yolov8lite-qat-outputs.onnx", "unet-convtranspose-qat.onnx"})
    {
        Report report = diagnoseFiles({sharedModel(model).string()});
        for (const auto& rule : kParameterRules)
        {
            for (const auto& finding : findingsOf(report, rule))
            {
                // The yolov8lite models' dead tensors have scales below 2^-24 (their generator's amax floor of 1e-6
                // over 127): an info, the one finding these rules have on them.
                const bool tinyScales = rule == "invalid-scale" && finding.severity == Severity::kInfo &&
                                        contains(finding.message, "below 2^-24");
                EXPECT_TRUE(tinyScales && contains(model, "yolov8lite")) << model << ": " << finding.message;
            }
        }
    }
}

TEST(RealDataRulesParameters, Resnet50ExternalWeightScalesAreUnknownNotInvalid)
{
    REQUIRE_SHARED();
    // 22 weight scales live in the missing .onnx.data: their values are unknown, their element counts are not.
    Report report = diagnoseFiles({sharedModel("resnet50-qat-convs.onnx").string()});
    EXPECT_TRUE(findingsOf(report, "invalid-scale").empty());
    EXPECT_TRUE(findingsOf(report, "weight-axis").empty());
    EXPECT_TRUE(findingsOf(report, "per-channel-activation").empty());
}

TEST(RealDataRulesParameters, DeitTinyOrtQdq)
{
    REQUIRE_SHARED();
    Report report = diagnoseFiles({sharedModel("deit-tiny-ort-qdq.onnx").string()});
    // 48 MatMul weights and the head Gemm weight are INT8 initializers behind a DQ.
    auto int8 = findingsOf(report, "int8-weight-initializer");
    ASSERT_EQ(int8.size(), 1u);
    EXPECT_EQ(int8[0].onnxNodes.size(), 49u);
    EXPECT_TRUE(hasNode(int8[0], "head.weight_DequantizeLinear"));
    // The patch-embedding Conv is left float entirely by ONNX Runtime: info, not a warning.
    auto weighted = findingsOf(report, "weighted-op-input-not-quantized");
    ASSERT_EQ(weighted.size(), 1u);
    EXPECT_EQ(weighted[0].severity, Severity::kInfo);
    EXPECT_EQ(weighted[0].onnxNodes, std::vector<std::string>{"/patch_embed/proj/Conv"});
    // MatMul weights per-channel on axis 1 ([K, N]) and the head Gemm (transB=1) on axis 0 are right.
    EXPECT_TRUE(findingsOf(report, "weight-axis").empty());
}
