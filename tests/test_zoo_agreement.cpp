// The project's own zoo (tests/fixtures/zoo: ONNX Runtime QDQ exports of torchvision and timm architectures, made by
// tools/zoo on the device): diagnose, predict and fix agree on every model (the issue "One model of TensorRT"). For
// each model: its report contradicts neither its engine nor itself; the prediction `fix` shows as "before" is the one
// `predict` makes of the model; the fixed model reads back, passes the ONNX checker, and its own report is
// consistent, and `predict` of the fixed model is what `fix` said it buys.

#include "qdq/analysis.h"
#include "qdq/fix.h"
#include "qdq/load_inputs.h"
#include "qdq/predict.h"
#include "qdq/readers.h"
#include "tests/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using namespace qdq;
using namespace qdq::test;

namespace
{

std::vector<std::filesystem::path> zooModels()
{
    std::vector<std::filesystem::path> models;
    for (const auto& entry : std::filesystem::directory_iterator(fixture("zoo")))
    {
        if (entry.path().extension() == ".onnx")
        {
            models.push_back(entry.path());
        }
    }
    std::sort(models.begin(), models.end());
    return models;
}

//! The prediction summary `predict` prints for a model, under the default build mode (as `fix` predicts).
PredictionSummary predictedSummary(const std::filesystem::path& model)
{
    const OnnxGraph graph = readOnnx(model.string());
    const Prediction prediction = predictEngine(graph, SimulationOptions{});
    return summarizePrediction(prediction, graph);
}

void expectSameSummary(const PredictionSummary& a, const PredictionSummary& b, const std::string& what)
{
    EXPECT_EQ(a.layers, b.layers) << what;
    EXPECT_EQ(a.standaloneQdq, b.standaloneQdq) << what;
    EXPECT_EQ(a.requantize, b.requantize) << what;
    EXPECT_EQ(a.reformats, b.reformats) << what;
    EXPECT_EQ(a.convWithResidualAdd, b.convWithResidualAdd) << what;
    EXPECT_EQ(a.convActPool, b.convActPool) << what;
}

std::vector<std::string> contradictions(const std::filesystem::path& model)
{
    Inputs inputs = loadFiles({model});
    const Report report = diagnose(inputs);
    std::vector<std::string> found;
    for (const auto& contradiction : report.consistency.contradictions)
    {
        found.push_back(contradiction.kind + ": " + contradiction.message);
    }
    return found;
}

} // namespace

TEST(ZooAgreement, DiagnosePredictAndFixAgreeOnEveryModel)
{
    const auto models = zooModels();
    ASSERT_GE(models.size(), 40u);
    std::size_t fixed = 0;
    for (const auto& model : models)
    {
        SCOPED_TRACE(model.filename().string());
        const auto output = tempDir("zoo-agreement") / model.filename();
        std::filesystem::remove(output);
        InputFiles files;
        files.files = {model.string()};
        FixOptions options;
        options.output = output.string();
        const FixReport report = runFix(files, options, Limits{});
        expectSameSummary(report.before.predicted, predictedSummary(model), "fix's 'before' against predict");
        for (const auto& contradiction : contradictions(model))
        {
            ADD_FAILURE() << "the model's report: " << contradiction;
        }
        if (!report.written || report.unchanged)
        {
            continue;
        }
        ++fixed;
        EXPECT_TRUE(report.checker == "passed" ||
                    report.checker.find("the input model fails the same way") != std::string::npos)
            << report.checker;
        expectSameSummary(report.after.predicted, predictedSummary(output), "fix's 'after' against predict");
        for (const auto& contradiction : contradictions(output))
        {
            ADD_FAILURE() << "the fixed model's report: " << contradiction;
        }
        // The fix never adds standalone Q/DQ layers the model did not have.
        EXPECT_LE(report.after.predicted.standaloneQdq, report.before.predicted.standaloneQdq);
    }
    EXPECT_GE(fixed, 20u) << "most zoo models have something to fix";
}
