// R29 refit-scale-group: an engine built refittable whose Q/DQ scales TensorRT rewrote on the assumption that they
// are equal (duplicate Quantizes merged, DQ -> Q pairs with one scale cancelled): a refit that gives the nodes of such
// a group different scales fails ("Q/DQ Limitations" of the developer guide).
#include "qdq/patterns.h"
#include "rules/rules.h"

#include <map>
#include <numeric>

namespace qdq::rules
{

namespace
{

using namespace patterns;

//! Whether the build log says the engine was built refittable (trtexec's build options or command line).
bool builtRefittable(const BuildLog& log)
{
    for (const auto& [key, value] : log.buildOptions)
    {
        const bool refitKey = key == "Refit" || key == "Strip weights" || key == "Strip all weights";
        if (refitKey && (value.rfind("Enabled", 0) == 0 || value == "true" || value == "1"))
        {
            return true;
        }
    }
    const std::string& command = log.commandLine;
    return command.find("--refit") != std::string::npos || command.find("--stripWeights") != std::string::npos ||
           command.find("--stripAllWeights") != std::string::npos;
}

class RefitScaleGroup final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"refit-scale-group",
                                    "R29",
                                    "A refittable engine whose Q/DQ scales TensorRT merged or cancelled as equal: a "
                                    "refit must keep each group's scales equal",
                                    Severity::kWarning,
                                    "8.0-10.x",
                                    kNeedsOnnxOrEngine | kReadsModelValues,
                                    "a constraint on the refit procedure (give the group one scale, or rebuild), not "
                                    "an edit of the model"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        if (!context.inputs.buildLog || !builtRefittable(*context.inputs.buildLog))
        {
            return;
        }
        const BuildLog& log = *context.inputs.buildLog;
        std::vector<std::pair<std::string, std::string>> pairs;
        std::vector<Evidence> evidence;
        for (const auto& event : log.events)
        {
            // "Eliminating X which duplicates (Q) Y": merged because their scales are equal.
            if (event.kind == OptimizerEventKind::kEliminate && event.detail == "Q" && !event.object.empty())
            {
                pairs.emplace_back(event.subject, event.object);
                evidence.push_back(Evidence{log.sourcePath, event.line, "Eliminating",
                                            event.subject + " which duplicates (Q) " + event.object});
            }
        }
        if (const OnnxGraph* graph = context.graph())
        {
            // DQ -> Q with one scale: TensorRT cancels the pair.
            for (const OnnxNode& q : graph->nodes)
            {
                if (!isQuantize(q) || q.inputs.empty())
                {
                    continue;
                }
                const OnnxNode* dq = producerOf(*graph, q.inputs[0]);
                if (dq == nullptr || !isDequantize(*dq))
                {
                    continue;
                }
                auto a = perTensorScale(*graph, *dq);
                auto b = perTensorScale(*graph, q);
                if (a && b && scalesEqual(*a, *b))
                {
                    pairs.emplace_back(dq->name, q.name);
                    evidence.push_back(nodeEvidence(context, q,
                                                    "reads " + dq->name +
                                                        " with the same scale: the pair "
                                                        "cancels"));
                }
            }
        }
        if (pairs.empty())
        {
            return;
        }
        // Groups: the connected nodes of the pairs.
        std::map<std::string, std::string> parent;
        const auto find = [&](std::string name)
        {
            while (parent.count(name) > 0 && parent[name] != name)
            {
                name = parent[name];
            }
            return name;
        };
        for (const auto& [a, b] : pairs)
        {
            parent.try_emplace(a, a);
            parent.try_emplace(b, b);
            parent[find(a)] = find(b);
        }
        std::map<std::string, std::vector<std::string>> groups;
        for (const auto& [node, unused] : parent)
        {
            groups[find(node)].push_back(node);
        }
        std::vector<std::string> described;
        Finding finding = makeFinding(info(), "");
        for (const auto& [root, nodes] : groups)
        {
            described.push_back("{" + nameList(nodes, 4) + "}");
            for (const auto& node : nodes)
            {
                if (context.graph() == nullptr || context.graph()->findNode(node) != nullptr)
                {
                    finding.onnxNodes.push_back(node);
                }
            }
        }
        finding.evidence = std::move(evidence);
        finding.message = "The engine is built refittable, and TensorRT rewrote " + std::to_string(groups.size()) +
                          " group(s) of Q/DQ nodes on the assumption that their scales are equal (duplicate Quantizes "
                          "merged, DQ -> Q pairs cancelled): " +
                          nameList(described, 4) +
                          ". Refitting the nodes of a group to different scales makes the refit fail.";
        finding.fix = "when refitting, give every node of a group the same new scale (calibrate the group as one), or "
                      "rebuild the engine instead of refitting its scales";
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeRefitScaleGroup()
{
    return std::make_unique<RefitScaleGroup>();
}

} // namespace qdq::rules
