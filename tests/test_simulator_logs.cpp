// The engine simulator on the real verbose build logs whose parser lines describe the model they built: the graph
// rebuilt from the log is predicted and held against the log's own engine layer list.
#include "test_support.h"

#include "qdq/load_inputs.h"

#include <gtest/gtest.h>

#include <ostream>

using namespace qdq;
using namespace qdq::test;

namespace
{

struct LogCase
{
    const char* log;
    const char* name;
};

// Names the case in gtest's output instead of printing the struct's bytes.
void PrintTo(const LogCase& logCase, std::ostream* out)
{
    *out << logCase.log;
}

} // namespace

class RealDataSimulatorLogs : public ::testing::TestWithParam<LogCase>
{
};

// Every real log with parser lines and an engine layer list: the same number of layers executing ONNX nodes, and at
// least 95% of the real ones with a predicted layer executing exactly the same nodes.
TEST_P(RealDataSimulatorLogs, PredictsTheLogsOwnEngine)
{
    REQUIRE_SHARED();
    InputFiles files;
    files.files = {realdata(GetParam().log).string()};
    Inputs inputs = loadInputs(files, Limits{});
    ASSERT_TRUE(inputs.onnx.has_value()) << "no graph rebuilt from " << GetParam().log;
    ASSERT_TRUE(inputs.onnx->rebuiltFromLog);
    Report report = diagnose(inputs);
    ASSERT_TRUE(report.predictionCheck.has_value());
    const PredictionCheck& check = *report.predictionCheck;
    std::string disagreements;
    for (const auto& text : check.disagreements)
    {
        disagreements += "\n  " + text;
    }
    EXPECT_EQ(check.predictedLayers, check.realLayers) << disagreements;
    EXPECT_GE(check.exact * 100, check.realLayers * 95)
        << check.exact << " of " << check.realLayers << " exact" << disagreements;
}

INSTANTIATE_TEST_SUITE_P(
    Logs, RealDataSimulatorLogs,
    ::testing::Values(LogCase{"cookbook-mnist-trt8003/result-FP32.txt", "mnist_trt8003_fp32"},
                      LogCase{"cookbook-mnist-trt8003/result-FP16.txt", "mnist_trt8003_fp16"},
                      LogCase{"cookbook-mnist-trt8203/result-FP32.txt", "mnist_trt8203_fp32"},
                      LogCase{"cookbook-mnist-trt8401/result-FP32.log", "mnist_trt8401_fp32"},
                      LogCase{"cookbook-mnist-trt8401/result-FP16.log", "mnist_trt8401_fp16"},
                      LogCase{"cookbook-mnist-trt8600/result-02.log", "mnist_trt8600"},
                      LogCase{"cookbook-mnist-trt10141/result-02.log", "mnist_trt10141"},
                      LogCase{"cookbook-profilingverbosity-trt1016/log-main.py.log", "profilingverbosity_trt1016"},
                      LogCase{"lix-mnist-orin-trt8510-best/trt_build_best.log", "lix_mnist_trt8510"},
                      LogCase{"trex-notebooks-yolo-orin-trt852/trt.out", "yolo_orin_trt852"}),
    [](const auto& param) { return std::string(param.param.name); });
