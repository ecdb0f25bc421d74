// Strong typing in the simulator and the rules: under strong typing each tensor keeps the graph's type (an FP32 model
// runs FP32, an FP16 one FP16, a Cast converts), fp32-island says which part of the graph is FP32, and no finding
// advises a precision flag the build does not have (TensorRT 11 removed --fp16/--int8/--best/--bf16; a strongly typed
// build ignores them). Sources: TensorRT "Precision Control" page (Strongly Typed Networks) and "Migrating from
// TensorRT 10.x to 11.x"; ../shared/docs/tensorrt-10-11.md section 1.
#include "graph_builder.h"
#include "qdq/analysis.h"
#include "qdq/diagnostics.h"
#include "qdq/predict.h"
#include "qdq/readers.h"
#include "test_support.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>

using namespace qdq;
using namespace qdq::test;

namespace
{

const char* kInt8 = "Thirty-two wide channel vectorized row major Int8 format";
const char* kFp32 = "Row major linear FP32";
const char* kFp16 = "Channel major FP16 format where channel % 8 == 0";

constexpr long kFloat16 = 10; // ONNX TensorProto.FLOAT16
constexpr long kFloat = 1;    // ONNX TensorProto.FLOAT

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos || flowed(text).find(part) != std::string::npos;
}

//! The weak-typing precision flags (trtexec options and builder flags) a text names. kINT8 alone is not one of them:
//! DataType::kINT8 (a plugin's I/O type) stays in TensorRT 11.
std::vector<std::string> precisionFlagsIn(const std::string& text)
{
    std::vector<std::string> found;
    for (const char* flag :
         {"--fp16", "--int8", "--best", "--bf16", "--fp8", "--int4", "--fp4", "BuilderFlag", "kFP16"})
    {
        if (contains(text, flag))
        {
            found.emplace_back(flag);
        }
    }
    return found;
}

//! Flags no TensorRT 8.x-10.x weakly typed build is ever advised by qdq-doctor: which of these versions have them is
//! not settled by a source here, so advice never names them.
std::vector<std::string> newerTypeFlagsIn(const std::string& text)
{
    std::vector<std::string> found;
    for (const char* flag : {"--bf16", "--fp8", "--int4", "--fp4", "BuilderFlag::kBF16", "BuilderFlag::kFP8"})
    {
        if (contains(text, flag))
        {
            found.emplace_back(flag);
        }
    }
    return found;
}

//! Every text of a report that advises: each finding's message and fix, each root cause's title and basis.
std::vector<std::string> adviceTexts(const Report& report)
{
    std::vector<std::string> texts;
    for (const auto& finding : report.findings)
    {
        texts.push_back("[" + finding.rule + "] message: " + finding.message);
        texts.push_back("[" + finding.rule + "] fix: " + finding.fix);
    }
    for (const auto& cause : report.causes)
    {
        texts.push_back("[cause] " + cause.title + ": " + cause.basis);
    }
    return texts;
}

//! diagnose with a build-mode request, as `diagnose --trt-version ... / --strongly-typed` does.
Report diagnoseIn(const BuildModeRequest& request, const std::optional<OnnxGraph>& graph,
                  const std::optional<EnginePlan>& plan = std::nullopt,
                  const std::optional<Profile>& profile = std::nullopt)
{
    AnalysisOptions options;
    options.buildMode = request;
    return runDiagnose(graph, plan, profile, options);
}

const BuildModeRequest kEleven{"11", std::nullopt, ""};
const BuildModeRequest kNothingSaid{};

SimulationOptions modeOf(const BuildModeRequest& request)
{
    return resolveBuildMode(Inputs{}, request);
}

//! IEEE half bits of a float in the normal FP16 range (the test models' weights and scales), or of 0.
std::uint16_t halfBits(float value)
{
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    if ((bits & 0x7fffffffu) == 0)
    {
        return sign;
    }
    const int exponent = static_cast<int>((bits >> 23) & 0xffu) - 127 + 15;
    const auto mantissa = static_cast<std::uint16_t>((bits >> 13) & 0x3ffu);
    return static_cast<std::uint16_t>(sign | (static_cast<std::uint16_t>(exponent) << 10) | mantissa);
}

//! The model with its FLOAT initializers (weights and Q/DQ scales) stored as FLOAT16, as an FP16 conversion writes
//! them; a Resize's `scales` input stays FLOAT (ONNX requires it).
OnnxGraph withFp16Initializers(const GraphBuilder& g)
{
    onnx::ModelProto model;
    EXPECT_TRUE(model.ParseFromString(g.serialize()));
    for (auto& tensor : *model.mutable_graph()->mutable_initializer())
    {
        if (tensor.data_type() != onnx::TensorProto::FLOAT || contains(tensor.name(), "scales"))
        {
            continue;
        }
        std::vector<float> values(tensor.float_data().begin(), tensor.float_data().end());
        if (values.empty() && !tensor.raw_data().empty())
        {
            values.resize(tensor.raw_data().size() / sizeof(float));
            std::memcpy(values.data(), tensor.raw_data().data(), values.size() * sizeof(float));
        }
        std::string raw;
        for (float value : values)
        {
            const std::uint16_t half = halfBits(value);
            raw.push_back(static_cast<char>(half & 0xffu));
            raw.push_back(static_cast<char>(half >> 8));
        }
        tensor.clear_float_data();
        tensor.set_raw_data(raw);
        tensor.set_data_type(onnx::TensorProto::FLOAT16);
    }
    return readOnnxFromBuffer(model.SerializeAsString(), "fp16.onnx");
}

//! in -> Q/DQ -> conv -> Resize (a float layer: no conv epilogue takes it) -> output. fp16: the same model converted
//! to FP16 as an FP16 conversion that keeps the network I/O types writes it: FP16 weights and scales, a Cast to FP16
//! after the input and one back to FP32 before the output.
OnnxGraph convThenResize(bool fp16)
{
    GraphBuilder g;
    std::string x = g.input("images", {1, 3, 16, 16});
    if (fp16)
    {
        x = g.node("Cast", "/to_half/Cast", {x});
        g.intAttribute("/to_half/Cast", "to", kFloat16);
    }
    std::string c = g.node("Conv", "/conv/Conv", {g.qdq("/in_q", x), g.quantizedWeight("conv", 8, 3)});
    std::string s = g.node("Resize", "/head/Resize", {c, "", g.weight("/head/scales", {4}, 2.0f)});
    if (fp16)
    {
        s = g.node("Cast", "/to_float/Cast", {s});
        g.intAttribute("/to_float/Cast", "to", kFloat);
    }
    g.output(s);
    return fp16 ? withFp16Initializers(g) : g.build();
}

//! A Q/DQ engine whose float layers after the INT8 conv run in floatFormat.
EnginePlan islandEngine(const char* floatFormat)
{
    std::vector<EngineLayer> layers;
    layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"images", kFp32}}, {{"t0", kInt8}}, "QDQ"));
    layers.push_back(layer("w + QuantizeLinear_5 + Conv_6", "CaskConvolution", {{"t0", kInt8}}, {{"c", floatFormat}}));
    layers.push_back(layer("Resize_8", "Resize", {{"c", floatFormat}}, {{"r", floatFormat}}));
    layers.push_back(layer("PWN(Sigmoid_9)", "PointWiseV2", {{"r", floatFormat}}, {{"out", floatFormat}}));
    return planOf(std::move(layers), {"images", "out"});
}

//! An engine whose FP16 I/O is converted to and from the FP32 kernels next to it.
EnginePlan fp16IoEngine()
{
    std::vector<EngineLayer> layers;
    layers.push_back(layer("Reformatting CopyNode for Input Tensor 0 to QuantizeLinear_2", "Reformat",
                           {{"images", kFp16}}, {{"Reformatted Input Tensor 0 to QuantizeLinear_2", kFp32}},
                           "REFORMAT"));
    layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"Reformatted Input Tensor 0 to QuantizeLinear_2", kFp32}},
                           {{"t0", kInt8}}, "QDQ"));
    layers.push_back(layer("w + QuantizeLinear_5 + Conv_6", "CaskConvolution", {{"t0", kInt8}}, {{"y", kFp32}}));
    layers.push_back(layer("Reformatting CopyNode for Output Tensor 0 to w + QuantizeLinear_5 + Conv_6", "Reformat",
                           {{"y", kFp32}}, {{"out", kFp16}}, "REFORMAT"));
    return planOf(std::move(layers), {"images", "out"});
}

} // namespace

// ---- the simulator ------------------------------------------------------------------------------------------------

TEST(StrongTypingSimulator, Fp32ModelRunsItsFloatPartInFp32)
{
    const OnnxGraph graph = convThenResize(false);
    const Prediction prediction = predictEngine(graph, modeOf(kEleven));
    const PredictedLayer* head = layerWith(prediction, "/head/Resize");
    ASSERT_NE(head, nullptr);
    EXPECT_EQ(head->inputPrecision, "FP32");
    EXPECT_EQ(head->outputPrecision, "FP32");
    const PredictedLayer* conv = layerWith(prediction, "/conv/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->outputPrecision, "FP32");
    // No precision chosen for the user: no I/O reformat to FP16 either.
    for (const auto& layer : prediction.layers)
    {
        EXPECT_NE(layer.outputPrecision, "FP16") << layer.name;
    }
}

TEST(StrongTypingSimulator, Fp16ModelRunsFp16AndItsCastsConvert)
{
    const OnnxGraph graph = convThenResize(true);
    const Prediction prediction = predictEngine(graph, modeOf(kEleven));
    const PredictedLayer* head = layerWith(prediction, "/head/Resize");
    ASSERT_NE(head, nullptr);
    EXPECT_EQ(head->inputPrecision, "FP16");
    EXPECT_EQ(head->outputPrecision, "FP16");
    const PredictedLayer* toHalf = layerWith(prediction, "/to_half/Cast");
    ASSERT_NE(toHalf, nullptr);
    EXPECT_EQ(toHalf->inputPrecision, "FP32");
    EXPECT_EQ(toHalf->outputPrecision, "FP16");
    EXPECT_TRUE(contains(toHalf->guess, "Cast")) << toHalf->guess; // where TensorRT converts is a guess
    const PredictedLayer* toFloat = layerWith(prediction, "/to_float/Cast");
    ASSERT_NE(toFloat, nullptr);
    EXPECT_EQ(toFloat->inputPrecision, "FP16");
    EXPECT_EQ(toFloat->outputPrecision, "FP32");
    // The quantized conv keeps INT8 in and writes the graph's FP16 (its output tensor's type: FP16 weights and
    // scales make its DQ inputs FP16).
    const PredictedLayer* conv = layerWith(prediction, "/conv/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->inputPrecision, "INT8");
    EXPECT_EQ(conv->outputPrecision, "FP16");
}

TEST(StrongTypingSimulator, WeakTypingStaysAsBefore)
{
    // --int8 --fp16 (the assumed mode): the float head runs FP16 whatever the graph says, with or without the Casts.
    for (bool fp16 : {false, true})
    {
        const OnnxGraph graph = convThenResize(fp16);
        const Prediction prediction = predictEngine(graph, modeOf(kNothingSaid));
        const PredictedLayer* head = layerWith(prediction, "/head/Resize");
        ASSERT_NE(head, nullptr);
        EXPECT_EQ(head->outputPrecision, "FP16") << fp16;
    }
}

TEST(StrongTypingSimulator, TensorTypesFollowTheGraph)
{
    // Cast: its `to`; other ops: their data input's. x -> Cast(FP16) -> Relu -> Cast(FP32) -> out.
    GraphBuilder g;
    std::string x = g.input("x", {1, 8});
    std::string half = g.node("Cast", "/c/Cast", {x});
    g.intAttribute("/c/Cast", "to", kFloat16);
    std::string relu = g.node("Relu", "/r/Relu", {half});
    std::string back = g.node("Cast", "/b/Cast", {relu});
    g.intAttribute("/b/Cast", "to", kFloat);
    g.output(back, {1, 8});
    const OnnxGraph graph = g.build();
    const Prediction strong = predictEngine(graph, modeOf(kEleven));
    const PredictedLayer* reluLayer = layerWith(strong, "/r/Relu");
    ASSERT_NE(reluLayer, nullptr);
    EXPECT_EQ(reluLayer->inputPrecision, "FP16");
    EXPECT_EQ(reluLayer->outputPrecision, "FP16");
    // --strongly-typed on 10.x: the same.
    const Prediction ten = predictEngine(graph, modeOf(BuildModeRequest{"10.16", Typing::kStrong, ""}));
    ASSERT_NE(layerWith(ten, "/r/Relu"), nullptr);
    EXPECT_EQ(layerWith(ten, "/r/Relu")->outputPrecision, "FP16");
    // Weakly typed without --fp16 (an FP32 build): FP32, as before, whatever the graph says.
    SimulationOptions fp32Build = modeOf(kNothingSaid);
    fp32Build.fp16 = false;
    const Prediction weak = predictEngine(graph, fp32Build);
    ASSERT_NE(layerWith(weak, "/r/Relu"), nullptr);
    EXPECT_EQ(layerWith(weak, "/r/Relu")->outputPrecision, "FP32");
}

// ---- the build mode: --trt-version 11 and a log without a version ---------------------------------------------------

TEST(StrongTypingBuildMode, ElevenContradictsALogWhoseCommandLineNamesAPrecisionFlag)
{
    // TensorRT 11 has no --fp16/--int8: a log that names them is an older, weakly typed build.
    Inputs weak;
    weak.buildLog =
        readBuildLogFromBuffer("&&&& RUNNING TensorRT.trtexec # trtexec --onnx=m.onnx --int8 --fp16\n", "weak.log");
    EXPECT_THROW(resolveBuildMode(weak, kEleven), InputError);
    // The same log without them: --stronglyTyped is a no-op in 11, so its absence says nothing; strongly typed.
    Inputs plain;
    plain.buildLog = readBuildLogFromBuffer("&&&& RUNNING TensorRT.trtexec # trtexec --onnx=m.onnx\n", "plain.log");
    const SimulationOptions mode = resolveBuildMode(plain, kEleven);
    EXPECT_TRUE(mode.stronglyTyped());
    EXPECT_FALSE(mode.precisionFlagsApply());
}

// ---- fp32-island under strong typing --------------------------------------------------------------------------------

TEST(StrongTypingFp32Island, Fp32ModelOnElevenSaysThisPartOfTheGraphIsFp32)
{
    const Report report = diagnoseIn(kEleven, convThenResize(false));
    const auto findings = findingsOf(report, "fp32-island");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kWarning); // strongly typed: decided, not likely
    EXPECT_FALSE(findings[0].likely);
    EXPECT_TRUE(contains(findings[0].message, "run in FP32")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].message, "strongly typed")) << findings[0].message;
    EXPECT_TRUE(contains(findings[0].message, "Cost: 1 FP32 layer(s) and 1 FP32 output(s) of the predicted engine"))
        << findings[0].message;
    EXPECT_TRUE(contains(findings[0].message, "INT8 layer(s) write their float output in FP32")) << findings[0].message;
    EXPECT_TRUE(std::find(findings[0].onnxNodes.begin(), findings[0].onnxNodes.end(), "/head/Resize") !=
                findings[0].onnxNodes.end());
    EXPECT_TRUE(contains(findings[0].fix, "this part of the graph is FP32")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "--autocast fp16")) << findings[0].fix;
    EXPECT_TRUE(precisionFlagsIn(findings[0].fix).empty()) << findings[0].fix;
    EXPECT_TRUE(precisionFlagsIn(findings[0].message).empty()) << findings[0].message;
}

TEST(StrongTypingFp32Island, Fp16ModelOnElevenIsSilent)
{
    EXPECT_TRUE(findingsOf(diagnoseIn(kEleven, convThenResize(true)), "fp32-island").empty());
}

TEST(StrongTypingFp32Island, AssumedWeakTypingNamesTheFlagAndTheAssumption)
{
    const auto findings = findingsOf(diagnoseIn(kNothingSaid, convThenResize(false)), "fp32-island");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(contains(findings[0].fix, "--fp16")) << findings[0].fix;
    EXPECT_TRUE(contains(findings[0].fix, "assumed weakly typed")) << findings[0].fix;
    // What holds under the other mode is said too: the version is unknown, it may be strongly typed.
    EXPECT_TRUE(contains(findings[0].fix, "--autocast fp16")) << findings[0].fix;
}

TEST(StrongTypingFp32Island, StronglyTypedEngineCostsTheProfileTimeOfItsFp32Layers)
{
    const EnginePlan plan = islandEngine(kFp32);
    const Report report =
        diagnoseIn(BuildModeRequest{"10.16", Typing::kStrong, ""}, std::nullopt, plan, profileFor(plan, 0.25));
    const auto findings = findingsOf(report, "fp32-island");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kWarning);
    EXPECT_NEAR(findings[0].costMs.value_or(0.0), 0.5, 1e-9); // Resize_8 and PWN(Sigmoid_9), 0.25 ms each
    EXPECT_TRUE(contains(findings[0].message, "strongly typed engine")) << findings[0].message;
    EXPECT_TRUE(precisionFlagsIn(findings[0].fix).empty()) << findings[0].fix;
}

TEST(StrongTypingFp32Island, StronglyTypedEngineWithFp16FloatLayersIsSilent)
{
    const EnginePlan plan = islandEngine(kFp16);
    const Report report =
        diagnoseIn(BuildModeRequest{"10.16", Typing::kStrong, ""}, std::nullopt, plan, profileFor(plan, 0.25));
    EXPECT_TRUE(findingsOf(report, "fp32-island").empty());
}

// ---- advice per mode ----------------------------------------------------------------------------------------------

TEST(StrongTypingAdvice, IoReformatNamesFp16OnlyWhereTheFlagExists)
{
    const EnginePlan plan = fp16IoEngine();
    const auto strong = findingsOf(diagnoseIn(kEleven, std::nullopt, plan, profileFor(plan, 0.01)), "io-reformat");
    ASSERT_FALSE(strong.empty());
    for (const auto& finding : strong)
    {
        EXPECT_TRUE(precisionFlagsIn(finding.fix).empty()) << finding.fix;
    }
    const auto weak = findingsOf(diagnoseIn(kNothingSaid, std::nullopt, plan, profileFor(plan, 0.01)), "io-reformat");
    ASSERT_FALSE(weak.empty());
    const bool namesFlag = std::any_of(weak.begin(), weak.end(),
                                       [](const Finding& finding)
                                       { return contains(finding.fix, "--fp16") && contains(finding.fix, "assumed"); });
    EXPECT_TRUE(namesFlag);
}

TEST(StrongTypingAdvice, NoFindingOnAnyBuiltModelAdvisesAFlagUnderStrongTyping)
{
    for (bool fp16 : {false, true})
    {
        for (const BuildModeRequest& request : {kEleven, BuildModeRequest{"", Typing::kStrong, ""}})
        {
            for (const auto& text : adviceTexts(diagnoseIn(request, convThenResize(fp16))))
            {
                EXPECT_TRUE(precisionFlagsIn(text).empty()) << text;
            }
        }
    }
}

// ---- real data ----------------------------------------------------------------------------------------------------

namespace
{

//! Each realdata folder's inputs: the whole folder, or, where it holds two files of one kind, each file alone.
std::vector<std::pair<std::string, Inputs>> realdataInputs()
{
    std::vector<std::pair<std::string, Inputs>> all;
    std::vector<std::string> folders;
    for (const ManifestEntry& entry : manifestEntries())
    {
        if (std::find(folders.begin(), folders.end(), entry.folder) == folders.end())
        {
            folders.push_back(entry.folder);
        }
    }
    for (const auto& folder : folders)
    {
        try
        {
            all.emplace_back(folder, loadFiles({realdata(folder)}));
            continue;
        }
        catch (const InputError&)
        {
        }
        for (const ManifestEntry& entry : manifestEntries())
        {
            if (entry.folder != folder || entry.kind == "metadata-json" || entry.kind == "timing-json")
            {
                continue;
            }
            try
            {
                all.emplace_back(entry.path(), loadFiles({realdata(entry.path())}));
            }
            catch (const InputError&)
            {
                // a file no analysis reads alone (the folder's reader notes say why)
            }
        }
    }
    return all;
}

} // namespace

TEST(RealDataStrongTyping, NoFindingAdvisesAFlagTheFoldersBuildLacks)
{
    REQUIRE_SHARED();
    const auto all = realdataInputs();
    ASSERT_GE(all.size(), 30u);
    std::size_t strongOrEleven = 0;
    for (const auto& [what, inputs] : all)
    {
        const Report report = diagnose(inputs);
        const SimulationOptions& mode = report.buildMode;
        strongOrEleven += mode.precisionFlagsApply() ? 0 : 1;
        for (const auto& text : adviceTexts(report))
        {
            const auto flags = mode.precisionFlagsApply() ? newerTypeFlagsIn(text) : precisionFlagsIn(text);
            EXPECT_TRUE(flags.empty()) << what << " (" << describeBuildMode(mode) << "): " << text;
        }
    }
    std::cout << "[ realdata ] " << all.size() << " inputs diagnosed, " << strongOrEleven
              << " of them strongly typed by their own files\n";
}

TEST(RealDataStrongTyping, UnderElevenOrStrongTypingNoFindingAdvisesAnyPrecisionFlag)
{
    REQUIRE_SHARED();
    const auto all = realdataInputs();
    ASSERT_GE(all.size(), 30u);
    for (const auto& [what, inputs] : all)
    {
        // --trt-version 11 where the folder's files tell no other version or typing; otherwise strong typing set
        // directly on the mode the files tell (what is checked is the rules' wording under strong typing).
        SimulationOptions mode = simulationOptionsFor(inputs);
        try
        {
            mode = resolveBuildMode(inputs, kEleven);
        }
        catch (const InputError&)
        {
            mode.typing = Typing::kStrong;
            mode.typingAssumed = false;
            mode.typingSource = "strong typing set by the test";
            mode.fp16 = false;
        }
        AnalysisOptions options;
        options.simulation = mode;
        const Report report = diagnose(inputs, options);
        ASSERT_TRUE(report.buildMode.stronglyTyped()) << what;
        for (const auto& text : adviceTexts(report))
        {
            EXPECT_TRUE(precisionFlagsIn(text).empty()) << what << ": " << text;
        }
    }
}

TEST(RealDataStrongTyping, ResNet18QatConvsOnElevenRunsItsUnquantizedLayersFp32)
{
    REQUIRE_SHARED();
    const std::string model = sharedModel("resnet18-qat-convs.onnx").string();
    const auto result = runCli({"diagnose", "--trt-version", "11", "--format", "json", model});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    const auto text = runCli({"diagnose", "--trt-version", "11", model});
    ASSERT_EQ(text.exitStatus, 0) << text.err;
    EXPECT_TRUE(contains(text.out, "fp32-island")) << text.out;
    EXPECT_TRUE(contains(text.out, "run in FP32")) << text.out;
    EXPECT_TRUE(contains(text.out, "this part of the graph is FP32")) << text.out;
    EXPECT_TRUE(precisionFlagsIn(text.out).empty()) << text.out;
    // Its near twin: the same command without a version names --fp16 and says it assumed weak typing.
    const auto assumed = runCli({"diagnose", model});
    EXPECT_TRUE(contains(assumed.out, "--fp16")) << assumed.out;
    EXPECT_TRUE(contains(assumed.out, "assumed weakly typed")) << assumed.out;
}

TEST(RealDataStrongTyping, SharedModelsOnElevenAdviseNoPrecisionFlag)
{
    REQUIRE_SHARED();
    for (const char* name : {"resnet18-qat-convs.onnx", "resnet18-qat-residual.onnx", "resnet50-qat-convs.onnx",
                             "yolov8lite-qat-convs.onnx", "unet-convtranspose-qat.onnx", "deit-tiny-ort-qdq.onnx",
                             "resnet18-ort-qdq.onnx", "resnet18-fp32.onnx"})
    {
        Inputs inputs = loadFiles({sharedModel(name)});
        AnalysisOptions options;
        options.buildMode = kEleven;
        const Report report = diagnose(inputs, options);
        for (const auto& text : adviceTexts(report))
        {
            EXPECT_TRUE(precisionFlagsIn(text).empty()) << name << ": " << text;
        }
    }
}
