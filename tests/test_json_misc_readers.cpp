// The JSON pull tokenizer itself, and the two small JSON readers: timing (--exportTimes) and TREx metadata.
#include "../parsers/json_pull.h"
#include "qdq/readers.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ostream>
#include <string>
#include <string_view>

namespace qdq
{
namespace
{
using json::PullParser;
using json::Token;
using test::fixture;
using test::realdata;

// All tokens of a text, as "kind:text" strings (text for keys, strings and numbers).
std::vector<std::string> tokensOf(std::string_view text, const Limits& limits = {})
{
    PullParser parser(text, "t.json", limits);
    std::vector<std::string> out;
    for (Token token = parser.next(); token != Token::kEnd; token = parser.next())
    {
        switch (token)
        {
        case Token::kObjectBegin:
            out.emplace_back("{");
            break;
        case Token::kObjectEnd:
            out.emplace_back("}");
            break;
        case Token::kArrayBegin:
            out.emplace_back("[");
            break;
        case Token::kArrayEnd:
            out.emplace_back("]");
            break;
        case Token::kKey:
            out.push_back("K:" + std::string(parser.text()));
            break;
        case Token::kString:
            out.push_back("S:" + std::string(parser.text()));
            break;
        case Token::kNumber:
            out.push_back("N:" + std::string(parser.text()));
            break;
        case Token::kTrue:
            out.emplace_back("true");
            break;
        case Token::kFalse:
            out.emplace_back("false");
            break;
        case Token::kNull:
            out.emplace_back("null");
            break;
        case Token::kEnd:
            break;
        }
    }
    parser.expectEndOfInput();
    return out;
}

std::string tokenError(std::string_view text, const Limits& limits = {})
{
    try
    {
        tokensOf(text, limits);
    }
    catch (const InputError& error)
    {
        return error.what();
    }
    return "";
}

TEST(JsonPull, TokensOfAllKinds)
{
    EXPECT_EQ(tokensOf(R"( {"a" : [1, -2.5e3, 0, true, false, null, "x"], "b": {}, "c": []} )"),
              (std::vector<std::string>{"{", "K:a", "[", "N:1", "N:-2.5e3", "N:0", "true", "false", "null", "S:x", "]",
                                        "K:b", "{", "}", "K:c", "[", "]", "}"}));
    EXPECT_EQ(tokensOf("\"only\""), (std::vector<std::string>{"S:only"}));
    EXPECT_EQ(tokensOf("[nan, -nan, inf, -inf, NaN, Infinity, -Infinity]").size(), 9u);
}

TEST(JsonPull, StringEscapesAndSurrogates)
{
    EXPECT_EQ(tokensOf(R"("\"\\\/\b\f\n\r\t")"), (std::vector<std::string>{"S:\"\\/\b\f\n\r\t"}));
    EXPECT_EQ(tokensOf(R"("\u001e\u001f\u0041\u00e9")"), (std::vector<std::string>{"S:\x1e\x1f"
                                                                                   "A\xc3\xa9"}));
    EXPECT_EQ(tokensOf(R"("\uD834\uDD1E")"), (std::vector<std::string>{"S:\xf0\x9d\x84\x9e"}));
    EXPECT_NE(tokenError(R"("\uD834x")").find("high surrogate without a low surrogate"), std::string::npos);
    EXPECT_NE(tokenError(R"("\uDD1E")").find("unpaired low surrogate"), std::string::npos);
    EXPECT_NE(tokenError(R"("\u12G4")").find("4 hex digits"), std::string::npos);
    EXPECT_NE(tokenError(R"("\u12")").find("\\u escape"), std::string::npos);
    EXPECT_NE(tokenError("\"a\x01\"").find("control character byte 0x01"), std::string::npos);
}

TEST(JsonPull, RejectsInvalidUtf8InStrings)
{
    EXPECT_NE(tokenError("\"\xc3\x28\"").find("invalid UTF-8"), std::string::npos);         // bad continuation
    EXPECT_NE(tokenError("\"\xc0\xaf\"").find("invalid UTF-8"), std::string::npos);         // overlong
    EXPECT_NE(tokenError("\"\xed\xa0\x80\"").find("invalid UTF-8"), std::string::npos);     // encoded surrogate
    EXPECT_NE(tokenError("\"\xf4\x90\x80\x80\"").find("invalid UTF-8"), std::string::npos); // > U+10FFFF
    EXPECT_NE(tokenError("\"\xe2\x82\"").find("invalid UTF-8"), std::string::npos);         // truncated sequence
    EXPECT_EQ(tokenError("\"\xe2\x82\xac \xf0\x9f\x98\x80\""), "");
}

TEST(JsonPull, NumbersAndTrailingGarbage)
{
    EXPECT_NE(tokenError("[1.]").find("digit after '.'"), std::string::npos);
    EXPECT_NE(tokenError("[1e]").find("exponent"), std::string::npos);
    EXPECT_NE(tokenError("[-]").find("digit after '-'"), std::string::npos);
    EXPECT_NE(tokenError("[+1]").find("expected a JSON value, found '+'"), std::string::npos);
    EXPECT_NE(tokenError("{} x").find("after the end of the JSON value"), std::string::npos);
    EXPECT_NE(tokenError("[nulls]").find("unknown word"), std::string::npos);

    PullParser parser("[1e999, 1e-999, 12345678901234567890, 42]", "n.json", Limits{});
    ASSERT_EQ(parser.next(), Token::kArrayBegin);
    ASSERT_EQ(parser.next(), Token::kNumber);
    EXPECT_THROW(parser.numberValue(), InputError);
    ASSERT_EQ(parser.next(), Token::kNumber);
    EXPECT_EQ(parser.numberValue(), 0.0);
    ASSERT_EQ(parser.next(), Token::kNumber);
    std::int64_t integer = 0;
    EXPECT_FALSE(parser.integerValue(integer));
    EXPECT_DOUBLE_EQ(parser.numberValue(), 12345678901234567890.0);
    ASSERT_EQ(parser.next(), Token::kNumber);
    EXPECT_TRUE(parser.integerValue(integer));
    EXPECT_EQ(integer, 42);
}

TEST(JsonPull, ConcatenatedValuesAndSeek)
{
    std::string_view text = "{\"a\": 1}\n{\"b\": [2]}\n";
    PullParser parser(text, "c.json", Limits{});
    std::vector<std::string> keys;
    while (!parser.atEndOfInput())
    {
        parser.seek(parser.position());
        Token first = parser.next();
        ASSERT_EQ(first, Token::kObjectBegin);
        keys.emplace_back(parser.valueText(first));
        EXPECT_EQ(parser.next(), Token::kEnd);
    }
    EXPECT_EQ(keys, (std::vector<std::string>{"{\"a\":1}", "{\"b\":[2]}"}));
}

TEST(JsonPull, ValueTextAndSkip)
{
    PullParser parser(R"({"x": {"k": ["a\"b", 1, true, null, {}], "m": {"n": -0.5}}, "y": "\u001e"})", "v.json",
                      Limits{});
    ASSERT_EQ(parser.next(), Token::kObjectBegin);
    ASSERT_EQ(parser.next(), Token::kKey);
    Token value = parser.next();
    EXPECT_EQ(parser.valueText(value), R"({"k":["a\"b",1,true,null,{}],"m":{"n":-0.5}})");
    ASSERT_EQ(parser.next(), Token::kKey);
    value = parser.next();
    EXPECT_EQ(parser.valueText(value), "\x1e");
    EXPECT_EQ(parser.next(), Token::kObjectEnd);
    EXPECT_EQ(parser.next(), Token::kEnd);
    EXPECT_EQ(parser.next(), Token::kEnd);
}

TEST(JsonPull, DepthLimitWithoutRecursion)
{
    std::string deep(100000, '[');
    std::string error = tokenError(deep);
    EXPECT_NE(error.find("t.json:1: error: JSON nesting deeper than 256 (raise it with --max-json-depth)"),
              std::string::npos)
        << error;
    Limits limits;
    limits.maxJsonDepth = 200000;
    // Within the limit the tokenizer goes all the way down (no recursion) and reports the truncation.
    error = tokenError(deep, limits);
    EXPECT_NE(error.find("unexpected end of input"), std::string::npos) << error;
    EXPECT_EQ(tokensOf(std::string(50000, '[') + std::string(50000, ']'), limits).size(), 100000u);
}

TEST(JsonPull, LinesAndLineLimit)
{
    std::string text = "[\n1,\n2,\n\"" + std::string(3000, 'x') + "\"\n]";
    PullParser parser(text, "l.json", Limits{});
    EXPECT_EQ(parser.lineOf(0), 1u);
    EXPECT_EQ(parser.lineOf(2), 2u);
    EXPECT_EQ(parser.lineOf(text.size()), 5u);
    EXPECT_EQ(parser.lineOf(3), 2u); // going back works too
    Limits limits;
    limits.maxLineBytes = 1000;
    PullParser limited(text, "l.json", limits);
    try
    {
        limited.checkAllLines();
        FAIL() << "no error";
    }
    catch (const InputError& error)
    {
        EXPECT_EQ(error.where().line, 4u);
        EXPECT_NE(error.message().find("--max-line-mb"), std::string::npos);
    }
}

TEST(JsonPull, RequireJsonStart)
{
    auto errorFor = [](std::string_view text)
    {
        try
        {
            json::requireJsonStart(text, "s.json", "{[", "JSON", Limits{});
        }
        catch (const InputError& error)
        {
            return std::string(error.what());
        }
        return std::string();
    };
    EXPECT_EQ(errorFor("\xef\xbb\xbf  {}"), ""); // byte order mark
    EXPECT_NE(errorFor("").find("file is empty"), std::string::npos);
    EXPECT_NE(errorFor("\n\n  \n").find("only whitespace"), std::string::npos);
    EXPECT_NE(errorFor("\n\x08\x01\x12").find("s.json: byte 1: error: binary data"), std::string::npos);
    EXPECT_NE(errorFor("[04/25/2026-00:54:26] [I] TensorRT version").find("TensorRT log"), std::string::npos);
    EXPECT_NE(errorFor("&&&& RUNNING TensorRT.trtexec").find("TensorRT log"), std::string::npos);
    EXPECT_NE(errorFor("[I] [TRT] Loaded engine").find("TensorRT log"), std::string::npos);
    EXPECT_NE(errorFor("\nname,value\n").find("s.json:2: error: not JSON"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------------------------
// Timing JSON

std::string timingError(const std::string& path)
{
    try
    {
        readTiming(path);
    }
    catch (const InputError& error)
    {
        return error.what();
    }
    return "";
}

TEST(TimingReader, Summary)
{
    TimingSummary summary = readTiming(fixture("timing/small.json"));
    EXPECT_EQ(summary.records, 4u);
    EXPECT_DOUBLE_EQ(summary.meanComputeMs, (0.5 + 0.25 + 1 + 0.75) / 4);
    EXPECT_DOUBLE_EQ(summary.medianComputeMs, (0.5 + 0.75) / 2);
    EXPECT_DOUBLE_EQ(summary.meanLatencyMs, (0.6 + 0.3 + 1.2 + 0.9) / 4);
    EXPECT_TRUE(summary.warnings.empty());
}

TEST(TimingReader, MissingFieldsWarn)
{
    TimingSummary summary = readTiming(fixture("timing/missing_fields.json"));
    EXPECT_EQ(summary.records, 3u);
    EXPECT_DOUBLE_EQ(summary.meanComputeMs, 3.0);
    EXPECT_DOUBLE_EQ(summary.medianComputeMs, 3.0);
    EXPECT_DOUBLE_EQ(summary.meanLatencyMs, 4.0);
    ASSERT_EQ(summary.warnings.size(), 1u);
    EXPECT_EQ(summary.warnings[0].where.line, 3u);
    EXPECT_NE(summary.warnings[0].message.find("1 records lack \"computeMs\" and 1 lack \"latencyMs\""),
              std::string::npos);
}

TEST(TimingReader, BrokenInputs)
{
    EXPECT_NE(timingError(fixture("layer-info/broken/empty.json")).find("file is empty"), std::string::npos);
    EXPECT_NE(timingError(fixture("layer-info/broken/garbage.bin")).find("binary data"), std::string::npos);
    EXPECT_NE(timingError(fixture("layer-info/trt84_detailed.json"))
                  .find("trt84_detailed.json:1: error: expected a JSON array"),
              std::string::npos);
    EXPECT_NE(timingError(fixture("profile/broken/truncated.json")).find("unterminated string"), std::string::npos);
    EXPECT_NE(timingError(fixture("layer-info/broken/build_log.txt")).find("TensorRT log"), std::string::npos);
    EXPECT_NE(timingError(fixture("metadata/device.metadata.json")).find("not a timing JSON"), std::string::npos);
    EXPECT_NE(timingError(fixture("profile/with_median.json")).find("not a timing JSON"), std::string::npos);

    std::string text = "[";
    for (int i = 0; i < 70000; ++i)
    {
        text +=
            (i == 0 ? "" : ", ") +
            std::string(
                R"({ "startEnqMs" : 4.19666, "endEnqMs" : 4.28702, "startH2dMs" : 4.17414, "endH2dMs" : 4.17414, "h2dMs" : 0, "computeMs" : 0.5, "d2hMs" : 0, "latencyMs" : 0.5 })");
    }
    text += "]";
    ASSERT_GT(text.size(), 10'000'000u);
    auto path = test::writeFile(test::tempDir("timing-long-line") / "long.json", text);
    TimingSummary summary = readTiming(path.string());
    EXPECT_EQ(summary.records, 70000u);
    EXPECT_DOUBLE_EQ(summary.medianComputeMs, 0.5);
}

struct RealTiming
{
    const char* path;
    std::size_t records;
    double meanCompute;
    double medianCompute;
    double meanLatency;
};

// Computed by hand: python3 json + statistics.fmean / statistics.median.
const RealTiming kRealTimings[] = {
    {"fuzzylabs-alexnet-fp16-trt10/alexnet_fp16.timing.json", 6039, 0.495324283325, 0.495605, 0.495324283325},
    {"fuzzylabs-resnet18-fp16-trt10/resnet18_fp16.timing.json", 10742, 0.276980672407, 0.276855, 0.276980672407},
    {"trex-pt-resnet-a100-fp16/resnet.onnx.engine.timing.json", 3698, 0.862354497025, 0.862183, 0.862354497025},
    {"trex-pt-resnet-a100-fp32/resnet.onnx.engine.timing.json", 1600, 1.9982015, 1.99072, 1.9982015},
    {"trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap.onnx.engine.timing.json", 6366, 0.499766854068,
     0.499756, 0.499766854068},
    {"trex-pt-resnet-a100-qat-residual/resnet-qat-residual.onnx.engine.timing.json", 5833, 0.545708388822, 0.545776,
     0.545708388822},
    {"trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.timing.json", 3614, 0.882261828722, 0.882568, 0.882261828722},
    {"trex-tests-mobilenet-qat-2022-04/mobilenet.qat.onnx.engine.timing.json", 6580, 0.477990457599, 0.447998,
     0.477990457599},
    {"trex-tests-mobilenet-qat/mobilenet.qat.onnx.engine.timing.json", 8945, 0.356061545668, 0.351318, 0.356061545668},
};

// Names a case after its file in gtest's and ctest's output instead of printing the struct's bytes.
void PrintTo(const RealTiming& timing, std::ostream* out)
{
    *out << timing.path;
}

//! A gtest parameter name from a realdata path: letters and digits kept, everything else '_'.
std::string nameFromPath(std::string_view path)
{
    std::string name(path);
    for (char& c : name)
    {
        if (!std::isalnum(static_cast<unsigned char>(c)))
        {
            c = '_';
        }
    }
    return name;
}

class RealDataTiming : public ::testing::TestWithParam<RealTiming>
{
};

TEST_P(RealDataTiming, Summary)
{
    REQUIRE_SHARED();
    const RealTiming& expected = GetParam();
    TimingSummary summary = readTiming(realdata(expected.path));
    EXPECT_EQ(summary.records, expected.records);
    EXPECT_NEAR(summary.meanComputeMs, expected.meanCompute, expected.meanCompute * 1e-9);
    EXPECT_NEAR(summary.medianComputeMs, expected.medianCompute, expected.medianCompute * 1e-9);
    EXPECT_NEAR(summary.meanLatencyMs, expected.meanLatency, expected.meanLatency * 1e-9);
    EXPECT_TRUE(summary.warnings.empty());
}

INSTANTIATE_TEST_SUITE_P(Files, RealDataTiming, ::testing::ValuesIn(kRealTimings),
                         [](const auto& param) { return nameFromPath(param.param.path); });

// ---------------------------------------------------------------------------------------------------------------
// TREx metadata JSON

std::string field(const MetadataDocument& document, std::string_view key)
{
    for (const auto& [name, value] : document.fields)
    {
        if (name == key)
        {
            return value;
        }
    }
    return "<absent>";
}

std::string metadataError(const std::string& path)
{
    try
    {
        readMetadata(path);
    }
    catch (const InputError& error)
    {
        return error.what();
    }
    return "";
}

TEST(MetadataReader, BuildMetadata)
{
    MetadataDocument document = readMetadata(fixture("metadata/build.metadata.json"));
    EXPECT_EQ(document.variant, "build-metadata");
    ASSERT_EQ(document.fields.size(), 7u);
    EXPECT_EQ(document.fields[0].first, "model_options.Format");
    EXPECT_EQ(document.fields[0].second, "ONNX");
    EXPECT_EQ(field(document, "build_options.Precision"), "FP32+FP16+INT8");
    EXPECT_EQ(field(document, "build_options.Max batch"), "explicit batch");
}

TEST(MetadataReader, ProfileMetadata)
{
    MetadataDocument document = readMetadata(fixture("metadata/profile.metadata.json"));
    EXPECT_EQ(document.variant, "profile-metadata");
    EXPECT_EQ(document.fields.size(), 8u);
    EXPECT_EQ(field(document, "performance_summary.Throughput"), "2012.22");
    EXPECT_EQ(field(document, "performance_summary.Latency"), "[0.490234,0.500977]");
    EXPECT_EQ(field(document, "device_information.Compute Capability"), "8.6");
    EXPECT_EQ(field(document, "inference_options.CUDA Graph"), "Enabled");
}

TEST(MetadataReader, DeviceMetadata)
{
    MetadataDocument document = readMetadata(fixture("metadata/device.metadata.json"));
    EXPECT_EQ(document.variant, "device-metadata");
    EXPECT_EQ(document.fields.size(), 6u);
    EXPECT_EQ(field(document, "Name"), "NVIDIA A100 80GB PCIe");
    EXPECT_EQ(field(document, "CUDA_VERSION"), "[11,6,0]");
    EXPECT_EQ(field(document, "TotalMemory"), "84929216512");

    auto path = test::writeFile(test::tempDir("metadata-two-devices") / "two.json",
                                R"([{"Name": "GPU A", "SMs": 1}, {"Name": "GPU B", "SMs": 2}])");
    MetadataDocument two = readMetadata(path.string());
    EXPECT_EQ(field(two, "0.Name"), "GPU A");
    EXPECT_EQ(field(two, "1.SMs"), "2");
}

TEST(MetadataReader, WrongKindAndBroken)
{
    std::string error = metadataError(fixture("metadata/unknown.json"));
    EXPECT_NE(error.find("unknown.json:1: error: none of model_options"), std::string::npos) << error;
    EXPECT_NE(metadataError(fixture("layer-info/trt84_detailed.json")).find("this is layer information"),
              std::string::npos);
    EXPECT_NE(metadataError(fixture("profile/with_median.json")).find("not a device-metadata list"), std::string::npos);
    EXPECT_NE(metadataError(fixture("timing/small.json")).find("not a device-metadata list"), std::string::npos);
    EXPECT_NE(metadataError(fixture("layer-info/broken/empty.json")).find("file is empty"), std::string::npos);
    EXPECT_NE(metadataError(fixture("layer-info/broken/onnx_like.onnx")).find("binary data"), std::string::npos);
    EXPECT_NE(metadataError(fixture("layer-info/broken/truncated.json")).find("truncated"), std::string::npos);

    std::string deep = "{\"build_options\": " + std::string(100000, '[');
    auto path = test::writeFile(test::tempDir("metadata-deep") / "deep.json", deep);
    EXPECT_NE(metadataError(path.string()).find("--max-json-depth"), std::string::npos);
}

struct RealMetadata
{
    const char* path;
    const char* variant;
    std::size_t fields;
    const char* key1;
    const char* value1;
    const char* key2;
    const char* value2;
};

// Read by hand with python3 json (fields = leaf count after flattening objects; arrays count as one field).
const RealMetadata kRealMetadata[] = {
    {"fuzzylabs-alexnet-fp16-trt10/alexnet_fp16.build.metadata.json", "build-metadata", 56, "build_options.Precision",
     "FP32+FP16", "model_options.Model", "models/alexnet/alexnet_fp16.onnx"},
    {"fuzzylabs-alexnet-fp16-trt10/alexnet_fp16.profile.metadata.json", "profile-metadata", 41,
     "device_information.Selected Device", "NVIDIA GeForce RTX 3060 Laptop GPU", "performance_summary.Throughput",
     "2012.22"},
    {"fuzzylabs-resnet18-fp16-trt10/resnet18_fp16.build.metadata.json", "build-metadata", 56, "build_options.Precision",
     "FP32+FP16", "model_options.Model", "models/resnet18/resnet18_fp16.onnx"},
    {"fuzzylabs-resnet18-fp16-trt10/resnet18_fp16.profile.metadata.json", "profile-metadata", 41,
     "device_information.Selected Device", "NVIDIA GeForce RTX 3060 Laptop GPU", "performance_summary.Throughput",
     "3580.05"},
    {"trex-pt-resnet-a100-fp16/resnet.onnx.engine.build.metadata.json", "build-metadata", 7, "build_options.Precision",
     "FP32+FP16", "model_options.Model", "./examples/pytorch/resnet/generated/resnet.onnx"},
    {"trex-pt-resnet-a100-fp16/resnet.onnx.engine.metadata.json", "device-metadata", 88, "Name",
     "NVIDIA A100 80GB PCIe", "CUDA_VERSION", "[11,6,0]"},
    {"trex-pt-resnet-a100-fp16/resnet.onnx.engine.profile.metadata.json", "profile-metadata", 31,
     "device_information.Selected Device", "NVIDIA A100 80GB PCIe", "performance_summary.Throughput", "1155.36"},
    {"trex-pt-resnet-a100-fp32/resnet.onnx.engine.build.metadata.json", "build-metadata", 7, "build_options.Precision",
     "FP32", "model_options.Model", "./examples/pytorch/resnet/generated/resnet.onnx"},
    {"trex-pt-resnet-a100-fp32/resnet.onnx.engine.metadata.json", "device-metadata", 88, "Name",
     "NVIDIA A100 80GB PCIe", "ComputeCapability", "[8,0]"},
    {"trex-pt-resnet-a100-fp32/resnet.onnx.engine.profile.metadata.json", "profile-metadata", 31,
     "device_information.Selected Device", "NVIDIA A100 80GB PCIe", "performance_summary.Throughput", "499.294"},
    {"trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap.onnx.engine.build.metadata.json", "build-metadata",
     7, "build_options.Precision", "FP32+FP16+INT8", "model_options.Model",
     "./examples/pytorch/resnet/generated/resnet-qat-residual-qgap.onnx"},
    {"trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap.onnx.engine.metadata.json", "device-metadata", 88,
     "Name", "NVIDIA A100 80GB PCIe", "CUDA_VERSION", "[11,6,0]"},
    {"trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap.onnx.engine.profile.metadata.json",
     "profile-metadata", 31, "device_information.Selected Device", "NVIDIA A100 80GB PCIe",
     "performance_summary.Throughput", "1990.03"},
    {"trex-pt-resnet-a100-qat-residual/resnet-qat-residual.onnx.engine.build.metadata.json", "build-metadata", 7,
     "build_options.Precision", "FP32+FP16+INT8", "model_options.Model",
     "./examples/pytorch/resnet/generated/resnet-qat-residual.onnx"},
    {"trex-pt-resnet-a100-qat-residual/resnet-qat-residual.onnx.engine.metadata.json", "device-metadata", 88, "Name",
     "NVIDIA A100 80GB PCIe", "CUDA_VERSION", "[11,6,0]"},
    {"trex-pt-resnet-a100-qat-residual/resnet-qat-residual.onnx.engine.profile.metadata.json", "profile-metadata", 31,
     "device_information.Selected Device", "NVIDIA A100 80GB PCIe", "performance_summary.Throughput", "1823.37"},
    {"trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.build.metadata.json", "build-metadata", 7,
     "build_options.Precision", "FP32+FP16+INT8", "model_options.Model",
     "./examples/pytorch/resnet/generated/resnet-qat.onnx"},
    {"trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.metadata.json", "device-metadata", 88, "Name",
     "NVIDIA A100 80GB PCIe", "ComputeCapability", "[8,0]"},
    {"trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.profile.metadata.json", "profile-metadata", 31,
     "performance_summary.Latency", "[0.878601,0.889893,0.882274,0.882568,0.884766]", "performance_summary.Throughput",
     "1130.01"},
    {"trex-tests-mobilenet-qat-2022-04/mobilenet.qat.onnx.engine.metadata.json", "device-metadata", 88, "Name",
     "NVIDIA TITAN RTX", "ComputeCapability", "[7,5]"},
    {"trex-tests-mobilenet-qat/mobilenet.qat.onnx.engine.build.metadata.json", "build-metadata", 7,
     "build_options.Precision", "FP32+FP16+INT8", "model_options.Model",
     "trt-engine-explorer-OSS/tests/inputs/mobilenet.qat.onnx"},
    {"trex-tests-mobilenet-qat/mobilenet.qat.onnx.engine.profile.metadata.json", "profile-metadata", 31,
     "device_information.Selected Device", "NVIDIA TITAN RTX", "performance_summary.Throughput", "2829.15"},
};

void PrintTo(const RealMetadata& metadata, std::ostream* out)
{
    *out << metadata.path;
}

class RealDataMetadata : public ::testing::TestWithParam<RealMetadata>
{
};

TEST_P(RealDataMetadata, Fields)
{
    REQUIRE_SHARED();
    const RealMetadata& expected = GetParam();
    MetadataDocument document = readMetadata(realdata(expected.path));
    EXPECT_EQ(document.variant, expected.variant);
    EXPECT_EQ(document.fields.size(), expected.fields);
    EXPECT_EQ(field(document, expected.key1), expected.value1);
    EXPECT_EQ(field(document, expected.key2), expected.value2);
    EXPECT_TRUE(document.warnings.empty());
}

INSTANTIATE_TEST_SUITE_P(Files, RealDataMetadata, ::testing::ValuesIn(kRealMetadata),
                         [](const auto& param) { return nameFromPath(param.param.path); });

} // namespace
} // namespace qdq
