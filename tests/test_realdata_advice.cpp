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

// Issue 36, defect 8: Orin's downsample conv runs a DP4A kernel because its input arrives CHW4 from the downsample's
// own standalone QuantizeLinear, which residual-input-not-quantized names (the block input is float). It was listed
// under batchnorm-not-folded, whose finding names the downsample convs only as the layers writing float into the
// unfolded BatchNormalization. The stem's DP4A kernel, which the log's tactic timings explain, keeps its own place.
TEST(RealDataAdvice, OrinDownsampleDp4aFollowsTheStandaloneQuantizeThatWritesItsInput)
{
    REQUIRE_SHARED();
    Inputs inputs = loadFiles({realdata("trex-notebooks-yolo-orin-trt852/trt.out"),
                               realdata("trex-notebooks-yolo-orin-trt852/layer_info.json"),
                               realdata("trex-notebooks-yolo-orin-trt852/profile.json")});
    Report report = diagnose(inputs);
    const auto causeOfLayer = [&](const std::string& rule, const std::string& layerPart) -> std::optional<std::size_t>
    {
        for (const Finding& finding : report.findings)
        {
            for (const auto& layer : finding.engineLayers)
            {
                if (finding.rule == rule && layer.find(layerPart) != std::string::npos)
                {
                    return finding.rootCause;
                }
            }
        }
        return std::nullopt;
    };
    const auto downsampleDp4a =
        causeOfLayer("kernel-without-tensor-cores", "/backbone/layer2/layer2.0/downsample/downsample.0/Conv");
    const auto residual =
        causeOfLayer("residual-input-not-quantized",
                     "/backbone/layer2/layer2.0/downsample/downsample.0/_input_quantizer/QuantizeLinear");
    const auto batchnorm = causeOfLayer("batchnorm-not-folded", "downsample.1/BatchNormalization");
    ASSERT_TRUE(downsampleDp4a && residual && batchnorm);
    EXPECT_EQ(*downsampleDp4a, *residual);
    EXPECT_NE(*downsampleDp4a, *batchnorm);
    // The stem conv's DP4A finding (explained by the log's tactic timings) stays with the cause owning the stem.
    const auto stemDp4a = causeOfLayer("kernel-without-tensor-cores", "/backbone/conv1/Conv");
    const auto stemOwner = causeOfLayer("int8-conv-float-output", "/backbone/conv1/Conv");
    ASSERT_TRUE(stemDp4a && stemOwner);
    EXPECT_EQ(*stemDp4a, *stemOwner);
}
