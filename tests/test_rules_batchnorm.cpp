// batchnorm-not-folded: a BatchNormalization whose parameters are not initializers, on built models (a bias passed
// through an Identity node, and the same model with the bias an initializer), on hand-built engines, and on the real
// YOLO build of trex-notebooks-yolo-orin-trt852, whose three downsample BatchNormalizations read their bias through
// Identity_0/1/2. Expected names and times were read off the files by hand.
#include "graph_builder.h"
#include "qdq/analysis.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

//! x -> Conv -> BatchNormalization -> Relu -> y, the BatchNormalization's bias an initializer or, with
//! biasThroughIdentity, that initializer passed through an Identity node.
OnnxGraph convBatchNormRelu(bool biasThroughIdentity)
{
    GraphBuilder g;
    const std::string x = g.input("x", {1, 8, 16, 16});
    const std::string conv = g.node("Conv", "/conv/Conv", {x, g.weight("conv.weight", {16, 8, 3, 3})});
    g.intsAttribute("/conv/Conv", "pads", {1, 1, 1, 1});
    std::string bias = g.weight("bn.bias", {16});
    if (biasThroughIdentity)
    {
        bias = g.node("Identity", "Identity_0", {bias}, {"downsample.bias"});
    }
    const std::string bn = g.node("BatchNormalization", "/bn/BatchNormalization",
                                  {conv, g.weight("bn.weight", {16}, 1.0f), bias, g.weight("bn.running_mean", {16}),
                                   g.weight("bn.running_var", {16}, 1.0f)});
    g.output(g.node("Relu", "/relu/Relu", {bn}), {1, 16, 16, 16});
    return g.build();
}

bool evidenceAt(const Finding& finding, const std::string& fileEnd, std::uint64_t line)
{
    return std::any_of(finding.evidence.begin(), finding.evidence.end(),
                       [&](const Evidence& e)
                       { return e.line == line && e.file.size() >= fileEnd.size() && e.file.ends_with(fileEnd); });
}

bool namesLayer(const Finding& finding, const std::string& layer)
{
    return std::find(finding.engineLayers.begin(), finding.engineLayers.end(), layer) != finding.engineLayers.end();
}

const std::string kYolo = "trex-notebooks-yolo-orin-trt852/";
const std::string kLayer2Scale =
    "backbone.layer2.0.downsample.1.weight + (Unnamed Layer* 105) [Shuffle] + (Unnamed Layer* 114) [ElementWise] + "
    "backbone.layer2.0.bn2.bias + Identity_2 + (Unnamed Layer* 106) [Shuffle] + "
    "/backbone/layer2/layer2.0/downsample/downsample.1/BatchNormalization";
const std::string kLayer2PointWise =
    "PWN((Unnamed Layer* 112) [ElementWise], PWN(PWN((Unnamed Layer* 109) [Constant] + (Unnamed Layer* 110) "
    "[ElementWise], (Unnamed Layer* 111) [Unary]), (Unnamed Layer* 113) [ElementWise]))";

} // namespace

TEST(RuleBatchnormNotFolded, BiasThroughIdentityIsNotFolded)
{
    Report report = runDiagnose(convBatchNormRelu(true), std::nullopt);
    auto found = findingsOf(report, "batchnorm-not-folded");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_TRUE(anyNames(found, "/bn/BatchNormalization"));
    EXPECT_TRUE(anyNames(found, "Identity_0"));
    EXPECT_EQ(found.front().severity, Severity::kWarning);
    EXPECT_NE(found.front().message.find("through an Identity node"), std::string::npos);
    EXPECT_NE(found.front().fix.find("--fold-constants"), std::string::npos);
    EXPECT_NE(found.front().evidence.front().text.find("B (downsample.bias) comes from Identity_0 (Identity)"),
              std::string::npos);
}

TEST(RuleBatchnormNotFolded, InitializerParametersAreFolded)
{
    // The same model with the bias an initializer: the parser folds the BatchNormalization.
    Report report = runDiagnose(convBatchNormRelu(false), std::nullopt);
    EXPECT_TRUE(findingsOf(report, "batchnorm-not-folded").empty());
}

TEST(RuleBatchnormNotFolded, EngineWithTheParsersFallbackLayers)
{
    // No model: a Scale layer that executes the BatchNormalization with the fallback's unnamed ElementWise layers,
    // fed by a PointWise layer of unnamed layers.
    EnginePlan plan;
    plan.layers.push_back(layer("conv.weight + /conv/Conv", "CaskConvolution", {{"x", "Float"}}, {{"c", "Float"}}));
    plan.layers.push_back(layer("PWN((Unnamed Layer* 12) [ElementWise], (Unnamed Layer* 13) [Unary])", "PointWise",
                                {{"c", "Float"}}, {{"p", "Float"}}));
    plan.layers.push_back(layer("bn.weight + (Unnamed Layer* 14) [ElementWise] + Identity_0 + /bn/BatchNormalization",
                                "Scale", {{"p", "Float"}}, {{"y", "Float"}}));
    Report report = runDiagnose(std::nullopt, plan);
    auto found = findingsOf(report, "batchnorm-not-folded");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_TRUE(found.front().likely);
    EXPECT_EQ(found.front().engineLayers.size(), 2u);
    EXPECT_TRUE(namesLayer(found.front(), "PWN((Unnamed Layer* 12) [ElementWise], (Unnamed Layer* 13) [Unary])"));
}

TEST(RuleBatchnormNotFolded, EngineNamesTheInt8ConvWritingFloatForTheFallbackLayers)
{
    // As above, with an INT8 input to the conv: it writes Float because the fallback layers read its output, so the
    // finding names it too (the float conv above is not named).
    EnginePlan plan;
    plan.layers.push_back(layer("conv.weight + /conv/Conv", "CaskConvolution", {{"x", "Int8"}}, {{"c", "Float"}}));
    plan.layers.push_back(layer("PWN((Unnamed Layer* 12) [ElementWise], (Unnamed Layer* 13) [Unary])", "PointWise",
                                {{"c", "Float"}}, {{"p", "Float"}}));
    plan.layers.push_back(layer("bn.weight + (Unnamed Layer* 14) [ElementWise] + Identity_0 + /bn/BatchNormalization",
                                "Scale", {{"p", "Float"}}, {{"y", "Float"}}));
    Report report = runDiagnose(std::nullopt, plan);
    auto found = findingsOf(report, "batchnorm-not-folded");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found.front().engineLayers.size(), 3u);
    EXPECT_TRUE(namesLayer(found.front(), "conv.weight + /conv/Conv"));
}

TEST(RuleBatchnormNotFolded, EngineWithAFoldedScaleIsSilent)
{
    // A BatchNormalization folded by the parser into one Scale that found no convolution to fuse into: its own
    // layer, but no fallback ElementWise in it.
    EnginePlan plan;
    plan.layers.push_back(layer("/add/Add", "ElementWise", {{"x", "Float"}, {"z", "Float"}}, {{"a", "Float"}}));
    plan.layers.push_back(layer("/bn/BatchNormalization", "Scale", {{"a", "Float"}}, {{"y", "Float"}}));
    Report report = runDiagnose(std::nullopt, plan);
    EXPECT_TRUE(findingsOf(report, "batchnorm-not-folded").empty());
}

TEST(RealDataRuleBatchnormNotFolded, YoloDownsampleBiasesThroughIdentity)
{
    REQUIRE_SHARED();
    Inputs inputs =
        loadFiles({realdata(kYolo + "trt.out"), realdata(kYolo + "layer_info.json"), realdata(kYolo + "profile.json")});
    Report report = diagnose(inputs);
    auto found = findingsOf(report, "batchnorm-not-folded");
    ASSERT_EQ(found.size(), 1u);
    const Finding& finding = found.front();
    for (const char* node : {"/backbone/layer2/layer2.0/downsample/downsample.1/BatchNormalization",
                             "/backbone/layer3/layer3.0/downsample/downsample.1/BatchNormalization",
                             "/backbone/layer4/layer4.0/downsample/downsample.1/BatchNormalization", "Identity_0",
                             "Identity_1", "Identity_2"})
    {
        EXPECT_TRUE(anyNames(found, node)) << node;
    }
    // The other BatchNormalizations read initializers and fold into their convolutions.
    EXPECT_FALSE(anyNames(found, "/backbone/bn1/BatchNormalization"));
    EXPECT_FALSE(finding.likely);
    // The parser's inputs line of the layer2 BatchNormalization and of Identity_2.
    EXPECT_TRUE(evidenceAt(finding, "trt.out", 964));
    EXPECT_TRUE(evidenceAt(finding, "trt.out", 403));
    // Per downsample a PointWise and a Scale layer: layer2's 4.04733 + 3.33998 ms, layer3's 2.00156 + 1.66006 ms,
    // layer4's 1.33814 + 0.837856 ms (averageMs in profile.json); and, named but not charged, the three INT8
    // downsample convs that write Float for them (trt.out's engine block: Int8 input, Float output).
    EXPECT_EQ(finding.engineLayers.size(), 9u);
    for (const char* layer : {"layer2.0", "layer3.0", "layer4.0"})
    {
        const std::string block = std::string("/backbone/") + std::string(layer).substr(0, 6) + "/" + layer;
        const std::string conv = "backbone." + std::string(layer) + ".downsample.0.weight + " + block +
                                 "/downsample/downsample.0/_weight_quantizer/QuantizeLinear + " + block +
                                 "/downsample/downsample.0/Conv";
        EXPECT_TRUE(namesLayer(finding, conv)) << conv;
    }
    EXPECT_NE(finding.message.find("write float because these float layers read their output"), std::string::npos);
    EXPECT_TRUE(namesLayer(finding, kLayer2Scale));
    EXPECT_TRUE(namesLayer(finding, kLayer2PointWise));
    ASSERT_TRUE(finding.costMs.has_value());
    EXPECT_NEAR(*finding.costMs, 13.2249, 0.001);
    EXPECT_NE(finding.fix.find("polygraphy surgeon sanitize"), std::string::npos);
    EXPECT_NE(finding.fix.find("--fp16 does not"), std::string::npos);
    // Its own root cause, whose fix removes those layers: their measured time is the saving.
    ASSERT_TRUE(finding.rootCause.has_value());
    const RootCause& cause = report.causes[*finding.rootCause];
    ASSERT_TRUE(cause.savingMs.has_value());
    EXPECT_NEAR(*cause.savingMs, 13.2249, 0.001);
    EXPECT_EQ(cause.confidence, SavingConfidence::kHigh);
}

TEST(RealDataRuleBatchnormNotFolded, YoloLayerNamesAloneAreLikely)
{
    REQUIRE_SHARED();
    // The names-only layer list and the profile, without the log: the layer names tell it, as a likely finding.
    Inputs inputs = loadFiles({realdata(kYolo + "layer_info.json"), realdata(kYolo + "profile.json")});
    Report report = diagnose(inputs);
    auto found = findingsOf(report, "batchnorm-not-folded");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_TRUE(found.front().likely);
    EXPECT_EQ(found.front().engineLayers.size(), 6u);
    EXPECT_TRUE(namesLayer(found.front(), kLayer2PointWise));
}

TEST(RealDataRuleBatchnormNotFolded, EnginesWithFoldedBatchNormsAreSilent)
{
    REQUIRE_SHARED();
    // The YOLOv8 QAT build on Orin folds every BatchNormalization (its parser lines read initializers).
    Inputs inputs = loadFiles({realdata("blogdoc-yolov8-qdq-orin-trt8412/blogdoc-yolov8-qdq-orin-trt8412.log.txt")});
    EXPECT_TRUE(findingsOf(diagnose(inputs), "batchnorm-not-folded").empty());
}
