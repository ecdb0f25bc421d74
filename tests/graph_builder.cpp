#include "graph_builder.h"

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
    Inputs inputs;
    inputs.onnx = graph;
    inputs.layerInfo = plan;
    inputs.profile = profile;
    inputs.deriveMissingPlan();
    return diagnose(inputs);
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
