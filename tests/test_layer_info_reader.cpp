// Layer-information JSON reader: own fixtures for every variant and broken inputs, then the real files.
#include "qdq/readers.h"
#include "test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

namespace qdq
{
namespace
{
using test::fixture;
using test::realdata;

const EngineLayer* findLayer(const EnginePlan& plan, std::string_view name)
{
    for (const EngineLayer& layer : plan.layers)
    {
        if (layer.name == name)
        {
            return &layer;
        }
    }
    return nullptr;
}

const EngineLayer& layerNamed(const EnginePlan& plan, std::string_view name)
{
    const EngineLayer* layer = findLayer(plan, name);
    if (layer == nullptr)
    {
        throw std::runtime_error("no layer named " + std::string(name));
    }
    return *layer;
}

TEST(EngineLayerModel, ProfileSuffixOnlyWhenWellFormed)
{
    EngineLayer layer;
    layer.setName("/conv1/Conv + /relu/Relu [profile 2]");
    EXPECT_EQ(layer.baseName(), "/conv1/Conv + /relu/Relu");
    EXPECT_EQ(layer.optimizationProfile, 2);
    layer.setName("(Unnamed Layer* 3) [Shuffle]");
    EXPECT_EQ(layer.baseName(), "(Unnamed Layer* 3) [Shuffle]");
    EXPECT_EQ(layer.optimizationProfile, 0);
    for (const char* odd : {"a [profile ]", "a [profile x]", "a [profile -1]", "a [profile 1] ", "[profile 1]"})
    {
        layer.setName(odd);
        EXPECT_EQ(layer.baseName(), odd) << odd;
    }
}

TEST(EngineLayerModel, MetadataNodesInOrderWithoutDuplicates)
{
    // Past 16 names the de-duplication switches from a linear search to a set: both must keep first occurrences.
    EngineLayer layer;
    std::vector<std::string> expected;
    for (int i = 0; i < 40; ++i)
    {
        std::string name = "/block" + std::to_string(i % 25) + "/Conv]x"; // names may hold ']'
        if (i < 25)
        {
            expected.push_back(name);
        }
        layer.metadata += (i == 0 ? "" : (i % 3 == 0 ? "\x1e" : "\x1f")) + std::string("[ONNX Layer: ") + name + "]";
    }
    EXPECT_EQ(layer.metadataOnnxNodes(), expected);
    std::size_t total = 0;
    for (const MetadataGroup& group : layer.metadataGroups())
    {
        total += group.onnxNodes.size();
    }
    EXPECT_EQ(layer.metadataGroups().size(), 14u); // 13 U+001E separators
    EXPECT_EQ(total, 40u);
}

TEST(EngineLayerModel, SharedFormatTextComparesAndCopies)
{
    EngineTensor a;
    a.format = "Row major linear FP32";
    EngineTensor b = a;
    EXPECT_EQ(b.format, "Row major linear FP32");
    EXPECT_EQ(&a.format.str(), &b.format.str()); // one copy of the text
    EXPECT_EQ("from " + b.format, "from Row major linear FP32");
    EXPECT_TRUE(EngineTensor().format.empty());
}

std::size_t countOrigin(const EnginePlan& plan, std::string_view origin)
{
    return static_cast<std::size_t>(std::count_if(plan.layers.begin(), plan.layers.end(),
                                                  [&](const EngineLayer& layer) { return layer.origin == origin; }));
}

std::size_t countType(const EnginePlan& plan, std::string_view type)
{
    return static_cast<std::size_t>(std::count_if(plan.layers.begin(), plan.layers.end(),
                                                  [&](const EngineLayer& layer) { return layer.type == type; }));
}

std::string otherField(const EngineLayer& layer, std::string_view key)
{
    for (const auto& [name, value] : layer.otherFields)
    {
        if (name == key)
        {
            return std::string(value);
        }
    }
    return "<absent>";
}

bool hasWarningContaining(const std::vector<ReaderWarning>& warnings, std::string_view text)
{
    return std::any_of(warnings.begin(), warnings.end(),
                       [&](const ReaderWarning& warning) { return warning.message.find(text) != std::string::npos; });
}

// Runs the reader and returns the InputError text ("" when it did not throw).
std::string errorOf(const std::string& path, const Limits& limits = {})
{
    try
    {
        readLayerInfo(path, limits);
    }
    catch (const InputError& error)
    {
        return error.what();
    }
    return "";
}

std::string errorOfBuffer(const std::string& text, const Limits& limits = {})
{
    try
    {
        readLayerInfoFromBuffer(text, "buffer.json", limits);
    }
    catch (const InputError& error)
    {
        return error.what();
    }
    return "";
}

// ---------------------------------------------------------------------------------------------------------------
// Own fixtures

namespace
{
EngineLayer layerReading(const std::string& name, std::vector<std::string> inputs, std::vector<std::string> outputs)
{
    EngineLayer layer;
    layer.setName(name);
    for (auto& input : inputs)
    {
        layer.inputs.emplace_back().name = std::move(input);
    }
    for (auto& output : outputs)
    {
        layer.outputs.emplace_back().name = std::move(output);
    }
    return layer;
}
} // namespace

TEST(EngineLayerModel, TensorIndexProducersAndConsumers)
{
    EnginePlan plan;
    plan.layers.push_back(layerReading("a", {"in"}, {"x"}));
    plan.layers.push_back(layerReading("b", {"x", "x"}, {"y"})); // reads x twice: listed once
    plan.layers.push_back(layerReading("c", {"x", "y"}, {"x"})); // a second writer of x: the first one counts
    plan.layers.push_back(layerReading("d", {"y"}, {}));
    const TensorIndex& index = plan.tensorIndex();
    EXPECT_EQ(index.producer("x"), std::optional<std::size_t>(0));
    EXPECT_EQ(index.producer("y"), std::optional<std::size_t>(1));
    EXPECT_EQ(index.producer("in"), std::nullopt);
    EXPECT_EQ(index.producer("missing"), std::nullopt);
    auto consumers = [&](const EnginePlan& p, const char* tensor)
    {
        auto span = p.tensorIndex().consumers(tensor);
        return std::vector<std::size_t>(span.begin(), span.end());
    };
    EXPECT_EQ(consumers(plan, "x"), (std::vector<std::size_t>{1, 2}));
    EXPECT_EQ(consumers(plan, "y"), (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(consumers(plan, "in"), (std::vector<std::size_t>{0}));
    EXPECT_TRUE(consumers(plan, "missing").empty());

    // A copy indexes its own names (the index holds views), and an added layer is indexed again.
    auto copy = std::make_unique<EnginePlan>(plan);
    plan.layers.clear();
    plan.layers.push_back(layerReading("e", {"z"}, {"w"}));
    EXPECT_EQ(consumers(*copy, "x"), (std::vector<std::size_t>{1, 2}));
    EXPECT_EQ(plan.tensorIndex().producer("w"), std::optional<std::size_t>(0));
    EXPECT_EQ(plan.tensorIndex().producer("x"), std::nullopt);
    copy->layers.push_back(layerReading("f", {"w"}, {}));
    EXPECT_EQ(consumers(*copy, "w"), (std::vector<std::size_t>{4}));
}

TEST(LayerInfoReader, NamesOnly)
{
    EnginePlan plan = readLayerInfo(fixture("layer-info/names_only.json"));
    EXPECT_EQ(plan.form, LayerListForm::kNamesOnly);
    ASSERT_EQ(plan.layers.size(), 5u);
    EXPECT_EQ(plan.layers[0].name, "[trainStation1]");
    EXPECT_EQ(plan.layers[0].baseName(), "[trainStation1]");
    EXPECT_EQ(plan.layers[0].line, 1u);
    EXPECT_EQ(plan.layers[2].name,
              "backbone.conv1.weight + /backbone/conv1/_weight_quantizer/QuantizeLinear + /backbone/conv1/Conv");
    EXPECT_EQ(plan.layers[2].line, 3u);
    EXPECT_EQ(plan.layers[4].name, "PWN(PWN(/Sub), PWN(/Div))");
    EXPECT_TRUE(plan.layers[4].type.empty());
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input", "output"}));
    EXPECT_TRUE(plan.warnings.empty());
    EXPECT_EQ(plan.sourcePath, fixture("layer-info/names_only.json").string());
}

TEST(LayerInfoReader, Trt82ScaleQuantizeWithoutLocation)
{
    EnginePlan plan = readLayerInfo(fixture("layer-info/trt82_detailed.json"));
    EXPECT_EQ(plan.form, LayerListForm::kDetailed);
    ASSERT_EQ(plan.layers.size(), 2u);
    const EngineLayer& q = plan.layers[0];
    EXPECT_EQ(q.name, "QuantizeLinear_2");
    EXPECT_EQ(q.type, "Scale");
    EXPECT_EQ(q.parameterType, "Scale");
    EXPECT_TRUE(q.origin.empty());
    EXPECT_EQ(q.activation, "NONE");
    EXPECT_EQ(otherField(q, "Mode"), "UNIFORM");
    EXPECT_EQ(otherField(q, "Shift"), R"({"Type":"Float","Count":1})");
    EXPECT_EQ(otherField(q, "ChannelAxis"), "1");
    ASSERT_EQ(q.inputs.size(), 1u);
    EXPECT_TRUE(q.inputs[0].location.empty());
    EXPECT_EQ(q.inputs[0].precision, Precision::kFP32);
    EXPECT_EQ(q.outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(q.outputs[0].vectorWidth, 32);
    EXPECT_EQ(q.outputs[0].dimensions, (std::vector<std::int64_t>{1, 3, 224, 224}));
    EXPECT_FALSE(q.weightsPrecision.has_value());
    EXPECT_EQ(q.line, 1u);

    const EngineLayer& conv = plan.layers[1];
    EXPECT_EQ(conv.type, "CaskConvolution");
    EXPECT_EQ(conv.weightsPrecision, Precision::kINT8);
    EXPECT_EQ(conv.activation, "CLIPPED_RELU");
    EXPECT_EQ(otherField(conv, "ParameterSubType"), "[0.000000,127.000000]");
    EXPECT_EQ(otherField(conv, "ConvolutionTacticIndex"), "3");
    EXPECT_EQ(otherField(conv, "Kernel"), "[3,3]");
    EXPECT_EQ(conv.tacticValue, "0x13463e9bf9ae0d73");
    EXPECT_EQ(conv.line, 24u);
    EXPECT_FALSE(conv.hasMetadata);
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input1", "1179"}));
}

TEST(LayerInfoReader, Trt84ReformatOriginQdq)
{
    EnginePlan plan = readLayerInfo(fixture("layer-info/trt84_detailed.json"));
    ASSERT_EQ(plan.layers.size(), 3u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 1u);
    EXPECT_EQ(countOrigin(plan, "REFORMAT"), 1u);
    const EngineLayer& q = layerNamed(plan, "QuantizeLinear_2");
    EXPECT_EQ(q.type, "Reformat");
    EXPECT_EQ(q.origin, "QDQ");
    EXPECT_EQ(q.inputs[0].location, "Device");
    EXPECT_EQ(q.outputs[0].name, "onnx::DequantizeLinear_125");
    EXPECT_EQ(q.outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(q.outputs[0].vectorWidth, 4);
    const EngineLayer& conv = layerNamed(plan, "conv1.weight + QuantizeLinear_7 + Conv_9");
    EXPECT_EQ(conv.weightsPrecision, Precision::kINT8);
    EXPECT_EQ(conv.tacticName, "ampere_fp32_icudnn_int8x4_128x64_relu_medium_nn_v1");
    EXPECT_EQ(conv.outputs[0].precision, Precision::kFP32);
    EXPECT_EQ(conv.outputs[0].vectorWidth, 0);
    EXPECT_EQ(otherField(conv, "Weights"), R"({"Type":"Int8","Count":9408})");
    EXPECT_EQ(conv.line, 21u);
    const EngineLayer& reformat = layerNamed(plan, "Reformatting CopyNode for Output Tensor 0 to MaxPool_12");
    EXPECT_EQ(reformat.outputs[0].precision, Precision::kFP16);
    EXPECT_EQ(reformat.line, 55u);
}

TEST(LayerInfoReader, Trt10MetadataGroupsAndStreamId)
{
    EnginePlan plan = readLayerInfo(fixture("layer-info/trt10_metadata.json"));
    ASSERT_EQ(plan.layers.size(), 4u);
    const EngineLayer& reformat = plan.layers[0];
    EXPECT_TRUE(reformat.hasMetadata);
    EXPECT_TRUE(reformat.metadata.empty());
    EXPECT_TRUE(reformat.metadataGroups().empty());
    EXPECT_EQ(otherField(reformat, "StreamId"), "0");
    EXPECT_EQ(reformat.outputs[0].precision, Precision::kINT8);

    const EngineLayer& cap = plan.layers[1];
    EXPECT_EQ(cap.type, "CaskConvActPool");
    EXPECT_EQ(cap.weightsPrecision, Precision::kINT8); // from ConvWeights
    EXPECT_EQ(cap.activation, "RELU");                 // from ConvActivation
    EXPECT_EQ(cap.tacticValue, "5137628413089386019"); // a number, kept as printed
    ASSERT_EQ(cap.metadataGroups().size(), 3u);
    EXPECT_EQ(cap.metadataGroups()[0].onnxNodes, (std::vector<std::string>{"resnetv15_conv0_fwd"}));
    EXPECT_EQ(cap.metadataGroups()[2].onnxNodes, (std::vector<std::string>{"resnetv15_pool0_fwd"}));
    EXPECT_EQ(cap.metadata, "[ONNX Layer: resnetv15_conv0_fwd]\x1e[ONNX Layer: resnetv15_relu0_fwd]\x1e"
                            "[ONNX Layer: resnetv15_pool0_fwd]");

    // \x1f within a group, \x1e between groups; a node name holding ']'; a repeated node.
    const EngineLayer& conv = plan.layers[2];
    ASSERT_EQ(conv.metadataGroups().size(), 3u);
    EXPECT_EQ(conv.metadataGroups()[0].onnxNodes,
              (std::vector<std::string>{"resnetv15_stage3_conv1_fwd", "/model/Q[0]/QuantizeLinear"}));
    EXPECT_EQ(conv.metadataOnnxNodes(),
              (std::vector<std::string>{"resnetv15_stage3_conv1_fwd", "/model/Q[0]/QuantizeLinear",
                                        "resnetv15_stage3_batchnorm1_fwd"}));
    EXPECT_EQ(otherField(conv, "HasSparseWeights"), "1");
    EXPECT_EQ(otherField(conv, "ResAsActInputIdx"), "-1");

    const EngineLayer& plugin = plan.layers[3];
    EXPECT_EQ(plugin.pluginType, "EfficientNMS_TRT");
    EXPECT_EQ(otherField(plugin, "PluginVersion"), "1");
    EXPECT_TRUE(plugin.inputs.empty());
    EXPECT_EQ(plugin.metadataOnnxNodes(), (std::vector<std::string>{"/postprocess/EfficientNMS_TRT"}));
}

TEST(LayerInfoReader, MyelinKgenShortDatatypes)
{
    EnginePlan plan = readLayerInfo(fixture("layer-info/myelin_kgen.json"));
    ASSERT_EQ(plan.layers.size(), 3u);
    EXPECT_EQ(plan.layers[0].type, "shape_call");
    EXPECT_TRUE(plan.layers[0].tacticName.empty());
    const EngineLayer& kgen = plan.layers[1];
    EXPECT_EQ(kgen.type, "kgen");
    EXPECT_TRUE(kgen.inputs[0].location.empty());
    EXPECT_EQ(kgen.inputs[0].format, "Float");
    EXPECT_EQ(kgen.inputs[0].precision, Precision::kFP32);
    EXPECT_EQ(kgen.outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(kgen.inputs[0].dimensions, (std::vector<std::int64_t>{-1, 16}));
    EXPECT_TRUE(kgen.tacticValue.empty());
    const EngineLayer& gemm = plan.layers[2];
    EXPECT_EQ(gemm.outputs[0].precision, Precision::kFP16);
    ASSERT_EQ(gemm.metadataGroups().size(), 1u);
    EXPECT_EQ(gemm.metadataOnnxNodes(),
              (std::vector<std::string>{"/fc1/Gemm", "/qact_input/DequantizeLinear", "/fc1/DequantizeLinear",
                                        "/qact_fc1/QuantizeLinear"}));
}

TEST(LayerInfoReader, ProfileSuffix)
{
    EnginePlan plan = readLayerInfo(fixture("layer-info/multi_profile.json"));
    ASSERT_EQ(plan.layers.size(), 5u);
    EXPECT_EQ(plan.layers[0].optimizationProfile, 0);
    EXPECT_EQ(plan.layers[0].baseName(), "/conv1/Conv + /relu/Relu");
    EXPECT_EQ(plan.layers[2].name, "/conv1/Conv + /relu/Relu [profile 1]");
    EXPECT_EQ(plan.layers[2].baseName(), "/conv1/Conv + /relu/Relu");
    EXPECT_EQ(plan.layers[2].optimizationProfile, 1);
    EXPECT_EQ(plan.layers[4].baseName(), "(Unnamed Layer* 3) [Shuffle]");
    EXPECT_EQ(plan.layers[4].optimizationProfile, 12);
    EXPECT_EQ(plan.bindings.size(), 4u);
}

TEST(LayerInfoReader, InspectorLayerSeparators)
{
    EnginePlan plan = readLayerInfo(fixture("layer-info/inspector_layers.txt"));
    EXPECT_EQ(plan.form, LayerListForm::kDetailed);
    ASSERT_EQ(plan.layers.size(), 3u);
    EXPECT_EQ(plan.layers[0].name, "__mye780_0_myl0_0");
    EXPECT_EQ(plan.layers[0].line, 2u);
    EXPECT_EQ(plan.layers[1].line, 12u);
    EXPECT_EQ(plan.layers[2].line, 32u);
    EXPECT_EQ(plan.layers[2].metadataOnnxNodes(),
              (std::vector<std::string>{"/qact_fc2/QuantizeLinear", "/qact_fc2/DequantizeLinear"}));
    EXPECT_TRUE(plan.bindings.empty());
}

TEST(LayerInfoReader, PrettyPrintedCopyReadsLikeTheOriginal)
{
    EnginePlan original = readLayerInfo(fixture("layer-info/trt84_detailed.json"));
    EnginePlan pretty = readLayerInfo(fixture("layer-info/pretty_printed.json"));
    ASSERT_EQ(pretty.layers.size(), original.layers.size());
    for (std::size_t i = 0; i < original.layers.size(); ++i)
    {
        EXPECT_EQ(pretty.layers[i].name, original.layers[i].name);
        EXPECT_EQ(pretty.layers[i].type, original.layers[i].type);
        EXPECT_EQ(pretty.layers[i].origin, original.layers[i].origin);
        EXPECT_EQ(pretty.layers[i].otherFields, original.layers[i].otherFields);
        EXPECT_EQ(pretty.layers[i].outputs[0].dimensions, original.layers[i].outputs[0].dimensions);
    }
    EXPECT_EQ(pretty.layers[0].line, 3u);
    EXPECT_EQ(pretty.layers[1].line, 36u);
    EXPECT_EQ(pretty.bindings, original.bindings);
}

TEST(LayerInfoReader, IssuePastedTrailingPeriodsInFormats)
{
    EnginePlan plan = readLayerInfo(fixture("layer-info/issue_pasted.json"));
    const EngineLayer& q = layerNamed(plan, "QuantizeLinear_2");
    EXPECT_EQ(q.inputs[0].format, "Row major linear FP32.");
    EXPECT_EQ(q.inputs[0].precision, Precision::kFP32);
    EXPECT_EQ(q.outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(q.outputs[0].vectorWidth, 4);
}

TEST(LayerInfoReader, MixedStringsAndObjectsAndSingleInspectorObject)
{
    EnginePlan mixed = readLayerInfoFromBuffer(
        R"({"Layers": ["a", {"Name": "b", "LayerType": "Reformat", "Origin": "QDQ"}], "Bindings": []})", "mixed.json");
    EXPECT_EQ(mixed.form, LayerListForm::kDetailed);
    ASSERT_EQ(mixed.layers.size(), 2u);
    EXPECT_EQ(mixed.layers[1].origin, "QDQ");

    EnginePlan bom = readLayerInfoFromBuffer("\xef\xbb\xbf{\"Layers\": [\"a\"]}\r\n", "bom.json");
    ASSERT_EQ(bom.layers.size(), 1u);

    // IEngineInspector getLayerInformation for one layer: a bare layer object.
    EnginePlan single = readLayerInfoFromBuffer(
        "{\n  \"Name\": \"Conv_0\",\n  \"LayerType\": \"CaskConvolution\",\n  \"TacticValue\": \"0x1\"\n}\n",
        "one.json");
    ASSERT_EQ(single.layers.size(), 1u);
    EXPECT_EQ(single.layers[0].type, "CaskConvolution");
    EXPECT_EQ(single.form, LayerListForm::kDetailed);

    // Vectorized channel printed as a string dimension.
    EnginePlan vectorized = readLayerInfoFromBuffer(
        R"({"Layers": [{"Name": "c", "Outputs": [{"Name": "t", "Dimensions": [1,"64:32",8,8], "Format/Datatype": "Int8"}]}]})",
        "vec.json");
    EXPECT_EQ(vectorized.layers[0].outputs[0].dimensions, (std::vector<std::int64_t>{1, 64, 8, 8}));
    EXPECT_EQ(vectorized.layers[0].outputs[0].vectorWidth, 32);
}

//! Names, types and tensors of every layer, to compare two readings of one layer list.
std::vector<std::string> layerSummaries(const EnginePlan& plan)
{
    std::vector<std::string> out;
    for (const EngineLayer& layer : plan.layers)
    {
        std::string text = std::string(layer.name) + "|" + std::string(layer.type) + "|" + layer.origin + "|" +
                           layer.tacticName + "|" + layer.metadata;
        for (const auto& tensor : layer.inputs)
        {
            text += "|in " + std::string(tensor.name) + " " + std::string(tensor.format);
        }
        for (const auto& tensor : layer.outputs)
        {
            text += "|out " + std::string(tensor.name) + " " + std::string(tensor.format);
        }
        out.push_back(std::move(text));
    }
    return out;
}

// The layer list as a bare array of layer objects, or under "layers" or "LayerInfo", reads like trtexec's own file.
TEST(LayerInfoReader, BareArrayAndOtherKeysReadLikeTrtexec)
{
    EnginePlan original = readLayerInfo(fixture("layer-info/trt84_detailed.json"));
    for (const char* name : {"bare_array.json", "keyed_layers.json", "keyed_layerinfo.json"})
    {
        std::string path = fixture(std::string("layer-info/") + name).string();
        EXPECT_EQ(detectInputKind(path), InputKind::kLayerInfo) << name;
        EnginePlan plan = readLayerInfo(path);
        EXPECT_EQ(plan.form, LayerListForm::kDetailed) << name;
        EXPECT_EQ(layerSummaries(plan), layerSummaries(original)) << name;
        EXPECT_TRUE(plan.warnings.empty()) << name << ": " << plan.warnings.front().message;
        EXPECT_GT(plan.layers[1].line, 1u) << name;
    }
    EXPECT_EQ(readLayerInfo(fixture("layer-info/keyed_layerinfo.json")).bindings, original.bindings);
    // {"LayerInfo": {"Layers": [...], "Bindings": [...]}}: a whole export nested under the key.
    EnginePlan nested = readLayerInfoFromBuffer(
        R"({"LayerInfo": {"Layers": [{"Name": "a", "LayerType": "Reformat"}], "Bindings": ["x"]}})", "nested.json");
    ASSERT_EQ(nested.layers.size(), 1u);
    EXPECT_EQ(nested.layers[0].type, "Reformat");
    EXPECT_EQ(nested.bindings, (std::vector<std::string>{"x"}));
    EnginePlan names = readLayerInfoFromBuffer(R"([{"Name": "a", "Inputs": [], "Outputs": []}])", "names.json");
    ASSERT_EQ(names.layers.size(), 1u);
}

// Near-identical arrays and objects that are not layer lists keep their kind or stay refused.
TEST(LayerInfoReader, ArraysAndKeysThatAreNotLayerLists)
{
    const auto kindOf = [](const std::string& text) { return detectInputKindFromPrefix(text, "x.json"); };
    EXPECT_EQ(kindOf(R"([{"LayerType": "Reformat", "Name": "a"}])"), InputKind::kLayerInfo);
    EXPECT_EQ(kindOf(R"({"layers": [{"Name": "a"}]})"), InputKind::kLayerInfo);
    EXPECT_EQ(kindOf(R"({"LayerInfo": []})"), InputKind::kLayerInfo);
    EXPECT_EQ(kindOf(R"([{"name": "a", "timeMs": 1, "averageMs": 1}])"), InputKind::kProfile);
    EXPECT_EQ(kindOf(R"([{"Name": "NVIDIA A100", "ComputeCapability": [8, 0]}])"), InputKind::kMetadata);
    EXPECT_THROW(kindOf(R"([{"Name": "a"}])"), InputError);
    EXPECT_THROW(kindOf(R"({"nlayers": [{"Name": "a"}], "Info": "layers"})"), InputError);
    std::string error = errorOfBuffer(R"({"layers": 5})");
    EXPECT_NE(error.find("\"layers\" must be an array, found a number"), std::string::npos) << error;
    error = errorOfBuffer(R"([{"count": 1}, {"name": "a", "averageMs": 1}])");
    EXPECT_NE(error.find("looks like a profile"), std::string::npos) << error;
}

TEST(LayerInfoReader, EscapesAndUnicode)
{
    EnginePlan plan = readLayerInfoFromBuffer(R"({"Layers": ["a\"b\\c\/d\n", "\u00e9\u4e2d\ud83d\ude00", "caf)"
                                              "\xc3\xa9"
                                              R"("]})",
                                              "esc.json");
    ASSERT_EQ(plan.layers.size(), 3u);
    EXPECT_EQ(plan.layers[0].name, "a\"b\\c/d\n");
    EXPECT_EQ(plan.layers[1].name, "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
    EXPECT_EQ(plan.layers[2].name, "caf\xc3\xa9");
}

TEST(LayerInfoReader, DuplicateKeysWarnAndLastWins)
{
    EnginePlan plan = readLayerInfo(fixture("layer-info/broken/duplicate_keys.json"));
    ASSERT_EQ(plan.layers.size(), 1u);
    EXPECT_EQ(plan.layers[0].name, "QuantizeLinear_2");
    EXPECT_TRUE(hasWarningContaining(plan.warnings, "duplicate key \"Name\""));
    EXPECT_EQ(plan.warnings[0].where.line, 4u);
    EXPECT_TRUE(plan.bindings.empty());
}

TEST(LayerInfoReader, TenMegabyteSingleLine)
{
    // 10 MB on one line: a names-only list of 100,000 long names without any newline.
    std::string text = "{\"Layers\": [";
    const std::string pad(90, 'x');
    for (int i = 0; i < 100000; ++i)
    {
        text += (i == 0 ? "\"" : ",\"") + pad + std::to_string(i) + "\"";
    }
    text += "], \"Bindings\": [\"in\"]}";
    ASSERT_GT(text.size(), 9'000'000u);
    auto path = test::writeFile(test::tempDir("layer-info-long-line") / "long.json", text);
    EnginePlan plan = readLayerInfo(path.string());
    ASSERT_EQ(plan.layers.size(), 100000u);
    EXPECT_EQ(plan.layers[99999].name, pad + "99999");
    EXPECT_EQ(plan.layers[99999].line, 1u);

    Limits limits;
    limits.maxLineBytes = 1u << 20;
    std::string error = errorOf(path.string(), limits);
    EXPECT_NE(error.find("--max-line-mb"), std::string::npos) << error;
    EXPECT_NE(error.find(":1: error:"), std::string::npos) << error;
}

TEST(LayerInfoReader, DeepNestingErrorsWithoutOverflow)
{
    std::string text = "{\"Layers\": [{\"Name\": \"x\", \"Deep\": ";
    text += std::string(100000, '[');
    text += std::string(100000, ']');
    text += "}]}";
    auto path = test::writeFile(test::tempDir("layer-info-deep") / "deep.json", text);
    std::string error = errorOf(path.string());
    EXPECT_NE(error.find("JSON nesting deeper than 256 (raise it with --max-json-depth)"), std::string::npos) << error;
    EXPECT_NE(error.find("deep.json:1: error:"), std::string::npos) << error;

    Limits limits;
    limits.maxJsonDepth = 4;
    EXPECT_NE(errorOfBuffer(R"({"Layers": [{"Name": "x", "A": [[1]]}]})", limits).find("deeper than 4"),
              std::string::npos);
    limits.maxJsonDepth = 5;
    EXPECT_EQ(errorOfBuffer(R"({"Layers": [{"Name": "x", "A": [[1]]}]})", limits), "");
}

TEST(LayerInfoReader, LimitsOnLayersAndSize)
{
    Limits limits;
    limits.maxGraphNodes = 3;
    std::string error = errorOf(fixture("layer-info/names_only.json"), limits);
    EXPECT_NE(error.find("--max-graph-nodes"), std::string::npos) << error;
    EXPECT_NE(error.find("names_only.json:4: error:"), std::string::npos) << error;

    limits = Limits{};
    limits.maxInputBytes = 100;
    error = errorOf(fixture("layer-info/trt84_detailed.json"), limits);
    EXPECT_NE(error.find("--max-input-mb"), std::string::npos) << error;
    error = errorOfBuffer(std::string(200, ' '), limits);
    EXPECT_NE(error.find("--max-input-mb"), std::string::npos) << error;
}

// ---------------------------------------------------------------------------------------------------------------
// Broken inputs

TEST(LayerInfoReaderBroken, Empty)
{
    std::string error = errorOf(fixture("layer-info/broken/empty.json"));
    EXPECT_NE(error.find("file is empty"), std::string::npos) << error;
    EXPECT_NE(errorOfBuffer(" \n\t\n").find("only whitespace"), std::string::npos);
}

TEST(LayerInfoReaderBroken, Truncated)
{
    std::string error = errorOf(fixture("layer-info/broken/truncated.json"));
    EXPECT_NE(error.find("truncated"), std::string::npos) << error;
    EXPECT_NE(error.find("truncated.json:28: error:"), std::string::npos) << error;
}

TEST(LayerInfoReaderBroken, BinaryGarbage)
{
    std::string error = errorOf(fixture("layer-info/broken/garbage.bin"));
    EXPECT_NE(error.find("binary data (starts with byte 0x7f)"), std::string::npos) << error;
    EXPECT_NE(error.find("garbage.bin: byte 0: error:"), std::string::npos) << error;
}

TEST(LayerInfoReaderBroken, WrongKindOnnxLogProfile)
{
    std::string error = errorOf(fixture("layer-info/broken/onnx_like.onnx"));
    EXPECT_NE(error.find("binary data (starts with byte 0x08)"), std::string::npos) << error;
    error = errorOf(fixture("layer-info/broken/build_log.txt"));
    EXPECT_NE(error.find("looks like a TensorRT log"), std::string::npos) << error;
    error = errorOf(fixture("profile/with_median.json"));
    EXPECT_NE(error.find("looks like a profile"), std::string::npos) << error;
    EXPECT_NE(error.find("with_median.json:1: error:"), std::string::npos) << error;
    error = errorOfBuffer("model.onnx is not here\n");
    EXPECT_NE(error.find("expected '{' or '[' at the start, found 'm'"), std::string::npos) << error;
    error = errorOfBuffer("{\"foo\": 1}");
    EXPECT_NE(error.find("no \"Layers\" array"), std::string::npos) << error;
}

TEST(LayerInfoReaderBroken, InvalidUtf8)
{
    std::string error = errorOf(fixture("layer-info/broken/invalid_utf8.json"));
    EXPECT_NE(error.find("invalid UTF-8 (byte 0xff)"), std::string::npos) << error;
    EXPECT_NE(error.find("invalid_utf8.json:4: error:"), std::string::npos) << error;
    error = errorOf(fixture("layer-info/broken/lone_surrogate.json"));
    EXPECT_NE(error.find("surrogate"), std::string::npos) << error;
}

TEST(LayerInfoReaderBroken, HugeNumber)
{
    std::string error = errorOf(fixture("layer-info/broken/huge_number.json"));
    EXPECT_NE(error.find("dimension 99999999999999999999999999 is not an integer in range"), std::string::npos)
        << error;
    EXPECT_NE(error.find("huge_number.json:8: error:"), std::string::npos) << error;
}

TEST(LayerInfoReaderBroken, SyntaxErrorsNameTheLine)
{
    std::string error = errorOf(fixture("layer-info/broken/trailing_garbage.json"));
    EXPECT_NE(error.find("trailing_garbage.json:5: error: unexpected '}' after the end of the JSON value"),
              std::string::npos)
        << error;
    error = errorOf(fixture("layer-info/broken/trailing_comma.json"));
    EXPECT_NE(error.find("trailing_comma.json:4: error: expected a JSON value, found ']'"), std::string::npos) << error;
    error = errorOfBuffer("{\"Layers\": [\n{\"Name\": \"a\"\n\"LayerType\": \"b\"}]}");
    EXPECT_NE(error.find("buffer.json:3: error: expected ',' or '}' after object member"), std::string::npos) << error;
    error = errorOfBuffer("{\"Layers\": [\"a\" \"b\"]}");
    EXPECT_NE(error.find("expected ',' or ']' after array element"), std::string::npos) << error;
    error = errorOfBuffer("{\"Layers\": [\"a\nb\"]}");
    EXPECT_NE(error.find("line break inside a string"), std::string::npos) << error;
    error = errorOfBuffer("{\"Layers\": [\"a\\qb\"]}");
    EXPECT_NE(error.find("invalid escape"), std::string::npos) << error;
    error = errorOfBuffer("{\"Layers\": [tru]}");
    EXPECT_NE(error.find("expected a JSON value"), std::string::npos) << error;
    error = errorOfBuffer("{\"Layers\": [01]}");
    EXPECT_NE(error.find("leading zeros"), std::string::npos) << error;
    error = errorOfBuffer("{\"Layers\": 5}");
    EXPECT_NE(error.find("\"Layers\" must be an array"), std::string::npos) << error;
    error = errorOfBuffer("--- Layer 0 ---\n");
    EXPECT_NE(error.find("no JSON object found"), std::string::npos) << error;
}

// ---------------------------------------------------------------------------------------------------------------
// Real files (../shared/realdata). Every fact below was read from the file by hand (python3 json / grep).

TEST(RealDataLayerInfo, CookbookMnistTrt86NamesOnlyLog)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("cookbook-mnist-trt8600/modelInformation.log"));
    EXPECT_EQ(plan.form, LayerListForm::kNamesOnly);
    ASSERT_EQ(plan.layers.size(), 15u);
    EXPECT_EQ(plan.layers[0].name, "Reformatting CopyNode for Input Tensor 0 to Conv-1 + ReLU-2");
    EXPECT_EQ(plan.layers[14].name, "(Unnamed Layer* 32) [Shuffle]");
    EXPECT_EQ(plan.layers[14].line, 15u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 0u);
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"tensor-0", "tensor-15"}));
}

TEST(RealDataLayerInfo, DetrNamesOnly)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("detr-r50-int8-implicit/detr-layer-info.json"));
    EXPECT_EQ(plan.form, LayerListForm::kNamesOnly);
    ASSERT_EQ(plan.layers.size(), 840u);
    EXPECT_EQ(plan.layers[0].name, "/model/model/Transpose_1_output_0");
    EXPECT_EQ(plan.layers[839].name, "PWN(/Mul_2)");
    EXPECT_NE(findLayer(plan, "PWN(PWN(/Sub), PWN(/Div))"), nullptr);
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"image", "boxes", "logits", "classes"}));
    EXPECT_TRUE(plan.warnings.empty());
}

TEST(RealDataLayerInfo, YoloOrinTrt852NamesOnly)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("trex-notebooks-yolo-orin-trt852/layer_info.json"));
    EXPECT_EQ(plan.form, LayerListForm::kNamesOnly);
    ASSERT_EQ(plan.layers.size(), 86u);
    EXPECT_EQ(plan.layers[0].name, "[trainStation1]");
    EXPECT_EQ(plan.layers[1].name, "/backbone/conv1/_input_quantizer/QuantizeLinear");
    EXPECT_EQ(plan.layers[85].name, "[trainStation3]");
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input", "output"}));
}

TEST(RealDataLayerInfo, FuzzylabsAlexnetTrt10)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("fuzzylabs-alexnet-fp16-trt10/alexnet_fp16.graph.json"));
    EXPECT_EQ(plan.form, LayerListForm::kDetailed);
    ASSERT_EQ(plan.layers.size(), 14u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 0u);
    EXPECT_EQ(countType(plan, "CaskConvolution"), 5u);
    EXPECT_EQ(countType(plan, "gemm"), 3u);
    const EngineLayer& conv = layerNamed(plan, "/features/features.0/Conv + /features/features.1/Relu");
    EXPECT_EQ(conv.type, "CaskConvolution");
    EXPECT_EQ(conv.weightsPrecision, Precision::kFP16);
    EXPECT_EQ(conv.inputs[0].format, "Channel major FP16 format where channel % 4 == 0");
    EXPECT_EQ(conv.outputs[0].precision, Precision::kFP16);
    EXPECT_EQ(conv.metadataGroups().size(), 2u);
    EXPECT_EQ(conv.metadataOnnxNodes(),
              (std::vector<std::string>{"/features/features.0/Conv", "/features/features.1/Relu"}));
    const EngineLayer& gemm = layerNamed(plan, "/classifier/classifier_1/Gemm_myl9_2");
    EXPECT_EQ(gemm.type, "gemm");
    ASSERT_EQ(gemm.inputs.size(), 5u);
    EXPECT_TRUE(gemm.inputs[0].location.empty());
    EXPECT_EQ(gemm.inputs[0].precision, Precision::kFP16);
    EXPECT_EQ(gemm.inputs[2].name, "__mye546/classifier/classifier_1/Gemm_alpha");
    EXPECT_EQ(gemm.inputs[2].precision, Precision::kFP32);
    EXPECT_EQ(gemm.line, 349u);
    ASSERT_EQ(gemm.metadataGroups().size(), 1u);
    EXPECT_EQ(gemm.metadataOnnxNodes(),
              (std::vector<std::string>{"/classifier/classifier.1/Gemm", "/classifier/classifier.2/Relu"}));
    EXPECT_EQ(layerNamed(plan, "dummy_shape_call__mye622_0_myl9_0").type, "shape_call");
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input", "output"}));
}

TEST(RealDataLayerInfo, FuzzylabsResnet18Trt10)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("fuzzylabs-resnet18-fp16-trt10/resnet18_fp16.graph.json"));
    ASSERT_EQ(plan.layers.size(), 26u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 0u);
    EXPECT_EQ(countType(plan, "CaskConvolution"), 20u);
    EXPECT_EQ(plan.layers[0].name, "Reformatting CopyNode for Input Tensor 0 to /conv1/Conv + /relu/Relu");
    EXPECT_EQ(plan.layers[0].type, "Reformat");
    EXPECT_EQ(plan.layers[25].name, "__myl_MulSumAdd_myl24_1");
    EXPECT_EQ(plan.layers[25].type, "kgen");
    std::size_t withMetadata = 0;
    for (const EngineLayer& layer : plan.layers)
    {
        EXPECT_TRUE(layer.hasMetadata);
        withMetadata += layer.metadata.empty() ? 0 : 1;
    }
    EXPECT_EQ(withMetadata, 23u);
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input", "output"}));
}

TEST(RealDataLayerInfo, LixAsPrettyPrintedTrt10)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("lix-engine-analysis-as-fp16/layers_.json"));
    EXPECT_EQ(plan.form, LayerListForm::kDetailed);
    ASSERT_EQ(plan.layers.size(), 104u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 0u);
    EXPECT_EQ(countType(plan, "CaskConvolution"), 80u);
    EXPECT_EQ(countType(plan, "Reformat"), 14u);
    EXPECT_EQ(plan.layers[0].name, "{ForeignNode[/bev_decoder/Constant_output_0.../bev_decoder/Where_13]}");
    EXPECT_EQ(plan.layers[0].type, "Myelin");
    EXPECT_EQ(plan.layers[0].line, 3u);
    const EngineLayer& plugin = layerNamed(plan, "PillarScatterPlugin_TRT_1");
    EXPECT_EQ(plugin.type, "PluginV2");
    EXPECT_EQ(plugin.pluginType, "PillarScatterPlugin_TRT");
    EXPECT_EQ(plugin.line, 557u);
    EXPECT_EQ(plugin.inputs[1].name, "coors");
    EXPECT_EQ(plugin.inputs[1].precision, Precision::kINT32);
    EXPECT_EQ(plugin.metadataOnnxNodes(), (std::vector<std::string>{"PillarScatterPlugin_TRT_1"}));
    const EngineLayer& cap = layerNamed(plan, "/conv1/Conv + /relu/Relu + /maxpool/MaxPool");
    EXPECT_EQ(cap.type, "CaskConvActPool");
    EXPECT_EQ(cap.weightsPrecision, Precision::kINT8);
    EXPECT_EQ(cap.activation, "RELU");
    EXPECT_EQ(cap.outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(cap.outputs[0].vectorWidth, 32);
    EXPECT_EQ(cap.metadataGroups().size(), 3u);
    EXPECT_EQ(cap.metadataOnnxNodes(), (std::vector<std::string>{"/conv1/Conv", "/relu/Relu", "/maxpool/MaxPool"}));
    EXPECT_EQ(otherField(cap, "PoolingWindowSize"), "[3,3]");
    ASSERT_EQ(plan.bindings.size(), 17u);
    EXPECT_EQ(plan.bindings[0], "img");
    EXPECT_EQ(plan.bindings[16], "cached_anchor_out");
}

TEST(RealDataLayerInfo, LixDmtMyelinTrt10)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("lix-engine-analysis-dmt-fp16/layers_tofp16.json"));
    ASSERT_EQ(plan.layers.size(), 1309u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 0u);
    EXPECT_EQ(countType(plan, "kgen"), 597u);
    EXPECT_EQ(countType(plan, "gemm"), 449u);
    EXPECT_EQ(countType(plan, "correlation"), 207u);
    EXPECT_EQ(plan.layers[0].name, "Reformatting CopyNode for Network Input voxel_num_points");
    EXPECT_EQ(plan.layers[0].type, "NoOp");
    EXPECT_EQ(plan.layers[0].inputs[0].precision, Precision::kINT32);
    const EngineLayer& q = layerNamed(plan, "__myl_MulMinMaxRounCast_myl2_14");
    EXPECT_EQ(q.inputs[0].name, "img");
    EXPECT_EQ(q.inputs[0].precision, Precision::kFP16);
    EXPECT_EQ(q.outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(q.metadataOnnxNodes(), (std::vector<std::string>{"img_QuantizeLinear"}));
    const EngineLayer& fused = layerNamed(plan, "__myl_CastMulCastMulAddReluMulMinMaxRounCast_myl2_18");
    EXPECT_EQ(fused.line, 302u);
    ASSERT_EQ(fused.metadataGroups().size(), 1u);
    EXPECT_EQ(
        fused.metadataOnnxNodes(),
        (std::vector<std::string>{"/img_backbone/layer1/layer1.0/conv2/Conv_output_0_DequantizeLinear",
                                  "/img_backbone/layer1/layer1.0/Add", "/img_backbone/layer1/layer1.0/relu_1/Relu",
                                  "/img_backbone/maxpool/MaxPool_output_0_DequantizeLinear",
                                  "/img_backbone/layer1/layer1.0/relu_1/Relu_output_0_QuantizeLinear"}));
    const EngineLayer& reshape = layerNamed(plan, "__myl_Resh_myl2_5");
    EXPECT_EQ(reshape.metadataGroups().size(), 2u); // joined by \x1e
    // 154 \x1e and 2272 \x1f separators in the file.
    std::size_t groupSeparators = 0;
    std::size_t nodeSeparators = 0;
    for (const EngineLayer& layer : plan.layers)
    {
        groupSeparators += static_cast<std::size_t>(std::count(layer.metadata.begin(), layer.metadata.end(), '\x1e'));
        nodeSeparators += static_cast<std::size_t>(std::count(layer.metadata.begin(), layer.metadata.end(), '\x1f'));
    }
    EXPECT_EQ(groupSeparators, 154u);
    EXPECT_EQ(nodeSeparators, 2272u);
    EXPECT_EQ(plan.bindings.size(), 68u);
    EXPECT_EQ(plan.bindings[0], "img");
}

// Real detailed and names-only layer lists rewritten as a bare array and under "LayerInfo" read exactly as the
// original (no real file of these shapes is in ../shared; scripts dumping the inspector's layers write them).
TEST(RealDataLayerInfo, RealListsAsBareArrayAndUnderLayerInfo)
{
    REQUIRE_SHARED();
    for (const char* file : {"lix-engine-analysis-dmt-fp16/layers_tofp16.json",
                             "trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.graph.json"})
    {
        EnginePlan original = readLayerInfo(realdata(file));
        nlohmann::json document = nlohmann::json::parse(test::readFile(realdata(file)));
        auto folder = test::tempDir("layer-list-shapes");
        auto bare = test::writeFile(folder / "bare.json", document["Layers"].dump(2));
        nlohmann::json keyed;
        keyed["LayerInfo"] = document["Layers"];
        auto underKey = test::writeFile(folder / "keyed.json", keyed.dump());
        for (const auto& path : {bare, underKey})
        {
            ASSERT_EQ(detectInputKind(path.string()), InputKind::kLayerInfo) << file;
            EnginePlan plan = readLayerInfo(path.string());
            EXPECT_EQ(plan.form, original.form) << file;
            EXPECT_EQ(layerSummaries(plan), layerSummaries(original)) << file;
        }
    }
}

TEST(RealDataLayerInfo, IvitInspectorConcatenatedLayers)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("ivit-simple-mlp-qdq-trt10-myelin/layer_info.json"));
    EXPECT_EQ(plan.form, LayerListForm::kDetailed);
    ASSERT_EQ(plan.layers.size(), 6u);
    EXPECT_EQ(plan.layers[0].name, "__mye780_0_myl0_0");
    EXPECT_EQ(plan.layers[0].type, "shape_call");
    EXPECT_EQ(plan.layers[0].line, 2u);
    const EngineLayer& q = plan.layers[1];
    EXPECT_EQ(q.name, "__myl_MulMinMaxRounCast_myl0_1");
    EXPECT_EQ(q.type, "kgen");
    EXPECT_EQ(q.line, 12u);
    EXPECT_EQ(q.outputs[0].name, "/qact_fc1/QuantizeLinear_output_0.1_4_myl0");
    EXPECT_EQ(q.outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(q.metadataOnnxNodes(), (std::vector<std::string>{"/qact_input/QuantizeLinear"}));
    EXPECT_EQ(plan.layers[2].metadataOnnxNodes(),
              (std::vector<std::string>{"/fc1/Gemm", "/qact_input/DequantizeLinear", "/fc1/DequantizeLinear",
                                        "/qact_fc1/QuantizeLinear", "/fc1/QuantizeLinear"}));
    EXPECT_EQ(plan.layers[3].metadataOnnxNodes().size(), 33u);
    EXPECT_EQ(plan.layers[3].metadataOnnxNodes().back(), "/qact_fc1/DequantizeLinear");
    EXPECT_EQ(plan.layers[5].metadataOnnxNodes(),
              (std::vector<std::string>{"/qact_fc2/QuantizeLinear", "/qact_fc2/DequantizeLinear"}));
    EXPECT_EQ(countOrigin(plan, "QDQ"), 0u);
    EXPECT_TRUE(plan.bindings.empty());
}

TEST(RealDataLayerInfo, TrexResnetA100Fp32)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("trex-pt-resnet-a100-fp32/resnet.onnx.engine.graph.json"));
    ASSERT_EQ(plan.layers.size(), 32u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 0u);
    EXPECT_EQ(countType(plan, "CaskConvolution"), 21u);
    EXPECT_EQ(countType(plan, "TiledPooling"), 1u);
    EXPECT_EQ(plan.layers[0].name, "Conv_0 + Relu_1");
    EXPECT_EQ(plan.layers[0].type, "CaskConvolution");
    EXPECT_EQ(plan.layers[31].name, "reshape_after_Gemm_48");
    EXPECT_EQ(plan.layers[31].type, "NoOp");
    EXPECT_FALSE(plan.layers[0].hasMetadata);
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input.1", "191"}));
}

TEST(RealDataLayerInfo, TrexResnetA100Fp16)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("trex-pt-resnet-a100-fp16/resnet.onnx.engine.graph.json"));
    ASSERT_EQ(plan.layers.size(), 36u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 0u);
    EXPECT_EQ(countType(plan, "NoOp"), 11u);
    EXPECT_EQ(plan.layers[0].name, "Reformatting CopyNode for Input Tensor 0 to Conv_0 + Relu_1");
    EXPECT_EQ(plan.layers[0].type, "Reformat");
    EXPECT_EQ(plan.layers[35].name, "Reformatting CopyNode for Output Tensor 0 to reshape_after_Gemm_48");
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input.1", "191"}));
}

TEST(RealDataLayerInfo, TrexResnetA100Qat)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.graph.json"));
    EXPECT_EQ(plan.form, LayerListForm::kDetailed);
    ASSERT_EQ(plan.layers.size(), 37u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 10u); // the 10 standalone QuantizeLinear layers
    EXPECT_EQ(countType(plan, "Reformat"), 12u);
    const EngineLayer& q = layerNamed(plan, "QuantizeLinear_2");
    EXPECT_EQ(q.type, "Reformat");
    EXPECT_EQ(q.origin, "QDQ");
    EXPECT_EQ(q.outputs[0].name, "onnx::DequantizeLinear_125");
    EXPECT_EQ(q.outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(q.outputs[0].vectorWidth, 4);
    EXPECT_EQ(q.inputs[0].location, "Device");
    EXPECT_EQ(layerNamed(plan, "QuantizeLinear_250").origin, "QDQ");
    const EngineLayer& conv = layerNamed(plan, "conv1.weight + QuantizeLinear_7 + Conv_9");
    EXPECT_EQ(conv.type, "CaskConvolution");
    EXPECT_EQ(conv.weightsPrecision, Precision::kINT8);
    EXPECT_EQ(conv.activation, "RELU");
    EXPECT_EQ(conv.tacticValue, "0xb29abdd00304c881");
    EXPECT_EQ(conv.outputs[0].precision, Precision::kFP32);
    EXPECT_EQ(layerNamed(plan, "MaxPool_12").type, "TiledPooling");
    EXPECT_EQ(layerNamed(plan, "MaxPool_12").line, 55u);
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input.1", "422"}));
    EXPECT_TRUE(plan.warnings.empty());
}

TEST(RealDataLayerInfo, TrexResnetA100QatResidual)
{
    REQUIRE_SHARED();
    EnginePlan plan =
        readLayerInfo(realdata("trex-pt-resnet-a100-qat-residual/resnet-qat-residual.onnx.engine.graph.json"));
    ASSERT_EQ(plan.layers.size(), 26u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 3u);
    EXPECT_EQ(layerNamed(plan, "DequantizeLinear_291").origin, "QDQ");
    EXPECT_EQ(layerNamed(plan, "DequantizeLinear_291").type, "Reformat");
    EXPECT_EQ(layerNamed(plan, "QuantizeLinear_298").origin, "QDQ");
    EXPECT_EQ(countType(plan, "ConvActPool"), 1u);
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input.1", "470"}));
}

TEST(RealDataLayerInfo, TrexResnetA100QatResidualQgap)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(
        realdata("trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap.onnx.engine.graph.json"));
    ASSERT_EQ(plan.layers.size(), 24u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 1u);
    EXPECT_EQ(countType(plan, "CudaPooling"), 1u);
    EXPECT_EQ(plan.layers[0].name, "QuantizeLinear_2");
    EXPECT_EQ(plan.layers[23].name, "copied_squeeze_after_(Unnamed Layer* 361) [ElementWise]");
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input.1", "476"}));
}

TEST(RealDataLayerInfo, TrexMobilenetQatTrt84)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("trex-tests-mobilenet-qat/mobilenet.qat.onnx.engine.graph.json"));
    ASSERT_EQ(plan.layers.size(), 73u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 17u);
    EXPECT_EQ(countType(plan, "CudaDepthwiseConvolution"), 17u);
    const EngineLayer& conv = layerNamed(plan, "features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)");
    EXPECT_EQ(conv.type, "CaskConvolution");
    EXPECT_EQ(conv.activation, "CLIPPED_RELU");
    EXPECT_EQ(conv.tacticValue, "0x10d7116a3fad9b7a");
    EXPECT_EQ(conv.inputs[0].vectorWidth, 4);
    EXPECT_EQ(conv.outputs[0].vectorWidth, 32);
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input1", "1179"}));
}

TEST(RealDataLayerInfo, TrexMobilenetQatTrt82ScaleQuantize)
{
    REQUIRE_SHARED();
    EnginePlan plan = readLayerInfo(realdata("trex-tests-mobilenet-qat-2022-04/mobilenet.qat.onnx.engine.graph.json"));
    ASSERT_EQ(plan.layers.size(), 85u);
    EXPECT_EQ(countOrigin(plan, "QDQ"), 0u); // 8.2: Q is a Scale layer, no Origin QDQ
    EXPECT_EQ(countType(plan, "Scale"), 17u);
    EXPECT_EQ(countType(plan, "FusedConvActConvolution"), 2u);
    const EngineLayer& q = layerNamed(plan, "QuantizeLinear_2");
    EXPECT_EQ(q.type, "Scale");
    EXPECT_EQ(otherField(q, "Mode"), "UNIFORM");
    EXPECT_TRUE(q.inputs[0].location.empty());
    EXPECT_EQ(q.outputs[0].name, "317");
    EXPECT_EQ(q.outputs[0].precision, Precision::kINT8);
    const EngineLayer& conv = layerNamed(plan, "features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)");
    EXPECT_EQ(conv.weightsPrecision, Precision::kINT8);
    EXPECT_EQ(conv.tacticValue, "0x13463e9bf9ae0d73");
    EXPECT_EQ(conv.line, 24u);
    EXPECT_EQ(plan.bindings, (std::vector<std::string>{"input1", "1179"}));
}

} // namespace
} // namespace qdq

namespace qdq
{
namespace
{
// Every prefix and a set of single-byte corruptions of the fixtures either read or throw InputError: no crash, no
// other exception, no hang.
TEST(LayerInfoReaderBroken, EveryTruncationAndCorruptionFailsCleanly)
{
    for (const char* name : {"layer-info/trt10_metadata.json", "layer-info/inspector_layers.txt",
                             "layer-info/names_only.json", "layer-info/trt82_detailed.json"})
    {
        const std::string text = test::readFile(test::fixture(name));
        std::size_t errors = 0;
        for (std::size_t length = 0; length < text.size(); ++length)
        {
            try
            {
                readLayerInfoFromBuffer(std::string_view(text).substr(0, length), name);
            }
            catch (const InputError&)
            {
                ++errors;
            }
        }
        EXPECT_GT(errors, text.size() / 2) << name;
        std::string corrupt = text;
        const char replacements[] = {'\0', '"', '{', ']', '\\', ',', '\xff', '\n', '9'};
        for (std::size_t at = 0; at < text.size(); at += 7)
        {
            for (char replacement : replacements)
            {
                corrupt[at] = replacement;
                try
                {
                    readLayerInfoFromBuffer(corrupt, name);
                }
                catch (const InputError&)
                {
                }
                corrupt[at] = text[at];
            }
        }
    }
}
} // namespace
} // namespace qdq
