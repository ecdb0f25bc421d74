// Positive and near-identical negative cases for the scale and Concat rules: concat-quantize-hoisted (R16),
// concat-scale-mismatch (R17), concat-mixed-precision (R18), requantize-before-split (R19), maxpool-scale-mismatch
// (R21), horizontal-merge-lost (R26), fanout-scale-mismatch (R31). Real-data cases assert facts read from the models
// and logs in ../shared.
#include "graph_builder.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

const char* kInt8 = "Thirty-two wide channel vectorized row major Int8 format";
const char* kFp32 = "Row major linear FP32";

bool hasNode(const Finding& finding, const std::string& node)
{
    return std::find(finding.onnxNodes.begin(), finding.onnxNodes.end(), node) != finding.onnxNodes.end();
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

//! The finding of a rule that names the given node, or nullptr.
const Finding* findingWith(const std::vector<Finding>& findings, const std::string& node)
{
    for (const auto& finding : findings)
    {
        if (hasNode(finding, node))
        {
            return &finding;
        }
    }
    return nullptr;
}

//! A quantized conv block: in -> Q/DQ(scale) -> Conv(weights) -> Relu; returns the Relu output.
std::string convRelu(GraphBuilder& g, const std::string& prefix, const std::string& input, float scale = 0.05f,
                     long kernel = 3)
{
    std::string x = g.qdq(prefix + "/in_q", input, scale);
    std::string c = g.node("Conv", prefix + "/Conv", {x, g.quantizedWeight(prefix, 8, 8, kernel)});
    return g.node("Relu", prefix + "/Relu", {c});
}

Report diagnoseWithLog(const std::optional<OnnxGraph>& graph, const BuildLog& log)
{
    Inputs inputs;
    inputs.onnx = graph;
    inputs.buildLog = log;
    return diagnose(inputs);
}

OptimizerEvent event(OptimizerEventKind kind, const std::string& pass, const std::string& subject,
                     const std::string& object, std::uint64_t line, const std::string& detail = {})
{
    OptimizerEvent e;
    e.kind = kind;
    e.pass = pass;
    e.subject = subject;
    e.object = object;
    e.detail = detail;
    e.line = line;
    return e;
}

} // namespace

// ---- R16 concat-quantize-hoisted ----------------------------------------------------------------------------------

namespace
{

//! conv a -> relu -> Concat <- (float Sigmoid of a second input | quantized conv b); Concat -> Q/DQ -> conv c.
OnnxGraph hoistGraph(bool floatSecondInput)
{
    GraphBuilder g;
    std::string a = convRelu(g, "/a", g.input("x"));
    std::string second =
        floatSecondInput ? g.node("Sigmoid", "/side/Sigmoid", {g.input("y")}) : convRelu(g, "/b", g.input("y"));
    std::string cat = g.node("Concat", "/cat/Concat", {a, second});
    g.intAttribute("/cat/Concat", "axis", 1);
    std::string c = g.node("Conv", "/c/Conv", {g.qdq("/c/in_q", cat), g.quantizedWeight("/c", 8, 16)});
    g.output(c);
    return g.build();
}

} // namespace

TEST(RuleConcatQuantizeHoisted, TriggersOnFloatConcatProducer)
{
    auto findings = findingsOf(runDiagnose(hoistGraph(true), std::nullopt), "concat-quantize-hoisted");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_TRUE(hasNode(findings[0], "/cat/Concat"));
    EXPECT_TRUE(hasNode(findings[0], "/c/in_q/QuantizeLinear"));
    EXPECT_TRUE(hasNode(findings[0], "/side/Sigmoid"));
    EXPECT_FALSE(hasNode(findings[0], "/a/Conv")); // the quantized conv absorbs its clone
    EXPECT_TRUE(contains(findings[0].message, "likely"));
    EXPECT_TRUE(contains(findings[0].fix, "NVIDIA/TensorRT#4366")) << findings[0].fix;
}

TEST(RuleConcatQuantizeHoisted, SilentWhenEveryProducerIsQuantized)
{
    EXPECT_TRUE(findingsOf(runDiagnose(hoistGraph(false), std::nullopt), "concat-quantize-hoisted").empty());
}

TEST(RuleConcatQuantizeHoisted, NamesTheUnquantizedInputOfAnAdd)
{
    // conv a -> relu; Add(relu_a, float input) -> Concat -> Q/DQ -> conv: the Add cannot emit INT8.
    GraphBuilder g;
    std::string a = convRelu(g, "/a", g.input("x"));
    std::string sum = g.node("Add", "/add/Add", {g.qdq("/add/in_q", a), g.input("y")});
    std::string b = convRelu(g, "/b", g.input("z"));
    std::string cat = g.node("Concat", "/cat/Concat", {sum, b});
    g.output(g.node("Conv", "/c/Conv", {g.qdq("/c/in_q", cat), g.quantizedWeight("/c", 8, 16)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "concat-quantize-hoisted");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/add/Add"));
    EXPECT_TRUE(contains(findings[0].fix, "Q/DQ on y")) << findings[0].fix;
}

// The issue "One model of TensorRT", defect 7: a residual Add fused into the quantized conv that writes one of its
// inputs (YOLO/Orin's layer2.1 block: conv2 -> bn2 -> Add(relu_1 of the block before)). Only the residual input takes
// a Q/DQ; one on the conv side would keep the Add out of the conv and fight residual-input-not-quantized. Beside the
// test above, where neither Add input comes from a conv and the float one is named.
TEST(RuleConcatQuantizeHoisted, ResidualAddFusedIntoAConvNamesOnlyTheResidual)
{
    GraphBuilder g;
    std::string residual = convRelu(g, "/a", g.input("x"));
    std::string conv = g.node("Conv", "/b/Conv", {g.qdq("/b/in_q", residual), g.quantizedWeight("/b", 8, 8)});
    std::string sum = g.node("Add", "/add/Add", {g.node("BatchNormalization", "/b/bn", {conv}), residual});
    std::string other = convRelu(g, "/d", g.input("z"));
    std::string cat = g.node("Concat", "/cat/Concat", {sum, other});
    g.intAttribute("/cat/Concat", "axis", 1);
    g.output(g.node("Conv", "/c/Conv", {g.qdq("/c/in_q", cat), g.quantizedWeight("/c", 8, 16)}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "concat-quantize-hoisted");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].message, "fuses into the quantized Conv /b/Conv")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].fix, "Q/DQ on /a/Relu_out (input of /add/Add)")) << findings[0].fix;
    EXPECT_FALSE(contains(findings[0].fix, "/b/bn")) << findings[0].fix;
}

TEST(RuleConcatQuantizeHoisted, EngineCloneWithFloatInputTriggers)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(layer("PWN(/side/Sigmoid)", "PointWiseV2", {{"y", kFp32}}, {{"s", kFp32}}));
    plan.layers.push_back(layer("/c/in_q/QuantizeLinear_clone_1", "Reformat", {{"s", kFp32}},
                                {{"/c/in_q/QuantizeLinear_output_0", kInt8}}, "QDQ"));
    auto findings = findingsOf(runDiagnose(std::nullopt, plan), "concat-quantize-hoisted");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_EQ(findings[0].engineLayers, std::vector<std::string>{"/c/in_q/QuantizeLinear_clone_1"});
    EXPECT_TRUE(hasNode(findings[0], "/c/in_q/QuantizeLinear"));
    EXPECT_TRUE(contains(findings[0].message, "PWN(/side/Sigmoid)"));
}

TEST(RuleConcatQuantizeHoisted, EngineCloneFusedIntoProducerIsQuiet)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    // The clone was absorbed: the conv writes INT8 straight into the Q's output; no standalone clone layer.
    plan.layers.push_back(layer("w + /b/Conv + /b/Relu", "CaskConvolution", {{"t", kInt8}},
                                {{"/c/in_q/QuantizeLinear_output_0", kInt8}}));
    EXPECT_TRUE(findingsOf(runDiagnose(std::nullopt, plan), "concat-quantize-hoisted").empty());
}

TEST(RuleConcatQuantizeHoisted, BuildLogSplitEventIsCitedWithItsLine)
{
    BuildLog log;
    log.sourcePath = "build.log";
    log.hasEngineBlock = true;
    log.engine.sourcePath = "build.log";
    log.engine.form = LayerListForm::kLogLine;
    log.engine.layers.push_back(layer("PWN(/side/Sigmoid)", "PointWiseV2", {{"y", kFp32}}, {{"s", kFp32}}));
    log.engine.layers.push_back(layer("/c/in_q/QuantizeLinear_clone_1", "Reformat", {{"s", kFp32}},
                                      {{"/c/in_q/QuantizeLinear_output_0", kInt8}}));
    log.engine.layers.back().line = 900;
    log.events.push_back(event(OptimizerEventKind::kRunning, "SplitQAcrossPrecedingFanIn", "/cat/Concat", "", 120));
    auto findings = findingsOf(diagnoseWithLog(std::nullopt, log), "concat-quantize-hoisted");
    ASSERT_EQ(findings.size(), 1u);
    bool cited = false;
    for (const auto& evidence : findings[0].evidence)
    {
        cited = cited || (evidence.line == 120 && contains(evidence.text, "/cat/Concat"));
    }
    EXPECT_TRUE(cited);
}

// ---- R17 concat-scale-mismatch -----------------------------------------------------------------------------------

namespace
{

//! conv a -> relu -> Q/DQ(sa) -> Concat <- Q/DQ(sb) <- relu <- conv b; Concat -> Q/DQ(0.05) -> conv c.
OnnxGraph concatScales(float sa, float sb)
{
    GraphBuilder g;
    std::string a = g.qdq("/a/out_q", convRelu(g, "/a", g.input("x")), sa);
    std::string b = g.qdq("/b/out_q", convRelu(g, "/b", g.input("y")), sb);
    std::string cat = g.node("Concat", "/cat/Concat", {a, b});
    g.output(g.node("Conv", "/c/Conv", {g.qdq("/c/in_q", cat, 0.05f), g.quantizedWeight("/c", 8, 16)}));
    return g.build();
}

} // namespace

TEST(RuleConcatScaleMismatch, TriggersOnDifferentInputScale)
{
    auto findings = findingsOf(runDiagnose(concatScales(0.05f, 0.08f), std::nullopt), "concat-scale-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/cat/Concat"));
    EXPECT_TRUE(hasNode(findings[0], "/c/in_q/QuantizeLinear"));
    EXPECT_TRUE(contains(findings[0].message, "/b/out_q/DequantizeLinear (scale 0.08)")) << findings[0].message;
    EXPECT_FALSE(contains(findings[0].message, "/a/out_q/DequantizeLinear")); // its scale matches the output
    EXPECT_TRUE(contains(findings[0].fix, "0.08")) << findings[0].fix;        // the largest scale of the group
    EXPECT_FALSE(contains(findings[0].fix, "re-calibrate")) << findings[0].fix;
}

// 0.05 vs 0.4 (8x): beyond the 4x fix gives one scale, the Concat's advice is calibration, with every scale.
TEST(RuleConcatScaleMismatch, ScalesBeyondTheBoundAskForCalibration)
{
    auto findings = findingsOf(runDiagnose(concatScales(0.05f, 0.4f), std::nullopt), "concat-scale-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].fix, "needs calibration")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "differ by 8x")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "/b/out_q/DequantizeLinear (scale 0.4)")) << findings[0].fix;
}

TEST(RuleConcatScaleMismatch, SilentWithOneScale)
{
    EXPECT_TRUE(findingsOf(runDiagnose(concatScales(0.05f, 0.05f), std::nullopt), "concat-scale-mismatch").empty());
}

// ---- R18 concat-mixed-precision ----------------------------------------------------------------------------------

TEST(RuleConcatMixedPrecision, TriggersOnMixedInputsOfAFloatConcat)
{
    GraphBuilder g;
    std::string a = g.qdq("/a/out_q", convRelu(g, "/a", g.input("x")));
    std::string f = g.node("Sigmoid", "/side/Sigmoid", {g.input("y")});
    g.output(g.node("Concat", "/cat/Concat", {a, f}));
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "concat-mixed-precision");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/a/out_q/DequantizeLinear"));
    EXPECT_TRUE(contains(findings[0].fix, "/side/Sigmoid_out")) << findings[0].fix;
}

TEST(RuleConcatMixedPrecision, SilentWhenAllInputsAreFloat)
{
    GraphBuilder g;
    std::string a = convRelu(g, "/a", g.input("x"));
    std::string f = g.node("Sigmoid", "/side/Sigmoid", {g.input("y")});
    g.output(g.node("Concat", "/cat/Concat", {a, f}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "concat-mixed-precision").empty());
}

namespace
{

//! conv a -> relu r; r -> Concat -> Q/DQ -> conv c; r also read by a float Sigmoid or by a quantized conv.
OnnxGraph reusedInput(bool floatReader)
{
    GraphBuilder g;
    std::string r = convRelu(g, "/a", g.input("x"));
    std::string b = convRelu(g, "/b", g.input("y"));
    std::string cat = g.node("Concat", "/cat/Concat", {r, b});
    g.output(g.node("Conv", "/c/Conv", {g.qdq("/c/in_q", cat), g.quantizedWeight("/c", 8, 16)}));
    if (floatReader)
    {
        g.output(g.node("Sigmoid", "/other/Sigmoid", {r}));
    }
    else
    {
        g.output(g.node("Conv", "/other/Conv", {g.qdq("/other/in_q", r), g.quantizedWeight("/other", 8, 8)}));
    }
    return g.build();
}

} // namespace

TEST(RuleConcatMixedPrecision, TriggersWhenAConcatInputIsReadInFloatElsewhere)
{
    auto findings = findingsOf(runDiagnose(reusedInput(true), std::nullopt), "concat-mixed-precision");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/other/Sigmoid"));
    EXPECT_TRUE(hasNode(findings[0], "/a/Conv"));
    EXPECT_TRUE(contains(findings[0].fix, "/c/in_q/QuantizeLinear"));
}

TEST(RuleConcatMixedPrecision, SilentWhenTheOtherReaderIsQuantized)
{
    EXPECT_TRUE(findingsOf(runDiagnose(reusedInput(false), std::nullopt), "concat-mixed-precision").empty());
}

// A Shape reads the dimensions of the Concat's input, not its values (ShuffleNet's channel split).
TEST(RuleConcatMixedPrecision, SilentWhenTheOtherReaderIsAShape)
{
    GraphBuilder g;
    std::string r = convRelu(g, "/a", g.input("x"));
    std::string b = convRelu(g, "/b", g.input("y"));
    std::string cat = g.node("Concat", "/cat/Concat", {r, b});
    g.output(g.node("Conv", "/c/Conv", {g.qdq("/c/in_q", cat), g.quantizedWeight("/c", 8, 16)}));
    g.output(g.node("Shape", "/other/Shape", {r}));
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "concat-mixed-precision").empty());
}

TEST(RuleConcatMixedPrecision, EngineCopyChangingPrecisionTriggers)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(layer("35 copy", "Reformat", {{"35", kInt8}}, {{"cat_out", kFp32}}));
    auto findings = findingsOf(runDiagnose(std::nullopt, plan), "concat-mixed-precision");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].engineLayers, std::vector<std::string>{"35 copy"});
    EXPECT_TRUE(findings[0].likely);
}

TEST(RuleConcatMixedPrecision, EngineLayoutCopyIsQuiet)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(layer("35 copy", "Reformat", {{"35", kInt8}}, {{"cat_out", kInt8}}));
    EXPECT_TRUE(findingsOf(runDiagnose(std::nullopt, plan), "concat-mixed-precision").empty());
}

// ---- R19 requantize-before-split ---------------------------------------------------------------------------------

namespace
{

//! conv a -> relu -> Q/DQ(0.05) -> Split -> {Q/DQ(sb) -> conv b, Q/DQ(0.05) -> conv c}.
OnnxGraph splitGraph(float sb)
{
    GraphBuilder g;
    std::string a = g.qdq("/a/out_q", convRelu(g, "/a", g.input("x")), 0.05f);
    g.node("Split", "/split/Split", {a}, {"s0", "s1"});
    std::string b = g.node("Conv", "/b/Conv", {g.qdq("/b/in_q", "s0", sb), g.quantizedWeight("/b", 8, 4)});
    std::string c = g.node("Conv", "/c/Conv", {g.qdq("/c/in_q", "s1", 0.05f), g.quantizedWeight("/c", 8, 4)});
    g.output(b);
    g.output(c);
    return g.build();
}

} // namespace

TEST(RuleRequantizeBeforeSplit, TriggersOnOtherScaleAfterSplit)
{
    auto findings = findingsOf(runDiagnose(splitGraph(0.03f), std::nullopt), "requantize-before-split");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_TRUE(hasNode(findings[0], "/a/Conv"));
    EXPECT_TRUE(hasNode(findings[0], "/split/Split"));
    EXPECT_TRUE(hasNode(findings[0], "/b/in_q/QuantizeLinear"));
    EXPECT_FALSE(hasNode(findings[0], "/c/in_q/QuantizeLinear")); // same scale: cancels
    EXPECT_TRUE(contains(findings[0].fix, "remove the Q/DQ pair /a/out_q/QuantizeLinear / /a/out_q/DequantizeLinear"))
        << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "0.05")) << findings[0].fix;
}

TEST(RuleRequantizeBeforeSplit, SilentWithTheConvOutputScale)
{
    EXPECT_TRUE(findingsOf(runDiagnose(splitGraph(0.05f), std::nullopt), "requantize-before-split").empty());
}

TEST(RuleRequantizeBeforeSplit, EngineScaleLayerAfterSliceSwapTriggers)
{
    BuildLog log;
    log.sourcePath = "build.log";
    log.hasEngineBlock = true;
    log.engine.sourcePath = "build.log";
    log.engine.form = LayerListForm::kLogLine;
    log.engine.layers.push_back(layer("w + /a/Conv + /a/Relu", "CaskConvolution", {{"x_q", kInt8}},
                                      {{"/a/out_q/QuantizeLinear_output_0", kInt8}}));
    log.engine.layers.push_back(layer("/b/in_q/QuantizeLinear_clone_0", "Scale",
                                      {{"/a/out_q/QuantizeLinear_output_0", kInt8}},
                                      {{"/b/in_q/QuantizeLinear_output_0", kInt8}}));
    log.events.push_back(event(OptimizerEventKind::kSwap, "VanillaSwapWithFollowingQ", "/split/Slice",
                               "/b/in_q/QuantizeLinear_clone_0", 77));
    auto findings = findingsOf(diagnoseWithLog(std::nullopt, log), "requantize-before-split");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].engineLayers, std::vector<std::string>{"/b/in_q/QuantizeLinear_clone_0"});
    bool cited = false;
    for (const auto& evidence : findings[0].evidence)
    {
        cited = cited || evidence.line == 77;
    }
    EXPECT_TRUE(cited);
}

TEST(RuleRequantizeBeforeSplit, EngineScaleLayerWithoutSliceSwapIsQuiet)
{
    BuildLog log;
    log.sourcePath = "build.log";
    log.hasEngineBlock = true;
    log.engine.form = LayerListForm::kLogLine;
    log.engine.layers.push_back(layer("/b/in_q/QuantizeLinear_clone_0", "Scale",
                                      {{"/a/out_q/QuantizeLinear_output_0", kInt8}},
                                      {{"/b/in_q/QuantizeLinear_output_0", kInt8}}));
    log.events.push_back(event(OptimizerEventKind::kSwap, "VanillaSwapWithFollowingQ", "/up/Resize",
                               "/b/in_q/QuantizeLinear_clone_0", 77));
    EXPECT_TRUE(findingsOf(diagnoseWithLog(std::nullopt, log), "requantize-before-split").empty());
}

// ---- R21 maxpool-scale-mismatch ----------------------------------------------------------------------------------

namespace
{

//! conv a -> relu -> Q/DQ(0.05) -> MaxPool -> Q/DQ(sout) -> conv b.
OnnxGraph poolGraph(float sout)
{
    GraphBuilder g;
    std::string a = g.qdq("/a/out_q", convRelu(g, "/a", g.input("x")), 0.05f);
    std::string p = g.node("MaxPool", "/pool/MaxPool", {a});
    g.output(g.node("Conv", "/b/Conv", {g.qdq("/b/in_q", p, sout), g.quantizedWeight("/b", 8, 8)}));
    return g.build();
}

} // namespace

TEST(RuleMaxPoolScaleMismatch, TriggersOnOtherOutputScale)
{
    auto findings = findingsOf(runDiagnose(poolGraph(0.07f), std::nullopt), "maxpool-scale-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/pool/MaxPool"));
    EXPECT_TRUE(hasNode(findings[0], "/a/out_q/DequantizeLinear"));
    EXPECT_TRUE(hasNode(findings[0], "/b/in_q/QuantizeLinear"));
    EXPECT_TRUE(contains(findings[0].fix, "/b/in_q/QuantizeLinear the scale of /a/out_q/DequantizeLinear (0.05)"))
        << findings[0].fix;
}

TEST(RuleMaxPoolScaleMismatch, ScalesBeyondTheBoundAskForCalibration)
{
    auto findings = findingsOf(runDiagnose(poolGraph(0.5f), std::nullopt), "maxpool-scale-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].fix, "needs calibration")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "/b/in_q/QuantizeLinear (scale 0.5)")) << findings[0].fix;
    EXPECT_FALSE(contains(findings[0].fix, "the scale of /a/out_q/DequantizeLinear (0.05)")) << findings[0].fix;
}

TEST(RuleMaxPoolScaleMismatch, SilentWithOneScale)
{
    EXPECT_TRUE(findingsOf(runDiagnose(poolGraph(0.05f), std::nullopt), "maxpool-scale-mismatch").empty());
}

TEST(RuleMaxPoolScaleMismatch, SiblingQuantizerOfTheInputCounts)
{
    // relu r -> Q/DQ(0.05) -> conv b; r -> MaxPool -> Q/DQ(0.09) -> conv c: no DQ before the pool, a sibling Q.
    GraphBuilder g;
    std::string r = convRelu(g, "/a", g.input("x"));
    std::string b = g.node("Conv", "/b/Conv", {g.qdq("/b/in_q", r, 0.05f), g.quantizedWeight("/b", 8, 8)});
    std::string p = g.node("MaxPool", "/pool/MaxPool", {r});
    std::string c = g.node("Conv", "/c/Conv", {g.qdq("/c/in_q", p, 0.09f), g.quantizedWeight("/c", 8, 8)});
    g.output(b);
    g.output(c);
    OnnxGraph graph = g.build();
    auto findings = findingsOf(runDiagnose(graph, std::nullopt), "maxpool-scale-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/b/in_q/QuantizeLinear"));
    EXPECT_TRUE(hasNode(findings[0], "/c/in_q/QuantizeLinear"));
    // A mismatch only across the MaxPool is this rule's, not fanout-scale-mismatch's.
    EXPECT_TRUE(findingsOf(runDiagnose(graph, std::nullopt), "fanout-scale-mismatch").empty());
}

// ---- R26 horizontal-merge-lost -----------------------------------------------------------------------------------

namespace
{

//! relu r of conv a feeds conv b (kernel kb, scale sb) and conv c (3x3, scale 0.05) through their own Q/DQ pairs.
OnnxGraph siblings(float sb, long kb)
{
    GraphBuilder g;
    std::string r = convRelu(g, "/a", g.input("x"));
    std::string b = g.node("Conv", "/b/Conv", {g.qdq("/b/in_q", r, sb), g.quantizedWeight("/b", 8, 8, kb)});
    std::string c = g.node("Conv", "/c/Conv", {g.qdq("/c/in_q", r, 0.05f), g.quantizedWeight("/c", 8, 8, 3)});
    g.output(b);
    g.output(c);
    return g.build();
}

} // namespace

TEST(RuleHorizontalMergeLost, TriggersOnSiblingConvsWithDifferentScales)
{
    auto findings = findingsOf(runDiagnose(siblings(0.06f, 3), std::nullopt), "horizontal-merge-lost");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_TRUE(hasNode(findings[0], "/b/Conv"));
    EXPECT_TRUE(hasNode(findings[0], "/c/Conv"));
    EXPECT_TRUE(contains(findings[0].fix, "/a/Relu_out")) << findings[0].fix;
    EXPECT_FALSE(contains(findings[0].fix, "re-calibrate")) << findings[0].fix;
}

TEST(RuleHorizontalMergeLost, ScalesBeyondTheBoundAskForCalibration)
{
    auto findings = findingsOf(runDiagnose(siblings(0.5f, 3), std::nullopt), "horizontal-merge-lost");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].fix, "needs calibration")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "/b/in_q/QuantizeLinear (scale 0.5)")) << findings[0].fix;
}

TEST(RuleHorizontalMergeLost, SilentWithDedicatedPairsOfEqualScale)
{
    EXPECT_TRUE(findingsOf(runDiagnose(siblings(0.05f, 3), std::nullopt), "horizontal-merge-lost").empty());
}

TEST(RuleHorizontalMergeLost, SilentWhenTheSiblingsCannotMergeAnyway)
{
    // 1x1 next to 3x3 (a ResNet downsample block): never merged, even in an implicit engine.
    EXPECT_TRUE(findingsOf(runDiagnose(siblings(0.06f, 1), std::nullopt), "horizontal-merge-lost").empty());
}

TEST(RuleHorizontalMergeLost, SilentWhenTheEngineMergedThem)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(layer("/a/Conv + /a/Relu", "CaskConvolution", {{"x", kInt8}}, {{"/a/Relu_out", kInt8}}));
    plan.layers.push_back(layer("/b/Conv || /c/Conv", "CaskConvolution", {{"/a/Relu_out", kInt8}},
                                {{"/b/Conv_out", kFp32}, {"/c/Conv_out", kFp32}}));
    auto withEngine = findingsOf(runDiagnose(siblings(0.06f, 3), plan), "horizontal-merge-lost");
    EXPECT_TRUE(withEngine.empty());
}

TEST(RuleHorizontalMergeLost, EngineWithSeparateLayersIsAttached)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(layer("/a/Conv + /a/Relu", "CaskConvolution", {{"x", kInt8}}, {{"/a/Relu_out", kInt8}}));
    plan.layers.push_back(layer("/b/Conv", "CaskConvolution", {{"/a/Relu_out", kInt8}}, {{"/b/Conv_out", kFp32}}));
    plan.layers.push_back(layer("/c/Conv", "CaskConvolution", {{"/a/Relu_out", kInt8}}, {{"/c/Conv_out", kFp32}}));
    auto findings = findingsOf(runDiagnose(siblings(0.06f, 3), plan), "horizontal-merge-lost");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_NE(std::find(findings[0].engineLayers.begin(), findings[0].engineLayers.end(), "/b/Conv"),
              findings[0].engineLayers.end());
    EXPECT_NE(std::find(findings[0].engineLayers.begin(), findings[0].engineLayers.end(), "/c/Conv"),
              findings[0].engineLayers.end());
}

// ---- R31 fanout-scale-mismatch -----------------------------------------------------------------------------------

TEST(RuleFanoutScaleMismatch, TriggersOnTwoScalesForOneTensor)
{
    auto findings = findingsOf(runDiagnose(siblings(0.06f, 1), std::nullopt), "fanout-scale-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_TRUE(hasNode(findings[0], "/a/Relu"));
    EXPECT_TRUE(hasNode(findings[0], "/b/in_q/QuantizeLinear"));
    EXPECT_TRUE(hasNode(findings[0], "/c/in_q/QuantizeLinear"));
    EXPECT_TRUE(contains(findings[0].fix, "0.06")) << findings[0].fix;
    EXPECT_FALSE(contains(findings[0].fix, "re-calibrate")) << findings[0].fix;
}

// 10x apart (0.5 vs 0.05): beyond the 4x fix gives one scale, the advice is to calibrate, naming each Q's scale,
// not to take the largest (the near-identical case above, 1.2x apart).
TEST(RuleFanoutScaleMismatch, ScalesBeyondTheBoundAskForCalibration)
{
    auto findings = findingsOf(runDiagnose(siblings(0.5f, 1), std::nullopt), "fanout-scale-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].fix, "differ by 10x")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "/b/in_q/QuantizeLinear (scale 0.5)")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "/c/in_q/QuantizeLinear (scale 0.05)")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "re-calibrate")) << findings[0].fix;
    EXPECT_FALSE(contains(findings[0].fix, "covers all ranges")) << findings[0].fix;
}

TEST(RuleFanoutScaleMismatch, SilentWithOneScale)
{
    EXPECT_TRUE(findingsOf(runDiagnose(siblings(0.05f, 1), std::nullopt), "fanout-scale-mismatch").empty());
}

TEST(RuleFanoutScaleMismatch, WalksThroughSplitAndConcat)
{
    // relu r -> Split -> {Q(0.04) -> conv b, Concat(.., ..) -> Q(0.05) -> conv c}: the Concat's Q reaches r too.
    GraphBuilder g;
    std::string r = convRelu(g, "/a", g.input("x"));
    g.node("Split", "/split/Split", {r}, {"s0", "s1"});
    std::string b = g.node("Conv", "/b/Conv", {g.qdq("/b/in_q", "s1", 0.04f), g.quantizedWeight("/b", 4, 4)});
    std::string cat = g.node("Concat", "/cat/Concat", {"s0", "s1"});
    std::string c = g.node("Conv", "/c/Conv", {g.qdq("/c/in_q", cat, 0.05f), g.quantizedWeight("/c", 8, 8)});
    g.output(b);
    g.output(c);
    auto findings = findingsOf(runDiagnose(g.build(), std::nullopt), "fanout-scale-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/b/in_q/QuantizeLinear"));
    EXPECT_TRUE(hasNode(findings[0], "/c/in_q/QuantizeLinear"));
}

namespace
{

//! Two Reshapes whose shape input is computed from a Shape (Shape -> Concat, Swin's windows), each output quantized
//! before a conv (scales 0.04 and 0.05). With sharedData the Reshapes also read one data tensor (a Relu's output);
//! without, each reads a network input of its own.
OnnxGraph reshapesSharingAShape(bool sharedData)
{
    GraphBuilder g;
    std::string r = convRelu(g, "/a", g.input("x"));
    std::string dims = g.node("Concat", "/shape/Concat", {g.node("Shape", "/shape/Shape", {r})});
    g.intAttribute("/shape/Concat", "axis", 0);
    std::string b = g.node("Reshape", "/b/Reshape", {sharedData ? r : g.input("y"), dims});
    std::string c = g.node("Reshape", "/c/Reshape", {sharedData ? r : g.input("z"), dims});
    g.output(g.node("Conv", "/b/Conv", {g.qdq("/b/in_q", b, 0.04f), g.quantizedWeight("/b", 4, 4)}));
    g.output(g.node("Conv", "/c/Conv", {g.qdq("/c/in_q", c, 0.05f), g.quantizedWeight("/c", 4, 4)}));
    return g.build();
}

} // namespace

// A Q moves across a Reshape with the data, not with the shape: the shape tensor fans out to no quantizer (Swin-T under
// ONNX Runtime's quantizer had 70 such findings).
TEST(RuleFanoutScaleMismatch, SilentOnAShapeTensorReadByReshapes)
{
    EXPECT_TRUE(findingsOf(runDiagnose(reshapesSharingAShape(false), std::nullopt), "fanout-scale-mismatch").empty());
}

TEST(RuleFanoutScaleMismatch, TriggersOnTheDataTheReshapesShare)
{
    auto findings = findingsOf(runDiagnose(reshapesSharingAShape(true), std::nullopt), "fanout-scale-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(hasNode(findings[0], "/a/Relu"));
}

TEST(RuleFanoutScaleMismatch, EngineTwoQuantizeLayersOnOneTensorTrigger)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(layer("w + /a/Conv + /a/Relu", "CaskConvolution", {{"x", kInt8}}, {{"r", kFp32}}));
    plan.layers.push_back(layer("/b/in_q/QuantizeLinear", "Reformat", {{"r", kFp32}}, {{"rb", kInt8}}, "QDQ"));
    plan.layers.push_back(layer("/c/in_q/QuantizeLinear", "Reformat", {{"r", kFp32}}, {{"rc", kInt8}}, "QDQ"));
    auto findings = findingsOf(runDiagnose(std::nullopt, plan), "fanout-scale-mismatch");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].engineLayers.size(), 2u);
    EXPECT_TRUE(contains(findings[0].message, "Tensor r "));
}

// The same two layers where the second is a clone SplitQAcrossPrecedingFanIn made after the merge pass: it was never
// offered for merging, so nothing says the scales differ (trex-notebooks-yolo-orin-trt852/trt.out:5212-5228).
TEST(RuleFanoutScaleMismatch, EngineQuantizeBesideAPostMergeCloneIsQuiet)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(layer("w + /a/Conv + /a/Relu", "CaskConvolution", {{"x", kInt8}}, {{"r", kFp32}}));
    plan.layers.push_back(layer("/b/in_q/QuantizeLinear", "Reformat", {{"r", kFp32}}, {{"rb", kInt8}}, "QDQ"));
    plan.layers.push_back(layer("/c/in_q/QuantizeLinear_clone_1", "Reformat", {{"r", kFp32}}, {{"rc", kInt8}}, "QDQ"));
    EXPECT_TRUE(findingsOf(runDiagnose(std::nullopt, plan), "fanout-scale-mismatch").empty());
}

TEST(RuleFanoutScaleMismatch, EngineOneQuantizeLayerIsQuiet)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(layer("w + /a/Conv + /a/Relu", "CaskConvolution", {{"x", kInt8}}, {{"r", kFp32}}));
    plan.layers.push_back(layer("/b/in_q/QuantizeLinear", "Reformat", {{"r", kFp32}}, {{"rb", kInt8}}, "QDQ"));
    EXPECT_TRUE(findingsOf(runDiagnose(std::nullopt, plan), "fanout-scale-mismatch").empty());
}

// ---- real models and logs ----------------------------------------------------------------------------------------

namespace
{

Report diagnoseFiles(const std::vector<std::string>& files)
{
    InputFiles input;
    input.files = files;
    return diagnose(loadInputs(input, Limits{}));
}

const std::vector<std::string> kMyRules = {
    "concat-quantize-hoisted", "concat-scale-mismatch", "concat-mixed-precision", "requantize-before-split",
    "maxpool-scale-mismatch",  "horizontal-merge-lost", "fanout-scale-mismatch"};

} // namespace

TEST(RealDataRulesScales, YoloQatOutputsSplitConcatScales)
{
    REQUIRE_SHARED();
    Report report = diagnoseFiles({sharedModel("yolov8lite-qat-outputs.onnx").string()});
    // Split consumers quantized with another scale than the conv output pair (read from the model: /b4 2.05e-5 vs
    // 2.17e-5, /n1 2.37e-8 vs 2.79e-8, /n2 1.10e-6 vs 1.33e-6); /b2, /b6, /b8 share the scale.
    auto split = findingsOf(report, "requantize-before-split");
    ASSERT_EQ(split.size(), 3u);
    for (const char* block : {"/b4", "/n1", "/n2"})
    {
        const Finding* finding = findingWith(split, std::string(block) + "/Split");
        ASSERT_NE(finding, nullptr) << block;
        EXPECT_TRUE(hasNode(*finding, std::string(block) + "/cv1/oq/DequantizeLinear"));
        EXPECT_TRUE(hasNode(*finding, std::string(block) + "/m.0/cv1/m/conv/iq/QuantizeLinear"));
    }
    // Concats whose DQ-fed inputs differ from the output Q (through the neck Resize for /Concat and /Concat_1).
    auto concat = findingsOf(report, "concat-scale-mismatch");
    ASSERT_EQ(concat.size(), 5u);
    for (const char* node : {"/b8/Concat", "/n1/Concat", "/n2/Concat", "/Concat", "/Concat_1"})
    {
        EXPECT_NE(findingWith(concat, node), nullptr) << node;
    }
    EXPECT_NE(findingWith(concat, "/b9/cv2/oq/DequantizeLinear"), nullptr); // the DQ behind /up/Resize
    // SPPF: one scale (7.87402e-09) on the MaxPool input, outputs and Concat.
    EXPECT_TRUE(findingsOf(report, "maxpool-scale-mismatch").empty());
    EXPECT_TRUE(findingWith(concat, "/b9/Concat") == nullptr);
    // The second bottleneck Add reads the first Add's unquantized output: its Concat clone cannot fuse.
    auto hoisted = findingsOf(report, "concat-quantize-hoisted");
    ASSERT_EQ(hoisted.size(), 2u);
    EXPECT_NE(findingWith(hoisted, "/b4/m.1/Add"), nullptr);
    EXPECT_NE(findingWith(hoisted, "/b6/m.1/Add"), nullptr);
    // The first bottleneck Add feeds the next bottleneck's conv (2.08e-5) and the Concat (2.17e-5).
    auto fanout = findingsOf(report, "fanout-scale-mismatch");
    ASSERT_EQ(fanout.size(), 2u);
    EXPECT_NE(findingWith(fanout, "/b4/m.0/Add"), nullptr);
    EXPECT_NE(findingWith(fanout, "/b6/m.0/Add"), nullptr);
    EXPECT_TRUE(findingsOf(report, "horizontal-merge-lost").empty());
}

TEST(RealDataRulesScales, YoloQatConvsHasNoDequantizedConcatOrSplitFindings)
{
    REQUIRE_SHARED();
    Report report = diagnoseFiles({sharedModel("yolov8lite-qat-convs.onnx").string()});
    // Q/DQ only on conv inputs: no DQ feeds a Concat, Split or MaxPool, and no sibling convs share a tensor.
    for (const char* rule :
         {"concat-scale-mismatch", "requantize-before-split", "maxpool-scale-mismatch", "horizontal-merge-lost"})
    {
        EXPECT_TRUE(findingsOf(report, rule).empty()) << rule;
    }
    // Each C2f cv1 output reaches the bottleneck conv's Q and the cv2 Q (through the Concat) with different scales,
    // e.g. /b2: 0.00132105 vs 0.00145576.
    auto fanout = findingsOf(report, "fanout-scale-mismatch");
    EXPECT_NE(findingWith(fanout, "/b2/cv1/act/Mul"), nullptr);
    EXPECT_NE(findingWith(fanout, "/n2/cv1/act/Mul"), nullptr);
    // The bottleneck Adds run in float (their inputs are SiLU outputs), so the C2f Concat clone on them cannot fuse.
    auto hoisted = findingsOf(report, "concat-quantize-hoisted");
    EXPECT_NE(findingWith(hoisted, "/b2/m.0/Add"), nullptr);
    EXPECT_EQ(findingWith(hoisted, "/n1/Concat"), nullptr); // no residual Add in the neck C2f
}

TEST(RealDataRulesScales, ResNetModelsAreQuiet)
{
    REQUIRE_SHARED();
    // Downsample blocks read one tensor through dedicated pairs of equal scale (e.g. 0.0374958 twice in
    // resnet18-qat-convs) with 3x3 and 1x1 geometry; no Concat, Split, or MaxPool scale pair differs.
    for (const char* model : {"resnet18-ort-qdq.onnx", "resnet18-qat-convs.onnx", "resnet18-qat-residual.onnx",
                              "resnet18-qat-residual-qgap.onnx", "resnet50-qat-convs.onnx"})
    {
        Report report = diagnoseFiles({sharedModel(model).string()});
        for (const auto& rule : kMyRules)
        {
            EXPECT_TRUE(findingsOf(report, rule).empty()) << model << " " << rule;
        }
    }
}

TEST(RealDataRulesScales, UnetConcatCloneOnConvTranspose)
{
    REQUIRE_SHARED();
    Report report = diagnoseFiles({sharedModel("unet-convtranspose-qat.onnx").string()});
    auto hoisted = findingsOf(report, "concat-quantize-hoisted");
    ASSERT_EQ(hoisted.size(), 1u);
    EXPECT_TRUE(hasNode(hoisted[0], "/Concat"));
    EXPECT_TRUE(hasNode(hoisted[0], "/d1/d1.0/ConvTranspose"));
    EXPECT_TRUE(hasNode(hoisted[0], "/d2/d2.0/iq/QuantizeLinear"));
}

TEST(RealDataRulesScales, TrexYoloOrinTrt852Log)
{
    REQUIRE_SHARED();
    Report report = diagnoseFiles({realdata("trex-notebooks-yolo-orin-trt852/trt.out").string()});
    auto hoisted = findingsOf(report, "concat-quantize-hoisted");
    ASSERT_EQ(hoisted.size(), 2u);
    // Engine block lines 12778 and 12788; SplitQAcrossPrecedingFanIn on /neck/Concat_1 (5228) and /neck/Concat (5227).
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> expected = {
        {"/neck/detect3/conv1/conv/_input_quantizer/QuantizeLinear_clone_1", {12778, 5228}},
        {"/neck/detect2/conv1/conv/_input_quantizer/QuantizeLinear_clone_1", {12788, 5227}}};
    for (const auto& finding : hoisted)
    {
        ASSERT_EQ(finding.engineLayers.size(), 1u);
        auto it = expected.find(finding.engineLayers[0]);
        ASSERT_NE(it, expected.end()) << finding.engineLayers[0];
        std::vector<std::uint64_t> lines;
        for (const auto& evidence : finding.evidence)
        {
            lines.push_back(evidence.line);
        }
        EXPECT_NE(std::find(lines.begin(), lines.end(), it->second.first), lines.end());
        EXPECT_NE(std::find(lines.begin(), lines.end(), it->second.second), lines.end());
    }
    // Two Quantize layers read each of layer2.1's and layer3.1's outputs (lines 12777/12778 and 12787/12788), but
    // the second of each pair is a clone made after the merge pass (lines 5212-5228): no fanout-scale-mismatch.
    EXPECT_TRUE(findingsOf(report, "fanout-scale-mismatch").empty());
    // The concat copies there are Int8 -> Int8 "because input does not support striding": no mixed precision.
    EXPECT_TRUE(findingsOf(report, "concat-mixed-precision").empty());
}

TEST(RealDataRulesScales, BlogYoloV8Trt8412StompingCopy)
{
    REQUIRE_SHARED();
    Report report =
        diagnoseFiles({realdata("blogdoc-yolov8-qdq-orin-trt8412/blogdoc-yolov8-qdq-orin-trt8412.log.txt").string()});
    auto mixed = findingsOf(report, "concat-mixed-precision");
    ASSERT_EQ(mixed.size(), 1u);
    EXPECT_EQ(mixed[0].severity, Severity::kInfo);
    ASSERT_FALSE(mixed[0].evidence.empty());
    EXPECT_EQ(mixed[0].evidence[0].line, 101u);
    EXPECT_TRUE(contains(mixed[0].message, "/model/taskhead22/Div_1_output_0"));
    // The log merges the equal clone of backbone2 (HorizontalMergeQNodes) and has no standalone clone layer.
    EXPECT_TRUE(findingsOf(report, "concat-quantize-hoisted").empty());
    EXPECT_TRUE(findingsOf(report, "fanout-scale-mismatch").empty());
}
