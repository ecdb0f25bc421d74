// The transformer fixtures exported on the device (tests/fixtures/export_transformers.py) through predict and
// diagnose on TensorRT 10: every attention's MatMuls and Softmax in one predicted layer, every standalone Q/DQ the
// simulator still predicts explained, and the recipe and naive Q/DQ placements told apart (what fuses and what the
// attention rules report). Expected counts were read off the exported graphs (the script prints their op histograms).
#include "graph_builder.h"
#include "qdq/analysis.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

struct Predicted
{
    Inputs inputs;
    Prediction prediction;
};

const Predicted& predictedOnTen(const std::string& name)
{
    static std::map<std::string, std::unique_ptr<Predicted>> cache;
    auto& slot = cache[name];
    if (!slot)
    {
        slot = std::make_unique<Predicted>();
        slot->inputs = loadFiles({fixture("transformers/" + name)});
        SimulationOptions options;
        options.trtMajor = 10;
        slot->prediction = predictEngine(*slot->inputs.onnx, options);
    }
    return *slot;
}

class TransformerFixture : public ::testing::TestWithParam<const char*>
{
};

} // namespace

TEST_P(TransformerFixture, EachAttentionIsOneLayerAndEveryStandaloneQdqIsExplained)
{
    const Predicted& predicted = predictedOnTen(GetParam());
    const Prediction& prediction = predicted.prediction;
    for (const auto& attention : prediction.attention)
    {
        const PredictedLayer* scores = layerWith(prediction, attention.scoresMatMul);
        ASSERT_NE(scores, nullptr) << attention.scoresMatMul;
        EXPECT_EQ(scores, layerWith(prediction, attention.softmax)) << attention.softmax;
        EXPECT_EQ(scores, layerWith(prediction, attention.contextMatMul)) << attention.contextMatMul;
    }
    for (const auto& qdq : prediction.qdq)
    {
        if (qdq.fate == PredictedQdq::Fate::kStandalone)
        {
            EXPECT_FALSE(qdq.reason().empty()) << qdq.node;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Exported, TransformerFixture,
                         ::testing::Values("bert-tiny-ort-qdq.onnx", "bert-tiny-qdq-recipe.onnx",
                                           "bert-tiny-qdq-naive.onnx", "vit-tiny-ort-qdq.onnx",
                                           "swin-block-ort-qdq.onnx"));

TEST(TransformerFixtures, BertAttentionsAreFoundInEveryExport)
{
    // Two encoder layers, one attention each (export_transformers.py: layers=2).
    for (const char* name :
         {"bert-tiny-fp32.onnx", "bert-tiny-ort-qdq.onnx", "bert-tiny-qdq-recipe.onnx", "bert-tiny-qdq-naive.onnx"})
    {
        EXPECT_EQ(predictedOnTen(name).prediction.attention.size(), 2u) << name;
    }
}

TEST(TransformerFixtures, RecipePlacementFusesAndNaivePlacementDoesNotWithItsReason)
{
    for (const auto& attention : predictedOnTen("bert-tiny-qdq-recipe.onnx").prediction.attention)
    {
        EXPECT_TRUE(attention.quantized);
        EXPECT_TRUE(attention.fused) << attention.reason;
    }
    for (const auto& attention : predictedOnTen("bert-tiny-qdq-naive.onnx").prediction.attention)
    {
        EXPECT_FALSE(attention.fused);
        EXPECT_FALSE(attention.reason.empty());
    }
}

TEST(TransformerFixtures, AttentionRulesNameTheNaivePlacementOnly)
{
    const Inputs naive = loadFiles({fixture("transformers/bert-tiny-qdq-naive.onnx")});
    const Report naiveReport = diagnose(naive);
    const Inputs recipe = loadFiles({fixture("transformers/bert-tiny-qdq-recipe.onnx")});
    const Report recipeReport = diagnose(recipe);
    const auto count = [](const Report& report, const std::string& rule)
    {
        return std::count_if(report.findings.begin(), report.findings.end(),
                             [&](const Finding& finding) { return finding.rule == rule; });
    };
    // The naive export transposes K after its DequantizeLinear and leaves the Softmax output float.
    EXPECT_GE(count(naiveReport, "attention-operand-not-dequantized"), 2);
    EXPECT_GE(count(naiveReport, "softmax-output-not-quantized"), 2);
    EXPECT_EQ(count(recipeReport, "attention-operand-not-dequantized"), 0);
    EXPECT_EQ(count(recipeReport, "softmax-output-not-quantized"), 0);
}

TEST(TransformerFixtures, SwinWindowAttentionIsFoundThroughItsScoreReshapes)
{
    // torchvision's shifted-window block: Q * K^T, bias Add, Reshape per window, mask Add, Reshape back, Softmax.
    for (const char* name : {"swin-block-fp32.onnx", "swin-block-ort-qdq.onnx"})
    {
        const Prediction& prediction = predictedOnTen(name).prediction;
        ASSERT_EQ(prediction.attention.size(), 1u) << name;
        EXPECT_NE(prediction.attention[0].reason.find("reshapes Q * K^T"), std::string::npos)
            << prediction.attention[0].reason;
    }
    // ONNX Runtime quantizes the scores after each step; the float export has no Q/DQ there.
    const auto scoresFindings = [](const char* name)
    {
        const Inputs inputs = loadFiles({fixture(std::string("transformers/") + name)});
        return findingsOf(diagnose(inputs), "qdq-on-attention-scores").size();
    };
    EXPECT_EQ(scoresFindings("swin-block-ort-qdq.onnx"), 1u);
    EXPECT_EQ(scoresFindings("swin-block-fp32.onnx"), 0u);
}
