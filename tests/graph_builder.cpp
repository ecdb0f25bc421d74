#include "graph_builder.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <stdexcept>

namespace qdq::test
{

EngineLayer layer(const std::string& name, const std::string& type, std::vector<std::pair<std::string, std::string>> in,
                  std::vector<std::pair<std::string, std::string>> out, const std::string& origin)
{
    EngineLayer l;
    l.name = name;
    l.type = type;
    l.origin = origin;
    for (const auto& [tensor, format] : in)
    {
        EngineTensor t;
        t.name = tensor;
        t.format = format;
        t.precision = precisionFromFormat(format);
        l.inputs.push_back(t);
    }
    for (const auto& [tensor, format] : out)
    {
        EngineTensor t;
        t.name = tensor;
        t.format = format;
        t.precision = precisionFromFormat(format);
        l.outputs.push_back(t);
    }
    return l;
}

Report runDiagnose(const std::optional<OnnxGraph>& graph, const std::optional<EnginePlan>& plan,
                   const std::optional<Profile>& profile, const AnalysisOptions& options)
{
    // The report names nodes and layers by views into the inputs: they are kept until the test binary exits, so a
    // test may read every part of the report it gets (a handful of small models per test).
    static std::mutex keptMutex;
    static std::deque<Inputs> kept;
    Inputs* inputs = nullptr;
    {
        std::lock_guard<std::mutex> lock(keptMutex);
        inputs = &kept.emplace_back();
    }
    inputs->onnx = graph;
    inputs->layerInfo = plan;
    inputs->profile = profile;
    inputs->deriveMissingPlan();
    return diagnose(*inputs, options);
}

bool anyNames(const std::vector<Finding>& findings, const std::string& node)
{
    return std::any_of(
        findings.begin(), findings.end(),
        [&](const Finding& finding)
        { return std::find(finding.onnxNodes.begin(), finding.onnxNodes.end(), node) != finding.onnxNodes.end(); });
}

std::vector<Finding> findingsOf(const Report& report, const std::string& rule)
{
    std::vector<Finding> found;
    for (const auto& finding : report.findings)
    {
        if (finding.rule == rule)
        {
            found.push_back(finding);
        }
    }
    return found;
}

Profile profileFor(const EnginePlan& plan, double ms)
{
    Profile profile;
    profile.iterations = 1;
    for (const auto& l : plan.layers)
    {
        ProfileEntry entry;
        entry.name = l.name;
        entry.averageMs = entry.timeMs = ms;
        profile.entries.push_back(entry);
    }
    return profile;
}

EnginePlan planOf(std::vector<EngineLayer> layers, std::vector<std::string> bindings)
{
    EnginePlan plan;
    plan.sourcePath = "engine.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers = std::move(layers);
    plan.bindings = std::move(bindings);
    return plan;
}

const PredictedLayer* layerWith(const Prediction& prediction, std::string_view node)
{
    for (const auto& layer : prediction.layers)
    {
        if (std::find(layer.onnxNodes.begin(), layer.onnxNodes.end(), node) != layer.onnxNodes.end())
        {
            return &layer;
        }
    }
    return nullptr;
}

} // namespace qdq::test

namespace qdq::test
{

namespace
{

//! The raw little-endian bytes of a tensor's data; false for a type or data field this helper does not convert.
bool rawBytesOf(const onnx::TensorProto& tensor, std::string& bytes)
{
    if (tensor.has_raw_data())
    {
        bytes = tensor.raw_data();
        return true;
    }
    const auto append = [&bytes](const void* value, std::size_t size)
    { bytes.append(static_cast<const char*>(value), size); };
    switch (tensor.data_type())
    {
    case onnx::TensorProto::FLOAT:
        for (float value : tensor.float_data())
        {
            append(&value, sizeof value);
        }
        return true;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
        for (std::int32_t value : tensor.int32_data())
        {
            bytes.push_back(static_cast<char>(value));
        }
        return true;
    case onnx::TensorProto::INT32:
        for (std::int32_t value : tensor.int32_data())
        {
            append(&value, sizeof value);
        }
        return true;
    case onnx::TensorProto::INT64:
        for (std::int64_t value : tensor.int64_data())
        {
            append(&value, sizeof value);
        }
        return true;
    default:
        return false;
    }
}

} // namespace

std::filesystem::path saveWithExternalData(const std::string& modelBytes, const std::filesystem::path& path,
                                           const std::string& dataName, std::size_t minBytes)
{
    onnx::ModelProto model;
    if (!model.ParseFromString(modelBytes))
    {
        throw std::runtime_error("saveWithExternalData: not a model");
    }
    std::string data;
    for (onnx::TensorProto& tensor : *model.mutable_graph()->mutable_initializer())
    {
        std::string bytes;
        if (!rawBytesOf(tensor, bytes) || bytes.size() < minBytes)
        {
            continue;
        }
        tensor.clear_raw_data();
        tensor.clear_float_data();
        tensor.clear_int32_data();
        tensor.clear_int64_data();
        tensor.set_data_location(onnx::TensorProto::EXTERNAL);
        for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", dataName},
                                         {"offset", std::to_string(data.size())},
                                         {"length", std::to_string(bytes.size())}})
        {
            auto* entry = tensor.add_external_data();
            entry->set_key(key);
            entry->set_value(value);
        }
        data += bytes;
    }
    std::ofstream(path.parent_path() / dataName, std::ios::binary) << data;
    std::ofstream file(path, std::ios::binary);
    if (!model.SerializeToOstream(&file))
    {
        throw std::runtime_error("saveWithExternalData: cannot write " + path.string());
    }
    return path;
}

std::string onnxFullCheck(const std::filesystem::path& path)
{
    try
    {
        onnx::checker::check_model(path.string());
        onnx::ModelProto model;
        std::ifstream file(path, std::ios::binary);
        if (!model.ParseFromIstream(&file))
        {
            return "cannot be parsed as an ONNX ModelProto";
        }
        const onnx::ShapeInferenceOptions strict(/*check_type*/ true, /*error_mode*/ 1);
        onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), strict);
    }
    catch (const std::exception& error)
    {
        return error.what();
    }
    return {};
}

} // namespace qdq::test
