// The doubtful fusions of docs/simulator.md, settled from the sources there or marked as guesses: a lone
// `DQ -> activation -> Q` is one quantized PointWise layer (marked likely), and nodes that reach no network output
// build no layer (TensorRT's dead-layer removal). Each with a near-identical graph that must not change.
#include "graph_builder.h"
#include "test_support.h"

#include "qdq/predict.h"

#include <gtest/gtest.h>

using namespace qdq;
using namespace qdq::test;

namespace
{

SimulationOptions tensorRt10()
{
    SimulationOptions options;
    options.trtMajor = 10;
    options.trtMinor = 8;
    options.fp16 = true;
    return options;
}

//! in -> Q/DQ -> activation [-> Q/DQ] -> conv
OnnxGraph loneActivation(const std::string& op, bool quantizedAfter)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x", {1, 8, 16, 16}));
    std::string a = g.node(op, "/act/" + op, {x});
    std::string next = quantizedAfter ? g.qdq("/out_q", a) : a;
    std::string c = g.node("Conv", "/c/Conv",
                           {next, quantizedAfter ? g.quantizedWeight("c", 8, 8) : g.weight("c.w", {8, 8, 3, 3})});
    g.output(c);
    return g.build();
}

} // namespace

TEST(SimulatorDoubtful, ALoneActivationBetweenADequantizeAndAQuantizeIsOneQuantizedLayerMarkedLikely)
{
    for (const std::string op : {"Relu", "Sigmoid", "HardSwish", "Clip", "LeakyRelu"})
    {
        const OnnxGraph predictionGraph = loneActivation(op, true);
        const Prediction prediction = predictEngine(predictionGraph, tensorRt10());
        const PredictedLayer* act = layerWith(prediction, "/act/" + op);
        ASSERT_NE(act, nullptr) << op;
        EXPECT_EQ(act->kind, "PointWise") << op;
        EXPECT_EQ(act->inputPrecision, "INT8") << op;
        EXPECT_EQ(act->outputPrecision, "INT8") << op;
        EXPECT_NE(act->guess.find("likely"), std::string::npos) << op << ": " << act->guess;
        // The DQ before it and the Q after it run in its layer: no standalone Q/DQ layer between them.
        EXPECT_EQ(layerWith(prediction, "/in_q/DequantizeLinear"), act) << op;
        EXPECT_EQ(layerWith(prediction, "/out_q/QuantizeLinear"), act) << op;
        const PredictedQdq* dq = prediction.find("/in_q/DequantizeLinear");
        ASSERT_NE(dq, nullptr);
        EXPECT_EQ(dq->fate, PredictedQdq::Fate::kFusedIntoConsumer) << op;
        const PredictedQdq* q = prediction.find("/out_q/QuantizeLinear");
        ASSERT_NE(q, nullptr);
        EXPECT_EQ(q->fate, PredictedQdq::Fate::kFusedIntoProducer) << op;
    }
}

TEST(SimulatorDoubtful, AnActivationWithoutAQuantizeAfterItStaysFloat)
{
    const OnnxGraph predictionGraph = loneActivation("Relu", false);
    const Prediction prediction = predictEngine(predictionGraph, tensorRt10());
    const PredictedLayer* act = layerWith(prediction, "/act/Relu");
    ASSERT_NE(act, nullptr);
    EXPECT_NE(act->outputPrecision, "INT8");
    const PredictedQdq* dq = prediction.find("/in_q/DequantizeLinear");
    ASSERT_NE(dq, nullptr);
    EXPECT_NE(dq->fate, PredictedQdq::Fate::kFusedIntoConsumer);
}

TEST(SimulatorDoubtful, AnActivationAfterAConvIsStillItsEpilogue)
{
    // conv0 -> Relu -> Q/DQ -> conv1: the Relu is conv0's epilogue and the Q fuses into conv0 (not into the Relu).
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x", {1, 8, 16, 16}));
    std::string c0 = g.node("Conv", "/c0/Conv", {x, g.quantizedWeight("c0", 8, 8)});
    std::string r = g.node("Relu", "/r/Relu", {c0});
    std::string c1 = g.node("Conv", "/c1/Conv", {g.qdq("/c1/in_q", r), g.quantizedWeight("c1", 8, 8)});
    g.output(c1);
    const OnnxGraph graph = g.build();
    const Prediction prediction = predictEngine(graph, tensorRt10());
    const PredictedLayer* conv = layerWith(prediction, "/c0/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(layerWith(prediction, "/r/Relu"), conv);
    EXPECT_EQ(conv->outputPrecision, "INT8");
    EXPECT_TRUE(conv->guess.find("likely: TensorRT fuses DQ") == std::string::npos) << conv->guess;
}

//! in -> Q/DQ -> conv -> output, and a Q/DQ -> Relu branch off the conv that reaches no output (or does).
OnnxGraph deadBranch(bool branchIsAnOutput)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x", {1, 8, 16, 16}));
    std::string c = g.node("Conv", "/c/Conv", {x, g.quantizedWeight("c", 8, 8)});
    std::string branch = g.node("Relu", "/dead/Relu", {g.qdq("/dead_q", c)});
    g.output(c);
    if (branchIsAnOutput)
    {
        g.output(branch);
    }
    return g.build();
}

TEST(SimulatorDoubtful, NodesThatReachNoNetworkOutputBuildNoLayer)
{
    const OnnxGraph predictionGraph = deadBranch(false);
    const Prediction prediction = predictEngine(predictionGraph, tensorRt10());
    EXPECT_EQ(layerWith(prediction, "/dead/Relu"), nullptr);
    EXPECT_EQ(layerWith(prediction, "/dead_q/QuantizeLinear"), nullptr);
    for (const char* node : {"/dead_q/QuantizeLinear", "/dead_q/DequantizeLinear"})
    {
        const PredictedQdq* qdq = prediction.find(node);
        ASSERT_NE(qdq, nullptr) << node;
        EXPECT_EQ(qdq->fate, PredictedQdq::Fate::kFolded) << node;
        EXPECT_NE(qdq->reason().find("no network output"), std::string::npos) << qdq->reason();
    }
    EXPECT_NE(layerWith(prediction, "/c/Conv"), nullptr);
}

TEST(SimulatorDoubtful, ABranchThatIsANetworkOutputKeepsItsLayers)
{
    const OnnxGraph predictionGraph = deadBranch(true);
    const Prediction prediction = predictEngine(predictionGraph, tensorRt10());
    EXPECT_NE(layerWith(prediction, "/dead/Relu"), nullptr);
    const PredictedQdq* q = prediction.find("/dead_q/QuantizeLinear");
    ASSERT_NE(q, nullptr);
    EXPECT_NE(q->fate, PredictedQdq::Fate::kFolded);
}

namespace
{

//! x -> Q/DQ -> conv (group 8 = depthwise, or 1) [-> Q/DQ] -> Sigmoid, Mul (a SiLU) -> output
OnnxGraph convSilu(bool depthwise, bool pairBetween)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x", {1, 8, 16, 16}));
    std::string c = g.node("Conv", "/c/Conv", {x, g.quantizedWeight("c", 8, depthwise ? 1 : 8)});
    if (depthwise)
    {
        g.intAttribute("/c/Conv", "group", 8);
    }
    std::string in = pairBetween ? g.qdq("/c_q", c) : c;
    std::string gate = g.node("Sigmoid", "/act/Sigmoid", {in});
    std::string mul = g.node("Mul", "/act/Mul", {in, gate});
    g.output(mul);
    return g.build();
}

} // namespace

TEST(SimulatorDoubtful, ADepthwiseConvWithASiluIsFusedAsAGuess)
{
    const OnnxGraph depthwiseGraph = convSilu(true, false);
    const Prediction depthwise = predictEngine(depthwiseGraph, tensorRt10());
    const PredictedLayer* conv = layerWith(depthwise, "/c/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(layerWith(depthwise, "/act/Mul"), conv);
    EXPECT_NE(conv->guess.find("#3205"), std::string::npos) << conv->guess;
    const OnnxGraph regularGraph = convSilu(false, false);
    const Prediction regular = predictEngine(regularGraph, tensorRt10());
    ASSERT_NE(layerWith(regular, "/c/Conv"), nullptr);
    EXPECT_EQ(layerWith(regular, "/c/Conv")->guess.find("#3205"), std::string::npos);
}

TEST(SimulatorDoubtful, QdqInsideConvEpilogueLeavesADepthwiseSiluAlone)
{
    const Report depthwise = runDiagnose(convSilu(true, true), std::nullopt);
    EXPECT_TRUE(findingsOf(depthwise, "qdq-inside-conv-epilogue").empty());
    const Report regular = runDiagnose(convSilu(false, true), std::nullopt);
    EXPECT_EQ(findingsOf(regular, "qdq-inside-conv-epilogue").size(), 1u);
}

namespace
{

//! ResNet's downsample block: in -> Q/DQ -> conv2 and -> Q/DQ -> downsample conv, Add(conv2, downsample), Q/DQ, conv.
//! With residualQuantized the downsample conv's output goes through its own Q/DQ before the Add (the -qat-residual
//! recipe); without it both Add inputs come straight from quantized convs (the -qat recipe).
OnnxGraph downsampleBlock(bool residualQuantized)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("x", {1, 8, 16, 16}));
    std::string main = g.node("Conv", "/conv2/Conv", {x, g.quantizedWeight("w2", 8, 8)});
    std::string side = g.node("Conv", "/down/Conv", {x, g.quantizedWeight("wd", 8, 8)});
    if (residualQuantized)
    {
        side = g.qdq("/res_q", side);
    }
    std::string sum = g.node("Add", "/block/Add", {side, main});
    std::string next = g.node("Conv", "/next/Conv", {g.qdq("/sum_q", sum), g.quantizedWeight("w3", 8, 8)});
    g.output(next);
    return g.build();
}

} // namespace

// Defect 6 of the issue "One model of TensorRT": the Add fuses into one of the two convs; the other conv's output is
// the residual input, float without a Q/DQ, and it sets the fused layer's output precision (reference 1.4), so the
// fused Conv+Add writes float and the Q after it is a layer of its own (the real -qat engine's Add_97 and
// QuantizeLinear_101).
TEST(SimulatorDoubtful, AConvAddWhoseResidualComesFromAnUnquantizedConvOutputWritesFloat)
{
    const OnnxGraph graph = downsampleBlock(false);
    const Prediction prediction = predictEngine(graph, tensorRt10());
    const PredictedLayer* fused = layerWith(prediction, "/block/Add");
    ASSERT_NE(fused, nullptr);
    EXPECT_EQ(fused->kind, "CaskConvolution");
    EXPECT_FALSE(fused->int8Output);
    EXPECT_EQ(fused->outputPrecision, "FP16");
    const PredictedQdq* q = prediction.find("/sum_q/QuantizeLinear");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->fate, PredictedQdq::Fate::kStandalone) << q->reason();
}

TEST(SimulatorDoubtful, AConvAddWhoseResidualIsDequantizedWritesInt8)
{
    const OnnxGraph graph = downsampleBlock(true);
    const Prediction prediction = predictEngine(graph, tensorRt10());
    const PredictedLayer* fused = layerWith(prediction, "/block/Add");
    ASSERT_NE(fused, nullptr);
    EXPECT_EQ(fused->kind, "CaskConvolution");
    EXPECT_TRUE(fused->int8Output);
    const PredictedQdq* q = prediction.find("/sum_q/QuantizeLinear");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->fate, PredictedQdq::Fate::kFusedIntoProducer) << q->reason();
}
