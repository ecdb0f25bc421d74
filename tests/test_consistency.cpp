// The consistency check every report runs (include/qdq/consistency.h; the issue "One model of TensorRT"): silent on
// every real input and every fixture, and firing on each of the six kinds of contradiction when one is seeded.

#include "qdq/analysis.h"
#include "qdq/consistency.h"
#include "qdq/load_inputs.h"
#include "qdq/predict.h"
#include "qdq/text_report.h"
#include "tests/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

using namespace qdq;
using namespace qdq::test;

namespace
{

//! The contradictions of the report of these files, in words, "path: message" each.
std::vector<std::string> contradictionsOf(const std::vector<std::filesystem::path>& files)
{
    Inputs inputs = loadFiles(files);
    const Report report = diagnose(inputs);
    std::vector<std::string> found;
    for (const auto& contradiction : report.consistency.contradictions)
    {
        found.push_back(files.front().string() + ": " + contradiction.kind + ": " + contradiction.message);
    }
    return found;
}

std::vector<std::filesystem::path> onnxFilesIn(const std::filesystem::path& folder)
{
    std::vector<std::filesystem::path> files;
    if (!std::filesystem::is_directory(folder))
    {
        return files;
    }
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder))
    {
        if (entry.path().extension() == ".onnx")
        {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

std::size_t countKind(const ConsistencyCheck& check, const std::string& kind)
{
    return static_cast<std::size_t>(std::count_if(check.contradictions.begin(), check.contradictions.end(),
                                                  [&](const Contradiction& c) { return c.kind == kind; }));
}

Finding findingWith(const std::string& rule, EngineClaim claim)
{
    Finding finding;
    finding.rule = rule;
    finding.claims.push_back(std::move(claim));
    return finding;
}

//! A zoo model's report (the predicted engine: no layer list), for seeding.
struct Seeded
{
    Inputs inputs;
    Report report;
    explicit Seeded(const std::string& zooModel)
        : inputs(loadFiles({fixture("zoo/" + zooModel)})), report(diagnose(inputs))
    {
    }
    ConsistencyCheck check() const { return checkConsistency(report, inputs); }
};

} // namespace

TEST(Consistency, EveryFixtureModelsReportHasNoContradiction)
{
    std::size_t models = 0;
    for (const auto& file : onnxFilesIn(fixture("")))
    {
        if (file.string().find("/broken/") != std::string::npos)
        {
            continue; // refused with exit status 2 (test_cli): there is no report to check
        }
        for (const auto& contradiction : contradictionsOf({file}))
        {
            ADD_FAILURE() << contradiction;
        }
        ++models;
    }
    EXPECT_GE(models, 50u);
}

TEST(RealDataConsistency, EveryModelLogAndEngineInSharedHasNoContradiction)
{
    REQUIRE_SHARED();
    std::size_t inputs = 0;
    for (const auto& file : onnxFilesIn(sharedRoot() / "models"))
    {
        for (const auto& contradiction : contradictionsOf({file}))
        {
            ADD_FAILURE() << contradiction;
        }
        ++inputs;
    }
    // Each realdata folder as a user gives it (every artifact in it), and each verbose log alone.
    std::vector<std::string> folders;
    for (const ManifestEntry& entry : manifestEntries())
    {
        if (folders.empty() || folders.back() != entry.folder)
        {
            folders.push_back(entry.folder);
        }
        if (entry.kind == "verbose-log")
        {
            for (const auto& contradiction : contradictionsOf({realdata(entry.path())}))
            {
                ADD_FAILURE() << contradiction;
            }
            ++inputs;
        }
    }
    std::sort(folders.begin(), folders.end());
    folders.erase(std::unique(folders.begin(), folders.end()), folders.end());
    std::size_t refused = 0;
    for (const auto& folder : folders)
    {
        try
        {
            for (const auto& contradiction : contradictionsOf({realdata(folder)}))
            {
                ADD_FAILURE() << contradiction;
            }
            ++inputs;
        }
        catch (const InputError&)
        {
            ++refused; // a folder with two builds' logs is refused as a whole (test_load_inputs); each log ran above
        }
    }
    EXPECT_LT(refused, folders.size());
    EXPECT_GE(inputs, 60u);
}

TEST(Consistency, PredictionOfEveryFixtureModelAgreesWithItsReasons)
{
    for (const auto& file : onnxFilesIn(fixture("zoo")))
    {
        Inputs inputs = loadFiles({file});
        for (int major : {8, 10, 11})
        {
            SimulationOptions options;
            options.trtMajor = major;
            options.typing = major >= 11 ? Typing::kStrong : Typing::kWeak;
            const Prediction prediction = predictEngine(*inputs.onnx, options);
            ConsistencyCheck check;
            checkPredictionConsistency(prediction, check);
            for (const auto& contradiction : check.contradictions)
            {
                ADD_FAILURE() << file << " TensorRT " << major << ": " << contradiction.message;
            }
        }
    }
}

// ---- each kind seeded, beside a near-identical claim that holds ----

TEST(Consistency, SeparateLayersClaimedForNodesThePredictedEngineFusesFires)
{
    Seeded seeded("resnet18-ort-int8sym.onnx");
    ASSERT_TRUE(seeded.check().contradictions.empty());
    // A quantized Conv layer of the prediction and the layer after it.
    const PredictedLayer* fused = nullptr;
    const PredictedLayer* other = nullptr;
    for (const auto& layer : seeded.report.prediction.layers)
    {
        const bool conv = layer.role == "quantized-Conv" && layer.onnxNodes.size() >= 2;
        if (conv && fused == nullptr)
        {
            fused = &layer;
        }
        else if (conv && other == nullptr)
        {
            other = &layer;
        }
    }
    ASSERT_NE(fused, nullptr);
    ASSERT_NE(other, nullptr);
    const std::string a(fused->onnxNodes.front()), b(fused->onnxNodes.back()), c(other->onnxNodes.front());
    seeded.report.findings.push_back(
        findingWith("qdq-between-conv-and-add", {EngineClaim::Kind::kSeparateLayers, {a, c}}));
    EXPECT_TRUE(seeded.check().contradictions.empty()) << "nodes of two layers are separate";
    seeded.report.findings.push_back(
        findingWith("qdq-between-conv-and-add", {EngineClaim::Kind::kSeparateLayers, {a, b}}));
    const ConsistencyCheck check = seeded.check();
    ASSERT_EQ(countKind(check, "engine-structure"), 1u);
    EXPECT_NE(check.contradictions[0].message.find(a), std::string::npos) << check.contradictions[0].message;
    EXPECT_NE(check.contradictions[0].message.find(b), std::string::npos) << check.contradictions[0].message;
    EXPECT_EQ(check.contradictions[0].findings, std::vector<std::size_t>{seeded.report.findings.size() - 1});
}

TEST(Consistency, FloatClaimedForAMatMulTheMyelinRegionRunsQuantizedFires)
{
    Seeded seeded("deit-tiny-distilled-d2-ort-int8sym.onnx");
    ASSERT_TRUE(seeded.check().contradictions.empty());
    const auto& prediction = seeded.report.prediction;
    ASSERT_FALSE(prediction.myelinQuantizedMatMuls.empty());
    // A node the Myelin region runs in float: one of its nodes that is not a quantized MatMul (a Softmax, a
    // LayerNorm's ReduceMean).
    const auto& quantized = prediction.myelinQuantizedMatMuls;
    std::string floatNode;
    for (const auto& layer : prediction.layers)
    {
        for (const auto& node : layer.onnxNodes)
        {
            if (layer.kind == "Myelin" && floatNode.empty() &&
                std::find(quantized.begin(), quantized.end(), node) == quantized.end())
            {
                floatNode = std::string(node);
            }
        }
    }
    ASSERT_FALSE(floatNode.empty());
    seeded.report.findings.push_back(findingWith("fp32-island", {EngineClaim::Kind::kRunsFloat, {floatNode}}));
    EXPECT_TRUE(seeded.check().contradictions.empty());
    seeded.report.findings.push_back(findingWith(
        "fp32-island", {EngineClaim::Kind::kRunsFloat, {std::string(prediction.myelinQuantizedMatMuls.front())}}));
    EXPECT_EQ(countKind(seeded.check(), "precision"), 1u);
}

TEST(Consistency, QdqFusedWithAPartnerInAnotherLayerFires)
{
    Seeded seeded("resnet18-ort-int8sym.onnx");
    auto& qdq = seeded.report.prediction.qdq;
    auto fused = std::find_if(qdq.begin(), qdq.end(),
                              [](const PredictedQdq& q)
                              { return q.fate == PredictedQdq::Fate::kFusedIntoConsumer && !q.partner.empty(); });
    ASSERT_NE(fused, qdq.end());
    ASSERT_EQ(countKind(seeded.check(), "qdq-fate"), 0u);
    // Its partner moved to a node of another layer (the last layer's first node).
    const auto& last = seeded.report.prediction.layers.back();
    ASSERT_FALSE(last.onnxNodes.empty());
    ASSERT_EQ(last.nodeIndices.size(), last.onnxNodes.size());
    fused->partner = last.onnxNodes.front();
    fused->partnerIndex = last.nodeIndices.front();
    EXPECT_EQ(countKind(seeded.check(), "qdq-fate"), 1u);
    // The same partner known by name only (the check then looks it up by name).
    fused->partnerIndex = PredictedQdq::kNoNode;
    EXPECT_EQ(countKind(seeded.check(), "qdq-fate"), 1u);
}

TEST(Consistency, FindingsThatFuseAndKeepApartTheSamePairFire)
{
    Seeded seeded("efficientnet-b0-w0.5-d0.5-ort-int8sym.onnx");
    ASSERT_TRUE(seeded.check().contradictions.empty());
    seeded.report.findings.push_back(
        findingWith("qdq-inside-conv-epilogue", {EngineClaim::Kind::kFuseOnceEdited, {"conv_dw", "act_dw"}}));
    seeded.report.findings.push_back(
        findingWith("depthwise-act-not-fused", {EngineClaim::Kind::kKeepApart, {"conv_other", "act_dw"}}));
    EXPECT_TRUE(seeded.check().contradictions.empty()) << "another pair";
    seeded.report.findings.push_back(
        findingWith("depthwise-act-not-fused", {EngineClaim::Kind::kKeepApart, {"act_dw", "conv_dw"}}));
    const ConsistencyCheck check = seeded.check();
    ASSERT_EQ(countKind(check, "advice"), 1u);
    EXPECT_EQ(check.contradictions[0].findings.size(), 2u);
}

TEST(Consistency, StandaloneClaimedForAQdqTheEngineHasNoLayerForFires)
{
    Seeded seeded("resnet18-ort-uint8.onnx");
    auto& prediction = seeded.report.prediction;
    const auto standalone =
        std::find_if(prediction.qdq.begin(), prediction.qdq.end(),
                     [](const PredictedQdq& q) { return q.fate == PredictedQdq::Fate::kStandalone; });
    ASSERT_NE(standalone, prediction.qdq.end()) << "the uint8 export keeps a standalone Q/DQ";
    const std::string node(standalone->node);
    seeded.report.findings.push_back(findingWith("standalone-qdq", {EngineClaim::Kind::kStandaloneQdq, {node}}));
    EXPECT_TRUE(seeded.check().contradictions.empty());
    // The same node once no layer runs it (as a dead or folded node is).
    for (auto& layer : prediction.layers)
    {
        layer.onnxNodes.erase(std::remove(layer.onnxNodes.begin(), layer.onnxNodes.end(), node), layer.onnxNodes.end());
    }
    EXPECT_EQ(countKind(seeded.check(), "dead-node"), 1u);
}

TEST(Consistency, AttentionNotFusedWithoutAReasonFires)
{
    Seeded seeded("deit-tiny-distilled-d2-ort-int8sym.onnx");
    auto& attention = seeded.report.prediction.attention;
    ASSERT_FALSE(attention.empty());
    ASSERT_EQ(countKind(seeded.check(), "attention"), 0u);
    for (auto& block : attention)
    {
        EXPECT_EQ(block.fused, block.notFusedBecause.empty()) << block.reason;
    }
    attention[0].fused = !attention[0].fused;
    EXPECT_EQ(countKind(seeded.check(), "attention"), 1u);
}

TEST(Consistency, TheReportsShowTheCheck)
{
    Inputs inputs = loadFiles({fixture("zoo/resnet18-ort-int8sym.onnx")});
    const Report report = diagnose(inputs);
    const std::string json = renderReportJson(report, inputs);
    EXPECT_NE(json.find("\"consistency\""), std::string::npos);
    EXPECT_NE(json.find("\"contradictions\": []"), std::string::npos);
    TextReportOptions details;
    details.details = true;
    EXPECT_NE(renderReportText(report, inputs, details).find("Consistency: "), std::string::npos);
    const Prediction prediction = predictEngine(*inputs.onnx, report.buildMode);
    EXPECT_NE(renderPredictionText(prediction, *inputs.onnx, "m.onnx").find("Consistency: "), std::string::npos);
    EXPECT_NE(renderPredictionJson(prediction, *inputs.onnx, "m.onnx").find("\"consistency\""), std::string::npos);
}
