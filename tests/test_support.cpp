#include "test_support.h"

#include "qdq/load_inputs.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace qdq::test
{

fs::path fixture(const std::string& relative)
{
    return fs::path(QDQ_SOURCE_DIR) / "tests" / "fixtures" / relative;
}

std::optional<fs::path> sharedDir()
{
    fs::path dir = QDQ_DEFAULT_SHARED_DIR;
    if (const char* env = std::getenv("QDQ_SHARED_DIR"); env != nullptr && *env != '\0')
    {
        dir = env;
    }
    std::error_code ec;
    if (fs::is_directory(dir / "realdata", ec) && fs::is_directory(dir / "models", ec))
    {
        return fs::weakly_canonical(dir, ec);
    }
    return std::nullopt;
}

namespace
{
//! ../shared, or, when it is absent, a folder that does not exist: a test that asks for a path in ../shared without
//! REQUIRE_SHARED() first fails with this message instead of dereferencing an empty optional (the suite runs once in
//! CI with QDQ_SHARED_DIR pointing at an empty folder to prove that none does).
fs::path sharedRootOrFail()
{
    if (const auto shared = sharedDir())
    {
        return *shared;
    }
    ADD_FAILURE() << "a test asked for a path in ../shared without REQUIRE_SHARED() first";
    return fs::path("/nonexistent-qdq-shared");
}
} // namespace

fs::path sharedRoot()
{
    return sharedRootOrFail();
}

std::optional<fs::path> sharedPath(const std::string& relative)
{
    const auto shared = sharedDir();
    std::error_code ec;
    if (!shared || !fs::exists(*shared / relative, ec))
    {
        return std::nullopt;
    }
    return *shared / relative;
}

fs::path realdata(const std::string& relative)
{
    return sharedRootOrFail() / "realdata" / relative;
}

std::vector<ManifestEntry> manifestEntries()
{
    std::vector<ManifestEntry> entries;
    const auto shared = sharedDir();
    if (!shared)
    {
        return entries;
    }
    std::ifstream manifest(*shared / "realdata" / "MANIFEST.tsv");
    std::string line;
    std::getline(manifest, line); // header
    while (std::getline(manifest, line))
    {
        std::vector<std::string> columns;
        std::size_t start = 0;
        for (std::size_t tab = line.find('\t'); tab != std::string::npos; tab = line.find('\t', start))
        {
            columns.push_back(line.substr(start, tab - start));
            start = tab + 1;
        }
        columns.push_back(line.substr(start));
        if (columns.size() >= 3)
        {
            entries.push_back({columns[0], columns[1], columns[2]});
        }
    }
    return entries;
}

fs::path sharedModel(const std::string& relative)
{
    return sharedRootOrFail() / "models" / relative;
}

namespace
{
struct TempRoot
{
    fs::path root;
    TempRoot()
    {
        std::string pattern = (fs::temp_directory_path() / "qdq-tests-XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr)
        {
            std::abort();
        }
        root = pattern;
    }
    ~TempRoot()
    {
        // QDQ_TESTS_KEEP_FILES=1 keeps the files the tests wrote (the models of the fix cases are the fuzz_fix seeds).
        if (std::getenv("QDQ_TESTS_KEEP_FILES") != nullptr)
        {
            std::fprintf(stderr, "test files kept in %s\n", root.c_str());
            return;
        }
        std::error_code ec;
        fs::remove_all(root, ec);
    }
};
TempRoot& tempRoot()
{
    static TempRoot instance;
    return instance;
}
} // namespace

std::string flowed(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i)
    {
        if (text[i] != '\n')
        {
            out += text[i];
            continue;
        }
        out += ' ';
        while (i + 1 < text.size() && text[i + 1] == ' ')
        {
            ++i;
        }
    }
    return out;
}

fs::path tempDir(const std::string& name)
{
    static int counter = 0;
    fs::path dir = tempRoot().root / (name + "-" + std::to_string(++counter));
    fs::create_directories(dir);
    return dir;
}

fs::path writeFile(const fs::path& path, const std::string& bytes)
{
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
}

std::string readFile(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

Inputs loadFiles(const std::vector<fs::path>& paths)
{
    InputFiles files;
    for (const auto& path : paths)
    {
        files.files.push_back(path.string());
    }
    return loadInputs(files, Limits{});
}

Inputs trex(const std::string& set)
{
    const std::string base = set + ".onnx.engine.";
    return loadFiles({realdata(base + "graph.json"), realdata(base + "profile.json")});
}

namespace
{
std::string shellQuote(const std::string& text)
{
    std::string quoted = "'";
    for (char c : text)
    {
        if (c == '\'')
        {
            quoted += "'\\''";
        }
        else
        {
            quoted += c;
        }
    }
    return quoted + "'";
}
} // namespace

CommandResult runCli(const std::vector<std::string>& arguments)
{
    fs::path dir = tempDir("cli");
    std::string command = shellQuote(QDQ_BINARY);
    for (const auto& argument : arguments)
    {
        command += " " + shellQuote(argument);
    }
    command += " >" + shellQuote((dir / "out").string()) + " 2>" + shellQuote((dir / "err").string()) + " </dev/null";
    int status = std::system(command.c_str());
    CommandResult result;
    result.exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = readFile(dir / "out");
    result.err = readFile(dir / "err");
    return result;
}

} // namespace qdq::test
