// libFuzzer target: the whole diagnose pipeline (correlation, prediction, every rule, text and JSON report) on a
// fuzzed ONNX model or a fuzzed layer-info JSON. The other half comes from samples/c-resnet-conv-maxpool, so the
// correlation between ONNX nodes and engine layers is exercised. Checks that the text report carries no control
// characters from names and that the JSON report parses.
#include "fuzz_common.h"
#include "qdq/analysis.h"
#include "qdq/readers.h"

#include <nlohmann/json.hpp>

#include <optional>

namespace
{

std::optional<qdq::OnnxGraph> gSampleOnnx;
std::optional<qdq::EnginePlan> gSampleLayers;
std::optional<qdq::Profile> gSampleProfile;

void checkText(const std::string& text)
{
    for (unsigned char c : text)
    {
        if ((c < 0x20 && c != '\n') || c == 0x7f)
        {
            __builtin_trap();
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    const std::string sample = QDQ_SOURCE_DIR "/samples/c-resnet-conv-maxpool/";
    gSampleOnnx = qdq::readOnnx(sample + "model.onnx");
    gSampleLayers = qdq::readLayerInfo(sample + "layers.json");
    gSampleProfile = qdq::readProfile(sample + "profile.json");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string path = "fuzz-input";
    const std::string_view bytes = qdq::fuzz::asView(data, size);
    const qdq::Limits limits = qdq::fuzz::fuzzLimits();
    qdq::Inputs inputs;
    try
    {
        switch (qdq::detectInputKindFromPrefix(bytes, path))
        {
        case qdq::InputKind::kOnnx:
            inputs.onnx = qdq::readOnnxFromBuffer(bytes, path, {}, limits);
            inputs.layerInfo = gSampleLayers;
            inputs.sources.push_back({qdq::InputKind::kOnnx, path, std::nullopt});
            break;
        case qdq::InputKind::kLayerInfo:
            inputs.onnx = gSampleOnnx;
            inputs.layerInfo = qdq::readLayerInfoFromBuffer(bytes, path, limits);
            inputs.sources.push_back({qdq::InputKind::kLayerInfo, path, std::nullopt});
            break;
        default:
            return 0;
        }
    }
    catch (const qdq::InputError& error)
    {
        qdq::fuzz::checkError(error, path);
        return 0;
    }
    inputs.profile = gSampleProfile;
    inputs.deriveMissingPlan();
    qdq::Report report = qdq::diagnose(inputs);
    checkText(qdq::renderReportText(report, inputs));
    (void)nlohmann::json::parse(qdq::renderReportJson(report, inputs));
    return 0;
}
