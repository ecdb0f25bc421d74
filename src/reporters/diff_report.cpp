// Reporters for `diff`: a text table and JSON (schema qdq-doctor.diff.v1).
#include "qdq/diff.h"
#include "qdq/patterns.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace qdq
{

namespace
{

using Json = nlohmann::ordered_json;

Json milliseconds(double value)
{
    return std::round(value * 1e6) / 1e6;
}

std::vector<std::string> names(const EnginePlan* plan, const std::vector<std::size_t>& layers)
{
    std::vector<std::string> result;
    for (std::size_t layer : layers)
    {
        result.push_back(plan->layers[layer].name);
    }
    return result;
}

std::string signedMs(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%+.3f", value);
    return buffer;
}

std::string shorten(const std::string& text, std::size_t width)
{
    std::string clean = printable(text, 4096);
    return clean.size() <= width ? clean : clean.substr(0, width - 3) + "...";
}

Json sourcesJson(const std::vector<Inputs::Source>& sources)
{
    Json array = Json::array();
    for (const auto& source : sources)
    {
        array.push_back({{"kind", std::string(inputKindName(source.kind))},
                         {"path", source.path},
                         {"trt_version", source.trtVersion ? Json(*source.trtVersion) : Json(nullptr)}});
    }
    return array;
}

} // namespace

std::string renderDiffJson(const DiffReport& report, const Inputs& baseline, const Inputs& candidate)
{
    Json root;
    root["schema"] = "qdq-doctor.diff.v1";
    root["baseline_inputs"] = sourcesJson(report.baselineInputs);
    root["candidate_inputs"] = sourcesJson(report.candidateInputs);
    root["baseline_ms"] = report.baselineMs ? milliseconds(*report.baselineMs) : Json(nullptr);
    root["candidate_ms"] = report.candidateMs ? milliseconds(*report.candidateMs) : Json(nullptr);
    root["baseline_total_source"] = report.baselineTotalSource;
    root["candidate_total_source"] = report.candidateTotalSource;
    root["delta_ms"] = milliseconds(report.deltaMs);
    root["explained_ms"] = milliseconds(report.explainedMs);
    root["unexplained_ms"] = milliseconds(report.unexplainedMs);
    root["per_layer_times"] = report.perLayerTimes;
    Json causes = Json::array();
    for (const DiffCause& cause : report.causes)
    {
        causes.push_back({{"title", cause.title},
                          {"severity", std::string(severityName(cause.severity))},
                          {"saving_ms", cause.savingMs ? milliseconds(*cause.savingMs) : Json(nullptr)},
                          {"delta_ms", milliseconds(cause.deltaMs)},
                          {"regions", cause.regions}});
    }
    root["root_causes"] = causes;
    Json regions = Json::array();
    for (const auto& region : report.regions)
    {
        Json item;
        item["delta_ms"] = region.hasTimes ? milliseconds(region.deltaMs) : Json(nullptr);
        item["baseline_ms"] = region.hasTimes ? milliseconds(region.baselineMs) : Json(nullptr);
        item["candidate_ms"] = region.hasTimes ? milliseconds(region.candidateMs) : Json(nullptr);
        item["explained"] = region.explained;
        item["alignment"] = region.alignment;
        item["baseline_layers"] = names(baseline.engine(), region.baselineLayers);
        item["candidate_layers"] = names(candidate.engine(), region.candidateLayers);
        item["onnx_nodes"] = region.onnxNodes;
        item["differences"] = region.differences;
        Json findings = Json::array();
        for (const auto& finding : region.findings)
        {
            findings.push_back({{"rule", finding.rule},
                                {"severity", std::string(severityName(finding.severity))},
                                {"message", finding.message},
                                {"fix", finding.fix},
                                {"cost_ms", finding.costMs ? milliseconds(*finding.costMs) : Json(nullptr)}});
        }
        item["findings"] = findings;
        regions.push_back(std::move(item));
    }
    root["regions"] = regions;
    root["notes"] = report.notes;
    return terminalSafeJson(root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
}

//! The answer first: how much slower or faster the candidate is, and its root causes with their part of that.
static void writeHeadline(std::ostream& out, const DiffReport& report)
{
    if (!report.baselineMs || !report.candidateMs)
    {
        return;
    }
    const double delta = report.deltaMs;
    out << "The candidate is " << patterns::formatMs(std::abs(delta)) << (delta >= 0.0 ? " slower" : " faster")
        << " than the baseline (" << patterns::formatMs(*report.candidateMs) << " vs "
        << patterns::formatMs(*report.baselineMs) << ").";
    std::vector<const DiffCause*> shown;
    for (const DiffCause& cause : report.causes)
    {
        if (cause.severity != Severity::kInfo && (cause.regions > 0 || cause.savingMs.value_or(0.0) > 0.0))
        {
            shown.push_back(&cause);
        }
    }
    if (shown.empty())
    {
        out << "\n\n";
        return;
    }
    out << " Root causes in the candidate (docs/savings.md):\n";
    for (std::size_t i = 0; i < shown.size() && i < 5; ++i)
    {
        const DiffCause& cause = *shown[i];
        out << "  " << i + 1 << ". " << cause.title;
        if (cause.regions > 0 && report.perLayerTimes)
        {
            out << ": " << signedMs(cause.deltaMs) << " ms in its " << cause.regions << " region(s)";
        }
        if (cause.savingMs)
        {
            out << (cause.regions > 0 && report.perLayerTimes ? ", " : ": ") << "fixing it saves ~"
                << patterns::formatMs(*cause.savingMs);
        }
        out << "\n";
    }
    out << "\n";
}

namespace
{

//! A finding often touches several regions: it is printed once, after the regions, as [F<n>], and each region
//! names it with what it says about that region's layers.
class SharedFindings
{
public:
    //! The finding's number (1-based) and whether this is its first mention in region regionNumber.
    std::pair<std::size_t, bool> reference(const Finding& finding, std::size_t regionNumber)
    {
        std::string key = finding.rule + '\x1f' + finding.message + '\x1f' + finding.fix;
        for (const auto& layer : finding.engineLayers)
        {
            key += '\x1f' + layer;
        }
        auto [it, added] = mIndex.emplace(key, mShared.size());
        if (added)
        {
            mShared.push_back(Shared{&finding, {}});
        }
        std::vector<std::size_t>& regions = mShared[it->second].regions;
        bool first = regions.empty() || regions.back() != regionNumber;
        if (first)
        {
            regions.push_back(regionNumber);
        }
        return std::make_pair(it->second + 1, first);
    }

    void write(std::ostream& out) const
    {
        if (mShared.empty())
        {
            return;
        }
        out << "Findings in these regions (each once; a region names the ones it shows):\n";
        for (std::size_t i = 0; i < mShared.size(); ++i)
        {
            const Finding& finding = *mShared[i].finding;
            out << "[F" << i + 1 << "] [" << severityName(finding.severity) << "] " << finding.rule;
            if (finding.costMs)
            {
                out << "  cost " << patterns::formatMs(*finding.costMs);
            }
            out << "  (region" << (mShared[i].regions.size() > 1 ? "s" : "");
            const char* separator = " ";
            for (std::size_t region : mShared[i].regions)
            {
                out << separator << region;
                separator = ", ";
            }
            out << ")\n";
            out << "     " << printable(finding.message, 8192) << "\n";
            if (!finding.fix.empty())
            {
                out << "     fix: " << printable(finding.fix, 4096) << "\n";
            }
        }
        out << "\n";
    }

private:
    struct Shared
    {
        const Finding* finding = nullptr;
        std::vector<std::size_t> regions; //!< the shown regions that refer to it (1-based)
    };
    std::vector<Shared> mShared;
    std::map<std::string, std::size_t> mIndex;
};

void writeTotals(std::ostream& out, const DiffReport& report, const Inputs& baseline, const Inputs& candidate)
{
    auto total = [](const std::optional<double>& ms, const std::string& source)
    { return ms ? patterns::formatMs(*ms) + " (" + source + ")" : std::string("unknown"); };
    out << "qdq-doctor diff\n";
    out << "  baseline:  " << total(report.baselineMs, report.baselineTotalSource) << ", "
        << baseline.engine()->layers.size() << " layers\n";
    out << "  candidate: " << total(report.candidateMs, report.candidateTotalSource) << ", "
        << candidate.engine()->layers.size() << " layers\n";
    out << "  delta:     " << signedMs(report.deltaMs) << " ms = " << signedMs(report.explainedMs) << " explained "
        << signedMs(report.unexplainedMs) << " unexplained\n\n";
}

//! What the finding says about this region's layers when it spans several regions.
std::string aboutTheRegion(const Finding& finding, const std::set<std::string>& regionLayers)
{
    std::string about;
    bool withinRegion = std::all_of(finding.engineLayers.begin(), finding.engineLayers.end(),
                                    [&](const std::string& name) { return regionLayers.count(name) > 0; });
    if (withinRegion)
    {
        return about;
    }
    for (const auto& evidence : finding.evidence)
    {
        for (const auto& name : regionLayers)
        {
            if (about.empty() && evidence.field.find("\"" + name + "\"") != std::string::npos &&
                evidence.text.size() > 40)
            {
                about = "\"" + shorten(name, 60) + "\": " + evidence.text;
            }
        }
    }
    return about;
}

void writeRegion(std::ostream& out, const DiffRegion& region, std::size_t shown, const Inputs& baseline,
                 const Inputs& candidate, SharedFindings& shared)
{
    out << shown << ". " << (region.hasTimes ? signedMs(region.deltaMs) + " ms" : std::string("(no times)"))
        << (region.explained ? "" : "  [unexplained]") << "\n";
    if (region.hasTimes)
    {
        out << "   time:      " << patterns::formatMs(region.baselineMs) << " -> "
            << patterns::formatMs(region.candidateMs) << "\n";
    }
    auto baselineNames = names(baseline.engine(), region.baselineLayers);
    auto candidateNames = names(candidate.engine(), region.candidateLayers);
    out << "   baseline:  " << shorten(patterns::nameList(baselineNames, 3), 200) << "\n";
    out << "   candidate: " << shorten(patterns::nameList(candidateNames, 3), 200) << "\n";
    for (const auto& difference : region.differences)
    {
        out << "   differs:   " << printable(difference) << "\n";
    }
    std::set<std::string> regionLayers(candidateNames.begin(), candidateNames.end());
    for (const auto& finding : region.findings)
    {
        auto [number, first] = shared.reference(finding, shown);
        if (!first)
        {
            continue; // the same finding twice in one region
        }
        const std::string about = aboutTheRegion(finding, regionLayers);
        out << "   finding:   [F" << number << "] " << finding.rule;
        if (!about.empty())
        {
            out << ": " << shorten(about, 200);
        }
        out << "\n";
    }
    out << "\n";
}

} // namespace

std::string renderDiffText(const DiffReport& report, const Inputs& baseline, const Inputs& candidate,
                           std::size_t maxRegions)
{
    std::ostringstream out;
    writeTotals(out, report, baseline, candidate);
    writeHeadline(out, report);
    SharedFindings shared;
    std::size_t shown = 0;
    for (const auto& region : report.regions)
    {
        if (shown >= maxRegions)
        {
            break;
        }
        if (region.differences.empty() && region.findings.empty() && std::abs(region.deltaMs) < 1e-9)
        {
            continue; // identical on both sides and no time difference
        }
        ++shown;
        writeRegion(out, region, shown, baseline, candidate, shared);
    }
    shared.write(out);
    if (!report.notes.empty())
    {
        out << "Notes:\n";
        for (const auto& note : report.notes)
        {
            out << "  - " << printable(note) << "\n";
        }
    }
    return out.str();
}

} // namespace qdq
