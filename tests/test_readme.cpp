// The README's two commands are the contract with a fresh machine: keep them and .ci/run in step.
#include "test_support.h"

#include <gtest/gtest.h>

using namespace qdq::test;

TEST(Readme, CarriesTheCiTestCommand)
{
    std::string ci = readFile(std::filesystem::path(QDQ_SOURCE_DIR) / ".ci" / "run");
    std::string marker = "TEST_COMMAND='";
    auto start = ci.find(marker);
    ASSERT_NE(start, std::string::npos);
    start += marker.size();
    std::string command = ci.substr(start, ci.find('\'', start) - start);
    std::string readme = readFile(std::filesystem::path(QDQ_SOURCE_DIR) / "README.md");
    EXPECT_NE(readme.find("\n" + command + "\n"), std::string::npos) << command;
}

TEST(Readme, FirstCommandInstallsBuildsAndRunsTheDemo)
{
    std::string readme = readFile(std::filesystem::path(QDQ_SOURCE_DIR) / "README.md");
    // Works as root in a container without sudo and as a user with sudo.
    auto line = readme.find("SUDO=$(command -v sudo); $SUDO apt-get update && $SUDO apt-get install");
    ASSERT_NE(line, std::string::npos);
    std::string command = readme.substr(line, readme.find('\n', line) - line);
    for (const char* package : {"libonnx-dev", "libprotobuf-dev", "nlohmann-json3-dev", "libcli11-dev",
                                "libgraphviz-dev", "libgtest-dev", "cmake", "g++", "pkg-config"})
    {
        EXPECT_NE(command.find(package), std::string::npos) << package;
    }
    // Chromium (about half of what the first command would download) is needed only by the HTML report's tests: the
    // second command installs it.
    EXPECT_EQ(command.find("chromium"), std::string::npos);
    EXPECT_NE(readme.find("$SUDO apt-get install -y --no-install-recommends chromium\n"), std::string::npos);
    EXPECT_NE(command.find("./build/qdq-doctor demo"), std::string::npos);
}

// The first command configures the build as the second does (QDQ_WERROR is on by default), so the second reuses
// every object the first built.
TEST(Readme, BothCommandsConfigureTheBuildAlike)
{
    const std::string cmake = readFile(std::filesystem::path(QDQ_SOURCE_DIR) / "CMakeLists.txt");
    EXPECT_NE(cmake.find("option(QDQ_WERROR \"Treat compiler warnings as errors\" ON)"), std::string::npos);
    EXPECT_NE(cmake.find("install(TARGETS qdq-doctor"), std::string::npos);
}

// A script once rewrote bench/README.md into 30 MB of repeated tables; no text file of the project is that large.
TEST(Readme, NoTextFileOfTheProjectPassesOneMegabyte)
{
    const std::filesystem::path root(QDQ_SOURCE_DIR);
    std::vector<std::string> large;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    {
        const std::string name = it->path().filename().string();
        if (it->is_directory(ec))
        {
            // Build trees (any folder with a CMakeCache.txt), git's own folder and hidden folders are not sources.
            if (name.starts_with(".") || std::filesystem::exists(it->path() / "CMakeCache.txt", ec))
            {
                it.disable_recursion_pending();
            }
            continue;
        }
        if (!it->is_regular_file(ec) || it->file_size(ec) <= 1024 * 1024)
        {
            continue;
        }
        const std::string head = readFile(it->path()).substr(0, 8192);
        if (head.find('\0') == std::string::npos)
        {
            large.push_back(std::filesystem::relative(it->path(), root, ec).string());
        }
    }
    EXPECT_TRUE(large.empty()) << "text files over 1 MB: " << testing::PrintToString(large);
}

TEST(Readme, DemoRunsFromTheBinaryAlone)
{
    auto result = runCli({"demo"});
    EXPECT_EQ(result.exitStatus, 0) << result.err;
    EXPECT_NE(result.out.find("conv-act-pool-blocked"), std::string::npos);
    EXPECT_NE(result.out.find("MaxPool_12"), std::string::npos);
}
