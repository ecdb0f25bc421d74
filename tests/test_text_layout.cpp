// The text report's layout (src/reporters/text_layout.cpp): wrapping, shortened repeated names, folded notes; and
// the real A100 report laid out at 100 columns.
#include "src/reporters/text_layout.h"
#include "test_support.h"

#include "qdq/text_report.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace qdq;
using namespace qdq::test;
using namespace qdq::text_layout;

namespace
{

std::vector<std::string> linesOf(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
    {
        lines.push_back(line);
    }
    return lines;
}

std::size_t widestLine(const std::string& text)
{
    std::size_t widest = 0;
    for (const auto& line : linesOf(text))
    {
        std::size_t width = 0;
        for (char c : line)
        {
            width += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
        }
        widest = std::max(widest, width);
    }
    return widest;
}

} // namespace

TEST(TextLayout, LongLinesWrapUnderTheirLabelAndShortOnesStay)
{
    const std::string evidence =
        "   evidence:      layers.json:89 layer \"QuantizeLinear_15\": standalone Scale reading "
        "Reformatted Output Tensor 0 to MaxPool_12 (after 1 builder reformat(s))";
    const std::string wrapped = wrapLines(evidence + "\nshort line\n", 80);
    const auto lines = linesOf(wrapped);
    ASSERT_GE(lines.size(), 3u) << wrapped;
    EXPECT_LE(widestLine(wrapped), 80u);
    // The first line keeps its aligned label; every continuation starts under the value, column 18.
    EXPECT_TRUE(lines[0].starts_with("   evidence:      layers.json:89")) << lines[0];
    for (std::size_t i = 1; i + 1 < lines.size(); ++i)
    {
        EXPECT_TRUE(lines[i].starts_with(std::string(18, ' '))) << lines[i];
        EXPECT_NE(lines[i][18], ' ');
    }
    EXPECT_EQ(lines.back(), "short line");
    // Every word survives, in order.
    std::string joined;
    for (const auto& line : lines)
    {
        joined += line.substr(line.find_first_not_of(' ')) + " ";
    }
    EXPECT_NE(joined.find("(after 1 builder reformat(s)) short line"), std::string::npos) << joined;
    // A line that fits is left exactly as it was, trailing newline and all.
    EXPECT_EQ(wrapLines("a b c\n", 80), "a b c\n");
    EXPECT_EQ(wrapLines("a b c", 80), "a b c");
}

TEST(TextLayout, NumberedAndBulletedLinesHangAfterTheirMarker)
{
    const std::string item = "12. [warning] " + std::string(60, 'x') + " " + std::string(50, 'y');
    const auto numbered = linesOf(wrapLines(item, 80));
    ASSERT_EQ(numbered.size(), 2u);
    EXPECT_EQ(numbered[1], std::string(4, ' ') + std::string(50, 'y'));
    const auto bullet = linesOf(wrapLines("  - " + std::string(70, 'a') + " " + std::string(20, 'b'), 80));
    ASSERT_EQ(bullet.size(), 2u);
    EXPECT_EQ(bullet[1], std::string(4, ' ') + std::string(20, 'b'));
}

TEST(TextLayout, AWordWiderThanTheLineIsCutAtACharacterBoundary)
{
    // 150 two-byte characters: cut into lines of at most 100 characters, never inside a character.
    std::string word;
    for (int i = 0; i < 150; ++i)
    {
        word += "\xC3\xA9";
    }
    const std::string wrapped = wrapLines("  " + word, 100);
    EXPECT_LE(widestLine(wrapped), 100u);
    std::string rejoined;
    for (const auto& line : linesOf(wrapped))
    {
        rejoined += line.substr(line.find_first_not_of(' '));
    }
    EXPECT_EQ(rejoined, word);
}

TEST(TextLayout, ARepeatedLongNameIsShortenedAfterItsFirstMention)
{
    const std::string fused = "layer1.0.conv2.weight + QuantizeLinear_32 + Conv_34 + BatchNormalization_35 + Add_36 + "
                              "Relu_37";
    const std::string text = "first \"" + fused + "\"\nagain \"" + fused + "\" and \"" + fused + "\"\n";
    const std::string shortened = shortenRepeatedNames(text, {fused});
    EXPECT_EQ(shortened, "first \"" + fused +
                             "\"\nagain \"layer1.0.conv2.weight + ... + Relu_37\" and "
                             "\"layer1.0.conv2.weight + ... + Relu_37\"\n");
    // A short name, or two long names whose short forms would be the same, are left whole.
    const std::string twin = "layer1.0.conv2.weight + QuantizeLinear_33 + Conv_35 + BatchNormalization_36 + Add_37 + "
                             "Relu_37";
    const std::string both = fused + " " + twin + " " + fused + " " + twin;
    EXPECT_EQ(shortenRepeatedNames(both, {fused, twin}), both);
    EXPECT_EQ(shortenRepeatedNames("Conv_1 Conv_1", {"Conv_1"}), "Conv_1 Conv_1");
}

TEST(TextLayout, NotCheckedNotesFoldIntoOnePerMissingInput)
{
    const std::vector<std::string> notes = {"a-rule: not checked, needs the ONNX model", "other note",
                                            "b-rule: not checked, needs the ONNX model",
                                            "c-rule: not checked, needs the engine's layer list"};
    const auto folded = foldNotCheckedNotes(notes);
    ASSERT_EQ(folded.size(), 3u);
    EXPECT_EQ(folded[0], "other note");
    EXPECT_EQ(folded[1], "2 rules not checked, for want of the ONNX model (the JSON report's notes name them)");
    EXPECT_EQ(folded[2], "c-rule not checked, for want of the engine's layer list");
    // A note that only mentions the words is kept as it is.
    EXPECT_EQ(foldNotCheckedNotes({"the model: not checked, needs care"}).front(),
              "the model: not checked, needs care");
}

// The A100 ResNet-18 QAT engine's report (its layer list, profile, timing and metadata files): every line within 100
// columns, every finding and its rule page still there, the 19 "not checked" notes one line.
TEST(RealDataTextLayout, TrexResnetQatReportFitsOneHundredColumns)
{
    REQUIRE_SHARED();
    const Inputs inputs = trex("trex-pt-resnet-a100-qat/resnet-qat");
    const Report report = diagnose(inputs);
    const std::string text = renderReportText(report, inputs);
    EXPECT_LE(widestLine(text), 100u) << text;
    ASSERT_FALSE(report.findings.empty());
    // Every finding keeps its number and rule; findings of one rule in a row share an entry ("1-8. [warning] rule").
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        EXPECT_NE(text.find("] " + report.findings[f].rule), std::string::npos) << report.findings[f].rule;
        const std::string number = std::to_string(f + 1) + ". ";
        EXPECT_TRUE(text.find("\n" + number) != std::string::npos || text.find(" " + number) != std::string::npos ||
                    text.find("\n" + number.substr(0, number.size() - 2) + "-") != std::string::npos)
            << number;
    }
    EXPECT_NE(text.find("docs/rules/<rule>.md"), std::string::npos);
    EXPECT_EQ(text.find(": not checked, needs"), std::string::npos) << text;
    EXPECT_NE(text.find("rules not checked, for want of the ONNX model"), std::string::npos) << text;
    // A wider terminal gets longer lines, never a different report.
    const std::string wide = renderReportText(report, inputs, 200);
    EXPECT_LE(widestLine(wide), 200u);
    EXPECT_GT(widestLine(wide), 100u);
}

// The issue "A newcomer's first hour": that report at most half its 195 lines, with the same findings; the symptoms of
// a listed cause one line each, their messages in --details, which keeps every finding in full.
TEST(RealDataTextLayout, TrexResnetQatReportIsHalfItsLengthAndDetailsKeepEveryMessage)
{
    REQUIRE_SHARED();
    const Inputs inputs = trex("trex-pt-resnet-a100-qat/resnet-qat");
    const Report report = diagnose(inputs);
    const std::string text = renderReportText(report, inputs);
    const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
    EXPECT_LE(lines, 97u) << text;
    const std::string details = renderReportText(report, inputs, TextReportOptions{100, true});
    EXPECT_LE(widestLine(details), 100u);
    std::size_t symptoms = 0;
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        const Finding& finding = report.findings[f];
        // Every message is in the detailed text (wrapped, long names shortened: compare its words before a name).
        const std::string head = finding.message.substr(0, std::min<std::size_t>(finding.message.find(" + "), 60));
        EXPECT_NE(flowed(details).find(head), std::string::npos) << head;
        if (finding.symptom && finding.rootCause)
        {
            ++symptoms;
            const std::size_t at = text.find("\n" + std::to_string(f + 1) + ". [");
            ASSERT_NE(at, std::string::npos) << f + 1;
            const std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
            EXPECT_NE(line.find("(symptom of cause"), std::string::npos) << line;
        }
    }
    EXPECT_GE(symptoms, 3u);
    EXPECT_GT(std::count(details.begin(), details.end(), '\n'), static_cast<std::ptrdiff_t>(lines));
    EXPECT_NE(details.find("     how: "), std::string::npos) << "--details says how each saving is estimated";
    EXPECT_EQ(text.find("     how: "), std::string::npos);
}

// `diagnose --details` reaches the text report: on each bundled sample the detailed text is at least as long as the
// default one; --help lists the flag.
TEST(TextLayout, DiagnoseDetailsFlagGivesTheDetailedText)
{
    const std::filesystem::path samples = std::filesystem::path(QDQ_SOURCE_DIR) / "samples";
    std::size_t longer = 0;
    for (const auto& entry : std::filesystem::directory_iterator(samples))
    {
        if (!entry.is_directory())
        {
            continue;
        }
        const CommandResult compact = runCli({"diagnose", entry.path().string()});
        const CommandResult details = runCli({"diagnose", "--details", entry.path().string()});
        ASSERT_EQ(compact.exitStatus, details.exitStatus) << entry.path() << details.err;
        EXPECT_GE(details.out.size(), compact.out.size()) << entry.path();
        longer += details.out.size() > compact.out.size() ? 1 : 0;
    }
    EXPECT_GT(longer, 0u) << "no sample's detailed text differs from the default one";
    const CommandResult help = runCli({"diagnose", "--help"});
    EXPECT_NE(help.out.find("--details"), std::string::npos) << help.out;
}
