// io-reformat and standalone-qdq on real engines: the INT8 input format they advise is the one the first layer reads
// (trex-pt-resnet-a100-*, trex-tests-mobilenet-qat*, trex-notebooks-yolo-orin-trt852), always with taking the input's
// Q out of the model and keeping its DQ. Expected formats were read off the layer lists by hand.
#include "graph_builder.h"
#include "qdq/analysis.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

using namespace qdq;
using namespace qdq::test;

namespace
{

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

} // namespace

TEST(RealDataRuleIoReformat, AdvisesTheFormatTheStemReads)
{
    REQUIRE_SHARED();
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"trex-pt-resnet-a100-qat/resnet-qat", "int8:chw4"},
        {"trex-pt-resnet-a100-qat-residual/resnet-qat-residual", "int8:chw"},
        {"trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap", "int8:chw"},
        {"trex-tests-mobilenet-qat/mobilenet.qat", "int8:chw4"},
        // The TensorRT 8.2 build of the same MobileNet quantizes its 3-channel input straight to CHW32: fed so, the
        // image would take 32 channels, so CHW4 is advised (3 -> 4; TensorRT reformats to its kernel's layout).
        {"trex-tests-mobilenet-qat-2022-04/mobilenet.qat", "int8:chw4"},
    };
    for (const auto& [set, format] : expected)
    {
        SCOPED_TRACE(set);
        Report report = diagnose(trex(set));
        auto found = findingsOf(report, "io-reformat");
        ASSERT_FALSE(found.empty());
        EXPECT_TRUE(contains(found.front().fix, "--inputIOFormats=" + format + " ")) << found.front().fix;
        EXPECT_TRUE(contains(found.front().fix, "NVIDIA/TensorRT#3265")) << found.front().fix;
        for (const auto& finding : report.findings)
        {
            EXPECT_FALSE(contains(finding.fix, "int8:chw32")) << finding.rule << ": " << finding.fix;
        }
    }
    // The YOLO stem on Orin reads Int8[1,3:4,2208,3872] (trt.out:12756).
    Report orin = diagnose(loadFiles({realdata("trex-notebooks-yolo-orin-trt852/trt.out"),
                                      realdata("trex-notebooks-yolo-orin-trt852/layer_info.json"),
                                      realdata("trex-notebooks-yolo-orin-trt852/profile.json")}));
    auto found = findingsOf(orin, "io-reformat");
    ASSERT_FALSE(found.empty());
    EXPECT_TRUE(contains(found.front().fix, "--inputIOFormats=int8:chw4 ")) << found.front().fix;
    EXPECT_TRUE(contains(found.front().fix, "/backbone/conv1/_input_quantizer/QuantizeLinear")) << found.front().fix;
}
