// predict on TensorRT 11: where the layer structure depends on the GPU (src/simulation/gpu_dependent_structure.h),
// marked as a guess; silent for TensorRT 10 and for a graph without convolutions or pooling.
#include "graph_builder.h"
#include "qdq/predict.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace qdq;
using namespace qdq::test;

namespace
{

OnnxGraph cnnGraph(bool withConv)
{
    GraphBuilder g;
    std::string x = g.input("x", {1, 1, 28, 28});
    if (withConv)
    {
        x = g.node("Conv", "/conv/Conv", {x, g.weight("/conv/weight", {4, 1, 3, 3}, 0.1f)});
        x = g.node("Relu", "/conv/Relu", {x});
        x = g.node("Flatten", "/flatten/Flatten", {x});
        x = g.node("MatMul", "/fc/MatMul", {x, g.weight("/fc/weight", {2704, 10}, 0.1f)});
    }
    else
    {
        x = g.node("Flatten", "/flatten/Flatten", {x});
        x = g.node("MatMul", "/fc/MatMul", {x, g.weight("/fc/weight", {784, 10}, 0.1f)});
    }
    g.output(x, {1, 10});
    return g.build();
}

std::string predictText(const OnnxGraph& graph, const BuildModeRequest& request)
{
    const Prediction prediction = predictEngine(graph, resolveBuildMode(Inputs{}, request));
    return renderPredictionText(prediction, graph, "model.onnx");
}

} // namespace

TEST(PredictGpuStructure, ElevenSaysTheStructureDependsOnTheGpuAsAGuess)
{
    const OnnxGraph graph = cnnGraph(true);
    const std::string text = predictText(graph, BuildModeRequest{"11", std::nullopt, ""});
    const auto at = text.find("Layer structure: guess:");
    ASSERT_NE(at, std::string::npos) << text;
    const std::string line = text.substr(at, text.find('\n', at) - at);
    EXPECT_NE(line.find("B200"), std::string::npos);
    EXPECT_NE(line.find("H100"), std::string::npos);
    EXPECT_NE(line.find("--gpu"), std::string::npos) << line; // no GPU given: says how to give it
    const Prediction prediction = predictEngine(graph, resolveBuildMode(Inputs{}, {"11", std::nullopt, ""}));
    const auto json = nlohmann::json::parse(renderPredictionJson(prediction, graph, "model.onnx"));
    ASSERT_TRUE(json.contains("gpu_dependent_structure"));
    EXPECT_EQ(json["gpu_dependent_structure"].get<std::string>().rfind("guess:", 0), 0u);
}

TEST(PredictGpuStructure, TheGpuPointsToOneOfTheTwoForms)
{
    const OnnxGraph graph = cnnGraph(true);
    EXPECT_NE(predictText(graph, BuildModeRequest{"11", std::nullopt, "B200"}).find("expect the single Myelin graph"),
              std::string::npos);
    EXPECT_NE(predictText(graph, BuildModeRequest{"11", std::nullopt, "H100"}).find("follow that build"),
              std::string::npos);
}

TEST(PredictGpuStructure, SilentOnTenAndWithoutConvolutions)
{
    EXPECT_EQ(predictText(cnnGraph(true), BuildModeRequest{"10.16", Typing::kStrong, ""}).find("Layer structure:"),
              std::string::npos);
    EXPECT_EQ(predictText(cnnGraph(false), BuildModeRequest{"11", std::nullopt, ""}).find("Layer structure:"),
              std::string::npos);
}
