// TensorRT implicit-INT8 calibration caches and dynamic-range files (include/qdq/calibration_cache.h): the real caches
// of ../shared/calibration with their models and the verbose log of a build that read one, the header's two version
// encodings, the four algorithms, range files, and broken files (each refused naming its line, beside a near-identical
// file that reads).
#include "test_support.h"

#include "qdq/calibration_cache.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

using namespace qdq;
using namespace qdq::test;

namespace
{

CalibrationCache fromText(const std::string& text)
{
    return readCalibrationCacheFromBuffer(text, "test.cache");
}

//! The InputError's "path:line: message" for text, or "" when it reads.
std::string errorOf(const std::string& text)
{
    try
    {
        fromText(text);
    }
    catch (const InputError& error)
    {
        return error.where().describe() + ": " + error.message();
    }
    return "";
}

float floatOfBits(std::uint32_t bits)
{
    float value = 0;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
}

//! How many of the cache's tensors the model has (node outputs, inputs, initializers), and how many of the others are
//! TensorRT-internal names.
std::pair<std::size_t, std::size_t> namedInModel(const CalibrationCache& cache, const OnnxGraph& graph)
{
    std::size_t inModel = 0;
    std::size_t internal = 0;
    for (const auto& scale : cache.scales)
    {
        if (graph.tensors.find(TensorKey(scale.tensor)) != OnnxGraph::kNone)
        {
            ++inModel;
        }
        else if (scale.tensor.rfind("(Unnamed Layer* ", 0) == 0)
        {
            ++internal;
        }
    }
    return {inModel, internal};
}

} // namespace

TEST(RealDataCalibrationCache, DepthwiseCnnCacheOfTensorRt841)
{
    REQUIRE_SHARED_PATH(dir, "calibration/g5-cnn-depthwise-trt841");
    const CalibrationCache cache = readCalibrationCache((dir / "calibration.cache").string());
    EXPECT_EQ(cache.format, CalibrationCache::Format::kCache);
    EXPECT_EQ(cache.header, "TRT-8401-EntropyCalibration2");
    EXPECT_EQ(cache.version, "8.4.1");
    EXPECT_EQ(cache.algorithm, "EntropyCalibration2");
    EXPECT_TRUE(cache.warnings.empty());
    ASSERT_EQ(cache.scales.size(), 36u); // MANIFEST.tsv: 36 entries
    // "input: 3d5b6231" (the README's example: 0.05356, an amax of 6.80 over 127), bit-exact.
    const CalibrationScale* input = cache.find("input");
    ASSERT_NE(input, nullptr);
    EXPECT_EQ(input->bits, 0x3d5b6231u);
    EXPECT_EQ(input->line, 2u);
    EXPECT_NEAR(input->scale * 127.0, 6.80, 0.005);
    // tf2onnx names hold ':' themselves.
    const CalibrationScale* conv = cache.find("Conv__54:0");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->bits, 0x3cf5d113u);
    // 28 of the 36 are the model's tensor names, the 8 others TensorRT's (Unnamed Layer* N) [Constant]_output.
    const OnnxGraph graph = readOnnx((dir / "CNN_Depthwise.1b5dae4.onnx").string());
    EXPECT_EQ(namedInModel(cache, graph), (std::pair<std::size_t, std::size_t>{28, 8}));
}

TEST(RealDataCalibrationCache, UnetCacheOfTensorRt801AgreesWithTheScalesItsBuildLogged)
{
    REQUIRE_SHARED_PATH(dir, "calibration/lannyyip-unet-instnorm-trt801");
    const CalibrationCache cache = readCalibrationCache((dir / "calibration.cache").string());
    EXPECT_EQ(cache.header, "TRT-8001-EntropyCalibration2");
    EXPECT_EQ(cache.version, "8.0.1");
    ASSERT_EQ(cache.scales.size(), 108u);
    const OnnxGraph graph = readOnnx((dir / "my_model.onnx").string());
    // MANIFEST.tsv: 59 ONNX names, 32 TensorRT-internal ones, 17 numeric names of another export.
    EXPECT_EQ(namedInModel(cache, graph), (std::pair<std::size_t, std::size_t>{59, 32}));
    // The implicit build that read this cache printed each tensor's scale ("INT8 Inference Tensor scales and
    // zero-points: <tensor> scale and zero-point Quantization(scale: {0.00787594,}, ...)", 6 significant digits).
    std::ifstream log(dir / "output.log");
    std::string line;
    std::size_t compared = 0;
    const std::string marker = "INT8 Inference Tensor scales and zero-points: ";
    while (std::getline(log, line))
    {
        const std::size_t at = line.find(marker);
        const std::size_t nameEnd = line.find(" scale and zero-point Quantization(scale: {");
        if (at == std::string::npos || nameEnd == std::string::npos)
        {
            continue;
        }
        const std::string tensor = line.substr(at + marker.size(), nameEnd - at - marker.size());
        const double logged = std::stod(line.substr(line.find('{', nameEnd) + 1));
        const CalibrationScale* read = cache.find(tensor);
        ASSERT_NE(read, nullptr) << tensor;
        EXPECT_NEAR(read->scale, logged, 5e-6 * logged) << tensor;
        ++compared;
    }
    EXPECT_GE(compared, 43u); // MANIFEST.tsv: 43 such lines at least
}

TEST(CalibrationCache, HeaderVersionsInBothEncodings)
{
    EXPECT_EQ(calibrationCacheVersion(8401), "8.4.1");
    EXPECT_EQ(calibrationCacheVersion(8001), "8.0.1");
    EXPECT_EQ(calibrationCacheVersion(7103), "7.1.3");
    EXPECT_EQ(calibrationCacheVersion(8510), "8.5.10");
    EXPECT_EQ(calibrationCacheVersion(101000), "10.10.0");
    EXPECT_EQ(calibrationCacheVersion(100300), "10.3.0");
    // No TensorRT release: a warning, the scales still read.
    EXPECT_EQ(calibrationCacheVersion(12), std::nullopt);
    EXPECT_EQ(calibrationCacheVersion(990000), std::nullopt);
    const CalibrationCache odd = fromText("TRT-990000-EntropyCalibration2\nx: 3c010a14\n");
    EXPECT_EQ(odd.version, "");
    ASSERT_EQ(odd.warnings.size(), 1u);
    EXPECT_NE(odd.warnings[0].message.find("encodes no TensorRT release"), std::string::npos);
    EXPECT_EQ(odd.scales.size(), 1u);
    EXPECT_EQ(fromText("TRT-101000-MinMaxCalibration\nx: 3c010a14\n").version, "10.10.0");
}

TEST(CalibrationCache, EveryAlgorithmReadsAndAnUnknownOneIsAWarning)
{
    for (const char* algorithm :
         {"EntropyCalibration2", "EntropyCalibration", "MinMaxCalibration", "LegacyCalibration"})
    {
        const CalibrationCache cache = fromText(std::string("TRT-8601-") + algorithm + "\r\ninput: 3d5b6231\r\n");
        EXPECT_EQ(cache.algorithm, algorithm);
        EXPECT_TRUE(cache.warnings.empty()) << algorithm;
        ASSERT_EQ(cache.scales.size(), 1u);
        EXPECT_EQ(cache.scales[0].bits, 0x3d5b6231u); // CRLF line ends read as LF
    }
    const CalibrationCache other = fromText("TRT-8601-PercentileCalibration\ninput: 3d5b6231\n");
    ASSERT_EQ(other.warnings.size(), 1u);
    EXPECT_NE(other.warnings[0].message.find("unknown calibration algorithm"), std::string::npos);
}

TEST(CalibrationCache, DynamicRangeFilesGiveAmaxOver127)
{
    // sampleINT8API's --ranges file: "<tensor>: <dynamic range>".
    const CalibrationCache ranges = fromText("input: 6.80\nConv__54:0: 3.5\n\nout: 1e-2\n");
    EXPECT_EQ(ranges.format, CalibrationCache::Format::kDynamicRange);
    EXPECT_EQ(ranges.header, "");
    ASSERT_EQ(ranges.scales.size(), 3u);
    EXPECT_FLOAT_EQ(ranges.scales[0].scale, static_cast<float>(6.80 / 127.0));
    EXPECT_EQ(ranges.scales[1].tensor, "Conv__54:0");
    EXPECT_FLOAT_EQ(floatOfBits(ranges.scales[1].bits), static_cast<float>(3.5 / 127.0));
    EXPECT_EQ(ranges.scales[2].line, 4u);
}

TEST(CalibrationCache, BrokenFilesAreRefusedNamingTheLine)
{
    const std::string header = "TRT-8401-EntropyCalibration2\n";
    // Each broken file beside the near-identical one that reads.
    EXPECT_EQ(errorOf(header + "a: 3c010a14\n"), "");
    EXPECT_NE(errorOf("TRT-abc-EntropyCalibration2\na: 3c010a14\n").find("test.cache:1: bad calibration cache header"),
              std::string::npos);
    EXPECT_NE(errorOf("TRT-8401\na: 3c010a14\n").find("test.cache:1: bad calibration cache header"), std::string::npos);
    EXPECT_NE(errorOf("hello world\n").find("test.cache:1: not a TensorRT calibration cache"), std::string::npos);
    EXPECT_NE(errorOf("").find("test.cache:1: empty"), std::string::npos);
    EXPECT_NE(errorOf(header + "a: 3c010a14\nb: zz\n").find("test.cache:3: the scale of \"b\" is \"zz\""),
              std::string::npos);
    EXPECT_NE(errorOf(header + "a: 3c010a1400\n").find("test.cache:2:"), std::string::npos); // 10 hex digits
    EXPECT_NE(errorOf(header + "no colon here\n").find("test.cache:2: expected \"<tensor>: <value>\""),
              std::string::npos);
    for (const char* bad : {"7fc00000", "7f800000", "0", "80000000", "bf800000"}) // NaN, inf, 0, -0, -1
    {
        EXPECT_NE(errorOf(header + "a: " + bad + "\n").find("test.cache:2: the scale of \"a\""), std::string::npos)
            << bad;
    }
    EXPECT_NE(errorOf(header + "a: 3c010a14\nb: 3c010a14\na: 3c010a14\n")
                  .find("test.cache:4: tensor \"a\" is given twice (first at line 2)"),
              std::string::npos);
    // Range files: not a number, negative, NaN.
    EXPECT_EQ(errorOf("a: 6.8\n"), "");
    for (const char* bad : {"six", "-6.8", "nan", "0", "inf"})
    {
        EXPECT_NE(errorOf(std::string("a: ") + bad + "\n").find("test.cache:1: the dynamic range of \"a\""),
                  std::string::npos)
            << bad;
    }
}

TEST(CalibrationCache, KindDetectionTellsACacheHeader)
{
    EXPECT_TRUE(looksLikeCalibrationCache("TRT-8401-EntropyCalibration2\ninput: 3d5b6231\n"));
    EXPECT_TRUE(looksLikeCalibrationCache("TRT-101000-MinMaxCalibration\n"));
    EXPECT_FALSE(looksLikeCalibrationCache("TRT-x-EntropyCalibration2\n"));
    EXPECT_FALSE(looksLikeCalibrationCache("[11/01/2021-22:22:38] [I] === Model Options ===\n"));
}
