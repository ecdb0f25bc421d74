#include "qdq/output_guard.h"

#include "qdq/diagnostics.h"

#include <filesystem>
#include <sys/stat.h>

namespace qdq
{

namespace fs = std::filesystem;

OutputGuard::Known OutputGuard::identify(const std::string& path)
{
    Known known;
    known.given = path;
    std::error_code error;
    known.lexical = fs::absolute(path, error).lexically_normal().string();
    const fs::path resolved = fs::weakly_canonical(fs::absolute(path, error), error);
    known.resolved = error ? known.lexical : resolved.string();
    struct stat info
    {
    };
    if (::stat(path.c_str(), &info) == 0)
    {
        known.exists = true;
        known.device = info.st_dev;
        known.inode = info.st_ino;
    }
    return known;
}

bool OutputGuard::same(const Known& a, const Known& b)
{
    return a.resolved == b.resolved || (a.exists && b.exists && a.device == b.device && a.inode == b.inode);
}

void OutputGuard::addInput(const std::string& path)
{
    if (path.empty() || path == "-")
    {
        return;
    }
    if (isFolder(path))
    {
        for (const auto& file : listFolderArtifacts(path).files)
        {
            mInputs.push_back(identify(file.path));
        }
        return;
    }
    mInputs.push_back(identify(path));
}

void OutputGuard::addInputs(const InputFiles& files)
{
    for (const std::string& path : files.files)
    {
        addInput(path);
    }
    for (const std::string* path : {&files.onnx, &files.layers, &files.profile, &files.log})
    {
        addInput(*path);
    }
}

void OutputGuard::claim(const std::string& path)
{
    const Known output = identify(path);
    for (const Known& input : mInputs)
    {
        if (same(output, input))
        {
            throw InputError(SourceLocation{path},
                             "is an input of this command (" + printable(input.given, 1000) +
                                 (input.resolved == output.resolved ? "" : ", the same file under another name") +
                                 "): it is never written over, --force or not; write the output elsewhere");
        }
    }
    for (const Known& earlier : mOutputs)
    {
        if (earlier.lexical == output.lexical)
        {
            return;
        }
        if (same(output, earlier))
        {
            throw InputError(SourceLocation{path}, "is the same file as the output " + printable(earlier.given, 1000) +
                                                       " of this command: one would replace the other; write the "
                                                       "outputs to separate files");
        }
    }
    mOutputs.push_back(output);
}

} // namespace qdq
