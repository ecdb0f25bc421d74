// What TensorRT 11 writes, read as it is (../shared/realdata/FORMATS-trt11.md): the layer-info JSON and text forms
// ("Datatype"/"Format" keys, "I/O Tensors", "Engine Metadata", "Constants"/"Strides" skipped, profiles kept apart),
// the version and typing from the file alone, the L2-cache layers never mapped to ONNX nodes. On every TensorRT 11 file
// of ../shared/realdata, on the project's own documented-form fixtures (tests/fixtures/trt11/README.md) and on broken
// copies of them.
#include "graph_builder.h"
#include "qdq/build_log.h"
#include "qdq/load_inputs.h"
#include "qdq/myelin_kernels.h"
#include "qdq/precision_summary.h"
#include "qdq/readers.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace qdq;
using namespace qdq::test;

namespace
{

//! The TensorRT 11 files of ../shared/realdata (MANIFEST.tsv rows of the cookbook11*/cookbook111* sets).
const std::vector<std::string> kElevenFiles = {
    "cookbook11-mnist-fp32-trtexec-b200/model-trained-exportLayerInfo.log",
    "cookbook11-mnist-fp32-trtexec-b200/result-04.log",
    "cookbook111-mnist-fp32-trtexec-h100/model-trained-exportLayerInfo.log",
    "cookbook111-mnist-fp32-trtexec-h100/result-04.log",
    "cookbook11-mnist-fp32-inspector-b200/log-main.py.log",
    "cookbook111-dynquant-fp8-fp4-h100/log-main.py.log",
};

const Inputs& loaded(const std::vector<std::filesystem::path>& files)
{
    static std::deque<Inputs> kept;
    return kept.emplace_back(loadFiles(files));
}

std::size_t unknownPrecisionLayers(const Inputs& inputs, const Correlation& correlation)
{
    const EnginePlan& plan = *inputs.engine();
    std::size_t unknown = 0;
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        unknown += layerPrecisionLabel(plan.layers[i], correlation.layers[i].state) == "unknown" ? 1 : 0;
    }
    return unknown;
}

//! The file's text after replacing `from` by `to` (the first occurrence), written to a temporary file.
std::filesystem::path brokenCopy(const std::filesystem::path& source, const std::string& from, const std::string& to,
                                 const std::string& name)
{
    std::string text = readFile(source);
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    return writeFile(tempDir("trt11-broken") / name, text);
}

void expectInputError(const std::filesystem::path& path, const std::string& says)
{
    const auto result = runCli({"inspect", path.string()});
    EXPECT_EQ(result.exitStatus, 2) << result.out << result.err;
    EXPECT_NE(result.err.find(path.filename().string() + ":"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find(says), std::string::npos) << result.err;
}

} // namespace

TEST(RealDataTrt11, EveryFileReadWithKnownPrecisionsVersionAndTyping)
{
    REQUIRE_SHARED();
    for (const std::string& file : kElevenFiles)
    {
        SCOPED_TRACE(file);
        const Inputs& inputs = loaded({realdata(file)});
        ASSERT_NE(inputs.engine(), nullptr);
        const EnginePlan& plan = *inputs.engine();
        ASSERT_FALSE(plan.layers.empty());
        const Correlation correlation = correlate(inputs);
        EXPECT_EQ(unknownPrecisionLayers(inputs, correlation), 0u);
        // "I/O Tensors" (JSON) / "I/O Tensors:" (text) where the file has the block: x, y, z (FORMATS-trt11.md J7, T3).
        if (readFile(realdata(file)).find("I/O Tensors") != std::string::npos)
        {
            ASSERT_EQ(plan.ioTensors.size(), 3u);
            EXPECT_EQ(plan.bindings, (std::vector<std::string>{"x", "y", "z"}));
            EXPECT_TRUE(plan.ioTensors[0].input);
            EXPECT_FALSE(plan.ioTensors[2].input);
            EXPECT_EQ(precisionName(plan.ioTensors[2].precision), "INT64");
        }
        const SimulationOptions mode = simulationOptionsFor(inputs);
        EXPECT_EQ(mode.trtMajor, 11);
        EXPECT_TRUE(mode.stronglyTyped());
        EXPECT_FALSE(mode.typingAssumed);
        EXPECT_EQ(describeBuildMode(mode).find("--int8"), std::string::npos) << describeBuildMode(mode);
        // The L2-cache layers are the builder's (result-04.log:143): never mapped to ONNX nodes; nor is Myelin's copy
        // kernel `__myl_Move_myl0_1`, which runs none.
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            for (std::string_view node : correlation.layers[i].onnxNodes)
            {
                EXPECT_FALSE(node.starts_with("__myl_Move") || node.starts_with("__mye1085")) << node;
            }
            if (isL2CacheLayer(plan.layers[i]))
            {
                EXPECT_EQ(correlation.layers[i].state, LayerState::kDropped) << plan.layers[i].name;
                EXPECT_TRUE(correlation.layers[i].onnxNodes.empty()) << plan.layers[i].name;
                EXPECT_EQ(layerKind(plan.layers[i], correlation.layers[i].state), "L2 cache (builder)");
            }
        }
    }
}

TEST(RealDataTrt11, B200ElevenZeroLayersAndTheirKinds)
{
    REQUIRE_SHARED();
    const Inputs& inputs = loaded({realdata("cookbook11-mnist-fp32-trtexec-b200/model-trained-exportLayerInfo.log")});
    const EnginePlan& plan = *inputs.engine();
    ASSERT_EQ(plan.layers.size(), 13u); // MANIFEST.tsv: correlation x2, maxpool x2, gemm, kgen x6, custom_layer x2
    const Correlation correlation = correlate(inputs);
    std::map<std::string, int> kinds;
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        kinds[std::string(layerKind(plan.layers[i], correlation.layers[i].state))]++;
    }
    EXPECT_EQ(kinds["convolution"], 2); // Myelin "correlation" (J11)
    EXPECT_EQ(kinds["L2 cache (builder)"], 2);
    EXPECT_EQ(kinds["other"], 0);
    EXPECT_TRUE(plan.engineMetadata.empty()); // 11.0 writes none (J9)
    // "Constants" are not inputs (J6): the gemm reads one activation tensor.
    for (const EngineLayer& layer : plan.layers)
    {
        if (layer.type == "gemm")
        {
            EXPECT_EQ(layer.inputs.size(), 1u) << layer.name;
        }
        for (const auto& [key, value] : layer.otherFields)
        {
            EXPECT_NE(key, "Constants");
        }
    }
    // UInt8/UInt64 inputs of the L2-cache layers (J4).
    EXPECT_EQ(precisionName(plan.layers[0].inputs[0].precision), "UINT8");
}

TEST(RealDataTrt11, H100ElevenOneJsonAndTextAgreeAndHaveEngineMetadata)
{
    REQUIRE_SHARED();
    const Inputs& json = loaded({realdata("cookbook111-mnist-fp32-trtexec-h100/model-trained-exportLayerInfo.log")});
    const Inputs& text = loaded({realdata("cookbook111-mnist-fp32-trtexec-h100/result-04.log")});
    for (const Inputs* inputs : {&json, &text})
    {
        const EnginePlan& plan = *inputs->engine();
        ASSERT_EQ(plan.layers.size(), 9u);
        ASSERT_EQ(plan.engineMetadata.size(), 1u);
        EXPECT_EQ(plan.engineMetadata[0].first, "Multi-Device");
        EXPECT_EQ(plan.engineMetadata[0].second, "Disabled");
        // "Format not available due to dynamic shapes" is the layout; the precision is Datatype's (J3).
        EXPECT_EQ(plan.layers[0].inputs[0].format, "Format not available due to dynamic shapes");
        EXPECT_EQ(plan.layers[0].inputs[0].precision, Precision::kFP32);
        EXPECT_EQ(plan.layers[4].inputs[0].format, "(Linear) Row major linear format");
        ASSERT_EQ(plan.ioTensors[0].profiles.size(), 1u);
        EXPECT_EQ(plan.ioTensors[0].profiles[0].format, "Row major linear FP32 format (kLINEAR)");
        EXPECT_EQ(plan.ioTensors[0].profiles[0].maxShape, (std::vector<std::int64_t>{1, 1, 28, 28}));
    }
    EXPECT_EQ(json.engine()->writer.trtMajor, 11);
    // The trtexec header tells the version exactly: 11.1, within the data the rules were checked on.
    const SimulationOptions mode = simulationOptionsFor(text);
    EXPECT_EQ(mode.trtMinor, 1);
    EXPECT_EQ(describeBuildMode(mode).find("newer than 11.1"), std::string::npos);
}

TEST(RealDataTrt11, InspectorDumpKeepsItsTwoProfilesApart)
{
    REQUIRE_SHARED();
    const Inputs& inputs = loaded({realdata("cookbook11-mnist-fp32-inspector-b200/log-main.py.log")});
    const EnginePlan& plan = *inputs.engine();
    ASSERT_EQ(plan.layers.size(), 24u);
    EXPECT_EQ(plan.optimizationProfiles(), 2);
    const auto inProfile1 = std::count_if(plan.layers.begin(), plan.layers.end(),
                                          [](const EngineLayer& layer) { return layer.optimizationProfile == 1; });
    EXPECT_EQ(inProfile1, 12); // `__myl_Move_myl1_1` by its graph, `node_conv2d [profile 1]_myl1_2` by its name (T7)
    ASSERT_EQ(plan.ioTensors.size(), 3u);
    EXPECT_EQ(plan.ioTensors[0].profiles.size(), 2u);
    EXPECT_EQ(plan.ioTensors[0].profiles[1].maxShape, (std::vector<std::int64_t>{4, 1, 28, 28}));
    const auto note =
        std::find_if(inputs.inputNotes.begin(), inputs.inputNotes.end(),
                     [](const std::string& text) { return text.find("2 optimization profiles") != std::string::npos; });
    ASSERT_NE(note, inputs.inputNotes.end());
    EXPECT_NE(note->find("profile 0: 12 layers, profile 1: 12 layers"), std::string::npos) << *note;
    EXPECT_EQ(inputs.timings(), nullptr); // the printed output arrays (lines 39 ff.) are no profile
    // No trtexec header and no version line (L11): the version is the 11.x key forms' (T1).
    const SimulationOptions mode = simulationOptionsFor(inputs);
    EXPECT_FALSE(mode.trtMinorKnown);
    EXPECT_NE(describeBuildMode(mode).find("TensorRT 11.x"), std::string::npos) << describeBuildMode(mode);
    EXPECT_NE(mode.versionSource.find("log-main.py.log:"), std::string::npos) << mode.versionSource;
}

TEST(RealDataTrt11, DynamicQuantizeCountsAsAQuantizeOpAndTheFp4WarningIsExplained)
{
    REQUIRE_SHARED();
    const auto path = realdata("cookbook111-dynquant-fp8-fp4-h100/log-main.py.log");
    const Inputs& inputs = loaded({path});
    EXPECT_EQ(inputs.buildLog->trtVersion.value_or(""), "11.1.0"); // the builder library's name (L10)
    const auto note = std::find_if(inputs.inputNotes.begin(), inputs.inputNotes.end(),
                                   [](const std::string& text)
                                   { return text.find("does not accelerate FP4 compute") != std::string::npos; });
    ASSERT_NE(note, inputs.inputNotes.end());
    EXPECT_NE(note->find("log-main.py.log:96"), std::string::npos) << *note;
    EXPECT_NE(note->find("Blackwell"), std::string::npos);
    const auto result = runCli({"inspect", "--format", "json", path.string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    EXPECT_NE(result.out.find("\"quantize_op_layers\": 1"), std::string::npos) << result.out;
}

TEST(RealDataTrt11, ElevenOneVersionPastTheCheckedDataIsSaidSo)
{
    REQUIRE_SHARED();
    const Inputs& inputs = loaded({realdata("cookbook11-mnist-fp32-inspector-b200/log-main.py.log")});
    BuildModeRequest request;
    request.trtVersion = "11.4";
    const SimulationOptions mode = resolveBuildMode(inputs, request);
    EXPECT_EQ(mode.trtMinor, 4);
    EXPECT_NE(describeBuildMode(mode).find("newer than 11.1"), std::string::npos) << describeBuildMode(mode);
    request.trtVersion = "11.1";
    EXPECT_EQ(describeBuildMode(resolveBuildMode(inputs, request)).find("newer than"), std::string::npos);
}

// The project's documented-form INT8 fixture (tests/fixtures/trt11/README.md): Myelin INT8 kernels read with their
// precisions, the kgen quantize kernel mapped to its QuantizeLinear, the L2-cache layer to nothing.
TEST(Trt11Fixtures, Int8MyelinEngineReadAndPairedWithItsProfile)
{
    const Inputs& inputs =
        loaded({fixture("trt11/int8-myelin-layerinfo.json"), fixture("trt11/int8-myelin-profile.json")});
    const EnginePlan& plan = *inputs.engine();
    ASSERT_EQ(plan.layers.size(), 5u);
    EXPECT_EQ(plan.layers[2].inputs[0].precision, Precision::kINT8);
    EXPECT_EQ(plan.layers[2].inputs[0].format, "(NHWC4) Channel major format where channel % 4 == 0");
    EXPECT_EQ(plan.layers[1].outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(precisionName(plan.layers[0].inputs[1].precision), "INT64"); // UInt64: an 8-byte integer
    EXPECT_TRUE(isMyelinGemmKernel(plan.layers[4]));                       // __myl_Fc (Q3)
    const Report report = diagnose(inputs);
    EXPECT_TRUE(report.correlation.layers[0].onnxNodes.empty());
    EXPECT_EQ(report.correlation.layers[0].state, LayerState::kDropped);
    // Every profile row pairs with a layer: nothing unmatched belongs to the engine.
    const PrecisionSummary summary = summarizePrecision(report, inputs);
    for (const auto& group : summary.byKind)
    {
        EXPECT_NE(group.name, "unmatched profile entries");
    }
    double timed = 0.0;
    for (const auto& mapping : report.correlation.layers)
    {
        timed += mapping.timeMs.value_or(0.0);
    }
    EXPECT_NEAR(timed, 0.04, 1e-9);
    EXPECT_FALSE(report.correlation.layers[0].timeMs.value_or(0.0) > 0.0);
}

TEST(Trt11Fixtures, Fp8DynamicQuantizeLogIsElevenOneStrongWithFp8Tensors)
{
    const Inputs& inputs = loaded({fixture("trt11/fp8-dynquant.log")});
    EXPECT_EQ(inputs.buildLog->trtVersion.value_or(""), "11.1.0");
    const EnginePlan& plan = *inputs.engine();
    ASSERT_EQ(plan.layers.size(), 1u);
    EXPECT_EQ(plan.layers[0].outputs[0].precision, Precision::kFP8);
    const SimulationOptions mode = simulationOptionsFor(inputs);
    EXPECT_TRUE(mode.stronglyTyped());
    EXPECT_FALSE(mode.typingAssumed);
    const auto note =
        std::find_if(inputs.inputNotes.begin(), inputs.inputNotes.end(),
                     [](const std::string& text) { return text.find("scales to fp32") != std::string::npos; });
    ASSERT_NE(note, inputs.inputNotes.end());
    EXPECT_NE(note->find("fp8-dynquant.log:7"), std::string::npos) << *note;
    // FP8 Q/DQ get no INT8-only advice.
    const auto result = runCli({"diagnose", fixture("trt11/fp8-dynquant.log").string()});
    EXPECT_EQ(result.exitStatus, 0) << result.err;
    EXPECT_EQ(result.out.find("INT8 tensor"), std::string::npos) << result.out;
    EXPECT_EQ(result.out.find("--int8"), std::string::npos) << result.out;
}

// A 10.x-form list is not taken for an 11.x one: "Format/Datatype" keys tell no writer.
TEST(Trt11Fixtures, TenFormsTellNoElevenWriter)
{
    const std::string ten = R"({"Layers": [{"Name": "conv", "LayerType": "CaskConvolution", "Inputs": [{"Name": "x",
        "Dimensions": [1,3,8,8], "Format/Datatype": "Row major linear FP32"}], "Outputs": [], "Metadata": ""}],
        "Bindings": ["x"]})";
    const EnginePlan plan = readLayerInfoFromBuffer(ten, "ten.json", Limits{});
    EXPECT_EQ(plan.writer.trtMajor, 0);
    EXPECT_EQ(plan.layers[0].inputs[0].precision, Precision::kFP32);
    std::string eleven = ten;
    eleven.replace(eleven.find("\"Format/Datatype\": \"Row major linear FP32\""),
                   std::string("\"Format/Datatype\": \"Row major linear FP32\"").size(),
                   "\"Datatype\": \"Half\", \"Format\": \"(Linear) Row major linear FP32 format\"");
    const EnginePlan elevenPlan = readLayerInfoFromBuffer(eleven, "eleven.json", Limits{});
    EXPECT_EQ(elevenPlan.writer.trtMajor, 11);
    // The precision comes from Datatype, never from the format string (which says FP32 here).
    EXPECT_EQ(elevenPlan.layers[0].inputs[0].precision, Precision::kFP16);
}

TEST(Trt11BrokenInputs, JsonIoTensorsTruncatedWrongTypesAndMissingKeys)
{
    const auto source = fixture("trt11/int8-myelin-layerinfo.json");
    const std::string text = readFile(source);
    expectInputError(
        writeFile(tempDir("trt11-broken") / "truncated.json", text.substr(0, text.find("\"ProfileInfo\""))),
        "truncated.json:");
    expectInputError(brokenCopy(source, "\"I/O Tensors\": [", "\"I/O Tensors\": {\"x\": 1, \"y\": [", "io-object.json"),
                     "\"I/O Tensors\" is an object");
    expectInputError(brokenCopy(source, "\"IOMode\": \"Input\",", "", "no-iomode.json"), "has no \"IOMode\"");
    expectInputError(brokenCopy(source, "\"IOMode\": \"Input\"", "\"IOMode\": \"Sideways\"", "bad-iomode.json"),
                     "neither \"Input\" nor \"Output\"");
    expectInputError(brokenCopy(source, "\"DataType\": \"Float\"", "\"DataType\": 3", "datatype-number.json"),
                     "\"DataType\" is a number");
    expectInputError(brokenCopy(source, "\"MinShape\": [1,1,28,28]", "\"MinShape\": \"1x1x28x28\"", "shape.json"),
                     "\"MinShape\" is a string");
    expectInputError(brokenCopy(source, "\"Engine Metadata\": {", "\"Engine Metadata\": [{", "metadata.json"),
                     "\"Engine Metadata\" is an array");
    // Line numbers: the error names the line of the broken entry.
    const auto noName = brokenCopy(source, "\"Name\": \"y\",\n  \"IOMode\"", "\"IOMode\"", "no-name.json");
    const auto result = runCli({"inspect", noName.string()});
    EXPECT_EQ(result.exitStatus, 2);
    EXPECT_NE(result.err.find("has no \"Name\""), std::string::npos) << result.err;
}

TEST(Trt11BrokenInputs, JsonDatatypeOfAnUnknownTypeWarnsAndStaysUnknown)
{
    const auto path = brokenCopy(fixture("trt11/int8-myelin-layerinfo.json"), "\"Datatype\": \"Int8\"",
                                 "\"Datatype\": \"Int9\"", "int9.json");
    const EnginePlan plan = readLayerInfo(path.string(), Limits{});
    EXPECT_EQ(plan.layers[1].outputs[0].precision, Precision::kUnknown);
    ASSERT_FALSE(plan.warnings.empty());
    EXPECT_NE(plan.warnings[0].describe().find("\"Int9\" is not a data type"), std::string::npos);
    EXPECT_NE(plan.warnings[0].describe().find("int9.json:"), std::string::npos) << plan.warnings[0].describe();
}

TEST(Trt11BrokenInputs, TextIoTensorLinesAndEngineMetadata)
{
    const std::string head =
        "[08/27/2026-12:19:33] [I] Layers:\n"
        "Name: conv, LayerType: CaskConvolution, Inputs: [ { Name: x, Location: Device, "
        "Dimensions: [1,1,28,28], Datatype: Float, Format: (Linear) Row major linear format }], "
        "Outputs: [ { Name: y, Location: Device, Dimensions: [1,32,28,28], Datatype: Float, Format: "
        "(Linear) Row major linear format }], ParameterType: Convolution, Metadata:\n\nI/O Tensors:\n";
    const std::string good =
        " Name: x, IOMode: Input, DataType: Float, Dimensions: [1,1,28,28], Location: Device, "
        "IsShapeInferenceIO: false, ProfileInfo: [ { MinShape: [1,1,28,28], OptShape: [1,1,28,28], "
        "MaxShape: [1,1,28,28], Format: Row major linear FP32 format (kLINEAR) }]\n";
    const auto dir = tempDir("trt11-text");
    const BuildLog log = readBuildLog(
        writeFile(dir / "good.log", head + good + "\nEngine Metadata:\n Multi-Device: Disabled\n").string(), {},
        Limits{});
    ASSERT_EQ(log.engine.ioTensors.size(), 1u);
    EXPECT_EQ(log.engine.ioTensors[0].profiles[0].optShape, (std::vector<std::int64_t>{1, 1, 28, 28}));
    EXPECT_EQ(log.engine.engineMetadata.size(), 1u);
    EXPECT_EQ(log.engine.writer.trtMajor, 11);
    expectInputError(writeFile(dir / "no-mode.log", head + " Name: x, DataType: Float\n"), "no-mode.log:5");
    expectInputError(writeFile(dir / "bad-shape.log", head + " Name: x, IOMode: Input, DataType: Float, Dimensions: "
                                                             "[1,a,28,28]\n"),
                     "Dimensions is not a list of integers");
    expectInputError(writeFile(dir / "cut.log", head + good.substr(0, good.find("MaxShape")) + "\n"),
                     "an I/O Tensors line is not understood");
    expectInputError(writeFile(dir / "no-type.log", head + " Name: x, IOMode: Output, Dimensions: [1]\n"),
                     "no DataType");
    expectInputError(writeFile(dir / "meta.log", head + good + "\nEngine Metadata:\n Multi-Device Disabled\n"),
                     "not \"Key: value\"");
}

// The log's `ForeignNode {ForeignNode[a...c]} metadata:` line names every node of the region (docs/build-logs.md);
// the layer is mapped to that list, not only to the two ends its name gives. The near-miss: no such line.
TEST(Trt11Fixtures, ForeignNodeMappedToTheLogsFullNodeList)
{
    const std::string layerLine =
        "[05/01/2026-10:00:01] [V] [TRT] Engine Layer Information:\n"
        "Layer(Myelin): {ForeignNode[node_a...node_c]}, Tactic: 0x0000000000000000, x (Half[1,8]) -> y (Half[1,8])\n";
    const std::string metadata = "[05/01/2026-10:00:00] [V] [TRT] ForeignNode {ForeignNode[node_a...node_c]} metadata: "
                                 "[ONNX Layer: node_a]\x1e[ONNX Layer: node_b]\x1e[ONNX Layer: node_c]\n";
    const auto dir = tempDir("trt11-foreign");
    const Inputs& with = loaded({writeFile(dir / "with.log", metadata + layerLine)});
    const Correlation mapped = correlate(with);
    ASSERT_EQ(mapped.layers.size(), 1u);
    EXPECT_EQ(mapped.layers[0].evidence, MappingEvidence::kBuildLog);
    EXPECT_EQ(mapped.layers[0].onnxNodes.size(), 3u);
    const Inputs& without = loaded({writeFile(dir / "without.log", layerLine)});
    const Correlation ends = correlate(without);
    EXPECT_NE(ends.layers[0].evidence, MappingEvidence::kBuildLog);
    EXPECT_LT(ends.layers[0].onnxNodes.size(), 3u);
}
