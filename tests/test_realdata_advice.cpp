// Advice a user can follow, on every real engine: no fix names a layer the builder inserted (a reformat or copy,
// "Reformatting CopyNode for Input Tensor 0 to X"), which is in no model and no one can edit.
#include "qdq/analysis.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <map>

using namespace qdq;
using namespace qdq::test;

namespace
{

//! Each engine of the manifest once: the layer list with its profile where a folder has exactly one of each, and
//! every verbose build log alone.
std::vector<std::vector<std::string>> everyRealEngine()
{
    std::map<std::string, std::map<std::string, std::vector<std::string>>> bySlug; // folder -> kind -> files
    for (const ManifestEntry& entry : manifestEntries())
    {
        bySlug[entry.folder][entry.kind].push_back(entry.path());
    }
    std::vector<std::vector<std::string>> engines;
    for (const auto& [slug, kinds] : bySlug)
    {
        auto layers = kinds.find("layerinfo-json");
        auto profiles = kinds.find("profile-json");
        if (layers != kinds.end() && profiles != kinds.end() && layers->second.size() == 1 &&
            profiles->second.size() == 1)
        {
            engines.push_back({layers->second[0], profiles->second[0]});
        }
        if (auto logs = kinds.find("verbose-log"); logs != kinds.end())
        {
            for (const auto& log : logs->second)
            {
                engines.push_back({log});
            }
        }
    }
    return engines;
}

//! The names of the layers the builder inserted: correlated as reformats or copies, or named as one.
std::vector<std::string> builderInsertedLayers(const Report& report, const EnginePlan& plan)
{
    std::vector<std::string> names;
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        const bool inserted =
            i < report.correlation.layers.size() && report.correlation.layers[i].state == LayerState::kInsertedReformat;
        if (inserted || plan.layers[i].name.rfind("Reformatting CopyNode", 0) == 0)
        {
            names.push_back(plan.layers[i].name);
        }
    }
    return names;
}

} // namespace

TEST(RealDataAdvice, NoFixOnAnyRealEngineNamesABuilderInsertedLayer)
{
    REQUIRE_SHARED();
    std::size_t engines = 0;
    std::size_t withInsertedLayers = 0;
    for (const auto& files : everyRealEngine())
    {
        std::vector<std::filesystem::path> paths;
        for (const auto& file : files)
        {
            paths.push_back(realdata(file));
        }
        Inputs inputs = loadFiles(paths);
        Report report = diagnose(inputs);
        ++engines;
        if (inputs.engine() == nullptr)
        {
            continue;
        }
        const std::vector<std::string> inserted = builderInsertedLayers(report, *inputs.engine());
        withInsertedLayers += inserted.empty() ? 0 : 1;
        for (const Finding& finding : report.findings)
        {
            EXPECT_EQ(finding.fix.find("Reformatting CopyNode"), std::string::npos)
                << files.front() << " " << finding.rule << ": " << finding.fix;
            for (const auto& name : inserted)
            {
                EXPECT_EQ(finding.fix.find(name), std::string::npos)
                    << files.front() << " " << finding.rule << " names \"" << name << "\": " << finding.fix;
            }
        }
    }
    // The manifest's engines, and enough of them with builder reformats for the check to mean something.
    EXPECT_GE(engines, 25u);
    EXPECT_GE(withInsertedLayers, 10u);
}
