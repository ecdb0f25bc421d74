// Tests of the verbose build-log reader: own fixtures for every variant and broken input, and every verbose log and
// excerpt of ../shared/realdata with facts checked by hand (grep -c / sed -n on the real files).

#include "qdq/readers.h"
#include "test_support.h"

#include <algorithm>
#include <random>
#include <string>

namespace
{

using qdq::BuildLog;
using qdq::detectInputKind;
using qdq::EngineLayer;
using qdq::InputError;
using qdq::InputKind;
using qdq::LayerListForm;
using qdq::OptimizerEventKind;
using qdq::Precision;
using qdq::readBuildLog;
using qdq::ReaderWarning;
using qdq::test::fixture;
using qdq::test::readFile;
using qdq::test::realdata;
using qdq::test::tempDir;
using qdq::test::writeFile;

BuildLog readFixture(const std::string& name)
{
    return qdq::readBuildLog(fixture("build-log/" + name).string());
}

BuildLog readReal(const std::string& relative)
{
    return qdq::readBuildLog(realdata(relative).string());
}

std::size_t countEvents(const BuildLog& log, OptimizerEventKind kind, const std::string& pass = {})
{
    return static_cast<std::size_t>(std::count_if(log.events.begin(), log.events.end(),
                                                  [&](const qdq::OptimizerEvent& e)
                                                  { return e.kind == kind && (pass.empty() || e.pass == pass); }));
}

const qdq::OptimizerEvent* firstEvent(const BuildLog& log, OptimizerEventKind kind, const std::string& pass = {})
{
    for (const auto& e : log.events)
    {
        if (e.kind == kind && (pass.empty() || e.pass == pass))
        {
            return &e;
        }
    }
    return nullptr;
}

const EngineLayer* findLayer(const BuildLog& log, const std::string& name)
{
    for (const auto& layer : log.engine.layers)
    {
        if (layer.name == name)
        {
            return &layer;
        }
    }
    return nullptr;
}

double totalAverage(const BuildLog& log)
{
    double sum = 0.0;
    for (const auto& e : log.profile.entries)
    {
        sum += e.averageMs;
    }
    return sum;
}

bool hasWarningContaining(const BuildLog& log, const std::string& text)
{
    return std::any_of(log.warnings.begin(), log.warnings.end(),
                       [&](const qdq::ReaderWarning& w) { return w.message.find(text) != std::string::npos; });
}

std::string errorOf(const std::string& path, const qdq::Limits& limits = {})
{
    try
    {
        qdq::readBuildLog(path, {}, limits);
    }
    catch (const InputError& e)
    {
        return e.what();
    }
    return "(no error)";
}

} // namespace

// ------------------------------------------------------------------------------------------------------------------
// Own fixtures: one per variant

TEST(BuildLogReader, Trt80DecimalTacticsAndBracketTensors)
{
    BuildLog log = readFixture("trt80-decimal-brackets.log");
    EXPECT_EQ(log.trtVersion, "8.0.3");
    EXPECT_EQ(log.commandLine, "trtexec --onnx=model.onnx --int8 --verbose");
    EXPECT_EQ(log.lineCount, 40u);
    ASSERT_EQ(log.modelOptions.size(), 3u);
    EXPECT_EQ(log.modelOptions[1], (std::pair<std::string, std::string>{"Model", "model.onnx"}));
    EXPECT_EQ(log.modelOptions[2], (std::pair<std::string, std::string>{"Output", ""}));
    ASSERT_EQ(log.buildOptions.size(), 3u);
    EXPECT_EQ(log.buildOptions[2].second, "Dynamic");
    ASSERT_EQ(log.deviceInfo.size(), 2u); // "=== System Options ===" is not kept; the blank [I] line ends the block
    EXPECT_EQ(log.deviceInfo[1], (std::pair<std::string, std::string>{"Compute Capability", "6.1"}));
    EXPECT_TRUE(log.explicitPrecisionMarker);
    EXPECT_FALSE(log.implicitInt8Marker);

    ASSERT_EQ(log.parsedNodes.size(), 2u);
    EXPECT_EQ(log.parsedNodes[0].onnxNode, "QuantizeLinear_2");
    EXPECT_EQ(log.parsedNodes[0].opType, "QuantizeLinear");
    EXPECT_EQ(log.parsedNodes[0].line, 18u);
    ASSERT_EQ(log.registeredLayers.size(), 2u);
    EXPECT_EQ(log.registeredLayers[1].trtLayer, "Conv_9");
    EXPECT_EQ(log.registeredLayers[1].onnxNode, "Conv_9");

    // 8.0: a fusion without a preceding "Running:" line.
    const auto* fuse = firstEvent(log, OptimizerEventKind::kFuse);
    ASSERT_NE(fuse, nullptr);
    EXPECT_EQ(fuse->pass, "ConstShuffleFusion");
    EXPECT_EQ(fuse->subject, "b3/read:0");
    EXPECT_EQ(fuse->object, "(Unnamed Layer* 21) [Shuffle]");
    EXPECT_EQ(fuse->line, 26u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kLayerCount), 3u);

    ASSERT_EQ(log.tactics.size(), 1u);
    EXPECT_EQ(log.tactics[0].layer, "Conv_9 + Relu_11");
    EXPECT_EQ(log.tactics[0].runnerType, "CaskConvolution");
    EXPECT_EQ(log.tactics[0].tactic, "-3908975881807046106");
    EXPECT_EQ(log.tactics[0].tacticName, "maxwell_scudnn_128x64_relu_small_nn_v1");
    ASSERT_TRUE(log.tactics[0].timeMs.has_value());
    EXPECT_DOUBLE_EQ(*log.tactics[0].timeMs, 0.00436);

    ASSERT_TRUE(log.hasEngineBlock);
    EXPECT_EQ(log.engine.form, LayerListForm::kLogLine);
    ASSERT_EQ(log.engine.layers.size(), 3u);
    const EngineLayer& q = log.engine.layers[0];
    EXPECT_EQ(q.type, "Scale");
    EXPECT_EQ(q.name, "QuantizeLinear_2_quantize_scale_node");
    EXPECT_EQ(q.tacticValue, "0");
    EXPECT_EQ(q.line, 36u);
    ASSERT_EQ(q.inputs.size(), 1u);
    EXPECT_EQ(q.inputs[0].name, "x:0");
    EXPECT_EQ(q.inputs[0].dimensions, (std::vector<std::int64_t>{-2, 3, 224, 224}));
    EXPECT_EQ(q.inputs[0].precision, Precision::kFP32);
    ASSERT_EQ(q.outputs.size(), 1u);
    EXPECT_EQ(q.outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(log.engine.layers[1].tacticValue, "-3908975881807046106");
    // A name with commas, parentheses and brackets; a scalar tensor with empty dims.
    const EngineLayer& pwn = log.engine.layers[2];
    EXPECT_EQ(pwn.name, "PWN(PWN(Sigmoid_701, (Unnamed Layer* 689) [Constant] + Mul_703), Sub_705)");
    ASSERT_EQ(pwn.inputs.size(), 2u);
    EXPECT_EQ(pwn.inputs[1].name, "(Unnamed Layer* 689) [Constant]_output");
    EXPECT_TRUE(pwn.inputs[1].dimensions.empty());
    ASSERT_EQ(pwn.outputs.size(), 1u);
    EXPECT_EQ(pwn.outputs[0].name, "Sub_705:0");
    EXPECT_TRUE(log.warnings.empty());
}

TEST(BuildLogReader, Trt84HexTacticsHorizontalMergeNames)
{
    BuildLog log = readFixture("trt84-hex.log");
    EXPECT_EQ(log.trtVersion, "8.4.1");
    ASSERT_EQ(log.engine.layers.size(), 4u);
    const EngineLayer& merged = log.engine.layers[2];
    EXPECT_EQ(merged.name, "Conv_62 + Relu_63 || Conv_65 + Relu_66 || Conv_68 + Relu_69");
    EXPECT_EQ(merged.tacticValue, "0xc60aa554281a27f3");
    ASSERT_EQ(merged.outputs.size(), 1u);
    EXPECT_EQ(merged.outputs[0].name, "Conv_62 + Relu_63 || Conv_65 + Relu_66 || Conv_68 + Relu_69");
    EXPECT_EQ(merged.outputs[0].precision, Precision::kFP16);
    const EngineLayer& pool = log.engine.layers[3];
    EXPECT_EQ(pool.name, "(Unnamed Layer* 2) [Pooling]");
    ASSERT_EQ(pool.outputs.size(), 1u);
    EXPECT_EQ(pool.outputs[0].name, "Reformatted Output Tensor 0 to (Unnamed Layer* 2) [Pooling]");
    EXPECT_EQ(pool.outputs[0].dimensions, (std::vector<std::int64_t>{1, 96, 128, 192}));

    const auto* merge = firstEvent(log, OptimizerEventKind::kMerge);
    ASSERT_NE(merge, nullptr);
    EXPECT_EQ(merge->subject, "Conv_62 + Relu_63");
    EXPECT_EQ(merge->object, "Conv_65 + Relu_66 || Conv_68 + Relu_69");
    const auto* convert = firstEvent(log, OptimizerEventKind::kSwapLayerType);
    ASSERT_NE(convert, nullptr);
    EXPECT_EQ(convert->pass, "MatMulToConvTransform");
    EXPECT_EQ(convert->subject, "(Unnamed Layer* 8) [Matrix Multiply]");
    EXPECT_EQ(convert->detail, "MATRIX_MULTIPLY");
    EXPECT_EQ(convert->object, "CONVOLUTION");
    ASSERT_EQ(log.tactics.size(), 1u);
    EXPECT_EQ(log.tactics[0].tactic, "0x0ebe499388e08286");
    EXPECT_EQ(log.tactics[0].tacticName, "maxwell_scudnn_128x32_relu_medium_nn_v1");
}

TEST(BuildLogReader, Trt85ParenTensorsWithVectorizedDims)
{
    BuildLog log = readFixture("trt85-paren-cv.log");
    EXPECT_EQ(log.trtVersion, "8.5.2");
    ASSERT_EQ(log.engine.layers.size(), 6u);
    const EngineLayer& station = log.engine.layers[0];
    EXPECT_EQ(station.type, "TrainStation");
    EXPECT_EQ(station.name, "[trainStation1]");
    EXPECT_TRUE(station.inputs.empty());
    EXPECT_TRUE(station.outputs.empty());
    const EngineLayer& q = log.engine.layers[1];
    ASSERT_EQ(q.outputs.size(), 1u);
    EXPECT_EQ(q.outputs[0].name, "581");
    EXPECT_EQ(q.outputs[0].dimensions, (std::vector<std::int64_t>{1, 96, 800, 912}));
    EXPECT_EQ(q.outputs[0].vectorWidth, 32);
    EXPECT_EQ(q.outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(q.inputs[0].vectorWidth, 0);
    const EngineLayer& constant = log.engine.layers[3];
    EXPECT_TRUE(constant.inputs.empty());
    ASSERT_EQ(constant.outputs.size(), 1u);
    EXPECT_EQ(constant.outputs[0].name, "(Unnamed Layer* 108) [Shuffle]_output");
    const EngineLayer& pwn = log.engine.layers[4];
    EXPECT_EQ(
        pwn.name,
        "PWN(PWN(Sigmoid_701, (Unnamed Layer* 689) [Constant] + (Unnamed Layer* 690) [Shuffle] + Mul_703), Sub_705)");
    ASSERT_EQ(pwn.inputs.size(), 2u);
    EXPECT_EQ(pwn.inputs[1].name, "(Unnamed Layer* 108) [Shuffle]_output");
    const EngineLayer& myelin = log.engine.layers[5];
    EXPECT_EQ(myelin.name, "{ForeignNode[/head/Constant_2_output_0.../Unsqueeze_2]}");
    ASSERT_EQ(myelin.outputs.size(), 2u);
    EXPECT_EQ(myelin.outputs[0].name, "boxes");
    EXPECT_EQ(myelin.outputs[1].name, "scores, labels"); // a comma inside a tensor name
    EXPECT_EQ(myelin.outputs[1].precision, Precision::kINT32);

    // 8.5 --dumpProfile table with a median column; the Total row is not an entry.
    ASSERT_TRUE(log.hasProfileTable);
    EXPECT_EQ(log.profile.iterations, 11);
    EXPECT_TRUE(log.profile.hasMedian);
    ASSERT_EQ(log.profile.entries.size(), 4u);
    EXPECT_EQ(log.profile.entries[0].name, "[trainStation1]");
    EXPECT_EQ(log.profile.entries[2].name, "conv1.weight + QuantizeLinear_7 + Conv_9 + MaxPool_12");
    EXPECT_DOUBLE_EQ(log.profile.entries[2].timeMs, 657.65);
    EXPECT_DOUBLE_EQ(log.profile.entries[2].averageMs, 59.7861);
    EXPECT_DOUBLE_EQ(log.profile.entries[2].medianMs.value_or(0), 58.6879);
    EXPECT_DOUBLE_EQ(log.profile.entries[2].percentage.value_or(0), 14.8);
    EXPECT_NEAR(totalAverage(log), 178.6906, 1e-9);
}

TEST(BuildLogReader, Trt10DetailedLayersRecords)
{
    BuildLog log = readFixture("trt10-detailed-layers.log");
    EXPECT_EQ(log.trtVersion, "10.16.1");
    ASSERT_EQ(log.deviceInfo.size(), 4u);
    EXPECT_EQ(log.deviceInfo[1].first, "Device 0");
    ASSERT_TRUE(log.hasEngineBlock);
    EXPECT_EQ(log.engine.form, LayerListForm::kDetailed);
    ASSERT_EQ(log.engine.layers.size(), 5u);
    EXPECT_EQ(log.engine.bindings, (std::vector<std::string>{"x", "y"}));

    const EngineLayer& reformat = log.engine.layers[0];
    EXPECT_EQ(reformat.type, "Reformat");
    EXPECT_EQ(reformat.origin, "REFORMAT");
    EXPECT_TRUE(reformat.hasMetadata);
    EXPECT_TRUE(reformat.metadata.empty());
    ASSERT_EQ(reformat.outputs.size(), 1u);
    EXPECT_EQ(reformat.outputs[0].name, "Reformatted Input Tensor 0 to node_conv2d + node_relu");
    EXPECT_EQ(reformat.outputs[0].location, "Device");
    EXPECT_EQ(reformat.outputs[0].precision, Precision::kINT8);

    const EngineLayer& conv = log.engine.layers[1];
    EXPECT_EQ(conv.type, "CaskConvolution");
    EXPECT_EQ(conv.parameterType, "Convolution");
    EXPECT_EQ(conv.weightsPrecision, Precision::kINT8);
    EXPECT_EQ(conv.activation, "RELU");
    EXPECT_EQ(conv.tacticValue, "0x5b8bf1b8028629d9");
    EXPECT_EQ(conv.tacticName.rfind("sm80_xmma_fprop_implicit_gemm_interleaved_i8i8", 0), 0u);
    ASSERT_EQ(conv.metadataGroups().size(), 2u); // \x1e between the two nodes
    EXPECT_EQ(conv.metadataGroups()[1].onnxNodes, (std::vector<std::string>{"node_relu"}));
    auto kernel = std::find_if(conv.otherFields.begin(), conv.otherFields.end(),
                               [](const auto& kv) { return kv.first == "Kernel"; });
    ASSERT_NE(kernel, conv.otherFields.end());
    EXPECT_EQ((*kernel).second, "[5,5]");

    const EngineLayer& shapeCall = log.engine.layers[2];
    EXPECT_EQ(shapeCall.type, "shape_call");
    EXPECT_TRUE(shapeCall.inputs.empty());
    EXPECT_TRUE(shapeCall.tacticName.empty());

    const EngineLayer& gemm = log.engine.layers[3];
    EXPECT_EQ(gemm.name, "node_linear [profile 1]_myl7_1"); // not a profile suffix
    EXPECT_EQ(gemm.profileSuffixAt, std::string::npos);
    // ...but the profile inside a Myelin kernel's name tells its profile (../shared/realdata/FORMATS-trt11.md T7).
    EXPECT_EQ(gemm.optimizationProfile, 1);
    ASSERT_EQ(gemm.inputs.size(), 2u);
    EXPECT_TRUE(gemm.inputs[1].location.empty());
    EXPECT_EQ(gemm.outputs[0].precision, Precision::kFP16);
    ASSERT_EQ(gemm.metadataGroups().size(), 1u); // \x1f joins nodes inside one group
    EXPECT_EQ(gemm.metadataGroups()[0].onnxNodes.size(), 2u);

    const EngineLayer& pool = log.engine.layers[4];
    EXPECT_EQ(pool.baseName(), "node_max_pool2d");
    EXPECT_EQ(pool.optimizationProfile, 1);
    EXPECT_EQ(pool.inputs[0].name, "relu [profile 1]");

    // 10.x profiling-completed summary and the reformat insertion.
    ASSERT_EQ(log.tactics.size(), 1u);
    EXPECT_EQ(log.tactics[0].layer, "node_conv2d + node_relu");
    EXPECT_EQ(log.tactics[0].tactic, "0x5b8bf1b8028629d9");
    EXPECT_DOUBLE_EQ(log.tactics[0].timeMs.value_or(0), 0.00557795);
    const auto* reformatEvent = firstEvent(log, OptimizerEventKind::kAddReformat);
    ASSERT_NE(reformatEvent, nullptr);
    EXPECT_EQ(reformatEvent->subject, "Reformatted Input Tensor 0 to node_conv2d + node_relu");
    EXPECT_EQ(reformatEvent->object, "x");
    EXPECT_EQ(reformatEvent->detail, "Float(784,784,28,1) to Int8(784,1:32,28,1)");

    // 10.x --dumpProfile: layer last.
    EXPECT_EQ(log.profile.iterations, 14590);
    ASSERT_EQ(log.profile.entries.size(), 3u);
    EXPECT_EQ(log.profile.entries[0].name, "Reformatting CopyNode for Input Tensor 0 to node_conv2d + node_relu");
    EXPECT_DOUBLE_EQ(log.profile.entries[1].averageMs, 0.0243);
    EXPECT_DOUBLE_EQ(log.profile.entries[1].medianMs.value_or(0), 0.0246);
    EXPECT_EQ(log.profile.entries[2].line, 26u);
}

TEST(BuildLogReader, PythonLoggerPrefix)
{
    BuildLog log = readFixture("python-logger.log");
    EXPECT_EQ(log.trtVersion, "10.16.2"); // from libnvinfer_builder_resource_sm90.so.10.16.2
    ASSERT_EQ(log.engine.layers.size(), 2u);
    EXPECT_EQ(log.engine.layers[1].outputs[0].name, "Reformatted Output Tensor 0 to (Unnamed Layer* 2) [Pooling]");
    ASSERT_EQ(log.warningsInLog.size(), 1u);
    EXPECT_EQ(log.warningsInLog[0].line, 6u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kSwapLayerType), 1u);
    EXPECT_FALSE(hasWarningContaining(log, "fragment"));
}

TEST(BuildLogReader, OldPythonLoggerPrefix)
{
    BuildLog log = readFixture("python-old-logger.log");
    EXPECT_FALSE(log.trtVersion.has_value());
    EXPECT_FALSE(log.hasEngineBlock);
    ASSERT_EQ(log.parsedNodes.size(), 1u);
    EXPECT_EQ(log.parsedNodes[0].opType, "Conv");
    ASSERT_EQ(log.errors.size(), 2u);
    EXPECT_EQ(log.errors[1].text, "Assertion failed: engine != nullptr");
    EXPECT_EQ(log.errors[1].line, 7u);
    EXPECT_EQ(log.warningsInLog.size(), 1u);
    const auto* fuse = firstEvent(log, OptimizerEventKind::kFuse);
    ASSERT_NE(fuse, nullptr);
    EXPECT_TRUE(fuse->pass.empty());
    EXPECT_EQ(fuse->subject, "(Unnamed Layer* 0) [Scale]");
}

TEST(BuildLogReader, CustomVerboseLogger)
{
    BuildLog log = readFixture("custom-verbose-logger.log");
    EXPECT_EQ(log.trtVersion, "8.5.1");
    EXPECT_FALSE(log.hasEngineBlock);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kQdqPhase), 2u);
    const auto* remove = firstEvent(log, OptimizerEventKind::kRemove);
    ASSERT_NE(remove, nullptr);
    EXPECT_EQ(remove->pass, "ConstQDQInitializersFusion");
    EXPECT_EQ(remove->subject, "(Unnamed Layer* 0) [Constant]");
    EXPECT_EQ(remove->line, 9u);
    ASSERT_EQ(log.errors.size(), 1u);
    EXPECT_EQ(log.errors[0].line, 12u);
    ASSERT_EQ(log.warningsInLog.size(), 1u);
    EXPECT_EQ(log.warningsInLog[0].line, 4u);
}

TEST(BuildLogReader, DumpProfileTrt80WithoutMedian)
{
    BuildLog log = readFixture("profile-trt80.log");
    EXPECT_FALSE(log.hasEngineBlock);
    ASSERT_TRUE(log.hasProfileTable);
    EXPECT_EQ(log.profile.iterations, 137);
    EXPECT_FALSE(log.profile.hasMedian);
    ASSERT_EQ(log.profile.entries.size(), 4u);
    EXPECT_EQ(log.profile.entries[0].name, "Reformatting CopyNode for Input Tensor 0 to Conv_0");
    EXPECT_FALSE(log.profile.entries[0].medianMs.has_value());
    EXPECT_DOUBLE_EQ(log.profile.entries[0].percentage.value_or(0), 6.6);
    EXPECT_NEAR(totalAverage(log), 1.4529, 1e-9);
}

TEST(BuildLogReader, FailedBuildWithoutEngineBlock)
{
    BuildLog log = readFixture("failed-build.log");
    EXPECT_EQ(log.trtVersion, "8.4.10");
    EXPECT_FALSE(log.hasEngineBlock);
    EXPECT_TRUE(log.engine.layers.empty());
    EXPECT_TRUE(log.implicitInt8Marker); // "Setting dynamic range for input to [-4,4]"
    ASSERT_EQ(log.errors.size(), 6u);
    EXPECT_EQ(log.errors[0].line, 10u);
    EXPECT_NE(log.errors[0].text.find("requires bool I/O"), std::string::npos);
    EXPECT_EQ(log.warningsInLog.size(), 1u);
    EXPECT_EQ(log.registeredLayers.size(), 1u);
    EXPECT_TRUE(log.warnings.empty());
}

TEST(BuildLogReader, QdqOptimizerEvents)
{
    BuildLog log = readFixture("qdq-optimizer-events.log");
    EXPECT_TRUE(log.explicitPrecisionMarker);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kQdqPhase), 3u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kRunning), 7u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kFuse, "QuantizeDoubleInputNodes"), 2u);

    const auto* swap = firstEvent(log, OptimizerEventKind::kSwap);
    ASSERT_NE(swap, nullptr);
    EXPECT_EQ(swap->pass, "VanillaSwapWithFollowingQ");
    EXPECT_EQ(swap->subject, "/model/backbone4/Slice");
    EXPECT_EQ(swap->object, "/model/backbone4/cv2/conv/_input_quantizer/QuantizeLinear_clone_0");

    const auto* dup = firstEvent(log, OptimizerEventKind::kEliminate, "HorizontalMergeQNodes");
    ASSERT_NE(dup, nullptr);
    EXPECT_EQ(dup->subject, "/model/backbone2/cv2/conv/_input_quantizer/QuantizeLinear_clone_1");
    EXPECT_EQ(dup->object, "/model/backbone2/m.0/cv1/conv/_input_quantizer/QuantizeLinear");
    EXPECT_EQ(dup->line, 13u);

    const auto* toCopy = firstEvent(log, OptimizerEventKind::kSwapLayerType, "QDQToCopy");
    ASSERT_NE(toCopy, nullptr);
    EXPECT_EQ(toCopy->subject, "/model/backbone0/conv/_input_quantizer/QuantizeLinear");
    EXPECT_EQ(toCopy->detail, "QUANTIZE");
    EXPECT_EQ(toCopy->object, "kQDQ");
    EXPECT_EQ(toCopy->line, 21u);

    const auto* fuseInto = &log.events[0];
    for (const auto& e : log.events)
    {
        if (e.kind == OptimizerEventKind::kFuse && e.pass == "QuantizeDoubleInputNodes")
        {
            fuseInto = &e;
            break;
        }
    }
    EXPECT_EQ(fuseInto->subject, "/model/backbone1/conv/_input_quantizer/QuantizeLinear");
    EXPECT_EQ(fuseInto->object, "/model/backbone0/conv/Conv");

    const auto* concat = firstEvent(log, OptimizerEventKind::kEliminate);
    ASSERT_NE(concat, nullptr);
    const auto* copy = firstEvent(log, OptimizerEventKind::kGenerateCopy);
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(copy->subject, "/model/taskhead22/Div_1_output_0");
    EXPECT_EQ(copy->object, "/model/taskhead22/Concat_10_output_0");
    EXPECT_EQ(copy->detail, "of stomping hazard");
    const auto* retarget = firstEvent(log, OptimizerEventKind::kRetarget);
    ASSERT_NE(retarget, nullptr);
    EXPECT_EQ(retarget->subject, "/model/taskhead22/Sub_1_output_0");
    const auto* counts = firstEvent(log, OptimizerEventKind::kLayerCount);
    ASSERT_NE(counts, nullptr);
    EXPECT_EQ(counts->subject, "Original");
    EXPECT_EQ(counts->object, "755");
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kAddReformat), 1u);
}

TEST(BuildLogReader, NamesOnlyDumpAfterWarning)
{
    BuildLog log = readFixture("names-only-dump.log");
    ASSERT_TRUE(log.hasEngineBlock);
    EXPECT_EQ(log.engine.form, LayerListForm::kNamesOnly);
    ASSERT_EQ(log.engine.layers.size(), 4u);
    EXPECT_EQ(log.engine.layers[2].name, "[trainStation1]");
    EXPECT_EQ(log.engine.layers[3].name, "(Unnamed Layer* 32) [Shuffle]");
    EXPECT_TRUE(log.engine.layers[3].type.empty());
    EXPECT_EQ(log.engine.bindings, (std::vector<std::string>{"tensor-0", "tensor-15"}));
}

TEST(BuildLogReader, ReadsFromBuffer)
{
    std::string text = "[01/01/2024-00:00:00] [V] [TRT] Engine Layer Information:\n"
                       "Layer(NoOp): a, b, Tactic: 0x0000000000000000, x (Float[1]) -> y (Float[1])\n";
    BuildLog log = qdq::readBuildLogFromBuffer(text, "buffer.log");
    EXPECT_EQ(log.sourcePath, "buffer.log");
    ASSERT_EQ(log.engine.layers.size(), 1u);
    EXPECT_EQ(log.engine.layers[0].name, "a, b");
    EXPECT_TRUE(hasWarningContaining(log, "fragment"));
}

TEST(BuildLogReader, TacticNameOfAHexIdEndingInALetter)
{
    // The 8.5 timing lines of one format combination (as trex-notebooks-yolo-orin-trt852/trt.out:8305-8316): the
    // fastest tactic's id ends in a letter, and its name comes from its "Set Tactic Name" line all the same.
    const std::string prefix = "[10/31/2023-17:55:22] [V] [TRT] ";
    const std::string layer = "conv1.weight + /conv1/Conv";
    std::string text;
    for (const std::string& line : std::vector<std::string>{
             "*************** Autotuning format combination: Int8(1,1:32,1,1) -> Float(1,1:32,1,1) ***************",
             "--------------- Timing Runner: " + layer + " (CaskConvolution)",
             layer + " Set Tactic Name: sm80_xmma_fprop_implicit_gemm_tensor16x8x32 Tactic: 0x6986b0c6a136276e",
             std::string("Tactic: 0x6986b0c6a136276e Time: 100.14"),
             layer +
                 " Set Tactic Name: sm80_xmma_fprop_implicit_gemm_tile256x32_tensor16x8x32 Tactic: 0xa2f15b0a75b7dcec",
             std::string("Tactic: 0xa2f15b0a75b7dcec Time: 146.887"),
             std::string("Fastest Tactic: 0x6986b0c6a136276e Time: 100.14"),
             std::string(">>>>>>>>>>>>>>> Chose Runner Type: CaskConvolution Tactic: 0x6986b0c6a136276e")})
    {
        text += prefix + line + "\n";
    }
    BuildLog log = qdq::readBuildLogFromBuffer(text, "tactics.log");
    ASSERT_EQ(log.tactics.size(), 1u);
    EXPECT_EQ(log.tactics[0].layer, layer);
    EXPECT_EQ(log.tactics[0].tactic, "0x6986b0c6a136276e");
    EXPECT_EQ(log.tactics[0].tacticName, "sm80_xmma_fprop_implicit_gemm_tensor16x8x32");
    EXPECT_NEAR(log.tactics[0].timeMs.value_or(0.0), 100.14, 1e-9);
}

TEST(BuildLogReader, ProgressIsReported)
{
    std::string text = "&&&& RUNNING TensorRT.trtexec [TensorRT v8502] # trtexec\n";
    std::string noise = "[10/31/2023-17:55:16] [V] [TRT] Tactic: 0x00000000000003e8 Time: 0.65739\n";
    while (text.size() < (70u << 20))
    {
        text += noise;
    }
    auto path = writeFile(tempDir("build-log-progress") / "big.log", text);
    std::vector<std::uint64_t> done;
    BuildLog log = qdq::readBuildLog(path.string(),
                                     [&](std::uint64_t d, std::uint64_t total)
                                     {
                                         EXPECT_EQ(total, text.size());
                                         done.push_back(d);
                                     });
    ASSERT_GE(done.size(), 2u);
    EXPECT_EQ(done.back(), text.size());
    EXPECT_EQ(log.trtVersion, "8.5.2");
    EXPECT_EQ(log.byteCount, text.size());
}

// ------------------------------------------------------------------------------------------------------------------
// Own fixtures: broken input

TEST(BuildLogReaderBroken, EmptyFile)
{
    std::string message = errorOf(fixture("build-log/empty.log").string());
    EXPECT_NE(message.find("empty file"), std::string::npos) << message;
}

TEST(BuildLogReaderBroken, TruncatedMidLine)
{
    BuildLog log = readFixture("truncated.log");
    EXPECT_EQ(log.trtVersion, "8.5.2");
    EXPECT_FALSE(log.hasEngineBlock); // the only layer line is cut inside its tensor list
    EXPECT_EQ(log.lineCount, 3u);
    ASSERT_EQ(log.warnings.size(), 2u);
    EXPECT_EQ(log.warnings[0].where.line, 3u);
    EXPECT_NE(log.warnings[0].message.find("not understood"), std::string::npos);
    EXPECT_NE(log.warnings[1].message.find("does not end with a newline"), std::string::npos);
}

TEST(BuildLogReaderBroken, BinaryGarbage)
{
    std::mt19937 random(1234);
    std::string bytes(64 * 1024, '\0');
    for (char& c : bytes)
    {
        c = static_cast<char>(random() & 0xff);
    }
    auto path = writeFile(tempDir("build-log-binary") / "garbage.log", bytes);
    std::string message = errorOf(path.string());
    EXPECT_NE(message.find("not a text log: binary data at byte"), std::string::npos) << message;
}

TEST(BuildLogReaderBroken, JsonFileIsWrongKind)
{
    std::string message = errorOf(fixture("build-log/layer-info.json").string());
    EXPECT_NE(message.find("no log content"), std::string::npos) << message;
}

TEST(BuildLogReaderBroken, PlainTextWithoutLogContent)
{
    auto path = writeFile(tempDir("build-log-prose") / "notes.txt", "just some notes\nnothing from TensorRT\n");
    std::string message = errorOf(path.string());
    EXPECT_NE(message.find("no TensorRT build-log content"), std::string::npos) << message;
}

TEST(BuildLogReaderBroken, IsolatedInvalidUtf8IsTolerated)
{
    std::string text = "&&&& RUNNING TensorRT.trtexec [TensorRT v8502] # trtexec\n"
                       "[10/31/2023-17:53:30] [V] [TRT] Parsing node: conv\xff_1 [Conv]\n"
                       "[10/31/2023-17:53:30] [W] [TRT] a control byte \x01 is fine\n";
    text += std::string("[10/31/2023-17:53:30] [W] [TRT] NUL: ") + '\0' + "\n";
    auto path = writeFile(tempDir("build-log-utf8") / "bad.log", text);
    BuildLog log = qdq::readBuildLog(path.string());
    ASSERT_EQ(log.parsedNodes.size(), 1u);
    EXPECT_EQ(log.parsedNodes[0].opType, "Conv");
    ASSERT_EQ(log.warnings.size(), 2u);
    EXPECT_EQ(log.warnings[0].where.line, 2u);
    EXPECT_NE(log.warnings[0].message.find("invalid UTF-8"), std::string::npos);
    EXPECT_EQ(log.warnings[1].where.line, 4u);
}

TEST(BuildLogReaderBroken, TenMegabyteLine)
{
    std::string text = "&&&& RUNNING TensorRT.trtexec [TensorRT v8502] # trtexec\n[10/31/2023-17:53:30] [V] [TRT] ";
    text += std::string(10u << 20, 'x');
    text += "\n[10/31/2023-17:53:30] [I] TensorRT version: 8.5.2\n";
    auto path = writeFile(tempDir("build-log-long-line") / "long.log", text);
    BuildLog log = qdq::readBuildLog(path.string());
    EXPECT_EQ(log.lineCount, 3u);
    EXPECT_EQ(log.trtVersion, "8.5.2");

    qdq::Limits limits;
    limits.maxLineBytes = 1u << 20;
    std::string message = errorOf(path.string(), limits);
    EXPECT_NE(message.find("--max-line-mb"), std::string::npos) << message;
    EXPECT_NE(message.find("long.log:2"), std::string::npos) << message;
}

TEST(BuildLogReaderBroken, MissingFile)
{
    std::string message = errorOf((tempDir("build-log-missing") / "absent.log").string());
    EXPECT_NE(message.find("cannot open"), std::string::npos) << message;
}

// ------------------------------------------------------------------------------------------------------------------
// Real data: every verbose log and excerpt of ../shared/realdata/MANIFEST.tsv

TEST(RealDataBuildLog, TrexNotebookYoloOrinTrt852)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("trex-notebooks-yolo-orin-trt852/trt.out");
    EXPECT_EQ(log.trtVersion, "8.5.2");
    EXPECT_EQ(log.lineCount, 12933u);
    EXPECT_EQ(log.commandLine.rfind("/usr/src/tensorrt/bin/trtexec --int8 --onnx=yolo_pytorch_quantized.onnx", 0), 0u);
    ASSERT_FALSE(log.buildOptions.empty());
    EXPECT_NE(std::find(log.buildOptions.begin(), log.buildOptions.end(),
                        std::pair<std::string, std::string>{"Precision", "FP32+INT8"}),
              log.buildOptions.end());
    EXPECT_NE(std::find(log.deviceInfo.begin(), log.deviceInfo.end(),
                        std::pair<std::string, std::string>{"Selected Device", "Orin"}),
              log.deviceInfo.end());
    EXPECT_EQ(log.parsedNodes.size(), 701u);
    EXPECT_EQ(log.registeredLayers.size(), 501u);

    // QDQToCopy: 12 runs (first at line 5741), each with its QUANTIZE -> kQDQ swap.
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kRunning, "QDQToCopy"), 12u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kSwapLayerType, "QDQToCopy"), 12u);
    EXPECT_EQ(firstEvent(log, OptimizerEventKind::kRunning, "QDQToCopy")->line, 5741u);
    // HorizontalMergeQNodes: 5 duplicate-Q eliminations, the first at line 5213.
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kEliminate, "HorizontalMergeQNodes"), 5u);
    const auto* dup = firstEvent(log, OptimizerEventKind::kEliminate, "HorizontalMergeQNodes");
    EXPECT_EQ(dup->line, 5213u);
    EXPECT_EQ(dup->subject, "/backbone/layer2/layer2.0/conv1/_input_quantizer/QuantizeLinear");
    EXPECT_EQ(dup->object, "/backbone/layer2/layer2.0/downsample/downsample.0/_input_quantizer/QuantizeLinear");
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kRunning), 483u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kFuse), 258u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kQdqPhase), 8u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kAddReformat), 4u);
    EXPECT_EQ(log.tactics.size(), 177u); // Chose Runner Type lines
    // The stem's two format combinations: the DP4A tactic 0xb29abdd00304c881 at 58.8474 ms (line 8299) and the CHW32
    // tensor-core tactic 0x6986b0c6a136276e at 100.14 ms (line 8316), whose id ends in a letter: its name comes from
    // the "Set Tactic Name" line 8309 all the same.
    const qdq::TacticChoice* dp4a = nullptr;
    const qdq::TacticChoice* tensorCore = nullptr;
    for (const auto& choice : log.tactics)
    {
        dp4a = choice.line == 8299 ? &choice : dp4a;
        tensorCore = choice.line == 8316 ? &choice : tensorCore;
    }
    ASSERT_NE(dp4a, nullptr);
    ASSERT_NE(tensorCore, nullptr);
    EXPECT_EQ(dp4a->tacticName, "ampere_fp32_icudnn_int8x4_128x64_relu_medium_nn_v1");
    EXPECT_NEAR(dp4a->timeMs.value_or(0.0), 58.8474, 1e-9);
    EXPECT_EQ(tensorCore->tactic, "0x6986b0c6a136276e");
    EXPECT_EQ(tensorCore->tacticName,
              "sm80_xmma_fprop_implicit_gemm_interleaved_indexed_i8f32_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_"
              "vect_c_32_tilesize256x64x64_stage4_warpsize4x1x1_g1_tensor16x8x32");
    EXPECT_NEAR(tensorCore->timeMs.value_or(0.0), 100.14, 1e-9);

    // Engine Layer Information: 86 Layer(...) lines from line 12745.
    ASSERT_TRUE(log.hasEngineBlock);
    EXPECT_EQ(log.engine.form, LayerListForm::kLogLine);
    ASSERT_EQ(log.engine.layers.size(), 86u);
    EXPECT_EQ(log.engine.layers[0].name, "[trainStation1]");
    EXPECT_EQ(log.engine.layers[0].line, 12745u);
    const EngineLayer& q = log.engine.layers[1];
    EXPECT_EQ(q.name, "/backbone/conv1/_input_quantizer/QuantizeLinear");
    EXPECT_EQ(q.type, "Reformat");
    ASSERT_EQ(q.outputs.size(), 1u);
    EXPECT_EQ(q.outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(q.outputs[0].vectorWidth, 4);
    EXPECT_EQ(q.outputs[0].dimensions, (std::vector<std::int64_t>{1, 3, 2208, 3872}));
    EXPECT_EQ(log.engine.layers[85].name, "[trainStation3]");

    // --dumpProfile: 77 rows (line 12854 on), Total 403.8158 ms average.
    ASSERT_TRUE(log.hasProfileTable);
    EXPECT_EQ(log.profile.iterations, 11);
    EXPECT_TRUE(log.profile.hasMedian);
    ASSERT_EQ(log.profile.entries.size(), 77u);
    EXPECT_EQ(log.profile.entries[0].line, 12854u);
    EXPECT_EQ(log.profile.entries[2].name,
              "backbone.conv1.weight + /backbone/conv1/_weight_quantizer/QuantizeLinear + /backbone/conv1/Conv");
    EXPECT_DOUBLE_EQ(log.profile.entries[2].averageMs, 59.7861);
    EXPECT_EQ(log.profile.entries[73].name, "(Unnamed Layer* 718) [NMS]_1_output[DevicetoShapeHostCopy]");
    EXPECT_NEAR(totalAverage(log), 403.8158, 0.001);
    EXPECT_TRUE(log.errors.empty());
    EXPECT_TRUE(log.warningsInLog.empty());
    EXPECT_TRUE(log.warnings.empty());
}

TEST(RealDataBuildLog, CookbookMnistTrt8003Fp32)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-mnist-trt8003/result-FP32.txt");
    EXPECT_EQ(log.trtVersion, "8.0.3"); // "TensorRT version: 8003" and [TensorRT v8003]
    // 19 lines, two of them with a doubled timestamp (lines 209 and 234).
    ASSERT_EQ(log.registeredLayers.size(), 19u);
    EXPECT_EQ(log.registeredLayers[9].trtLayer, "MatMul");
    EXPECT_EQ(log.registeredLayers[9].line, 209u);
    EXPECT_EQ(log.parsedNodes.size(), 15u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kRunning), 0u); // 8.0 prints no Running: lines
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kFuse), 15u);
    EXPECT_EQ(log.tactics.size(), 14u);
    ASSERT_EQ(log.engine.layers.size(), 10u);
    const EngineLayer& conv = log.engine.layers[0];
    EXPECT_EQ(conv.line, 773u);
    EXPECT_EQ(conv.name, "Conv__25 + Relu");
    EXPECT_EQ(conv.type, "CaskConvolution");
    EXPECT_EQ(conv.tacticValue, "7144526460361122478");
    EXPECT_EQ(conv.inputs[0].name, "x:0");
    EXPECT_EQ(conv.inputs[0].dimensions, (std::vector<std::int64_t>{-2, 1, 28, 28}));
    EXPECT_EQ(conv.outputs[0].name, "Relu:0");
    EXPECT_EQ(log.engine.layers[1].type, "TiledPooling");
    EXPECT_EQ(log.engine.layers[1].tacticValue, "6226177");
}

TEST(RealDataBuildLog, CookbookMnistTrt8003Fp16)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-mnist-trt8003/result-FP16.txt");
    EXPECT_EQ(log.trtVersion, "8.0.3");
    EXPECT_EQ(log.engine.layers.size(), 10u);
    EXPECT_EQ(log.engine.layers[0].line, 1009u);
    EXPECT_EQ(log.engine.layers[1].tacticValue, "6488321");
    EXPECT_EQ(log.tactics.size(), 23u);
    EXPECT_EQ(log.commandLine.find("--fp16") != std::string::npos, true);
}

TEST(RealDataBuildLog, CookbookMnistTrt8203Fp32)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-mnist-trt8203/result-FP32.txt");
    EXPECT_EQ(log.trtVersion, "8.2.3");
    EXPECT_EQ(log.engine.layers.size(), 12u);
    EXPECT_EQ(log.engine.layers[0].line, 868u);
    EXPECT_EQ(log.registeredLayers.size(), 19u);
    // 8.2: "Running: <Pass>" without a target.
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kRunning), 25u);
    const auto* running = firstEvent(log, OptimizerEventKind::kRunning);
    ASSERT_NE(running, nullptr);
    EXPECT_TRUE(running->subject.empty());
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kFuse), 15u);
}

TEST(RealDataBuildLog, CookbookMnistTrt8401Fp32)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-mnist-trt8401/result-FP32.log");
    EXPECT_EQ(log.trtVersion, "8.4.1");
    ASSERT_EQ(log.engine.layers.size(), 12u);
    const EngineLayer& pool = log.engine.layers[1];
    EXPECT_EQ(pool.name, "MaxPool-3");
    EXPECT_EQ(pool.tacticValue, "0x0000000000630101");
    EXPECT_EQ(pool.outputs[0].name, "Reformatted Output Tensor 0 to MaxPool-3");
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kRunning), 17u);
    EXPECT_EQ(log.tactics.size(), 14u);
}

TEST(RealDataBuildLog, CookbookMnistTrt8401Fp16)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-mnist-trt8401/result-FP16.log");
    EXPECT_EQ(log.trtVersion, "8.4.1");
    ASSERT_EQ(log.engine.layers.size(), 12u);
    EXPECT_EQ(log.engine.layers[0].line, 1144u);
    EXPECT_EQ(log.engine.layers[1].outputs[0].name, "tensor-3");
    EXPECT_EQ(log.tactics.size(), 23u);
}

TEST(RealDataBuildLog, CookbookMnistTrt8600Build)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-mnist-trt8600/result-02.log");
    EXPECT_EQ(log.trtVersion, "8.6.0");
    ASSERT_EQ(log.engine.layers.size(), 15u);
    const EngineLayer& reformat = log.engine.layers[0];
    EXPECT_EQ(reformat.line, 3416u);
    EXPECT_EQ(reformat.name, "Reformatting CopyNode for Input Tensor 0 to Conv-1 + ReLU-2");
    EXPECT_EQ(reformat.outputs[0].name, "Reformatted Input Tensor 0 to Conv-1 + ReLU-2");
    EXPECT_EQ(reformat.outputs[0].precision, Precision::kFP16);
    EXPECT_EQ(reformat.outputs[0].vectorWidth, 2);
    EXPECT_EQ(log.tactics.size(), 58u);
    EXPECT_EQ(log.warningsInLog.size(), 6u);
    EXPECT_EQ(log.registeredLayers.size(), 19u);
}

TEST(RealDataBuildLog, CookbookMnistTrt8600LoadEngineWithoutEngineBlock)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-mnist-trt8600/result-03.log");
    EXPECT_EQ(log.trtVersion, "8.6.0");
    EXPECT_FALSE(log.hasEngineBlock);
    EXPECT_FALSE(log.hasProfileTable);
    EXPECT_EQ(log.warningsInLog.size(), 2u);
}

TEST(RealDataBuildLog, CookbookMnistTrt8600NamesOnlyDump)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-mnist-trt8600/result-04.log");
    ASSERT_TRUE(log.hasEngineBlock);
    EXPECT_EQ(log.engine.form, LayerListForm::kNamesOnly);
    ASSERT_EQ(log.engine.layers.size(), 15u); // lines 159-173
    EXPECT_EQ(log.engine.layers[0].line, 159u);
    EXPECT_EQ(log.engine.layers[7].name, "Transpose-7 + Reshape-7 + reshape_before_MatMul-9");
    EXPECT_EQ(log.engine.layers[14].name, "(Unnamed Layer* 32) [Shuffle]");
    EXPECT_EQ(log.engine.bindings, (std::vector<std::string>{"tensor-0", "tensor-15"}));
}

TEST(RealDataBuildLog, CookbookMnistTrt10141Build)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-mnist-trt10141/result-02.log");
    EXPECT_EQ(log.trtVersion, "10.14.1"); // [TensorRT v101401]
    ASSERT_EQ(log.engine.layers.size(), 16u);
    EXPECT_EQ(log.engine.layers[0].line, 4430u);
    EXPECT_EQ(log.engine.layers[1].name, "node_conv2d + node_relu");
    EXPECT_EQ(log.engine.layers[1].tacticValue, "0x112767cf498572ea");
    EXPECT_EQ(log.engine.layers[1].outputs[0].vectorWidth, 8);
    EXPECT_EQ(log.registeredLayers.size(), 27u);
    EXPECT_EQ(log.parsedNodes.size(), 12u);
    EXPECT_EQ(log.tactics.size(), 43u);
    EXPECT_EQ(log.warningsInLog.size(), 10u);
}

TEST(RealDataBuildLog, CookbookMnistTrt10141DumpLayerInfo)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-mnist-trt10141/result-04.log");
    EXPECT_EQ(log.trtVersion, "10.14.1");
    ASSERT_TRUE(log.hasEngineBlock);
    EXPECT_EQ(log.engine.form, LayerListForm::kDetailed);
    ASSERT_EQ(log.engine.layers.size(), 9u); // lines 150-158
    const EngineLayer& conv = log.engine.layers[0];
    EXPECT_EQ(conv.type, "CaskConvolution");
    EXPECT_EQ(conv.tacticValue, "0x5b8bf1b8028629d9");
    EXPECT_EQ(conv.weightsPrecision, Precision::kFP32);
    EXPECT_EQ(conv.inputs[0].format, "Float");
    ASSERT_EQ(conv.metadataGroups().size(), 2u);
    EXPECT_EQ(conv.metadataGroups()[0].onnxNodes, (std::vector<std::string>{"node_conv2d"}));
    EXPECT_EQ(log.engine.layers[4].name, "node_linear_myl4_0");
    EXPECT_EQ(log.engine.layers[4].type, "gemm");
    EXPECT_EQ(log.engine.bindings, (std::vector<std::string>{"x", "y", "z"}));
}

TEST(RealDataBuildLog, CookbookProfilingVerbosityTrt84PythonLogger)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-profilingverbosity-trt84/result.log");
    EXPECT_FALSE(log.trtVersion.has_value()); // the Python log prints no version
    ASSERT_EQ(log.engine.layers.size(), 11u);
    EXPECT_EQ(log.engine.layers[0].line, 574u);
    EXPECT_EQ(log.engine.layers[0].name, "(Unnamed Layer* 0) [Convolution] + (Unnamed Layer* 1) [Activation]");
    EXPECT_EQ(log.engine.layers[10].type, "LogSoftmaxTopK");
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kRunning), 12u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kSwapLayerType), 2u); // Convert layer type ... MATRIX_MULTIPLY
    EXPECT_EQ(log.tactics.size(), 13u);
}

TEST(RealDataBuildLog, CookbookProfilingVerbosityTrt1016ThreeBuilds)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-profilingverbosity-trt1016/log-main.py.log");
    EXPECT_EQ(log.trtVersion, "10.16.2"); // libnvinfer_builder_resource_sm90.so.10.16.2
    // Three builds (LAYER_NAMES_ONLY, NONE, DETAILED): the last list is kept, with a warning.
    ASSERT_TRUE(log.hasEngineBlock);
    EXPECT_EQ(log.engine.form, LayerListForm::kDetailed);
    ASSERT_EQ(log.engine.layers.size(), 26u); // lines 4211-4236
    EXPECT_EQ(log.engine.layers[0].line, 4211u);
    EXPECT_TRUE(hasWarningContaining(log, "3 different engine layer lists"));
    EXPECT_EQ(log.engine.bindings, (std::vector<std::string>{"x", "y", "z"}));
    const EngineLayer* profiled = findLayer(log, "node_conv2d + node_relu [profile 1]");
    ASSERT_NE(profiled, nullptr);
    EXPECT_EQ(profiled->baseName(), "node_conv2d + node_relu");
    EXPECT_EQ(profiled->optimizationProfile, 1);
    const EngineLayer* conv = findLayer(log, "node_conv2d + node_relu");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->tacticValue, "0xcf8ea142095f02d2");
    EXPECT_EQ(conv->metadataGroups().size(), 2u);
    EXPECT_EQ(log.engine.layers[7].type, "shape_call");
    EXPECT_EQ(log.registeredLayers.size(), 87u); // 29 per build
    EXPECT_EQ(log.tactics.size(), 42u);
    EXPECT_EQ(log.tactics[0].line, 408u);
    EXPECT_EQ(log.tactics[0].tacticName.rfind("sm80_xmma_fprop_implicit_gemm_f32f32_f32f32", 0), 0u);
}

TEST(RealDataBuildLog, CookbookEngineInspectorTrt84)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("cookbook-engineinspector-trt84/result.log");
    ASSERT_TRUE(log.hasEngineBlock);
    EXPECT_EQ(log.engine.form, LayerListForm::kDetailed);
    // The program prints the 9 layers twice (all at once, then one by one): same list, no several-builds warning.
    ASSERT_EQ(log.engine.layers.size(), 9u);
    EXPECT_FALSE(hasWarningContaining(log, "different engine layer lists"));
    EXPECT_TRUE(hasWarningContaining(log, "fragment"));
    EXPECT_EQ(log.engine.layers[2].type, "FusedConvActConvolution");
    EXPECT_EQ(log.engine.layers[0].inputs[0].format, "N/A due to dynamic shapes");
    EXPECT_EQ(log.engine.layers[0].inputs[0].precision, Precision::kUnknown);
    EXPECT_EQ(log.engine.bindings, (std::vector<std::string>{"inputT0", "(Unnamed Layer* 17) [TopK]_output_2"}));
}

TEST(RealDataBuildLog, LixMnistOrinTrt8510Best)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("lix-mnist-orin-trt8510-best/trt_build_best.log");
    EXPECT_EQ(log.trtVersion, "8.5.10");
    EXPECT_TRUE(log.implicitInt8Marker); // Setting dynamic range for Input3 to [-4,4]
    EXPECT_FALSE(log.explicitPrecisionMarker);
    ASSERT_EQ(log.engine.layers.size(), 7u);
    EXPECT_EQ(log.engine.layers[0].line, 9130u);
    EXPECT_EQ(log.engine.layers[0].type, "FusedConvActConvolution");
    EXPECT_EQ(log.engine.layers[0].name, "Convolution28 + Parameter6 + (Unnamed Layer* 4) [Shuffle] + Plus30 + ReLU32");
    ASSERT_TRUE(log.hasProfileTable);
    EXPECT_EQ(log.profile.iterations, 43345);
    ASSERT_EQ(log.profile.entries.size(), 5u);
    EXPECT_EQ(log.profile.entries[4].name, "Times212");
    EXPECT_NEAR(totalAverage(log), 0.0390, 1e-9); // Total row says 0.0391 (rounded)
    EXPECT_EQ(log.tactics.size(), 63u);
    EXPECT_EQ(log.warningsInLog.size(), 10u);
}

TEST(RealDataBuildLog, LixOrinTrt8410TruncatedBuild)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("lix-orin-trt8410-best/orin_build_from_shqi.log");
    EXPECT_EQ(log.trtVersion, "8.4.10");
    EXPECT_FALSE(log.hasEngineBlock);
    EXPECT_EQ(log.registeredLayers.size(), 16u);
    EXPECT_EQ(log.parsedNodes.size(), 14u);
    // The build ends with a Myelin assertion printed without a logger prefix (line 348).
    ASSERT_EQ(log.errors.size(), 1u);
    EXPECT_EQ(log.errors[0].line, 348u);
    EXPECT_NE(log.errors[0].text.find("Assertion"), std::string::npos);
    EXPECT_EQ(log.tactics.size(), 1u);
    EXPECT_EQ(log.tactics[0].runnerType, "Myelin");
}

TEST(RealDataBuildLog, FuzzylabsAlexnetTrt104Excerpt)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("fuzzylabs-alexnet-fp16-trt10/alexnet_fp16.build-and-profile.log.excerpt.txt");
    EXPECT_EQ(log.trtVersion, "10.4.0");
    ASSERT_TRUE(log.hasEngineBlock);
    EXPECT_EQ(log.engine.form, LayerListForm::kDetailed);
    ASSERT_EQ(log.engine.layers.size(), 3u); // "...more" elides the rest
    EXPECT_EQ(log.engine.layers[2].name, "/classifier/classifier_6/Gemm_myl9_4");
    EXPECT_EQ(log.engine.layers[2].type, "gemm");
    ASSERT_TRUE(log.hasProfileTable);
    EXPECT_EQ(log.profile.iterations, 14590);
    ASSERT_EQ(log.profile.entries.size(), 14u);
    EXPECT_EQ(log.profile.entries[11].name, "/classifier/classifier_1/Gemm_myl9_2");
    EXPECT_DOUBLE_EQ(log.profile.entries[11].averageMs, 0.2396);
    EXPECT_NEAR(totalAverage(log), 0.5241, 1e-9); // Total row: 0.5242
    EXPECT_EQ(log.tactics.size(), 3u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kFuse, "ConvReluFusion"), 5u);
    ASSERT_FALSE(log.buildOptions.empty());
    EXPECT_EQ(log.buildOptions[2], (std::pair<std::string, std::string>{"Precision", "FP32+FP16"}));
}

TEST(RealDataBuildLog, BlogYolov8QdqOrinTrt8412Excerpt)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("blogdoc-yolov8-qdq-orin-trt8412/blogdoc-yolov8-qdq-orin-trt8412.log.txt");
    EXPECT_EQ(log.trtVersion, "8.4.12");
    EXPECT_TRUE(log.explicitPrecisionMarker);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kRunning), 26u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kFuse), 11u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kSwapLayerType, "QDQToCopy"), 1u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kEliminate, "HorizontalMergeQNodes"), 1u);
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kQdqPhase), 4u);
    EXPECT_EQ(firstEvent(log, OptimizerEventKind::kMerge)->line, 98u);
    EXPECT_EQ(log.registeredLayers.size(), 2u);
    // Two lists (Engine Layer Information, then --dumpLayerInfo): the last, detailed one is kept.
    ASSERT_TRUE(log.hasEngineBlock);
    EXPECT_EQ(log.engine.form, LayerListForm::kDetailed);
    ASSERT_EQ(log.engine.layers.size(), 3u);
    const EngineLayer& q = log.engine.layers[1];
    EXPECT_EQ(q.name, "/model/backbone0/conv/_input_quantizer/QuantizeLinear");
    EXPECT_EQ(q.type, "Reformat");
    EXPECT_EQ(q.origin, "QDQ");
    EXPECT_EQ(log.engine.layers[2].weightsPrecision, Precision::kINT8);
    EXPECT_TRUE(hasWarningContaining(log, "2 different engine layer lists"));
}

TEST(RealDataBuildLog, BlogFpnMbv2Int8CalibTrt84Excerpt)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("blogdoc-fpn-mbv2-int8-calib-trt84/blogdoc-fpn-mbv2-int8-calib-trt84.log.txt");
    EXPECT_EQ(log.commandLine.rfind("trtexec --onnx=fpn_dilate16_conv128_fr_fv_20221215.onnx", 0), 0u);
    ASSERT_EQ(log.engine.layers.size(), 13u); // lines 17-29; the pasted profile JSON is not a log
    EXPECT_EQ(log.engine.layers[2].type, "CudaDepthwiseConvolution");
    EXPECT_EQ(log.engine.layers[2].tacticValue, "0xfffffffffffffffd");
    const EngineLayer* add = findLayer(log, "Conv_26 + Add_27");
    ASSERT_NE(add, nullptr);
    ASSERT_EQ(add->inputs.size(), 2u);
    EXPECT_EQ(add->inputs[1].name, "675");
    EXPECT_EQ(log.engine.layers[12].outputs[0].precision, Precision::kFP32);
    EXPECT_EQ(log.engine.layers[12].inputs[0].precision, Precision::kINT8);
    EXPECT_FALSE(log.hasProfileTable);
    EXPECT_TRUE(hasWarningContaining(log, "fragment"));
}

TEST(RealDataBuildLog, IssueTrt2527QdqTrt851Excerpt)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("issue-trt-2527-qdq-trt851/issue-trt-2527-qdq-trt851.log.txt");
    // 7 Layer(...) lines; the last is cut off in the paste (line 8).
    ASSERT_EQ(log.engine.layers.size(), 6u);
    EXPECT_EQ(log.engine.layers[4].name,
              "0.deblocks.0.0.our_module.weight + QuantizeLinear_51 + Conv_55 + PWN(Clip_56) + DequantizeLinear_62 + "
              "QuantizeLinear_378_clone_0");
    EXPECT_EQ(log.engine.layers[0].outputs[0].vectorWidth, 32);
    ASSERT_FALSE(log.warnings.empty());
    EXPECT_EQ(log.warnings[0].where.line, 8u);
    EXPECT_TRUE(hasWarningContaining(log, "fragment"));
}

TEST(RealDataBuildLog, IssueTrt2975QdqOptimizerCustomLogger)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("issue-trt-2975-qdq-optimizer-trt851/issue-trt-2975-qdq-optimizer-trt851.log.txt");
    EXPECT_EQ(log.trtVersion, "8.5.1");
    EXPECT_EQ(countEvents(log, OptimizerEventKind::kQdqPhase), 5u);
    const auto* running = firstEvent(log, OptimizerEventKind::kRunning);
    ASSERT_NE(running, nullptr);
    EXPECT_EQ(running->pass, "ConstQDQInitializersFusion");
    EXPECT_EQ(running->subject, "(Unnamed Layer* 1) [Quantize]");
    EXPECT_EQ(running->line, 12u);
    EXPECT_EQ(log.warningsInLog.size(), 2u);
    EXPECT_FALSE(log.hasEngineBlock);
}

TEST(RealDataBuildLog, IssueTrt3385QdqDwconvTrt852Excerpt)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("issue-trt-3385-qdq-dwconv-trt852/issue-trt-3385-qdq-dwconv-trt852.log.txt");
    ASSERT_EQ(log.tactics.size(), 1u);
    EXPECT_EQ(log.tactics[0].layer, "node_of_input.q");
    EXPECT_EQ(log.tactics[0].runnerType, "Reformat");
    EXPECT_EQ(log.tactics[0].tactic, "0x00000000000003e8");
    EXPECT_DOUBLE_EQ(log.tactics[0].timeMs.value_or(0), 0.65739);
    EXPECT_EQ(log.tactics[0].line, 12u);
    EXPECT_FALSE(log.hasEngineBlock);
    EXPECT_TRUE(hasWarningContaining(log, "fragment"));
}

TEST(RealDataBuildLog, IssueTrt1423QatProfileTrt80Excerpt)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("issue-trt-1423-qat-profile-trt80/issue-trt-1423-qat-profile-trt80.log.txt");
    ASSERT_TRUE(log.hasProfileTable);
    EXPECT_EQ(log.profile.iterations, 137);
    EXPECT_FALSE(log.profile.hasMedian);
    ASSERT_EQ(log.profile.entries.size(), 9u); // the 10th row ("Div_7", line 12) is cut off
    EXPECT_EQ(log.profile.entries[2].name, "Reformatting CopyNode for Output Tensor 0 to Conv_0");
    EXPECT_DOUBLE_EQ(log.profile.entries[6].averageMs, 0.9280);
    EXPECT_NEAR(totalAverage(log), 3.7803, 1e-9);
    EXPECT_TRUE(hasWarningContaining(log, "profile table row not understood"));
}

TEST(RealDataBuildLog, IssueTrt1627OneErrorLine)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("issue-trt-1627-qdq-scale-node-trt82/issue-trt-1627-qdq-scale-node-trt82.log.txt");
    EXPECT_EQ(log.lineCount, 1u);
    ASSERT_EQ(log.errors.size(), 1u);
    EXPECT_NE(log.errors[0].text.find("conv2d_17.w_0 + QuantizeLinear_37_quantize_scale_node + Conv_16"),
              std::string::npos);
    EXPECT_TRUE(hasWarningContaining(log, "fragment"));
}

TEST(RealDataBuildLog, IssueTrt4020LayerInfoJsonFragmentsSalvaged)
{
    REQUIRE_SHARED();
    BuildLog log = readReal("issue-trt-4020-resnet18-int8-sparse-layerinfo-trt10/"
                            "issue-trt-4020-resnet18-int8-sparse-layerinfo-trt10.log.txt");
    EXPECT_EQ(log.commandLine.rfind("trtexec --onnx=resnet18-v1-7.onnx --fp16 --int8 --sparsity=force", 0), 0u);
    ASSERT_TRUE(log.hasEngineBlock);
    ASSERT_EQ(log.engine.layers.size(), 3u); // "Name" lines 4, 26 and 60 followed by "LayerType"
    EXPECT_EQ(log.engine.layers[0].type, "Reformat");
    EXPECT_EQ(log.engine.layers[0].line, 4u);
    EXPECT_EQ(log.engine.layers[1].name,
              "resnetv15_conv0_fwd + resnetv15_batchnorm0_fwd + resnetv15_relu0_fwd + resnetv15_pool0_fwd");
    EXPECT_EQ(log.engine.layers[1].type, "CaskConvActPool");
    EXPECT_EQ(log.engine.layers[2].name, "resnetv15_stage3_conv1_fwd + resnetv15_stage3_batchnorm1_fwd");
    EXPECT_EQ(log.engine.layers[2].type, "CaskConvolution");
    EXPECT_TRUE(hasWarningContaining(log, "fragment of layer-info JSON"));
}

// A TensorRT 10.16 build that passed prints tactic-skip lines at error severity while it times tactics (the line
// format of NVIDIA/Model-Optimizer#118 and NVIDIA/TensorRT#4028): they are kept apart from the errors.
TEST(BuildLogReader, TacticSkipsAreNotErrorsAndAPassedBuildSaysSo)
{
    const BuildLog passed = readFixture("trt10-tactic-skips-passed.log");
    EXPECT_TRUE(passed.errors.empty());
    ASSERT_EQ(passed.tacticSkips.size(), 3u);
    EXPECT_EQ(passed.tacticSkips[0].line, 7u);
    EXPECT_EQ(passed.tacticSkips[2].line, 9u);
    EXPECT_EQ(passed.passedLine, 10u); // "Engine built in", before "&&&& PASSED"
    EXPECT_FALSE(passed.hasEngineBlock);

    // Near-identical: the same skips, then an out-of-memory error and "&&&& FAILED".
    const BuildLog failed = readFixture("trt10-tactic-skips-failed.log");
    EXPECT_EQ(failed.tacticSkips.size(), 3u);
    ASSERT_EQ(failed.errors.size(), 1u);
    EXPECT_EQ(failed.errors[0].line, 10u);
    EXPECT_EQ(failed.passedLine, 0u);
}

// Rows of a --dumpProfile table pasted without its title and header, as bug reports quote them: 10.x rows bare (the
// name last, with the median) and 8.0 rows behind trtexec's prefix (the name first, no median).
TEST(BuildLogReader, ProfileRowsWithoutTheirHeaderAreReadAsTheProfile)
{
    EXPECT_EQ(detectInputKind(fixture("build-log/profile-rows-pasted.log").string()), InputKind::kBuildLog);
    const BuildLog pasted = readFixture("profile-rows-pasted.log");
    ASSERT_TRUE(pasted.hasProfileTable);
    ASSERT_EQ(pasted.profile.entries.size(), 3u); // "Total" is not a layer
    EXPECT_EQ(pasted.profile.entries[1].name, "node_conv2d + node_relu");
    EXPECT_DOUBLE_EQ(pasted.profile.entries[1].timeMs, 355.08);
    EXPECT_DOUBLE_EQ(pasted.profile.entries[1].averageMs, 0.0243);
    EXPECT_DOUBLE_EQ(pasted.profile.entries[1].medianMs.value_or(0), 0.0246);
    EXPECT_DOUBLE_EQ(pasted.profile.entries[1].percentage.value_or(0), 4.6);
    EXPECT_EQ(pasted.profile.entries[2].line, 3u);
    EXPECT_TRUE(
        std::any_of(pasted.warnings.begin(), pasted.warnings.end(),
                    [](const ReaderWarning& warning)
                    { return warning.message.find("without the table's title and header") != std::string::npos; }));

    const BuildLog nameFirst = readFixture("profile-rows-name-first.log");
    ASSERT_EQ(nameFirst.profile.entries.size(), 3u);
    EXPECT_EQ(nameFirst.profile.entries[0].name, "Reformatting CopyNode for Input Tensor 0 to Conv_0");
    EXPECT_DOUBLE_EQ(nameFirst.profile.entries[1].averageMs, 0.3591);
    EXPECT_FALSE(nameFirst.profile.entries[1].medianMs.has_value());
    EXPECT_DOUBLE_EQ(nameFirst.profile.entries[1].percentage.value_or(0), 5.6);
}

// Near-identical: a log with its own table keeps it, and numbers that cannot be a profile row (an average above the
// total, a percent above 100) are not taken for one.
TEST(BuildLogReader, NumbersThatAreNoProfileRowsStayOut)
{
    const BuildLog withTable = readFixture("profile-trt80.log");
    const std::size_t rows = withTable.profile.entries.size();
    std::string text = readFile(fixture("build-log/profile-trt80.log"));
    text += "[07/31/2021-01:54:25] [I] 1 3 224 input dimensions\n[07/31/2021-01:54:25] [I] 5.0 1.0 250 not a row\n";
    const auto path = writeFile(tempDir("profile-rows") / "extra.log", text);
    const BuildLog extra = readBuildLog(path.string());
    EXPECT_EQ(extra.profile.entries.size(), rows);

    const auto stray =
        writeFile(tempDir("profile-rows") / "stray.log", "[07/31/2021-01:54:25] [I] 1 3 224 input dimensions\n"
                                                         "[07/31/2021-01:54:25] [I] 5.0 1.0 250 not a row\n");
    EXPECT_FALSE(readBuildLog(stray.string()).hasProfileTable);
}
