// SARIF 2.1.0 reporter (docs/sarif.md). The log is built as ordered JSON so keys keep one order and two runs on the
// same input write the same bytes.
#include "qdq/sarif.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>

namespace qdq
{

namespace
{

using Json = nlohmann::ordered_json;

constexpr const char* kSchema =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
//! Logical locations named per result; a finding over a whole network names its first nodes only.
constexpr std::size_t kMaxLogicalLocations = 32;

std::string levelOf(Severity severity)
{
    switch (severity)
    {
    case Severity::kError:
        return "error";
    case Severity::kWarning:
        return "warning";
    case Severity::kInfo:
        break;
    }
    return "note";
}

//! A path as a URI reference: relative paths stay relative (to the working directory qdq-doctor ran in), absolute
//! ones become file:// URIs; every byte outside RFC 3986's unreserved set and '/' is percent-encoded.
std::string uriOf(const std::string& path)
{
    std::string uri = !path.empty() && path.front() == '/' ? "file://" : "";
    for (unsigned char c : path)
    {
        bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                          c == '.' || c == '_' || c == '~' || c == '/';
        if (unreserved)
        {
            uri += static_cast<char>(c);
        }
        else
        {
            char escaped[4];
            std::snprintf(escaped, sizeof(escaped), "%%%02X", c);
            uri += escaped;
        }
    }
    return uri;
}

//! FNV-1a: a stable fingerprint of what identifies a finding across runs (rule, nodes, layers), so code scanning
//! keeps one alert per problem while messages and costs change.
std::string fingerprintOf(const Finding& finding)
{
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    const auto add = [&](const std::string& text)
    {
        for (unsigned char c : text)
        {
            hash = (hash ^ c) * 0x100000001b3ULL;
        }
        hash = (hash ^ 0x1fU) * 0x100000001b3ULL;
    };
    add(finding.rule);
    std::set<std::string> nodes(finding.onnxNodes.begin(), finding.onnxNodes.end());
    for (const auto& node : nodes)
    {
        add(node);
    }
    std::set<std::string> layers(finding.engineLayers.begin(), finding.engineLayers.end());
    for (const auto& layer : layers)
    {
        add(layer);
    }
    char text[17];
    std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
    return text;
}

Json milliseconds(double value)
{
    return std::round(value * 1e6) / 1e6;
}

class SarifWriter
{
public:
    SarifWriter(const Report& report, const Inputs& inputs) : mReport(report), mInputs(inputs) {}

    Json build(const std::string& toolVersion)
    {
        Json rules = Json::array();
        for (const auto& rule : allRules())
        {
            const RuleInfo& info = rule->info();
            mRuleIndex[info.slug] = rules.size();
            Json descriptor;
            descriptor["id"] = info.slug;
            descriptor["shortDescription"] = {{"text", info.summary}};
            descriptor["helpUri"] = "docs/rules/" + info.slug + ".md";
            descriptor["help"] = {{"text", info.summary + " (docs/rules/" + info.slug + ".md)"}};
            descriptor["defaultConfiguration"] = {{"level", levelOf(info.defaultSeverity)}};
            Json properties;
            if (!info.id.empty())
            {
                properties["catalogueId"] = info.id;
            }
            properties["tensorrtVersions"] = info.trtVersions;
            properties["tags"] = Json::array({"tensorrt", "quantization"});
            descriptor["properties"] = properties;
            rules.push_back(std::move(descriptor));
        }
        // Every input file is an artifact, in the report's order; evidence in other files adds them after.
        for (const auto& source : mReport.inputs)
        {
            Json& artifact = artifactFor(source.path);
            artifact["roles"] = Json::array({"analysisTarget"});
            artifact["description"] = {{"text", std::string(inputKindName(source.kind))}};
        }
        Json results = Json::array();
        for (const auto& finding : mReport.findings)
        {
            results.push_back(resultFor(finding));
        }

        Json driver;
        driver["name"] = "qdq-doctor";
        driver["version"] = toolVersion;
        driver["semanticVersion"] = toolVersion;
        driver["rules"] = std::move(rules);
        Json run;
        run["tool"] = {{"driver", std::move(driver)}};
        Json notifications = Json::array();
        for (const auto& note : mReport.notes)
        {
            notifications.push_back({{"message", {{"text", note}}}, {"level", "note"}});
        }
        Json invocation;
        invocation["executionSuccessful"] = true;
        if (!notifications.empty())
        {
            invocation["toolExecutionNotifications"] = std::move(notifications);
        }
        run["invocations"] = Json::array({std::move(invocation)});
        run["artifacts"] = std::move(mArtifacts);
        run["results"] = std::move(results);
        // The build mode every finding assumed (SARIF's property bag of the run).
        const SimulationOptions& mode = mReport.buildMode;
        run["properties"] = {{"buildMode",
                              {{"trtVersion", mode.trtMajor == 0 ? Json(nullptr)
                                                                 : Json(std::to_string(mode.trtMajor) + "." +
                                                                        std::to_string(mode.trtMinor))},
                               {"typing", mode.stronglyTyped() ? "strong" : "weak"},
                               {"typingSource", mode.typingSource},
                               {"typingAssumed", mode.typingAssumed},
                               {"summary", describeBuildMode(mode)}}}};

        Json log;
        log["$schema"] = kSchema;
        log["version"] = "2.1.0";
        log["runs"] = Json::array({std::move(run)});
        return log;
    }

private:
    Json& artifactFor(const std::string& path)
    {
        auto [it, added] = mArtifactIndex.emplace(path, mArtifacts.size());
        if (added)
        {
            mArtifacts.push_back({{"location", {{"uri", uriOf(path)}}}});
        }
        return mArtifacts[it->second];
    }

    Json artifactLocation(const std::string& path)
    {
        artifactFor(path);
        return {{"uri", uriOf(path)}, {"index", mArtifactIndex.at(path)}};
    }

    Json resultFor(const Finding& finding)
    {
        Json result;
        result["ruleId"] = finding.rule;
        auto rule = mRuleIndex.find(finding.rule);
        if (rule != mRuleIndex.end())
        {
            result["ruleIndex"] = rule->second;
        }
        result["level"] = levelOf(finding.severity);
        std::string text = finding.message;
        if (!finding.fix.empty())
        {
            text += "\nFix: " + finding.fix;
        }
        result["message"] = {{"text", text}};
        result["locations"] = locationsFor(finding);
        result["partialFingerprints"] = {{"qdqDoctorFinding/v1", fingerprintOf(finding)}};
        Json properties;
        properties["costMs"] = finding.costMs ? milliseconds(*finding.costMs) : Json(nullptr);
        properties["savingMs"] = finding.savingMs ? milliseconds(*finding.savingMs) : Json(nullptr);
        properties["rootCause"] = finding.rootCause ? Json(*finding.rootCause + 1) : Json(nullptr);
        properties["symptom"] = finding.symptom;
        properties["likely"] = finding.likely;
        properties["fix"] = finding.fix;
        properties["onnxNodes"] = finding.onnxNodes;
        properties["engineLayers"] = finding.engineLayers;
        result["properties"] = std::move(properties);
        return result;
    }

    //! The model with the finding's nodes as logical locations, then every evidence line (layer-info JSON, build
    //! log, profile) as a region; a file-level location when neither exists.
    Json locationsFor(const Finding& finding)
    {
        Json locations = Json::array();
        const std::string modelPath = mInputs.onnx ? mInputs.onnx->sourcePath : std::string();
        if (!modelPath.empty() && !finding.onnxNodes.empty())
        {
            Json logical = Json::array();
            for (std::size_t i = 0; i < finding.onnxNodes.size() && i < kMaxLogicalLocations; ++i)
            {
                logical.push_back({{"name", finding.onnxNodes[i]},
                                   {"fullyQualifiedName", finding.onnxNodes[i]},
                                   {"kind", "onnxNode"}});
            }
            locations.push_back({{"physicalLocation", {{"artifactLocation", artifactLocation(modelPath)}}},
                                 {"logicalLocations", logical}});
        }
        std::set<std::pair<std::string, std::uint64_t>> seen;
        for (const auto& evidence : finding.evidence)
        {
            if (evidence.file.empty() || evidence.line == 0 || !seen.emplace(evidence.file, evidence.line).second)
            {
                continue;
            }
            Json location;
            location["physicalLocation"] = {{"artifactLocation", artifactLocation(evidence.file)},
                                            {"region", {{"startLine", evidence.line}}}};
            Json logical = Json::array();
            for (const auto& layer : finding.engineLayers)
            {
                if (logical.size() < kMaxLogicalLocations &&
                    evidence.field.find("\"" + layer + "\"") != std::string::npos)
                {
                    logical.push_back({{"name", layer}, {"fullyQualifiedName", layer}, {"kind", "engineLayer"}});
                }
            }
            if (!logical.empty())
            {
                location["logicalLocations"] = std::move(logical);
            }
            std::string text = evidence.field;
            if (!evidence.text.empty())
            {
                text += (text.empty() ? "" : ": ") + evidence.text;
            }
            if (!text.empty())
            {
                location["message"] = {{"text", text}};
            }
            locations.push_back(std::move(location));
        }
        if (locations.empty())
        {
            std::string file;
            for (const auto& evidence : finding.evidence)
            {
                if (file.empty() && !evidence.file.empty())
                {
                    file = evidence.file;
                }
            }
            if (file.empty() && !mReport.inputs.empty())
            {
                file = mReport.inputs.front().path;
            }
            if (!file.empty())
            {
                locations.push_back({{"physicalLocation", {{"artifactLocation", artifactLocation(file)}}}});
            }
        }
        return locations;
    }

    const Report& mReport;
    const Inputs& mInputs;
    std::map<std::string, std::size_t> mRuleIndex;
    std::map<std::string, std::size_t> mArtifactIndex;
    Json mArtifacts = Json::array();
};

} // namespace

std::string renderReportSarif(const Report& report, const Inputs& inputs, const std::string& toolVersion)
{
    SarifWriter writer(report, inputs);
    return terminalSafeJson(writer.build(toolVersion).dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
}

} // namespace qdq
