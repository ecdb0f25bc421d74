// Builds small ONNX graphs in code for rule and correlator tests, serialized with the onnx protobuf classes and read
// back through the real ONNX reader. Also builds small engine plans.
#pragma once

#include "qdq/analysis.h"
#include "tools/onnx_builder.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace qdq::test
{

using tools::GraphBuilder;

//! An engine layer for hand-built plans.
EngineLayer layer(const std::string& name, const std::string& type, std::vector<std::pair<std::string, std::string>> in,
                  std::vector<std::pair<std::string, std::string>> out, const std::string& origin = "");

//! Runs diagnose on the given parts (kept alive until the test binary exits: the report holds views into them).
Report runDiagnose(const std::optional<OnnxGraph>& graph, const std::optional<EnginePlan>& plan,
                   const std::optional<Profile>& profile = std::nullopt, const AnalysisOptions& options = {});

//! A profile that times every layer of plan at ms (averageMs and timeMs), one iteration.
Profile profileFor(const EnginePlan& plan, double ms = 0.01);

//! A detailed layer list ("engine.json") of layers, with its network bindings.
EnginePlan planOf(std::vector<EngineLayer> layers, std::vector<std::string> bindings);

//! The predicted layer that executes node, or nullptr.
const PredictedLayer* layerWith(const Prediction& prediction, std::string_view node);

//! Findings of one rule.
std::vector<Finding> findingsOf(const Report& report, const std::string& rule);

//! Whether one of the findings names the ONNX node.
bool anyNames(const std::vector<Finding>& findings, const std::string& node);

//! Saves a serialized model at path with the data of every FLOAT, INT8, UINT8, INT32 and INT64 initializer of at least
//! minBytes in the file dataName beside it, laid out as ONNX's save_model(..., save_as_external_data=True) lays it
//! out: the raw little-endian bytes one tensor after the other, each tensor with location, offset and length and
//! data_location EXTERNAL. Returns path.
std::filesystem::path saveWithExternalData(const std::string& modelBytes, const std::filesystem::path& path,
                                           const std::string& dataName, std::size_t minBytes = 0);

//! ONNX's own check of a model file, as `onnx.checker.check_model(path, full_check=True)` makes it in ONNX 1.12 (whose
//! C++ check_model has no full_check flag): the checker on the file, which looks each external data file up in the
//! model's folder, then strict shape inference with type checks. The error, or empty when it passes.
std::string onnxFullCheck(const std::filesystem::path& path);

} // namespace qdq::test
