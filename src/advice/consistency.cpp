// The consistency check every report runs (the issue "One model of TensorRT"): no finding contradicts the engine the
// report shows (the real one when a layer list is given, else the predicted one), no two findings contradict each
// other, and the prediction agrees with its own reasons. Findings state what they say TensorRT does as EngineClaims;
// this file tests each one with the same EngineView the rules ask.

#include "qdq/consistency.h"

#include "qdq/engine_view.h"
#include "qdq/root_causes.h"

#include <algorithm>
#include <map>

namespace qdq
{

namespace
{

std::string findingName(const Report& report, std::size_t f)
{
    return "finding " + std::to_string(f + 1) + " (" + report.findings[f].rule + ")";
}

std::string engineName(const EngineView& engine)
{
    return engine.predicted() ? "the predicted engine" : "the engine";
}

//! One claim against the engine; the contradiction, if any, goes to check.
void checkClaim(const Report& report, std::size_t f, const EngineClaim& claim, const EngineView& engine,
                ConsistencyCheck& check)
{
    const auto contradiction = [&](std::string kind, std::string message) {
        check.contradictions.push_back({std::move(kind), {f}, findingName(report, f) + " " + std::move(message)});
    };
    switch (claim.kind)
    {
    case EngineClaim::Kind::kSeparateLayers:
        if (claim.nodes.size() == 2 && engine.sameLayer(claim.nodes[0], claim.nodes[1]))
        {
            contradiction("engine-structure", "says " + claim.nodes[0] + " and " + claim.nodes[1] +
                                                  " run as separate layers; " + engineName(engine) +
                                                  " runs them in one layer");
        }
        break;
    case EngineClaim::Kind::kStandaloneQdq:
        if (claim.nodes.empty())
        {
            break;
        }
        if (!engine.inEngine(claim.nodes[0]))
        {
            contradiction("dead-node", "says " + claim.nodes[0] + " runs as a layer of its own; " + engineName(engine) +
                                           " has no layer for it (removed, folded or never built)");
        }
        else if (!engine.runsStandalone(claim.nodes[0]))
        {
            contradiction("engine-structure", "says " + claim.nodes[0] + " runs as a layer of its own; " +
                                                  engineName(engine) + " fuses it with a neighbour");
        }
        break;
    case EngineClaim::Kind::kRunsFloat:
        for (const auto& node : claim.nodes)
        {
            if (engine.runsQuantized(node))
            {
                contradiction("precision",
                              "says " + node + " runs in float; " + engineName(engine) + " runs it quantized");
                break;
            }
        }
        break;
    case EngineClaim::Kind::kFuseOnceEdited:
    case EngineClaim::Kind::kKeepApart:
        break; // claims about an edited model: checked against the other findings (checkClaimPairs)
    }
}

//! Two findings, one advising an edit that fuses two nodes and one advising a Q/DQ that keeps them apart.
void checkClaimPairs(const Report& report, ConsistencyCheck& check)
{
    std::map<std::pair<std::string, std::string>, std::size_t> fusedBy; // unordered node pair -> finding
    const auto key = [](const EngineClaim& claim) { return std::minmax(claim.nodes[0], claim.nodes[1]); };
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        for (const auto& claim : report.findings[f].claims)
        {
            if (claim.kind == EngineClaim::Kind::kFuseOnceEdited && claim.nodes.size() == 2)
            {
                fusedBy.try_emplace(key(claim), f);
            }
        }
    }
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        for (const auto& claim : report.findings[f].claims)
        {
            if (claim.kind != EngineClaim::Kind::kKeepApart || claim.nodes.size() != 2)
            {
                continue;
            }
            const auto fused = fusedBy.find(key(claim));
            if (fused != fusedBy.end() && fused->second != f)
            {
                check.contradictions.push_back({"advice",
                                                {fused->second, f},
                                                findingName(report, fused->second) + " removes the Q/DQ between " +
                                                    claim.nodes[0] + " and " + claim.nodes[1] + " so they fuse; " +
                                                    findingName(report, f) + " advises a Q/DQ between them"});
            }
        }
    }
}

} // namespace

ConsistencyCheck checkConsistency(const Report& report, const Inputs& inputs)
{
    ConsistencyCheck check;
    const AnalysisOptions options;
    const Context context{inputs, report.correlation, report.prediction, options, false, &report.buildMode};
    const EngineView engine(context);
    check.againstRealEngine = !engine.predicted();
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        for (const auto& claim : report.findings[f].claims)
        {
            ++check.claimsChecked;
            checkClaim(report, f, claim, engine, check);
        }
    }
    checkClaimPairs(report, check);
    for (auto& conflict : adviceConflicts(report, inputs))
    {
        check.contradictions.push_back({"advice", {}, std::move(conflict)});
    }
    checkPredictionConsistency(report.prediction, check);
    return check;
}

} // namespace qdq
