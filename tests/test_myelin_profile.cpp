// Profile rows of Myelin kernels timed on their region (include/qdq/myelin_profile.h): the TensorRT 11 profile
// fixtures of tests/fixtures/profile/trt11 (written from the cookbook's printed 11.1 profiles) against the real 11.1
// layer list of cookbook111-mnist-fp32-trtexec-h100, and hand-built plans that differ in one fact.
#include "graph_builder.h"
#include "qdq/diagnostics.h"
#include "qdq/load_inputs.h"
#include "qdq/myelin_profile.h"
#include "qdq/precision_summary.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>

using namespace qdq;
using namespace qdq::test;

namespace
{

constexpr std::string_view kUnmatched = "unmatched profile entries";

Profile profileOf(const std::vector<std::pair<std::string, double>>& rows)
{
    Profile profile;
    profile.sourcePath = "profile.json";
    for (const auto& [name, ms] : rows)
    {
        ProfileEntry entry;
        entry.name = name;
        entry.averageMs = ms;
        entry.timeMs = ms;
        profile.entries.push_back(entry);
    }
    return profile;
}

EngineLayer named(const std::string& name, const std::string& type)
{
    return layer(name, type, {{name + "_in", "Float"}}, {{name + "_out", "Float"}});
}

bool hasUnmatchedGroup(const PrecisionSummary& summary)
{
    return std::any_of(summary.byKind.begin(), summary.byKind.end(),
                       [](const PrecisionSummary::Group& group) { return group.name == kUnmatched; });
}

double layerTimeSum(const Report& report)
{
    double sum = 0.0;
    for (const auto& mapping : report.correlation.layers)
    {
        sum += mapping.timeMs.value_or(0.0);
    }
    return sum;
}

bool anyNoteHas(const Report& report, std::string_view text)
{
    const auto has = [&](const std::string& note) { return note.find(text) != std::string::npos; };
    return std::any_of(report.notes.begin(), report.notes.end(), has) ||
           std::any_of(report.correlation.notes.begin(), report.correlation.notes.end(), has);
}

//! Loads and diagnoses files, kept alive for the test binary (the report holds views into its inputs).
std::pair<const Inputs*, Report> diagnoseFiles(const std::vector<std::filesystem::path>& files)
{
    static std::deque<Inputs> kept;
    Inputs& inputs = kept.emplace_back(loadFiles(files));
    return {&inputs, diagnose(inputs)};
}

} // namespace

TEST(MyelinProfile, KernelOfAnotherBuildGoesToTheSameKernelElseTheGraphsFirstLayer)
{
    const EnginePlan plan = planOf({named("conv", "CaskConvolution"), named("node_linear_myl4_0", "gemm"),
                                    named("__myl_MulSum_myl4_1", "kgen"), named("__myl_CastReshCast_myl4_4", "kgen")},
                                   {"x", "y"});
    const Profile profile = profileOf({{"conv", 0.01},
                                       {"node_linear_myl4_1", 0.02},
                                       {"__myl_DivTopk_myl4_4", 0.004},
                                       {"__myl_CastReshCast_myl4_5", 0.003},
                                       {"__myl_Other_myl9_0", 0.001},
                                       {"Reformatting CopyNode for Output Tensor 0", 0.002}});
    const auto kernels = attributeMyelinKernelTimes(plan, profile, profileEntriesNamingLayers(plan, profile));
    ASSERT_EQ(kernels.size(), 3u);
    EXPECT_EQ(kernels[0].entry, 1u);
    EXPECT_EQ(kernels[0].layer, 1u);
    EXPECT_EQ(kernels[0].match, MyelinKernelTime::Match::kSameKernel);
    EXPECT_EQ(kernels[1].layer, 1u); // no __myl_DivTopk layer: the graph's first
    EXPECT_EQ(kernels[1].match, MyelinKernelTime::Match::kSameGraph);
    EXPECT_EQ(kernels[2].layer, 3u);
    // A kernel of a graph the plan does not have (myl9) and a row that is no Myelin kernel stay unmatched.
    const Report report = runDiagnose(std::nullopt, plan, profile);
    EXPECT_NEAR(layerTimeSum(report), 0.01 + 0.02 + 0.004 + 0.003, 1e-12);
    EXPECT_TRUE(anyNoteHas(report, "3 profile entries are Myelin kernels"));
}

TEST(MyelinProfile, ForeignNodeRegionsTakeTheirGraphsInEngineOrder)
{
    const EnginePlan one =
        planOf({named("conv", "CaskConvolution"), named("{ForeignNode[fc1...fc2]}", "Myelin")}, {"x", "y"});
    const Profile profile = profileOf({{"conv", 0.01}, {"fc1_myl0_1", 0.02}, {"__myl_MulSum_myl0_2", 0.004}});
    const auto kernels = attributeMyelinKernelTimes(one, profile, profileEntriesNamingLayers(one, profile));
    ASSERT_EQ(kernels.size(), 2u);
    EXPECT_EQ(kernels[0].layer, 1u);
    EXPECT_EQ(kernels[0].match, MyelinKernelTime::Match::kRegionByOrder);
    const Report report = runDiagnose(std::nullopt, one, profile);
    EXPECT_NEAR(report.correlation.layers[1].timeMs.value_or(0.0), 0.024, 1e-12);
    EXPECT_TRUE(anyNoteHas(report, "guessed from the order of the regions"));
    // Near-identical: two regions and one timed graph: which region ran it is not told, nothing is attributed.
    const EnginePlan two = planOf({named("{ForeignNode[a...b]}", "Myelin"), named("conv", "CaskConvolution"),
                                   named("{ForeignNode[fc1...fc2]}", "Myelin")},
                                  {"x", "y"});
    EXPECT_TRUE(attributeMyelinKernelTimes(two, profile, profileEntriesNamingLayers(two, profile)).empty());
}

TEST(MyelinProfile, L2CacheLayersTakeNoKernelTime)
{
    const EnginePlan plan =
        planOf({named("__mye1085_myl0_0", "custom_layer"), named("node_linear_myl0_7", "gemm")}, {"x", "y"});
    const Profile profile = profileOf({{"__myl_Move_myl0_1", 0.002}});
    const auto kernels = attributeMyelinKernelTimes(plan, profile, profileEntriesNamingLayers(plan, profile));
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_EQ(kernels[0].layer, 1u);
}

TEST(MyelinProfile, ProfileOfRegionKernelsPairsWithAOneRegionList)
{
    const auto dir = tempDir("myelin-profile-pairing");
    const auto layers = writeFile(dir / "layers.json", R"({"Layers": ["{ForeignNode[node_conv2d...node_linear_1]}"]})");
    const auto kernels = writeFile(dir / "kernels.json", R"([{ "count" : 10 }
, { "name" : "__myl_Move_myl0_1", "timeMs" : 0.02, "averageMs" : 0.002, "medianMs" : 0.002, "percentage" : 20 }
, { "name" : "node_conv2d_myl0_2", "timeMs" : 0.05, "averageMs" : 0.005, "medianMs" : 0.005, "percentage" : 50 }
, { "name" : "node_linear_myl0_7", "timeMs" : 0.03, "averageMs" : 0.003, "medianMs" : 0.003, "percentage" : 30 }
])");
    EXPECT_NO_THROW(loadFiles({layers, kernels}));
    // Near-identical: the same rows without Myelin's kernel suffix are another engine's layers.
    const auto other = writeFile(dir / "other.json", R"([{ "count" : 10 }
, { "name" : "__myl_Move", "timeMs" : 0.02, "averageMs" : 0.002, "medianMs" : 0.002, "percentage" : 20 }
, { "name" : "node_conv2d", "timeMs" : 0.05, "averageMs" : 0.005, "medianMs" : 0.005, "percentage" : 50 }
, { "name" : "node_linear", "timeMs" : 0.03, "averageMs" : 0.003, "medianMs" : 0.003, "percentage" : 30 }
])");
    EXPECT_THROW(loadFiles({layers, other}), InputError);
}

TEST(RealDataMyelinProfile, ElevenOneListAndAProfileOfAnotherBuildLeaveNoEngineTimeUnmatched)
{
    REQUIRE_SHARED();
    const auto [inputs, report] =
        diagnoseFiles({realdata("cookbook111-mnist-fp32-trtexec-h100/model-trained-exportLayerInfo.log"),
                       fixture("profile/trt11/mnist-h100-other-build.json")});
    const PrecisionSummary summary = summarizePrecision(report, *inputs);
    EXPECT_FALSE(hasUnmatchedGroup(summary));
    EXPECT_NEAR(layerTimeSum(report), inputs->timings()->totalAverageMs(), 1e-9);
    // Six rows are Myelin kernels of graph myl4 that the list does not name (read off the fixture).
    EXPECT_TRUE(anyNoteHas(report, "6 profile entries are Myelin kernels"));
    const EnginePlan& plan = *inputs->engine();
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        if (plan.layers[i].name == "__myl_CastReshCast_myl4_4")
        {
            // its own kernel in the other build, __myl_CastReshCast_myl4_5 (0.00355272 ms)
            EXPECT_NEAR(report.correlation.layers[i].timeMs.value_or(0.0), 0.00355272, 1e-12);
        }
    }
}

TEST(RealDataMyelinProfile, ElevenOneListAndItsOwnProfilePairRowForRow)
{
    REQUIRE_SHARED();
    const auto [inputs, report] =
        diagnoseFiles({realdata("cookbook111-mnist-fp32-trtexec-h100/model-trained-exportLayerInfo.log"),
                       fixture("profile/trt11/mnist-h100-same-build.json")});
    const PrecisionSummary summary = summarizePrecision(report, *inputs);
    EXPECT_FALSE(hasUnmatchedGroup(summary));
    EXPECT_FALSE(anyNoteHas(report, "profile entries are Myelin kernels"));
    const Profile& profile = *inputs->timings();
    const EnginePlan& plan = *inputs->engine();
    ASSERT_EQ(plan.layers.size(), profile.entries.size());
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        EXPECT_EQ(plan.layers[i].name, profile.entries[i].name);
        EXPECT_NEAR(report.correlation.layers[i].timeMs.value_or(-1.0), profile.entries[i].averageMs, 1e-12);
    }
}
