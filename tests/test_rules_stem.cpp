// Advice about the first and last layers of a network: channels-not-aligned never pads the image's channels or the
// network's output width, kernel-without-tensor-cores reads the build log's tactic timings and says FP16 only for an
// FP16 build. Hand-built engines that differ in one place, and the real engines of trex-notebooks-yolo-orin-trt852 and
// trex-pt-resnet-a100-qat. Expected names and lines were read off the files by hand.
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

const char* kInt8Chw4 = "Four wide channel vectorized row major Int8 format";
const char* kInt8Chw32 = "Thirty-two wide channel vectorized row major Int8 format";
const char* kFp32 = "Row major linear FP32";

EngineLayer convLayer(const std::string& name, const std::string& in, const char* inFormat,
                      std::vector<std::int64_t> inDims, const std::string& out, const char* outFormat,
                      std::vector<std::int64_t> outDims)
{
    EngineLayer l = layer(name, "CaskConvolution", {{in, inFormat}}, {{out, outFormat}});
    l.inputs[0].dimensions = std::move(inDims);
    l.outputs[0].dimensions = std::move(outDims);
    l.weightsPrecision = Precision::kINT8;
    return l;
}

//! An INT8 engine: a 3-channel stem, a 32 -> 24 conv, a 24 -> 63 head. With stemReadsInput the stem reads the network
//! input through its Quantize, else the output of a conv before it; with headWritesOutput nothing follows the head,
//! else a 63 -> 64 conv reads it.
EnginePlan alignmentEngine(bool stemReadsInput, bool headWritesOutput)
{
    EnginePlan plan;
    if (stemReadsInput)
    {
        EngineLayer q = layer("/in_q/QuantizeLinear", "Reformat", {{"x", kFp32}}, {{"xq", kInt8Chw4}}, "QDQ");
        q.inputs[0].dimensions = {1, 3, 64, 64};
        q.outputs[0].dimensions = {1, 3, 64, 64};
        plan.layers.push_back(q);
    }
    else
    {
        plan.layers.push_back(
            convLayer("pre.weight + /pre/Conv", "x", kInt8Chw32, {1, 32, 64, 64}, "xq", kInt8Chw4, {1, 3, 64, 64}));
    }
    plan.layers.push_back(
        convLayer("stem.weight + /stem/Conv", "xq", kInt8Chw4, {1, 3, 64, 64}, "s", kInt8Chw32, {1, 32, 32, 32}));
    plan.layers.push_back(
        convLayer("mid.weight + /mid/Conv", "s", kInt8Chw32, {1, 32, 32, 32}, "m", kInt8Chw32, {1, 24, 32, 32}));
    plan.layers.push_back(
        convLayer("head.weight + /head/Conv", "m", kInt8Chw32, {1, 24, 32, 32}, "h", kFp32, {1, 63, 32, 32}));
    if (!headWritesOutput)
    {
        plan.layers.push_back(
            convLayer("tail.weight + /tail/Conv", "h", kFp32, {1, 63, 32, 32}, "t", kFp32, {1, 64, 32, 32}));
    }
    return plan;
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

const Finding* findingNaming(const Report& report, const std::string& rule, const std::string& layer)
{
    for (const auto& finding : report.findings)
    {
        if (finding.rule == rule &&
            std::find(finding.engineLayers.begin(), finding.engineLayers.end(), layer) != finding.engineLayers.end())
        {
            return &finding;
        }
    }
    return nullptr;
}

const std::string kYolo = "trex-notebooks-yolo-orin-trt852/";
const std::string kYoloStem =
    "backbone.conv1.weight + /backbone/conv1/_weight_quantizer/QuantizeLinear + /backbone/conv1/Conv";

Inputs yolo()
{
    return loadFiles(
        {realdata(kYolo + "trt.out"), realdata(kYolo + "layer_info.json"), realdata(kYolo + "profile.json")});
}

} // namespace

// ---- channels-not-aligned: the image's channels and the output width ----------------------------------------------

TEST(RuleChannelsNotAligned, ImageStemAndOutputHeadAreNotPadded)
{
    Report report = runDiagnose(std::nullopt, alignmentEngine(true, true));
    auto found = findingsOf(report, "channels-not-aligned");
    ASSERT_EQ(found.size(), 1u);
    const Finding& finding = found.front();
    EXPECT_TRUE(contains(finding.fix, "\"mid.weight + /mid/Conv\": K 24 -> 32")) << finding.fix;
    EXPECT_TRUE(contains(finding.fix, "\"head.weight + /head/Conv\": C 24 -> 32")) << finding.fix;
    EXPECT_FALSE(contains(finding.fix, "C 3 -> 16")) << finding.fix;
    EXPECT_FALSE(contains(finding.fix, "K 63 -> 64")) << finding.fix;
    EXPECT_EQ(std::count(finding.engineLayers.begin(), finding.engineLayers.end(), "stem.weight + /stem/Conv"), 0);
}

TEST(RuleChannelsNotAligned, ThreeChannelsInsideTheNetworkAndAHeadReadByAConvArePadded)
{
    // The same layers, but the 3-channel tensor comes from a conv and the head's 63 channels feed another conv:
    // those counts are the network's design.
    Report report = runDiagnose(std::nullopt, alignmentEngine(false, false));
    auto found = findingsOf(report, "channels-not-aligned");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_TRUE(contains(found.front().fix, "\"stem.weight + /stem/Conv\": C 3 -> 16")) << found.front().fix;
    EXPECT_TRUE(contains(found.front().fix, "\"head.weight + /head/Conv\": C 24 -> 32, K 63 -> 64"))
        << found.front().fix;
}

TEST(RealDataRuleChannelsNotAligned, YoloOrinStemAndHeadsAreNotPadded)
{
    REQUIRE_SHARED();
    Report report = diagnose(yolo());
    for (const auto& finding : report.findings)
    {
        if (finding.rule == "channels-not-aligned" || finding.rule == "kernel-without-tensor-cores")
        {
            EXPECT_FALSE(contains(finding.fix, "C 3 -> ")) << finding.fix;
            EXPECT_FALSE(contains(finding.fix, "K 63 -> ")) << finding.fix;
        }
    }
    EXPECT_EQ(findingNaming(report, "channels-not-aligned", kYoloStem), nullptr);
}

// ---- kernel-without-tensor-cores: the log's tactic timings, FP16 only in an FP16 build -----------------------------

TEST(RealDataRuleKernelWithoutTensorCores, YoloOrinStemTimedItsTensorCoreTacticSlower)
{
    REQUIRE_SHARED();
    Report report = diagnose(yolo());
    const Finding* stem = findingNaming(report, "kernel-without-tensor-cores", kYoloStem);
    ASSERT_NE(stem, nullptr);
    // trt.out:8316 chose the CHW32 tensor-core tactic 0x6986b0c6a136276e at 100.14 ms for its format combination,
    // trt.out:8299 the DP4A tactic 0xb29abdd00304c881 at 58.8474 ms, the one the engine runs.
    auto at = [&](std::uint64_t line)
    {
        return std::any_of(stem->evidence.begin(), stem->evidence.end(),
                           [&](const Evidence& e) { return e.line == line && e.file.ends_with("trt.out"); });
    };
    EXPECT_TRUE(at(8316));
    EXPECT_TRUE(at(8299));
    EXPECT_EQ(stem->severity, Severity::kInfo);
    EXPECT_TRUE(contains(stem->message, "100.14")) << stem->message;
    EXPECT_TRUE(contains(stem->fix, "nothing to change")) << stem->fix;
    // An FP32+INT8 build (no --fp16): no finding about these layers advises FP16.
    for (const auto& finding : report.findings)
    {
        if (finding.rule == "kernel-without-tensor-cores" || finding.rule == "channels-not-aligned" ||
            finding.rule == "int8-slower-than-fp16")
        {
            EXPECT_FALSE(contains(finding.fix, "FP16")) << finding.rule << ": " << finding.fix;
        }
    }
}

TEST(RealDataRuleKernelWithoutTensorCores, A100QatStemIsASymptomOfTheFloatResidualChain)
{
    REQUIRE_SHARED();
    // The same DP4A stem kernel on the A100, built with --best, and no log to time the alternatives: its conv writes
    // FP32 because the MaxPool after it feeds an unquantized residual, and the paired -qat-residual build runs it
    // fused as ConvActPool in 0.073 ms. So it hangs under that root cause and points to it; never "pad the image".
    Report report = diagnose(trex("trex-pt-resnet-a100-qat/resnet-qat"));
    const Finding* stem =
        findingNaming(report, "kernel-without-tensor-cores", "conv1.weight + QuantizeLinear_7 + Conv_9");
    ASSERT_NE(stem, nullptr);
    EXPECT_EQ(stem->severity, Severity::kWarning);
    EXPECT_TRUE(stem->symptom);
    EXPECT_TRUE(contains(stem->fix, "an effect of residual-input-not-quantized")) << stem->fix;
    EXPECT_FALSE(contains(stem->fix, "C 3 -> ")) << stem->fix;
}

namespace
{

//! An INT8 stem on a DP4A kernel reading the network input through its Quantize, then a conv on a tensor-core kernel
//! whose output is INT8, or FP16 with fp16Output (a build with FP16 enabled). No build log: nothing timed the stem's
//! tensor-core tactics.
EnginePlan dp4aStemEngine(bool fp16Output)
{
    EnginePlan plan;
    EngineLayer q = layer("/in_q/QuantizeLinear", "Reformat", {{"x", kFp32}}, {{"xq", kInt8Chw4}}, "QDQ");
    q.inputs[0].dimensions = {1, 3, 64, 64};
    q.outputs[0].dimensions = {1, 3, 64, 64};
    plan.layers.push_back(q);
    EngineLayer stem =
        convLayer("stem.weight + /stem/Conv", "xq", kInt8Chw4, {1, 3, 64, 64}, "s", kInt8Chw32, {1, 32, 32, 32});
    stem.tacticName = "ampere_fp32_icudnn_int8x4_128x64_relu_medium_nn_v1";
    plan.layers.push_back(stem);
    EngineLayer next =
        convLayer("next.weight + /next/Conv", "s", kInt8Chw32, {1, 32, 32, 32}, "y",
                  fp16Output ? "Channel major FP16 format where channel % 8 == 0" : kInt8Chw32, {1, 32, 32, 32});
    next.tacticName = "sm80_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_vect_"
                      "c_32_tilesize64x32x64_stage1_warpsize2x1x1_g1_tensor16x8x32";
    plan.layers.push_back(next);
    return plan;
}

} // namespace

TEST(RuleKernelWithoutTensorCores, StemAdviceSaysFp16OnlyForABuildWithFp16)
{
    // No file shows FP16 in the build: the stem's float alternative is the graph's float type.
    Report report = runDiagnose(std::nullopt, dp4aStemEngine(false));
    const Finding* stem = findingNaming(report, "kernel-without-tensor-cores", "stem.weight + /stem/Conv");
    ASSERT_NE(stem, nullptr);
    EXPECT_TRUE(contains(stem->fix, "runs in the graph's float type")) << stem->fix;
    EXPECT_FALSE(contains(stem->fix, "runs in FP16")) << stem->fix;
    EXPECT_FALSE(contains(stem->fix, "C 3 -> ")) << stem->fix;
}

TEST(RuleKernelWithoutTensorCores, StemAdviceSaysFp16WhereTheBuildHasFp16Tensors)
{
    Report report = runDiagnose(std::nullopt, dp4aStemEngine(true));
    const Finding* stem = findingNaming(report, "kernel-without-tensor-cores", "stem.weight + /stem/Conv");
    ASSERT_NE(stem, nullptr);
    EXPECT_TRUE(contains(stem->fix, "runs in FP16")) << stem->fix;
}
