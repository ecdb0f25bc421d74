// ONNX reader tests: models built here with the ONNX protobuf classes, broken inputs, and the real models in
// ../shared.
#include "test_support.h"

#include "parsers/onnx_tensor_interner.h"
#include "qdq/readers.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <set>

namespace fs = std::filesystem;

namespace
{

using qdq::InputError;
using qdq::OnnxDataType;
using qdq::OnnxGraph;
using qdq::OnnxReadOptions;

// ----- model building helpers -------------------------------------------------------------------------------

onnx::TensorProto* addInitializer(onnx::GraphProto& graph, const std::string& name, int dataType,
                                  const std::vector<std::int64_t>& dims)
{
    onnx::TensorProto* tensor = graph.add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(dataType);
    for (std::int64_t dim : dims)
    {
        tensor->add_dims(dim);
    }
    return tensor;
}

void setRawFloats(onnx::TensorProto& tensor, const std::vector<float>& values)
{
    std::string raw(values.size() * sizeof(float), '\0');
    std::memcpy(raw.data(), values.data(), raw.size());
    tensor.set_raw_data(raw);
}

void setExternal(onnx::TensorProto& tensor, const std::string& location, std::int64_t offset, std::int64_t length)
{
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = tensor.add_external_data();
    entry->set_key("location");
    entry->set_value(location);
    entry = tensor.add_external_data();
    entry->set_key("offset");
    entry->set_value(std::to_string(offset));
    entry = tensor.add_external_data();
    entry->set_key("length");
    entry->set_value(std::to_string(length));
}

onnx::NodeProto* addNode(onnx::GraphProto& graph, const std::string& name, const std::string& opType,
                         const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                         const std::string& domain = "")
{
    onnx::NodeProto* node = graph.add_node();
    node->set_name(name);
    node->set_op_type(opType);
    if (!domain.empty())
    {
        node->set_domain(domain);
    }
    for (const auto& input : inputs)
    {
        node->add_input(input);
    }
    for (const auto& output : outputs)
    {
        node->add_output(output);
    }
    return node;
}

void addIntAttribute(onnx::NodeProto& node, const std::string& name, std::int64_t value)
{
    auto* attribute = node.add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::INT);
    attribute->set_i(value);
}

onnx::TensorProto* addConstantNode(onnx::GraphProto& graph, const std::string& name, const std::string& output,
                                   int dataType)
{
    onnx::NodeProto* node = addNode(graph, name, "Constant", {}, {output});
    auto* attribute = node->add_attribute();
    attribute->set_name("value");
    attribute->set_type(onnx::AttributeProto::TENSOR);
    attribute->mutable_t()->set_data_type(dataType);
    return attribute->mutable_t();
}

void addValueInfo(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name, int elemType)
{
    onnx::ValueInfoProto* info = list->Add();
    info->set_name(name);
    info->mutable_type()->mutable_tensor_type()->set_elem_type(elemType);
}

onnx::ModelProto emptyModel(int opset = 13)
{
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("qdq-doctor-tests");
    model.set_producer_version("1.0");
    auto* entry = model.add_opset_import();
    entry->set_domain("");
    entry->set_version(opset);
    model.mutable_graph()->set_name("fixture");
    return model;
}

//! Q -> DQ -> Conv with a per-channel weight DQ, Constant-node scales, an Identity-wrapped scale, an unnamed node,
//! a custom-domain plugin, an external-data bias (missing file), an FP8 zero point and an INT4 block-quantized DQ.
onnx::ModelProto buildQdqModel(const std::string& biasLocation = "weights.bin")
{
    onnx::ModelProto model = emptyModel(21);
    auto* plugins = model.add_opset_import();
    plugins->set_domain("com.example.plugins");
    plugins->set_version(1);
    onnx::GraphProto& graph = *model.mutable_graph();
    addValueInfo(graph.mutable_input(), "input", onnx::TensorProto::FLOAT);

    // Activation scale from a named Constant node (float_data), zero point from an unnamed Constant node.
    onnx::TensorProto* actScale = addConstantNode(graph, "act_scale_const", "act_scale", onnx::TensorProto::FLOAT);
    actScale->add_float_data(0.025F);
    onnx::TensorProto* actZero = addConstantNode(graph, "", "act_zp", onnx::TensorProto::INT8);
    actZero->add_int32_data(-3);

    addNode(graph, "input_q", "QuantizeLinear", {"input", "act_scale", "act_zp"}, {"input_q_out"});
    addNode(graph, "input_dq", "DequantizeLinear", {"input_q_out", "act_scale", "act_zp"}, {"input_dq_out"});

    // Per-channel int8 weights with DQ axis 0; the scale goes through an Identity node.
    onnx::TensorProto* weights = addInitializer(graph, "conv_w", onnx::TensorProto::INT8, {4, 3, 3, 3});
    std::string raw(108, '\0');
    for (std::size_t i = 0; i < raw.size(); ++i)
    {
        raw[i] = static_cast<char>(static_cast<int>(i) - 54);
    }
    weights->set_raw_data(raw);
    onnx::TensorProto* weightScale = addInitializer(graph, "w_scale_init", onnx::TensorProto::FLOAT, {4});
    for (float value : {0.1F, 0.2F, 0.3F, 0.4F})
    {
        weightScale->add_float_data(value);
    }
    addNode(graph, "w_scale_identity", "Identity", {"w_scale_init"}, {"w_scale"});
    addInitializer(graph, "w_zp", onnx::TensorProto::INT8, {4})->set_raw_data(std::string(4, '\0'));
    onnx::NodeProto* weightDq = addNode(graph, "w_dq", "DequantizeLinear", {"conv_w", "w_scale", "w_zp"}, {"w_dq_out"});
    addIntAttribute(*weightDq, "axis", 0);

    onnx::TensorProto* bias = addInitializer(graph, "conv_b", onnx::TensorProto::FLOAT, {4});
    setExternal(*bias, biasLocation, 0, 16);

    onnx::NodeProto* conv = addNode(graph, "conv", "Conv", {"input_dq_out", "w_dq_out", "conv_b"}, {"conv_out"});
    auto* kernel = conv->add_attribute();
    kernel->set_name("kernel_shape");
    kernel->set_type(onnx::AttributeProto::INTS);
    kernel->add_ints(3);
    kernel->add_ints(3);

    onnx::NodeProto* plugin =
        addNode(graph, "my_plugin", "MyPlugin", {"conv_out"}, {"plugin_out"}, "com.example.plugins");
    addIntAttribute(*plugin, "mode", 3);

    // FP8 quantize with an output_dtype attribute (opset 21).
    addInitializer(graph, "fp8_scale", onnx::TensorProto::FLOAT, {});
    setRawFloats(*graph.mutable_initializer(graph.initializer_size() - 1), {2.0F});
    addInitializer(graph, "fp8_zp", 17 /* FLOAT8E4M3FN */, {})->set_raw_data(std::string(1, '\x38'));
    onnx::NodeProto* fp8 =
        addNode(graph, "fp8_q", "QuantizeLinear", {"plugin_out", "fp8_scale", "fp8_zp"}, {"fp8_q_out"});
    addIntAttribute(*fp8, "output_dtype", 17);

    // INT4 block-quantized weights: axis 1, block_size 2; values and zero points packed two per byte.
    onnx::TensorProto* weights4 = addInitializer(graph, "w4", 22 /* INT4 */, {2, 4});
    weights4->set_raw_data(std::string("\xF8\x70\x21\xE3", 4)); // -8 -1 0 7 1 2 3 -2
    onnx::TensorProto* scale4 = addInitializer(graph, "w4_scale", onnx::TensorProto::FLOAT, {2, 2});
    setRawFloats(*scale4, {0.5F, 0.25F, 0.125F, 1.0F});
    onnx::TensorProto* zero4 = addInitializer(graph, "w4_zp", 22 /* INT4 */, {2, 2});
    zero4->add_int32_data(0xF1); // 1, -1
    zero4->add_int32_data(0x20); // 0, 2
    onnx::NodeProto* dq4 = addNode(graph, "int4_dq", "DequantizeLinear", {"w4", "w4_scale", "w4_zp"}, {"w4_out"});
    addIntAttribute(*dq4, "axis", 1);
    addIntAttribute(*dq4, "block_size", 2);

    addValueInfo(graph.mutable_output(), "fp8_q_out", 17);
    addValueInfo(graph.mutable_output(), "w4_out", onnx::TensorProto::FLOAT);
    return model;
}

std::string serialize(const onnx::ModelProto& model)
{
    std::string bytes;
    EXPECT_TRUE(model.SerializeToString(&bytes));
    return bytes;
}

fs::path writeModel(const fs::path& dir, const std::string& name, const onnx::ModelProto& model)
{
    return qdq::test::writeFile(dir / name, serialize(model));
}

bool hasWarning(const OnnxGraph& graph, const std::string& fragment)
{
    for (const auto& warning : graph.warnings)
    {
        if (warning.message.find(fragment) != std::string::npos)
        {
            return true;
        }
    }
    return false;
}

std::size_t countWarnings(const OnnxGraph& graph, const std::string& fragment)
{
    std::size_t count = 0;
    for (const auto& warning : graph.warnings)
    {
        count += warning.message.find(fragment) != std::string::npos ? 1 : 0;
    }
    return count;
}

std::string errorOf(const std::function<void()>& action)
{
    try
    {
        action();
    }
    catch (const InputError& error)
    {
        return error.what();
    }
    return "<no error>";
}

std::string bufferError(const std::string& bytes)
{
    return errorOf([&] { qdq::readOnnxFromBuffer(bytes, "buffer.onnx"); });
}

const qdq::QdqParameters& qdqNamed(const OnnxGraph& graph, const std::string& name)
{
    const qdq::OnnxNode* node = graph.findNode(name);
    EXPECT_NE(node, nullptr) << name;
    static const qdq::QdqParameters kNone;
    if (node == nullptr)
    {
        return kNone;
    }
    const qdq::QdqParameters* parameters = graph.qdqOf(node->index);
    EXPECT_NE(parameters, nullptr) << name;
    return parameters == nullptr ? kNone : *parameters;
}

// ----- the project's own models -----------------------------------------------------------------------------

TEST(OnnxReader, ReadsQdqConvModel)
{
    fs::path dir = qdq::test::tempDir("onnx-qdq");
    fs::path path = writeModel(dir, "model.onnx", buildQdqModel());
    OnnxGraph graph = qdq::readOnnx(path.string());

    EXPECT_EQ(graph.sourcePath, path.string());
    EXPECT_EQ(graph.irVersion, 8);
    EXPECT_EQ(graph.producerName, "qdq-doctor-tests");
    EXPECT_EQ(graph.producerVersion, "1.0");
    EXPECT_EQ(graph.graphName, "fixture");
    ASSERT_EQ(graph.opsets.size(), 2U);
    EXPECT_EQ(graph.opsets[0], (std::pair<std::string, std::int64_t>("", 21)));
    EXPECT_EQ(graph.opsets[1], (std::pair<std::string, std::int64_t>("com.example.plugins", 1)));

    ASSERT_EQ(graph.nodes.size(), 10U);
    EXPECT_EQ(graph.graphInputs, std::vector<std::string>{"input"});
    EXPECT_EQ(graph.graphOutputs, (std::vector<std::string>{"fp8_q_out", "w4_out"}));
    EXPECT_EQ(graph.quantizeCount(), 2U);
    EXPECT_EQ(graph.dequantizeCount(), 3U);

    // The unnamed Constant node is named after its first output, as TensorRT does.
    const qdq::OnnxNode& unnamed = graph.nodes[1];
    EXPECT_TRUE(unnamed.nameWasEmpty);
    EXPECT_EQ(unnamed.name, "node_of_act_zp");
    EXPECT_EQ(graph.findNode("node_of_act_zp"), &unnamed);
    EXPECT_FALSE(graph.nodes[0].nameWasEmpty);

    // Producers and consumers.
    ASSERT_NE(graph.producer("input_q_out"), nullptr);
    EXPECT_EQ(graph.producer("input_q_out")->name, "input_q");
    EXPECT_EQ(graph.consumers("act_scale").size(), 2U);
    EXPECT_EQ(graph.consumers("conv_out").size(), 1U);
    EXPECT_TRUE(graph.consumers("nothing").empty());
    EXPECT_EQ(graph.producer("input"), nullptr);

    // Custom-domain plugin kept as an opaque node.
    const qdq::OnnxNode* plugin = graph.findNode("my_plugin");
    ASSERT_NE(plugin, nullptr);
    EXPECT_TRUE(plugin->isCustomDomain());
    EXPECT_EQ(plugin->domain, "com.example.plugins");
    EXPECT_EQ(plugin->opType, "MyPlugin");
    EXPECT_EQ(plugin->intAttribute("mode"), 3);
    EXPECT_FALSE(graph.findNode("conv")->isCustomDomain());
    const qdq::OnnxAttribute* kernel = graph.findNode("conv")->attribute("kernel_shape");
    ASSERT_NE(kernel, nullptr);
    EXPECT_EQ(kernel->kind, qdq::OnnxAttribute::Kind::kInts);
    EXPECT_EQ(kernel->ints, (std::vector<std::int64_t>{3, 3}));

    // Activation Q: Constant-node scale and zero point.
    const qdq::QdqParameters& inputQ = qdqNamed(graph, "input_q");
    EXPECT_TRUE(inputQ.isQuantize);
    EXPECT_TRUE(inputQ.scaleIsConstant);
    ASSERT_EQ(inputQ.scale.size(), 1U);
    EXPECT_FLOAT_EQ(static_cast<float>(inputQ.scale[0]), 0.025F);
    EXPECT_EQ(inputQ.scaleElements, 1);
    EXPECT_TRUE(inputQ.hasZeroPoint);
    EXPECT_TRUE(inputQ.zeroPointIsConstant);
    EXPECT_EQ(inputQ.zeroPointType, OnnxDataType::kInt8);
    EXPECT_EQ(inputQ.zeroPoint, std::vector<double>{-3.0});
    EXPECT_FALSE(inputQ.axis.has_value());
    const qdq::OnnxConstant* actScale = graph.constant("act_scale");
    ASSERT_NE(actScale, nullptr);
    EXPECT_TRUE(actScale->fromConstantNode);
    EXPECT_TRUE(actScale->dims.empty());

    // Weight DQ: per-channel through the Identity node.
    const qdq::QdqParameters& weightDq = qdqNamed(graph, "w_dq");
    EXPECT_FALSE(weightDq.isQuantize);
    EXPECT_TRUE(weightDq.scaleIsConstant);
    ASSERT_EQ(weightDq.scale.size(), 4U);
    EXPECT_FLOAT_EQ(static_cast<float>(weightDq.scale[3]), 0.4F);
    EXPECT_EQ(weightDq.axis, 0);
    EXPECT_EQ(weightDq.zeroPoint, std::vector<double>(4, 0.0));
    const qdq::OnnxConstant* weights = graph.constant("conv_w");
    ASSERT_NE(weights, nullptr);
    EXPECT_EQ(weights->dataType, OnnxDataType::kInt8);
    EXPECT_EQ(weights->dims, (std::vector<std::int64_t>{4, 3, 3, 3}));
    EXPECT_EQ(weights->elementCount, 108);
    // 108 bytes: over smallTensorBytes, and no Q/DQ node uses it as a scale or zero point, so not decoded.
    EXPECT_FALSE(weights->dataLoaded);
    EXPECT_TRUE(weights->values.empty());
    EXPECT_FALSE(weights->fromConstantNode);

    // FP8 zero point and output_dtype.
    const qdq::QdqParameters& fp8 = qdqNamed(graph, "fp8_q");
    EXPECT_EQ(fp8.zeroPointType, OnnxDataType::kFloat8E4M3FN);
    EXPECT_EQ(fp8.zeroPoint, std::vector<double>{1.0});
    EXPECT_EQ(fp8.outputDtype, 17);
    EXPECT_EQ(fp8.scale, std::vector<double>{2.0});
    EXPECT_EQ(graph.tensorType("fp8_q_out"), OnnxDataType::kFloat8E4M3FN);

    // INT4 block quantization.
    const qdq::QdqParameters& int4 = qdqNamed(graph, "int4_dq");
    EXPECT_EQ(int4.axis, 1);
    EXPECT_EQ(int4.blockSize, 2);
    EXPECT_EQ(int4.zeroPointType, OnnxDataType::kInt4);
    EXPECT_EQ(int4.zeroPoint, (std::vector<double>{1, -1, 0, 2}));
    EXPECT_EQ(int4.scale, (std::vector<double>{0.5, 0.25, 0.125, 1.0}));
    EXPECT_EQ(int4.scaleElements, 4);
    EXPECT_EQ(graph.constant("w4")->values, (std::vector<double>{-8, -1, 0, 7, 1, 2, 3, -2}));

    // External bias whose file is missing: one warning naming the file, the graph is still read.
    const qdq::OnnxConstant* bias = graph.constant("conv_b");
    ASSERT_NE(bias, nullptr);
    EXPECT_TRUE(bias->external);
    EXPECT_EQ(bias->externalLocation, "weights.bin");
    EXPECT_EQ(bias->externalOffset, 0);
    EXPECT_EQ(bias->externalLength, 16);
    EXPECT_FALSE(bias->dataLoaded);
    EXPECT_TRUE(graph.externalDataMissing);
    EXPECT_EQ(countWarnings(graph, "weights.bin"), 1U);
    EXPECT_EQ(graph.warnings.size(), 1U) << graph.warnings.front().describe();
}

// inspect prints each fact as "key: value"; a key longer than the column still gets its space.
TEST(OnnxReader, InspectSaysTheExternalDataIsMissing)
{
    fs::path path = writeModel(qdq::test::tempDir("onnx-inspect-missing"), "model.onnx", buildQdqModel());
    auto result = qdq::test::runCli({"inspect", path.string()});
    EXPECT_EQ(result.exitStatus, 0) << result.err;
    EXPECT_NE(result.out.find("  external_data_missing: yes\n"), std::string::npos) << result.out;
}

TEST(OnnxReader, BufferAndFileGiveTheSameGraph)
{
    fs::path dir = qdq::test::tempDir("onnx-buffer");
    std::string bytes = serialize(buildQdqModel());
    fs::path path = qdq::test::writeFile(dir / "model.onnx", bytes);
    OnnxGraph fromFile = qdq::readOnnx(path.string());
    OnnxGraph fromBuffer = qdq::readOnnxFromBuffer(bytes, path.string());
    ASSERT_EQ(fromFile.nodes.size(), fromBuffer.nodes.size());
    for (std::size_t i = 0; i < fromFile.nodes.size(); ++i)
    {
        EXPECT_EQ(fromFile.nodes[i].name, fromBuffer.nodes[i].name);
        EXPECT_EQ(fromFile.nodes[i].inputs, fromBuffer.nodes[i].inputs);
    }
    ASSERT_EQ(fromFile.qdq.size(), fromBuffer.qdq.size());
    for (std::size_t i = 0; i < fromFile.qdq.size(); ++i)
    {
        EXPECT_EQ(fromFile.qdq[i].scale, fromBuffer.qdq[i].scale);
        EXPECT_EQ(fromFile.qdq[i].zeroPoint, fromBuffer.qdq[i].zeroPoint);
    }
    EXPECT_TRUE(fromBuffer.externalDataMissing);
}

TEST(OnnxReader, ExternalDataLoadsWhenAskedAndIsBoundsChecked)
{
    fs::path dir = qdq::test::tempDir("onnx-external");
    std::vector<float> bias = {1.5F, -2.0F, 3.25F, 0.0F};
    std::string data(8, 'x'); // the bias starts at offset 8
    data.append(reinterpret_cast<const char*>(bias.data()), 16);
    qdq::test::writeFile(dir / "weights.bin", data);
    onnx::ModelProto model = buildQdqModel();
    for (auto& tensor : *model.mutable_graph()->mutable_initializer())
    {
        if (tensor.name() == "conv_b")
        {
            tensor.clear_external_data();
            setExternal(tensor, "weights.bin", 8, 16);
        }
    }
    fs::path path = writeModel(dir, "model.onnx", model);

    OnnxGraph graphOnly = qdq::readOnnx(path.string());
    EXPECT_FALSE(graphOnly.externalDataMissing);
    EXPECT_TRUE(graphOnly.warnings.empty());
    EXPECT_FALSE(graphOnly.constant("conv_b")->dataLoaded);

    OnnxReadOptions options;
    options.loadWeights = true;
    OnnxGraph withWeights = qdq::readOnnx(path.string(), options);
    const qdq::OnnxConstant* loaded = withWeights.constant("conv_b");
    ASSERT_TRUE(loaded->dataLoaded);
    EXPECT_EQ(loaded->values, (std::vector<double>{1.5, -2.0, 3.25, 0.0}));

    // Offset + length past the end of the external file.
    for (auto& tensor : *model.mutable_graph()->mutable_initializer())
    {
        if (tensor.name() == "conv_b")
        {
            tensor.clear_external_data();
            setExternal(tensor, "weights.bin", 16, 16);
        }
    }
    fs::path outside = writeModel(dir, "outside.onnx", model);
    EXPECT_NO_THROW(qdq::readOnnx(outside.string())); // not read without loadWeights
    std::string error = errorOf([&] { qdq::readOnnx(outside.string(), options); });
    EXPECT_NE(error.find("lies outside the 24-byte file"), std::string::npos) << error;
}

// Locations outside the model's folder are never read: the tensors stored there are skipped with a warning that
// names them, and the rest of the model is read as usual.
TEST(OnnxReader, SkipsExternalLocationsOutsideTheModelFolder)
{
    fs::path root = qdq::test::tempDir("onnx-escape");
    fs::path dir = root / "model";
    fs::create_directories(dir);
    // Readable bytes of the right size: if they were read, conv_b would load.
    qdq::test::writeFile(root / "secret.bin", std::string(64, '\0'));
    fs::create_symlink(root / "secret.bin", dir / "link.bin");

    const std::pair<std::string, std::string> cases[] = {
        {(root / "secret.bin").string(), "is an absolute path"},
        {"../secret.bin", "contains a '..' component"},
        {"sub/../../secret.bin", "contains a '..' component"},
        {"link.bin", "resolves outside the model's folder (through a symbolic link)"}};
    for (const auto& [location, why] : cases)
    {
        fs::path path = writeModel(dir, "model.onnx", buildQdqModel(location));
        OnnxReadOptions options;
        options.loadWeights = true;
        OnnxGraph graph = qdq::readOnnx(path.string(), options);
        EXPECT_TRUE(graph.externalDataMissing) << location;
        EXPECT_FALSE(graph.constant("conv_b")->dataLoaded) << location;
        EXPECT_EQ(graph.constant("w_scale_init")->values, (std::vector<double>{0.1F, 0.2F, 0.3F, 0.4F})) << location;
        ASSERT_EQ(graph.warnings.size(), 1u) << location;
        const std::string& warning = graph.warnings.front().message;
        EXPECT_NE(warning.find("external data location '" + location + "' " + why), std::string::npos) << warning;
        EXPECT_NE(warning.find("1 tensor(s) stored there is skipped: 'conv_b'"), std::string::npos) << warning;
    }
    // A symbolic link that stays inside the folder is fine.
    qdq::test::writeFile(dir / "real.bin", std::string(16, '\0'));
    fs::create_symlink(dir / "real.bin", dir / "inside.bin");
    fs::path path = writeModel(dir, "model.onnx", buildQdqModel("inside.bin"));
    OnnxReadOptions options;
    options.loadWeights = true;
    OnnxGraph graph = qdq::readOnnx(path.string(), options);
    EXPECT_EQ(graph.constant("conv_b")->values, std::vector<double>(4, 0.0));
}

TEST(OnnxReader, LargeInlineTensorsAreSkippedButQdqParametersAreRead)
{
    onnx::ModelProto model = emptyModel();
    onnx::GraphProto& graph = *model.mutable_graph();
    addValueInfo(graph.mutable_input(), "x", onnx::TensorProto::FLOAT);
    const int channels = 2048; // an 8 KiB scale: over smallTensorBytes
    std::vector<float> scales(channels);
    for (int i = 0; i < channels; ++i)
    {
        scales[static_cast<std::size_t>(i)] = 0.001F * static_cast<float>(i + 1);
    }
    setRawFloats(*addInitializer(graph, "big_scale", onnx::TensorProto::FLOAT, {channels}), scales);
    onnx::TensorProto* weights = addInitializer(graph, "big_w", onnx::TensorProto::INT8, {channels, 16});
    weights->set_raw_data(std::string(channels * 16, '\x05'));
    onnx::NodeProto* dq = addNode(graph, "dq", "DequantizeLinear", {"big_w", "big_scale"}, {"w"});
    addIntAttribute(*dq, "axis", 0);
    // A large scale from a Constant node (float_data, not raw).
    onnx::TensorProto* constantScale = addConstantNode(graph, "c", "const_scale", onnx::TensorProto::FLOAT);
    constantScale->add_dims(channels);
    for (float value : scales)
    {
        constantScale->add_float_data(value * 2);
    }
    addNode(graph, "q", "QuantizeLinear", {"x", "const_scale"}, {"xq"});
    addNode(graph, "conv", "Conv", {"xq", "w"}, {"y"});
    std::string bytes = serialize(model);

    for (bool fromBuffer : {false, true})
    {
        OnnxGraph read =
            fromBuffer
                ? qdq::readOnnxFromBuffer(bytes, "large.onnx")
                : qdq::readOnnx(qdq::test::writeFile(qdq::test::tempDir("onnx-large") / "large.onnx", bytes).string());
        const qdq::OnnxConstant* big = read.constant("big_w");
        ASSERT_NE(big, nullptr);
        EXPECT_FALSE(big->dataLoaded);
        EXPECT_TRUE(big->values.empty());
        EXPECT_EQ(big->elementCount, channels * 16);
        const qdq::QdqParameters& parameters = qdqNamed(read, "dq");
        ASSERT_EQ(parameters.scale.size(), static_cast<std::size_t>(channels));
        EXPECT_FLOAT_EQ(static_cast<float>(parameters.scale[99]), 0.1F);
        EXPECT_FALSE(parameters.hasZeroPoint);
        EXPECT_EQ(parameters.zeroPointType, OnnxDataType::kUndefined);
        const qdq::QdqParameters& quantize = qdqNamed(read, "q");
        ASSERT_EQ(quantize.scale.size(), static_cast<std::size_t>(channels));
        EXPECT_FLOAT_EQ(static_cast<float>(quantize.scale[99]), 0.2F);
        EXPECT_TRUE(read.warnings.empty());
    }
    OnnxReadOptions options;
    options.loadWeights = true;
    OnnxGraph loaded = qdq::readOnnxFromBuffer(bytes, "large.onnx", options);
    ASSERT_TRUE(loaded.constant("big_w")->dataLoaded);
    EXPECT_EQ(loaded.constant("big_w")->values.size(), static_cast<std::size_t>(channels * 16));
    EXPECT_EQ(loaded.constant("big_w")->values[77], 5.0);
}

TEST(OnnxReader, DecodesNumericTypes)
{
    onnx::ModelProto model = emptyModel();
    onnx::GraphProto& graph = *model.mutable_graph();
    addInitializer(graph, "f16", onnx::TensorProto::FLOAT16, {3})
        ->set_raw_data(std::string("\x00\x3C\x00\xC0\x00\x35", 6));
    addInitializer(graph, "bf16", onnx::TensorProto::BFLOAT16, {1})->add_int32_data(0x3F80); // 1.0
    addInitializer(graph, "f64", onnx::TensorProto::DOUBLE, {2})->add_double_data(-0.125);
    graph.mutable_initializer(2)->add_double_data(1e10);
    addInitializer(graph, "i64", onnx::TensorProto::INT64, {2})->add_int64_data(-5);
    graph.mutable_initializer(3)->add_int64_data(1LL << 40);
    addInitializer(graph, "u8", onnx::TensorProto::UINT8, {2})->set_raw_data(std::string("\xFF\x01", 2));
    addInitializer(graph, "i16", onnx::TensorProto::INT16, {1})->add_int32_data(-300);
    addInitializer(graph, "i32", onnx::TensorProto::INT32, {1})->set_raw_data(std::string("\xFE\xFF\xFF\xFF", 4));
    addInitializer(graph, "u4", 21 /* UINT4 */, {3})->set_raw_data(std::string("\xF1\x07", 2));        // 1 15 7
    addInitializer(graph, "e5m2", 19 /* FLOAT8E5M2 */, {2})->set_raw_data(std::string("\x3C\xC0", 2)); // 1, -2
    addInitializer(graph, "e4m3fnuz", 18, {1})->set_raw_data(std::string("\x40", 1));                  // 1
    addInitializer(graph, "e5m2fnuz", 20, {1})->set_raw_data(std::string("\x40", 1));                  // 1
    addInitializer(graph, "u64", onnx::TensorProto::UINT64, {1})->add_uint64_data(7);
    addInitializer(graph, "bad", onnx::TensorProto::FLOAT, {3})->set_raw_data(std::string(8, '\0'));
    addNode(graph, "n", "Relu", {"f16"}, {"y"});
    OnnxGraph read = qdq::readOnnxFromBuffer(serialize(model), "types.onnx");
    EXPECT_EQ(read.constant("f16")->values, (std::vector<double>{1.0, -2.0, 0.3125}));
    EXPECT_EQ(read.constant("bf16")->values, std::vector<double>{1.0});
    EXPECT_EQ(read.constant("f64")->values, (std::vector<double>{-0.125, 1e10}));
    EXPECT_EQ(read.constant("i64")->values, (std::vector<double>{-5.0, 1099511627776.0}));
    EXPECT_EQ(read.constant("u8")->values, (std::vector<double>{255.0, 1.0}));
    EXPECT_EQ(read.constant("i16")->values, std::vector<double>{-300.0});
    EXPECT_EQ(read.constant("i32")->values, std::vector<double>{-2.0});
    EXPECT_EQ(read.constant("u4")->values, (std::vector<double>{1.0, 15.0, 7.0}));
    EXPECT_EQ(read.constant("e5m2")->values, (std::vector<double>{1.0, -2.0}));
    EXPECT_EQ(read.constant("e4m3fnuz")->values, std::vector<double>{1.0});
    EXPECT_EQ(read.constant("e5m2fnuz")->values, std::vector<double>{1.0});
    EXPECT_EQ(read.constant("u64")->values, std::vector<double>{7.0});
    EXPECT_FALSE(read.constant("bad")->dataLoaded);
    EXPECT_TRUE(hasWarning(read, "raw_data holds 8 bytes, expected 12"));
    EXPECT_EQ(qdq::onnxDataTypeName(OnnxDataType::kFloat8E4M3FN), "float8e4m3fn");
    EXPECT_EQ(qdq::onnxDataTypeName(OnnxDataType::kInt4), "int4");
}

TEST(OnnxReader, InitializersListedAsGraphInputsAreNotGraphInputs)
{
    onnx::ModelProto model = emptyModel();
    onnx::GraphProto& graph = *model.mutable_graph();
    addValueInfo(graph.mutable_input(), "x", onnx::TensorProto::FLOAT);
    addValueInfo(graph.mutable_input(), "w", onnx::TensorProto::FLOAT);
    setRawFloats(*addInitializer(graph, "w", onnx::TensorProto::FLOAT, {1}), {1.0F});
    addNode(graph, "mul", "Mul", {"x", "w"}, {"y"});
    OnnxGraph read = qdq::readOnnxFromBuffer(serialize(model), "inputs.onnx");
    EXPECT_EQ(read.graphInputs, std::vector<std::string>{"x"});
    EXPECT_TRUE(read.warnings.empty());
}

TEST(OnnxReader, WarnsAboutDanglingInputsDuplicatesAndCycles)
{
    onnx::ModelProto model = emptyModel();
    onnx::GraphProto& graph = *model.mutable_graph();
    addValueInfo(graph.mutable_input(), "x", onnx::TensorProto::FLOAT);
    addNode(graph, "a", "Relu", {"x"}, {"t"});
    addNode(graph, "a", "Relu", {"ghost"}, {"t"}); // duplicate name, duplicate producer, dangling input
    addNode(graph, "loop", "Add", {"x", "loop_out"}, {"loop_out"}); // a node feeding itself
    for (int i = 0; i < 25; ++i)
    {
        addNode(graph, "d" + std::to_string(i), "Relu", {"missing_" + std::to_string(i)}, {"o" + std::to_string(i)});
    }
    OnnxGraph read = qdq::readOnnxFromBuffer(serialize(model), "warn.onnx");
    EXPECT_EQ(read.nodes.size(), 28U);
    EXPECT_EQ(countWarnings(read, "is used by more than one node"), 1U);
    EXPECT_EQ(countWarnings(read, "is produced by more than one node"), 1U);
    EXPECT_TRUE(hasWarning(read, "input 'ghost' of node 'a'"));
    EXPECT_TRUE(hasWarning(read, "cycle through node 'loop'"));
    // 26 dangling inputs: the first 20 one by one, then a count.
    EXPECT_EQ(countWarnings(read, "is produced by no node"), 20U);
    EXPECT_TRUE(hasWarning(read, "6 more dangling node inputs"));
    EXPECT_EQ(read.findNode("a")->index, 0U);
    EXPECT_EQ(read.producer("t")->index, 0U);
    for (const auto& warning : read.warnings)
    {
        EXPECT_EQ(warning.where.path, "warn.onnx");
    }
}

TEST(OnnxReader, KeepsSubgraphNodesWithoutFlattening)
{
    onnx::ModelProto model = emptyModel();
    onnx::GraphProto& graph = *model.mutable_graph();
    addValueInfo(graph.mutable_input(), "cond", onnx::TensorProto::BOOL);
    addValueInfo(graph.mutable_input(), "x", onnx::TensorProto::FLOAT);
    onnx::NodeProto* ifNode = addNode(graph, "if", "If", {"cond"}, {"y"});
    for (const char* branchName : {"then_branch", "else_branch"})
    {
        auto* attribute = ifNode->add_attribute();
        attribute->set_name(branchName);
        attribute->set_type(onnx::AttributeProto::GRAPH);
        onnx::GraphProto* body = attribute->mutable_g();
        addNode(*body, "inner", "Relu", {"x"}, {"inner_out"}); // uses an outer-scope tensor
        addValueInfo(body->mutable_output(), "inner_out", onnx::TensorProto::FLOAT);
    }
    OnnxGraph read = qdq::readOnnxFromBuffer(serialize(model), "if.onnx");
    ASSERT_EQ(read.nodes.size(), 1U);
    EXPECT_EQ(read.nodes[0].opType, "If");
    EXPECT_EQ(read.nodes[0].attribute("then_branch")->kind, qdq::OnnxAttribute::Kind::kGraph);
    EXPECT_TRUE(read.warnings.empty());
}

TEST(OnnxReader, KeepsNamesThatAreNotUtf8AsBytes)
{
    onnx::ModelProto model = emptyModel();
    onnx::GraphProto& graph = *model.mutable_graph();
    addValueInfo(graph.mutable_input(), "x", onnx::TensorProto::FLOAT);
    addNode(graph, "bad\xFF\xFEname", "Relu", {"x"}, {"y\xC3"});
    OnnxGraph read = qdq::readOnnxFromBuffer(serialize(model), "utf8.onnx");
    ASSERT_EQ(read.nodes.size(), 1U);
    EXPECT_EQ(read.nodes[0].name, "bad\xFF\xFEname");
    EXPECT_EQ(read.nodes[0].outputs, std::vector<std::string>{"y\xC3"});
    EXPECT_TRUE(read.warnings.empty());
}

// Graphs above 20,000 nodes intern their tensor names and index their node names on a second thread
// (parsers/onnx_tensor_interner.h): the result must be the one a node-by-node reading gives.
TEST(OnnxReader, LargeGraphReadsLikeASmallOne)
{
    constexpr int kNodes = 30000;
    onnx::ModelProto model = emptyModel();
    onnx::GraphProto& graph = *model.mutable_graph();
    addValueInfo(graph.mutable_input(), "x", onnx::TensorProto::FLOAT);
    std::string previous = "x";
    for (int i = 0; i < kNodes; ++i)
    {
        const std::string out = "t" + std::to_string(i);
        if (i % 1000 == 999)
        {
            // A Constant node: its value is registered while the names of the nodes before it are still queued.
            onnx::NodeProto* constant = addNode(graph, "c" + std::to_string(i), "Constant", {}, {"k" + out});
            auto* value = constant->add_attribute();
            value->set_name("value");
            value->set_type(onnx::AttributeProto::TENSOR);
            value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
            value->mutable_t()->add_float_data(2.0F);
            addNode(graph, "n" + std::to_string(i), "Add", {previous, "k" + out, "w"}, {out});
        }
        else
        {
            addNode(graph, i == 25000 ? "n5" : "n" + std::to_string(i), "Relu", {previous, ""}, {out});
        }
        previous = out;
    }
    addInitializer(graph, "w", onnx::TensorProto::FLOAT, {1})->add_float_data(3.0F);
    addValueInfo(graph.mutable_output(), previous, onnx::TensorProto::FLOAT);

    OnnxGraph read = qdq::readOnnxFromBuffer(serialize(model), "large.onnx");
    ASSERT_EQ(read.nodes.size(), static_cast<std::size_t>(graph.node_size()));
    // Tensor ids in the order the names first appear in the file: node by node, inputs before outputs.
    std::vector<std::string> firstSeen;
    std::set<std::string> seen;
    for (const auto& node : graph.node())
    {
        for (const auto* names : {&node.input(), &node.output()})
        {
            for (const std::string& name : *names)
            {
                if (!name.empty() && seen.insert(name).second)
                {
                    firstSeen.push_back(name);
                }
            }
        }
    }
    ASSERT_GE(read.tensors.names.size(), firstSeen.size());
    for (std::size_t i = 0; i < firstSeen.size(); ++i)
    {
        ASSERT_EQ(read.tensors.names[i], firstSeen[i]) << "tensor id " << i;
    }
    for (int i = 0; i < graph.node_size(); ++i)
    {
        const auto& written = graph.node(i);
        const qdq::OnnxNode& node = read.nodes[static_cast<std::size_t>(i)];
        ASSERT_EQ(node.inputs, std::vector<std::string>(written.input().begin(), written.input().end())) << i;
        ASSERT_EQ(node.outputs, std::vector<std::string>(written.output().begin(), written.output().end())) << i;
    }
    EXPECT_EQ(read.producer("t12345")->name, "n12345");
    ASSERT_EQ(read.consumers("w").size(), 30U);
    EXPECT_EQ(read.findNode("n5")->index, 5U); // the first of the two nodes named n5
    EXPECT_EQ(countWarnings(read, "node name 'n5' is used by more than one node"), 1U);
    EXPECT_TRUE(read.duplicateNodeNames);
    EXPECT_EQ(read.constants.size(), 31U); // 30 Constant nodes and the initializer

    // Cut off in the middle of the nodes: an error, not a hang or a crash on the second thread.
    std::string bytes = serialize(model);
    bytes.resize(bytes.size() / 2);
    EXPECT_THROW(qdq::readOnnxFromBuffer(bytes, "cut.onnx"), InputError);
}

// The index of node names is built on a second thread for large graphs and joined after the consumers are listed;
// its warnings still come where a one-thread reading puts them: after the duplicate producers', before the dangling
// inputs'.
TEST(OnnxReader, WarningsComeInTheSameOrderWhenTheNameIndexIsBuiltOnASecondThread)
{
    const auto warningsOf = [](int paddingNodes)
    {
        onnx::ModelProto model = emptyModel();
        onnx::GraphProto& graph = *model.mutable_graph();
        addValueInfo(graph.mutable_input(), "x", onnx::TensorProto::FLOAT);
        addNode(graph, "a", "Relu", {"x"}, {"t"});
        addNode(graph, "a", "Relu", {"ghost"}, {"t"}); // duplicate name, duplicate producer, dangling input
        std::string previous = "t";
        for (int i = 0; i < paddingNodes; ++i)
        {
            const std::string out = "p" + std::to_string(i);
            addNode(graph, "pad" + std::to_string(i), "Relu", {previous}, {out});
            previous = out;
        }
        OnnxGraph read = qdq::readOnnxFromBuffer(serialize(model), "order.onnx");
        std::vector<std::string> messages;
        for (const auto& warning : read.warnings)
        {
            messages.push_back(warning.message);
        }
        return messages;
    };
    const std::vector<std::string> small = warningsOf(0);
    ASSERT_EQ(small.size(), 3U);
    EXPECT_NE(small[0].find("is produced by more than one node"), std::string::npos) << small[0];
    EXPECT_NE(small[1].find("node name 'a' is used by more than one node"), std::string::npos) << small[1];
    EXPECT_NE(small[2].find("input 'ghost' of node 'a'"), std::string::npos) << small[2];
    EXPECT_EQ(warningsOf(25000), small); // over the 20,000 nodes that move the index to a second thread
}

// drain() with work to do meanwhile: the calling thread runs it only while the interner thread is behind, stops when
// it returns false, and drain still returns with every name interned, with the ids a one-thread interner gives.
TEST(NodeTensorInterner, DrainRunsTheCallersWorkWhileBehindAndStillWaitsForEveryName)
{
    const auto internAll = [](bool threaded, const std::function<bool()>& meanwhile)
    {
        qdq::OnnxGraph graph;
        graph.nodeInputStart.push_back(0);
        graph.nodeOutputStart.push_back(0);
        qdq::onnx_detail::NodeTensorInterner interner(graph, threaded);
        for (int i = 0; i < 60000; ++i)
        {
            const std::string input = "t" + std::to_string(i / 2); // every name read twice: a hit after a miss
            const std::string output = "u" + std::to_string(i);
            const std::string_view in[] = {input, ""};
            const std::string_view out[] = {output};
            interner.addNode(in, out);
        }
        interner.drain(meanwhile);
        return std::make_pair(graph.nodeInputIds, graph.nodeOutputIds);
    };
    const auto oneThread = internAll(false, {});
    int slices = 0;
    EXPECT_EQ(internAll(true,
                        [&]
                        {
                            ++slices;
                            return slices < 3; // three slices of work, then nothing left
                        }),
              oneThread);
    EXPECT_LE(slices, 3);
    int calls = 0;
    EXPECT_EQ(internAll(true,
                        [&]
                        {
                            ++calls;
                            return false; // nothing to do at all
                        }),
              oneThread);
    EXPECT_LE(calls, 1);
    ASSERT_EQ(oneThread.second.size(), 60000U);
}

TEST(OnnxReader, EnforcesTheNodeLimit)
{
    qdq::Limits limits;
    limits.maxGraphNodes = 3;
    std::string bytes = serialize(buildQdqModel());
    std::string error = errorOf([&] { qdq::readOnnxFromBuffer(bytes, "big.onnx", {}, limits); });
    EXPECT_NE(error.find("--max-graph-nodes"), std::string::npos) << error;
    limits.maxGraphNodes = 10;
    EXPECT_EQ(qdq::readOnnxFromBuffer(bytes, "big.onnx", {}, limits).nodes.size(), 10U);

    qdq::Limits small;
    small.maxInputBytes = 16;
    fs::path path = qdq::test::writeFile(qdq::test::tempDir("onnx-limit") / "m.onnx", bytes);
    error = errorOf([&] { qdq::readOnnx(path.string(), {}, small); });
    EXPECT_NE(error.find("--max-input-mb"), std::string::npos) << error;
}

// ----- broken inputs ----------------------------------------------------------------------------------------

TEST(OnnxReaderBroken, EmptyFile)
{
    fs::path path = qdq::test::writeFile(qdq::test::tempDir("onnx-empty") / "empty.onnx", "");
    std::string error = errorOf([&] { qdq::readOnnx(path.string()); });
    EXPECT_NE(error.find("empty file"), std::string::npos) << error;
    EXPECT_NE(bufferError("").find("empty file"), std::string::npos);
}

TEST(OnnxReaderBroken, MissingFileAndDirectory)
{
    fs::path dir = qdq::test::tempDir("onnx-missing");
    EXPECT_NE(errorOf([&] { qdq::readOnnx((dir / "nope.onnx").string()); }).find("cannot open"), std::string::npos);
    EXPECT_NE(errorOf([&] { qdq::readOnnx(dir.string()); }).find("directory"), std::string::npos);
}

TEST(OnnxReaderBroken, TruncatedModels)
{
    onnx::ModelProto model = buildQdqModel();
    std::string bytes = serialize(model);
    // The graph field ends before the trailing opset_import entries: every cut before that end is an error.
    std::size_t opsetBytes = 0;
    for (const auto& opset : model.opset_import())
    {
        opsetBytes += 2 + opset.ByteSizeLong();
    }
    const std::size_t graphEnd = bytes.size() - opsetBytes;
    fs::path dir = qdq::test::tempDir("onnx-truncated");
    for (std::size_t cut : {std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{20}, bytes.size() / 4,
                            bytes.size() / 2, 3 * bytes.size() / 4, graphEnd - 1})
    {
        std::string prefix = bytes.substr(0, cut);
        std::string error = bufferError(prefix);
        EXPECT_NE(error, "<no error>") << "cut at " << cut;
        fs::path path = qdq::test::writeFile(dir / ("cut" + std::to_string(cut) + ".onnx"), prefix);
        EXPECT_NE(errorOf([&] { qdq::readOnnx(path.string()); }), "<no error>") << "cut at " << cut;
    }
    std::string error = bufferError(bytes.substr(0, bytes.size() / 2));
    EXPECT_NE(error.find("exceeds the remaining"), std::string::npos) << error;
    EXPECT_NE(error.find(": byte "), std::string::npos) << error;
}

TEST(OnnxReaderBroken, BinaryGarbage)
{
    std::mt19937 random(1234);
    std::string bytes(4096, '\0');
    for (char& c : bytes)
    {
        c = static_cast<char>(random() & 0xFF);
    }
    EXPECT_NE(bufferError(bytes), "<no error>");
    fs::path path = qdq::test::writeFile(qdq::test::tempDir("onnx-garbage") / "garbage.onnx", bytes);
    EXPECT_NE(errorOf([&] { qdq::readOnnx(path.string()); }), "<no error>");
    // Invalid wire types.
    EXPECT_NE(bufferError("\x0e\x01").find("invalid protobuf wire type 6 at byte 0"), std::string::npos);
    EXPECT_NE(bufferError(std::string("\x00\x01", 2)).find("field number 0"), std::string::npos);
}

TEST(OnnxReaderBroken, TextInputs)
{
    std::string json = R"({"Layers": [{"Name": "conv1", "LayerType": "CaskConvolution"}], "Bindings": []})";
    std::string error = bufferError(json);
    EXPECT_NE(error.find("wire type"), std::string::npos) << error;
    EXPECT_NE(bufferError("[TRT] [V] Original: 755 layers\n").find("error"), std::string::npos);
    std::string invalidUtf8 = "caf\xC3\x28 \xFF\xFE text";
    EXPECT_NE(bufferError(invalidUtf8), "<no error>");
    // A 10 MB single line of text.
    std::string line(10 << 20, 'a');
    fs::path path = qdq::test::writeFile(qdq::test::tempDir("onnx-line") / "line.onnx", line);
    error = errorOf([&] { qdq::readOnnx(path.string()); });
    EXPECT_NE(error.find("not an ONNX model: truncated protobuf at byte 10485756"), std::string::npos) << error;
}

TEST(OnnxReaderBroken, CorruptedBytesGiveAGraphOrAnInputError)
{
    // Flipped bytes anywhere in a valid model: the reader either reads a graph or throws InputError, nothing else.
    std::string bytes = serialize(buildQdqModel());
    std::mt19937 random(42);
    std::size_t errors = 0;
    for (int round = 0; round < 3000; ++round)
    {
        std::string corrupted = bytes;
        const int flips = 1 + static_cast<int>(random() % 4);
        for (int i = 0; i < flips; ++i)
        {
            corrupted[random() % corrupted.size()] = static_cast<char>(random() & 0xFF);
        }
        try
        {
            OnnxGraph graph = qdq::readOnnxFromBuffer(corrupted, "corrupted.onnx");
            EXPECT_LE(graph.nodes.size(), 10U);
        }
        catch (const InputError&)
        {
            ++errors;
        }
    }
    EXPECT_GT(errors, 100U);
}

TEST(OnnxReaderBroken, HugeDeclaredLengths)
{
    // graph field (7, length-delimited) declaring 4 GiB.
    std::string bytes = std::string("\x08\x07\x3a\xff\xff\xff\xff\x0f", 8) + "short";
    std::string error = bufferError(bytes);
    EXPECT_NE(error.find("field length 4294967295 exceeds the remaining 5 bytes at byte 2"), std::string::npos)
        << error;
    // A node inside a valid graph field declaring 2 GiB.
    std::string node = std::string("\x0a\xff\xff\xff\xff\x07", 6) + "xyz";
    std::string model = std::string("\x3a", 1) + static_cast<char>(node.size()) + node;
    error = bufferError(model);
    EXPECT_NE(error.find("field length 2147483647 exceeds the remaining 3 bytes"), std::string::npos) << error;
    EXPECT_NE(error.find("graph.node[0]"), std::string::npos) << error;
    // Overlong varint.
    EXPECT_NE(bufferError(std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12)), "<no error>");
}

TEST(OnnxReaderBroken, InvalidNodeAndWrongWireTypes)
{
    // graph.node holding bytes that are not a NodeProto.
    std::string node = "\x0f\x0f\x0f";
    std::string model = std::string("\x3a\x05\x0a\x03", 4) + node;
    std::string error = bufferError(model);
    EXPECT_NE(error.find("invalid NodeProto"), std::string::npos) << error;
    // graph given as a varint.
    error = bufferError(std::string("\x38\x01", 2));
    EXPECT_NE(error.find("field graph has wire type varint"), std::string::npos) << error;
    // No graph at all.
    error = bufferError(std::string("\x08\x07", 2));
    EXPECT_NE(error.find("not an ONNX model: no graph field"), std::string::npos) << error;
}

// ----- real models in ../shared -----------------------------------------------------------------------------

struct RealModel
{
    const char* file;
    std::size_t nodes;
    std::size_t quantize;
    std::size_t dequantize;
    std::int64_t opset;
    std::int64_t irVersion;
    const char* producer;
    std::size_t externalScales; //!< Q/DQ nodes whose scale lives in the external data file
};

// Counts from ../shared/models/MODELS.json, checked again with the onnx Python package.
const RealModel kRealModels[] = {
    {"deit-tiny-fp32.onnx", 730, 0, 0, 17, 8, "pytorch", 0},
    {"deit-tiny-ort-qdq.onnx", 1120, 170, 220, 17, 8, "onnx.quantize", 0},
    {"resnet18-fp32.onnx", 49, 0, 0, 13, 7, "pytorch", 0},
    {"resnet18-ort-qdq.onnx", 191, 50, 92, 13, 7, "onnx.quantize", 0},
    {"resnet18-qat-convs.onnx", 211, 42, 42, 13, 7, "pytorch", 0},
    {"resnet18-qat-residual-qgap.onnx", 243, 50, 50, 13, 7, "pytorch", 0},
    {"resnet18-qat-residual.onnx", 239, 49, 49, 13, 7, "pytorch", 0},
    {"resnet50-qat-convs.onnx", 542, 107, 107, 13, 7, "pytorch", 22},
    {"unet-convtranspose-fp32.onnx", 12, 0, 0, 13, 7, "pytorch", 0},
    {"unet-convtranspose-qat.onnx", 48, 10, 10, 13, 7, "pytorch", 0},
    {"yolov8lite-fp32.onnx", 139, 0, 0, 13, 7, "pytorch", 0},
    {"yolov8lite-qat-convs.onnx", 427, 74, 74, 13, 7, "pytorch", 0},
    {"yolov8lite-qat-outputs.onnx", 567, 109, 109, 13, 7, "pytorch", 0},
};

void checkRealModel(const RealModel& expected, const fs::path& path, bool weightsShipped)
{
    SCOPED_TRACE(path.string());
    OnnxGraph graph = qdq::readOnnx(path.string());
    EXPECT_EQ(graph.nodes.size(), expected.nodes);
    EXPECT_EQ(graph.quantizeCount(), expected.quantize);
    EXPECT_EQ(graph.dequantizeCount(), expected.dequantize);
    ASSERT_EQ(graph.opsets.size(), 1U);
    EXPECT_EQ(graph.opsets[0].first, "");
    EXPECT_EQ(graph.opsets[0].second, expected.opset);
    EXPECT_EQ(graph.irVersion, expected.irVersion);
    EXPECT_EQ(graph.producerName, expected.producer);
    EXPECT_EQ(graph.graphInputs, std::vector<std::string>{"input"});
    const std::string dataFile = path.filename().string() + ".data";
    EXPECT_EQ(graph.externalDataMissing, !weightsShipped);
    EXPECT_EQ(countWarnings(graph, "external data file '" + dataFile + "' is missing"), weightsShipped ? 0U : 1U);
    EXPECT_EQ(graph.warnings.size(), weightsShipped ? 0U : 1U);
    std::size_t scalesUnavailable = 0;
    for (const auto& parameters : graph.qdq)
    {
        const qdq::OnnxNode& node = graph.nodes[parameters.node];
        EXPECT_TRUE(parameters.scaleIsConstant) << node.name;
        EXPECT_TRUE(parameters.zeroPointIsConstant) << node.name;
        if (parameters.scale.empty())
        {
            // Only scales stored in the external data file, which is not shipped, are unavailable.
            EXPECT_TRUE(graph.constant(node.inputs[1])->external) << node.name;
            ++scalesUnavailable;
        }
        else
        {
            EXPECT_EQ(static_cast<std::int64_t>(parameters.scale.size()), parameters.scaleElements) << node.name;
        }
    }
    EXPECT_EQ(scalesUnavailable, weightsShipped ? 0U : expected.externalScales);
}

TEST(RealDataOnnx, GraphOnlyModels)
{
    REQUIRE_SHARED();
    for (const RealModel& model : kRealModels)
    {
        checkRealModel(model, qdq::test::sharedModel(model.file), false);
    }
}

TEST(RealDataOnnx, ModelsWithWeights)
{
    REQUIRE_SHARED();
    std::size_t checked = 0;
    for (const RealModel& model : kRealModels)
    {
        fs::path path = qdq::test::sharedModel(std::string("with-weights/") + model.file);
        if (fs::exists(path))
        {
            checkRealModel(model, path, true);
            ++checked;
        }
    }
    EXPECT_EQ(checked, 5U);
}

TEST(RealDataOnnx, ResNet18OrtQdqParameters)
{
    REQUIRE_SHARED();
    OnnxGraph graph = qdq::readOnnx(qdq::test::sharedModel("resnet18-ort-qdq.onnx").string());
    // int32 bias with its own DQ, per-channel over 1000 outputs.
    const qdq::QdqParameters& bias = qdqNamed(graph, "fc.bias_DequantizeLinear");
    EXPECT_EQ(bias.axis, 0);
    EXPECT_EQ(bias.zeroPointType, OnnxDataType::kInt32);
    ASSERT_EQ(bias.scale.size(), 1000U);
    EXPECT_FLOAT_EQ(static_cast<float>(bias.scale[0]), 1.960377994691953e-05F);
    EXPECT_EQ(bias.zeroPoint, std::vector<double>(1000, 0.0));
    EXPECT_EQ(graph.constant("fc.bias_quantized")->dataType, OnnxDataType::kInt32);
    // int8 weights in external data (not shipped) with a DQ only.
    const qdq::QdqParameters& weights = qdqNamed(graph, "onnx::Conv_193_DequantizeLinear");
    EXPECT_EQ(weights.axis, 0);
    EXPECT_EQ(weights.zeroPointType, OnnxDataType::kInt8);
    ASSERT_EQ(weights.scale.size(), 64U);
    EXPECT_FLOAT_EQ(static_cast<float>(weights.scale[1]), 0.00049259711522609F);
    const qdq::OnnxConstant* weightData = graph.constant("onnx::Conv_193_quantized");
    ASSERT_NE(weightData, nullptr);
    EXPECT_EQ(weightData->dataType, OnnxDataType::kInt8);
    EXPECT_EQ(weightData->dims, (std::vector<std::int64_t>{64, 3, 7, 7}));
    EXPECT_TRUE(weightData->external);
    EXPECT_EQ(weightData->externalLocation, "resnet18-ort-qdq.onnx.data");
    EXPECT_FALSE(weightData->dataLoaded);
    EXPECT_EQ(graph.producer("onnx::Conv_193_quantized"), nullptr);
    // Per-tensor activation Q.
    const qdq::QdqParameters& input = qdqNamed(graph, "input_QuantizeLinear");
    EXPECT_FALSE(input.axis.has_value());
    EXPECT_EQ(input.scaleElements, 1);
    EXPECT_FLOAT_EQ(static_cast<float>(input.scale.at(0)), 0.039388179779052734F);
    EXPECT_EQ(input.zeroPointType, OnnxDataType::kInt8);
}

TEST(RealDataOnnx, ResNet18QatParameters)
{
    REQUIRE_SHARED();
    OnnxGraph graph = qdq::readOnnx(qdq::test::sharedModel("resnet18-qat-convs.onnx").string());
    // Weight Q on the float weight (external, not shipped), per-channel axis 0.
    const qdq::QdqParameters& conv1 = qdqNamed(graph, "/conv1/QuantizeLinear");
    EXPECT_EQ(conv1.axis, 0);
    ASSERT_EQ(conv1.scale.size(), 64U);
    EXPECT_FLOAT_EQ(static_cast<float>(conv1.scale[0]), 0.0007340873125940561F);
    EXPECT_EQ(conv1.zeroPointType, OnnxDataType::kInt8);
    EXPECT_EQ(graph.constant("conv1.conv.weight")->externalLength, 37632);
    // Zero point through Identity_57.
    const qdq::QdqParameters& layer1 = qdqNamed(graph, "/layer1/layer1.0/conv1/QuantizeLinear");
    EXPECT_EQ(graph.producer("onnx::QuantizeLinear_424")->name, "Identity_57");
    EXPECT_TRUE(layer1.zeroPointIsConstant);
    EXPECT_EQ(layer1.zeroPoint, std::vector<double>(64, 0.0));
    EXPECT_FLOAT_EQ(static_cast<float>(layer1.scale.at(2)), 0.001611827639862895F);
    // Activation Q with Constant-node scale and zero point.
    const qdq::QdqParameters& input = qdqNamed(graph, "/conv1/iq/QuantizeLinear");
    EXPECT_FALSE(input.axis.has_value());
    EXPECT_EQ(input.scaleElements, 1);
    EXPECT_FLOAT_EQ(static_cast<float>(input.scale.at(0)), 0.035926736891269684F);
    EXPECT_EQ(input.zeroPoint, std::vector<double>{0.0});
    EXPECT_TRUE(graph.constant("/conv1/iq/Constant_1_output_0")->fromConstantNode);
    EXPECT_EQ(graph.findNode("/conv1/Conv")->inputs,
              (std::vector<std::string>{"/conv1/iq/DequantizeLinear_output_0", "/conv1/DequantizeLinear_output_0"}));
}

TEST(RealDataOnnx, ResNet50QatScalesInExternalData)
{
    REQUIRE_SHARED();
    // The exporter moved the 1024- and 2048-channel weight scales (4 KiB and more) into the external data file,
    // which is not shipped: the Q/DQ is still described, its scale values are not available.
    OnnxGraph graph = qdq::readOnnx(qdq::test::sharedModel("resnet50-qat-convs.onnx").string());
    const qdq::QdqParameters& conv3 = qdqNamed(graph, "/layer3/layer3.0/conv3/QuantizeLinear");
    EXPECT_TRUE(conv3.scaleIsConstant);
    EXPECT_TRUE(conv3.scale.empty());
    EXPECT_EQ(conv3.scaleElements, 1024);
    EXPECT_EQ(conv3.axis, 0);
    EXPECT_EQ(conv3.zeroPoint, std::vector<double>(1024, 0.0)); // onnx::QuantizeLinear_1159 is inline
    const qdq::OnnxConstant* scale = graph.constant("layer3.0.conv3.ws");
    ASSERT_NE(scale, nullptr);
    EXPECT_TRUE(scale->external);
    EXPECT_EQ(scale->externalOffset, 8622848);
    EXPECT_EQ(scale->externalLength, 4096);
    EXPECT_EQ(countWarnings(graph, "the weights of 109 initializer(s)"), 1U);
}

TEST(RealDataOnnx, LoadsExternalWeights)
{
    REQUIRE_SHARED();
    OnnxReadOptions options;
    options.loadWeights = true;
    OnnxGraph graph = qdq::readOnnx(qdq::test::sharedModel("with-weights/yolov8lite-qat-convs.onnx").string(), options);
    EXPECT_TRUE(graph.warnings.empty());
    std::int64_t total = 0;
    std::size_t external = 0;
    std::size_t initializers = 0;
    for (const auto& constant : graph.constants)
    {
        if (constant.fromConstantNode)
        {
            continue;
        }
        ++initializers;
        SCOPED_TRACE(constant.name);
        ASSERT_TRUE(constant.dataLoaded);
        EXPECT_EQ(static_cast<std::int64_t>(constant.values.size()), constant.elementCount);
        std::int64_t product = 1;
        for (std::int64_t dim : constant.dims)
        {
            product *= dim;
        }
        EXPECT_EQ(constant.elementCount, product);
        total += constant.elementCount;
        external += constant.external ? 1 : 0;
    }
    EXPECT_EQ(initializers, 222U);
    EXPECT_EQ(external, 36U);
    EXPECT_EQ(total, 1480693);
    const qdq::OnnxConstant* weight = graph.constant("b1.conv.conv.weight");
    ASSERT_NE(weight, nullptr);
    EXPECT_EQ(weight->externalOffset, 0);
    EXPECT_EQ(weight->externalLength, 18432);
    EXPECT_EQ(weight->values.size(), 4608U);
    EXPECT_FLOAT_EQ(static_cast<float>(weight->values[0]), -0.06739213317632675F);
    EXPECT_FLOAT_EQ(static_cast<float>(weight->values[2]), 0.034608423709869385F);
}

TEST(RealDataOnnx, PolygraphyQdqConv)
{
    REQUIRE_SHARED();
    for (const char* file : {"qdq_conv.onnx", "weightless.qdq_conv.onnx"})
    {
        SCOPED_TRACE(file);
        OnnxGraph graph = qdq::readOnnx(qdq::test::realdata(std::string("polygraphy-qdq-conv-onnx/") + file).string());
        ASSERT_EQ(graph.nodes.size(), 3U);
        EXPECT_EQ(graph.irVersion, 9);
        EXPECT_EQ(graph.graphName, "onnx_graphsurgeon_graph");
        EXPECT_EQ(graph.opsets, (std::vector<std::pair<std::string, std::int64_t>>{{"", 13}}));
        EXPECT_EQ(graph.quantizeCount(), 1U);
        EXPECT_EQ(graph.dequantizeCount(), 1U);
        EXPECT_TRUE(graph.graphInputs.empty()); // the Q input "x" is an initializer
        EXPECT_EQ(graph.graphOutputs, std::vector<std::string>{"conv_out_4"});
        EXPECT_EQ(graph.constants.size(), 4U);
        const qdq::QdqParameters& quantize = qdqNamed(graph, "onnx_graphsurgeon_node_1");
        EXPECT_TRUE(quantize.isQuantize);
        EXPECT_EQ(quantize.scale, (std::vector<double>{2.0, 4.0, 5.0}));
        EXPECT_EQ(quantize.zeroPointType, OnnxDataType::kUint8);
        EXPECT_EQ(quantize.zeroPoint, (std::vector<double>{84.0, 24.0, 196.0}));
        EXPECT_FALSE(quantize.axis.has_value()); // per-channel scale with the default axis
        EXPECT_EQ(graph.findNode("Conv_0")->intAttribute("kernel_shape"), std::nullopt);
        EXPECT_EQ(graph.findNode("Conv_0")->attribute("kernel_shape")->ints, (std::vector<std::int64_t>{3, 3}));
        EXPECT_EQ(graph.constant("x")->dims, (std::vector<std::int64_t>{1, 3, 3, 130}));
        EXPECT_FALSE(graph.externalDataMissing);
    }
    OnnxGraph full = qdq::readOnnx(qdq::test::realdata("polygraphy-qdq-conv-onnx/qdq_conv.onnx").string());
    EXPECT_TRUE(full.warnings.empty());
    EXPECT_FALSE(full.constant("x")->dataLoaded);         // 4680 bytes: over smallTensorBytes
    EXPECT_FALSE(full.constant("Weights_0")->dataLoaded); // a weight over smallTensorBytes: not decoded by default
    qdq::OnnxReadOptions withWeights;
    withWeights.loadWeights = true;
    OnnxGraph loaded =
        qdq::readOnnx(qdq::test::realdata("polygraphy-qdq-conv-onnx/qdq_conv.onnx").string(), withWeights);
    EXPECT_TRUE(loaded.constant("Weights_0")->dataLoaded);
    EXPECT_EQ(static_cast<std::int64_t>(loaded.constant("Weights_0")->values.size()),
              loaded.constant("Weights_0")->elementCount);
    OnnxGraph weightless =
        qdq::readOnnx(qdq::test::realdata("polygraphy-qdq-conv-onnx/weightless.qdq_conv.onnx").string());
    ASSERT_EQ(weightless.warnings.size(), 1U);
    EXPECT_TRUE(hasWarning(weightless, "2 initializer(s) such as 'x' hold no data (weights stripped: TRT_WEIGHTLESS)"));
    EXPECT_FALSE(weightless.constant("Weights_0")->dataLoaded);
}

TEST(RealDataOnnx, CntkMnist)
{
    REQUIRE_SHARED();
    OnnxGraph graph = qdq::readOnnx(qdq::test::realdata("lix-mnist-orin-trt8510-best/mnist.onnx").string());
    EXPECT_EQ(graph.irVersion, 3);
    EXPECT_EQ(graph.producerName, "CNTK");
    EXPECT_EQ(graph.producerVersion, "2.5.1");
    EXPECT_EQ(graph.graphName, "CNTKGraph");
    EXPECT_EQ(graph.opsets, (std::vector<std::pair<std::string, std::int64_t>>{{"", 8}}));
    ASSERT_EQ(graph.nodes.size(), 12U);
    EXPECT_EQ(graph.quantizeCount() + graph.dequantizeCount(), 0U);
    EXPECT_EQ(graph.nodes[0].name, "Times212_reshape1");
    EXPECT_EQ(graph.nodes[1].name, "Convolution28");
    EXPECT_EQ(graph.nodes[11].name, "Plus214");
    // The eight initializers are also listed as graph inputs (IR version 3).
    EXPECT_EQ(graph.graphInputs, std::vector<std::string>{"Input3"});
    EXPECT_EQ(graph.graphOutputs, std::vector<std::string>{"Plus214_Output_0"});
    EXPECT_EQ(graph.constants.size(), 8U);
    const qdq::OnnxConstant* bias = graph.constant("Parameter6");
    ASSERT_TRUE(bias->dataLoaded); // float_data
    EXPECT_EQ(bias->dims, (std::vector<std::int64_t>{8, 1, 1}));
    EXPECT_FLOAT_EQ(static_cast<float>(bias->values[0]), -0.1615397185087204F);
    EXPECT_EQ(graph.constant("Parameter193_reshape1_shape")->values, (std::vector<double>{256, 10}));
    EXPECT_FALSE(graph.constant("Parameter193")->dataLoaded); // 2560 floats in float_data: skipped
    const qdq::OnnxNode* conv = graph.findNode("Convolution28");
    EXPECT_EQ(conv->attribute("auto_pad")->s, "SAME_UPPER");
    EXPECT_EQ(conv->intAttribute("group"), 1);
    EXPECT_TRUE(graph.warnings.empty());
    EXPECT_EQ(graph.consumers("Convolution28_Output_0").size(), 1U);
}

} // namespace

namespace
{

//! x -> a node of op "QuantBlock" in domain "local" -> y; with defineFunction, the model also defines QuantBlock as a
//! local function (x -> Q -> DQ -> Relu), as torch's export_modules_as_functions writes one; without, the node is a
//! custom op (a plugin).
std::string modelCallingQuantBlock(bool defineFunction)
{
    onnx::ModelProto model;
    model.set_ir_version(8);
    auto* opset = model.add_opset_import();
    opset->set_version(17);
    auto* local = model.add_opset_import();
    local->set_domain("local");
    local->set_version(1);
    auto* graph = model.mutable_graph();
    graph->set_name("g");
    graph->add_input()->set_name("x");
    graph->add_output()->set_name("y");
    auto* call = graph->add_node();
    call->set_name("/block/QuantBlock");
    call->set_op_type("QuantBlock");
    call->set_domain("local");
    call->add_input("x");
    call->add_output("y");
    if (defineFunction)
    {
        auto* function = model.add_functions();
        function->set_name("QuantBlock");
        function->set_domain("local");
        function->add_input("in");
        function->add_output("out");
        function->add_opset_import()->set_version(17);
        auto add = [&](const char* op, std::vector<std::string> inputs, const char* output)
        {
            auto* node = function->add_node();
            node->set_op_type(op);
            for (const auto& input : inputs)
            {
                node->add_input(input);
            }
            node->add_output(output);
        };
        auto* scale = function->add_node();
        scale->set_op_type("Constant");
        scale->add_output("s");
        auto* value = scale->add_attribute();
        value->set_name("value_float");
        value->set_type(onnx::AttributeProto::FLOAT);
        value->set_f(0.05f);
        add("QuantizeLinear", {"in", "s"}, "q");
        add("DequantizeLinear", {"q", "s"}, "dq");
        add("Relu", {"dq"}, "out");
    }
    return model.SerializeAsString();
}

bool warnsAboutLocalFunction(const OnnxGraph& graph)
{
    return std::any_of(graph.warnings.begin(), graph.warnings.end(),
                       [](const qdq::ReaderWarning& warning)
                       { return warning.message.find("local function") != std::string::npos; });
}

} // namespace

TEST(OnnxReader, SaysThatTheNodesOfACalledLocalFunctionAreNotAnalyzed)
{
    const OnnxGraph graph = qdq::readOnnxFromBuffer(modelCallingQuantBlock(true), "functions.onnx");
    ASSERT_TRUE(warnsAboutLocalFunction(graph));
    const auto warning =
        std::find_if(graph.warnings.begin(), graph.warnings.end(),
                     [](const qdq::ReaderWarning& w) { return w.message.find("local function") != std::string::npos; });
    EXPECT_NE(warning->message.find("'local.QuantBlock' (4 nodes, 2 of them QuantizeLinear/DequantizeLinear) is "
                                    "called by 1 node(s) such as '/block/QuantBlock'"),
              std::string::npos)
        << warning->message;
    EXPECT_TRUE(warning->where.hasByteOffset);
}

TEST(OnnxReader, ACustomOpWithoutALocalFunctionIsNoFunctionCall)
{
    EXPECT_FALSE(warnsAboutLocalFunction(qdq::readOnnxFromBuffer(modelCallingQuantBlock(false), "plugin.onnx")));
}
