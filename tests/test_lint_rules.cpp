// The kernel, alignment and precision lints and the catalogue rules R28/R30, each on a real engine where it applies
// and a near-identical one where it must stay silent; the coverage of every reformat, standalone Q/DQ and copy layer
// of every real engine by a finding that gives its cause. Expected names and times were read off the files by hand.
#include "qdq/analysis.h"
#include "qdq/diff.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

using namespace qdq;
using namespace qdq::test;

namespace
{

std::vector<const Finding*> findingsOf(const Report& report, const std::string& rule)
{
    std::vector<const Finding*> found;
    for (const auto& finding : report.findings)
    {
        if (finding.rule == rule)
        {
            found.push_back(&finding);
        }
    }
    return found;
}
//! The pointers point into the report: a temporary one would leave them dangling.
std::vector<const Finding*> findingsOf(const Report&& report, const std::string& rule) = delete;

//! Whether the report has no finding of the rule (takes a temporary report too).
bool noFindingOf(const Report& report, const std::string& rule)
{
    return findingsOf(report, rule).empty();
}

bool names(const Finding& finding, const std::string& layer)
{
    return std::find(finding.engineLayers.begin(), finding.engineLayers.end(), layer) != finding.engineLayers.end();
}

bool anyNames(const std::vector<const Finding*>& findings, const std::string& layer)
{
    return std::any_of(findings.begin(), findings.end(), [&](const Finding* f) { return names(*f, layer); });
}

bool evidenceHas(const Finding& finding, const std::string& text)
{
    return std::any_of(finding.evidence.begin(), finding.evidence.end(),
                       [&](const Evidence& e) { return e.text.find(text) != std::string::npos; });
}

const std::string kTrexQatStem = "conv1.weight + QuantizeLinear_7 + Conv_9";

} // namespace

// ---- kernel-without-tensor-cores ---------------------------------------------------------------------------------

TEST(RealDataRuleKernelWithoutTensorCores, TrexQatStemRunsDp4a)
{
    REQUIRE_SHARED();
    Inputs inputs = trex("trex-pt-resnet-a100-qat/resnet-qat");
    Report report = diagnose(inputs);
    auto found = findingsOf(report, "kernel-without-tensor-cores");
    ASSERT_EQ(found.size(), 1u);
    const Finding& stem = *found.front();
    EXPECT_EQ(stem.engineLayers, std::vector<std::string>{kTrexQatStem});
    EXPECT_TRUE(evidenceHas(stem, "ampere_fp32_icudnn_int8x4_128x64_relu_medium_nn_v1"));
    EXPECT_TRUE(evidenceHas(stem, "[32,3,224,224] Four wide channel vectorized row major Int8 format"));
    EXPECT_NE(stem.message.find("DP4A"), std::string::npos);
    EXPECT_NE(stem.message.find("3 input"), std::string::npos);
    ASSERT_TRUE(stem.costMs.has_value());
    EXPECT_NEAR(*stem.costMs, 0.201728, 1e-9); // the stem's averageMs in the profile
    EXPECT_EQ(stem.severity, Severity::kWarning);
    EXPECT_TRUE(stem.likely);
}

TEST(RealDataRuleKernelWithoutTensorCores, TrexFp16StemRunsTensorCores)
{
    REQUIRE_SHARED();
    // The same ResNet18 stem (3 -> 64 channels, A100) in FP16 runs the first-layer HMMA kernel.
    Inputs inputs = trex("trex-pt-resnet-a100-fp16/resnet");
    Report report = diagnose(inputs);
    EXPECT_TRUE(findingsOf(report, "kernel-without-tensor-cores").empty());
}

TEST(RealDataRuleKernelWithoutTensorCores, MatrixVectorClassifierIsInfo)
{
    REQUIRE_SHARED();
    // MobileNetV2's classifier (batch 1, 1280 -> 1000, 1x1) runs sm70_xmma_fprop_conv1x1_..._simt_small_batch.
    Inputs inputs = trex("trex-tests-mobilenet-qat/mobilenet.qat");
    Report report = diagnose(inputs);
    const Finding* classifier = nullptr;
    for (const Finding* finding : findingsOf(report, "kernel-without-tensor-cores"))
    {
        if (finding->engineLayers.front().rfind("classifier.1.weight + QuantizeLinear_860 + Gemm_864", 0) == 0)
        {
            classifier = finding;
        }
    }
    ASSERT_NE(classifier, nullptr);
    EXPECT_EQ(classifier->severity, Severity::kInfo);
    EXPECT_NE(classifier->message.find("matrix-vector"), std::string::npos);
    // Its depthwise convolutions (CudaDepthwiseConvolution, no TacticName) are expected on CUDA cores.
    EXPECT_FALSE(anyNames(findingsOf(report, "kernel-without-tensor-cores"),
                          "features.1.conv.0.0.weight + QuantizeLinear_25 + Conv_29 + PWN(Clip_33)"));
}

TEST(RealDataRuleKernelWithoutTensorCores, SaysWhenKernelNamesAreMissing)
{
    REQUIRE_SHARED();
    // A TensorRT 8.4 log whose engine block gives tactic values, not kernel names: no finding, a note.
    Inputs inputs =
        loadFiles({realdata("blogdoc-fpn-mbv2-int8-calib-trt84/blogdoc-fpn-mbv2-int8-calib-trt84.log.txt")});
    Report report = diagnose(inputs);
    EXPECT_TRUE(findingsOf(report, "kernel-without-tensor-cores").empty());
    EXPECT_TRUE(std::any_of(report.notes.begin(), report.notes.end(),
                            [](const std::string& note)
                            {
                                return note.rfind("kernel-without-tensor-cores: not checked", 0) == 0 &&
                                       note.find("--profilingVerbosity=detailed") != std::string::npos;
                            }));
    // The TREx A100 layer lists name their kernels: no such note.
    Report named = diagnose(trex("trex-pt-resnet-a100-fp16/resnet"));
    EXPECT_TRUE(std::none_of(named.notes.begin(), named.notes.end(),
                             [](const std::string& note)
                             { return note.rfind("kernel-without-tensor-cores: not checked", 0) == 0; }));
}

// ---- channels-not-aligned ----------------------------------------------------------------------------------------

TEST(RealDataRuleChannelsNotAligned, MobilenetBottlenecksOf24ChannelsRunOnTensorCores)
{
    REQUIRE_SHARED();
    // Its only misaligned INT8 count is 24 (features.2.conv.2 projects 96 -> 24, the expand convs read 24), and every
    // 24-channel layer of this engine runs a tensor-core kernel (turing_fp16_i8816cudnn_int8_...,
    // sm75_xmma_..._tensor8x8x16_...): the engine refutes "24 -> 32", so there is no finding (issue 36, defect 2; the
    // case where no peer runs the count on tensor cores is in test_rules_evidence.cpp). Never the image's 3
    // channels of the stem (it runs DP4A) nor the classifier's 1000 classes either.
    Inputs inputs = trex("trex-tests-mobilenet-qat/mobilenet.qat");
    Report report = diagnose(inputs);
    EXPECT_TRUE(findingsOf(report, "channels-not-aligned").empty());
    for (const Finding& finding : report.findings)
    {
        EXPECT_EQ(finding.fix.find("C 3 -> 16"), std::string::npos) << finding.rule;
        EXPECT_EQ(finding.fix.find("K 1000 -> "), std::string::npos) << finding.rule;
        EXPECT_EQ(finding.fix.find("24 -> 32"), std::string::npos) << finding.rule;
    }
}

TEST(RealDataRuleChannelsNotAligned, Fp16StemReadingTheImageIsNotPadded)
{
    REQUIRE_SHARED();
    // The FP16 stem Conv_0 + Relu_1 reads the 3-channel network input and runs TensorRT's first-layer kernel
    // trt_turing_cutlass_image_network_first_layer_hmma_..._c4_...: its C is the image's, not a width to pad.
    // Gemm_48 (512 -> 1000) is aligned for FP16.
    Inputs inputs = trex("trex-pt-resnet-a100-fp16/resnet");
    EXPECT_TRUE(noFindingOf(diagnose(inputs), "channels-not-aligned"));
}

// ---- reformat-conversion -----------------------------------------------------------------------------------------

TEST(RealDataRuleReformatConversion, MobilenetScaleQuantizesReadFloat)
{
    REQUIRE_SHARED();
    // TensorRT 8.2: each standalone Quantize is a Scale layer reading FP32, fed by a CHW32 FP32 -> linear FP32
    // reformat. Where that Quantize requantizes a float residual, residual-input-not-quantized names the reformat
    // too, and diagnose keeps that explanation (each layer explained once): reformat-conversion's is a fallback.
    Inputs inputs = trex("trex-tests-mobilenet-qat-2022-04/mobilenet.qat");
    Report report = diagnose(inputs);
    const std::string reformat = "Reformatting CopyNode for Input Tensor 0 to QuantizeLinear_341";
    EXPECT_FALSE(anyNames(findingsOf(report, "reformat-conversion"), reformat));
    EXPECT_TRUE(anyNames(findingsOf(report, "residual-input-not-quantized"), reformat));
    // The NoOp reformat before the classifier no other rule names keeps reformat-conversion's explanation.
    EXPECT_FALSE(findingsOf(report, "reformat-conversion").empty());
}

TEST(RealDataRuleReformatConversion, Fp16AndFp32AroundMyelin)
{
    REQUIRE_SHARED();
    Inputs inputs = loadFiles({realdata("lix-engine-analysis-as-fp16/layers_.json")});
    Report report = diagnose(inputs);
    auto found = findingsOf(report, "reformat-conversion");
    const Finding* conversion = nullptr;
    for (const Finding* finding : found)
    {
        if (finding->fallbackGroup.find("convert FP16 to FP32") != std::string::npos)
        {
            conversion = finding;
        }
    }
    ASSERT_NE(conversion, nullptr);
    EXPECT_TRUE(names(*conversion, "Reformatting CopyNode for Output Tensor 1 to {ForeignNode[/bev_decoder/"
                                   "Constant_output_0.../bev_decoder/Where_13]}"));
}

TEST(RealDataRuleReformatConversion, SilentWhereAnotherRuleExplainsTheLayer)
{
    REQUIRE_SHARED();
    // The reformat after MaxPool_12 of the QAT ResNet is conv-act-pool-blocked's; the network input's Quantize is
    // io-reformat's and standalone-qdq's: no second explanation.
    Inputs inputs = trex("trex-pt-resnet-a100-qat/resnet-qat");
    Report report = diagnose(inputs);
    auto found = findingsOf(report, "reformat-conversion");
    EXPECT_FALSE(anyNames(found, "Reformatting CopyNode for Output Tensor 0 to MaxPool_12"));
    EXPECT_TRUE(anyNames(findingsOf(report, "conv-act-pool-blocked"),
                         "Reformatting CopyNode for Output Tensor 0 to MaxPool_12"));
    // The QAT-residual engine's three layers are all Q/DQ (standalone-qdq): nothing for this rule.
    Inputs residual = trex("trex-pt-resnet-a100-qat-residual/resnet-qat-residual");
    const Report residualReport = diagnose(residual);
    EXPECT_TRUE(findingsOf(residualReport, "reformat-conversion").empty());
}

// ---- copy-not-eliminated -----------------------------------------------------------------------------------------

TEST(RealDataRuleCopyNotEliminated, YoloConcatCopiesWithTheLogsReason)
{
    REQUIRE_SHARED();
    Inputs inputs = loadFiles({realdata("trex-notebooks-yolo-orin-trt852/trt.out")});
    Report report = diagnose(inputs);
    auto found = findingsOf(report, "copy-not-eliminated");
    ASSERT_EQ(found.size(), 1u);
    const Finding& copies = *found.front();
    EXPECT_TRUE(names(copies, "/neck/Concat_/neck/Resize_output_0_clone_0 copy"));
    EXPECT_TRUE(names(copies, "/neck/Concat_1_/neck/Resize_1_output_0_clone_0 copy"));
    EXPECT_NE(copies.message.find("because input does not support striding"), std::string::npos);
    // The log's lines 5780 and 5783.
    std::set<std::uint64_t> lines;
    for (const auto& evidence : copies.evidence)
    {
        lines.insert(evidence.line);
    }
    EXPECT_TRUE(lines.count(5780) > 0 && lines.count(5783) > 0);
    EXPECT_FALSE(copies.likely);
}

TEST(RealDataRuleCopyNotEliminated, NamesOnlyListSaysSoAndEnginesWithoutCopiesAreSilent)
{
    REQUIRE_SHARED();
    // The same engine's names-only layer list: the copies are known by name only.
    Inputs namesOnly = loadFiles({realdata("trex-notebooks-yolo-orin-trt852/layer_info.json")});
    const Report report = diagnose(namesOnly); // findingsOf points into it
    auto found = findingsOf(report, "copy-not-eliminated");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found.front()->severity, Severity::kInfo);
    EXPECT_TRUE(found.front()->likely);
    const Report withoutCopies = diagnose(trex("trex-pt-resnet-a100-qat/resnet-qat"));
    EXPECT_TRUE(findingsOf(withoutCopies, "copy-not-eliminated").empty());
}

// ---- int8-slower-than-fp16 ---------------------------------------------------------------------------------------

TEST(RealDataRuleInt8SlowerThanFp16, QuantizedClassifierIsAnIsland)
{
    REQUIRE_SHARED();
    // QAT-residual: the fc is quantized by the standalone QuantizeLinear_298 behind the float GlobalAveragePool and
    // writes FP32.
    Inputs inputs = trex("trex-pt-resnet-a100-qat-residual/resnet-qat-residual");
    Report report = diagnose(inputs);
    auto found = findingsOf(report, "int8-slower-than-fp16");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found.front()->engineLayers.front().rfind("fc.weight + QuantizeLinear_303 + Gemm_305", 0), 0u);
    ASSERT_TRUE(found.front()->costMs.has_value());
    EXPECT_NEAR(*found.front()->costMs, 0.007168, 1e-9); // QuantizeLinear_298's averageMs
    EXPECT_TRUE(found.front()->likely);
}

TEST(RealDataRuleInt8SlowerThanFp16, QuantizedPoolingFeedsTheClassifierInt8)
{
    REQUIRE_SHARED();
    // QAT-residual-qgap quantizes the pooling's input: the fc reads INT8 from it, no island.
    Inputs inputs = trex("trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap");
    EXPECT_TRUE(noFindingOf(diagnose(inputs), "int8-slower-than-fp16"));
}

TEST(RealDataRuleInt8SlowerThanFp16, DiffAgainstTheFp16BuildMeasuresTheStem)
{
    REQUIRE_SHARED();
    Inputs fp16 = trex("trex-pt-resnet-a100-fp16/resnet");
    Inputs qat = trex("trex-pt-resnet-a100-qat/resnet-qat");
    DiffReport report = diffEngines(fp16, qat);
    const Finding* stem = nullptr;
    for (const auto& region : report.regions)
    {
        for (const auto& finding : region.findings)
        {
            if (finding.rule == "int8-slower-than-fp16" && names(finding, kTrexQatStem))
            {
                stem = &finding;
            }
        }
    }
    ASSERT_NE(stem, nullptr);
    EXPECT_FALSE(stem->likely);
    // FP16: reformat 0.080896 + Conv_0 + Relu_1 0.111616; INT8: QuantizeLinear_2 0.06144 + stem 0.201728.
    ASSERT_TRUE(stem->costMs.has_value());
    EXPECT_NEAR(*stem->costMs, (0.06144 + 0.201728) - (0.080896 + 0.111616), 1e-9);
    // The stem's INT8 conv alone (0.202 ms) is slower than the whole FP16 side (0.193 ms): FP16 is the advice.
    EXPECT_EQ(stem->fix.rfind("leave this region in FP16", 0), 0u) << stem->fix;
    // Elsewhere each INT8 conv alone is faster than its FP16 build and the standalone Quantize before it is what
    // costs: keep INT8 (the issue "One model of TensorRT", defect 5: every region was told to go back to FP16).
    std::size_t keepInt8 = 0;
    for (const auto& region : report.regions)
    {
        for (const auto& finding : region.findings)
        {
            keepInt8 += finding.rule == "int8-slower-than-fp16" && finding.fix.rfind("keep this region in INT8", 0) == 0
                            ? 1
                            : 0;
        }
    }
    EXPECT_GE(keepInt8, 5u);

    // The QAT-residual recipe quantizes the classifier's input with a standalone QuantizeLinear_298: 0.020 ms against
    // Gemm_48's 0.011 ms in FP16. The QGAP recipe's classifier reads INT8 from the quantized pooling: 0.012288 against
    // 0.011264 ms, within the noise of a one-iteration profile.
    const auto slowerFc = [](const DiffReport& diff)
    {
        for (const auto& region : diff.regions)
        {
            for (const auto& finding : region.findings)
            {
                if (finding.rule == "int8-slower-than-fp16" &&
                    std::any_of(finding.engineLayers.begin(), finding.engineLayers.end(),
                                [](const std::string& l) { return l.rfind("fc.weight", 0) == 0; }))
                {
                    return true;
                }
            }
        }
        return false;
    };
    EXPECT_TRUE(slowerFc(diffEngines(fp16, trex("trex-pt-resnet-a100-qat-residual/resnet-qat-residual"))));
    DiffReport qgap = diffEngines(fp16, trex("trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap"));
    EXPECT_FALSE(slowerFc(qgap));
}

// ---- tactic-gap (R28) --------------------------------------------------------------------------------------------

TEST(RuleTacticGap, SampleEHeadConvolutionKernels)
{
    // User report e: the head conv (the same Conv + Relu in both builds) runs another kernel in the explicit build.
    const auto dir = std::filesystem::path(QDQ_SOURCE_DIR) / "samples" / "e-explicit-slower-than-implicit";
    Inputs implicitBuild = loadFiles({dir / "implicit" / "layers.json", dir / "implicit" / "profile.json"});
    Inputs explicitBuild =
        loadFiles({dir / "explicit" / "layers.json", dir / "explicit" / "profile.json", dir / "model.onnx"});
    DiffReport report = diffEngines(implicitBuild, explicitBuild);
    const Finding* gap = nullptr;
    for (const auto& region : report.regions)
    {
        for (const auto& finding : region.findings)
        {
            if (finding.rule == "tactic-gap")
            {
                ASSERT_EQ(gap, nullptr) << "one gap only";
                gap = &finding;
            }
        }
    }
    ASSERT_NE(gap, nullptr);
    EXPECT_EQ(gap->engineLayers, std::vector<std::string>{"head.conv.weight + /head.conv/_weight_quantizer/"
                                                          "QuantizeLinear + /head/conv/Conv + /head/act/Relu"});
    EXPECT_NE(gap->message.find("sm80_xmma_fprop_implicit_gemm_interleaved_i8f16_i8i32_f32"), std::string::npos);
    EXPECT_NE(gap->message.find("sm80_xmma_fprop_implicit_gemm_interleaved_i8f32_i8i32_f32"), std::string::npos);
    ASSERT_TRUE(gap->costMs.has_value());
    EXPECT_NEAR(*gap->costMs, 0.0197 - 0.0188, 1e-9); // the two profiles' averageMs
    EXPECT_EQ(gap->evidence.size(), 2u);
    // The candidate writes FP32 where the baseline wrote FP16: that output type rules the baseline's kernel out, so
    // the advice starts there and offers no timing cache (the issue "One model of TensorRT", defect 5).
    EXPECT_EQ(gap->fix.rfind("fix the output type first", 0), 0u) << gap->fix;
    EXPECT_EQ(gap->fix.find("timingCacheFile"), std::string::npos) << gap->fix;

    const std::string text = renderDiffText(report, implicitBuild, explicitBuild);
    EXPECT_NE(text.find("tactic-gap  cost 0.001 ms"), std::string::npos) << text;
}

TEST(RealDataRuleTacticGap, DifferentPrecisionsAreNoTacticGap)
{
    REQUIRE_SHARED();
    // FP16 against INT8: every convolution runs another kernel because its precision differs; that is
    // int8-slower-than-fp16's subject, not a tactic gap.
    DiffReport report =
        diffEngines(trex("trex-pt-resnet-a100-fp16/resnet"), trex("trex-pt-resnet-a100-qat/resnet-qat"));
    for (const auto& region : report.regions)
    {
        for (const auto& finding : region.findings)
        {
            EXPECT_NE(finding.rule, "tactic-gap");
        }
    }
}

// ---- no-int8-implementation (R30) --------------------------------------------------------------------------------

TEST(RealDataRuleNoInt8Implementation, GtxPascalHasNoKernelForTheQuantizedConv)
{
    REQUIRE_SHARED();
    Inputs inputs =
        loadFiles({realdata("issue-trt-1627-qdq-scale-node-trt82/issue-trt-1627-qdq-scale-node-trt82.log.txt")});
    Report report = diagnose(inputs);
    auto found = findingsOf(report, "no-int8-implementation");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found.front()->severity, Severity::kError);
    EXPECT_NE(found.front()->message.find("conv2d_17.w_0 + QuantizeLinear_37_quantize_scale_node + Conv_16"),
              std::string::npos);
    ASSERT_EQ(found.front()->evidence.size(), 1u);
    EXPECT_EQ(found.front()->evidence.front().line, 1u);
}

TEST(RealDataRuleNoInt8Implementation, SilentOnAQuantizedBuildThatSucceeded)
{
    REQUIRE_SHARED();
    // #2527: the same fused-name convention (weight + QuantizeLinear + Conv), built fine on TensorRT 8.5.
    Inputs inputs = loadFiles({realdata("issue-trt-2527-qdq-trt851/issue-trt-2527-qdq-trt851.log.txt")});
    EXPECT_TRUE(noFindingOf(diagnose(inputs), "no-int8-implementation"));
}

// ---- every reformat, standalone Q/DQ and copy layer explained once ------------------------------------------------

TEST(RealDataLintCoverage, EveryConversionLayerIsExplainedOnce)
{
    REQUIRE_SHARED();
    std::size_t engines = 0;
    std::size_t conversionLayers = 0;
    for (const ManifestEntry& entry : manifestEntries())
    {
        if (entry.kind == "timing-json" || entry.kind == "metadata-json" || entry.kind == "onnx")
        {
            continue;
        }
        const std::string file = entry.path();
        SCOPED_TRACE(file);
        Inputs inputs = loadFiles({realdata(file)});
        Report report = diagnose(inputs);
        if (inputs.engine() == nullptr)
        {
            continue;
        }
        ++engines;
        // layer -> the rules naming it
        std::map<std::string, std::vector<std::string>> namedBy;
        for (const auto& finding : report.findings)
        {
            for (const auto& layer : finding.engineLayers)
            {
                namedBy[layer].push_back(finding.rule);
            }
        }
        for (const auto& mapping : report.correlation.layers)
        {
            if (mapping.state != LayerState::kInsertedQdq && mapping.state != LayerState::kInsertedReformat)
            {
                continue;
            }
            ++conversionLayers;
            const std::string& name = inputs.engine()->layers[mapping.layer].name;
            auto found = namedBy.find(name);
            ASSERT_NE(found, namedBy.end()) << name << " is named by no finding";
            // The fallback explanations never share a layer with another rule's finding.
            const auto& rules = found->second;
            for (const char* fallback : {"reformat-conversion", "copy-not-eliminated"})
            {
                if (std::find(rules.begin(), rules.end(), fallback) != rules.end())
                {
                    EXPECT_EQ(rules.size(), 1u) << name << " explained by " << fallback << " and another rule";
                }
            }
        }
    }
    EXPECT_GE(engines, 35u);
    EXPECT_GE(conversionLayers, 500u);
}
