// libFuzzer target: `qdq-doctor fix` end to end on a fuzzed ONNX model (diagnose, plan, the streaming writer, the
// ONNX checker and shape inference, the second diagnosis), then fix again on its own output. Beyond "only InputError
// escapes, naming a file it was given", it checks what fix promises about files:
//   - the input model is never modified;
//   - nothing is left behind in the output's folder or the temporary folder: only the input and, on success, the
//     output and, when the model has external data, its data file (no candidate or partial file);
//   - a fix with no edits writes a byte-identical copy (when no data file is written);
//   - fix applied to its own output changes nothing.
// The files live in a folder of their own under the temporary folder, made once per process.
#include "fuzz_common.h"
#include "qdq/fix.h"
#include "qdq/readers.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

namespace
{

std::filesystem::path gFolder; //!< the input, the output and (as TMPDIR) dry runs' candidates

//! A broken promise: says which, then crashes (libFuzzer keeps the input).
[[noreturn]] void broken(const char* promise, const std::string& detail = {})
{
    std::fprintf(stderr, "fuzz_fix: %s%s%s\n", promise, detail.empty() ? "" : ": ", detail.c_str());
    __builtin_trap();
}

std::string readWhole(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

//! Every entry of the folder is one of the expected files (the output's data file when the fixed model has external
//! data: a fuzzed location may name a file of this folder, the model itself among them).
void checkNothingLeft(bool outputExpected, bool dataExpected = false)
{
    for (const auto& entry : std::filesystem::directory_iterator(gFolder))
    {
        const std::string name = entry.path().filename().string();
        if (name == "model.onnx" || (outputExpected && name == "fixed.onnx") ||
            (dataExpected && name == "fixed.onnx.data"))
        {
            continue;
        }
        broken("a file was left behind", name);
    }
}

bool namesAFile(const qdq::InputError& error, const std::filesystem::path& model, const std::filesystem::path& output)
{
    const std::string& where = error.where().path;
    return !where.empty() &&
           (where.find(model.string()) != std::string::npos || where.find(output.string()) != std::string::npos ||
            where.find(gFolder.string()) != std::string::npos);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    gFolder = std::filesystem::temp_directory_path() / ("qdq-fuzz-fix-" + std::to_string(::getpid()));
    std::filesystem::remove_all(gFolder);
    std::filesystem::create_directories(gFolder);
    // Dry runs write their candidate to the temporary folder: this one, so that a candidate left behind is seen.
    ::setenv("TMPDIR", gFolder.c_str(), 1);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view bytes = qdq::fuzz::asView(data, size);
    const std::filesystem::path model = gFolder / "model.onnx";
    const std::filesystem::path fixed = gFolder / "fixed.onnx";
    try
    {
        if (qdq::detectInputKindFromPrefix(bytes, model.string()) != qdq::InputKind::kOnnx)
        {
            return 0;
        }
    }
    catch (const qdq::InputError& error)
    {
        qdq::fuzz::checkError(error, model.string());
        return 0;
    }
    std::filesystem::remove_all(gFolder);
    std::filesystem::create_directories(gFolder);
    {
        std::ofstream out(model, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    const qdq::Limits limits = qdq::fuzz::fuzzLimits();

    qdq::InputFiles files;
    files.files.push_back(model.string());
    qdq::FixOptions options;
    options.output = fixed.string();
    qdq::FixReport first;
    try
    {
        first = qdq::runFix(files, options, limits);
    }
    catch (const qdq::InputError& error)
    {
        if (!namesAFile(error, model, fixed))
        {
            broken("the error names no file it was given", error.where().path + ": " + error.message());
        }
        if (readWhole(model) != bytes)
        {
            broken("the input model was modified");
        }
        checkNothingLeft(false);
        return 0;
    }
    if (readWhole(model) != bytes)
    {
        broken("the input model was modified");
    }
    if (!first.written)
    {
        broken("no output written");
    }
    if (!first.dataFile.empty() && first.dataFile != fixed.string() + ".data")
    {
        broken("the data file is not the output's", first.dataFile);
    }
    checkNothingLeft(true, !first.dataFile.empty());
    const std::string written = readWhole(fixed);
    if (first.unchanged && first.dataFile.empty() && written != bytes)
    {
        broken("a fix without edits is not a byte-identical copy");
    }

    // Fix applied to its own output: no edit (a dry run, which writes its candidate to the temporary folder).
    qdq::InputFiles again;
    again.files.push_back(fixed.string());
    qdq::FixOptions dryRun;
    dryRun.dryRun = true;
    const qdq::FixReport second = qdq::runFix(again, dryRun, limits);
    if (!second.unchanged || !second.edits.empty())
    {
        broken("fix of its own output changes it", std::to_string(second.edits.size()) + " edit(s), the first " +
                                                       (second.edits.empty() ? "" : second.edits.front().rule));
    }
    if (readWhole(fixed) != written)
    {
        broken("a dry run modified its input");
    }
    checkNothingLeft(true, !first.dataFile.empty());
    return 0;
}
