// The rule catalogue: every registered rule has a unique slug, its page docs/rules/<slug>.md with the sections the
// project asks for, and tests that name it.
#include "qdq/analysis.h"
#include "test_support.h"

#include <gtest/gtest.h>

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
