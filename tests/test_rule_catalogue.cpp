// The rule catalogue: every registered rule has a unique slug, its page docs/rules/<slug>.md with the sections the
// project asks for, and tests that name it.
#include "graph_builder.h"
#include "qdq/analysis.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

using namespace qdq;
using namespace qdq::test;

TEST(RuleCatalogue, EveryRuleHasUniqueSlugAndInfo)
{
    std::set<std::string> slugs;
    for (const auto& rule : allRules())
    {
        const RuleInfo& info = rule->info();
        EXPECT_TRUE(slugs.insert(info.slug).second) << "duplicate slug " << info.slug;
        EXPECT_FALSE(info.summary.empty()) << info.slug;
        EXPECT_FALSE(info.trtVersions.empty()) << info.slug;
        for (char c : info.slug)
        {
            EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') << info.slug;
        }
    }
    EXPECT_GE(slugs.size(), 27u);
}

TEST(RuleCatalogue, EveryRuleHasItsDocPage)
{
    for (const auto& rule : allRules())
    {
        const std::string slug = rule->info().slug;
        auto page = std::filesystem::path(QDQ_SOURCE_DIR) / "docs" / "rules" / (slug + ".md");
        ASSERT_TRUE(std::filesystem::exists(page)) << page;
        std::string text = readFile(page);
        EXPECT_EQ(text.rfind("# " + slug, 0), 0u) << page << " must start with its slug";
        // "Under strong typing:" says how the rule reads in a strongly typed build (every TensorRT 11 build).
        for (const char* section : {"## Symptom", "## Cause", "## Fix", "## Sources", "Under strong typing:"})
        {
            EXPECT_NE(text.find(section), std::string::npos) << page << " lacks " << section;
        }
    }
}

TEST(RuleCatalogue, EveryRuleIsNamedByATriggerAndANonTriggerTest)
{
    // Tests name the rule's suite Rule<UpperCamelSlug> with a triggering case and a silent one; the slug itself
    // appears in the test sources.
    std::string sources;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(QDQ_SOURCE_DIR) / "tests"))
    {
        if (entry.path().extension() == ".cpp")
        {
            sources += readFile(entry.path());
        }
    }
    for (const auto& rule : allRules())
    {
        const std::string slug = rule->info().slug;
        EXPECT_NE(sources.find("\"" + slug + "\""), std::string::npos) << slug << " is not named by any test";
    }
}

namespace
{

//! Input sets for the flag checks: every bundled sample, a generated model that the rules without
//! kReadsCorrelation report on, and with ../shared three real models and real engines.
std::vector<std::vector<std::string>> flagCheckInputs()
{
    std::vector<std::vector<std::string>> inputSets;
    {
        // An asymmetric uint8 activation quantizer (nonzero-zero-point) in front of a conv with INT8 weight
        // initializers (int8-weight-initializer).
        GraphBuilder g;
        const std::string scale = g.scale("/in_q/scale", 0.02f);
        const std::string zeroPoint = g.zeroPoint("/in_q/zero_point", true, 128);
        const std::string q = g.node("QuantizeLinear", "/in_q/QuantizeLinear", {g.input("x"), scale, zeroPoint});
        const std::string dq = g.node("DequantizeLinear", "/in_q/DequantizeLinear", {q, scale, zeroPoint});
        g.output(g.node("Conv", "/conv/Conv", {dq, g.int8Weight("conv", 8, 3)}));
        const auto path = tempDir("flag-check") / "model.onnx";
        g.save(path.string());
        inputSets.push_back({path.string()});
    }
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(QDQ_SOURCE_DIR) / "samples"))
    {
        std::vector<std::string> files;
        for (const auto& file : std::filesystem::recursive_directory_iterator(entry.path()))
        {
            const std::string name = file.path().filename().string();
            if (file.path().parent_path().filename() == "implicit")
            {
                continue; // sample e: one engine (explicit) with the model
            }
            if (name.ends_with(".onnx") || name.ends_with(".json") || name.ends_with(".log"))
            {
                files.push_back(file.path().string());
            }
        }
        std::sort(files.begin(), files.end());
        if (!files.empty())
        {
            inputSets.push_back(files);
        }
    }
    if (sharedDir())
    {
        for (const char* model : {"resnet18-ort-qdq.onnx", "yolov8lite-qat-outputs.onnx", "resnet18-qat-residual.onnx"})
        {
            inputSets.push_back({sharedModel(model).string()});
        }
        inputSets.push_back({realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.graph.json").string(),
                             realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.profile.json").string()});
        inputSets.push_back(
            {realdata("issue-trt-3385-qdq-dwconv-trt852/issue-trt-3385-qdq-dwconv-trt852.log.txt").string()});
    }
    return inputSets;
}

//! Runs every rule whose flags lack `flag` (and whose inputs are there) with a full context and with one where
//! what the flag guards is empty; expects the same findings. Returns how many findings were compared.
std::size_t compareWithout(unsigned flag)
{
    std::size_t compared = 0;
    for (const auto& files : flagCheckInputs())
    {
        SCOPED_TRACE(files.front());
        InputFiles inputFiles;
        inputFiles.files = files;
        Inputs inputs = loadInputs(inputFiles, Limits{});
        Correlation correlation = correlate(inputs);
        Prediction prediction = inputs.onnx ? predictEngine(*inputs.onnx) : Prediction{};
        const Prediction noPrediction;
        const Correlation noCorrelation;
        AnalysisOptions options;
        const Context full{inputs, correlation, prediction, options};
        const Context lacking{inputs, flag == kReadsCorrelation ? noCorrelation : correlation,
                              flag == kReadsPrediction ? noPrediction : prediction, options};
        for (const auto& rule : allRules())
        {
            if ((rule->info().needs & flag) != 0 || ((rule->info().needs & kNeedsOnnx) != 0 && !inputs.onnx) ||
                ((rule->info().needs & kNeedsEngine) != 0 && inputs.engine() == nullptr))
            {
                continue;
            }
            FindingSink a;
            FindingSink b;
            rule->check(full, a);
            rule->check(lacking, b);
            EXPECT_EQ(a.findings().size(), b.findings().size()) << rule->info().slug;
            for (std::size_t i = 0; i < a.findings().size() && i < b.findings().size(); ++i)
            {
                EXPECT_EQ(a.findings()[i].message, b.findings()[i].message) << rule->info().slug;
                EXPECT_EQ(a.findings()[i].onnxNodes, b.findings()[i].onnxNodes) << rule->info().slug;
                EXPECT_EQ(a.findings()[i].engineLayers, b.findings()[i].engineLayers) << rule->info().slug;
                EXPECT_EQ(a.findings()[i].costMs, b.findings()[i].costMs) << rule->info().slug;
            }
            compared += a.findings().size();
        }
    }
    return compared;
}

} // namespace

// diagnose runs the rules without kReadsPrediction before the prediction is made, handing them an empty one. A rule
// that reads the prediction but lacks the flag would then judge differently from a run with the prediction: check
// on the bundled samples, real models and real engines that every such rule finds the same either way.
TEST(RuleCatalogue, RulesWithoutThePredictionFlagDoNotReadIt)
{
    EXPECT_GT(compareWithout(kReadsPrediction), 0U); // the inputs do trigger findings
}

// The same for kReadsCorrelation: rules without it may run before the correlation is made. (A rule that reads the
// correlation may index it by layer, so a flagged rule cannot be run on an empty one.)
TEST(RuleCatalogue, RulesWithoutTheCorrelationFlagDoNotReadIt)
{
    EXPECT_GT(compareWithout(kReadsCorrelation), 0U);
}
