// The code shape the design asks for (issue "A newcomer's first hour"): no function over 100 lines and no source
// file over 1,500 lines in the product's code, and the simulator's passes as docs/simulator.md lists them.
#include "src/simulation/pass_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace
{

namespace fs = std::filesystem;

std::vector<std::string> readLines(const fs::path& path)
{
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
    {
        lines.push_back(line);
    }
    return lines;
}

//! The product's C++ sources: everything under these folders (tests and benchmarks have long table-driven cases).
std::vector<fs::path> productSources()
{
    std::vector<fs::path> files;
    for (const char* folder : {"src", "parsers", "rules", "include", "tools"})
    {
        const fs::path root = fs::path(QDQ_SOURCE_DIR) / folder;
        if (!fs::exists(root))
        {
            continue;
        }
        for (const auto& entry : fs::recursive_directory_iterator(root))
        {
            const auto extension = entry.path().extension();
            if (entry.is_regular_file() && (extension == ".cpp" || extension == ".h"))
            {
                files.push_back(entry.path());
            }
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

bool isTypeOrNamespaceHead(const std::string& line)
{
    static const std::regex head(R"(^\s*(template\s*<.*>\s*)?(namespace|struct|class|enum|union)\b)");
    return std::regex_search(line, head) || (!line.empty() && line.back() == '=');
}

struct LongFunction
{
    std::string where;
    std::size_t lines;
};

//! Function bodies in the house style (Allman braces, .clang-format): a `{` alone on its line at column 0 (a free
//! function) or column 4 (a member defined in its class) after a line that closes a parameter list, up to the `}`
//! at the same column. Lambdas and blocks inside count towards their function.
std::vector<LongFunction> longFunctions(const fs::path& file, std::size_t limit)
{
    const auto lines = readLines(file);
    std::vector<LongFunction> found;
    for (std::size_t i = 1; i < lines.size(); ++i)
    {
        const std::string& line = lines[i];
        const bool column0 = line == "{";
        const bool column4 = line == "    {";
        if (!column0 && !column4)
        {
            continue;
        }
        std::size_t head = i - 1;
        while (head > 0 && lines[head].find_first_not_of(' ') == std::string::npos)
        {
            --head;
        }
        const std::string& headLine = lines[head];
        if (isTypeOrNamespaceHead(headLine) || headLine.find(')') == std::string::npos)
        {
            continue;
        }
        if (column4 && headLine.rfind("    ", 0) == 0 && headLine.size() > 4 && headLine[4] == ' ')
        {
            continue; // a block inside a function at column 4 (its head is indented further)
        }
        const std::string close = column0 ? "}" : "    }";
        std::size_t end = i + 1;
        while (end < lines.size() && lines[end].rfind(close, 0) != 0)
        {
            ++end;
        }
        const std::size_t length = end - i + 1;
        if (length > limit)
        {
            found.push_back({file.lexically_relative(QDQ_SOURCE_DIR).string() + ":" + std::to_string(head + 1) + " " +
                                 headLine.substr(headLine.find_first_not_of(' ')),
                             length});
        }
    }
    return found;
}

TEST(CodeShape, NoFunctionOfTheProductIsOverOneHundredLines)
{
    std::ostringstream report;
    std::size_t count = 0;
    for (const auto& file : productSources())
    {
        for (const auto& function : longFunctions(file, 100))
        {
            report << "  " << function.lines << " lines: " << function.where << "\n";
            ++count;
        }
    }
    EXPECT_EQ(count, 0u) << "functions over 100 lines (split them into named steps):\n" << report.str();
}

TEST(CodeShape, NoSourceFileOfTheProductIsOverFifteenHundredLines)
{
    std::ostringstream report;
    for (const auto& file : productSources())
    {
        const std::size_t lines = readLines(file).size();
        if (lines > 1500)
        {
            report << "  " << lines << " lines: " << file.lexically_relative(QDQ_SOURCE_DIR).string() << "\n";
        }
    }
    EXPECT_TRUE(report.str().empty()) << "files over 1,500 lines:\n" << report.str();
}

TEST(CodeShape, TheLengthCheckFindsALongFunctionAndSkipsTypesAndBlocks)
{
    const fs::path file = fs::temp_directory_path() / "qdq_code_shape_probe.cpp";
    {
        std::ofstream out(file);
        out << "namespace x\n{\nstruct S\n{\n    int f(int a) const\n    {\n";
        for (int i = 0; i < 120; ++i)
        {
            out << "        a += " << i << ";\n";
        }
        out << "        return a;\n    }\n};\n\nint g()\n{\n    if (true)\n    {\n        return 1;\n    }\n    return "
               "0;\n}\n"
            << "} // namespace x\n";
    }
    const auto found = longFunctions(file, 100);
    fs::remove(file);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_NE(found[0].where.find("int f(int a) const"), std::string::npos) << found[0].where;
    EXPECT_EQ(found[0].lines, 123u);
    EXPECT_TRUE(longFunctions(fs::path(QDQ_SOURCE_DIR) / "README.md", 100).empty());
}

TEST(CodeShape, TheSimulatorPassesRunInTheOrderItsPageLists)
{
    const auto page = readLines(fs::path(QDQ_SOURCE_DIR) / "docs" / "simulator.md");
    std::vector<std::string> documented;
    static const std::regex row(R"(^\| `([a-z0-9-]+)` \| `([^`]+)`)");
    for (const auto& line : page)
    {
        std::smatch match;
        if (std::regex_search(line, match, row))
        {
            documented.push_back(match[1]);
            const fs::path file = fs::path(QDQ_SOURCE_DIR) / "src" / "simulation" / std::string(match[2]);
            EXPECT_TRUE(fs::exists(file)) << "docs/simulator.md names " << file;
        }
    }
    std::vector<std::string> registered;
    for (const auto& pass : qdq::simulation::layerPasses())
    {
        registered.emplace_back(pass.name);
        EXPECT_TRUE(fs::exists(fs::path(QDQ_SOURCE_DIR) / "src" / "simulation" /
                               std::string(pass.file.substr(0, pass.file.find(',')))))
            << pass.file;
    }
    EXPECT_EQ(documented, registered);
}

} // namespace
