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
                                "libgraphviz-dev", "libgtest-dev", "cmake", "g++", "pkg-config", "chromium"})
    {
        EXPECT_NE(command.find(package), std::string::npos) << package;
    }
    EXPECT_NE(command.find("./build/qdq-doctor demo"), std::string::npos);
}

TEST(Readme, DemoRunsFromTheBinaryAlone)
{
    auto result = runCli({"demo"});
    EXPECT_EQ(result.exitStatus, 0) << result.err;
    EXPECT_NE(result.out.find("conv-act-pool-blocked"), std::string::npos);
    EXPECT_NE(result.out.find("MaxPool_12"), std::string::npos);
}
