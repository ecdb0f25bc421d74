// Rules take what TensorRT does from the report's engine (rules/engine_view.h): on a model alone, the predicted one.
// The transformer of ../shared/models (deit-tiny under ONNX Runtime's quantizer, whose body the predicted TensorRT 10
// engine runs as Myelin regions) no longer gets "runs X and the Add as separate layers" for nodes the prediction runs
// in one layer, nor "the DequantizeLinear nodes run as standalone layers" where it runs none so; a CNN graph on 8.4,
// where the prediction keeps them apart, still gets both findings.
#include "graph_builder.h"
#include "test_support.h"

#include "qdq/predict.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

AnalysisOptions onTensorRt(const std::string& version)
{
    AnalysisOptions options;
    options.buildMode.trtVersion = version;
    return options;
}

//! Whether the predicted engine of report runs nodes a and b in one layer.
bool predictedTogether(const Report& report, const std::string& a, const std::string& b)
{
    const PredictedLayer* first = layerWith(report.prediction, a);
    return first != nullptr && first == layerWith(report.prediction, b);
}

} // namespace

TEST(RealDataEngineView, TransformerFindingsAgreeWithThePredictedMyelinRegions)
{
    REQUIRE_SHARED();
    const OnnxGraph graph = readOnnx(sharedModel("deit-tiny-ort-qdq.onnx").string());
    const Report report = runDiagnose(graph, std::nullopt, std::nullopt, onTensorRt("10"));
    for (const Finding& finding : findingsOf(report, "qdq-between-conv-and-add"))
    {
        ASSERT_GE(finding.onnxNodes.size(), 2u);
        EXPECT_FALSE(predictedTogether(report, finding.onnxNodes[0], finding.onnxNodes[1]))
            << finding.message << ": the predicted engine runs them in one layer";
    }
    for (const Finding& finding : findingsOf(report, "int8-op-without-output-q"))
    {
        bool anyStandalone = false;
        for (std::size_t i = 1; i < finding.onnxNodes.size(); ++i)
        {
            const PredictedQdq* fate = report.prediction.find(finding.onnxNodes[i]);
            anyStandalone = anyStandalone || (fate != nullptr && fate->fate == PredictedQdq::Fate::kStandalone);
        }
        EXPECT_TRUE(anyStandalone) << finding.message << ": the prediction runs none of its DQs standalone";
    }
    // fp32-island names no MatMul that a predicted Myelin region runs in the quantized type.
    ASSERT_FALSE(report.prediction.myelinQuantizedMatMuls.empty());
    for (const Finding& finding : findingsOf(report, "fp32-island"))
    {
        for (const auto& node : finding.onnxNodes)
        {
            EXPECT_EQ(std::count(report.prediction.myelinQuantizedMatMuls.begin(),
                                 report.prediction.myelinQuantizedMatMuls.end(), node),
                      0)
                << node << " is predicted quantized";
        }
    }
}

TEST(EngineView, ACnnOnTensorRtEightStillGetsBothFindings)
{
    // x -> Q/DQ -> conv -> Q/DQ -> Add <- Q/DQ <- x : the conv-side Q/DQ keeps the Add out of the conv.
    GraphBuilder g;
    std::string x = g.input("x", {1, 8, 16, 16});
    std::string c = g.node("Conv", "/c/Conv", {g.qdq("/x_q", x), g.quantizedWeight("c", 8, 8)});
    std::string add = g.node("Add", "/add/Add", {g.qdq("/c_q", c), g.qdq("/skip_q", x)});
    // DQ-fed Mul with no Q after it: its DQs run standalone on 8.4.
    std::string mul = g.node("Mul", "/mul/Mul", {g.qdq("/m_q", add), g.qdq("/m2_q", x)});
    g.output(mul);
    const Report report = runDiagnose(g.build(), std::nullopt, std::nullopt, onTensorRt("8.4"));
    EXPECT_EQ(findingsOf(report, "qdq-between-conv-and-add").size(), 1u);
    EXPECT_FALSE(predictedTogether(report, "/add/Add", "/c/Conv"));
    EXPECT_EQ(findingsOf(report, "int8-op-without-output-q").size(), 1u);
}
