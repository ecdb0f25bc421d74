// The rule catalogue: every registered rule has a unique slug, its page docs/rules/<slug>.md with the sections the
// project asks for, and tests that name it.
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
        for (const char* section : {"## Symptom", "## Cause", "## Fix", "## Sources"})
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

// diagnose runs the rules without kReadsPrediction before the prediction is made, handing them an empty one. A rule
// that reads the prediction but lacks the flag would then judge differently from a run with the prediction: check
// on the bundled samples and the real models that every such rule finds the same either way.
TEST(RuleCatalogue, RulesWithoutThePredictionFlagDoNotReadIt)
{
    std::vector<std::vector<std::string>> inputSets;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(QDQ_SOURCE_DIR) / "samples"))
    {
        std::vector<std::string> files;
        for (const auto& file : std::filesystem::directory_iterator(entry.path()))
        {
            const std::string name = file.path().filename().string();
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
    }
    ASSERT_FALSE(inputSets.empty());
    std::size_t compared = 0;
    for (const auto& files : inputSets)
    {
        SCOPED_TRACE(files.front());
        InputFiles inputFiles;
        inputFiles.files = files;
        Inputs inputs = loadInputs(inputFiles, Limits{});
        Correlation correlation = correlate(inputs);
        Prediction prediction = inputs.onnx ? predictEngine(*inputs.onnx) : Prediction{};
        const Prediction empty;
        AnalysisOptions options;
        const Context withPrediction{inputs, correlation, prediction, options};
        const Context withoutPrediction{inputs, correlation, empty, options};
        for (const auto& rule : allRules())
        {
            if ((rule->info().needs & kReadsPrediction) != 0 ||
                ((rule->info().needs & kNeedsOnnx) != 0 && !inputs.onnx) ||
                ((rule->info().needs & kNeedsEngine) != 0 && inputs.engine() == nullptr))
            {
                continue;
            }
            FindingSink a;
            FindingSink b;
            rule->check(withPrediction, a);
            rule->check(withoutPrediction, b);
            ASSERT_EQ(a.findings().size(), b.findings().size()) << rule->info().slug;
            for (std::size_t i = 0; i < a.findings().size(); ++i)
            {
                EXPECT_EQ(a.findings()[i].message, b.findings()[i].message) << rule->info().slug;
                EXPECT_EQ(a.findings()[i].onnxNodes, b.findings()[i].onnxNodes) << rule->info().slug;
            }
            compared += a.findings().size();
        }
    }
    EXPECT_GT(compared, 0U); // the inputs do trigger findings
}
