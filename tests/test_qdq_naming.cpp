// Q/DQ nodes recognized by name when no model is at hand: the naming of every common exporter (PyTorch,
// pytorch-quantization, NVIDIA Model Optimizer, ONNX Runtime quantize_static, tf2onnx, PaddlePaddle / Paddle2ONNX),
// with TensorRT's _clone_N / _cpy suffixes, counted in the accounting; names that merely contain "quant" are not Q/DQ.
// With a model, the op type decides whatever the name says.
#include "graph_builder.h"
#include "qdq/layer_names.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

constexpr const char* kFp32 = "Row major linear FP32";
constexpr const char* kInt8 = "Row major Int8 format";

//! One exporter's names for: an activation Quantize, a weight initializer and its quantizer (as TensorRT names a
//! conv with folded weights), the conv itself, an output Dequantize, and a name that merely contains "quant".
struct Naming
{
    const char* exporter;
    const char* quantize;
    const char* weight;
    const char* weightQuantizer;
    const char* conv;
    const char* dequantize;
    const char* nearMiss;
};

const std::vector<Naming>& namings()
{
    static const std::vector<Naming> kNamings = {
        {"PyTorch (dynamo-style paths)", "/conv1/input_quant/QuantizeLinear", "conv1.weight",
         "/conv1/weight_quant/QuantizeLinear", "/conv1/Conv", "/head/output_quant/DequantizeLinear", "/quant/Conv"},
        {"PyTorch (legacy counters)", "QuantizeLinear_2", "conv1.weight", "QuantizeLinear_7", "Conv_9",
         "DequantizeLinear_20", "quantized_conv_3"},
        {"pytorch-quantization", "/backbone/conv1/_input_quantizer/QuantizeLinear", "backbone.conv1.weight",
         "/backbone/conv1/_weight_quantizer/QuantizeLinear", "/backbone/conv1/Conv",
         "/head/_output_quantizer/DequantizeLinear", "/backbone/conv1/_input_quantizer/Constant"},
        {"TensorRT 8.0 scale nodes", "QuantizeLinear_2_quantize_scale_node", "conv1.weight",
         "QuantizeLinear_7_quantize_scale_node", "Conv_9", "DequantizeLinear_20_dequantize_scale_node",
         "quantize_scale_conv_4"},
        {"NVIDIA Model Optimizer", "input_QuantizeLinear", "onnx::Conv_17856", "onnx::Conv_17856_QuantizeLinear",
         "/conv/Conv", "onnx::Conv_17860_DequantizeLinear", "/encoder/quant_linear/MatMul"},
        {"ONNX Runtime quantize_static", "input_QuantizeLinear", "conv.weight_quantized",
         "conv.weight_DequantizeLinear", "conv", "output_DequantizeLinear", "input_quantized"},
        {"tf2onnx", "QuantLinearNode__838", "model/conv2d/kernel", "QuantLinearNode__840", "model/conv2d/Conv2D",
         "DequantLinearNode__839", "QuantLinearNode_fusion"},
        {"PaddlePaddle operators", "quantize_linear_0", "conv2d_0.w_0", "quantize_linear_1", "conv2d_0",
         "dequantize_linear_2", "fake_quantize_linear_op"},
        {"Paddle2ONNX", "p2o.QuantizeLinear.0", "conv2d_0.w_0", "p2o.QuantizeLinear.1", "p2o.Conv.0",
         "p2o.DequantizeLinear.2", "p2o.QuantizeLinearity.0"},
    };
    return kNamings;
}

//! Standalone Q (as a QDQ reformat), the conv with its folded weight quantizer, a standalone DQ, a conv with the
//! near-miss name, and a clone of the Q.
EnginePlan engineFor(const Naming& naming, bool withOrigin)
{
    EnginePlan plan;
    plan.sourcePath = "layers.json";
    plan.form = LayerListForm::kDetailed;
    const std::string origin = withOrigin ? "QDQ" : "";
    plan.layers.push_back(layer(naming.quantize, "Reformat", {{"input", kFp32}}, {{"q", kInt8}}, origin));
    plan.layers.push_back(layer(std::string(naming.weight) + " + " + naming.weightQuantizer + " + " + naming.conv,
                                "CaskConvolution", {{"q", kInt8}}, {{"c", kInt8}}));
    plan.layers.push_back(layer(naming.dequantize, "Reformat", {{"c", kInt8}}, {{"d", kFp32}}, origin));
    plan.layers.push_back(layer(naming.nearMiss, "CaskConvolution", {{"d", kFp32}}, {{"n", kFp32}}));
    plan.layers.push_back(
        layer(std::string(naming.quantize) + "_clone_1", "Reformat", {{"n", kFp32}}, {{"q2", kInt8}}, origin));
    return plan;
}

const QdqNodeState* qdqNamed(const Report& report, std::string_view name)
{
    for (const auto& node : report.correlation.qdqNodes)
    {
        if (node.node == name)
        {
            return &node;
        }
    }
    return nullptr;
}

} // namespace

TEST(QdqNaming, EachExportersNamesAreQdqAndTheNearMissIsNot)
{
    for (const Naming& naming : namings())
    {
        SCOPED_TRACE(naming.exporter);
        EXPECT_EQ(qdqNameKind(naming.quantize), QdqNameKind::kQuantize) << naming.quantize;
        // A weight quantizer (ONNX Runtime keeps the weight quantized and names only its DequantizeLinear).
        EXPECT_NE(qdqNameKind(naming.weightQuantizer), QdqNameKind::kNone) << naming.weightQuantizer;
        EXPECT_EQ(qdqNameKind(naming.dequantize), QdqNameKind::kDequantize) << naming.dequantize;
        EXPECT_EQ(qdqNameKind(naming.nearMiss), QdqNameKind::kNone) << naming.nearMiss;
        EXPECT_EQ(qdqNameKind(naming.conv), QdqNameKind::kNone) << naming.conv;
        EXPECT_EQ(qdqNameKind(naming.weight), QdqNameKind::kNone) << naming.weight;
        // TensorRT's suffixes and the output tensors named after the node.
        for (const char* suffix : {"_clone_0", "_cpy", "_cpy_clone_2", "_output_0", ":0"})
        {
            EXPECT_EQ(qdqNameKind(std::string(naming.quantize) + suffix), QdqNameKind::kQuantize) << suffix;
            EXPECT_EQ(qdqNameKind(std::string(naming.dequantize) + suffix), QdqNameKind::kDequantize) << suffix;
        }
    }
}

TEST(QdqNaming, MoreNearMissesAndTheLastMarkerDecides)
{
    for (const char* name :
         {"quantized_conv_3", "/model/quantizer/Mul", "QuantizeLinearity", "Dequantizer_3", "QuantLinearNode",
          "QuantLinearNode__", "MyQuantLinearNode__3", "quantize_linear_layer", "dequantize_linear_weights",
          "conv.weight_quantized", "/x/_weight_quantizer/Constant_1", "quant_conv", "quantize", "Quantize_7"})
    {
        EXPECT_EQ(qdqNameKind(name), QdqNameKind::kNone) << name;
    }
    // ONNX Runtime names a Q after the tensor it quantizes, which may be a DQ's output.
    EXPECT_EQ(qdqNameKind("x_DequantizeLinear_Output_QuantizeLinear"), QdqNameKind::kQuantize);
    EXPECT_EQ(qdqNameKind("/a/QuantizeLinear_output_0_DequantizeLinear"), QdqNameKind::kDequantize);
    EXPECT_EQ(qdqNameKind("(Unnamed Layer* 1) [Quantize]"), QdqNameKind::kQuantize);
    EXPECT_EQ(qdqNameKind("(Unnamed Layer* 2) [Dequantize]"), QdqNameKind::kDequantize);
    EXPECT_EQ(qdqNameKind("TRT_FP8QuantizeLinear_3"), QdqNameKind::kQuantize);
    EXPECT_EQ(qdqNameKind("quantize_linear_0.tmp_0"), QdqNameKind::kQuantize);
    EXPECT_EQ(qdqNameKind("dequantize_linear"), QdqNameKind::kDequantize);
    EXPECT_TRUE(looksLikeQuantizedWeightName("conv.weight_quantized"));
    EXPECT_FALSE(looksLikeQuantizedWeightName("quantized_conv_3"));
}

TEST(QdqNaming, WithoutAModelTheAccountingCountsEachExportersNodes)
{
    for (bool withOrigin : {true, false})
    {
        for (const Naming& naming : namings())
        {
            SCOPED_TRACE(std::string(naming.exporter) + (withOrigin ? ", Origin: QDQ" : ", no Origin"));
            Report report = runDiagnose(std::nullopt, engineFor(naming, withOrigin));
            const auto layers = report.correlation.layerTotals();
            EXPECT_EQ(layers.total, 5u);
            EXPECT_EQ(layers.insertedQdq, 3u); // Q, DQ and the Q's clone
            EXPECT_EQ(layers.mapped, 2u);      // the conv and the near miss
            EXPECT_EQ(report.correlation.layers[3].state, LayerState::kMapped);
            const auto qdq = report.correlation.qdqTotals();
            // Q (its clone counts as the same node), the weight quantizer and DQ; not the near miss.
            EXPECT_EQ(qdq.total, 3u);
            EXPECT_EQ(qdq.standalone, 2u);
            EXPECT_EQ(qdq.folded, 1u);
            EXPECT_EQ(qdq.total, qdq.fused + qdq.standalone + qdq.folded + qdq.eliminated + qdq.unknown);
            // Without a model the nodes are named as the layer names show them, TensorRT's suffixes removed.
            const QdqNodeState* q = qdqNamed(report, stripTrtSuffixes(naming.quantize));
            ASSERT_NE(q, nullptr);
            EXPECT_TRUE(q->isQuantize);
            EXPECT_EQ(q->state, QdqState::kStandalone);
            const QdqNodeState* weightQ = qdqNamed(report, stripTrtSuffixes(naming.weightQuantizer));
            ASSERT_NE(weightQ, nullptr);
            EXPECT_EQ(weightQ->state, QdqState::kFolded);
            const QdqNodeState* dq = qdqNamed(report, stripTrtSuffixes(naming.dequantize));
            ASSERT_NE(dq, nullptr);
            EXPECT_FALSE(dq->isQuantize);
            EXPECT_EQ(dq->state, QdqState::kStandalone);
            EXPECT_EQ(qdqNamed(report, naming.nearMiss), nullptr);
        }
    }
}

TEST(QdqNaming, AnOriginQdqLayerCountsWhateverItsNameSays)
{
    EnginePlan plan;
    plan.sourcePath = "layers.json";
    plan.layers.push_back(layer("my_input_scaler_3", "Reformat", {{"input", kFp32}}, {{"q", kInt8}}, "QDQ"));
    plan.layers.push_back(layer("my_output_scaler_4", "Reformat", {{"q", kInt8}}, {{"d", kFp32}}, "QDQ"));
    Report report = runDiagnose(std::nullopt, plan);
    EXPECT_EQ(report.correlation.qdqTotals().total, 2u);
    EXPECT_EQ(report.correlation.qdqTotals().standalone, 2u);
    ASSERT_NE(qdqNamed(report, "my_input_scaler_3"), nullptr);
    EXPECT_TRUE(qdqNamed(report, "my_input_scaler_3")->isQuantize);
    ASSERT_NE(qdqNamed(report, "my_output_scaler_4"), nullptr);
    EXPECT_FALSE(qdqNamed(report, "my_output_scaler_4")->isQuantize);
}

TEST(QdqNaming, WithAModelTheOpTypeDecides)
{
    for (const Naming& naming : namings())
    {
        SCOPED_TRACE(naming.exporter);
        // The same names on a model, where the conv is called like a Q node and a Q node is called like nothing.
        GraphBuilder g;
        std::string x = g.input("input");
        std::string s = g.scale("in_scale", 0.05f);
        std::string z = g.zeroPoint("in_zero_point");
        std::string q = g.node("QuantizeLinear", naming.quantize, {x, s, z});
        std::string dq = g.node("DequantizeLinear", "in_dq_7", {q, s, z});
        std::string c = g.node("Conv", "QuantizeLinear_99", {dq, g.quantizedWeight("w", 8, 3)});
        std::string oq = g.node("QuantizeLinear", "output_scaler_5", {c, s, z});
        std::string odq = g.node("DequantizeLinear", naming.dequantize, {oq, s, z});
        std::string n = g.node("Relu", naming.nearMiss, {odq});
        g.output(n);
        OnnxGraph graph = g.build();

        EnginePlan plan;
        plan.sourcePath = "layers.json";
        plan.layers.push_back(layer(naming.quantize, "Reformat", {{"input", kFp32}}, {{q, kInt8}}, "QDQ"));
        plan.layers.push_back(layer("w.weight + w/_weight_quantizer/QuantizeLinear + QuantizeLinear_99",
                                    "CaskConvolution", {{q, kInt8}}, {{oq, kInt8}}));
        plan.layers.push_back(layer(naming.dequantize, "Reformat", {{oq, kInt8}}, {{odq, kFp32}}, "QDQ"));
        plan.layers.push_back(layer(naming.nearMiss, "PointWiseV2", {{odq, kFp32}}, {{n, kFp32}}));

        const std::size_t modelQdq = graph.quantizeCount() + graph.dequantizeCount();
        // The correlation names nodes by views of the model: keep the inputs alive beside the report.
        Inputs inputs;
        inputs.onnx = std::move(graph);
        inputs.layerInfo = plan;
        Report report = diagnose(inputs);
        const auto qdq = report.correlation.qdqTotals();
        EXPECT_EQ(qdq.total, modelQdq);
        EXPECT_EQ(qdq.total, qdq.fused + qdq.standalone + qdq.folded + qdq.eliminated + qdq.unknown);
        // The conv named "QuantizeLinear_99" is a mapped conv, not a Q/DQ node.
        EXPECT_EQ(report.correlation.layers[1].state, LayerState::kMapped);
        EXPECT_EQ(qdqNamed(report, "QuantizeLinear_99"), nullptr);
        EXPECT_EQ(report.correlation.layers[3].state, LayerState::kMapped);
        EXPECT_EQ(qdqNamed(report, naming.nearMiss), nullptr);
        // A Q node whose name says nothing is a Q node.
        const QdqNodeState* outputQ = qdqNamed(report, "output_scaler_5");
        ASSERT_NE(outputQ, nullptr);
        EXPECT_TRUE(outputQ->isQuantize);
        EXPECT_EQ(outputQ->state, QdqState::kFused);
        const QdqNodeState* inputQ = qdqNamed(report, naming.quantize);
        ASSERT_NE(inputQ, nullptr);
        EXPECT_EQ(inputQ->state, QdqState::kStandalone);
        const QdqNodeState* outputDq = qdqNamed(report, naming.dequantize);
        ASSERT_NE(outputDq, nullptr);
        EXPECT_FALSE(outputDq->isQuantize);
        EXPECT_EQ(outputDq->state, QdqState::kStandalone);
    }
}
