// Numbers and options validated the same way everywhere (issue 38): profile times that are no times (NaN, Infinity,
// negative, 1e308) in profile JSON and log tables are input errors naming the file and line; --trt-version is read
// strictly and only majors 8, 10 and 11 are known, from an option or a log header; empty option values, a subcommand
// typo, a truncated JSON and a diagnose of timings alone each get a clear message and exit 2. Each case beside a
// near-identical one that must still work.
#include "graph_builder.h"
#include "test_support.h"

#include "qdq/analysis.h"
#include "qdq/predict.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>

#include <string>

using namespace qdq;
using namespace qdq::test;
namespace fs = std::filesystem;

namespace
{

std::string profileJson(const std::string& averageMs)
{
    return "[\n  { \"count\" : 4 }\n, { \"name\" : \"conv\", \"timeMs\" : 0.8, \"averageMs\" : " + averageMs +
           ", \"medianMs\" : 0.2, \"percentage\" : 100 }\n]\n";
}

//! The InputError of reading the profile, or "" when it reads.
std::string profileError(const std::string& text)
{
    try
    {
        readProfileFromBuffer(text, "profile.json");
    }
    catch (const InputError& error)
    {
        return error.what();
    }
    return "";
}

std::string logWithRow(const std::string& total, const std::string& header = "[TensorRT v101601]")
{
    return "&&&& RUNNING TensorRT.trtexec " + header +
           " [b11] # trtexec --onnx=model.onnx --int8 --dumpProfile\n"
           "[07/07/2026-06:12:46] [I] === Profile (14590 iterations ) ===\n"
           "[07/07/2026-06:12:46] [I]    Time(ms)     Avg.(ms)   Median(ms)   Time(%)   Layer\n"
           "[07/07/2026-06:12:46] [I]      " +
           total +
           "       0.0243       0.0246       4.6   node_conv2d + node_relu\n"
           "[07/07/2026-06:12:46] [I] \n";
}

std::string logError(const std::string& text)
{
    try
    {
        readBuildLogFromBuffer(text, "build.log");
    }
    catch (const InputError& error)
    {
        return error.what();
    }
    return "";
}

} // namespace

TEST(InputsValidated, ProfileJsonTimesThatAreNoTimesAreErrorsWithTheLine)
{
    for (const char* bad : {"NaN", "Infinity", "-5.0", "1e308"})
    {
        const std::string error = profileError(profileJson(bad));
        EXPECT_NE(error.find("profile.json:3"), std::string::npos) << bad << ": " << error;
        EXPECT_NE(error.find("averageMs"), std::string::npos) << bad << ": " << error;
    }
    EXPECT_EQ(profileError(profileJson("0.2")), "");
    EXPECT_EQ(profileError(profileJson("0")), "");
}

TEST(InputsValidated, LogProfileTableTimesThatAreNoTimesAreErrorsWithTheLine)
{
    for (const char* bad : {"nan", "inf", "-5.0", "1e308"})
    {
        const std::string error = logError(logWithRow(bad));
        EXPECT_NE(error.find("build.log:4"), std::string::npos) << bad << ": " << error;
        EXPECT_NE(error.find("total time"), std::string::npos) << bad << ": " << error;
    }
    const BuildLog log = readBuildLogFromBuffer(logWithRow("355.08"), "build.log");
    ASSERT_EQ(log.profile.entries.size(), 1u);
    EXPECT_DOUBLE_EQ(log.profile.entries[0].timeMs, 355.08);
}

TEST(InputsValidated, LogHeaderOfAnUnknownMajorIsAnInputError)
{
    const std::string error = logError(logWithRow("355.08", "[TensorRT v990000]"));
    EXPECT_NE(error.find("build.log:1"), std::string::npos) << error;
    EXPECT_NE(error.find("99.0.0"), std::string::npos) << error;
    for (const char* known : {"[TensorRT v8600]", "[TensorRT v101601]", "[TensorRT v110100]"})
    {
        EXPECT_EQ(logError(logWithRow("355.08", known)), "") << known;
    }
}

TEST(InputsValidated, TrtVersionIsReadStrictlyAndOnlyKnownMajorsPass)
{
    const Inputs none;
    for (const char* bad : {"abc", "10..1", "10.", "9.9", "7", "99", "10.x", ".10", "12.0"})
    {
        BuildModeRequest request;
        request.trtVersion = bad;
        EXPECT_THROW(resolveBuildMode(none, request), InputError) << bad;
        EXPECT_THROW(checkBuildModeRequest(request), InputError) << bad;
    }
    for (const char* good : {"8.6", "10", "10.16", "10.16.1", "11", "11.1", "10.99"})
    {
        BuildModeRequest request;
        request.trtVersion = good;
        EXPECT_NO_THROW(checkBuildModeRequest(request)) << good;
    }
    BuildModeRequest request;
    request.trtVersion = "10.16";
    EXPECT_EQ(resolveBuildMode(none, request).trtMinor, 16);
}

TEST(InputsValidated, DiffChecksItsBuildModeOptionsAndEmptyValuesAreErrors)
{
    const fs::path dir = tempDir("validated-diff");
    const fs::path layers = writeFile(dir / "layers.json", readFile(fixture("layer-info/names_only.json")));
    const std::vector<std::string> sides = {"diff", "--baseline", layers.string(), "--candidate", layers.string()};
    auto with = [&](std::vector<std::string> extra)
    {
        std::vector<std::string> arguments = sides;
        arguments.insert(arguments.end(), extra.begin(), extra.end());
        return runCli(arguments);
    };
    CommandResult result = with({"--trt-version", "abc"});
    EXPECT_EQ(result.exitStatus, 2) << result.err;
    EXPECT_NE(result.err.find("--trt-version"), std::string::npos) << result.err;
    result = with({"--gpu", "no-such-gpu"});
    EXPECT_EQ(result.exitStatus, 2) << result.err;
    result = with({"--trt-version", ""});
    EXPECT_EQ(result.exitStatus, 2) << result.err;
    result = with({"--trt-version", "10.16"});
    EXPECT_EQ(result.exitStatus, 0) << result.err;
}

TEST(InputsValidated, ASubcommandTypoNamesTheTypoAndTheSubcommands)
{
    const CommandResult typo = runCli({"diagnos", "model.onnx"});
    EXPECT_EQ(typo.exitStatus, 2);
    EXPECT_NE(typo.err.find("'diagnos' is not a subcommand"), std::string::npos) << typo.err;
    EXPECT_NE(typo.err.find("diagnose"), std::string::npos) << typo.err;
    const CommandResult help = runCli({"diagnose", "--help"});
    EXPECT_EQ(help.exitStatus, 0) << help.err;
}

TEST(InputsValidated, ATruncatedJsonErrorGivesTheByteOffset)
{
    const std::string whole = profileJson("0.2");
    const std::string error = profileError(whole.substr(0, whole.size() - 30));
    EXPECT_NE(error.find("at byte"), std::string::npos) << error;
    EXPECT_EQ(profileError(whole), "");
}

TEST(InputsValidated, DiagnoseOfTimingsAloneSaysNothingCouldBeAnalysed)
{
    const fs::path dir = tempDir("validated-timing");
    const fs::path timing = writeFile(dir / "times.json", readFile(fixture("timing/small.json")));
    CommandResult result = runCli({"diagnose", timing.string()});
    EXPECT_EQ(result.exitStatus, 2) << result.out;
    EXPECT_NE(result.err.find("nothing could be analysed"), std::string::npos) << result.err;
    const fs::path layers = writeFile(dir / "layers.json", readFile(fixture("layer-info/names_only.json")));
    result = runCli({"diagnose", timing.string(), layers.string()});
    EXPECT_EQ(result.exitStatus, 0) << result.err;
}
