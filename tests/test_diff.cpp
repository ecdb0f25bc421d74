// diff: alignment through ONNX origins, regions whose deltas add up, explanations; on hand-built engines and on the
// real TREx / cookbook builds (totals read off the profiles and logs by hand).
#include "graph_builder.h"
#include "qdq/diff.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace qdq;
using namespace qdq::test;

namespace
{

const char* kInt8 = "Thirty-two wide channel vectorized row major Int8 format";
const char* kFp16 = "Row major linear FP16 format";
const char* kFp32 = "Row major linear FP32";

Inputs engineInputs(std::vector<EngineLayer> layers, std::vector<double> times)
{
    Inputs inputs;
    EnginePlan plan;
    plan.sourcePath = "layers.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers = std::move(layers);
    Profile profile;
    profile.sourcePath = "profile.json";
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        ProfileEntry entry;
        entry.name = plan.layers[i].name;
        entry.averageMs = entry.timeMs = times[i];
        profile.entries.push_back(entry);
    }
    inputs.layerInfo = std::move(plan);
    inputs.profile = std::move(profile);
    return inputs;
}

void expectExactSplit(const DiffReport& report)
{
    EXPECT_DOUBLE_EQ(report.explainedMs + report.unexplainedMs, report.deltaMs);
    if (report.perLayerTimes)
    {
        double sum = 0.0;
        for (const auto& region : report.regions)
        {
            sum += region.deltaMs;
        }
        EXPECT_NEAR(sum, report.deltaMs, 1e-9);
    }
}

const DiffRegion* regionWith(const DiffReport& report, const Inputs& candidate, const std::string& layerName)
{
    for (const auto& region : report.regions)
    {
        for (std::size_t layer : region.candidateLayers)
        {
            if (candidate.engine()->layers[layer].name == layerName)
            {
                return &region;
            }
        }
    }
    return nullptr;
}

bool differs(const DiffRegion& region, const std::string& text)
{
    for (const auto& difference : region.differences)
    {
        if (difference.find(text) != std::string::npos)
        {
            return true;
        }
    }
    return false;
}

} // namespace

TEST(Diff, ImplicitVersusExplicitConvPool)
{
    // Implicit INT8: conv + relu + pool in one layer, no Q/DQ names. Explicit: separate pool, a standalone Q.
    Inputs baseline =
        engineInputs({layer("Conv_0 + Relu_1 + MaxPool_2", "CaskConvActPool", {{"x", kFp16}}, {{"p", kInt8}}),
                      layer("Conv_3 + Relu_4", "CaskConvolution", {{"p", kInt8}}, {{"y", kInt8}})},
                     {0.10, 0.05});
    Inputs candidate = engineInputs(
        {layer("QuantizeLinear_0", "Reformat", {{"x", kFp32}}, {{"xq", kInt8}}, "QDQ"),
         layer("w0 + QuantizeLinear_1 + Conv_0 + Relu_1", "CaskConvolution", {{"xq", kInt8}}, {{"r", kFp32}}),
         layer("MaxPool_2", "CaskPooling", {{"r", kFp32}}, {{"p", kFp32}}),
         layer("QuantizeLinear_5", "Reformat", {{"p", kFp32}}, {{"pq", kInt8}}, "QDQ"),
         layer("w3 + QuantizeLinear_6 + Conv_3 + Relu_4", "CaskConvolution", {{"pq", kInt8}}, {{"y", kInt8}})},
        {0.02, 0.09, 0.04, 0.02, 0.05});
    DiffReport report = diffEngines(baseline, candidate);
    expectExactSplit(report);
    EXPECT_NEAR(report.deltaMs, (0.02 + 0.09 + 0.04 + 0.02 + 0.05) - (0.10 + 0.05), 1e-12);
    const DiffRegion* stem = regionWith(report, candidate, "MaxPool_2");
    ASSERT_NE(stem, nullptr);
    EXPECT_TRUE(differs(*stem, "lost fusion conv+relu+maxpool")) << stem->differences.front();
    EXPECT_TRUE(stem->explained);
    EXPECT_EQ(stem->baselineLayers.size(), 1u);
    // The largest change comes first.
    EXPECT_EQ(&report.regions.front(), stem);
    const DiffRegion* second = regionWith(report, candidate, "w3 + QuantizeLinear_6 + Conv_3 + Relu_4");
    ASSERT_NE(second, nullptr);
    EXPECT_TRUE(differs(*second, "1 standalone Q/DQ layer(s) added"));
}

TEST(Diff, IdenticalEnginesHaveNothingToExplain)
{
    auto make = [] {
        return engineInputs({layer("Conv_0 + Relu_1", "CaskConvolution", {{"x", kInt8}}, {{"y", kInt8}})}, {0.1});
    };
    Inputs a = make();
    Inputs b = make();
    DiffReport report = diffEngines(a, b);
    EXPECT_DOUBLE_EQ(report.deltaMs, 0.0);
    ASSERT_EQ(report.regions.size(), 1u);
    EXPECT_TRUE(report.regions[0].differences.empty());
    EXPECT_FALSE(report.regions[0].explained);
}

TEST(Diff, SideWithoutLayerListIsAnError)
{
    Inputs empty;
    Inputs candidate = engineInputs({layer("Conv_0", "CaskConvolution", {}, {})}, {0.1});
    EXPECT_THROW(diffEngines(empty, candidate), InputError);
}

namespace
{

std::vector<std::filesystem::path> a100Resnet(const std::string& variant)
{
    std::string stem = variant == "fp16" || variant == "fp32" ? "resnet" : "resnet-" + variant;
    std::string dir = "trex-pt-resnet-a100-" + variant + "/" + stem + ".onnx.engine.";
    return {realdata(dir + "graph.json"), realdata(dir + "profile.json")};
}

} // namespace

TEST(RealDataDiff, TrexQatResidualVersusQat)
{
    REQUIRE_SHARED();
    Inputs baseline = loadFiles(a100Resnet("qat-residual"));
    Inputs candidate = loadFiles(a100Resnet("qat"));
    DiffReport report = diffEngines(baseline, candidate);
    // Profile totals (sum of averageMs): qat 1.09568 ms, qat-residual 0.731136 ms.
    EXPECT_NEAR(report.deltaMs, 1.09568 - 0.731136, 1e-9);
    expectExactSplit(report);
    EXPECT_GT(report.explainedMs, 0.9 * report.deltaMs);
    // The top region is the stem: Conv+MaxPool fused in the baseline, separate (with a reformat) in the candidate.
    const DiffRegion& top = report.regions.front();
    EXPECT_TRUE(differs(top, "lost fusion conv+maxpool"));
    bool poolFinding = false;
    for (const auto& finding : top.findings)
    {
        poolFinding = poolFinding || finding.rule == "conv-act-pool-blocked";
    }
    EXPECT_TRUE(poolFinding);
    // The standalone Quantize layers (QuantizeLinear_15 ... _250; QuantizeLinear_2 exists on both sides).
    std::size_t withAddedQdq = 0;
    for (const auto& region : report.regions)
    {
        withAddedQdq += differs(region, "standalone Q/DQ layer(s) added") ? 1 : 0;
    }
    EXPECT_GE(withAddedQdq, 8u);
    // Conv+Add fusions: the residual Adds fuse into different convs (downsample vs conv2) on the two sides. Both
    // sides fuse them, so the fusion moved; it was not lost (the issue "One model of TensorRT", defect 5).
    std::size_t moved = 0, lost = 0;
    for (const auto& region : report.regions)
    {
        moved += differs(region, "fusion conv+add+relu moved to another layer") ? 1 : 0;
        lost += differs(region, "lost fusion conv+add+relu") ? 1 : 0;
    }
    EXPECT_GE(moved, 1u);
    EXPECT_EQ(lost, 0u);
}

// The issue "One model of TensorRT", defect 5: -qat -> -qat-residual credited the -0.227 ms of the gained ConvActPool
// to standalone-qdq, whose network-input Quantize is in that region on both sides. A candidate's cause now counts only
// the regions the candidate made slower; the slower last block still counts for residual-precision-mismatch.
TEST(RealDataDiff, FasterRegionsAreNotCreditedToTheCandidatesCauses)
{
    REQUIRE_SHARED();
    DiffReport report = diffEngines(loadFiles(a100Resnet("qat")), loadFiles(a100Resnet("qat-residual")));
    ASSERT_LT(report.deltaMs, 0.0);
    bool mismatch = false;
    for (const auto& cause : report.causes)
    {
        EXPECT_GE(cause.deltaMs, 0.0) << cause.title;
        mismatch =
            mismatch || (cause.title.find("residual-precision-mismatch") != std::string::npos && cause.deltaMs > 0.0);
    }
    EXPECT_TRUE(mismatch);
}

TEST(RealDataDiff, TrexPairsAddUp)
{
    REQUIRE_SHARED();
    struct Pair
    {
        const char* baseline;
        const char* candidate;
        double baselineMs; // sums of averageMs read off the profiles
        double candidateMs;
    };
    for (Pair pair :
         {Pair{"qat-residual-qgap", "qat", 0.672768, 1.09568}, Pair{"fp16", "qat-residual-qgap", 1.016832, 0.672768},
          Pair{"qat-residual", "qat-residual-qgap", 0.731136, 0.672768}})
    {
        DiffReport report = diffEngines(loadFiles(a100Resnet(pair.baseline)), loadFiles(a100Resnet(pair.candidate)));
        EXPECT_NEAR(report.deltaMs, pair.candidateMs - pair.baselineMs, 1e-9)
            << pair.baseline << " vs " << pair.candidate;
        expectExactSplit(report);
    }
}

TEST(RealDataDiff, MobilenetTensorRt82VersusTensorRt84)
{
    REQUIRE_SHARED();
    std::string base = "trex-tests-mobilenet-qat-2022-04/mobilenet.qat.onnx.engine.";
    std::string cand = "trex-tests-mobilenet-qat/mobilenet.qat.onnx.engine.";
    DiffReport report = diffEngines(loadFiles({realdata(base + "graph.json"), realdata(base + "profile.json")}),
                                    loadFiles({realdata(cand + "graph.json"), realdata(cand + "profile.json")}));
    // Sums of averageMs: 0.64706246 ms (8.2) and 0.47038876 ms (8.4).
    EXPECT_NEAR(report.deltaMs, 0.47038876 - 0.64706246, 1e-6);
    expectExactSplit(report);
    // Same ONNX export: every operation aligns by name.
    ASSERT_FALSE(report.notes.empty());
    EXPECT_NE(report.notes.front().find("by ONNX node name, 0 by structure"), std::string::npos)
        << report.notes.front();
    // TensorRT 8.2 put a reformat in front of each Scale-type Quantize; 8.4's Reformat-type Quantize needs none.
    std::size_t fewerReformats = 0;
    for (const auto& region : report.regions)
    {
        fewerReformats += differs(region, "reformats removed") ? 1 : 0;
    }
    EXPECT_GE(fewerReformats, 10u);
}

TEST(RealDataDiff, CookbookMnistAcrossVersionsUsesGpuComputeTime)
{
    REQUIRE_SHARED();
    // No per-layer profile in these logs: totals come from "GPU Compute Time: ... mean = X ms".
    DiffReport report = diffEngines(loadFiles({realdata("cookbook-mnist-trt8003/result-FP32.txt")}),
                                    loadFiles({realdata("cookbook-mnist-trt8401/result-FP32.log")}));
    ASSERT_TRUE(report.baselineMs && report.candidateMs);
    EXPECT_NEAR(*report.baselineMs, 0.15368, 1e-9);
    EXPECT_NEAR(*report.candidateMs, 0.160858, 1e-9);
    EXPECT_NEAR(report.deltaMs, 0.160858 - 0.15368, 1e-9);
    EXPECT_FALSE(report.perLayerTimes);
    EXPECT_DOUBLE_EQ(report.unexplainedMs, report.deltaMs);
    // Different exporters (Conv__25 vs Conv-1): aligned by structure.
    EXPECT_NE(report.notes.front().find("0 operation(s) aligned"), std::string::npos);
    DiffReport toTen = diffEngines(loadFiles({realdata("cookbook-mnist-trt8401/result-FP16.log")}),
                                   loadFiles({realdata("cookbook-mnist-trt10141/result-02.log")}));
    EXPECT_FALSE(toTen.candidateMs.has_value()); // the 10.14 build log ran no inference
    EXPECT_GE(toTen.regions.size(), 4u);
}

TEST(Diff, SampleImplicitVersusExplicit)
{
    std::filesystem::path dir = std::filesystem::path(QDQ_SOURCE_DIR) / "samples" / "e-explicit-slower-than-implicit";
    Inputs baseline = loadFiles({dir / "implicit" / "layers.json", dir / "implicit" / "profile.json"});
    Inputs candidate =
        loadFiles({dir / "explicit" / "layers.json", dir / "explicit" / "profile.json", dir / "model.onnx"});
    DiffReport report = diffEngines(baseline, candidate);
    expectExactSplit(report);
    EXPECT_GT(report.deltaMs, 0.0);
    const DiffRegion* deconv = regionWith(report, candidate, "PWN(/neck/deconv/act/Relu)");
    ASSERT_NE(deconv, nullptr);
    EXPECT_TRUE(differs(*deconv, "lost fusion deconv+relu"));
    const DiffRegion* clone = regionWith(report, candidate, "/head/conv/input_quantizer/QuantizeLinear_clone_2");
    ASSERT_NE(clone, nullptr);
    EXPECT_TRUE(differs(*clone, "standalone Q/DQ layer(s) added"));
}

// With a baseline build the answer comes first: the A100 QAT engine is slower than the FP16 build of the same network
// (1.096 vs 1.017 ms in the two profiles), and its first root cause is the unquantized residual chain. Swapped, the
// FP16 build is the faster one, and what is left to fix there is its FP32 input's reformat, not a Q/DQ placement.
TEST(RealDataDiff, HeadlineSaysTheQatEngineIsSlowerThanFp16AndWhy)
{
    REQUIRE_SHARED();
    Inputs fp16 = loadFiles(a100Resnet("fp16"));
    Inputs qat = loadFiles(a100Resnet("qat"));
    DiffReport report = diffEngines(fp16, qat);
    std::string text = renderDiffText(report, fp16, qat);
    EXPECT_NE(text.find("The candidate is 0.079 ms slower than the baseline (1.096 ms vs 1.017 ms)"), std::string::npos)
        << text;
    ASSERT_FALSE(report.causes.empty());
    EXPECT_EQ(report.causes.front().title.rfind("residual-input-not-quantized", 0), 0u) << report.causes.front().title;
    // The regions a cause owns count for it once: their deltas add up to at most the regions' own.
    double causes = 0.0, regions = 0.0;
    for (const auto& cause : report.causes)
    {
        causes += std::abs(cause.deltaMs);
    }
    for (const auto& region : report.regions)
    {
        regions += region.hasTimes ? std::abs(region.deltaMs) : 0.0;
    }
    EXPECT_LE(causes, regions + 1e-9);

    DiffReport swapped = diffEngines(qat, fp16);
    std::string swappedText = renderDiffText(swapped, qat, fp16);
    EXPECT_NE(swappedText.find("The candidate is 0.079 ms faster than the baseline"), std::string::npos) << swappedText;
    ASSERT_FALSE(swapped.causes.empty());
    EXPECT_EQ(swapped.causes.front().title, "io-reformat");
}

// Issue 36, defect 5: both exports name a node Conv_242, layer4.1.conv2 in -qat and layer4.0.conv2 in -qat-residual.
// Paired by that name, layer4.0's conv2 fell into two regions, one of them "only in the baseline". A name pair whose
// weights differ is not one operation: the conv2 is now in the region of the Add that moved into it.
TEST(RealDataDiff, ANodeNameBothExportsGiveDifferentWeightsDoesNotPairThem)
{
    REQUIRE_SHARED();
    Inputs baseline = loadFiles(a100Resnet("qat"));
    Inputs candidate = loadFiles(a100Resnet("qat-residual"));
    DiffReport report = diffEngines(baseline, candidate);
    const auto regionOf = [&](const std::vector<std::size_t> DiffRegion::*side, const EnginePlan& plan,
                              const std::string& part) -> std::optional<std::size_t>
    {
        for (std::size_t r = 0; r < report.regions.size(); ++r)
        {
            for (std::size_t layer : report.regions[r].*side)
            {
                if (plan.layers[layer].name.find(part) != std::string::npos)
                {
                    return r;
                }
            }
        }
        return std::nullopt;
    };
    for (const char* block : {"layer4.0.conv2.weight", "layer3.0.conv2.weight", "layer2.0.conv2.weight"})
    {
        const auto inBaseline = regionOf(&DiffRegion::baselineLayers, *baseline.engine(), block);
        const auto inCandidate = regionOf(&DiffRegion::candidateLayers, *candidate.engine(), block);
        ASSERT_TRUE(inBaseline && inCandidate) << block;
        EXPECT_EQ(*inBaseline, *inCandidate) << block;
        EXPECT_FALSE(differs(report.regions[*inBaseline], "only in the baseline")) << block;
    }
    // The same pair the other way round keeps its exact split, and the layers a name pairs with equal weights (the
    // stem conv, Conv_9 on both sides) stay aligned by name.
    expectExactSplit(report);
    const auto stem = regionOf(&DiffRegion::baselineLayers, *baseline.engine(), "conv1.weight");
    ASSERT_TRUE(stem);
    EXPECT_EQ(report.regions[*stem].alignment, "onnx-names");
}
