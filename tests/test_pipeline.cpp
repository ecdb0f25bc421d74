// loadAndDiagnose: reading and diagnosing as one pipeline on two threads must give the report that loadInputs then
// diagnose give, stream its JSON in two parts that make up the whole, and fail on bad input as loadInputs does.
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

std::string sample(const std::string& relative)
{
    return (std::filesystem::path(QDQ_SOURCE_DIR) / "samples" / relative).string();
}

std::vector<std::string> filesIn(const std::filesystem::path& dir)
{
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
    {
        if (entry.is_regular_file())
        {
            files.push_back(entry.path().string());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

struct PipelineRun
{
    std::string json;       //!< head in whileRulesRun, tail after
    int callbacks = 0;      //!< calls of whileRulesRun
    std::size_t layers = 0; //!< correlation layers seen by whileRulesRun
    std::size_t findingsSeen = 0;
};

PipelineRun runPipeline(const InputFiles& files)
{
    PipelineRun run;
    ReportJsonStream stream([&](std::string_view piece) { run.json += piece; });
    Inputs inputs;
    Report report = loadAndDiagnose(files, Limits{}, {}, inputs, AnalysisOptions{},
                                    [&](const Report& partial)
                                    {
                                        ++run.callbacks;
                                        run.layers = partial.correlation.layers.size();
                                        run.findingsSeen = partial.findings.size();
                                        stream.head(partial, inputs);
                                    });
    stream.tail(report, inputs);
    return run;
}

//! The same files through loadInputs and diagnose, rendered whole.
std::string reference(const InputFiles& files)
{
    Inputs inputs = loadInputs(files, Limits{});
    Report report = diagnose(inputs);
    return renderReportJson(report, inputs);
}

void expectSameAsSequential(const InputFiles& files)
{
    const std::string expected = reference(files);
    PipelineRun run = runPipeline(files);
    EXPECT_EQ(run.callbacks, 1);
    EXPECT_EQ(run.findingsSeen, 0u) << "findings are gathered after the rules, never before whileRulesRun";
    EXPECT_EQ(run.json, expected);
}

} // namespace

TEST(Pipeline, SamplesGiveTheSequentialReport)
{
    for (const char* dir : {"a-plugin-between-dq-and-q", "b-yolov8-split-concat-silu", "c-resnet-conv-maxpool",
                            "d-residual-add-concat-fp32", "e-explicit-slower-than-implicit/explicit",
                            "e-explicit-slower-than-implicit/implicit"})
    {
        SCOPED_TRACE(dir);
        InputFiles files;
        files.files = filesIn(sample(dir));
        if (std::string(dir).starts_with("e-"))
        {
            files.files.push_back(sample("e-explicit-slower-than-implicit/model.onnx"));
        }
        expectSameAsSequential(files);
        // And with the ONNX model given last, and through the role options.
        std::reverse(files.files.begin(), files.files.end());
        expectSameAsSequential(files);
    }
}

TEST(Pipeline, RoleOptionsComeFirstInTheInputs)
{
    InputFiles files;
    files.onnx = sample("c-resnet-conv-maxpool/model.onnx");
    files.files = {sample("c-resnet-conv-maxpool/profile.json"), sample("c-resnet-conv-maxpool/layers.json")};
    Inputs inputs;
    Report report = loadAndDiagnose(files, Limits{}, {}, inputs);
    ASSERT_EQ(report.inputs.size(), 3u);
    EXPECT_EQ(report.inputs[0].kind, InputKind::kOnnx);
    EXPECT_EQ(report.inputs[1].kind, InputKind::kProfile);
    EXPECT_EQ(report.inputs[2].kind, InputKind::kLayerInfo);
    EXPECT_EQ(renderReportJson(report, inputs), reference(files));
    EXPECT_GT(report.correlation.layers.size(), 0u);
}

TEST(Pipeline, CallbackSeesTheWholeCorrelation)
{
    InputFiles files;
    files.files = filesIn(sample("c-resnet-conv-maxpool"));
    PipelineRun run = runPipeline(files);
    Inputs inputs = loadInputs(files, Limits{});
    ASSERT_NE(inputs.engine(), nullptr);
    EXPECT_EQ(run.layers, inputs.engine()->layers.size());
}

TEST(Pipeline, BrokenLayerInfoBesideAGoodModelNamesTheLayerFile)
{
    auto dir = tempDir("pipeline-broken-layers");
    auto layers = writeFile(dir / "layers.json", "{\"Layers\": [{\"Name\": \"conv\", \"LayerType\": \n");
    InputFiles files;
    files.files = {sample("c-resnet-conv-maxpool/model.onnx"), layers.string()};
    Inputs inputs;
    try
    {
        loadAndDiagnose(files, Limits{}, {}, inputs);
        FAIL() << "no error";
    }
    catch (const InputError& error)
    {
        EXPECT_EQ(error.where().path, layers.string());
        EXPECT_GE(error.where().line, 1u);
    }
}

TEST(Pipeline, BrokenModelBesideGoodLayersNamesTheModel)
{
    auto dir = tempDir("pipeline-broken-model");
    // A ModelProto whose graph field (7) claims more bytes than the file has.
    auto model = writeFile(dir / "model.onnx", std::string("\x08\x07\x3a\xff\x7f", 5) + "\x0a\x02xy");
    InputFiles files;
    files.files = {model.string(), sample("c-resnet-conv-maxpool/layers.json")};
    Inputs inputs;
    try
    {
        loadAndDiagnose(files, Limits{}, {}, inputs);
        FAIL() << "no error";
    }
    catch (const InputError& error)
    {
        EXPECT_EQ(error.where().path, model.string());
    }
}

TEST(Pipeline, ASecondFileOfOneKindIsRefusedBeforeAnythingIsRead)
{
    // The first layer-info file is broken past its first bytes: read, it would fail with a parse error. The plan
    // refuses the pair first.
    auto dir = tempDir("pipeline-two-layer-lists");
    auto broken = writeFile(dir / "a.json", "{\"Layers\": [{\"Name\": \"conv\", \"LayerType\": tru\n");
    InputFiles files;
    files.files = {sample("c-resnet-conv-maxpool/model.onnx"), broken.string(),
                   sample("c-resnet-conv-maxpool/layers.json")};
    for (int pipelined = 0; pipelined < 2; ++pipelined)
    {
        try
        {
            Inputs inputs;
            pipelined != 0 ? (void)loadAndDiagnose(files, Limits{}, {}, inputs) : (void)loadInputs(files, Limits{});
            FAIL() << "no error";
        }
        catch (const InputError& error)
        {
            EXPECT_EQ(error.where().path, files.files[2]);
            EXPECT_NE(std::string(error.what()).find("a second layer-info JSON"), std::string::npos) << error.what();
        }
    }
}

TEST(Pipeline, AnExceptionFromTheCallbackReachesTheCaller)
{
    InputFiles files;
    files.files = filesIn(sample("a-plugin-between-dq-and-q"));
    Inputs inputs;
    EXPECT_THROW(loadAndDiagnose(files, Limits{}, {}, inputs, AnalysisOptions{},
                                 [](const Report&) { throw std::runtime_error("stdout closed"); }),
                 std::runtime_error);
}

// The model read on its own thread beside large engine files. The shared model is another export than these engines
// were built from: where no layer executes one of its nodes both paths refuse it with the same message, else both
// give the same report (diagnose.cpp, modelMismatch); the MNIST set's own model matches its engine.
TEST(RealDataPipeline, EngineArtifactsWithAModelGiveTheSequentialReport)
{
    REQUIRE_SHARED();
    for (const char* set : {"trex-pt-resnet-a100-qat", "trex-pt-resnet-a100-qat-residual",
                            "issue-trt-4020-resnet18-int8-sparse-layerinfo-trt10", "trex-notebooks-yolo-orin-trt852"})
    {
        SCOPED_TRACE(set);
        InputFiles files;
        files.files = filesIn(realdata(set));
        files.files.push_back(sharedModel("resnet18-qat-residual.onnx").string());
        std::string sequential;
        try
        {
            reference(files);
        }
        catch (const InputError& error)
        {
            sequential = error.message();
        }
        if (sequential.empty())
        {
            expectSameAsSequential(files);
            continue;
        }
        EXPECT_NE(sequential.find("is not the model"), std::string::npos) << sequential;
        try
        {
            runPipeline(files);
            ADD_FAILURE() << "the pipelined diagnose accepted a model the sequential one refuses";
        }
        catch (const InputError& error)
        {
            EXPECT_EQ(error.message(), sequential);
        }
    }
    InputFiles matching;
    matching.files = filesIn(realdata("lix-mnist-orin-trt8510-best"));
    expectSameAsSequential(matching);
}

// A failed build that no rule explains is said first in the notes, so that "No findings" does not read as a clean
// build; a failure a finding quotes (the integer op of a dynamically quantized model) needs no such note.
TEST(Pipeline, AFailedBuildNoRuleExplainsIsTheFirstNote)
{
    InputFiles files;
    files.files = {fixture("build-log/failed-build.log").string()};
    const Report failed = diagnose(loadInputs(files, Limits{}));
    EXPECT_TRUE(failed.findings.empty());
    ASSERT_FALSE(failed.notes.empty());
    EXPECT_NE(failed.notes.front().find("failed-build.log:10: the build failed (6 error line(s), no engine); the "
                                        "first: \"Error[2]: [myelinBuilderUtils.cpp"),
              std::string::npos)
        << failed.notes.front();

    files.files = {fixture("build-log/integer-op-parse-failure.log").string()};
    const Report explained = diagnose(loadInputs(files, Limits{}));
    EXPECT_FALSE(explained.findings.empty());
    for (const auto& note : explained.notes)
    {
        EXPECT_EQ(note.find("the build failed"), std::string::npos) << note;
    }
}

// A build that passed is never called failed for its tactic-skip lines; they are counted and explained, and FP8 skips
// of a weakly typed build get the strong-typing remedy (NVIDIA/TensorRT#3987). No rule takes them for a scale error.
TEST(Pipeline, TacticSkipsOfAPassedBuildAreExplainedNotCalledAFailure)
{
    InputFiles files;
    files.files = {fixture("build-log/trt10-tactic-skips-passed.log").string()};
    const Report passed = diagnose(loadInputs(files, Limits{}));
    EXPECT_TRUE(passed.findings.empty());
    bool skipsExplained = false;
    bool strongTypingAdvised = false;
    for (const auto& note : passed.notes)
    {
        EXPECT_EQ(note.find("the build failed"), std::string::npos) << note;
        skipsExplained =
            skipsExplained ||
            (note.find("trt10-tactic-skips-passed.log:7: 3 error line(s) are tactic skips") != std::string::npos &&
             note.find("(this one passed: line 10)") != std::string::npos &&
             note.find("2 x could not infer output types for quantize (fp8); 1 x Assertion vol == 1 "
                       "failed.") != std::string::npos);
        strongTypingAdvised = strongTypingAdvised || note.find("build with --stronglyTyped") != std::string::npos;
    }
    EXPECT_TRUE(skipsExplained);
    EXPECT_TRUE(strongTypingAdvised);

    // Near-identical: the build failed on an error no rule explains; that is said first, the skips still explained.
    files.files = {fixture("build-log/trt10-tactic-skips-failed.log").string()};
    const Report failed = diagnose(loadInputs(files, Limits{}));
    ASSERT_FALSE(failed.notes.empty());
    EXPECT_NE(failed.notes.front().find("trt10-tactic-skips-failed.log:10: the build failed (1 error line(s), no "
                                        "engine); the first: \"Error[1]: [defaultAllocator.cpp"),
              std::string::npos)
        << failed.notes.front();
    EXPECT_TRUE(std::none_of(failed.findings.begin(), failed.findings.end(),
                             [](const Finding& finding) { return finding.rule == "invalid-scale"; }));
}

// A strongly typed build's FP8 skips get no --stronglyTyped advice: the same passed log with the flag on its command
// line.
TEST(Pipeline, StronglyTypedBuildGetsNoStrongTypingAdvice)
{
    std::string text = readFile(fixture("build-log/trt10-tactic-skips-passed.log"));
    for (std::size_t at = text.find("--fp16 --fp8"); at != std::string::npos; at = text.find("--fp16 --fp8", at))
    {
        text.replace(at, 12, "--stronglyTyped");
    }
    const auto log = writeFile(tempDir("strongly-typed-skips") / "build.log", text);
    InputFiles files;
    files.files = {log.string()};
    const Report report = diagnose(loadInputs(files, Limits{}));
    bool skipsExplained = false;
    for (const auto& note : report.notes)
    {
        EXPECT_EQ(note.find("build with --stronglyTyped"), std::string::npos) << note;
        skipsExplained = skipsExplained || note.find("are tactic skips") != std::string::npos;
    }
    EXPECT_TRUE(skipsExplained);
}
