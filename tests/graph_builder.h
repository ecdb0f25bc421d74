// Builds small ONNX graphs in code for rule and correlator tests, serialized with the onnx protobuf classes and read
// back through the real ONNX reader. Also builds small engine plans.
#pragma once

#include "qdq/analysis.h"
#include "tools/onnx_builder.h"

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
                   const std::optional<Profile>& profile = std::nullopt);

//! Findings of one rule.
std::vector<Finding> findingsOf(const Report& report, const std::string& rule);

//! Whether one of the findings names the ONNX node.
bool anyNames(const std::vector<Finding>& findings, const std::string& node);

} // namespace qdq::test
