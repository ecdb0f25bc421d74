// The build mode (TensorRT version and typing) as every command resolves it: from the build log, from the command
// line, assumed when nothing tells it, and the contradictions that are input errors (exit 2).
#include "qdq/analysis.h"
#include "qdq/diagnostics.h"
#include "test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace qdq;
using namespace qdq::test;

namespace
{

const char* kMnistLog1014 = "cookbook-mnist-trt10141/result-02.log"; // trtexec --fp16, TensorRT 10.14.1

TEST(BuildMode, NothingToldIsAssumedWeakAndSaysSo)
{
    const SimulationOptions mode = resolveBuildMode(Inputs{}, BuildModeRequest{});
    EXPECT_EQ(mode.typing, Typing::kWeak);
    EXPECT_TRUE(mode.typingAssumed);
    EXPECT_TRUE(mode.precisionFlagsApply());
    EXPECT_EQ(mode.trtMajor, 0);
    EXPECT_NE(mode.typingSource.find("assumed"), std::string::npos);
    EXPECT_NE(describeBuildMode(mode).find("--trt-version 11"), std::string::npos);
}

TEST(BuildMode, VersionElevenIsStronglyTypedWithoutPrecisionFlags)
{
    const SimulationOptions mode = resolveBuildMode(Inputs{}, BuildModeRequest{"11", std::nullopt, ""});
    EXPECT_EQ(mode.trtMajor, 11);
    EXPECT_TRUE(mode.stronglyTyped());
    EXPECT_FALSE(mode.typingAssumed);
    EXPECT_FALSE(mode.precisionFlagsApply());
    EXPECT_FALSE(mode.fp16); // the float parts of an FP32 model run FP32
    EXPECT_EQ(mode.versionSource, "--trt-version 11");
    // Ten point x stays weak unless told otherwise: strong typing is opt-in there.
    const SimulationOptions ten = resolveBuildMode(Inputs{}, BuildModeRequest{"10.16", std::nullopt, ""});
    EXPECT_EQ(ten.typing, Typing::kWeak);
    EXPECT_TRUE(ten.typingAssumed);
    EXPECT_EQ(ten.trtMinor, 16);
}

TEST(BuildMode, StronglyTypedOnTenIsStrongAndNamesTheOption)
{
    const SimulationOptions mode = resolveBuildMode(Inputs{}, BuildModeRequest{"10.16", Typing::kStrong, ""});
    EXPECT_TRUE(mode.stronglyTyped());
    EXPECT_EQ(mode.typingSource, "--strongly-typed");
    EXPECT_FALSE(mode.precisionFlagsApply());
}

TEST(BuildMode, UnknownOrMalformedVersionsAreInputErrors)
{
    for (const char* version : {"12", "7.2", "abc", "10.x", ""})
    {
        if (*version == '\0')
        {
            continue; // empty: not given
        }
        EXPECT_THROW(resolveBuildMode(Inputs{}, BuildModeRequest{version, std::nullopt, ""}), InputError) << version;
    }
    EXPECT_NO_THROW(resolveBuildMode(Inputs{}, BuildModeRequest{"8.0", std::nullopt, ""}));
    EXPECT_NO_THROW(resolveBuildMode(Inputs{}, BuildModeRequest{"11.1.0", std::nullopt, ""}));
}

TEST(BuildMode, WeakTypingWithElevenIsAnInputError)
{
    EXPECT_THROW(resolveBuildMode(Inputs{}, BuildModeRequest{"11", Typing::kWeak, ""}), InputError);
    EXPECT_NO_THROW(resolveBuildMode(Inputs{}, BuildModeRequest{"10.11", Typing::kWeak, ""}));
}

TEST(RealDataBuildMode, RealTenFourteenLogTellsVersionAndWeakTyping)
{
    REQUIRE_SHARED();
    const Inputs inputs = loadFiles({realdata(kMnistLog1014)});
    const SimulationOptions mode = resolveBuildMode(inputs, BuildModeRequest{});
    EXPECT_EQ(mode.trtMajor, 10);
    EXPECT_EQ(mode.trtMinor, 14);
    EXPECT_EQ(mode.typing, Typing::kWeak);
    EXPECT_FALSE(mode.typingAssumed);
    EXPECT_TRUE(mode.fp16);
    EXPECT_FALSE(mode.int8);
    EXPECT_NE(mode.typingSource.find("without --stronglyTyped"), std::string::npos);
    EXPECT_NE(mode.versionSource.find("result-02.log"), std::string::npos);
}

TEST(RealDataBuildMode, RequestsThatContradictTheRealLogAreInputErrors)
{
    REQUIRE_SHARED();
    const Inputs inputs = loadFiles({realdata(kMnistLog1014)});
    EXPECT_THROW(resolveBuildMode(inputs, BuildModeRequest{"", Typing::kStrong, ""}), InputError);
    EXPECT_THROW(resolveBuildMode(inputs, BuildModeRequest{"10.16", std::nullopt, ""}), InputError);
    EXPECT_THROW(resolveBuildMode(inputs, BuildModeRequest{"11", std::nullopt, ""}), InputError);
    // Agreeing requests are fine: the same version (major alone, or major.minor), the same typing.
    EXPECT_NO_THROW(resolveBuildMode(inputs, BuildModeRequest{"10", Typing::kWeak, ""}));
    EXPECT_NO_THROW(resolveBuildMode(inputs, BuildModeRequest{"10.14", std::nullopt, ""}));
}

TEST(RealDataBuildMode, CommandLineErrorsExitTwoNamingTheOption)
{
    REQUIRE_SHARED();
    const std::string model = sharedModel("resnet18-qat-convs.onnx").string();
    const auto unknown = runCli({"diagnose", "--trt-version", "12", model});
    EXPECT_EQ(unknown.exitStatus, 2);
    EXPECT_NE(unknown.err.find("--trt-version"), std::string::npos);
    const auto weakEleven = runCli({"predict", "--trt-version", "11", "--weakly-typed", model});
    EXPECT_EQ(weakEleven.exitStatus, 2);
    EXPECT_NE(weakEleven.err.find("--weakly-typed"), std::string::npos);
    const auto both = runCli({"fix", "--dry-run", "--strongly-typed", "--weakly-typed", model});
    EXPECT_EQ(both.exitStatus, 2);
    const auto contradiction = runCli({"diagnose", "--strongly-typed", realdata(kMnistLog1014).string()});
    EXPECT_EQ(contradiction.exitStatus, 2);
    EXPECT_NE(contradiction.err.find("result-02.log"), std::string::npos);
}

TEST(RealDataBuildMode, EveryReportShowsTheMode)
{
    REQUIRE_SHARED();
    const std::string model = sharedModel("resnet18-qat-convs.onnx").string();
    const auto text = runCli({"diagnose", "--trt-version", "11", model});
    ASSERT_EQ(text.exitStatus, 0) << text.err;
    EXPECT_NE(text.out.find("build mode: TensorRT 11.0 (--trt-version 11), strongly typed"), std::string::npos);

    const auto json = runCli({"diagnose", "--format", "json", "--strongly-typed", model});
    ASSERT_EQ(json.exitStatus, 0) << json.err;
    const auto report = nlohmann::json::parse(json.out);
    EXPECT_EQ(report["build_mode"]["typing"], "strong");
    EXPECT_EQ(report["build_mode"]["typing_source"], "--strongly-typed");
    EXPECT_TRUE(report["build_mode"]["trt_version"].is_null());
    EXPECT_TRUE(report["build_mode"]["precision_flags"].empty());

    const auto assumed = runCli({"diagnose", "--format", "json", model});
    const auto assumedReport = nlohmann::json::parse(assumed.out);
    EXPECT_EQ(assumedReport["build_mode"]["typing"], "weak");
    EXPECT_EQ(assumedReport["build_mode"]["typing_assumed"], true);
    EXPECT_EQ(assumedReport["build_mode"]["precision_flags"], nlohmann::json({"--int8", "--fp16"}));

    const auto sarif =
        nlohmann::json::parse(runCli({"diagnose", "--format", "sarif", "--trt-version", "11", model}).out);
    EXPECT_EQ(sarif["runs"][0]["properties"]["buildMode"]["typing"], "strong");
    EXPECT_EQ(sarif["runs"][0]["properties"]["buildMode"]["trtVersion"], "11.0");

    const auto html = runCli({"diagnose", "--format", "html", "--trt-version", "11", model});
    EXPECT_NE(html.out.find("\"build_mode\""), std::string::npos);

    const auto predicted = runCli({"predict", "--trt-version", "11", model});
    EXPECT_NE(predicted.out.find("Build mode: TensorRT 11.0"), std::string::npos);
    const auto predictedJson = nlohmann::json::parse(runCli({"predict", "--format", "json", model}).out);
    EXPECT_EQ(predictedJson["build_mode"]["typing"], "weak");

    const auto fixed = runCli({"fix", "--dry-run", "--trt-version", "11", model});
    EXPECT_NE(fixed.out.find("build mode: TensorRT 11.0"), std::string::npos);
}

TEST(RealDataBuildMode, PrecisionFlagUnderStrongTypingIsAnInputError)
{
    REQUIRE_SHARED();
    const std::string model = sharedModel("resnet18-qat-convs.onnx").string();
    EXPECT_EQ(runCli({"predict", "--trt-version", "11", "--precision", "fp16", model}).exitStatus, 2);
    EXPECT_EQ(runCli({"predict", "--trt-version", "10", "--precision", "fp16", model}).exitStatus, 0);
}

} // namespace
