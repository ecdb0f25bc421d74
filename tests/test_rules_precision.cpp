// Positive and near-identical negative cases for the precision rules: int8-conv-float-output, residual-precision-
// mismatch, activation-before-residual-add, int8-op-without-output-q, plugin-wrapped-in-qdq, io-reformat, fp32-island,
// convtranspose-epilogue-not-fused; and what they report on the real models and engines in ../shared.
#include "graph_builder.h"
#include "qdq/load_inputs.h"
#include "qdq/readers.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

const char* kInt8 = "Thirty-two wide channel vectorized row major Int8 format";
const char* kFp32 = "Row major linear FP32";
const char* kFp16 = "Channel major FP16 format where channel % 8 == 0";

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

bool hasName(const std::vector<std::string>& names, const std::string& name)
{
    return std::find(names.begin(), names.end(), name) != names.end();
}

//! BatchNormalization with constant parameters.
std::string batchNorm(GraphBuilder& g, const std::string& name, const std::string& x, long channels)
{
    return g.node("BatchNormalization", name,
                  {x, g.weight(name + ".scale", {channels}, 1.0f), g.weight(name + ".bias", {channels}, 0.0f),
                   g.weight(name + ".mean", {channels}, 0.0f), g.weight(name + ".var", {channels}, 1.0f)});
}

Report diagnoseLog(const std::string& text, const std::optional<OnnxGraph>& graph = std::nullopt)
{
    Inputs inputs;
    inputs.onnx = graph;
    inputs.buildLog = readBuildLogFromBuffer(text, "build.log");
    return diagnose(inputs);
}

} // namespace

// ---- R07 int8-conv-float-output ----------------------------------------------------------------------------------

namespace
{

//! in -> Q/DQ -> conv -> relu -> {Resize | MaxPool} -> Q/DQ -> conv2 -> output
OnnxGraph convThen(const std::string& op)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images"));
    std::string c = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)});
    std::string r = g.node("Relu", "/relu/Relu", {c});
    std::string m = op == "Resize" ? g.node("Resize", "/up/Resize", {r, "", g.weight("/up/scales", {4}, 2.0f)})
                                   : g.node("MaxPool", "/pool/MaxPool", {r});
    std::string c2 = g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", m), g.quantizedWeight("conv2", 8, 8)});
    g.output(c2);
    return g.build();
}

} // namespace

TEST(RuleInt8ConvFloatOutput, TriggersWhenResizeSeparatesTheQuantize)
{
    auto findings = findingsOf(runDiagnose(convThen("Resize"), std::nullopt), "int8-conv-float-output");
    std::vector<Finding> warnings;
    std::copy_if(findings.begin(), findings.end(), std::back_inserter(warnings),
                 [](const Finding& f) { return f.severity == Severity::kWarning; });
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(contains(warnings[0].message, "/conv/Conv")) << warnings[0].message;
    EXPECT_TRUE(contains(warnings[0].message, "/up/Resize")) << warnings[0].message;
    EXPECT_TRUE(hasName(warnings[0].onnxNodes, "/relu/Relu"));
    EXPECT_TRUE(contains(warnings[0].fix, "/relu/Relu_out")) << warnings[0].fix;
    EXPECT_TRUE(contains(warnings[0].fix, "/conv2/in_q/QuantizeLinear")) << warnings[0].fix;
}

TEST(RuleInt8ConvFloatOutput, SilentWhenOnlyCommutingOpsLieBeforeTheQuantize)
{
    auto findings = findingsOf(runDiagnose(convThen("MaxPool"), std::nullopt), "int8-conv-float-output");
    for (const auto& finding : findings)
    {
        // Only the head /conv2/Conv (network output) may be reported, as info.
        EXPECT_EQ(finding.severity, Severity::kInfo) << finding.message;
        EXPECT_FALSE(hasName(finding.onnxNodes, "/conv/Conv")) << finding.message;
    }
}

namespace
{

//! tokens -> Q/DQ -> MatMul(DQ int8 weight) -> Add(float bias) [-> Softmax] -> Q/DQ -> MatMul: torch's Linear on a
//! 3-D input.
OnnxGraph linearWithBias(bool softmaxAfterBias)
{
    GraphBuilder g;
    auto weight = [&](const std::string& name)
    {
        return g.node("DequantizeLinear", "/" + name + "/w/DequantizeLinear",
                      {g.int8Constant(name + ".weight", {4, 4}), g.scale("/" + name + "/w/scale", 0.01f)});
    };
    std::string x = g.qdq("/in_q", g.input("tokens", {1, 4, 4}));
    std::string m = g.node("MatMul", "/fc/MatMul", {x, weight("fc")});
    std::string a = g.node("Add", "/fc/Add", {m, g.weight("fc.bias", {4}, 0.5f)});
    if (softmaxAfterBias)
    {
        a = g.node("Softmax", "/act/Softmax", {a});
    }
    g.output(g.node("MatMul", "/fc2/MatMul", {g.qdq("/fc2/in_q", a), weight("fc2")}), {1, 4, 4});
    return g.build();
}

} // namespace

TEST(RuleInt8ConvFloatOutput, SilentWhenABiasAddLiesBeforeTheQuantize)
{
    // TensorRT takes the bias into the MatMul; the Q after it is the MatMul's INT8 output.
    for (const auto& finding : findingsOf(runDiagnose(linearWithBias(false), std::nullopt), "int8-conv-float-output"))
    {
        EXPECT_FALSE(hasName(finding.onnxNodes, "/fc/MatMul")) << finding.message;
    }
}

TEST(RuleInt8ConvFloatOutput, TriggersWhenAnOpAfterTheBiasSeparatesTheQuantize)
{
    auto findings = findingsOf(runDiagnose(linearWithBias(true), std::nullopt), "int8-conv-float-output");
    ASSERT_EQ(std::count_if(findings.begin(), findings.end(),
                            [](const Finding& f) { return f.severity == Severity::kWarning; }),
              1);
    const Finding& warning = *std::find_if(findings.begin(), findings.end(),
                                           [](const Finding& f) { return f.severity == Severity::kWarning; });
    EXPECT_TRUE(hasName(warning.onnxNodes, "/fc/MatMul"));
    EXPECT_TRUE(hasName(warning.onnxNodes, "/fc/Add")); // the bias is part of the op's epilogue
    EXPECT_TRUE(contains(warning.message, "/act/Softmax")) << warning.message;
}

namespace
{

//! in -> Q/DQ -> conv -> relu -> Q/DQ -> conv2 -> Reshape(conv2, Shape(relu)) -> Q/DQ -> conv4. The Shape reads the
//! relu's output (only its dimensions) or, with floatReader, the relu also feeds a float Resize, quantized after it for
//! a third conv.
OnnxGraph convReadByAShape(bool floatReader)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images"));
    std::string r = g.node("Relu", "/relu/Relu", {g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)})});
    std::string c2 = g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", r), g.quantizedWeight("conv2", 8, 8)});
    std::string reshaped = g.node("Reshape", "/out/Reshape", {c2, g.node("Shape", "/out/Shape", {r})});
    g.output(g.node("Conv", "/conv4/Conv", {g.qdq("/conv4/in_q", reshaped), g.quantizedWeight("conv4", 8, 8)}));
    if (floatReader)
    {
        std::string up = g.node("Resize", "/side/Resize", {r, "", g.weight("/side/scales", {4}, 2.0f)});
        g.output(g.node("Conv", "/conv3/Conv", {g.qdq("/conv3/in_q", up), g.quantizedWeight("conv3", 8, 8)}));
    }
    return g.build();
}

bool warnsAbout(const std::vector<Finding>& findings, const std::string& node)
{
    return std::any_of(findings.begin(), findings.end(),
                       [&](const Finding& f)
                       { return f.severity == Severity::kWarning && hasName(f.onnxNodes, node); });
}

} // namespace

// A Shape reads the conv output's dimensions, not its values: the conv's output is quantized on every path that reads
// values.
TEST(RuleInt8ConvFloatOutput, SilentWhenTheOtherReaderIsAShape)
{
    EXPECT_FALSE(warnsAbout(findingsOf(runDiagnose(convReadByAShape(false), std::nullopt), "int8-conv-float-output"),
                            "/conv/Conv"));
}

TEST(RuleInt8ConvFloatOutput, TriggersWhenTheOtherReaderUsesTheValues)
{
    EXPECT_TRUE(warnsAbout(findingsOf(runDiagnose(convReadByAShape(true), std::nullopt), "int8-conv-float-output"),
                           "/conv/Conv"));
}

TEST(RuleInt8ConvFloatOutput, NetworkOutputHeadIsInfo)
{
    auto findings = findingsOf(runDiagnose(convThen("MaxPool"), std::nullopt), "int8-conv-float-output");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kInfo);
    EXPECT_TRUE(hasName(findings[0].onnxNodes, "/conv2/Conv"));
}

namespace
{

EnginePlan convFloatOutEngine(bool int8Output, const std::string& pool = "MaxPool_12")
{
    std::vector<EngineLayer> layers;
    layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"input", kFp32}}, {{"t1", kInt8}}, "QDQ"));
    if (int8Output)
    {
        layers.push_back(layer("w0 + QuantizeLinear_7 + Conv_9 + Relu_10 + MaxPool_12", "CaskConvActPool",
                               {{"t1", kInt8}}, {{"t3", kInt8}}));
    }
    else
    {
        layers.push_back(
            layer("w0 + QuantizeLinear_7 + Conv_9 + Relu_10", "CaskConvolution", {{"t1", kInt8}}, {{"t2", kFp32}}));
        layers.push_back(layer(pool, "TiledPooling", {{"t2", kFp32}}, {{"t2p", kFp32}}));
        layers.push_back(layer("Reformatting CopyNode for Output Tensor 0 to " + pool, "Reformat", {{"t2p", kFp32}},
                               {{"t2r", kFp16}}, "REFORMAT"));
        layers.push_back(layer("QuantizeLinear_15", "Reformat", {{"t2r", kFp16}}, {{"t3", kInt8}}, "QDQ"));
    }
    layers.push_back(layer("w1 + QuantizeLinear_20 + Conv_22", "CaskConvolution", {{"t3", kInt8}}, {{"out", kFp32}}));
    return planOf(std::move(layers), {"input", "out"});
}

} // namespace

TEST(RuleInt8ConvFloatOutput, EngineTriggersOnFloatOutputThenQuantize)
{
    EnginePlan plan = convFloatOutEngine(false);
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "int8-conv-float-output");
    auto warning = std::find_if(findings.begin(), findings.end(),
                                [](const Finding& f) { return f.severity == Severity::kWarning; });
    ASSERT_NE(warning, findings.end());
    EXPECT_TRUE(warning->likely);
    EXPECT_TRUE(contains(warning->message, "Conv_9")) << warning->message;
    EXPECT_TRUE(hasName(warning->engineLayers, "QuantizeLinear_15"));
    EXPECT_TRUE(hasName(warning->engineLayers, "Reformatting CopyNode for Output Tensor 0 to MaxPool_12"));
    EXPECT_NEAR(warning->costMs.value_or(0), 0.02, 1e-9); // the reformat and the Quantize
    EXPECT_TRUE(contains(warning->fix, "MaxPool_12")) << warning->fix;
    // A max pooling keeps the range: the later Quantize's scale fits the conv's output.
    EXPECT_TRUE(contains(warning->fix, "with the scale the later Quantize uses")) << warning->fix;
}

// The issue "One model of TensorRT", defect 7: MobileNet's last conv writes float for a GlobalAveragePool whose output
// is quantized; the Quantize after the average measures a narrower range than the conv's output, so the advice asks
// for a scale calibrated for the conv's output instead of copying that one.
TEST(RuleInt8ConvFloatOutput, EngineFixAfterAnAveragePoolingAsksForACalibratedScale)
{
    EnginePlan plan = convFloatOutEngine(false, "GlobalAveragePool_12");
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "int8-conv-float-output");
    auto warning = std::find_if(findings.begin(), findings.end(),
                                [](const Finding& f) { return f.severity == Severity::kWarning; });
    ASSERT_NE(warning, findings.end());
    EXPECT_TRUE(contains(warning->fix, "with a scale calibrated for that tensor")) << warning->fix;
    EXPECT_FALSE(contains(warning->fix, "with the scale the later Quantize uses")) << warning->fix;
}

TEST(RuleInt8ConvFloatOutput, EngineSilentWhenConvEmitsInt8)
{
    EnginePlan plan = convFloatOutEngine(true);
    for (const auto& finding : findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "int8-conv-float-output"))
    {
        EXPECT_EQ(finding.severity, Severity::kInfo) << finding.message; // the output head only
        EXPECT_EQ(finding.engineLayers, std::vector<std::string>{"w1 + QuantizeLinear_20 + Conv_22"});
    }
}

namespace
{

//! A conv that writes FP32 for the next conv's INT8 input, re-quantized either by a standalone Quantize of the model
//! or by a reformat the builder inserted that converts FP32 to INT8 itself.
EnginePlan convRequantizedBy(bool builderReformat)
{
    std::vector<EngineLayer> layers;
    layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"input", kFp32}}, {{"t1", kInt8}}, "QDQ"));
    layers.push_back(
        layer("w0 + QuantizeLinear_7 + Conv_9 + Relu_10", "CaskConvolution", {{"t1", kInt8}}, {{"t2", kFp32}}));
    if (builderReformat)
    {
        layers.push_back(layer("Reformatting CopyNode for Input Tensor 0 to w1 + QuantizeLinear_20 + Conv_22",
                               "Reformat", {{"t2", kFp32}}, {{"t3", kInt8}}, "REFORMAT"));
    }
    else
    {
        layers.push_back(layer("QuantizeLinear_15", "Reformat", {{"t2", kFp32}}, {{"t3", kInt8}}, "QDQ"));
    }
    layers.push_back(layer("w1 + QuantizeLinear_20 + Conv_22", "CaskConvolution", {{"t3", kInt8}}, {{"out", kFp32}}));
    return planOf(std::move(layers), {"input", "out"});
}

} // namespace

TEST(RuleInt8ConvFloatOutput, EngineFixNamesTheConvOutputNotABuilderReformat)
{
    EnginePlan plan = convRequantizedBy(true);
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "int8-conv-float-output");
    auto warning = std::find_if(findings.begin(), findings.end(),
                                [](const Finding& f) { return f.severity == Severity::kWarning; });
    ASSERT_NE(warning, findings.end());
    EXPECT_FALSE(contains(warning->fix, "Reformatting CopyNode")) << warning->fix;
    EXPECT_TRUE(contains(warning->fix, "quantize the output of \"w0 + QuantizeLinear_7 + Conv_9 + Relu_10\""))
        << warning->fix;
}

TEST(RuleInt8ConvFloatOutput, EngineFixNamesTheStandaloneQuantizeOfTheModel)
{
    EnginePlan plan = convRequantizedBy(false);
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "int8-conv-float-output");
    auto warning = std::find_if(findings.begin(), findings.end(),
                                [](const Finding& f) { return f.severity == Severity::kWarning; });
    ASSERT_NE(warning, findings.end());
    EXPECT_TRUE(contains(warning->fix, "quantize the input of QuantizeLinear_15")) << warning->fix;
}

// ---- R13 residual-precision-mismatch ------------------------------------------------------------------------------

namespace
{

//! The last ResNet block: Add(conv2, DQ residual) -> Relu -> [Q/DQ] -> GlobalAveragePool -> Flatten -> Q/DQ -> Gemm
OnnxGraph lastBlock(bool quantizePoolInput)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images"));
    std::string c0 = g.node("Conv", "/conv0/Conv", {x, g.quantizedWeight("conv0", 8, 3)});
    std::string r0 = g.node("Relu", "/relu0/Relu", {c0});
    std::string c1 = g.node("Conv", "/conv1/Conv", {g.qdq("/conv1/in_q", r0), g.quantizedWeight("conv1", 8, 8)});
    std::string r1 = g.node("Relu", "/relu1/Relu", {c1});
    std::string c2 = g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", r1), g.quantizedWeight("conv2", 8, 8)});
    std::string sum = g.node("Add", "/add/Add", {c2, g.qdq("/add/residual_q", r0)});
    std::string out = g.node("Relu", "/relu2/Relu", {sum});
    if (quantizePoolInput)
    {
        out = g.qdq("/pool/in_q", out);
    }
    std::string pooled = g.node("GlobalAveragePool", "/pool/GlobalAveragePool", {out});
    std::string flat = g.node("Flatten", "/flatten/Flatten", {pooled});
    g.output(g.node("Gemm", "/fc/Gemm", {g.qdq("/fc/in_q", flat), g.quantizedWeight("fc", 10, 8, 1)}));
    return g.build();
}

} // namespace

TEST(RuleResidualPrecisionMismatch, TriggersOnInt8ResidualBeforeFloatPool)
{
    auto findings = findingsOf(runDiagnose(lastBlock(false), std::nullopt), "residual-precision-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "/add/Add")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].message, "/add/residual_q/DequantizeLinear")) << findings[0].message;
    EXPECT_TRUE(hasName(findings[0].onnxNodes, "/pool/GlobalAveragePool"));
    EXPECT_TRUE(contains(findings[0].fix, "/relu2/Relu_out")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "/pool/GlobalAveragePool")) << findings[0].fix;
}

TEST(RuleResidualPrecisionMismatch, SilentWhenPoolInputQuantized)
{
    EXPECT_TRUE(findingsOf(runDiagnose(lastBlock(true), std::nullopt), "residual-precision-mismatch").empty());
}

namespace
{

//! The TREx qat-residual tail: standalone DQ of the INT8 residual -> fused Conv+Add FP32 -> pooling FP32 -> Q.
EnginePlan lastBlockEngine(bool quantizedPool)
{
    std::vector<EngineLayer> layers;
    layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"input.1", kFp32}}, {{"t0", kInt8}}, "QDQ"));
    layers.push_back(layer("w4 + QuantizeLinear_240 + Conv_242 + Add_261 + Relu_262", "CaskConvolution",
                           {{"t0", kInt8}, {"t0", kInt8}}, {{"r424", kInt8}}));
    if (!quantizedPool)
    {
        layers.push_back(layer("DequantizeLinear_291", "Reformat", {{"r424", kInt8}}, {{"r454", kFp32}}, "QDQ"));
        layers.push_back(
            layer("w5 + QuantizeLinear_270 + Conv_272", "CaskConvolution", {{"r424", kInt8}}, {{"t438", kInt8}}));
        layers.push_back(layer("w6 + QuantizeLinear_282 + Conv_284 + Add_292 + Relu_293", "CaskConvolution",
                               {{"t438", kInt8}, {"r454", kFp32}}, {{"x115", kFp32}}));
        layers.push_back(layer("GlobalAveragePool_294", "CaskPooling", {{"x115", kFp32}}, {{"p457", kFp32}}));
        layers.push_back(layer("QuantizeLinear_298", "Reformat", {{"p457", kFp32}}, {{"i44", kInt8}}, "QDQ"));
    }
    else
    {
        layers.push_back(
            layer("w5 + QuantizeLinear_270 + Conv_272", "CaskConvolution", {{"r424", kInt8}}, {{"t438", kInt8}}));
        layers.push_back(layer("w6 + QuantizeLinear_282 + Conv_284 + Add_292 + Relu_293", "CaskConvolution",
                               {{"t438", kInt8}, {"r424", kInt8}}, {{"x459", kInt8}}));
        layers.push_back(layer("GlobalAveragePool_300", "CudaPooling", {{"x459", kInt8}}, {{"i44", kInt8}}));
    }
    layers.push_back(
        layer("fc.weight + QuantizeLinear_303 + Gemm_305", "CaskConvolution", {{"i44", kInt8}}, {{"logits", kFp32}}));
    return planOf(std::move(layers), {"input.1", "logits"});
}

} // namespace

TEST(RuleResidualPrecisionMismatch, EngineExplainsStandaloneDequantizeOfResidual)
{
    EnginePlan plan = lastBlockEngine(false);
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "residual-precision-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "Add_292")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].message, "DequantizeLinear_291")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].message, "GlobalAveragePool_294")) << findings[0].message;
    EXPECT_TRUE(hasName(findings[0].engineLayers, "QuantizeLinear_298"));
    EXPECT_NEAR(findings[0].costMs.value_or(0), 0.02, 1e-9); // DequantizeLinear_291 + QuantizeLinear_298
    EXPECT_TRUE(contains(findings[0].fix, "GlobalAveragePool_294")) << findings[0].fix;
}

TEST(RuleResidualPrecisionMismatch, EngineSilentWhenPoolIsQuantized)
{
    EnginePlan plan = lastBlockEngine(true);
    EXPECT_TRUE(findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "residual-precision-mismatch").empty());
}

// ---- R14 activation-before-residual-add ---------------------------------------------------------------------------

namespace
{

//! x (conv0 out) -> Q/DQ -> conv1 -> BN -> SiLU -> Add(x, silu) -> Q/DQ -> conv2
OnnxGraph siluBottleneck(bool fixed)
{
    GraphBuilder g;
    std::string in = g.qdq("/in_q", g.input("images"));
    std::string x = g.node("Conv", "/conv0/Conv", {in, g.quantizedWeight("conv0", 8, 3)});
    std::string c1 = g.node("Conv", "/m/cv1/Conv", {g.qdq("/m/cv1/in_q", x), g.quantizedWeight("cv1", 8, 8)});
    std::string bn = batchNorm(g, "/m/cv1/bn/BatchNormalization", c1, 8);
    std::string sig = g.node("Sigmoid", "/m/cv1/act/Sigmoid", {bn});
    std::string mul = g.node("Mul", "/m/cv1/act/Mul", {bn, sig});
    std::string convSide = fixed ? g.qdq("/m/silu_q", mul) : mul;
    std::string residual = fixed ? g.qdq("/m/residual_q", x) : x;
    std::string sum = g.node("Add", "/m/Add", {residual, convSide});
    g.output(g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", sum), g.quantizedWeight("conv2", 8, 8)}));
    return g.build();
}

} // namespace

TEST(RuleActivationBeforeResidualAdd, TriggersOnConvSiluAdd)
{
    auto findings = findingsOf(runDiagnose(siluBottleneck(false), std::nullopt), "activation-before-residual-add");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_TRUE(contains(findings[0].message, "/m/Add")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].message, "/m/cv1/Conv")) << findings[0].message;
    EXPECT_TRUE(hasName(findings[0].onnxNodes, "/m/cv1/act/Sigmoid"));
    // Both Add inputs lack Q/DQ; the Add output already reaches /conv2/in_q.
    EXPECT_TRUE(contains(findings[0].fix, "/m/cv1/act/Mul_out")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "residual /conv0/Conv_out")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "/m/cv1/in_q/QuantizeLinear")) << findings[0].fix;
    EXPECT_FALSE(contains(findings[0].fix, "a QuantizeLinear after")) << findings[0].fix;
}

TEST(RuleActivationBeforeResidualAdd, SilentWhenBothInputsAndOutputQuantized)
{
    EXPECT_TRUE(findingsOf(runDiagnose(siluBottleneck(true), std::nullopt), "activation-before-residual-add").empty());
}

namespace
{

//! MobileNetV3's first block: stem conv -> HardSwish (Mul(x, HardSigmoid(x))) -> x; x -> Q/DQ -> conv1 -> [BN] -> y;
//! Add(x, y). With projectionAlsoRead, y has a second reader, so conv1 cannot take the Add.
OnnxGraph hardSwishResidualBlock(bool projectionAlsoRead)
{
    GraphBuilder g;
    std::string stem =
        g.node("Conv", "/stem/Conv", {g.qdq("/in_q", g.input("images")), g.quantizedWeight("stem", 8, 3)});
    std::string gate = g.node("HardSigmoid", "/stem/act/HardSigmoid", {stem});
    std::string x = g.node("Mul", "/stem/act/Mul", {stem, gate});
    std::string c1 = g.node("Conv", "/b1/Conv", {g.qdq("/b1/in_q", x), g.quantizedWeight("b1", 8, 8)});
    std::string y = batchNorm(g, "/b1/bn/BatchNormalization", c1, 8);
    std::string sum = g.node("Add", "/b1/Add", {x, y});
    g.output(g.node("Conv", "/head/Conv", {g.qdq("/head/in_q", sum), g.quantizedWeight("head", 8, 8)}));
    if (projectionAlsoRead)
    {
        g.output(g.node("Relu", "/b1/tap/Relu", {y}));
    }
    return g.build();
}

} // namespace

// The HardSwish side of the Add is the residual of the conv that completes the block: TensorRT fuses the Add into that
// conv, so there is no PointWise Add to run in float.
TEST(RuleActivationBeforeResidualAdd, SilentWhenTheOtherInputIsAConvThatTakesTheAdd)
{
    EXPECT_TRUE(
        findingsOf(runDiagnose(hardSwishResidualBlock(false), std::nullopt), "activation-before-residual-add").empty());
}

TEST(RuleActivationBeforeResidualAdd, TriggersOnHardSwishWhenTheOtherConvOutputIsAlsoRead)
{
    auto findings =
        findingsOf(runDiagnose(hardSwishResidualBlock(true), std::nullopt), "activation-before-residual-add");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "/stem/Conv + HardSwish (/stem/act/HardSigmoid, /stem/act/Mul)"))
        << findings[0].message;
}

namespace
{

EnginePlan siluAddEngine(bool int8)
{
    const char* pwnOut = int8 ? kInt8 : kFp32;
    const char* convOut = int8 ? kInt8 : kFp32;
    std::vector<EngineLayer> layers;
    layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"images", kFp32}}, {{"t0", kInt8}}, "QDQ"));
    layers.push_back(layer("w0 + /conv0/Conv", "CaskConvolution", {{"t0", kInt8}}, {{"x", kInt8}}));
    layers.push_back(layer("w1 + /m/cv1/Conv + PWN(/m/cv1/act/Sigmoid, /m/cv1/act/Mul)", "CaskConvolution",
                           {{"x", kInt8}}, {{"silu", convOut}}));
    layers.push_back(layer("PWN(/m/Add)", "PointWiseV2", {{"x", kInt8}, {"silu", convOut}}, {{"sum", pwnOut}}));
    layers.push_back(layer("w2 + /conv2/Conv", "CaskConvolution", {{"sum", kInt8}}, {{"out", kFp32}}));
    return planOf(std::move(layers), {"images", "out"});
}

} // namespace

TEST(RuleActivationBeforeResidualAdd, EngineTriggersOnFloatPointWiseAdd)
{
    EnginePlan plan = siluAddEngine(false);
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "activation-before-residual-add");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "/m/Add")) << findings[0].message;
    EXPECT_TRUE(hasName(findings[0].engineLayers, "w1 + /m/cv1/Conv + PWN(/m/cv1/act/Sigmoid, /m/cv1/act/Mul)"));
    EXPECT_NEAR(findings[0].costMs.value_or(0), 0.01, 1e-9);
}

TEST(RuleActivationBeforeResidualAdd, EngineSilentWhenPointWiseIsInt8)
{
    EnginePlan plan = siluAddEngine(true);
    EXPECT_TRUE(
        findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "activation-before-residual-add").empty());
}

// ---- R15 int8-op-without-output-q ---------------------------------------------------------------------------------

namespace
{

//! Add(DQ(a, 0.05), DQ(b, 0.1)) -> [Q/DQ] -> ReduceSum / Conv
OnnxGraph quantizedAdd(bool outputQ)
{
    GraphBuilder g;
    std::string a = g.qdq("/a_q", g.input("a"), 0.05f);
    std::string b = g.qdq("/b_q", g.input("b"), 0.1f);
    std::string sum = g.node("Add", "/add/Add", {a, b});
    if (outputQ)
    {
        g.output(g.node("Conv", "/conv/Conv", {g.qdq("/add/out_q", sum), g.quantizedWeight("conv", 8, 8)}));
    }
    else
    {
        g.output(g.node("ReduceSum", "/sum/ReduceSum", {sum}));
    }
    return g.build();
}

} // namespace

TEST(RuleInt8OpWithoutOutputQ, TriggersOnAddWithoutOutputQuantize)
{
    auto findings = findingsOf(runDiagnose(quantizedAdd(false), std::nullopt), "int8-op-without-output-q");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "/add/Add")) << findings[0].message;
    EXPECT_TRUE(hasName(findings[0].onnxNodes, "/a_q/DequantizeLinear"));
    EXPECT_TRUE(hasName(findings[0].onnxNodes, "/b_q/DequantizeLinear"));
    EXPECT_TRUE(contains(findings[0].message, "different input scales are not the problem")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].fix, "QuantizeLinear -> DequantizeLinear on /add/Add_out")) << findings[0].fix;
}

TEST(RuleInt8OpWithoutOutputQ, SilentWithOutputQuantize)
{
    EXPECT_TRUE(findingsOf(runDiagnose(quantizedAdd(true), std::nullopt), "int8-op-without-output-q").empty());
}

namespace
{

EnginePlan dequantizedAddEngine(bool standalone)
{
    std::vector<EngineLayer> layers;
    if (standalone)
    {
        layers.push_back(layer("conv_a", "CaskConvolution", {{"x", kInt8}}, {{"a8", kInt8}}));
        layers.push_back(layer("conv_b", "CaskConvolution", {{"x", kInt8}}, {{"b8", kInt8}}));
        layers.push_back(layer("DequantizeLinear_10", "Scale", {{"a8", kInt8}}, {{"a", kFp32}}));
        layers.push_back(layer("DequantizeLinear_11", "Scale", {{"b8", kInt8}}, {{"b", kFp32}}));
        layers.push_back(layer("Add_12", "ElementWise", {{"a", kFp32}, {"b", kFp32}}, {{"sum", kFp32}}));
    }
    else
    {
        layers.push_back(layer("conv_a", "CaskConvolution", {{"x", kInt8}}, {{"a8", kInt8}}));
        layers.push_back(layer("conv_b", "CaskConvolution", {{"x", kInt8}}, {{"b8", kInt8}}));
        layers.push_back(layer("Add_12", "ElementWise", {{"a8", kInt8}, {"b8", kInt8}}, {{"sum", kFp32}}));
    }
    return planOf(std::move(layers), {"x", "sum"});
}

} // namespace

TEST(RuleInt8OpWithoutOutputQ, EngineTriggersOnFloatOpBehindStandaloneDequantize)
{
    EnginePlan plan = dequantizedAddEngine(true);
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "int8-op-without-output-q");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "Add_12")) << findings[0].message;
    EXPECT_TRUE(hasName(findings[0].engineLayers, "DequantizeLinear_10"));
    EXPECT_TRUE(hasName(findings[0].engineLayers, "DequantizeLinear_11"));
    EXPECT_NEAR(findings[0].costMs.value_or(0), 0.02, 1e-9);
}

TEST(RuleInt8OpWithoutOutputQ, EngineSilentWithoutStandaloneDequantize)
{
    EnginePlan plan = dequantizedAddEngine(false);
    EXPECT_TRUE(findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "int8-op-without-output-q").empty());
}

// ---- R22 plugin-wrapped-in-qdq ------------------------------------------------------------------------------------

namespace
{

//! conv -> [DQ] -> plugin -> [Q] -> conv2, or conv -> Q -> plugin -> DQ -> conv2
OnnxGraph pluginGraph(bool wrapped)
{
    GraphBuilder g;
    g.opset("com.example.plugins", 1);
    std::string x = g.qdq("/in_q", g.input("images"));
    std::string c = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)});
    std::string p;
    if (wrapped)
    {
        std::string in = g.qdq("/plugin/in_q", c, 0.02f);
        p = g.node("IntSoftmax", "/plugin/IntSoftmax", {in}, {}, "com.example.plugins");
        p = g.qdq("/plugin/out_q", p, 0.004f);
    }
    else
    {
        std::string q = g.node("QuantizeLinear", "/plugin/in_q/QuantizeLinear",
                               {c, g.scale("/plugin/in_q/scale", 0.02f), g.zeroPoint("/plugin/in_q/zp")});
        p = g.node("IntSoftmax", "/plugin/IntSoftmax", {q}, {}, "com.example.plugins");
        p = g.node("DequantizeLinear", "/plugin/out_q/DequantizeLinear",
                   {p, g.scale("/plugin/out_q/scale", 0.004f), g.zeroPoint("/plugin/out_q/zp")});
    }
    g.output(g.node("Conv", "/conv2/Conv", {p, g.quantizedWeight("conv2", 8, 8)}));
    return g.build();
}

} // namespace

TEST(RulePluginWrappedInQdq, TriggersOnDequantizePluginQuantize)
{
    auto findings = findingsOf(runDiagnose(pluginGraph(true), std::nullopt), "plugin-wrapped-in-qdq");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "/plugin/IntSoftmax")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].fix, "delete /plugin/in_q/DequantizeLinear")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "delete /plugin/out_q/QuantizeLinear")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "input scale 0.02")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "output scale 0.004")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "kINT8")) << findings[0].fix;
}

TEST(RulePluginWrappedInQdq, SilentOnQuantizePluginDequantize)
{
    EXPECT_TRUE(findingsOf(runDiagnose(pluginGraph(false), std::nullopt), "plugin-wrapped-in-qdq").empty());
}

namespace
{

EnginePlan pluginEngine(bool wrapped)
{
    std::vector<EngineLayer> layers;
    layers.push_back(layer("w + QuantizeLinear_3 + Conv_4", "CaskConvolution", {{"x", kInt8}}, {{"c", kInt8}}));
    if (wrapped)
    {
        layers.push_back(layer("DequantizeLinear_6", "Reformat", {{"c", kInt8}}, {{"cf", kFp32}}, "QDQ"));
        EngineLayer plugin = layer("IntSoftmax_7", "PluginV2", {{"cf", kFp32}}, {{"pf", kFp32}});
        plugin.pluginType = "IntSoftmax";
        layers.push_back(plugin);
        layers.push_back(layer("QuantizeLinear_9", "Reformat", {{"pf", kFp32}}, {{"p", kInt8}}, "QDQ"));
    }
    else
    {
        EngineLayer plugin = layer("IntSoftmax_7", "PluginV2", {{"c", kInt8}}, {{"p", kInt8}});
        plugin.pluginType = "IntSoftmax";
        layers.push_back(plugin);
    }
    layers.push_back(layer("w2 + QuantizeLinear_11 + Conv_12", "CaskConvolution", {{"p", kInt8}}, {{"y", kFp32}}));
    return planOf(std::move(layers), {"x", "y"});
}

} // namespace

TEST(RulePluginWrappedInQdq, EngineTriggersOnPluginBetweenStandaloneQdq)
{
    EnginePlan plan = pluginEngine(true);
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "plugin-wrapped-in-qdq");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "IntSoftmax_7")) << findings[0].message;
    EXPECT_TRUE(hasName(findings[0].engineLayers, "DequantizeLinear_6"));
    EXPECT_TRUE(hasName(findings[0].engineLayers, "QuantizeLinear_9"));
    EXPECT_NEAR(findings[0].costMs.value_or(0), 0.02, 1e-9);
}

TEST(RulePluginWrappedInQdq, EngineSilentOnInt8Plugin)
{
    EnginePlan plan = pluginEngine(false);
    EXPECT_TRUE(findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "plugin-wrapped-in-qdq").empty());
}

// ---- R23 io-reformat ----------------------------------------------------------------------------------------------

TEST(RuleIoReformat, InputQuantizeIsInfo)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images"));
    g.output(g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("conv", 8, 3)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "io-reformat");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kInfo);
    EXPECT_EQ(findings[0].onnxNodes, std::vector<std::string>{"/in_q/QuantizeLinear"});
    // Feeding INT8 starts with taking the Q out and keeping its DQ, which gives the input its scale (with the Q in
    // the model the flag fails the build), and without a layer list the format the first layer reads is not guessed.
    EXPECT_TRUE(contains(findings[0].fix, "remove only the QuantizeLinear /in_q/QuantizeLinear and keep its "
                                          "DequantizeLinear"))
        << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "--inputIOFormats=fp16:chw")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "NVIDIA/TensorRT#3265")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "(scale 0.05")) << findings[0].fix;
    EXPECT_FALSE(contains(findings[0].fix, "int8:chw32")) << findings[0].fix;
}

TEST(RuleIoReformat, SilentWhenInputIsNotQuantizedDirectly)
{
    GraphBuilder g;
    std::string r = g.node("Relu", "/pre/Relu", {g.input("images")});
    g.output(g.node("Conv", "/conv/Conv", {g.qdq("/conv/in_q", r), g.quantizedWeight("conv", 8, 3)}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "io-reformat").empty());
}

namespace
{

EnginePlan ioEngine(bool fp16Io)
{
    std::vector<EngineLayer> layers;
    if (fp16Io)
    {
        layers.push_back(layer("Reformatting CopyNode for Input Tensor 0 to QuantizeLinear_2", "Reformat",
                               {{"images", kFp16}}, {{"Reformatted Input Tensor 0 to QuantizeLinear_2", kFp32}},
                               "REFORMAT"));
        layers.push_back(layer("QuantizeLinear_2", "Reformat",
                               {{"Reformatted Input Tensor 0 to QuantizeLinear_2", kFp32}}, {{"t0", kInt8}}, "QDQ"));
        layers.push_back(layer("w + QuantizeLinear_5 + Conv_6", "CaskConvolution", {{"t0", kInt8}}, {{"y", kFp32}}));
        layers.push_back(layer("Reformatting CopyNode for Output Tensor 0 to w + QuantizeLinear_5 + Conv_6", "Reformat",
                               {{"y", kFp32}}, {{"out", kFp16}}, "REFORMAT"));
    }
    else
    {
        layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"images", kFp32}}, {{"t0", kInt8}}, "QDQ"));
        layers.push_back(layer("w + QuantizeLinear_5 + Conv_6", "CaskConvolution", {{"t0", kInt8}}, {{"out", kFp32}}));
    }
    return planOf(std::move(layers), {"images", "out"});
}

} // namespace

TEST(RuleIoReformat, EngineReportsFp16IoReformatsAsWarning)
{
    EnginePlan plan = ioEngine(true);
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "io-reformat");
    auto warning = std::find_if(findings.begin(), findings.end(),
                                [](const Finding& f) { return f.severity == Severity::kWarning; });
    ASSERT_NE(warning, findings.end());
    EXPECT_EQ(warning->engineLayers.size(), 2u);
    EXPECT_NEAR(warning->costMs.value_or(0), 0.02, 1e-9);
    EXPECT_TRUE(contains(warning->fix, "--inputIOFormats")) << warning->fix;
}

TEST(RuleIoReformat, EngineInputQuantizeAloneIsInfo)
{
    EnginePlan plan = ioEngine(false);
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "io-reformat");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kInfo);
    EXPECT_EQ(findings[0].engineLayers, std::vector<std::string>{"QuantizeLinear_2"});
    // The conv reads the Quantize's CHW32 output.
    EXPECT_TRUE(contains(findings[0].fix, "--inputIOFormats=int8:chw32")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "remove only the QuantizeLinear QuantizeLinear_2 and keep its "
                                          "DequantizeLinear"))
        << findings[0].fix;
}

TEST(RuleIoReformat, EngineAdvisesTheFormatTheFirstLayerReads)
{
    // The same engine whose Quantize writes CHW4, as the DP4A stems of the A100 and Orin builds read it.
    EnginePlan plan = ioEngine(false);
    const char* chw4 = "Four wide channel vectorized row major Int8 format";
    plan.layers[0].outputs[0].format = chw4;
    plan.layers[1].inputs[0].format = chw4;
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "io-reformat");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].fix, "--inputIOFormats=int8:chw4 ")) << findings[0].fix;
    EXPECT_FALSE(contains(findings[0].fix, "chw32")) << findings[0].fix;
}

// ---- R24 fp32-island ----------------------------------------------------------------------------------------------

namespace
{

//! The report d story as a TensorRT 8.0-style build log: a Q/DQ engine whose residual Add and concat copy run FP32.
std::string reportDLog(const std::string& precision)
{
    return "[01/01/2021-10:00:00] [I] === Build Options ===\n"
           "[01/01/2021-10:00:00] [I] Max batch: explicit\n"
           "[01/01/2021-10:00:00] [I] Precision: " +
           precision +
           "\n"
           "[01/01/2021-10:00:01] [I] === Inference Options ===\n"
           "[01/01/2021-10:00:09] [V] [TRT] Engine Layer Information:\n"
           "Layer(Reformat): QuantizeLinear_2_quantize_scale_node, Tactic: 0, "
           "input[Float(3,640,640)] -> 451q[Int8(3,640,640)]\n"
           "Layer(CaskConvolution): conv.weight + QuantizeLinear_7_quantize_scale_node "
           "+ Conv_9, Tactic: 1, 451q[Int8(3,640,640)] -> 451[Float(32,160,160)]\n"
           "Layer(ElementWise): Add_132, Tactic: 1, 451[Float(32,160,160)], "
           "452[Float(32,160,160)] -> 478[Float(32,160,160)]\n"
           "Layer(Reformat): 477 copy, Tactic: 0, 452[Float(32,160,160)] -> "
           "479[Float(32,160,160)]\n";
}

EnginePlan fp32IslandEngine(const char* floatFormat)
{
    std::vector<EngineLayer> layers;
    layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"images", kFp32}}, {{"t0", kInt8}}, "QDQ"));
    layers.push_back(layer("w + QuantizeLinear_5 + Conv_6", "CaskConvolution", {{"t0", kInt8}}, {{"c", floatFormat}}));
    layers.push_back(layer("Resize_8", "Resize", {{"c", floatFormat}}, {{"r", floatFormat}}));
    layers.push_back(layer("PWN(Sigmoid_9)", "PointWiseV2", {{"r", floatFormat}}, {{"out", floatFormat}}));
    return planOf(std::move(layers), {"images", "out"});
}

} // namespace

TEST(RuleFp32Island, BuildLogWithoutFp16IsDecisive)
{
    Report report = diagnoseLog(reportDLog("FP32+INT8"));
    auto findings = findingsOf(report, "fp32-island");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kWarning);
    EXPECT_FALSE(findings[0].likely);
    EXPECT_TRUE(hasName(findings[0].engineLayers, "Add_132"));
    EXPECT_TRUE(hasName(findings[0].engineLayers, "477 copy"));
    EXPECT_TRUE(contains(findings[0].message, "FP32+INT8")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].fix, "--fp16")) << findings[0].fix;
}

TEST(RuleFp32Island, SilentWhenBuildLogEnablesFp16)
{
    EXPECT_TRUE(findingsOf(diagnoseLog(reportDLog("FP32+FP16+INT8")), "fp32-island").empty());
}

TEST(RuleFp32Island, EngineWithoutAnyFp16IsLikely)
{
    EnginePlan plan = fp32IslandEngine(kFp32);
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "fp32-island");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_EQ(findings[0].severity, Severity::kInfo);
    EXPECT_TRUE(hasName(findings[0].engineLayers, "Resize_8"));
    EXPECT_TRUE(hasName(findings[0].engineLayers, "PWN(Sigmoid_9)"));
}

TEST(RuleFp32Island, EngineSilentWhenFloatLayersRunFp16)
{
    EnginePlan plan = fp32IslandEngine(kFp16);
    EXPECT_TRUE(findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "fp32-island").empty());
}

TEST(RuleFp32Island, OnnxAloneSaysWhichInputDecides)
{
    auto findings = findingsOf(runDiagnose(convThen("Resize"), std::nullopt), "fp32-island");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kInfo);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_TRUE(hasName(findings[0].onnxNodes, "/up/Resize"));
    EXPECT_TRUE(contains(findings[0].message, "build log")) << findings[0].message;
}

// ---- R25 convtranspose-epilogue-not-fused -------------------------------------------------------------------------

namespace
{

//! in -> Q/DQ -> ConvTranspose -> [BN -> Relu] -> Q/DQ -> conv
OnnxGraph deconvGraph(bool epilogue)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images"));
    std::string d = g.node("ConvTranspose", "/up/ConvTranspose", {x, g.quantizedWeight("up", 8, 8, 2)});
    if (epilogue)
    {
        d = g.node("Relu", "/up/Relu", {batchNorm(g, "/up/BatchNormalization", d, 8)});
    }
    g.output(g.node("Conv", "/conv/Conv", {g.qdq("/conv/in_q", d), g.quantizedWeight("conv", 8, 8)}));
    return g.build();
}

} // namespace

TEST(RuleConvTransposeEpilogueNotFused, TriggersOnConvTransposeBnReluQ)
{
    auto findings = findingsOf(runDiagnose(deconvGraph(true), std::nullopt), "convtranspose-epilogue-not-fused");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_TRUE(contains(findings[0].message, "/up/ConvTranspose")) << findings[0].message;
    EXPECT_TRUE(hasName(findings[0].onnxNodes, "/up/BatchNormalization"));
    EXPECT_TRUE(hasName(findings[0].onnxNodes, "/conv/in_q/QuantizeLinear"));
    EXPECT_TRUE(contains(findings[0].fix, "fold /up/BatchNormalization")) << findings[0].fix;
    // quantizedWeight() quantizes per channel (8 scales): the axis note applies.
    EXPECT_TRUE(contains(findings[0].message, "per channel")) << findings[0].message;
}

TEST(RuleConvTransposeEpilogueNotFused, SilentWithoutEpilogue)
{
    EXPECT_TRUE(findingsOf(runDiagnose(deconvGraph(false), std::nullopt), "convtranspose-epilogue-not-fused").empty());
}

namespace
{

EnginePlan deconvEngine(bool fused)
{
    std::vector<EngineLayer> layers;
    layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"images", kFp32}}, {{"t0", kInt8}}, "QDQ"));
    if (fused)
    {
        layers.push_back(layer("w + QuantizeLinear_4 + ConvTranspose_5 + BatchNormalization_6 + Relu_7",
                               "CaskDeconvolution", {{"t0", kInt8}}, {{"t3", kInt8}}));
    }
    else
    {
        layers.push_back(
            layer("w + QuantizeLinear_4 + ConvTranspose_5", "CaskDeconvolution", {{"t0", kInt8}}, {{"d", kFp32}}));
        layers.push_back(layer("PWN(BatchNormalization_6, Relu_7)", "PointWiseV2", {{"d", kFp32}}, {{"a", kFp32}}));
        layers.push_back(layer("QuantizeLinear_9", "Reformat", {{"a", kFp32}}, {{"t3", kInt8}}, "QDQ"));
    }
    layers.push_back(layer("w2 + QuantizeLinear_11 + Conv_12", "CaskConvolution", {{"t3", kInt8}}, {{"out", kFp32}}));
    return planOf(std::move(layers), {"images", "out"});
}

} // namespace

TEST(RuleConvTransposeEpilogueNotFused, EngineTriggersOnSeparateEpilogue)
{
    EnginePlan plan = deconvEngine(false);
    auto findings = findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "convtranspose-epilogue-not-fused");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "ConvTranspose_5")) << findings[0].message;
    EXPECT_TRUE(hasName(findings[0].engineLayers, "PWN(BatchNormalization_6, Relu_7)"));
    EXPECT_TRUE(hasName(findings[0].engineLayers, "QuantizeLinear_9"));
    EXPECT_NEAR(findings[0].costMs.value_or(0), 0.02, 1e-9);
}

TEST(RuleConvTransposeEpilogueNotFused, EngineSilentWhenFused)
{
    EnginePlan plan = deconvEngine(true);
    EXPECT_TRUE(
        findingsOf(runDiagnose(std::nullopt, plan, profileFor(plan)), "convtranspose-epilogue-not-fused").empty());
}

// ---- real models and engines --------------------------------------------------------------------------------------

namespace
{

Report diagnoseFiles(const std::vector<std::filesystem::path>& paths)
{
    InputFiles files;
    for (const auto& path : paths)
    {
        files.files.push_back(path.string());
    }
    return diagnose(loadInputs(files, Limits{}));
}

std::vector<std::string> allNodes(const std::vector<Finding>& findings)
{
    std::vector<std::string> nodes;
    for (const auto& finding : findings)
    {
        nodes.insert(nodes.end(), finding.onnxNodes.begin(), finding.onnxNodes.end());
    }
    return nodes;
}

} // namespace

TEST(RealDataRulesPrecision, TrexQatResidualDequantizeExplainedByResidualPrecision)
{
    REQUIRE_SHARED();
    // Verified by reading the layer info: DequantizeLinear_291 (Int8 -> FP32) feeds input 1 of
    // "layer4.1.conv2.weight + QuantizeLinear_282 + Conv_284 + Add_292 + Relu_293" (FP32 out) -> GlobalAveragePool_294
    // (FP32) -> QuantizeLinear_298.
    Report report =
        diagnoseFiles({realdata("trex-pt-resnet-a100-qat-residual/resnet-qat-residual.onnx.engine.graph.json"),
                       realdata("trex-pt-resnet-a100-qat-residual/resnet-qat-residual.onnx.engine.profile.json")});
    auto findings = findingsOf(report, "residual-precision-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "Add_292")) << findings[0].message;
    EXPECT_TRUE(hasName(findings[0].engineLayers, "DequantizeLinear_291"));
    EXPECT_TRUE(hasName(findings[0].engineLayers, "GlobalAveragePool_294"));
    EXPECT_TRUE(hasName(findings[0].engineLayers, "QuantizeLinear_298"));
    EXPECT_GT(findings[0].costMs.value_or(0), 0.0);
    // The build enabled FP16 (TREx build metadata: FP32+FP16+INT8) yet GlobalAveragePool_294 runs FP32: one FP32
    // layer alone is not taken as evidence of a build without FP16.
    EXPECT_TRUE(findingsOf(report, "fp32-island").empty());
}

TEST(RealDataRulesPrecision, TrexMobilenet82ScaleLayersOnlyThePoolConv)
{
    REQUIRE_SHARED();
    // TensorRT 8.2: Q/DQ run as Scale layers. Conv_94's float output (via a reformat) is the residual of
    // "features.3.conv.2 ... + Add_144": residual-input-not-quantized's. Only Conv_838 (before the float
    // GlobalAveragePool_843) is this rule's.
    Report report =
        diagnoseFiles({realdata("trex-tests-mobilenet-qat-2022-04/mobilenet.qat.onnx.engine.graph.json"),
                       realdata("trex-tests-mobilenet-qat-2022-04/mobilenet.qat.onnx.engine.profile.json")});
    std::vector<Finding> warnings;
    for (const auto& finding : findingsOf(report, "int8-conv-float-output"))
    {
        if (finding.severity == Severity::kWarning)
        {
            warnings.push_back(finding);
        }
    }
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(hasName(warnings[0].engineLayers, "QuantizeLinear_854"));
    EXPECT_TRUE(contains(warnings[0].message, "Conv_838")) << warnings[0].message;
}

TEST(RealDataRulesPrecision, TrexQatResidualQgapHasNoResidualMismatch)
{
    REQUIRE_SHARED();
    Report report = diagnoseFiles(
        {realdata("trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap.onnx.engine.graph.json"),
         realdata("trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap.onnx.engine.profile.json")});
    EXPECT_TRUE(findingsOf(report, "residual-precision-mismatch").empty());
    // Every layer of this engine is INT8 except the logits Gemm: no FP32 island either.
    EXPECT_TRUE(findingsOf(report, "fp32-island").empty());
}

TEST(RealDataRulesPrecision, TrexQatStemConvRunsFloatOut)
{
    REQUIRE_SHARED();
    // conv1 (Conv_9) writes FP32, MaxPool_12 runs FP32, a reformat and QuantizeLinear_15 follow. The layer2/3/4.0
    // conv2 outputs (Half) are residual inputs of the fused downsample Conv+Add: not this rule's.
    Report report = diagnoseFiles({realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.graph.json"),
                                   realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.profile.json")});
    auto findings = findingsOf(report, "int8-conv-float-output");
    std::vector<Finding> warnings;
    std::copy_if(findings.begin(), findings.end(), std::back_inserter(warnings),
                 [](const Finding& f) { return f.severity == Severity::kWarning; });
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(hasName(warnings[0].engineLayers, "conv1.weight + QuantizeLinear_7 + Conv_9"));
    EXPECT_TRUE(hasName(warnings[0].engineLayers, "MaxPool_12"));
    EXPECT_TRUE(hasName(warnings[0].engineLayers, "QuantizeLinear_15"));
    // FP16 was enabled (Half tensors throughout): no FP32-island finding.
    EXPECT_TRUE(findingsOf(report, "fp32-island").empty());
    // The network-input Quantize is reported as expected.
    auto io = findingsOf(report, "io-reformat");
    ASSERT_EQ(io.size(), 1u);
    EXPECT_EQ(io[0].severity, Severity::kInfo);
    EXPECT_EQ(io[0].engineLayers, std::vector<std::string>{"QuantizeLinear_2"});
}

TEST(RealDataRulesPrecision, TrexMobilenetLastConvBeforeFloatPool)
{
    REQUIRE_SHARED();
    // features.18 (Conv_838 + Clip_842) writes Half for the unquantized GlobalAveragePool_843, then QuantizeLinear_854.
    Report report = diagnoseFiles({realdata("trex-tests-mobilenet-qat/mobilenet.qat.onnx.engine.graph.json"),
                                   realdata("trex-tests-mobilenet-qat/mobilenet.qat.onnx.engine.profile.json")});
    auto findings = findingsOf(report, "int8-conv-float-output");
    auto hit = std::find_if(
        findings.begin(), findings.end(),
        [](const Finding& f)
        { return hasName(f.engineLayers, "features.18.0.weight + QuantizeLinear_834 + Conv_838 + PWN(Clip_842)"); });
    ASSERT_NE(hit, findings.end());
    EXPECT_EQ(hit->severity, Severity::kWarning);
    EXPECT_TRUE(hasName(hit->engineLayers, "GlobalAveragePool_843"));
    EXPECT_TRUE(hasName(hit->engineLayers, "QuantizeLinear_854"));
}

TEST(RealDataRulesPrecision, OrinYoloLogBuiltWithoutFp16)
{
    REQUIRE_SHARED();
    // trtexec --int8 only: "Precision: FP32+INT8"; MaxPool, the downsample BN (Scale) and the Myelin head run FP32.
    Report report = diagnoseFiles({realdata("trex-notebooks-yolo-orin-trt852/trt.out")});
    auto findings = findingsOf(report, "fp32-island");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kWarning);
    EXPECT_FALSE(findings[0].likely);
    EXPECT_TRUE(hasName(findings[0].engineLayers, "/backbone/maxpool/MaxPool"));
}

TEST(RealDataRulesPrecision, Yolov8liteSiluAddBottlenecks)
{
    REQUIRE_SHARED();
    // qat-convs: the C2f bottleneck Adds take the float SiLU output and the float Split output.
    auto convs =
        findingsOf(diagnoseFiles({sharedModel("yolov8lite-qat-convs.onnx")}), "activation-before-residual-add");
    std::vector<std::string> adds;
    for (const auto& finding : convs)
    {
        adds.push_back(finding.onnxNodes.front());
    }
    std::sort(adds.begin(), adds.end());
    EXPECT_EQ(adds, (std::vector<std::string>{"/b2/m.0/Add", "/b4/m.0/Add", "/b4/m.1/Add", "/b6/m.0/Add", "/b6/m.1/Add",
                                              "/b8/m.0/Add"}));
    // qat-outputs: both Add inputs come through Q/DQ. Single-bottleneck blocks (b2, b8) are clean; in the
    // two-bottleneck blocks (b4, b6) the first Add's output is also the float residual of the second Add.
    auto outputs =
        findingsOf(diagnoseFiles({sharedModel("yolov8lite-qat-outputs.onnx")}), "activation-before-residual-add");
    std::vector<std::string> outputAdds;
    for (const auto& finding : outputs)
    {
        outputAdds.push_back(finding.onnxNodes.front());
        if (finding.onnxNodes.front() == "/b4/m.0/Add")
        {
            EXPECT_TRUE(contains(finding.fix, "before /b4/m.1/Add")) << finding.fix;
        }
    }
    std::sort(outputAdds.begin(), outputAdds.end());
    EXPECT_EQ(outputAdds, (std::vector<std::string>{"/b4/m.0/Add", "/b4/m.1/Add", "/b6/m.0/Add", "/b6/m.1/Add"}));
}

TEST(RealDataRulesPrecision, UnetConvTransposeBlocks)
{
    REQUIRE_SHARED();
    auto findings =
        findingsOf(diagnoseFiles({sharedModel("unet-convtranspose-qat.onnx")}), "convtranspose-epilogue-not-fused");
    auto nodes = allNodes(findings);
    ASSERT_EQ(findings.size(), 2u);
    EXPECT_TRUE(hasName(nodes, "/d1/d1.0/ConvTranspose"));
    EXPECT_TRUE(hasName(nodes, "/d2/d2.0/ConvTranspose"));
    EXPECT_TRUE(hasName(nodes, "/d1/d1.1/BatchNormalization"));
}

TEST(RealDataRulesPrecision, ResnetQatResidualLastBlockOnly)
{
    REQUIRE_SHARED();
    auto residual =
        findingsOf(diagnoseFiles({sharedModel("resnet18-qat-residual.onnx")}), "residual-precision-mismatch");
    ASSERT_EQ(residual.size(), 1u);
    EXPECT_TRUE(contains(residual[0].message, "GlobalAveragePool")) << residual[0].message;
    EXPECT_TRUE(
        findingsOf(diagnoseFiles({sharedModel("resnet18-qat-residual-qgap.onnx")}), "residual-precision-mismatch")
            .empty());
}
