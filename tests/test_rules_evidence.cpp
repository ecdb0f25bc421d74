// Evidence before heuristics (issue 36, defects 2, 3, 4 and 9): padding advice that the engine's own peer layers
// refute, scales a build log does not give, the last residual block before a float pooling, and the INT8-input advice
// that keeps the input's DequantizeLinear. Each on the real files of ../shared, with a near-identical case (a copy of a
// real layer list changed in one kernel name, or the next block of the same model) whose finding must not change.
// Expected names, kernels and lines were read off the files by hand.
#include "graph_builder.h"
#include "qdq/analysis.h"
#include "qdq/build_log.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

const char* kFp32 = "Row major linear FP32";
const char* kInt8 = "Thirty-two wide channel vectorized row major Int8 format";

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

//! The first finding of a rule naming a layer that starts with prefix (a pointer into report.findings).
const Finding* namingLayer(const Report& report, const std::string& rule, const std::string& prefix)
{
    for (const Finding& finding : report.findings)
    {
        if (finding.rule != rule)
        {
            continue;
        }
        for (const auto& layer : finding.engineLayers)
        {
            if (layer.rfind(prefix, 0) == 0)
            {
                return &finding;
            }
        }
    }
    return nullptr;
}

const Finding* namingNode(const Report& report, const std::string& rule, const std::string& node)
{
    for (const Finding& finding : report.findings)
    {
        if (finding.rule == rule &&
            std::find(finding.onnxNodes.begin(), finding.onnxNodes.end(), node) != finding.onnxNodes.end())
        {
            return &finding;
        }
    }
    return nullptr;
}

const std::string kMobilenet2204 = "trex-tests-mobilenet-qat-2022-04/mobilenet.qat.onnx.engine.";
const std::string kExpand3 = "features.3.conv.0.0.weight + QuantizeLinear_104 + Conv_108";
const std::string kProject2 = "features.2.conv.2.weight + QuantizeLinear_90 + Conv_94";
// The kernel of features.2.conv.2 (96 -> 24) in the TensorRT 8.2 build: the only tensor-core layer with 24 channels.
const std::string kProject2Kernel = "turing_fp16_i8816cudnn_int8_128x128_ldg16_relu_interior_nt_v1";

//! The TensorRT 8.2 MobileNetV2 build; with noPeer, a copy of its layer list in which features.2.conv.2 runs the DP4A
//! kernel of the expand convs instead, so no layer of the engine runs 24 channels on tensor cores.
Inputs mobilenet2204(bool noPeer)
{
    if (!noPeer)
    {
        return loadFiles({realdata(kMobilenet2204 + "graph.json"), realdata(kMobilenet2204 + "profile.json")});
    }
    std::string graph = readFile(realdata(kMobilenet2204 + "graph.json"));
    const auto at = graph.find(kProject2Kernel);
    EXPECT_NE(at, std::string::npos);
    EXPECT_EQ(graph.find(kProject2Kernel, at + 1), std::string::npos);
    graph.replace(at, kProject2Kernel.size(), "volta_int8x4_icudnn_int8x4_128x64_relu_interior_nn_v1");
    const auto dir = tempDir("rules-evidence-mobilenet");
    return loadFiles(
        {writeFile(dir / "mobilenet.qat.onnx.engine.graph.json", graph), realdata(kMobilenet2204 + "profile.json")});
}

} // namespace

// ---- defect 2: padding advice the engine's peer layers refute ---------------------------------------------------

TEST(RealDataEvidencePadding, MobilenetPeerOnTensorCoresRefutesPadding24)
{
    REQUIRE_SHARED();
    // features.2.conv.2 (96 -> 24) runs turing_fp16_i8816cudnn_int8_... on tensor cores in the same engine, and the
    // TensorRT 8.4 build of the same model runs the 24 -> 144 expand convs on sm75_xmma_..._tensor8x8x16 kernels:
    // 24 channels are no reason for DP4A, and "24 -> 32" is not advised.
    Report report = diagnose(mobilenet2204(false));
    for (const Finding& finding : report.findings)
    {
        EXPECT_FALSE(contains(finding.fix, "24 -> 32")) << finding.rule << ": " << finding.fix;
    }
    const Finding* aligned = namingLayer(report, "channels-not-aligned", kExpand3);
    EXPECT_EQ(aligned, nullptr);
    const Finding* expand = namingLayer(report, "kernel-without-tensor-cores", kExpand3);
    ASSERT_NE(expand, nullptr);
    EXPECT_FALSE(contains(expand->message, "not multiples of 16")) << expand->message;
    EXPECT_TRUE(std::any_of(expand->evidence.begin(), expand->evidence.end(),
                            [](const Evidence& e) {
                                return contains(e.text, kProject2) && contains(e.text, kProject2Kernel) &&
                                       contains(e.text, "tensor cores");
                            }));
    // The same in the TensorRT 8.4 build, where every 24-channel layer runs tensor-core kernels.
    Report paired = diagnose(trex("trex-tests-mobilenet-qat/mobilenet.qat"));
    for (const Finding& finding : findingsOf(paired, "channels-not-aligned"))
    {
        EXPECT_FALSE(contains(finding.fix, "24 -> 32")) << finding.fix;
    }
}

TEST(RealDataEvidencePadding, WithoutAPeerThePaddingAdviceStays)
{
    REQUIRE_SHARED();
    // The same layer list with features.2.conv.2 on DP4A too: nothing in the engine runs 24 channels on tensor cores,
    // and the advice is what it was.
    Report report = diagnose(mobilenet2204(true));
    const Finding* aligned = namingLayer(report, "channels-not-aligned", kExpand3);
    ASSERT_NE(aligned, nullptr);
    EXPECT_TRUE(contains(aligned->fix, "C 24 -> 32")) << aligned->fix;
    const Finding* expand = namingLayer(report, "kernel-without-tensor-cores", kExpand3);
    ASSERT_NE(expand, nullptr);
    EXPECT_TRUE(contains(expand->message, "not multiples of 16")) << expand->message;
    EXPECT_TRUE(contains(expand->fix, "C 24 -> 32")) << expand->fix;
}

TEST(RealDataEvidencePadding, LogTimingsOfASlowerTensorCoreTacticRefutePadding)
{
    REQUIRE_SHARED();
    // The no-peer copy of the TensorRT 8.2 layer list with a build log that timed, for features.3.conv.0 only, an
    // INT8 tensor-core tactic (CHW32, the channels padded) slower than the DP4A kernel it runs. Its "C 24 -> 32" goes;
    // features.4.conv.0, the same 24 -> 144 conv without timings, keeps it. 0x2ba6354c799e5147 is the layer's
    // TacticValue.
    Inputs inputs = mobilenet2204(true);
    const std::string conv = kExpand3 + " + PWN(Clip_112)";
    BuildLog log;
    log.sourcePath = "synthetic-trt.out";
    log.tactics.push_back({conv, "CaskConvolution", "0x2ba6354c799e5147",
                           "volta_int8x4_icudnn_int8x4_128x64_relu_interior_nn_v1", 0.050, 10});
    log.tactics.push_back({conv, "CaskConvolution", "0x2",
                           "sm75_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_"
                           "vect_c_32_tilesize128x128x64_stage1_warpsize2x2x1_g1_tensor8x8x16",
                           0.080, 12});
    inputs.buildLog = std::move(log);
    Report report = diagnose(inputs);
    const Finding* aligned = namingLayer(report, "channels-not-aligned", "features.4.conv.0.0.weight");
    ASSERT_NE(aligned, nullptr);
    EXPECT_TRUE(contains(aligned->fix,
                         "\"features.4.conv.0.0.weight + QuantizeLinear_153 + Conv_157 + PWN(Clip_161)\": C "
                         "24 -> 32"))
        << aligned->fix;
    EXPECT_FALSE(contains(aligned->fix, conv)) << aligned->fix;
    EXPECT_EQ(namingLayer(report, "channels-not-aligned", kExpand3), nullptr);
    const Finding* timed = namingLayer(report, "kernel-without-tensor-cores", kExpand3);
    ASSERT_NE(timed, nullptr);
    EXPECT_EQ(timed->severity, Severity::kInfo);
    EXPECT_TRUE(contains(timed->message, "0.080 ms against 0.050 ms")) << timed->message;
}

TEST(RealDataEvidencePadding, OrinStemTimingsRefuteImagePadding)
{
    REQUIRE_SHARED();
    // trt.out: the CHW32 tensor-core tactic of /backbone/conv1/Conv took 100.14 ms (line 8316), the chosen DP4A one
    // 58.8474 ms (line 8299). No finding pads the RGB stem.
    Report report = diagnose(loadFiles({realdata("trex-notebooks-yolo-orin-trt852/trt.out")}));
    for (const Finding& finding : report.findings)
    {
        EXPECT_FALSE(contains(finding.fix, "C 3 -> 16")) << finding.rule << ": " << finding.fix;
    }
    const Finding* stem = namingLayer(report, "kernel-without-tensor-cores", "backbone.conv1.weight");
    ASSERT_NE(stem, nullptr);
    EXPECT_EQ(stem->severity, Severity::kInfo);
    EXPECT_TRUE(contains(stem->message, "100.140 ms against 58.847 ms")) << stem->message;
    EXPECT_TRUE(contains(stem->message, "trt.out:8316")) << stem->message;
}

// ---- defect 3: scales a build log does not give -----------------------------------------------------------------

TEST(RealDataEvidenceLogScales, UnknownScaleIsNotCalledPerChannel)
{
    REQUIRE_SHARED();
    // trt.out:998 gives /backbone/layer2/layer2.1/conv1/_input_quantizer/Constant_1_output_0 as ()[FLOAT]: a scalar
    // scale whose value the log never prints.
    Report report = diagnose(loadFiles({realdata("trex-notebooks-yolo-orin-trt852/trt.out")}));
    std::size_t unknown = 0;
    for (const Finding& finding : report.findings)
    {
        EXPECT_FALSE(contains(finding.fix, "is not one per-tensor positive constant")) << finding.rule;
        unknown +=
            contains(finding.fix, "scale is unknown: the build log gives its shape, one per-tensor scalar") ? 1 : 0;
    }
    EXPECT_GE(unknown, 7u);
    const Finding* layer2 = namingNode(report, "residual-input-not-quantized", "/backbone/layer2/layer2.1/Add");
    ASSERT_NE(layer2, nullptr);
    EXPECT_TRUE(contains(layer2->fix, "/backbone/layer2/layer2.1/conv1/_input_quantizer/QuantizeLinear's scale is "
                                      "unknown"))
        << layer2->fix;
}

TEST(RealDataEvidenceLogScales, ModelScalesAreStillCopied)
{
    REQUIRE_SHARED();
    // The same ResNet residual pattern from a model that holds its scales: the value is copied, as before.
    Report report = diagnose(loadFiles({sharedModel("resnet18-qat-convs.onnx")}));
    const Finding* layer1 = namingNode(report, "residual-input-not-quantized", "/layer1/layer1.1/Add");
    ASSERT_NE(layer1, nullptr);
    EXPECT_TRUE(contains(layer1->fix, "with the scale of /layer1/layer1.1/conv1/iq/QuantizeLinear (0.022311496)"))
        << layer1->fix;
}

// ---- defect 4: the last residual block before a float pooling ---------------------------------------------------

TEST(RealDataEvidenceLastResidual, LastBlockBeforeFloatPoolingIsNotAdvisedAlone)
{
    REQUIRE_SHARED();
    // /layer4/layer4.1/Add -> Relu -> GlobalAveragePool (float): quantizing its residual alone leaves the Conv+Add
    // writing float and adds a standalone Dequantize (the residual-precision-mismatch `fix` refuses the edit for).
    // Advised only together with the pooling's input, which needs a calibrated scale.
    Report report = diagnose(loadFiles({sharedModel("resnet18-qat-convs.onnx")}));
    const Finding* last = namingNode(report, "residual-input-not-quantized", "/layer4/layer4.1/Add");
    ASSERT_NE(last, nullptr);
    EXPECT_TRUE(contains(last->message, "goes on in float (to GlobalAveragePool /avgpool/GlobalAveragePool)"))
        << last->message;
    EXPECT_TRUE(contains(last->fix, "only together with QuantizeLinear -> DequantizeLinear on "
                                    "/layer4/layer4.1/relu_1/Relu_output_0 before GlobalAveragePool"))
        << last->fix;
    EXPECT_TRUE(contains(last->fix, "residual-precision-mismatch")) << last->fix;
    ASSERT_EQ(last->edits.size(), 2u);
    EXPECT_EQ(last->edits[0].tensor, "/layer4/layer4.0/relu_1/Relu_output_0");
    EXPECT_EQ(last->edits[1].tensor, "/layer4/layer4.1/relu_1/Relu_output_0");
    EXPECT_TRUE(last->edits[1].scaleFrom.empty()); // the average narrows the range: calibrate
    EXPECT_TRUE(contains(last->edits[1].scaleReason, "calibrate this tensor")) << last->edits[1].scaleReason;
}

TEST(RealDataEvidenceLastResidual, BlockFeedingTheNextBlockIsStillAdvised)
{
    REQUIRE_SHARED();
    // /layer3/layer3.1/Add feeds layer4's quantized convs and the residual input of /layer4/layer4.0/Add (this rule's
    // own edit quantizes that one): advised with its edit, as before.
    Report report = diagnose(loadFiles({sharedModel("resnet18-qat-convs.onnx")}));
    const Finding* block = namingNode(report, "residual-input-not-quantized", "/layer3/layer3.1/Add");
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(block->severity, Severity::kWarning);
    ASSERT_EQ(block->edits.size(), 1u);
    EXPECT_EQ(block->edits.front().tensor, "/layer3/layer3.0/relu_1/Relu_output_0");
}

TEST(RealDataEvidenceLastResidual, EngineOnlyLastBlockIsAdvisedWithThePooling)
{
    REQUIRE_SHARED();
    // The A100 -qat engine alone: "layer4.1.conv2.weight + QuantizeLinear_240 + Conv_242 + Add_244 + Relu_245" writes
    // float for GlobalAveragePool_246 only; layer3.1's Conv+Add (Add_183) feeds the next block's Quantize.
    Report report = diagnose(trex("trex-pt-resnet-a100-qat/resnet-qat"));
    const Finding* last = namingLayer(report, "residual-input-not-quantized",
                                      "layer4.1.conv2.weight + QuantizeLinear_240 + Conv_242 + Add_244");
    ASSERT_NE(last, nullptr);
    EXPECT_TRUE(contains(last->fix, "quantize the residual (identity) input of Add_244 only together with the input "
                                    "of \"GlobalAveragePool_246\""))
        << last->fix;
    EXPECT_TRUE(contains(last->fix, "residual-precision-mismatch")) << last->fix;
    const Finding* block = namingLayer(report, "residual-input-not-quantized",
                                       "layer3.1.conv2.weight + QuantizeLinear_179 + Conv_181 + Add_183");
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(block->severity, Severity::kWarning);
    EXPECT_TRUE(contains(block->fix, "insert QuantizeLinear -> DequantizeLinear on the residual")) << block->fix;
}

// ---- defect 9: INT8-input advice keeps the DequantizeLinear -----------------------------------------------------

TEST(RealDataEvidenceInt8Input, KeepsTheDequantizeAndOffersFp16)
{
    REQUIRE_SHARED();
    Report report = diagnose(trex("trex-pt-resnet-a100-qat/resnet-qat"));
    auto found = findingsOf(report, "io-reformat");
    ASSERT_FALSE(found.empty());
    const std::string& fix = found.front().fix;
    EXPECT_FALSE(contains(fix, "QuantizeLinear -> DequantizeLinear pair")) << fix;
    EXPECT_TRUE(contains(fix, "remove only the QuantizeLinear QuantizeLinear_2 and keep its DequantizeLinear")) << fix;
    EXPECT_TRUE(contains(fix, "NVIDIA/TensorRT#1973")) << fix;
    EXPECT_TRUE(contains(fix, "keep the model's QuantizeLinear (QuantizeLinear_2) and declare the input FP16, "
                              "--inputIOFormats=fp16:chw"))
        << fix;
    EXPECT_TRUE(contains(fix, "--inputIOFormats=int8:chw4 ")) << fix;
}

TEST(RealDataEvidenceInt8Input, ThreeChannelImageIsNotFedChw32)
{
    REQUIRE_SHARED();
    // The TensorRT 8.2 MobileNet stem reads its [1,3,224,224] input in CHW32: fed so, the image would take 32
    // channels. Advised CHW4 (3 -> 4).
    Report report = diagnose(mobilenet2204(false));
    auto found = findingsOf(report, "io-reformat");
    ASSERT_FALSE(found.empty());
    EXPECT_FALSE(contains(found.front().fix, "chw32")) << found.front().fix;
    EXPECT_TRUE(contains(found.front().fix, "--inputIOFormats=int8:chw4 ")) << found.front().fix;
}

namespace
{

//! An input Quantize writing CHW32 for a conv, the input of `channels` channels.
EnginePlan chw32InputEngine(std::int64_t channels)
{
    const char* chw32 = "Thirty-two wide channel vectorized row major Int8 format";
    std::vector<EngineLayer> layers;
    layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"images", kFp32}}, {{"t0", kInt8}}, "QDQ"));
    layers.push_back(layer("w + QuantizeLinear_5 + Conv_6", "CaskConvolution", {{"t0", kInt8}}, {{"out", kFp32}}));
    layers[0].inputs[0].dimensions = {1, channels, 64, 64};
    layers[0].outputs[0].dimensions = {1, channels, 64, 64};
    layers[0].outputs[0].format = chw32;
    layers[1].inputs[0].dimensions = {1, channels, 64, 64};
    layers[1].inputs[0].format = chw32;
    layers[1].outputs[0].dimensions = {1, 64, 64, 64};
    return planOf(std::move(layers), {"images", "out"});
}

} // namespace

TEST(RuleEvidenceInt8Input, Chw32OnlyForAnInputThatFillsIt)
{
    EnginePlan rgb = chw32InputEngine(3);
    auto found = findingsOf(runDiagnose(std::nullopt, rgb, profileFor(rgb)), "io-reformat");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_TRUE(contains(found[0].fix, "--inputIOFormats=int8:chw4 ")) << found[0].fix;
    // Near-identical: 32 channels fill the CHW32 vector, which stays the advice.
    EnginePlan wide = chw32InputEngine(32);
    found = findingsOf(runDiagnose(std::nullopt, wide, profileFor(wide)), "io-reformat");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_TRUE(contains(found[0].fix, "--inputIOFormats=int8:chw32 ")) << found[0].fix;
}
