// Helpers shared by the tests: where the project's fixtures and ../shared live, temporary folders, running the CLI.
#pragma once

#include "qdq/analysis.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace qdq::test
{

//! The project's own fixtures: tests/fixtures/<relative>.
std::filesystem::path fixture(const std::string& relative);

//! ../shared (or $QDQ_SHARED_DIR) when present.
std::optional<std::filesystem::path> sharedDir();

//! ../shared, ../shared/realdata/<relative> and ../shared/models/<relative>. Call only after REQUIRE_SHARED(): without
//! ../shared they record a test failure (and return a path that does not exist) instead of skipping.
std::filesystem::path sharedRoot();
std::filesystem::path realdata(const std::string& relative);
std::filesystem::path sharedModel(const std::string& relative);

//! ../shared/<relative> when ../shared and that path exist (for folders of ../shared that an older copy may lack, such
//! as calibration/); use it through REQUIRE_SHARED_PATH.
std::optional<std::filesystem::path> sharedPath(const std::string& relative);

//! One row of ../shared/realdata/MANIFEST.tsv: the file is realdata(path()); kind is the manifest's third column
//! ("layer-info-json", "verbose-log", "onnx", ...).
struct ManifestEntry
{
    std::string folder;
    std::string file;
    std::string kind;
    std::string path() const { return folder + "/" + file; }
};
//! Every row of the manifest, in its order; empty without ../shared.
std::vector<ManifestEntry> manifestEntries();

//! A fresh empty folder under the build tree's temporary area, removed at process exit.
std::filesystem::path tempDir(const std::string& name);

//! Writes bytes to a file and returns its path.
std::filesystem::path writeFile(const std::filesystem::path& path, const std::string& bytes);

std::string readFile(const std::filesystem::path& path);

//! The text report with its wrapped lines joined again (each line break and the indentation after it become one
//! space), so a test can look for a phrase wherever the 100-column layout broke it.
std::string flowed(const std::string& text);

//! loadInputs on these files (kinds detected from content), with the default limits.
Inputs loadFiles(const std::vector<std::filesystem::path>& paths);

//! A TREx engine of ../shared/realdata: "<folder>/<name>" for <name>.onnx.engine.graph.json and .profile.json.
//! Call only after REQUIRE_SHARED().
Inputs trex(const std::string& set);

struct CommandResult
{
    int exitStatus = -1;
    std::string out;
    std::string err;
};

//! Runs the qdq-doctor binary with the given arguments (each shell-quoted here).
CommandResult runCli(const std::vector<std::string>& arguments);

} // namespace qdq::test

//! Skips the current test when ../shared is absent.
#define REQUIRE_SHARED()                                                                                               \
    do                                                                                                                 \
    {                                                                                                                  \
        if (!::qdq::test::sharedDir())                                                                                 \
        {                                                                                                              \
            GTEST_SKIP() << "../shared is absent (set QDQ_SHARED_DIR to run the real-data tests)";                     \
        }                                                                                                              \
    } while (false)

//! Declares `const std::filesystem::path var` as ../shared/<relative>, or skips the current test when ../shared or that
//! path is absent.
#define REQUIRE_SHARED_PATH(var, relative)                                                                             \
    const auto var##Found = ::qdq::test::sharedPath(relative);                                                         \
    if (!var##Found)                                                                                                   \
    {                                                                                                                  \
        GTEST_SKIP() << "../shared/" << (relative) << " is absent (set QDQ_SHARED_DIR to run the real-data tests)";    \
    }                                                                                                                  \
    const std::filesystem::path var = *var##Found
