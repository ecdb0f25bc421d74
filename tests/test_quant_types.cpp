// Quantized types beyond INT8 (issue 27 item 6): FP8, INT4, FP4 (NVFP4) and MXFP8 models written with the ONNX type
// numbers and ModelOpt's trt-domain ops are read, counted and diagnosed; each rule on their documented limits has a
// case that triggers it and a near-identical one that must not; the GPU comes from --gpu, the build log or the
// kernel names; opsets that lack a type give a note naming the node; fix says what the ONNX checker could not cover.
#include "graph_builder.h"
#include "test_support.h"

#include "qdq/fix.h"
#include "qdq/load_inputs.h"
#include "qdq/precision_summary.h"
#include "qdq/quantized_types.h"
#include "qdq/readers.h"
#include "qdq/target_gpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>

using namespace qdq;
using namespace qdq::test;

namespace
{

// ONNX TensorProto.DataType numbers.
constexpr int kFloat16 = 10;
constexpr int kFp8E4M3 = 17;
constexpr int kInt4 = 22;
constexpr int kFp4E2M1 = 23;

//! x [4,16] -> Q/DQ (FP8 zero point) -> MatMul with an FP8 weight [16,8] behind a DQ, in the given opset.
OnnxGraph fp8Gemm(long opset)
{
    GraphBuilder g;
    g.opset("", opset);
    const std::string s = g.scale("x_scale", 0.02f);
    const std::string zp = g.typedZeroPoint("x_zp", kFp8E4M3);
    const std::string q = g.node("QuantizeLinear", "/x/QuantizeLinear", {g.input("x", {4, 16}), s, zp});
    const std::string dq = g.node("DequantizeLinear", "/x/DequantizeLinear", {q, s, zp});
    const std::string w = g.typedConstant("w8", kFp8E4M3, {16, 8});
    const std::string wdq = g.node("DequantizeLinear", "/w/DequantizeLinear", {w, g.scale("w_scale", 0.01f)});
    g.output(g.node("MatMul", "/fc/MatMul", {dq, wdq}), {4, 8});
    return g.build("fp8.onnx");
}

struct Int4Options
{
    long opset = 21;
    long block = 4;
    std::vector<long> scaleDims = {4, 8}; //!< the weight [16, 8] in blocks of 4 on axis 0
    bool conv = false;                    //!< the weight feeds a Conv instead of a MatMul
};

//! W4A16: x [4,16] in float -> MatMul with an INT4 weight [16,8] block-quantized on axis 0 (opset 21 block_size).
OnnxGraph int4Gemm(const Int4Options& options)
{
    GraphBuilder g;
    g.opset("", options.opset);
    std::vector<long> weightDims = options.conv ? std::vector<long>{16, 8, 1, 1} : std::vector<long>{16, 8};
    std::vector<long> scaleDims = options.scaleDims;
    if (options.conv)
    {
        scaleDims.insert(scaleDims.end(), {1, 1});
    }
    const std::string w = g.typedConstant("w4", kInt4, weightDims);
    const std::string wdq = g.node("DequantizeLinear", "/w/DequantizeLinear", {w, g.weight("w4_scale", scaleDims)});
    g.intAttribute("/w/DequantizeLinear", "axis", 0);
    g.intAttribute("/w/DequantizeLinear", "block_size", options.block);
    if (options.conv)
    {
        g.output(g.node("Conv", "/conv/Conv", {g.input("x", {1, 8, 4, 4}), wdq}), {1, 16, 4, 4});
    }
    else
    {
        g.output(g.node("MatMul", "/fc/MatMul", {g.input("x", {4, 16}), wdq}), {4, 8});
    }
    return g.build("int4.onnx");
}

//! The same MatMul with its activation quantized: per-tensor Q/DQ of the given zero-point type before it.
OnnxGraph quantizedActivationGemm(int zeroPointType)
{
    GraphBuilder g;
    g.opset("", 21);
    const std::string s = g.scale("x_scale", 0.02f);
    const std::string zp = g.typedZeroPoint("x_zp", zeroPointType);
    const std::string q = g.node("QuantizeLinear", "/x/QuantizeLinear", {g.input("x", {4, 16}), s, zp});
    const std::string dq = g.node("DequantizeLinear", "/x/DequantizeLinear", {q, s, zp});
    g.output(g.node("MatMul", "/fc/MatMul", {dq, g.weight("w", {16, 8})}), {4, 8});
    return g.build("activation.onnx");
}

//! NVFP4 as ModelOpt exports it: the activation through trt::TRT_FP4DynamicQuantize (block 16) and two
//! trt::DequantizeLinear (block scales, then data); the weight FLOAT4E2M1 [8,32] with FP8 block scales [8,2] behind
//! a DQ (double quantization), read by Gemm transB=1.
OnnxGraph nvfp4Gemm(std::vector<long> weightScaleDims = {8, 2}, long activationBlock = 16)
{
    GraphBuilder g;
    g.opset("", 23);
    g.opset("trt", 1);
    const std::string x = g.input("x", {4, 32});
    g.node("TRT_FP4DynamicQuantize", "/x/TRT_FP4DynamicQuantize", {x, g.scale("x_global_scale", 0.002f)},
           {"x_fp4", "x_fp4_block_scales"}, "trt");
    g.intAttribute("/x/TRT_FP4DynamicQuantize", "axis", -1);
    g.intAttribute("/x/TRT_FP4DynamicQuantize", "block_size", activationBlock);
    g.intAttribute("/x/TRT_FP4DynamicQuantize", "scale_type", kFp8E4M3);
    const std::string xScales = g.node("DequantizeLinear", "/x/DequantizeLinear",
                                       {"x_fp4_block_scales", g.scale("x_scale_scale", 0.002f)}, {}, "trt");
    const std::string xdq = g.node("DequantizeLinear", "/x/DequantizeLinear_1", {"x_fp4", xScales}, {}, "trt");
    g.intAttribute("/x/DequantizeLinear_1", "axis", -1);
    g.intAttribute("/x/DequantizeLinear_1", "block_size", 16);

    const std::string w = g.typedConstant("wf4", kFp4E2M1, {8, 32});
    const std::string wScales = g.node(
        "DequantizeLinear", "/w/DequantizeLinear",
        {g.typedConstant("wf4_block_scales", kFp8E4M3, weightScaleDims, 0x38), g.scale("w_scale_scale", 0.001f)});
    const std::string wdq = g.node("DequantizeLinear", "/w/DequantizeLinear_1", {w, wScales});
    g.intAttribute("/w/DequantizeLinear_1", "axis", -1);
    g.intAttribute("/w/DequantizeLinear_1", "block_size", 16);
    g.node("Gemm", "/fc/Gemm", {xdq, wdq}, {"y"});
    g.intAttribute("/fc/Gemm", "transB", 1);
    g.output("y", {4, 8});
    return g.build("nvfp4.onnx");
}

//! MXFP8 as ModelOpt exports it: trt::TRT_MXFP8DynamicQuantize -> trt::TRT_MXFP8DequantizeLinear -> MatMul.
OnnxGraph mxfp8Gemm(long block)
{
    GraphBuilder g;
    g.opset("", 21);
    g.opset("trt", 1);
    g.node("TRT_MXFP8DynamicQuantize", "/x/TRT_MXFP8DynamicQuantize", {g.input("x", {4, 64})}, {"x_fp8", "x_e8m0"},
           "trt");
    g.intAttribute("/x/TRT_MXFP8DynamicQuantize", "axis", -1);
    g.intAttribute("/x/TRT_MXFP8DynamicQuantize", "block_size", block);
    g.intAttribute("/x/TRT_MXFP8DynamicQuantize", "output_dtype", kFp8E4M3);
    const std::string xdq =
        g.node("TRT_MXFP8DequantizeLinear", "/x/TRT_MXFP8DequantizeLinear", {"x_fp8", "x_e8m0"}, {}, "trt");
    g.intAttribute("/x/TRT_MXFP8DequantizeLinear", "axis", -1);
    g.intAttribute("/x/TRT_MXFP8DequantizeLinear", "block_size", block);
    g.intAttribute("/x/TRT_MXFP8DequantizeLinear", "output_dtype", kFloat16);
    g.output(g.node("MatMul", "/fc/MatMul", {xdq, g.weight("w", {64, 8})}), {4, 8});
    return g.build("mxfp8.onnx");
}

//! Diagnose of a model alone with the build mode the command line would give.
Report diagnoseWith(const OnnxGraph& graph, const std::string& gpu = "", const std::string& trtVersion = "")
{
    static std::deque<Inputs> kept; // the report holds views into its inputs
    Inputs& inputs = kept.emplace_back();
    inputs.onnx = graph;
    AnalysisOptions options;
    options.buildMode.gpu = gpu;
    options.buildMode.trtVersion = trtVersion;
    return diagnose(inputs, options);
}

std::vector<QuantizedType> typesOf(const OnnxGraph& graph)
{
    std::vector<QuantizedType> types;
    for (const QdqParameters& parameters : graph.qdq)
    {
        types.push_back(quantizedTypeOfQdq(graph, parameters.node));
    }
    return types;
}

bool anyWarningNames(const OnnxGraph& graph, const std::string& text)
{
    return std::any_of(graph.warnings.begin(), graph.warnings.end(),
                       [&](const ReaderWarning& warning) { return warning.message.find(text) != std::string::npos; });
}

} // namespace

// ---- reading and counting ---------------------------------------------------------------------------------------

TEST(QuantizedTypes, Fp8ModelIsReadCountedAndNamedInThePrecisionSummary)
{
    const OnnxGraph graph = fp8Gemm(19);
    ASSERT_EQ(graph.qdq.size(), 3u);
    EXPECT_EQ(typesOf(graph), std::vector<QuantizedType>(3, QuantizedType::kFp8));
    EXPECT_EQ(graph.constant("w8")->dataType, OnnxDataType::kFloat8E4M3FN);
    EXPECT_TRUE(graph.warnings.empty()) << graph.warnings.front().describe();

    Inputs inputs;
    inputs.onnx = graph;
    const Report report = diagnose(inputs);
    const PrecisionSummary summary = summarizePrecision(report, inputs);
    ASSERT_EQ(summary.quantizedTypes.size(), 1u);
    EXPECT_EQ(summary.quantizedTypes[0].name, "FP8");
    EXPECT_EQ(summary.quantizedTypes[0].layers, 3u);
    EXPECT_EQ(summary.quantizedLabel, "FP8");
    // The prediction counts the FP8 Q/DQ like INT8 ones: the MatMul runs in FP8 with its Q/DQ fused.
    EXPECT_EQ(report.prediction.qdq.size(), 3u);
}

TEST(QuantizedTypes, Int4WeightIsReadAndCounted)
{
    const OnnxGraph graph = int4Gemm({});
    ASSERT_EQ(graph.qdq.size(), 1u);
    EXPECT_EQ(graph.qdq[0].blockSize, 4);
    EXPECT_EQ(graph.qdq[0].scaleElements, 32);
    EXPECT_EQ(typesOf(graph), std::vector<QuantizedType>{QuantizedType::kInt4});
    const std::vector<QuantizedTypeCount> counts = countQuantizedTypes(graph);
    ASSERT_EQ(counts.size(), 1u);
    EXPECT_EQ(counts[0].type, QuantizedType::kInt4);
    EXPECT_TRUE(graph.warnings.empty());
}

TEST(QuantizedTypes, Nvfp4ExportIsReadAsFp4QdqIncludingItsScaleDequantizers)
{
    const OnnxGraph graph = nvfp4Gemm();
    // TRT_FP4DynamicQuantize is the quantize of its pair; both scale DQs and both data DQs are Q/DQ of FP4.
    ASSERT_EQ(graph.qdq.size(), 5u);
    EXPECT_EQ(typesOf(graph), std::vector<QuantizedType>(5, QuantizedType::kFp4));
    EXPECT_EQ(graph.nodes[graph.qdq[0].node].opType, "TRT_FP4DynamicQuantize");
    EXPECT_TRUE(graph.qdq[0].isQuantize);
    EXPECT_EQ(graph.qdq[0].blockSize, 16);
    EXPECT_FALSE(graph.findNode("/x/TRT_FP4DynamicQuantize")->isCustomDomain());
    const Report report = diagnoseWith(graph, "B200", "10.8");
    EXPECT_TRUE(findingsOf(report, "quantized-op-not-importable").empty());
    EXPECT_TRUE(findingsOf(report, "plugin-wrapped-in-qdq").empty());
}

TEST(QuantizedTypes, Mxfp8ExportIsReadAsMxfp8)
{
    const OnnxGraph graph = mxfp8Gemm(32);
    ASSERT_EQ(graph.qdq.size(), 2u);
    EXPECT_EQ(typesOf(graph), std::vector<QuantizedType>(2, QuantizedType::kMxfp8));
    EXPECT_EQ(countQuantizedTypes(graph).front().type, QuantizedType::kMxfp8);
}

TEST(QuantizedTypes, TensorRtOpsInAnotherDomainArePlugins)
{
    GraphBuilder g;
    g.opset("my.plugins", 1);
    g.node("TRT_FP4DynamicQuantize", "/x/q", {g.input("x", {4, 32}), g.scale("s", 0.1f)}, {"a", "b"}, "my.plugins");
    g.output("a", {4, 32});
    const OnnxGraph graph = g.build();
    EXPECT_TRUE(graph.qdq.empty());
    EXPECT_TRUE(graph.findNode("/x/q")->isCustomDomain());
}

// ---- opsets that lack the type: a note naming the file and the node ---------------------------------------------

TEST(QuantizedTypes, Fp8BeforeOpset19IsANoteNamingFileAndNode)
{
    const OnnxGraph old = fp8Gemm(17);
    ASSERT_FALSE(old.warnings.empty());
    EXPECT_TRUE(anyWarningNames(old, "node '/x/QuantizeLinear' (QuantizeLinear) uses float8e4m3fn"));
    EXPECT_TRUE(anyWarningNames(old, "opset 19"));
    EXPECT_NE(old.warnings.front().describe().find("fp8.onnx"), std::string::npos);
    // The rest is still analysed: the Q/DQ are there, and the report's notes carry the note.
    EXPECT_EQ(old.qdq.size(), 3u);
    const Report report = diagnoseWith(old);
    EXPECT_TRUE(std::any_of(report.notes.begin(), report.notes.end(),
                            [](const std::string& note)
                            { return note.find("/x/QuantizeLinear") != std::string::npos; }));
    EXPECT_TRUE(fp8Gemm(19).warnings.empty());
}

TEST(QuantizedTypes, Int4BeforeOpset21IsANote)
{
    Int4Options options;
    options.opset = 19;
    EXPECT_TRUE(anyWarningNames(int4Gemm(options), "node '/w/DequantizeLinear' (DequantizeLinear) uses int4"));
    EXPECT_TRUE(int4Gemm({}).warnings.empty());
}

// ---- rules --------------------------------------------------------------------------------------------------------

TEST(RuleQuantizedTypeNotOnGpu, Fp8OnAmpereTriggersAndOnAdaDoesNot)
{
    const OnnxGraph graph = fp8Gemm(19);
    const auto onAmpere = findingsOf(diagnoseWith(graph, "A100"), "quantized-type-not-on-gpu");
    ASSERT_EQ(onAmpere.size(), 1u);
    EXPECT_NE(onAmpere[0].message.find("FP8"), std::string::npos);
    EXPECT_NE(onAmpere[0].message.find("8.9"), std::string::npos);
    EXPECT_TRUE(anyNames(onAmpere, "/fc/MatMul") || anyNames(onAmpere, "/x/QuantizeLinear"));
    EXPECT_TRUE(findingsOf(diagnoseWith(graph, "sm89"), "quantized-type-not-on-gpu").empty());
    // No GPU told: nothing to judge.
    EXPECT_TRUE(findingsOf(diagnoseWith(graph), "quantized-type-not-on-gpu").empty());
}

TEST(RuleQuantizedTypeNotOnGpu, Fp4NeedsBlackwell)
{
    const OnnxGraph graph = nvfp4Gemm();
    EXPECT_EQ(findingsOf(diagnoseWith(graph, "H100", "10.8"), "quantized-type-not-on-gpu").size(), 1u);
    EXPECT_TRUE(findingsOf(diagnoseWith(graph, "sm100", "10.8"), "quantized-type-not-on-gpu").empty());
}

TEST(RuleQuantizedTypeNeedsNewerTensorrt, Fp4Before108Triggers)
{
    const OnnxGraph graph = nvfp4Gemm();
    const auto old = findingsOf(diagnoseWith(graph, "", "10.7"), "quantized-type-needs-newer-tensorrt");
    ASSERT_EQ(old.size(), 1u);
    EXPECT_EQ(old[0].severity, Severity::kError);
    EXPECT_NE(old[0].message.find("10.8"), std::string::npos);
    EXPECT_TRUE(findingsOf(diagnoseWith(graph, "", "10.8"), "quantized-type-needs-newer-tensorrt").empty());
    // Version unknown: no finding (no guess).
    EXPECT_TRUE(findingsOf(diagnoseWith(graph), "quantized-type-needs-newer-tensorrt").empty());
}

TEST(RuleQuantizedTypeNeedsNewerTensorrt, Mxfp8Before1012Triggers)
{
    const OnnxGraph graph = mxfp8Gemm(32);
    EXPECT_EQ(findingsOf(diagnoseWith(graph, "", "10.11"), "quantized-type-needs-newer-tensorrt").size(), 1u);
    EXPECT_TRUE(findingsOf(diagnoseWith(graph, "", "10.12"), "quantized-type-needs-newer-tensorrt").empty());
}

TEST(RuleInt4NotWeightOnly, Int4ActivationTriggersInt8ActivationDoesNot)
{
    const auto int4 = findingsOf(diagnoseWith(quantizedActivationGemm(kInt4)), "int4-not-weight-only");
    ASSERT_FALSE(int4.empty());
    EXPECT_EQ(int4[0].severity, Severity::kError);
    EXPECT_TRUE(anyNames(int4, "/x/QuantizeLinear"));
    EXPECT_TRUE(findingsOf(diagnoseWith(quantizedActivationGemm(3)), "int4-not-weight-only").empty()); // INT8
}

TEST(RuleInt4NotWeightOnly, Int4ConvWeightTriggersInt4MatMulWeightDoesNot)
{
    Int4Options conv;
    conv.conv = true;
    const auto onConv = findingsOf(diagnoseWith(int4Gemm(conv)), "int4-not-weight-only");
    ASSERT_EQ(onConv.size(), 1u);
    EXPECT_TRUE(onConv[0].likely);
    EXPECT_TRUE(anyNames(onConv, "/conv/Conv"));
    EXPECT_TRUE(findingsOf(diagnoseWith(int4Gemm({})), "int4-not-weight-only").empty());
}

TEST(RuleBlockQuantizationShape, BlockThatDoesNotDivideTheAxisTriggers)
{
    Int4Options uneven;
    uneven.block = 5; // 16 rows in blocks of 5: ONNX's last block is short, scale [4, 8] = ceil(16/5) rows
    const auto findings = findingsOf(diagnoseWith(int4Gemm(uneven)), "block-quantization-shape");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_NE(findings[0].message.find("does not divide"), std::string::npos);
    EXPECT_TRUE(findingsOf(diagnoseWith(int4Gemm({})), "block-quantization-shape").empty());
}

TEST(RuleBlockQuantizationShape, ScaleShapeThatDoesNotMatchTheBlocksTriggers)
{
    Int4Options wrong;
    wrong.scaleDims = {3, 8};
    const auto findings = findingsOf(diagnoseWith(int4Gemm(wrong)), "block-quantization-shape");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kError);
    EXPECT_NE(findings[0].message.find("[4, 8]"), std::string::npos) << findings[0].message;
    // NVFP4's weight scales reach the data DQ through the scale DQ: checked there too.
    EXPECT_EQ(findingsOf(diagnoseWith(nvfp4Gemm({8, 3})), "block-quantization-shape").size(), 1u);
    EXPECT_TRUE(findingsOf(diagnoseWith(nvfp4Gemm({8, 2})), "block-quantization-shape").empty());
}

TEST(RuleBlockQuantizationShape, DynamicQuantizersOutsideTheirDocumentedBlockTrigger)
{
    EXPECT_EQ(findingsOf(diagnoseWith(mxfp8Gemm(16)), "block-quantization-shape").size(), 1u);
    EXPECT_TRUE(findingsOf(diagnoseWith(mxfp8Gemm(32)), "block-quantization-shape").empty());
    EXPECT_EQ(findingsOf(diagnoseWith(nvfp4Gemm({8, 2}, 32)), "block-quantization-shape").size(), 1u);
}

// invalid-scale leaves the block scales TensorRT computes (dynamic quantizers) or dequantizes (NVFP4's double
// quantization) alone; a scale computed from an activation by another op is still reported.
TEST(RuleInvalidScale, BlockScalesOfDynamicQuantizersAreNotReportedOtherComputedScalesAre)
{
    EXPECT_TRUE(findingsOf(diagnoseWith(nvfp4Gemm()), "invalid-scale").empty());
    EXPECT_TRUE(findingsOf(diagnoseWith(mxfp8Gemm(32)), "invalid-scale").empty());
    GraphBuilder g;
    g.opset("", 21);
    const std::string x = g.input("x", {4, 32});
    const std::string computed = g.node("ReduceMax", "/x/amax", {x});
    const std::string q = g.node("QuantizeLinear", "/x/q", {x, computed});
    g.output(g.node("Relu", "/relu", {g.node("DequantizeLinear", "/x/dq", {q, computed})}), {4, 32});
    EXPECT_FALSE(findingsOf(diagnoseWith(g.build()), "invalid-scale").empty());
}

// ---- the GPU ------------------------------------------------------------------------------------------------------

TEST(TargetGpu, GpuOptionTakesCapabilitiesAndNames)
{
    const auto cc = [](const std::string& text)
    {
        const TargetGpu gpu = parseGpuOption(text);
        return std::to_string(gpu.ccMajor) + "." + std::to_string(gpu.ccMinor);
    };
    EXPECT_EQ(cc("sm89"), "8.9");
    EXPECT_EQ(cc("sm_90a"), "9.0");
    EXPECT_EQ(cc("8.6"), "8.6");
    EXPECT_EQ(cc("100"), "10.0");
    EXPECT_EQ(cc("H100"), "9.0");
    EXPECT_EQ(cc("NVIDIA GeForce RTX 4090"), "8.9");
    EXPECT_EQ(cc("NVIDIA A100-SXM4-80GB"), "8.0");
    EXPECT_EQ(cc("A10"), "8.6");
    EXPECT_EQ(cc("B200"), "10.0");
    EXPECT_THROW(parseGpuOption("banana"), InputError);
    EXPECT_THROW(parseGpuOption("sm"), InputError);
}

TEST(TargetGpu, UnknownGpuOptionIsExitTwo)
{
    const std::filesystem::path model = tempDir("gpu-option") / "fp8.onnx";
    GraphBuilder g;
    g.output(g.node("Relu", "/r", {g.input("x", {1, 4})}), {1, 4});
    g.save(model.string());
    // inspect names the model's quantized types.
    const std::filesystem::path fp8 = tempDir("gpu-option") / "fp8-q.onnx";
    {
        GraphBuilder q;
        q.opset("", 19);
        const std::string s = q.scale("s", 0.02f);
        const std::string zp = q.typedZeroPoint("zp", kFp8E4M3);
        const std::string x = q.node("QuantizeLinear", "/x/q", {q.input("x", {1, 4}), s, zp});
        q.output(q.node("DequantizeLinear", "/x/dq", {x, s, zp}), {1, 4});
        q.save(fp8.string());
    }
    const CommandResult inspected = runCli({"inspect", fp8.string()});
    EXPECT_NE(inspected.out.find("FP8 2"), std::string::npos) << inspected.out;
    const CommandResult bad = runCli({"diagnose", "--gpu", "banana", model.string()});
    EXPECT_EQ(bad.exitStatus, 2);
    EXPECT_NE(bad.err.find("--gpu"), std::string::npos) << bad.err;
    EXPECT_EQ(runCli({"diagnose", "--gpu", "sm89", model.string()}).exitStatus, 0);
}

TEST(TargetGpu, BuildLogDeviceLinesTellTheGpuAndContradictionsAreErrors)
{
    REQUIRE_SHARED();
    const Inputs inputs = loadFiles({sharedRoot() / "realdata/cookbook-mnist-trt10141/result-02.log"});
    const std::optional<TargetGpu> gpu = gpuFromInputs(inputs);
    ASSERT_TRUE(gpu.has_value());
    EXPECT_EQ(gpu->ccMajor, 8);
    EXPECT_EQ(gpu->ccMinor, 9);
    EXPECT_FALSE(gpu->lowerBound);
    EXPECT_NE(gpu->name.find("RTX 6000 Ada"), std::string::npos);
    EXPECT_THROW(resolveTargetGpu(inputs, "A100"), InputError);
    EXPECT_EQ(resolveTargetGpu(inputs, "sm89")->ccMinor, 9);
}

TEST(TargetGpu, KernelNamesOnlyBoundTheGpuFromBelow)
{
    REQUIRE_SHARED();
    const Inputs inputs = trex("trex-pt-resnet-a100-qat/resnet-qat");
    const std::optional<TargetGpu> gpu = gpuFromInputs(inputs);
    ASSERT_TRUE(gpu.has_value());
    EXPECT_TRUE(gpu->lowerBound);
    EXPECT_EQ(gpu->ccMajor, 8);
    EXPECT_EQ(gpu->ccMinor, 0);
    // An sm80 kernel runs on an H100 too: --gpu H100 does not contradict it; a Turing GPU does.
    EXPECT_EQ(resolveTargetGpu(inputs, "H100")->ccMajor, 9);
    EXPECT_THROW(resolveTargetGpu(inputs, "T4"), InputError);
    // A 10.x Myelin engine whose kernels are cutlass3x_sm100_...: built on a Blackwell GPU.
    const Inputs blackwell = loadFiles({sharedRoot() / "realdata/lix-engine-analysis-dmt-fp16/layers_tofp16.json"});
    const std::optional<TargetGpu> sm100 = gpuFromInputs(blackwell);
    ASSERT_TRUE(sm100.has_value());
    EXPECT_EQ(sm100->ccMajor, 10);
    EXPECT_TRUE(sm100->lowerBound);
}

// ---- fix ----------------------------------------------------------------------------------------------------------

TEST(QuantizedTypes, FixSaysWhatTheOnnxCheckerCouldNotCover)
{
    const std::filesystem::path folder = tempDir("fix-quantized-types");
    const auto dryRun = [](const std::filesystem::path& model)
    {
        InputFiles files;
        files.files = {model.string()};
        FixOptions options;
        options.dryRun = true;
        return runFix(files, options, Limits{});
    };
    const auto mentions = [](const FixReport& report, const std::string& text)
    {
        return std::any_of(report.notes.begin(), report.notes.end(),
                           [&](const std::string& note) { return note.find(text) != std::string::npos; });
    };
    // FP8 Q/DQ of opset 19: libonnx 1.12 knows neither the opset nor FLOAT8E4M3FN.
    const std::filesystem::path fp8 = folder / "fp8.onnx";
    {
        GraphBuilder g;
        g.opset("", 19);
        const std::string s = g.scale("s", 0.02f);
        const std::string zp = g.typedZeroPoint("zp", kFp8E4M3);
        const std::string q = g.node("QuantizeLinear", "/x/q", {g.input("x", {4, 32}), s, zp});
        g.output(g.node("Relu", "/relu", {g.node("DequantizeLinear", "/x/dq", {q, s, zp})}), {4, 32});
        g.save(fp8.string());
    }
    const FixReport fp8Report = dryRun(fp8);
    EXPECT_TRUE(mentions(fp8Report, "float8e4m3fn")) << fp8Report.checker;
    // ModelOpt's NVFP4 activation ops: no schema in any ONNX release.
    const std::filesystem::path nvfp4 = folder / "nvfp4.onnx";
    {
        GraphBuilder g;
        g.opset("", 23);
        g.opset("trt", 1);
        g.node("TRT_FP4DynamicQuantize", "/x/q", {g.input("x", {4, 32}), g.scale("gs", 0.002f)}, {"xq", "xs"}, "trt");
        g.intAttribute("/x/q", "block_size", 16);
        const std::string scales = g.node("DequantizeLinear", "/x/sdq", {"xs", g.scale("ss", 0.002f)}, {}, "trt");
        const std::string x = g.node("DequantizeLinear", "/x/dq", {"xq", scales}, {}, "trt");
        g.output(g.node("Relu", "/relu", {x}), {4, 32});
        g.save(nvfp4.string());
    }
    const FixReport nvfp4Report = dryRun(nvfp4);
    EXPECT_TRUE(mentions(nvfp4Report, "TensorRT-domain Q/DQ op")) << nvfp4Report.checker;
    // An FP32 model with INT8 Q/DQ has nothing the checker cannot cover.
    const std::filesystem::path plain = folder / "int8.onnx";
    {
        GraphBuilder g;
        g.output(g.node("Relu", "/relu", {g.qdq("/x", g.input("x", {4, 32}))}), {4, 32});
        g.save(plain.string());
    }
    EXPECT_FALSE(mentions(dryRun(plain), "not checked by"));
}

// ---- real models ----------------------------------------------------------------------------------------------------

// The Q/DQ models of ../shared/models are INT8 (PyTorch QAT and ONNX Runtime exports, opset 13-17): every Q/DQ node is
// counted once, as INT8, or as INT32 where ONNX Runtime quantized a bias (resnet18-ort-qdq: one per Conv and Gemm), and
// none gets an opset note.
TEST(QuantizedTypes, SharedInt8ModelsCountEveryQdqNodeAsInt8)
{
    REQUIRE_SHARED();
    std::size_t models = 0;
    for (const auto& entry : std::filesystem::directory_iterator(sharedRoot() / "models"))
    {
        if (entry.path().extension() != ".onnx")
        {
            continue;
        }
        const OnnxGraph graph = readOnnx(entry.path().string());
        ++models;
        std::size_t counted = 0;
        for (const QuantizedTypeCount& count : countQuantizedTypes(graph))
        {
            EXPECT_TRUE(count.type == QuantizedType::kInt8 || count.type == QuantizedType::kInt32)
                << entry.path() << " " << quantizedTypeLabel(count.type);
            counted += count.nodes;
        }
        EXPECT_EQ(counted, graph.qdq.size()) << entry.path();
        EXPECT_FALSE(anyWarningNames(graph, "which ONNX's")) << entry.path();
        if (entry.path().filename() == "resnet18-ort-qdq.onnx")
        {
            const auto counts = countQuantizedTypes(graph);
            ASSERT_EQ(counts.size(), 2u);
            EXPECT_EQ(counts[1].type, QuantizedType::kInt32);
            std::size_t convsAndGemms = 0;
            for (const OnnxNode& node : graph.nodes)
            {
                convsAndGemms += node.opType == "Conv" || node.opType == "Gemm" ? 1 : 0;
            }
            EXPECT_EQ(counts[1].nodes, convsAndGemms);
        }
    }
    EXPECT_GE(models, 10u);
}
