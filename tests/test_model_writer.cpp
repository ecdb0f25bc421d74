// The streaming model editor (include/qdq/model_edit.h): edits land exactly where asked, everything else is kept
// byte for byte, external data moves beside the output, and outputs are written atomically.
#include "graph_builder.h"
#include "qdq/model_edit.h"
#include "qdq/readers.h"
#include "test_support.h"
#include "tools/onnx_builder.h"

#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qdq
{
namespace
{

namespace fs = std::filesystem;
using test::readFile;
using test::tempDir;
using test::writeFile;
using tools::GraphBuilder;

// ----- models ---------------------------------------------------------------------------------------------------

//! x -> in/Q -> in/DQ -> conv (per-channel Q/DQ weight) -> relu -> pool -> add(pool, relu) -> y, with everything
//! a writer could lose: model and graph doc strings, metadata, value_info, a node doc string, unknown fields.
//! Node indices: 0 in/Q, 1 in/DQ, 2 weight Q, 3 weight DQ, 4 conv, 5 relu, 6 pool, 7 add.
onnx::ModelProto residualModel()
{
    GraphBuilder g;
    const std::string x = g.input("x");
    const std::string input = g.qdq("in", x, 0.05f);
    const std::string weight = g.quantizedWeight("conv", 4, 3);
    g.node("Conv", "conv", {input, weight}, {"conv_out"});
    g.intsAttribute("conv", "pads", {1, 1, 1, 1});
    g.node("Relu", "relu", {"conv_out"}, {"relu_out"});
    g.node("MaxPool", "pool", {"relu_out"}, {"pool_out"});
    g.intsAttribute("pool", "kernel_shape", {1, 1});
    g.node("Add", "add", {"pool_out", "relu_out"}, {"y"});
    g.output("y");

    onnx::ModelProto model;
    EXPECT_TRUE(model.ParseFromString(g.serialize()));
    model.set_doc_string("a model for the writer tests");
    model.set_model_version(3);
    model.set_domain("org.example");
    auto* meta = model.add_metadata_props();
    meta->set_key("author");
    meta->set_value("qdq-doctor tests");
    meta = model.add_metadata_props();
    meta->set_key("purpose");
    meta->set_value("round trips");
    onnx::GraphProto* graph = model.mutable_graph();
    graph->set_doc_string("graph doc");
    auto* info = graph->add_value_info();
    info->set_name("relu_out");
    info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    // ONNX 1.12's checker wants shapes on the graph's inputs and outputs.
    const auto setShape = [](onnx::ValueInfoProto& value, std::vector<std::int64_t> dims)
    {
        for (std::int64_t dim : dims)
        {
            value.mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(dim);
        }
    };
    setShape(*graph->mutable_input(0), {1, 3, 8, 8});
    setShape(*graph->mutable_output(0), {1, 4, 8, 8});
    setShape(*info, {1, 4, 8, 8});
    graph->mutable_node(4)->set_doc_string("the conv");
    // Fields this ONNX version does not know must survive too.
    model.GetReflection()->MutableUnknownFields(&model)->AddVarint(1000, 42);
    graph->GetReflection()->MutableUnknownFields(graph)->AddLengthDelimited(999, "future graph field");
    return model;
}

std::string bytesOf(const onnx::ModelProto& model)
{
    return model.SerializeAsString();
}

onnx::ModelProto parse(const std::string& bytes)
{
    onnx::ModelProto model;
    EXPECT_TRUE(model.ParseFromString(bytes));
    return model;
}

fs::path saveModel(const fs::path& path, const onnx::ModelProto& model)
{
    return writeFile(path, bytesOf(model));
}

std::string floatBytes(float value)
{
    std::string bytes(4, '\0');
    std::memcpy(bytes.data(), &value, 4);
    return bytes;
}

NewInitializer floatScalar(const std::string& name, float value)
{
    return {name, onnx::TensorProto::FLOAT, {}, floatBytes(value)};
}

NewInitializer int8Scalar(const std::string& name, std::int8_t value)
{
    return {name, onnx::TensorProto::INT8, {}, std::string(1, static_cast<char>(value))};
}

NewNode qdqNode(const std::string& op, const std::string& name, const std::string& input, const std::string& scale,
                const std::string& zeroPoint, const std::string& output)
{
    NewNode node;
    node.name = name;
    node.opType = op;
    node.inputs = {input, scale, zeroPoint};
    node.outputs = {output};
    return node;
}

//! Writes edits to memory.
std::string applyInMemory(const fs::path& source, const ModelEdits& edits, ModelWriteResult* result = nullptr)
{
    MemoryModelSink sink;
    ModelWriteResult written = writeEditedModel(source.string(), edits, sink);
    if (result != nullptr)
    {
        *result = written;
    }
    return sink.bytes();
}

std::vector<std::string> nodeNames(const onnx::GraphProto& graph)
{
    std::vector<std::string> names;
    for (const auto& node : graph.node())
    {
        names.push_back(node.name());
    }
    return names;
}

std::vector<std::string> initializerNames(const onnx::GraphProto& graph)
{
    std::vector<std::string> names;
    for (const auto& tensor : graph.initializer())
    {
        names.push_back(tensor.name());
    }
    return names;
}

//! Everything but the graph's nodes, initializers and outputs is the same in both models.
void expectSameOutsideEditedLists(const onnx::ModelProto& before, const onnx::ModelProto& after)
{
    onnx::ModelProto a = before;
    onnx::ModelProto b = after;
    for (onnx::ModelProto* model : {&a, &b})
    {
        model->mutable_graph()->clear_node();
        model->mutable_graph()->clear_initializer();
        model->mutable_graph()->clear_output();
    }
    EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
    EXPECT_EQ(after.metadata_props_size(), 2);
    EXPECT_EQ(after.doc_string(), "a model for the writer tests");
    EXPECT_EQ(after.graph().value_info_size(), 1);
    EXPECT_EQ(after.unknown_fields().field_count(), 1);
    EXPECT_EQ(after.graph().unknown_fields().field_count(), 1);
}

//! The node of `after` named `name` is byte-identical to the one in `before`.
void expectNodeUnchanged(const onnx::ModelProto& before, const onnx::ModelProto& after, const std::string& name)
{
    const onnx::NodeProto* old = nullptr;
    const onnx::NodeProto* now = nullptr;
    for (const auto& node : before.graph().node())
    {
        old = node.name() == name ? &node : old;
    }
    for (const auto& node : after.graph().node())
    {
        now = node.name() == name ? &node : now;
    }
    ASSERT_NE(old, nullptr) << name;
    ASSERT_NE(now, nullptr) << name;
    EXPECT_EQ(old->SerializeAsString(), now->SerializeAsString()) << name;
}

std::string checkBytes(const std::string& bytes, const std::string& name = "checked.onnx")
{
    const fs::path path = writeFile(tempDir("check") / name, bytes);
    return checkModelFile(path.string());
}

// ----- edits ----------------------------------------------------------------------------------------------------

TEST(ModelWriter, NoEditsIsByteIdenticalInMemoryAndOnDisk)
{
    const fs::path dir = tempDir("writer-identity");
    const std::string original = bytesOf(residualModel());
    const fs::path source = writeFile(dir / "model.onnx", original);

    ModelWriteResult result;
    EXPECT_EQ(applyInMemory(source, {}, &result), original);
    EXPECT_EQ(result.sourceBytes, original.size());
    EXPECT_EQ(result.outputBytes, original.size());
    EXPECT_EQ(result.copiedBytes, original.size());
    EXPECT_EQ(result.encodedBytes, 0u);
    EXPECT_TRUE(result.notes.empty());

    FileModelSink file((dir / "copy.onnx").string());
    ModelWriteOptions smallBuffers;
    smallBuffers.bufferBytes = 4096; // many chunks
    writeEditedModel(source.string(), {}, file, smallBuffers);
    EXPECT_EQ(readFile(dir / "copy.onnx"), original);
    EXPECT_EQ(checkModelFile((dir / "copy.onnx").string()), "");
}

TEST(ModelWriter, InsertsQdqPairOnOneConsumerEdge)
{
    const onnx::ModelProto before = residualModel();
    const fs::path source = saveModel(tempDir("writer-insert") / "model.onnx", before);

    // relu_out enters add (node 7) unquantized: quantize it there with the scale of a new initializer pair.
    ModelEdits edits;
    edits.addInitializers = {floatScalar("add/in1/scale", 0.0271f), int8Scalar("add/in1/zero_point", 0)};
    edits.insertNodes = {
        {7, qdqNode("QuantizeLinear", "add/in1/QuantizeLinear", "relu_out", "add/in1/scale", "add/in1/zero_point",
                    "relu_out_q")},
        {7, qdqNode("DequantizeLinear", "add/in1/DequantizeLinear", "relu_out_q", "add/in1/scale", "add/in1/zero_point",
                    "relu_out_dq")},
    };
    edits.rewireInputs = {{7, 1, "relu_out_dq"}};
    ModelWriteResult result;
    const std::string bytes = applyInMemory(source, edits, &result);
    EXPECT_EQ(result.nodesInserted, 2u);
    EXPECT_EQ(result.nodesRewired, 1u);
    EXPECT_EQ(result.initializersAdded, 2u);

    const onnx::ModelProto after = parse(bytes);
    EXPECT_EQ(
        nodeNames(after.graph()),
        (std::vector<std::string>{"in/QuantizeLinear", "in/DequantizeLinear", "conv/_weight_quantizer/QuantizeLinear",
                                  "conv/_weight_quantizer/DequantizeLinear", "conv", "relu", "pool",
                                  "add/in1/QuantizeLinear", "add/in1/DequantizeLinear", "add"}));
    std::vector<std::string> initializers = initializerNames(before.graph());
    initializers.push_back("add/in1/scale");
    initializers.push_back("add/in1/zero_point");
    EXPECT_EQ(initializerNames(after.graph()), initializers);
    for (const char* name : {"in/QuantizeLinear", "in/DequantizeLinear", "conv/_weight_quantizer/QuantizeLinear",
                             "conv/_weight_quantizer/DequantizeLinear", "conv", "relu", "pool"})
    {
        expectNodeUnchanged(before, after, name);
    }
    for (int i = 0; i < before.graph().initializer_size(); ++i)
    {
        EXPECT_EQ(before.graph().initializer(i).SerializeAsString(), after.graph().initializer(i).SerializeAsString());
    }
    expectSameOutsideEditedLists(before, after);
    EXPECT_EQ(before.graph().output(0).SerializeAsString(), after.graph().output(0).SerializeAsString());
    const onnx::NodeProto& add = after.graph().node(9);
    EXPECT_EQ(add.input(0), "pool_out");
    EXPECT_EQ(add.input(1), "relu_out_dq");

    // The project's reader sees the new pair with its scale.
    const OnnxGraph graph = readOnnxFromBuffer(bytes, "edited.onnx");
    EXPECT_TRUE(graph.warnings.empty());
    const OnnxNode* quantize = graph.findNode("add/in1/QuantizeLinear");
    ASSERT_NE(quantize, nullptr);
    ASSERT_NE(graph.qdqOf(quantize->index), nullptr);
    ASSERT_EQ(graph.qdqOf(quantize->index)->scale.size(), 1u);
    EXPECT_FLOAT_EQ(static_cast<float>(graph.qdqOf(quantize->index)->scale[0]), 0.0271f);
    EXPECT_EQ(graph.findNode("add")->inputs[1], "relu_out_dq");
    EXPECT_EQ(checkBytes(bytes), "");
}

TEST(ModelWriter, RemovesQdqPairAndRewiresTheConsumerBack)
{
    const onnx::ModelProto before = residualModel();
    const fs::path source = saveModel(tempDir("writer-remove") / "model.onnx", before);
    ModelEdits edits;
    edits.removeNodes = {1, 0};
    edits.rewireInputs = {{4, 0, "x"}};
    edits.removeInitializers = {"in/scale", "in/zero_point"};
    ModelWriteResult result;
    const std::string bytes = applyInMemory(source, edits, &result);
    EXPECT_EQ(result.nodesRemoved, 2u);
    EXPECT_EQ(result.initializersRemoved, 2u);
    EXPECT_TRUE(result.notes.empty());

    const onnx::ModelProto after = parse(bytes);
    EXPECT_EQ(nodeNames(after.graph()),
              (std::vector<std::string>{"conv/_weight_quantizer/QuantizeLinear",
                                        "conv/_weight_quantizer/DequantizeLinear", "conv", "relu", "pool", "add"}));
    std::vector<std::string> initializers = initializerNames(before.graph());
    initializers.erase(initializers.begin(), initializers.begin() + 2);
    EXPECT_EQ(initializerNames(after.graph()), initializers);
    expectSameOutsideEditedLists(before, after);
    // The rewired node keeps its other input, attributes and doc string.
    onnx::NodeProto expectedConv = before.graph().node(4);
    expectedConv.set_input(0, "x");
    EXPECT_EQ(after.graph().node(2).SerializeAsString(), expectedConv.SerializeAsString());
    EXPECT_EQ(after.graph().node(2).doc_string(), "the conv");

    const OnnxGraph graph = readOnnxFromBuffer(bytes, "edited.onnx");
    EXPECT_TRUE(graph.warnings.empty());
    EXPECT_EQ(graph.findNode("in/QuantizeLinear"), nullptr);
    EXPECT_EQ(graph.findNode("conv")->inputs[0], "x");
    EXPECT_EQ(graph.qdq.size(), 2u);
    EXPECT_EQ(checkBytes(bytes), "");
}

TEST(ModelWriter, ReplacesScaleInPlaceAndRenamesGraphOutput)
{
    const onnx::ModelProto before = residualModel();
    const fs::path source = saveModel(tempDir("writer-replace") / "model.onnx", before);
    ModelEdits edits;
    edits.replaceInitializers = {floatScalar("in/scale", 0.125f)};
    // Quantize the graph output: y -> Q -> DQ -> y_dq, and the graph output follows.
    edits.addInitializers = {floatScalar("out/scale", 0.5f), int8Scalar("out/zero_point", 0)};
    edits.insertNodes = {
        {8, qdqNode("QuantizeLinear", "out/QuantizeLinear", "y", "out/scale", "out/zero_point", "y_q")},
        {8, qdqNode("DequantizeLinear", "out/DequantizeLinear", "y_q", "out/scale", "out/zero_point", "y_dq")},
    };
    edits.renameGraphOutputs = {{"y", "y_dq"}};
    ModelWriteResult result;
    const std::string bytes = applyInMemory(source, edits, &result);
    EXPECT_EQ(result.initializersReplaced, 1u);
    EXPECT_EQ(result.graphOutputsRenamed, 1u);

    const onnx::ModelProto after = parse(bytes);
    EXPECT_EQ(after.graph().initializer(0).name(), "in/scale"); // same place
    EXPECT_EQ(after.graph().initializer(0).raw_data(), floatBytes(0.125f));
    EXPECT_EQ(after.graph().node_size(), 10);
    EXPECT_EQ(after.graph().node(9).name(), "out/DequantizeLinear");
    ASSERT_EQ(after.graph().output_size(), 1);
    onnx::ValueInfoProto expectedOutput = before.graph().output(0);
    expectedOutput.set_name("y_dq");
    EXPECT_EQ(after.graph().output(0).SerializeAsString(), expectedOutput.SerializeAsString());
    expectSameOutsideEditedLists(before, after);

    const OnnxGraph graph = readOnnxFromBuffer(bytes, "edited.onnx");
    EXPECT_TRUE(graph.warnings.empty());
    EXPECT_EQ(graph.graphOutputs, std::vector<std::string>{"y_dq"});
    EXPECT_DOUBLE_EQ(graph.qdqOf(graph.nodeIndex("in/QuantizeLinear"))->scale.at(0), 0.125);
    EXPECT_DOUBLE_EQ(graph.qdqOf(graph.nodeIndex("out/DequantizeLinear"))->scale.at(0), 0.5);
    EXPECT_EQ(checkBytes(bytes), "");
}

TEST(ModelWriter, RenamesANodeOutputAndKeepsTheRestOfTheNode)
{
    const onnx::ModelProto before = residualModel();
    const fs::path source = saveModel(tempDir("writer-rename-output") / "model.onnx", before);
    ModelEdits edits;
    edits.renameNodeOutputs = {{4, 0, "conv_renamed"}};
    edits.rewireInputs = {{5, 0, "conv_renamed"}};
    ModelWriteResult result;
    const std::string bytes = applyInMemory(source, edits, &result);
    EXPECT_EQ(result.nodesRewired, 2u);

    const onnx::ModelProto after = parse(bytes);
    onnx::NodeProto expectedConv = before.graph().node(4);
    expectedConv.set_output(0, "conv_renamed");
    EXPECT_EQ(after.graph().node(4).SerializeAsString(), expectedConv.SerializeAsString());
    EXPECT_EQ(after.graph().node(4).doc_string(), "the conv");
    for (const char* name : {"in/QuantizeLinear", "pool", "add"})
    {
        expectNodeUnchanged(before, after, name);
    }
    expectSameOutsideEditedLists(before, after);
    const OnnxGraph graph = readOnnxFromBuffer(bytes, "edited.onnx");
    EXPECT_EQ(graph.findNode("relu")->inputs[0], "conv_renamed");
    EXPECT_EQ(checkBytes(bytes), "");
}

TEST(ModelWriter, NewNodeAttributesAndDomainsAreEncoded)
{
    const fs::path source = saveModel(tempDir("writer-attributes") / "model.onnx", residualModel());
    ModelEdits edits;
    NewNode node;
    node.name = "custom";
    node.opType = "MyPlugin";
    node.domain = "com.example";
    node.inputs = {"y", ""};
    node.outputs = {"plugin_out"};
    node.docString = "inserted";
    node.attributes = {NewAttribute::ofInt("axis", -1), NewAttribute::ofFloat("alpha", 0.5f),
                       NewAttribute::ofInts("pads", {1, 2}), NewAttribute::ofString("mode", "fast"),
                       NewAttribute::ofInts("empty", {})};
    edits.insertNodes = {{0, node}};
    const onnx::ModelProto after = parse(applyInMemory(source, edits));
    const onnx::NodeProto& inserted = after.graph().node(0);
    EXPECT_EQ(inserted.name(), "custom");
    EXPECT_EQ(inserted.domain(), "com.example");
    EXPECT_EQ(inserted.input_size(), 2);
    EXPECT_EQ(inserted.input(1), "");
    EXPECT_EQ(inserted.doc_string(), "inserted");
    ASSERT_EQ(inserted.attribute_size(), 5);
    EXPECT_EQ(inserted.attribute(0).type(), onnx::AttributeProto::INT);
    EXPECT_EQ(inserted.attribute(0).i(), -1);
    EXPECT_EQ(inserted.attribute(1).type(), onnx::AttributeProto::FLOAT);
    EXPECT_FLOAT_EQ(inserted.attribute(1).f(), 0.5f);
    EXPECT_EQ(inserted.attribute(2).type(), onnx::AttributeProto::INTS);
    EXPECT_EQ(inserted.attribute(2).ints_size(), 2);
    EXPECT_EQ(inserted.attribute(3).type(), onnx::AttributeProto::STRING);
    EXPECT_EQ(inserted.attribute(3).s(), "fast");
    EXPECT_EQ(inserted.attribute(4).type(), onnx::AttributeProto::INTS);
    EXPECT_EQ(after.graph().node(1).name(), "in/QuantizeLinear");
}

TEST(ModelWriter, OutputWrittenAgainWithoutEditsIsIdentical)
{
    const fs::path dir = tempDir("writer-idempotent");
    const fs::path source = saveModel(dir / "model.onnx", residualModel());
    ModelEdits edits;
    edits.removeNodes = {0, 1};
    edits.rewireInputs = {{4, 0, "x"}};
    edits.replaceInitializers = {floatScalar("conv/w_scale", 0.0f)};
    edits.replaceInitializers.back().dims = {4};
    edits.replaceInitializers.back().rawData =
        floatBytes(0.01f) + floatBytes(0.02f) + floatBytes(0.03f) + floatBytes(0.04f);
    FileModelSink first((dir / "edited.onnx").string());
    writeEditedModel(source.string(), edits, first);
    const std::string edited = readFile(dir / "edited.onnx");

    FileModelSink second((dir / "edited-again.onnx").string());
    writeEditedModel((dir / "edited.onnx").string(), {}, second);
    EXPECT_EQ(readFile(dir / "edited-again.onnx"), edited);
    // And the same edits on the same source give the same bytes.
    EXPECT_EQ(applyInMemory(source, edits), edited);
}

TEST(ModelWriter, LargeInlineWeightsAreCopiedThroughSmallBuffers)
{
    onnx::ModelProto model = residualModel();
    onnx::TensorProto* big = model.mutable_graph()->add_initializer();
    big->set_name("big");
    big->set_data_type(onnx::TensorProto::FLOAT);
    big->add_dims(3 << 18); // 3 MiB of floats
    std::string data(static_cast<std::size_t>(3 << 20), '\0');
    for (std::size_t i = 0; i < data.size(); ++i)
    {
        data[i] = static_cast<char>(i * 7);
    }
    big->set_raw_data(data);
    // An initializer after the big one, so that the walk must skip its data.
    model.mutable_graph()->add_initializer()->CopyFrom(model.graph().initializer(0));
    model.mutable_graph()->mutable_initializer()->rbegin()->set_name("after_big");
    const fs::path source = saveModel(tempDir("writer-big") / "model.onnx", model);

    ModelEdits edits;
    edits.replaceInitializers = {floatScalar("after_big", 2.0f)};
    edits.removeNodes = {6};
    edits.rewireInputs = {{7, 0, "relu_out"}};
    MemoryModelSink sink;
    ModelWriteOptions options;
    options.bufferBytes = 5000;
    const ModelWriteResult result = writeEditedModel(source.string(), edits, sink, options);
    EXPECT_LT(result.encodedBytes, 1000u);
    const onnx::ModelProto after = parse(sink.bytes());
    EXPECT_EQ(after.graph().initializer(after.graph().initializer_size() - 2).raw_data(), data);
    EXPECT_EQ(after.graph().initializer(after.graph().initializer_size() - 1).raw_data(), floatBytes(2.0f));
    EXPECT_EQ(after.graph().node_size(), 7);
    EXPECT_EQ(checkBytes(sink.bytes()), "");
}

TEST(ModelWriter, EditsThatDoNotFitTheModelAreRejected)
{
    const fs::path dir = tempDir("writer-invalid");
    const fs::path source = saveModel(dir / "model.onnx", residualModel());
    const auto rejects = [&](const ModelEdits& edits, const std::string& expected)
    {
        MemoryModelSink sink;
        try
        {
            writeEditedModel(source.string(), edits, sink);
            ADD_FAILURE() << "accepted; expected: " << expected;
        }
        catch (const std::invalid_argument& error)
        {
            EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
        }
        EXPECT_TRUE(sink.bytes().empty());
    };
    ModelEdits edits;
    edits.removeNodes = {8};
    rejects(edits, "node 8 is out of range (the model has 8 nodes)");
    edits = {};
    edits.removeNodes = {3, 3};
    rejects(edits, "removed twice");
    edits = {};
    edits.insertNodes = {{9, qdqNode("QuantizeLinear", "q", "y", "in/scale", "in/zero_point", "y_q")}};
    rejects(edits, "position 9 is out of range");
    edits = {};
    edits.rewireInputs = {{5, 1, "x"}};
    rejects(edits, "node 5 ('relu', Relu) has 1 input(s), no input slot 1");
    edits = {};
    edits.rewireInputs = {{12, 0, "x"}};
    rejects(edits, "node 12 is out of range");
    edits = {};
    edits.removeNodes = {4};
    edits.rewireInputs = {{4, 0, "x"}};
    rejects(edits, "is also removed");
    edits = {};
    edits.replaceInitializers = {floatScalar("no/such/scale", 1.0f)};
    rejects(edits, "the model has no initializer 'no/such/scale'");
    edits = {};
    edits.removeInitializers = {"no/such/zero_point"};
    rejects(edits, "the model has no initializer 'no/such/zero_point'");
    edits = {};
    edits.renameGraphOutputs = {{"nope", "y2"}};
    rejects(edits, "no graph output 'nope'");
    edits = {};
    edits.insertNodes = {{0, qdqNode("QuantizeLinear", "relu", "x", "in/scale", "in/zero_point", "x_q")}};
    rejects(edits, "node name 'relu' is already used by node 5");
    edits = {};
    edits.insertNodes = {{0, qdqNode("QuantizeLinear", "q", "x", "in/scale", "in/zero_point", "relu_out")}};
    rejects(edits, "new tensor 'relu_out' is already produced by node 5");
    edits = {};
    edits.renameNodeOutputs = {{4, 1, "conv_second"}};
    rejects(edits, "node 4 ('conv', Conv) has 1 output(s), no output slot 1");
    edits = {};
    edits.renameNodeOutputs = {{12, 0, "z"}};
    rejects(edits, "renameNodeOutputs: node 12 is out of range");
    edits = {};
    edits.removeNodes = {4};
    edits.renameNodeOutputs = {{4, 0, "z"}};
    rejects(edits, "renameNodeOutputs[0]: node 4 is also removed");
    edits = {};
    edits.renameNodeOutputs = {{4, 0, "relu_out"}};
    rejects(edits, "new tensor 'relu_out' is already produced by node 5");
    edits = {};
    edits.renameNodeOutputs = {{4, 0, "z"}, {5, 0, "z"}};
    rejects(edits, "tensor 'z' is already the output of a new node or of another rename");
    edits = {};
    edits.addInitializers = {floatScalar("in/scale", 1.0f)};
    rejects(edits, "new tensor 'in/scale' is already an initializer");
    edits = {};
    edits.addInitializers = {floatScalar("x", 1.0f)};
    rejects(edits, "new tensor 'x' is already a graph input");
    edits = {};
    edits.addInitializers = {floatScalar("s", 1.0f), floatScalar("s", 2.0f)};
    rejects(edits, "tensor 's' is already a new initializer");
    edits = {};
    edits.addInitializers = {{"bad", onnx::TensorProto::FLOAT, {2}, floatBytes(1.0f)}};
    rejects(edits, "rawData holds 4 bytes, its dims and data type call for 8");
    edits = {};
    edits.addInitializers = {{"strings", onnx::TensorProto::STRING, {}, "x"}};
    rejects(edits, "not a fixed-size ONNX tensor type");
    edits = {};
    NewAttribute twoValues = NewAttribute::ofInt("axis", 1);
    twoValues.f = 1.0f;
    NewNode withBadAttribute = qdqNode("QuantizeLinear", "q", "x", "in/scale", "in/zero_point", "x_q");
    withBadAttribute.attributes = {twoValues};
    edits.insertNodes = {{0, withBadAttribute}};
    rejects(edits, "has more than one value");

    // Names of removed nodes and initializers may be reused: moving a Q/DQ pair.
    edits = {};
    edits.removeNodes = {0};
    edits.removeInitializers = {"in/scale"};
    edits.addInitializers = {floatScalar("in/scale", 0.5f)};
    edits.insertNodes = {
        {1, qdqNode("QuantizeLinear", "in/QuantizeLinear", "x", "in/scale", "in/zero_point", "in/QuantizeLinear_out")}};
    EXPECT_EQ(checkBytes(applyInMemory(source, edits)), "");
}

// ----- external data --------------------------------------------------------------------------------------------

//! A model in dir whose conv weight lives in dir/<dataName> (written unless missing), and whose Constant node
//! value lives there too.
fs::path externalDataModel(const fs::path& dir, const std::string& dataName, bool writeData)
{
    onnx::ModelProto model = residualModel();
    onnx::GraphProto* graph = model.mutable_graph();
    std::string data;
    for (onnx::TensorProto& tensor : *graph->mutable_initializer())
    {
        if (tensor.name() == "conv.weight")
        {
            for (float value : tensor.float_data())
            {
                data += floatBytes(value);
            }
            tensor.clear_float_data();
            tensor.set_data_location(onnx::TensorProto::EXTERNAL);
            auto* entry = tensor.add_external_data();
            entry->set_key("location");
            entry->set_value(dataName);
            entry = tensor.add_external_data();
            entry->set_key("offset");
            entry->set_value("0");
            entry = tensor.add_external_data();
            entry->set_key("length");
            entry->set_value(std::to_string(data.size()));
        }
    }
    // A Constant node (a second Add input) whose value is stored in the same file, after the weight.
    onnx::NodeProto* constant = graph->add_node();
    constant->set_name("bias_const");
    constant->set_op_type("Constant");
    constant->add_output("bias");
    onnx::AttributeProto* value = constant->add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto* tensor = value->mutable_t();
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_dims(1);
    tensor->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = tensor->add_external_data();
    entry->set_key("location");
    entry->set_value(dataName);
    entry = tensor->add_external_data();
    entry->set_key("offset");
    entry->set_value(std::to_string(data.size()));
    data += floatBytes(1.0f);
    fs::create_directories(dir);
    if (writeData)
    {
        writeFile(dir / dataName, data);
    }
    return saveModel(dir / "model.onnx", model);
}

std::string locationOf(const onnx::TensorProto& tensor)
{
    for (const auto& entry : tensor.external_data())
    {
        if (entry.key() == "location")
        {
            return entry.value();
        }
    }
    return {};
}

const onnx::TensorProto& weightOf(const onnx::ModelProto& model)
{
    for (const auto& tensor : model.graph().initializer())
    {
        if (tensor.name() == "conv.weight")
        {
            return tensor;
        }
    }
    throw std::runtime_error("no conv.weight");
}

const onnx::TensorProto& constantOf(const onnx::ModelProto& model)
{
    return model.graph().node(model.graph().node_size() - 1).attribute(0).t();
}

//! Every tensor of the model stored externally (initializers and Constant values), with its external_data entries.
std::vector<const onnx::TensorProto*> externalTensors(const onnx::ModelProto& model)
{
    std::vector<const onnx::TensorProto*> tensors;
    for (const auto& tensor : model.graph().initializer())
    {
        if (tensor.external_data_size() > 0 || tensor.data_location() == onnx::TensorProto::EXTERNAL)
        {
            tensors.push_back(&tensor);
        }
    }
    for (const auto& node : model.graph().node())
    {
        for (const auto& attribute : node.attribute())
        {
            if (attribute.has_t() && (attribute.t().external_data_size() > 0 ||
                                      attribute.t().data_location() == onnx::TensorProto::EXTERNAL))
            {
                tensors.push_back(&attribute.t());
            }
        }
    }
    return tensors;
}

std::string entryOf(const onnx::TensorProto& tensor, const std::string& key)
{
    for (const auto& entry : tensor.external_data())
    {
        if (entry.key() == key)
        {
            return entry.value();
        }
    }
    return {};
}

//! The bytes a tensor's offset and length name in the data file of its folder.
std::string externalBytes(const fs::path& folder, const onnx::TensorProto& tensor)
{
    const std::string data = readFile(folder / locationOf(tensor));
    const std::size_t offset = std::stoull(entryOf(tensor, "offset").empty() ? "0" : entryOf(tensor, "offset"));
    const std::string length = entryOf(tensor, "length");
    return data.substr(offset, length.empty() ? std::string::npos : std::stoull(length));
}

//! The values of a constant as the project's ONNX reader loads them, weights included.
std::vector<double> loadedValues(const fs::path& model, const std::string& name)
{
    OnnxReadOptions options;
    options.loadWeights = true;
    const OnnxGraph graph = readOnnx(model.string(), options);
    for (const auto& warning : graph.warnings)
    {
        ADD_FAILURE() << model << ": " << warning.message;
    }
    const OnnxConstant* constant = graph.constant(name);
    EXPECT_NE(constant, nullptr) << name;
    EXPECT_TRUE(constant != nullptr && constant->dataLoaded) << name;
    return constant != nullptr ? constant->values : std::vector<double>{};
}

std::size_t filesIn(const fs::path& dir)
{
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// `fix model.onnx -o other/fixed.onnx` used to point the weights at "../../models/weights.bin", which ONNX's loader and
// qdq-doctor's reader both refuse. The weights now go beside the output, in fixed.onnx.data.
TEST(ModelWriter, ExternalDataMovesBesideTheOutputInAnotherFolder)
{
    const fs::path root = tempDir("writer-external");
    const fs::path source = externalDataModel(root / "models", "weights.bin", true);
    ASSERT_EQ(checkModelFile(source.string()), "");
    const std::string sourceBytes = readFile(source);
    const std::string sourceData = readFile(root / "models" / "weights.bin");
    const onnx::ModelProto before = parse(sourceBytes);

    const fs::path output = root / "out" / "fixed" / "fixed.onnx";
    fs::create_directories(output.parent_path());
    FileModelSink sink(output.string());
    const ModelWriteResult result = writeEditedModel(source.string(), {}, sink);
    EXPECT_EQ(result.externalTensors, 2u);
    EXPECT_EQ(result.dataBytes, sourceData.size());
    EXPECT_TRUE(result.notes.empty()) << result.notes.front();
    EXPECT_EQ(filesIn(output.parent_path()), 2u); // fixed.onnx and fixed.onnx.data, no temporary left
    const onnx::ModelProto after = parse(readFile(output));

    // Every external tensor names fixed.onnx.data, a bare file name: no '..', no absolute path, no other file.
    const auto tensors = externalTensors(after);
    ASSERT_EQ(tensors.size(), 2u);
    for (const onnx::TensorProto* tensor : tensors)
    {
        EXPECT_EQ(locationOf(*tensor), "fixed.onnx.data") << tensor->name();
        EXPECT_EQ(tensor->data_location(), onnx::TensorProto::EXTERNAL) << tensor->name();
        EXPECT_FALSE(entryOf(*tensor, "offset").empty()) << tensor->name();
        EXPECT_FALSE(entryOf(*tensor, "length").empty()) << tensor->name();
    }
    // The bytes each tensor names are its bytes in the input, and only the location, offset and length changed.
    EXPECT_EQ(externalBytes(output.parent_path(), weightOf(after)), externalBytes(root / "models", weightOf(before)));
    EXPECT_EQ(externalBytes(output.parent_path(), constantOf(after)), floatBytes(1.0f));
    // The data file follows the graph's order: the Constant node's value (nodes come first) at 0, then the weight.
    onnx::TensorProto expected = weightOf(before);
    expected.mutable_external_data(0)->set_value("fixed.onnx.data");
    expected.mutable_external_data(1)->set_value("4");
    EXPECT_EQ(weightOf(after).SerializeAsString(), expected.SerializeAsString());
    EXPECT_EQ(entryOf(constantOf(after), "offset"), "0");
    // The project's reader loads the weights from the output's folder, value for value.
    EXPECT_EQ(loadedValues(output, "conv.weight"), loadedValues(source, "conv.weight"));
    EXPECT_EQ(loadedValues(output, "bias"), std::vector<double>{1.0});
    // ONNX's checker finds the data in the output's folder, and the whole check passes; so does the writer's own.
    EXPECT_EQ(test::onnxFullCheck(output), "");
    EXPECT_EQ(checkModelFile(output.string()), "");
    // The input is untouched.
    EXPECT_EQ(readFile(source), sourceBytes);
    EXPECT_EQ(readFile(root / "models" / "weights.bin"), sourceData);
}

TEST(ModelWriter, ExternalDataMovesBesideTheOutputInTheSameFolder)
{
    const fs::path root = tempDir("writer-external-same");
    const fs::path source = externalDataModel(root, "model.onnx.data", true);
    const std::string sourceData = readFile(root / "model.onnx.data");
    FileModelSink sink((root / "fixed.onnx").string());
    ModelEdits edits;
    edits.replaceInitializers = {floatScalar("in/scale", 0.25f)};
    const ModelWriteResult result = writeEditedModel(source.string(), edits, sink);
    EXPECT_EQ(result.externalTensors, 2u);
    EXPECT_EQ(readFile(root / "fixed.onnx.data").size(), sourceData.size());
    EXPECT_EQ(readFile(root / "model.onnx.data"), sourceData);
    const onnx::ModelProto after = parse(readFile(root / "fixed.onnx"));
    for (const onnx::TensorProto* tensor : externalTensors(after))
    {
        EXPECT_EQ(locationOf(*tensor), "fixed.onnx.data") << tensor->name();
    }
    EXPECT_EQ(externalBytes(root, weightOf(after)), externalBytes(root, weightOf(parse(readFile(source)))));
    EXPECT_EQ(loadedValues(root / "fixed.onnx", "conv.weight"), loadedValues(source, "conv.weight"));
    EXPECT_EQ(test::onnxFullCheck(root / "fixed.onnx"), "");
    EXPECT_EQ(filesIn(root), 4u);
}

// A replaced tensor whose original was external goes to the data file too (the tensor stays external); a new one
// and a replaced inline one stay inline.
TEST(ModelWriter, ReplacedExternalTensorGoesToTheDataFile)
{
    const fs::path root = tempDir("writer-external-replaced");
    const fs::path source = externalDataModel(root / "models", "weights.bin", true);
    const onnx::ModelProto before = parse(readFile(source));
    const onnx::TensorProto& weight = weightOf(before);
    std::int64_t elements = 1;
    for (std::int64_t dim : weight.dims())
    {
        elements *= dim;
    }
    std::string newWeight;
    for (std::int64_t i = 0; i < elements; ++i)
    {
        newWeight += floatBytes(static_cast<float>(i) / 8.0f);
    }
    ModelEdits edits;
    edits.replaceInitializers = {{"conv.weight", onnx::TensorProto::FLOAT,
                                  std::vector<std::int64_t>(weight.dims().begin(), weight.dims().end()), newWeight},
                                 floatScalar("in/scale", 0.25f)};
    edits.addInitializers = {floatScalar("extra", 2.0f)};
    const fs::path output = root / "out" / "fixed.onnx";
    fs::create_directories(output.parent_path());
    FileModelSink sink(output.string());
    const ModelWriteResult result = writeEditedModel(source.string(), edits, sink);
    EXPECT_EQ(result.externalTensors, 2u);
    const onnx::ModelProto after = parse(readFile(output));
    EXPECT_EQ(locationOf(weightOf(after)), "fixed.onnx.data");
    EXPECT_EQ(externalBytes(output.parent_path(), weightOf(after)), newWeight);
    EXPECT_FALSE(weightOf(after).has_raw_data());
    EXPECT_EQ(externalBytes(output.parent_path(), constantOf(after)), floatBytes(1.0f));
    for (const auto& tensor : after.graph().initializer())
    {
        if (tensor.name() == "in/scale" || tensor.name() == "extra")
        {
            EXPECT_EQ(tensor.external_data_size(), 0) << tensor.name();
            EXPECT_TRUE(tensor.has_raw_data()) << tensor.name();
        }
    }
    EXPECT_EQ(loadedValues(output, "conv.weight").at(9), 9.0 / 8.0);
    EXPECT_EQ(test::onnxFullCheck(output), "");
}

// The near-identical model with its weights inline: nothing about external data changes, no data file is written.
TEST(ModelWriter, InlineWeightsWriteNoDataFile)
{
    const fs::path root = tempDir("writer-inline");
    fs::create_directories(root / "models");
    const fs::path source = saveModel(root / "models" / "model.onnx", residualModel());
    const fs::path output = root / "out" / "fixed.onnx";
    fs::create_directories(output.parent_path());
    FileModelSink sink(output.string());
    const ModelWriteResult result = writeEditedModel(source.string(), {}, sink);
    EXPECT_EQ(readFile(output), readFile(source));
    EXPECT_EQ(result.externalTensors, 0u);
    EXPECT_EQ(result.dataBytes, 0u);
    EXPECT_TRUE(result.notes.empty());
    EXPECT_FALSE(fs::exists(root / "out" / "fixed.onnx.data"));
    EXPECT_EQ(filesIn(root / "out"), 1u);
}

TEST(ModelWriter, MissingExternalDataFileKeepsItsReferenceWithANote)
{
    const fs::path root = tempDir("writer-external-missing");
    const fs::path source = externalDataModel(root / "models", "gone.bin", false);
    const fs::path output = root / "out" / "fixed.onnx";
    fs::create_directories(output.parent_path());
    FileModelSink sink(output.string());
    ModelEdits edits;
    edits.replaceInitializers = {floatScalar("in/scale", 0.25f)};
    const ModelWriteResult result = writeEditedModel(source.string(), edits, sink);
    const onnx::ModelProto after = parse(readFile(output));
    EXPECT_EQ(locationOf(weightOf(after)), "gone.bin");
    EXPECT_EQ(locationOf(constantOf(after)), "gone.bin");
    EXPECT_EQ(weightOf(after).SerializeAsString(), weightOf(parse(readFile(source))).SerializeAsString());
    EXPECT_EQ(result.externalTensors, 0u);
    EXPECT_EQ(result.dataBytes, 0u);
    EXPECT_FALSE(fs::exists(root / "out" / "fixed.onnx.data"));
    ASSERT_EQ(result.notes.size(), 1u);
    EXPECT_NE(result.notes[0].find("external data file 'gone.bin' is missing: reference kept"), std::string::npos)
        << result.notes[0];
    ModelCheckOptions graphOnly;
    graphOnly.externalDataMustExist = false;
    EXPECT_EQ(checkModelFile(source.string(), graphOnly), "");
    EXPECT_NE(checkModelFile(source.string()).find("does not exist"), std::string::npos);
}

// Data outside the input model's folder is never opened (the ONNX reader's rule): its reference is kept, with a note.
TEST(ModelWriter, ExternalDataOutsideTheModelFolderIsNotCopied)
{
    const fs::path root = tempDir("writer-external-outside");
    const fs::path source = externalDataModel(root / "models", "weights.bin", true);
    fs::create_directories(root / "elsewhere");
    fs::rename(root / "models" / "weights.bin", root / "elsewhere" / "weights.bin");
    fs::create_symlink(root / "elsewhere" / "weights.bin", root / "models" / "weights.bin");
    MemoryModelSink sink;
    const ModelWriteResult result = writeEditedModel(source.string(), {}, sink);
    EXPECT_EQ(sink.bytes(), readFile(source));
    EXPECT_TRUE(sink.dataBytes().empty());
    EXPECT_EQ(result.externalTensors, 0u);
    ASSERT_EQ(result.notes.size(), 1u);
    EXPECT_NE(result.notes[0].find("external data location 'weights.bin' resolves outside the model's folder"),
              std::string::npos)
        << result.notes[0];
}

TEST(ModelWriter, ExternalDataPastTheEndOfItsFileIsAnInputError)
{
    const fs::path root = tempDir("writer-external-short");
    const fs::path source = externalDataModel(root, "weights.bin", true);
    writeFile(root / "weights.bin", "short");
    MemoryModelSink sink;
    try
    {
        writeEditedModel(source.string(), {}, sink);
        ADD_FAILURE() << "copied data that is not there";
    }
    catch (const InputError& error)
    {
        EXPECT_NE(error.message().find("lies outside the 5-byte file"), std::string::npos) << error.message();
    }
    EXPECT_TRUE(sink.bytes().empty());
}

// fixed.onnx.data follows the output's overwrite rule: kept without force, replaced with it; the input's own data
// file is never replaced.
TEST(ModelWriter, ExistingDataFileIsRefusedWithoutForceAndAnInputDataFileAlways)
{
    const fs::path root = tempDir("writer-external-exists");
    const fs::path source = externalDataModel(root, "weights.bin", true);
    const fs::path output = root / "fixed.onnx";
    writeFile(root / "fixed.onnx.data", "someone else's");
    FileModelSink refusing(output.string());
    try
    {
        writeEditedModel(source.string(), {}, refusing);
        ADD_FAILURE() << "overwrote an existing data file";
    }
    catch (const InputError& error)
    {
        EXPECT_EQ(error.where().path, (root / "fixed.onnx.data").string());
        EXPECT_NE(error.message().find("already exists"), std::string::npos) << error.message();
    }
    EXPECT_EQ(readFile(root / "fixed.onnx.data"), "someone else's");
    EXPECT_FALSE(fs::exists(output));
    EXPECT_EQ(filesIn(root), 3u); // model.onnx, weights.bin, fixed.onnx.data: no temporary left

    FileModelSink forcing(output.string(), /*force*/ true);
    writeEditedModel(source.string(), {}, forcing);
    EXPECT_EQ(readFile(root / "fixed.onnx.data").size(), readFile(root / "weights.bin").size());
    EXPECT_EQ(loadedValues(output, "conv.weight"), loadedValues(source, "conv.weight"));
    EXPECT_EQ(test::onnxFullCheck(output), "");

    // weights.onnx's data file would be weights.onnx.data: the input's own data file there is kept, force or not.
    const fs::path other = externalDataModel(root / "second", "weights.onnx.data", true);
    const std::string data = readFile(root / "second" / "weights.onnx.data");
    FileModelSink onInput((root / "second" / "weights.onnx").string(), /*force*/ true);
    try
    {
        writeEditedModel(other.string(), {}, onInput);
        ADD_FAILURE() << "replaced the input's data file";
    }
    catch (const InputError& error)
    {
        EXPECT_NE(error.message().find("is the external data file 'weights.onnx.data'"), std::string::npos)
            << error.message();
    }
    EXPECT_EQ(readFile(root / "second" / "weights.onnx.data"), data);
    EXPECT_FALSE(fs::exists(root / "second" / "weights.onnx"));
}

// ----- the output file ------------------------------------------------------------------------------------------

TEST(ModelWriter, ExistingOutputIsRefusedWithoutForce)
{
    const fs::path dir = tempDir("writer-exists");
    const fs::path source = saveModel(dir / "model.onnx", residualModel());
    const fs::path output = writeFile(dir / "out.onnx", "keep me");
    FileModelSink refusing(output.string());
    try
    {
        writeEditedModel(source.string(), {}, refusing);
        ADD_FAILURE() << "overwrote an existing file";
    }
    catch (const InputError& error)
    {
        EXPECT_EQ(error.where().path, output.string());
        EXPECT_NE(error.message().find("already exists"), std::string::npos);
    }
    EXPECT_EQ(readFile(output), "keep me");

    FileModelSink forcing(output.string(), true);
    writeEditedModel(source.string(), {}, forcing);
    EXPECT_EQ(readFile(output), readFile(source));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2); // no temporary left
}

// The model is written next to the output and renamed onto it; with --force a rename onto /dev/null replaced the
// device node with a regular file. A name that leads to anything but a file is refused, force or not.
TEST(ModelWriter, OutputThatIsNoFileIsRefusedEvenWithForce)
{
    const fs::path dir = tempDir("writer-fifo");
    const fs::path source = saveModel(dir / "model.onnx", residualModel());
    const fs::path fifo = dir / "pipe.onnx";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
    fs::create_symlink(fifo, dir / "link-to-pipe.onnx");
    for (const fs::path& output : {fifo, dir / "link-to-pipe.onnx"})
    {
        for (const bool force : {false, true})
        {
            FileModelSink sink(output.string(), force);
            try
            {
                writeEditedModel(source.string(), {}, sink);
                ADD_FAILURE() << "wrote onto " << output << (force ? " with force" : "");
            }
            catch (const InputError& error)
            {
                EXPECT_EQ(error.where().path, output.string());
                EXPECT_NE(error.message().find("is not a regular file"), std::string::npos) << error.message();
            }
        }
    }
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "link-to-pipe.onnx")));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 3); // no temporary left

    // A link to a file is replaced by the model with force (the file it pointed to is left alone), as a file is.
    const fs::path kept = writeFile(dir / "kept.onnx", "keep me");
    fs::create_symlink(kept, dir / "link-to-file.onnx");
    FileModelSink forcing((dir / "link-to-file.onnx").string(), true);
    writeEditedModel(source.string(), {}, forcing);
    EXPECT_EQ(readFile(dir / "link-to-file.onnx"), readFile(source));
    EXPECT_FALSE(fs::is_symlink(fs::symlink_status(dir / "link-to-file.onnx")));
    EXPECT_EQ(readFile(kept), "keep me");
}

// Without force, a file that appears at the output while the model is written is not replaced.
TEST(ModelWriter, MoveIntoPlaceDoesNotReplaceAFileThatAppearedMeanwhile)
{
    const fs::path dir = tempDir("writer-appeared");
    const fs::path finished = writeFile(dir / "finished.onnx", "model");
    const fs::path output = writeFile(dir / "out.onnx", "someone else's");
    try
    {
        moveOutputFileIntoPlace(finished.string(), output.string(), false);
        ADD_FAILURE() << "replaced a file that appeared meanwhile";
    }
    catch (const InputError& error)
    {
        EXPECT_EQ(error.where().path, output.string());
        EXPECT_NE(error.message().find("already exists"), std::string::npos) << error.message();
    }
    EXPECT_EQ(readFile(output), "someone else's");
    EXPECT_EQ(readFile(finished), "model");
    moveOutputFileIntoPlace(finished.string(), output.string(), true);
    EXPECT_EQ(readFile(output), "model");
    EXPECT_FALSE(fs::exists(finished));
}

TEST(ModelWriter, InputAsOutputIsRefusedUnderAnySpelling)
{
    const fs::path dir = tempDir("writer-same");
    const fs::path source = saveModel(dir / "model.onnx", residualModel());
    const std::string original = readFile(source);
    fs::create_directories(dir / "sub");
    fs::create_symlink(source, dir / "link.onnx");
    fs::create_hard_link(source, dir / "hard.onnx");
    for (const fs::path& output : {source, dir / "sub" / ".." / "model.onnx", dir / "link.onnx", dir / "hard.onnx",
                                   fs::path(dir / "./model.onnx")})
    {
        FileModelSink sink(output.string(), /*force*/ true);
        try
        {
            writeEditedModel(source.string(), {}, sink);
            ADD_FAILURE() << "wrote over the input through " << output;
        }
        catch (const InputError& error)
        {
            EXPECT_NE(error.message().find("is the input model"), std::string::npos) << error.what();
        }
        EXPECT_EQ(readFile(source), original);
    }
}

TEST(ModelWriter, ExternalDataFileAsOutputIsRefused)
{
    const fs::path root = tempDir("writer-data-as-output");
    const fs::path source = externalDataModel(root, "weights.bin", true);
    const std::string data = readFile(root / "weights.bin");
    FileModelSink sink((root / "weights.bin").string(), /*force*/ true);
    EXPECT_THROW(writeEditedModel(source.string(), {}, sink), InputError);
    EXPECT_EQ(readFile(root / "weights.bin"), data);
}

TEST(ModelWriter, ReadOnlyOrMissingFolderIsAnInputErrorNamingThePath)
{
    const fs::path dir = tempDir("writer-readonly");
    const fs::path source = saveModel(dir / "model.onnx", residualModel());
    {
        const fs::path missing = dir / "no-such-folder" / "out.onnx";
        FileModelSink sink(missing.string());
        try
        {
            writeEditedModel(source.string(), {}, sink);
            ADD_FAILURE() << "wrote into a missing folder";
        }
        catch (const InputError& error)
        {
            EXPECT_EQ(error.where().path, missing.string());
        }
    }
    if (::geteuid() == 0)
    {
        GTEST_SKIP() << "running as root: permissions are not enforced";
    }
    fs::create_directories(dir / "locked");
    fs::permissions(dir / "locked", fs::perms::owner_read | fs::perms::owner_exec);
    const fs::path output = dir / "locked" / "out.onnx";
    FileModelSink sink(output.string());
    try
    {
        writeEditedModel(source.string(), {}, sink);
        ADD_FAILURE() << "wrote into a read-only folder";
    }
    catch (const InputError& error)
    {
        EXPECT_EQ(error.where().path, output.string());
        EXPECT_NE(error.message().find("locked"), std::string::npos) << error.what();
    }
    fs::permissions(dir / "locked", fs::perms::owner_all);
    EXPECT_TRUE(fs::is_empty(dir / "locked"));
}

//! In a child process: writes source to output with a 100 KiB file size limit; 0 when that failed as it should.
int writeUnderFileSizeLimit(const fs::path& source, const fs::path& output)
{
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{100 << 10, 100 << 10};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    FileModelSink sink(output.string());
    try
    {
        writeEditedModel(source.string(), {}, sink);
    }
    catch (const InputError& error)
    {
        return std::string(error.what()).find("cannot write") != std::string::npos ? 0 : 2;
    }
    return 1;
}

TEST(ModelWriter, FailedWriteLeavesNoFile)
{
    const fs::path dir = tempDir("writer-failed");
    onnx::ModelProto model = residualModel();
    onnx::TensorProto* big = model.mutable_graph()->add_initializer();
    big->set_name("big");
    big->set_data_type(onnx::TensorProto::UINT8);
    big->add_dims(1 << 20);
    big->set_raw_data(std::string(1 << 20, '\x5a'));
    const fs::path source = saveModel(dir / "model.onnx", model);
    const fs::path output = dir / "out" / "model.onnx";
    fs::create_directories(output.parent_path());

    // The file size limit makes a write fail half way (EFBIG), as a full disk would.
    EXPECT_EXIT(std::_Exit(writeUnderFileSizeLimit(source, output)), ::testing::ExitedWithCode(0), "");
    EXPECT_TRUE(fs::is_empty(output.parent_path()));

    // A corrupt source fails before anything is created.
    std::string truncated = readFile(source);
    truncated.resize(truncated.size() - 1000);
    const fs::path corrupt = writeFile(dir / "corrupt.onnx", truncated);
    FileModelSink sink(output.string());
    EXPECT_THROW(writeEditedModel(corrupt.string(), {}, sink), InputError);
    EXPECT_TRUE(fs::is_empty(output.parent_path()));

    // So does a source that is not a model.
    const fs::path text = writeFile(dir / "notes.onnx", "hello, this is not a model");
    EXPECT_THROW(writeEditedModel(text.string(), {}, sink), InputError);
    EXPECT_THROW(writeEditedModel((dir / "absent.onnx").string(), {}, sink), InputError);
    EXPECT_TRUE(fs::is_empty(output.parent_path()));
}

// ----- real models ----------------------------------------------------------------------------------------------

std::vector<fs::path> sharedModels()
{
    std::vector<fs::path> models;
    for (const char* folder : {"", "with-weights"})
    {
        for (const auto& entry : fs::directory_iterator(test::sharedModel(folder)))
        {
            if (entry.path().extension() == ".onnx")
            {
                models.push_back(entry.path());
            }
        }
    }
    std::sort(models.begin(), models.end());
    return models;
}

//! A small edit any model takes: an Identity after the first graph output (renamed to follow it) and, when there
//! is a QuantizeLinear with a one-element float scale, that scale replaced.
ModelEdits smallEdit(const OnnxGraph& graph)
{
    ModelEdits edits;
    const std::string& output = graph.graphOutputs.at(0);
    NewNode identity;
    identity.name = "qdq_doctor_test/Identity";
    identity.opType = "Identity";
    identity.inputs = {output};
    identity.outputs = {output + "_identity"};
    edits.insertNodes = {{static_cast<std::uint32_t>(graph.nodes.size()), identity}};
    edits.renameGraphOutputs = {{output, output + "_identity"}};
    for (const QdqParameters& qdq : graph.qdq)
    {
        const OnnxConstant* scale = graph.constant(graph.nodes[qdq.node].inputs[1]);
        if (qdq.isQuantize && scale != nullptr && !scale->fromConstantNode && scale->dataType == OnnxDataType::kFloat &&
            scale->elementCount == 1 && scale->dims.empty())
        {
            edits.replaceInitializers = {floatScalar(scale->name, 0.5f)};
            break;
        }
    }
    return edits;
}

TEST(ModelWriterRealData, SharedModelsCopyByteForByteAndTakeASmallEdit)
{
    REQUIRE_SHARED();
    const fs::path out = tempDir("writer-shared");
    std::size_t checked = 0;
    for (const fs::path& model : sharedModels())
    {
        SCOPED_TRACE(model.string());
        const bool withWeights = model.parent_path().filename() == "with-weights";
        const std::string original = readFile(model);
        // A copy whose data file has the name the model's own has comes out byte for byte: the data file is laid out
        // as the exporter laid it out (graph order, one tensor after another).
        MemoryModelSink copy(model.filename().string() + ".data");
        writeEditedModel(model.string(), {}, copy);
        EXPECT_EQ(copy.bytes(), original);
        EXPECT_EQ(copy.dataBytes(), withWeights ? readFile(model.string() + ".data") : std::string());

        const OnnxGraph graph = readOnnx(model.string());
        const ModelEdits edits = smallEdit(graph);
        const fs::path output = out / ((withWeights ? "with-weights-" : "") + model.filename().string());
        FileModelSink sink(output.string());
        const ModelWriteResult result = writeEditedModel(model.string(), edits, sink);
        EXPECT_EQ(result.nodesInserted, 1u);
        EXPECT_EQ(result.initializersReplaced, edits.replaceInitializers.size());
        EXPECT_EQ(result.outputBytes, fs::file_size(output));

        const OnnxGraph edited = readOnnx(output.string());
        EXPECT_EQ(edited.nodes.size(), graph.nodes.size() + 1);
        EXPECT_EQ(edited.nodes.back().opType, "Identity");
        EXPECT_EQ(edited.graphOutputs.at(0), graph.graphOutputs.at(0) + "_identity");
        for (std::size_t i = 0; i < graph.nodes.size(); ++i)
        {
            EXPECT_EQ(edited.nodes[i].name, graph.nodes[i].name);
        }

        ModelCheckOptions options;
        options.externalDataMustExist = withWeights;
        const std::string sourceProblem = checkModelFile(model.string(), options);
        if (!sourceProblem.empty())
        {
            // Not ours to judge: the source itself does not pass this ONNX version's checks.
            std::cout << "[ INFO     ] " << model.filename().string()
                      << " does not pass onnx 1.12's checks: " << sourceProblem.substr(0, 200) << "\n";
            continue;
        }
        EXPECT_EQ(checkModelFile(output.string(), options), "");
        if (withWeights)
        {
            // ONNX's whole check on the file: it finds the weights in the output's own data file.
            EXPECT_TRUE(result.notes.empty()) << result.notes.front();
            EXPECT_EQ(result.dataBytes, fs::file_size(output.string() + ".data"));
            EXPECT_EQ(test::onnxFullCheck(output), "");
        }
        ++checked;
    }
    EXPECT_GT(checked, 0u);
}

} // namespace
} // namespace qdq
