// The lines of TensorRT 10.x/11.x build logs that tell how an engine was built (parsers/log_build_facts.cpp): typing,
// compiler backend, Myelin regions and kernels, backend strategies, the build summary of a log written without
// --verbose, and what `inspect` shows of them. Facts of ../shared/realdata were counted by hand (grep -n, sed -n).
//
// The fixtures write down lines that no real log here has, in the forms trtexec's source prints them
// (NVIDIA/TensorRT samples/common/sampleOptions.cpp, 10.x): "Precision: Strongly Typed" (printPrecision, for
// --stronglyTyped), "Invalid usage, setting fp16 mode is not allowed if graph is strongly typed. Disabling
// BuilderFlag::kFP16." (BuildOptions::parse, --fp16 with --stronglyTyped) and "Weakly-typed networks have been
// deprecated in TensorRT. ..." (BuildOptions::parse, a precision flag without --stronglyTyped; real in
// cookbook-mnist-trt10141/result-02.log line 2). The header, options block and summary lines around them are copied
// from the real 10.x logs.

#include "qdq/analysis.h"
#include "qdq/inspect.h"
#include "qdq/readers.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>

namespace
{

using qdq::BuildLog;
using qdq::test::fixture;
using qdq::test::realdata;

BuildLog readFixture(const std::string& name)
{
    return qdq::readBuildLog(fixture("build-log/" + name).string());
}

BuildLog readReal(const std::string& relative)
{
    return qdq::readBuildLog(realdata(relative).string());
}

qdq::SimulationOptions modeOf(const std::filesystem::path& path, const qdq::BuildModeRequest& request = {})
{
    return qdq::resolveBuildMode(qdq::test::loadFiles({path}), request);
}

std::string factOf(const qdq::FileSummary& summary, const std::string& key)
{
    for (const auto& [name, value] : summary.facts)
    {
        if (name == key)
        {
            return value;
        }
    }
    return {};
}

// --stronglyTyped on the command line, "Precision: Strongly Typed" and trtexec's "Invalid usage" warning all say
// strong; the near-identical weakly typed build (--fp16 alone) prints the deprecation warning instead.
TEST(BuildLogTyping, StronglyTypedTrtexecBuildAndItsWeaklyTypedTwin)
{
    const BuildLog strong = readFixture("trt10-strongly-typed.log");
    ASSERT_EQ(strong.typingEvidence.size(), 3u);
    EXPECT_EQ(strong.typingEvidence[0].what, "trtexec command line with --stronglyTyped");
    EXPECT_EQ(strong.typingEvidence[0].line, 1u);
    EXPECT_EQ(strong.typingEvidence[1].line, 2u); // the "Invalid usage" warning
    EXPECT_EQ(strong.typingEvidence[2].what, "Build Options: Precision: Strongly Typed");
    EXPECT_EQ(strong.typingEvidence[2].line, 8u);
    EXPECT_TRUE(std::all_of(strong.typingEvidence.begin(), strong.typingEvidence.end(),
                            [](const qdq::TypingEvidence& evidence) { return evidence.stronglyTyped; }));
    const qdq::SimulationOptions strongMode = modeOf(fixture("build-log/trt10-strongly-typed.log"));
    EXPECT_TRUE(strongMode.stronglyTyped());
    EXPECT_FALSE(strongMode.typingAssumed);
    EXPECT_FALSE(strongMode.fp16); // --fp16 was dropped by trtexec: the graph's types decide
    EXPECT_FALSE(strongMode.precisionFlagsApply());

    const BuildLog weak = readFixture("trt10-weakly-typed.log");
    ASSERT_EQ(weak.typingEvidence.size(), 2u);
    EXPECT_EQ(weak.typingEvidence[0].what, "trtexec command line without --stronglyTyped");
    EXPECT_EQ(weak.typingEvidence[1].line, 2u);
    EXPECT_NE(weak.typingEvidence[1].what.find("Weakly-typed networks have been deprecated"), std::string::npos);
    EXPECT_FALSE(weak.typing()->stronglyTyped);
    const qdq::SimulationOptions weakMode = modeOf(fixture("build-log/trt10-weakly-typed.log"));
    EXPECT_EQ(weakMode.typing, qdq::Typing::kWeak);
    EXPECT_TRUE(weakMode.fp16);
    EXPECT_TRUE(weakMode.precisionFlagsApply());

    // Asking for the other typing contradicts each log.
    EXPECT_THROW(modeOf(fixture("build-log/trt10-strongly-typed.log"), {"", qdq::Typing::kWeak, ""}), qdq::InputError);
    EXPECT_THROW(modeOf(fixture("build-log/trt10-weakly-typed.log"), {"", qdq::Typing::kStrong, ""}), qdq::InputError);
}

// An options block pasted alone (no command line): "Precision: Strongly Typed" tells strong typing; the same block
// with "Precision: FP32+FP16+INT8" tells nothing of the typing, which stays assumed.
TEST(BuildLogTyping, OptionsBlockAloneTellsStrongTypingOnlyWhenItSaysSo)
{
    const qdq::SimulationOptions strong = modeOf(fixture("build-log/trt10-options-strongly-typed.log"));
    EXPECT_TRUE(strong.stronglyTyped());
    EXPECT_FALSE(strong.typingAssumed);
    EXPECT_NE(strong.typingSource.find("trt10-options-strongly-typed.log:3: Build Options: Precision: Strongly Typed"),
              std::string::npos);

    EXPECT_TRUE(readFixture("trt10-options-weakly-typed.log").typingEvidence.empty());
    const qdq::SimulationOptions weak = modeOf(fixture("build-log/trt10-options-weakly-typed.log"));
    EXPECT_EQ(weak.typing, qdq::Typing::kWeak);
    EXPECT_TRUE(weak.typingAssumed);
    EXPECT_TRUE(weak.int8);
}

// A TensorRT 11 log is strongly typed without --stronglyTyped (11.0 release notes: weak typing is gone), so its
// command line is no evidence of weak typing; the 10.16 twin's is. The 11.x forms are those of the real 11.1 files
// (../shared/realdata/FORMATS-trt11.md L1, L2, L10): the fixture's lines are copied from
// cookbook111-dynquant-fp8-fp4-h100/log-main.py.log (tests/fixtures/trt11/README.md).
TEST(BuildLogTyping, ElevenIsStrongWithoutTheFlagTenIsNot)
{
    const BuildLog eleven = qdq::readBuildLog(fixture("trt11/fp8-dynquant.log").string());
    EXPECT_EQ(eleven.trtVersion, "11.1.0");
    EXPECT_TRUE(eleven.typingEvidence.empty());
    const qdq::SimulationOptions mode = modeOf(fixture("trt11/fp8-dynquant.log"));
    EXPECT_TRUE(mode.stronglyTyped());
    EXPECT_FALSE(mode.typingAssumed);
    EXPECT_NE(mode.typingSource.find("TensorRT 11"), std::string::npos);

    const BuildLog ten = readFixture("trt10-weakly-typed.log");
    ASSERT_FALSE(ten.typingEvidence.empty());
    EXPECT_FALSE(ten.typingEvidence[0].stronglyTyped);
}

// The summary lines of a passed 10.16 build (fixture lines 14-20).
TEST(BuildLogSummary, SummaryLinesOfAFixture)
{
    const BuildLog log = readFixture("trt10-strongly-typed.log");
    EXPECT_EQ(log.summary.compilerBackendBuildLine, 14u);
    EXPECT_EQ(log.summary.compilerBackendExecutionLine, 17u);
    EXPECT_EQ(log.summary.activationBytes, 2052096u);
    EXPECT_EQ(log.summary.weightsBytes, 6556436u);
    EXPECT_EQ(log.summary.engineGenerations, 1u);
    EXPECT_DOUBLE_EQ(log.summary.generationSeconds.value_or(0), 4.2);
    EXPECT_DOUBLE_EQ(log.summary.engineSizeMiB.value_or(0), 6.5);
    EXPECT_DOUBLE_EQ(log.summary.buildSeconds.value_or(0), 4.5);
    EXPECT_EQ(log.verboseLines, 0u);
    EXPECT_TRUE(log.errors.empty());
    EXPECT_EQ(log.passedLine, 19u);
}

TEST(RealDataBuildLogTenX, Mnist1014VerboseBuildWithThreeBackendStrategies)
{
    REQUIRE_SHARED();
    const BuildLog log = readReal("cookbook-mnist-trt10141/result-02.log");
    // Typing: the command line (line 1, --fp16 without --stronglyTyped) and the deprecation warning (line 2).
    ASSERT_EQ(log.typingEvidence.size(), 2u);
    EXPECT_EQ(log.typingEvidence[0].line, 1u);
    EXPECT_EQ(log.typingEvidence[1].line, 2u);
    EXPECT_FALSE(log.typing()->stronglyTyped);
    // Compiler backend: first build line 1361, first execution line 2787.
    EXPECT_EQ(log.summary.compilerBackendBuildLine, 1361u);
    EXPECT_EQ(log.summary.compilerBackendExecutionLine, 2787u);
    EXPECT_EQ(log.summary.myelinOffloadAllLine, 2812u);
    // BuilderOptimizationLevel 5 builds with strategies 4, 3 and 2 and keeps 4.
    ASSERT_EQ(log.backendStrategies.size(), 3u);
    EXPECT_EQ(log.backendStrategies[0].id, 4);
    EXPECT_EQ(log.backendStrategies[0].line, 511u);
    EXPECT_TRUE(log.backendStrategies[0].kept);
    EXPECT_DOUBLE_EQ(log.backendStrategies[0].estimatedTime.value_or(0), 0.22528);
    EXPECT_EQ(log.backendStrategies[1].id, 3);
    EXPECT_TRUE(log.backendStrategies[1].skipped); // "Skip backend strategy 3since ..." (line 4195)
    EXPECT_DOUBLE_EQ(log.backendStrategies[1].estimatedTime.value_or(0), 0.257024);
    EXPECT_EQ(log.backendStrategies[2].id, 2);
    EXPECT_EQ(log.backendStrategies[2].line, 4196u);
    EXPECT_FALSE(log.backendStrategies[2].kept);
    EXPECT_DOUBLE_EQ(log.backendStrategies[2].estimatedTime.value_or(0), 0.247808);
    // Myelin: 7 region metadata lines, 11 op tunings; the first tuning's table has 284 rows (lines 1368-1651).
    ASSERT_EQ(log.myelinRegions.size(), 7u);
    EXPECT_EQ(log.myelinRegions[0].name, "{ForeignNode[node_linear]}");
    EXPECT_EQ(log.myelinRegions[0].line, 1358u);
    EXPECT_EQ(log.myelinRegions[3].onnxNodes, (std::vector<std::string>{"node_conv2d", "node_relu"})); // U+001E between
    ASSERT_EQ(log.myelinOps.size(), 11u);
    EXPECT_EQ(log.myelinOps[0].op, "node_linear");
    EXPECT_EQ(log.myelinOps[0].line, 1365u);
    EXPECT_EQ(log.myelinOps[0].tacticsTimed, 284u);
    EXPECT_EQ(log.myelinOps[0].fastestKernel,
              "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x64x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4");
    EXPECT_DOUBLE_EQ(log.myelinOps[0].fastestMs.value_or(0), 0.0134048);
    EXPECT_EQ(log.myelinOps[1].fastestKernel,
              "sm80_xmma_gemm_f16f16_f16f16_f16_nn_n_tilesize32x32x64_stage6_warpsize2x2x1_tensor16x8x16");
    const qdq::MyelinOpTuning& conv = log.myelinOps[4]; // line 2836: Myelin takes Conv+Relu under strategy 3
    EXPECT_EQ(conv.op, "node_conv2d");
    EXPECT_EQ(conv.onnxNodes, (std::vector<std::string>{"node_conv2d", "node_relu"}));
    EXPECT_EQ(conv.fastestKernel.rfind("sm80_xmma_fprop_implicit_gemm_f32f32", 0), 0u);
    // The 1 KiB workspace left 4 Myelin tactics out for memory (lines 2883, 2892, 2908, 2917).
    ASSERT_EQ(log.memorySkips.size(), 4u);
    EXPECT_EQ(log.memorySkips[0].line, 2883u);
    EXPECT_TRUE(log.tacticSkips.empty());
    EXPECT_TRUE(log.errors.empty());
    // Under --fp16, Myelin ran Conv+Relu in another precision than asked (line 4159, in strategy 3's build).
    ASSERT_EQ(log.nonConformingLayers.size(), 1u);
    EXPECT_EQ(log.nonConformingLayers[0].text, "{ForeignNode[node_conv2d...node_relu]}");
    EXPECT_EQ(log.nonConformingLayers[0].line, 4159u);
    // Summary: three engine generations; memory and time of the kept build (strategy 4, lines 2772-2789), not of the
    // last one (strategy 2: 1003520 and 6556288 bytes, 0.19203 s).
    EXPECT_EQ(log.summary.engineGenerations, 3u);
    EXPECT_DOUBLE_EQ(log.summary.generationSeconds.value_or(0), 8.33141);
    EXPECT_EQ(log.summary.activationBytes, 2052096u);
    EXPECT_EQ(log.summary.weightsBytes, 6556436u);
    EXPECT_DOUBLE_EQ(log.summary.engineSizeMiB.value_or(0), 6.3747);
    EXPECT_DOUBLE_EQ(log.summary.buildSeconds.value_or(0), 13.8436);
    EXPECT_EQ(log.verboseLines, 4248u); // grep -c '\[V\]'
    // What the reader already knew stays as it was.
    EXPECT_EQ(log.engine.layers.size(), 16u);
    EXPECT_EQ(log.tactics.size(), 43u);
}

// The FP16 build of the 8.0.3 cookbook names 8 layers whose requested precision was ignored; its FP32 twin none.
TEST(RealDataBuildLogTenX, NonConformingLayersOfTheFp16BuildOnly)
{
    REQUIRE_SHARED();
    const BuildLog fp16 = readReal("cookbook-mnist-trt8003/result-FP16.txt");
    ASSERT_EQ(fp16.nonConformingLayers.size(), 8u);
    EXPECT_EQ(fp16.nonConformingLayers[0].text, "Conv__25 + Relu");
    EXPECT_EQ(fp16.nonConformingLayers[0].line, 967u);
    EXPECT_TRUE(readReal("cookbook-mnist-trt8003/result-FP32.txt").nonConformingLayers.empty());
}

// result-04.log was written without --verbose: no verbose line, no parser line, and still the version, typing,
// compiler backend, summary and the --dumpLayerInfo list.
TEST(RealDataBuildLogTenX, Mnist1014NonVerboseLogStillTellsTheBuild)
{
    REQUIRE_SHARED();
    const BuildLog log = readReal("cookbook-mnist-trt10141/result-04.log");
    EXPECT_EQ(log.verboseLines, 0u);
    EXPECT_TRUE(log.parsedNodes.empty());
    EXPECT_EQ(log.trtVersion, "10.14.1");
    ASSERT_EQ(log.typingEvidence.size(), 1u); // no precision flag: no deprecation warning (line 2 is the TF32 note)
    EXPECT_FALSE(log.typingEvidence[0].stronglyTyped);
    EXPECT_EQ(log.summary.onnxOpset, 17); // the ONNX parser's header, lines 119-121
    EXPECT_EQ(log.summary.onnxProducer, "pytorch 2.10.0a0+b4e4ee81d3.nv25.12");
    EXPECT_EQ(log.summary.compilerBackendBuildLine, 132u);
    EXPECT_EQ(log.summary.compilerBackendExecutionLine, 141u);
    EXPECT_EQ(log.summary.activationBytes, 125440u);
    EXPECT_EQ(log.summary.weightsBytes, 13100672u);
    EXPECT_DOUBLE_EQ(log.summary.generationSeconds.value_or(0), 2.27501);
    EXPECT_DOUBLE_EQ(log.summary.engineSizeMiB.value_or(0), 12.5721);
    EXPECT_DOUBLE_EQ(log.summary.buildSeconds.value_or(0), 2.6045);
    EXPECT_TRUE(log.backendStrategies.empty());
    EXPECT_TRUE(log.myelinOps.empty());
    EXPECT_TRUE(log.hasEngineBlock);
    EXPECT_EQ(log.passedLine, 144u);
}

TEST(RealDataBuildLogTenX, ProfilingVerbosity1016PythonBuildsTellNoTyping)
{
    REQUIRE_SHARED();
    const BuildLog log = readReal("cookbook-profilingverbosity-trt1016/log-main.py.log");
    EXPECT_TRUE(log.typingEvidence.empty()); // the Python API prints no command line or options block
    EXPECT_TRUE(modeOf(realdata("cookbook-profilingverbosity-trt1016/log-main.py.log")).typingAssumed);
    EXPECT_EQ(log.summary.compilerBackendBuildLine, 960u);
    EXPECT_EQ(log.summary.compilerBackendExecutionLine, 1383u);
    ASSERT_EQ(log.backendStrategies.size(), 3u); // one per build, lines 370, 1782, 3194, no verdict printed
    EXPECT_EQ(log.backendStrategies[2].line, 3194u);
    EXPECT_EQ(log.backendStrategies[2].id, 2);
    EXPECT_FALSE(log.backendStrategies[2].kept || log.backendStrategies[2].skipped);
    ASSERT_EQ(log.myelinRegions.size(), 6u); // lines 957 and 1314 of each build, the second of profile 1
    EXPECT_EQ(log.myelinRegions[1].name, "{ForeignNode[gemm1.weight...ONNXTRT_castHelper_9]} [profile 1]");
    EXPECT_EQ(log.myelinRegions[1].line, 1314u);
    EXPECT_EQ(log.myelinRegions[1].onnxNodes.size(), 6u);
    ASSERT_EQ(log.myelinOps.size(), 6u);
    EXPECT_EQ(log.myelinOps[0].line, 962u);
    EXPECT_EQ(log.myelinOps[0].onnxNodes, (std::vector<std::string>{"node_linear", "node_relu_2"}));
    EXPECT_EQ(log.summary.engineGenerations, 3u);
    EXPECT_DOUBLE_EQ(log.summary.generationSeconds.value_or(0), 12.2193);
    EXPECT_EQ(log.summary.onnxOpset, 18);
    EXPECT_EQ(log.summary.onnxProducer, "pytorch 2.11.0a0+a6c236b9fd.nv26.03.46836102"); // once, not per build
    EXPECT_EQ(log.verboseLines, 4083u);
}

// trtexec's verbose glossary after the performance summary ("Throughput: the observed throughput ...", line 180)
// does not replace the measured throughput of line 166.
TEST(RealDataBuildLogTenX, FuzzylabsAlexnet104ExcerptSummary)
{
    REQUIRE_SHARED();
    const BuildLog log = readReal("fuzzylabs-alexnet-fp16-trt10/alexnet_fp16.build-and-profile.log.excerpt.txt");
    EXPECT_DOUBLE_EQ(log.summary.throughputQps.value_or(0), 1995.29);
    EXPECT_DOUBLE_EQ(log.summary.generationSeconds.value_or(0), 8.62539);
    EXPECT_DOUBLE_EQ(log.summary.buildSeconds.value_or(0), 8.69986);
    EXPECT_DOUBLE_EQ(log.summary.engineSizeMiB.value_or(0), 117.087);
    EXPECT_DOUBLE_EQ(log.gpuComputeMeanMs.value_or(0), 0.498791);
    EXPECT_TRUE(log.typingEvidence.empty()); // the excerpt has no command line, and 10.4 predates the warning
    EXPECT_EQ(log.summary.compilerBackendBuildLine, 0u);
}

// Every file of the 10.x folders of ../shared/realdata: inspect reads it and no build is called failed.
TEST(RealDataBuildLogTenX, NoTenXArtifactIsCalledAFailedBuild)
{
    REQUIRE_SHARED();
    const char* folders[] = {"cookbook-mnist-trt10141",
                             "cookbook-profilingverbosity-trt1016",
                             "fuzzylabs-alexnet-fp16-trt10",
                             "fuzzylabs-resnet18-fp16-trt10",
                             "issue-trt-4020-resnet18-int8-sparse-layerinfo-trt10",
                             "ivit-simple-mlp-qdq-trt10-myelin"};
    std::size_t logs = 0;
    for (const char* folder : folders)
    {
        for (const auto& entry : std::filesystem::directory_iterator(realdata(folder)))
        {
            const qdq::FileSummary summary = qdq::inspectFile(entry.path().string(), qdq::InspectOptions{});
            if (summary.kind != qdq::InputKind::kBuildLog)
            {
                continue;
            }
            ++logs;
            EXPECT_EQ(factOf(summary, "build").find("failed"), std::string::npos) << entry.path();
            ASSERT_TRUE(summary.logContents.has_value()) << entry.path();
        }
    }
    EXPECT_EQ(logs, 5u); // result-02, result-04, log-main.py, the fuzzylabs excerpt, the #4020 excerpt
}

// inspect shows what a log holds, in text and JSON.
TEST(RealDataBuildLogTenX, InspectShowsWhatEachLogHolds)
{
    REQUIRE_SHARED();
    const std::string verbose = realdata("cookbook-mnist-trt10141/result-02.log").string();
    const std::string quiet = realdata("cookbook-mnist-trt10141/result-04.log").string();
    const auto text = qdq::test::runCli({"inspect", verbose, quiet});
    ASSERT_EQ(text.exitStatus, 0) << text.err;
    EXPECT_NE(text.out.find("build mode:         TensorRT 10.14 ("), std::string::npos);
    EXPECT_NE(text.out.find("compiler backend:   build yes (line 1361), execution yes (line 2787)"), std::string::npos);
    EXPECT_NE(text.out.find("backend strategy:   4 (line 511): kept, estimated inference time 0.22528"),
              std::string::npos);
    EXPECT_NE(text.out.find("verbose lines:      0 (written without --verbose)"), std::string::npos);
    EXPECT_NE(text.out.find("4 for insufficient workspace memory"), std::string::npos);

    const auto json = qdq::test::runCli({"inspect", "--format", "json", verbose, quiet});
    ASSERT_EQ(json.exitStatus, 0) << json.err;
    const auto files = nlohmann::json::parse(json.out);
    ASSERT_EQ(files.size(), 2u);
    const auto& first = files[0]["log"];
    EXPECT_EQ(first["typing"], "weak");
    EXPECT_EQ(first["typing_assumed"], false);
    EXPECT_NE(first["typing_source"].get<std::string>().find("result-02.log:1: trtexec command line without"),
              std::string::npos);
    EXPECT_EQ(first["layer_list"], true);
    EXPECT_EQ(first["parsed_onnx_nodes"], 12);
    EXPECT_EQ(first["compiler_backend_build_line"], 1361);
    EXPECT_EQ(first["myelin_regions"], 7);
    EXPECT_EQ(first["myelin_kernels"].size(), 11u); // every one of the 11 tunings has a table
    EXPECT_EQ(first["backend_strategies"].size(), 3u);
    EXPECT_EQ(first["engine_generations"], 3);
    const auto& second = files[1]["log"];
    EXPECT_EQ(second["verbose_lines"], 0);
    EXPECT_EQ(second["parsed_onnx_nodes"], 0);
    EXPECT_EQ(second["compiler_backend_execution_line"], 141);
    EXPECT_DOUBLE_EQ(second["engine_size_mib"].get<double>(), 12.5721);
    EXPECT_TRUE(second["throughput_qps"].is_null());
}

// Tactics left out for a too small workspace pool get a note; the same build's non-verbose log, which has none of
// those warnings, gets none.
TEST(RealDataBuildLogTenX, MemorySkipsGetANoteNamingThePool)
{
    REQUIRE_SHARED();
    const auto skipped =
        qdq::test::runCli({"diagnose", "--format", "json", realdata("cookbook-mnist-trt10141/result-02.log").string()});
    ASSERT_EQ(skipped.exitStatus, 0) << skipped.err;
    const std::string note = "4 tactic(s) were left out for insufficient workspace memory (Build Options: Memory "
                             "Pools: workspace: 0.000976562 MiB)";
    EXPECT_NE(skipped.out.find(note), std::string::npos);
    EXPECT_NE(skipped.out.find("result-02.log:2883: "), std::string::npos);
    // The four skips are in strategy 3's build (lines 2801-4195), which was not kept.
    EXPECT_NE(skipped.out.find("all in builds of backend strategies that were not kept (the engine listed is "
                               "strategy 4's)"),
              std::string::npos);

    const auto clean =
        qdq::test::runCli({"diagnose", "--format", "json", realdata("cookbook-mnist-trt10141/result-04.log").string()});
    ASSERT_EQ(clean.exitStatus, 0) << clean.err;
    EXPECT_EQ(clean.out.find("insufficient workspace memory"), std::string::npos);
}

} // namespace
