#include "graph_builder.h"

#include <algorithm>
#include <deque>
#include <mutex>

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
                   const std::optional<Profile>& profile)
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
    return diagnose(*inputs);
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

} // namespace qdq::test
