// A conv's bias and scale by constants (Keras' BatchNormalization exported as Mul and Add, the depthwise CNN of
// ../shared/calibration) are its epilogue for every part of qdq-doctor: the weighted-layers pass fuses them
// (Convolution + Scale), the Q/DQ propagation lets the Q after them fuse into the conv, and int8-conv-float-output
// reads the conv's output where the engine's conv layer ends. Each case beside a near-identical one that must differ.
#include "test_support.h"

#include "graph_builder.h"
#include "qdq/predict.h"

#include <gtest/gtest.h>

using namespace qdq;
using namespace qdq::test;

namespace
{

//! Q/DQ -> Conv -> Mul(c) -> Add(c) -> Relu -> Q/DQ -> Conv; with fanOut, a Sigmoid reads the conv's output too (a
//! float reader: the conv must write it in float).
OnnxGraph convScaleBias(bool fanOut)
{
    GraphBuilder g;
    const std::string x = g.qdq("/in", g.input("x", {1, 4, 8, 8}));
    const std::string conv = g.node("Conv", "/c1", {x, g.quantizedWeight("/w1", 4, 4, 1)});
    const std::string mul = g.node("Mul", "/bn_mul", {conv, g.weight("bn_scale", {4, 1, 1}, 0.5f)});
    const std::string add = g.node("Add", "/bn_add", {mul, g.weight("bn_shift", {4, 1, 1}, 0.1f)});
    const std::string relu = g.qdq("/act", g.node("Relu", "/relu", {add}));
    g.output(g.node("Conv", "/c2", {relu, g.quantizedWeight("/w2", 4, 4, 1)}), {1, 4, 8, 8});
    if (fanOut)
    {
        g.output(g.node("Sigmoid", "/side", {conv}), {1, 4, 8, 8});
    }
    return g.build();
}

const PredictedQdq* fateOf(const Prediction& prediction, std::string_view node)
{
    for (const auto& fate : prediction.qdq)
    {
        if (fate.node == node)
        {
            return &fate;
        }
    }
    return nullptr;
}

} // namespace

TEST(ScaleEpilogue, TheQAfterAConvsScaleAndBiasFusesIntoTheConv)
{
    const OnnxGraph graph = convScaleBias(false);
    const Prediction prediction = predictEngine(graph);
    const PredictedQdq* q = fateOf(prediction, "/act/QuantizeLinear");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->fate, PredictedQdq::Fate::kFusedIntoProducer) << q->reason();
    EXPECT_EQ(q->partner, "/c1");
    const PredictedLayer* layer = layerWith(prediction, "/bn_add");
    ASSERT_NE(layer, nullptr);
    EXPECT_EQ(layer, layerWith(prediction, "/c1"));
    EXPECT_TRUE(layer->int8Output);
    // And the rule reads the conv's output where that layer ends: its INT8 output is quantized.
    const Report report = runDiagnose(graph, std::nullopt);
    EXPECT_FALSE(anyNames(findingsOf(report, "int8-conv-float-output"), "/c1"));
}

// Near-identical: a float Sigmoid reads the conv's output too: the conv writes float and the Q after the Relu cannot
// move into it.
TEST(ScaleEpilogue, AConvOutputReadInFloatKeepsTheQApart)
{
    const OnnxGraph graph = convScaleBias(true);
    const Prediction prediction = predictEngine(graph);
    const PredictedQdq* q = fateOf(prediction, "/act/QuantizeLinear");
    ASSERT_NE(q, nullptr);
    EXPECT_NE(q->fate, PredictedQdq::Fate::kFusedIntoProducer) << q->reason();
}

// Near-identical for the rule: with no Q after the Relu, the conv runs INT8-in / float-out and the rule says so.
TEST(ScaleEpilogue, WithoutAQAfterTheEpilogueTheRuleStillFires)
{
    GraphBuilder g;
    const std::string x = g.qdq("/in", g.input("x", {1, 4, 8, 8}));
    const std::string conv = g.node("Conv", "/c1", {x, g.quantizedWeight("/w1", 4, 4, 1)});
    const std::string mul = g.node("Mul", "/bn_mul", {conv, g.weight("bn_scale", {4, 1, 1}, 0.5f)});
    const std::string add = g.node("Add", "/bn_add", {mul, g.weight("bn_shift", {4, 1, 1}, 0.1f)});
    const std::string relu = g.node("Relu", "/relu", {add});
    g.output(g.node("Sigmoid", "/head", {relu}), {1, 4, 8, 8});
    const Report report = runDiagnose(g.build(), std::nullopt);
    EXPECT_TRUE(anyNames(findingsOf(report, "int8-conv-float-output"), "/c1"));
}
