// Layer profile JSON reader (trtexec --exportProfile): own fixtures, broken inputs, then the real files.
#include "qdq/readers.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace qdq
{
namespace
{
using test::fixture;
using test::realdata;

std::string errorOf(const std::string& path, const Limits& limits = {})
{
    try
    {
        readProfile(path, limits);
    }
    catch (const InputError& error)
    {
        return error.what();
    }
    return "";
}

std::string errorOfBuffer(const std::string& text)
{
    try
    {
        readProfileFromBuffer(text, "buffer.json");
    }
    catch (const InputError& error)
    {
        return error.what();
    }
    return "";
}

bool hasWarningContaining(const std::vector<ReaderWarning>& warnings, std::string_view text)
{
    return std::any_of(warnings.begin(), warnings.end(),
                       [&](const ReaderWarning& warning) { return warning.message.find(text) != std::string::npos; });
}

const ProfileEntry& entryNamed(const Profile& profile, std::string_view name)
{
    for (const ProfileEntry& entry : profile.entries)
    {
        if (entry.name == name)
        {
            return entry;
        }
    }
    throw std::runtime_error("no profile entry named " + std::string(name));
}

// Relative comparison with the sum computed by hand.
void expectTotal(const Profile& profile, double expected)
{
    EXPECT_NEAR(profile.totalAverageMs(), expected, std::abs(expected) * 1e-6);
}

TEST(ProfileReader, WithMedian)
{
    Profile profile = readProfile(fixture("profile/with_median.json"));
    EXPECT_EQ(profile.iterations, 4);
    EXPECT_TRUE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 4u);
    const ProfileEntry& q = profile.entries[0];
    EXPECT_EQ(q.name, "QuantizeLinear_2");
    EXPECT_DOUBLE_EQ(q.timeMs, 0.24576);
    EXPECT_DOUBLE_EQ(q.averageMs, 0.06144);
    ASSERT_TRUE(q.medianMs.has_value());
    EXPECT_DOUBLE_EQ(*q.medianMs, 0.06144);
    ASSERT_TRUE(q.percentage.has_value());
    EXPECT_DOUBLE_EQ(*q.percentage, 5.60748);
    EXPECT_EQ(q.line, 3u);
    const ProfileEntry& zero = entryNamed(profile, "Reformatting CopyNode for Input Tensor 0 to Conv_8");
    EXPECT_EQ(zero.timeMs, 0.0);
    EXPECT_EQ(zero.averageMs, 0.0);
    EXPECT_EQ(zero.line, 5u);
    expectTotal(profile, 0.06144 + 0.201728 + 0 + 0.83);
    EXPECT_TRUE(profile.warnings.empty());
}

TEST(ProfileReader, WithoutMedianTrt82)
{
    Profile profile = readProfile(fixture("profile/without_median.json"));
    EXPECT_EQ(profile.iterations, 4216);
    EXPECT_FALSE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 3u);
    EXPECT_FALSE(profile.entries[0].medianMs.has_value());
    EXPECT_EQ(profile.entries[2].name, "copied_squeeze_after_(Unnamed Layer* 850) [ElementWise]");
    expectTotal(profile, 0.0122041 + 0.0205223);
    EXPECT_TRUE(profile.warnings.empty());
}

TEST(ProfileReader, MissingFieldsWarn)
{
    Profile profile = readProfile(fixture("profile/missing_fields.json"));
    EXPECT_EQ(profile.iterations, 10);
    ASSERT_EQ(profile.entries.size(), 2u); // the nameless entry and the string are skipped
    EXPECT_EQ(profile.entries[1].name, "MaxPool_2");
    EXPECT_EQ(profile.entries[1].averageMs, 0.0);
    EXPECT_TRUE(hasWarningContaining(profile.warnings, "\"MaxPool_2\" lacks \"averageMs\""));
    EXPECT_TRUE(hasWarningContaining(profile.warnings, "has no \"name\""));
    EXPECT_TRUE(hasWarningContaining(profile.warnings, "a profile element is a string"));
    EXPECT_TRUE(hasWarningContaining(profile.warnings, "1 of 2 profile entries lack \"medianMs\""));
    EXPECT_TRUE(profile.hasMedian);
    const ReaderWarning& first = profile.warnings.front();
    EXPECT_EQ(first.where.line, 4u);
}

TEST(ProfileReader, NoCountElement)
{
    Profile profile = readProfile(fixture("profile/no_count.json"));
    EXPECT_FALSE(profile.iterations.has_value());
    ASSERT_EQ(profile.entries.size(), 1u);
    EXPECT_TRUE(hasWarningContaining(profile.warnings, "no leading {\"count\": N}"));
}

TEST(ProfileReader, EmptyArrayAndLeadingCommaStyle)
{
    Profile empty = readProfileFromBuffer("[\n  { \"count\" : 3 }\n]\n", "empty.json");
    EXPECT_EQ(empty.iterations, 3);
    EXPECT_TRUE(empty.entries.empty());
    EXPECT_EQ(empty.totalAverageMs(), 0.0);
    EXPECT_TRUE(hasWarningContaining(empty.warnings, "no layer entries"));

    Profile bom = readProfileFromBuffer("\xef\xbb\xbf[{ \"count\" : 1 }]", "bom.json");
    EXPECT_EQ(bom.iterations, 1);

    Profile compact = readProfileFromBuffer(
        R"([{"count":2},{"name":"a","timeMs":2,"averageMs":1,"medianMs":1,"percentage":100}])", "compact.json");
    ASSERT_EQ(compact.entries.size(), 1u);
    EXPECT_EQ(compact.entries[0].line, 1u);
}

TEST(ProfileReader, TenMegabyteSingleLine)
{
    std::string text = "[{ \"count\" : 1 }";
    for (int i = 0; i < 100000; ++i)
    {
        text += ", { \"name\" : \"layer_" + std::to_string(i) +
                "_padding_padding_padding\", \"timeMs\" : 0.5, \"averageMs\" : 0.25, \"medianMs\" : 0.25, "
                "\"percentage\" : 0.001 }";
    }
    text += "]";
    ASSERT_GT(text.size(), 10'000'000u);
    auto path = test::writeFile(test::tempDir("profile-long-line") / "long.json", text);
    Profile profile = readProfile(path.string());
    ASSERT_EQ(profile.entries.size(), 100000u);
    EXPECT_EQ(profile.entries.back().line, 1u);
    expectTotal(profile, 25000.0);

    Limits limits;
    limits.maxLineBytes = 1u << 20;
    EXPECT_NE(errorOf(path.string(), limits).find("--max-line-mb"), std::string::npos);
}

TEST(ProfileReaderBroken, NotAnArray)
{
    std::string error = errorOf(fixture("profile/broken/not_array.json"));
    EXPECT_NE(error.find("not_array.json:1: error: expected a JSON array"), std::string::npos) << error;
}

TEST(ProfileReaderBroken, EmptyTruncatedGarbageWrongKind)
{
    EXPECT_NE(errorOf(fixture("layer-info/broken/empty.json")).find("file is empty"), std::string::npos);
    std::string error = errorOf(fixture("profile/broken/truncated.json"));
    EXPECT_NE(error.find("truncated.json:4: error: unterminated string"), std::string::npos) << error;
    EXPECT_NE(errorOf(fixture("layer-info/broken/garbage.bin")).find("binary data"), std::string::npos);
    EXPECT_NE(errorOf(fixture("layer-info/broken/onnx_like.onnx")).find("binary data"), std::string::npos);
    EXPECT_NE(errorOf(fixture("layer-info/broken/build_log.txt")).find("looks like a TensorRT log"), std::string::npos);
    error = errorOf(fixture("timing/small.json"));
    EXPECT_NE(error.find("small.json:1: error: no element has \"name\" or \"count\": not a layer profile"),
              std::string::npos)
        << error;
    error = errorOfBuffer("[\n{ \"count\" : 1 }\n, { \"name\" : \"caf\xff\" }\n]");
    EXPECT_NE(error.find("buffer.json:3: error: invalid UTF-8"), std::string::npos) << error;
    error = errorOfBuffer("[{ \"count\" : 1 }]\n[]");
    EXPECT_NE(error.find("buffer.json:2: error: unexpected '['"), std::string::npos) << error;
}

TEST(ProfileReaderBroken, HugeNumberAndSyntax)
{
    std::string error = errorOf(fixture("profile/broken/huge_number.json"));
    EXPECT_NE(error.find("huge_number.json:3: error: number 1e999 is out of range"), std::string::npos) << error;
    error = errorOf(fixture("profile/broken/missing_comma.json"));
    EXPECT_NE(error.find("missing_comma.json:3: error: expected ',' or '}' after object member, found '\"'"),
              std::string::npos)
        << error;
}

TEST(ProfileReaderBroken, DuplicateKeysWarn)
{
    Profile profile = readProfileFromBuffer(
        "[{ \"count\" : 1 }\n, { \"name\" : \"a\", \"timeMs\" : 1, \"averageMs\" : 1, \"averageMs\" : 2 }]",
        "dup.json");
    ASSERT_EQ(profile.entries.size(), 1u);
    EXPECT_EQ(profile.entries[0].averageMs, 2.0);
    EXPECT_TRUE(hasWarningContaining(profile.warnings, "duplicate key \"averageMs\""));
    EXPECT_EQ(profile.warnings[0].where.line, 2u);
}

// ---------------------------------------------------------------------------------------------------------------
// Real files. Counts and sums computed by hand with python3 json (sum of averageMs over all entries after count).

TEST(RealDataProfile, DetrInt8Implicit)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(realdata("detr-r50-int8-implicit/detr-profile.json"));
    EXPECT_EQ(profile.iterations, 641);
    EXPECT_TRUE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 840u);
    EXPECT_EQ(profile.entries[0].name, "/model/model/Transpose_1_output_0");
    EXPECT_EQ(profile.entries[0].timeMs, 0.0);
    EXPECT_EQ(profile.entries[0].line, 3u);
    std::size_t zero = static_cast<std::size_t>(std::count_if(
        profile.entries.begin(), profile.entries.end(), [](const ProfileEntry& entry) { return entry.timeMs == 0.0; }));
    EXPECT_EQ(zero, 340u);
    expectTotal(profile, 4.16160691);
    EXPECT_TRUE(profile.warnings.empty());
}

TEST(RealDataProfile, FuzzylabsAlexnetTrt10)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(realdata("fuzzylabs-alexnet-fp16-trt10/alexnet_fp16.profile.json"));
    EXPECT_EQ(profile.iterations, 14590);
    EXPECT_TRUE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 14u);
    EXPECT_DOUBLE_EQ(profile.entries[0].averageMs, 0.00926341);
    expectTotal(profile, 0.52417137);
}

TEST(RealDataProfile, FuzzylabsResnet18Trt10)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(realdata("fuzzylabs-resnet18-fp16-trt10/resnet18_fp16.profile.json"));
    EXPECT_EQ(profile.iterations, 21071);
    EXPECT_TRUE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 26u);
    EXPECT_EQ(profile.entries[0].name, "Reformatting CopyNode for Input Tensor 0 to /conv1/Conv + /relu/Relu");
    EXPECT_DOUBLE_EQ(profile.entries[0].averageMs, 0.00800422);
    expectTotal(profile, 0.36351572);
}

TEST(RealDataProfile, LixAs)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(realdata("lix-engine-analysis-as-fp16/profile_.json"));
    EXPECT_EQ(profile.iterations, 839);
    EXPECT_TRUE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 104u);
    EXPECT_EQ(profile.entries[0].name, "{ForeignNode[/bev_decoder/Constant_output_0.../bev_decoder/Where_13]}");
    EXPECT_DOUBLE_EQ(profile.entries[0].timeMs, 23.7572);
    EXPECT_DOUBLE_EQ(*profile.entries[0].medianMs, 0.02848);
    expectTotal(profile, 18.51414078);
}

TEST(RealDataProfile, LixDmtMyelin)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(realdata("lix-engine-analysis-dmt-fp16/profile_tofp16.json"));
    EXPECT_EQ(profile.iterations, 501);
    EXPECT_TRUE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 1309u);
    EXPECT_EQ(profile.entries[0].name, "Reformatting CopyNode for Network Input voxel_num_points");
    expectTotal(profile, 42.12421082);
}

TEST(RealDataProfile, YoloOrinTrt852)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(realdata("trex-notebooks-yolo-orin-trt852/profile.json"));
    EXPECT_EQ(profile.iterations, 11);
    EXPECT_TRUE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 86u);
    EXPECT_EQ(profile.entries[0].name, "[trainStation1]");
    EXPECT_DOUBLE_EQ(profile.entries[0].averageMs, 1.52);
    expectTotal(profile, 403.8158017);
}

TEST(RealDataProfile, TrexResnetA100Fp32)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(realdata("trex-pt-resnet-a100-fp32/resnet.onnx.engine.profile.json"));
    EXPECT_EQ(profile.iterations, 1);
    EXPECT_TRUE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 32u);
    EXPECT_EQ(profile.entries[0].name, "Conv_0 + Relu_1");
    EXPECT_DOUBLE_EQ(profile.entries[0].averageMs, 0.52224);
    expectTotal(profile, 2.123776);
}

TEST(RealDataProfile, TrexResnetA100Fp16)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(realdata("trex-pt-resnet-a100-fp16/resnet.onnx.engine.profile.json"));
    EXPECT_EQ(profile.iterations, 1);
    ASSERT_EQ(profile.entries.size(), 36u);
    EXPECT_DOUBLE_EQ(profile.entries[0].averageMs, 0.080896);
    expectTotal(profile, 1.016832);
}

TEST(RealDataProfile, TrexResnetA100Qat)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.profile.json"));
    EXPECT_EQ(profile.iterations, 1);
    EXPECT_TRUE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 37u);
    EXPECT_EQ(profile.entries[0].name, "QuantizeLinear_2");
    EXPECT_DOUBLE_EQ(profile.entries[0].timeMs, 0.06144);
    EXPECT_DOUBLE_EQ(*profile.entries[0].percentage, 5.60748);
    expectTotal(profile, 1.09568);
}

TEST(RealDataProfile, TrexResnetA100QatResidual)
{
    REQUIRE_SHARED();
    Profile profile =
        readProfile(realdata("trex-pt-resnet-a100-qat-residual/resnet-qat-residual.onnx.engine.profile.json"));
    EXPECT_EQ(profile.iterations, 1);
    ASSERT_EQ(profile.entries.size(), 26u);
    EXPECT_DOUBLE_EQ(profile.entries[0].averageMs, 0.095232);
    expectTotal(profile, 0.731136);
}

TEST(RealDataProfile, TrexResnetA100QatResidualQgap)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(
        realdata("trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap.onnx.engine.profile.json"));
    EXPECT_EQ(profile.iterations, 1);
    ASSERT_EQ(profile.entries.size(), 24u);
    expectTotal(profile, 0.672768);
}

TEST(RealDataProfile, TrexMobilenetQatTrt84)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(realdata("trex-tests-mobilenet-qat/mobilenet.qat.onnx.engine.profile.json"));
    EXPECT_EQ(profile.iterations, 6610);
    EXPECT_TRUE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 73u);
    EXPECT_DOUBLE_EQ(profile.entries[0].averageMs, 0.00474854);
    expectTotal(profile, 0.47038876);
}

TEST(RealDataProfile, TrexMobilenetQatTrt82NoMedian)
{
    REQUIRE_SHARED();
    Profile profile = readProfile(realdata("trex-tests-mobilenet-qat-2022-04/mobilenet.qat.onnx.engine.profile.json"));
    EXPECT_EQ(profile.iterations, 4216);
    EXPECT_FALSE(profile.hasMedian);
    ASSERT_EQ(profile.entries.size(), 85u);
    EXPECT_EQ(profile.entries[0].name, "QuantizeLinear_2");
    EXPECT_DOUBLE_EQ(profile.entries[0].timeMs, 51.4526);
    EXPECT_DOUBLE_EQ(profile.entries[0].averageMs, 0.0122041);
    EXPECT_FALSE(profile.entries[0].medianMs.has_value());
    expectTotal(profile, 0.64706246);
    EXPECT_TRUE(profile.warnings.empty());
}

} // namespace
} // namespace qdq

namespace qdq
{
namespace
{
TEST(ProfileReaderBroken, EveryTruncationAndCorruptionFailsCleanly)
{
    const std::string text = test::readFile(test::fixture("profile/with_median.json"));
    const std::size_t closing = text.rfind(']');
    for (std::size_t length = 0; length <= closing; ++length)
    {
        EXPECT_THROW(readProfileFromBuffer(std::string_view(text).substr(0, length), "cut.json"), InputError) << length;
    }
    std::string corrupt = text;
    const char replacements[] = {'\0', '"', '{', ']', '\\', ',', '\xff', '\n', '9', 'e'};
    for (std::size_t at = 0; at < text.size(); ++at)
    {
        for (char replacement : replacements)
        {
            corrupt[at] = replacement;
            try
            {
                readProfileFromBuffer(corrupt, "corrupt.json");
            }
            catch (const InputError&)
            {
            }
            corrupt[at] = text[at];
        }
    }
}
} // namespace
} // namespace qdq
