// Where a fixed model goes: the checks of an output path, the rename into place, and FileModelSink
// (include/qdq/model_edit.h), which writes a model and its data file under temporary names and renames them at commit.
#include "src/fixes/model_wire.h"

#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace qdq
{

using namespace model_wire;

// ----- output paths ---------------------------------------------------------------------------------------------

void checkOutputFilePath(const std::string& path, bool force)
{
    if (path.empty())
    {
        failPath(path, "no output path");
    }
    struct stat link
    {
    };
    if (::lstat(path.c_str(), &link) != 0)
    {
        return; // nothing there (or a folder we cannot look into: creating the file will say so)
    }
    struct stat target
    {
    };
    const bool resolved = ::stat(path.c_str(), &target) == 0;
    if (resolved && S_ISDIR(target.st_mode))
    {
        failPath(path, "is a folder; the output must be a file");
    }
    // The model is written next to the output and renamed onto it, which replaces whatever the name stands for:
    // renaming onto /dev/null would replace the device node itself. A name that leads to anything but a regular
    // file (a device, pipe or socket, directly or through a link) is refused even with --force.
    if ((resolved && !S_ISREG(target.st_mode)) || (!S_ISLNK(link.st_mode) && !S_ISREG(link.st_mode)))
    {
        failPath(path, "is not a regular file (a device, pipe or socket); the output must be a file");
    }
    if (!force)
    {
        failPath(path, "already exists (use --force to replace it)");
    }
}

void moveOutputFileIntoPlace(const std::string& from, const std::string& to, bool force)
{
    int renamed = 0;
    if (force)
    {
        checkOutputFilePath(to, true); // what appeared there meanwhile may be replaced only if it is a file
        renamed = ::rename(from.c_str(), to.c_str());
    }
    else
    {
        // Never replaces a file that appeared while the model was being written.
        renamed = ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE);
        if (renamed != 0 && (errno == EINVAL || errno == ENOSYS))
        {
            // A file system without RENAME_NOREPLACE: check, then rename.
            struct stat info
            {
            };
            renamed = ::lstat(to.c_str(), &info) == 0 ? (errno = EEXIST, -1) : ::rename(from.c_str(), to.c_str());
        }
    }
    if (renamed != 0)
    {
        const int error = errno;
        failPath(to, error == EEXIST
                         ? std::string("already exists (created while the model was being written; use "
                                       "--force to replace it)")
                         : std::string("cannot rename the finished model onto it: ") + std::strerror(error));
    }
}

// ----- sinks ------------------------------------------------------------------------------------------------------

FileModelSink::FileModelSink(std::string outputPath, bool force) : mPath(std::move(outputPath)), mForce(force) {}

FileModelSink::~FileModelSink()
{
    abort();
}

std::filesystem::path FileModelSink::folder() const
{
    fs::path parent = fs::path(mPath).parent_path();
    return parent.empty() ? fs::path(".") : parent;
}

std::string FileModelSink::dataLocation() const
{
    return fs::path(mPath).filename().string() + ".data";
}

void FileModelSink::open(Pending& file, const std::string& finalPath)
{
    drop(file);
    checkOutputFilePath(finalPath, mForce);
    std::random_device entropy;
    std::mt19937 generator(entropy());
    static constexpr char kLetters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::uniform_int_distribution<std::size_t> letter(0, sizeof(kLetters) - 2);
    for (int attempt = 0; attempt < 100; ++attempt)
    {
        std::string candidate = finalPath + ".tmp-";
        for (int i = 0; i < 6; ++i)
        {
            candidate.push_back(kLetters[letter(generator)]);
        }
        // 0666: the umask decides the final permissions, as for any new file.
        const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd >= 0)
        {
            file.fd = fd;
            file.temporaryPath = std::move(candidate);
            file.cleanup.watch(file.temporaryPath);
            return;
        }
        if (errno != EEXIST)
        {
            failPath(finalPath,
                     "cannot create a file in folder " + inQuotes(folder().string()) + ": " + std::strerror(errno));
        }
    }
    failPath(finalPath, "cannot create a temporary file next to it");
}

void FileModelSink::writeTo(Pending& file, const std::string& finalPath, std::string_view bytes)
{
    if (file.fd < 0)
    {
        failPath(finalPath, "write without begin()");
    }
    while (!bytes.empty())
    {
        const ssize_t n = ::write(file.fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n <= 0)
        {
            failPath(finalPath, std::string("cannot write: ") + std::strerror(n < 0 ? errno : EIO));
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
}

void FileModelSink::drop(Pending& file) noexcept
{
    if (file.fd >= 0)
    {
        ::close(file.fd);
        file.fd = -1;
    }
    if (!file.temporaryPath.empty())
    {
        ::unlink(file.temporaryPath.c_str());
        file.temporaryPath.clear();
    }
    file.cleanup.release();
}

void FileModelSink::begin()
{
    abort();
    open(mModel, mPath);
}

void FileModelSink::write(std::string_view bytes)
{
    writeTo(mModel, mPath, bytes);
}

void FileModelSink::beginData()
{
    if (mModel.fd < 0)
    {
        failPath(mPath, "beginData without begin()");
    }
    open(mData, dataPath());
}

void FileModelSink::writeData(std::string_view bytes)
{
    writeTo(mData, dataPath(), bytes);
}

void FileModelSink::commit()
{
    if (mModel.fd < 0)
    {
        failPath(mPath, "commit without begin()");
    }
    for (auto [file, path] : {std::pair<Pending*, std::string>{&mData, dataPath()}, {&mModel, mPath}})
    {
        if (file->fd >= 0 && ::close(file->fd) != 0)
        {
            const int error = errno;
            file->fd = -1;
            abort();
            failPath(path, std::string("cannot write: ") + std::strerror(error));
        }
        file->fd = -1;
    }
    // The data file first: a model in place always finds its data.
    const bool withData = !mData.temporaryPath.empty();
    try
    {
        if (withData)
        {
            moveOutputFileIntoPlace(mData.temporaryPath, dataPath(), mForce);
            mData.temporaryPath.clear();
            mData.cleanup.release();
        }
        moveOutputFileIntoPlace(mModel.temporaryPath, mPath, mForce);
    }
    catch (const InputError&)
    {
        if (withData && mData.temporaryPath.empty())
        {
            ::unlink(dataPath().c_str()); // placed by this commit, for a model that is not
        }
        abort();
        throw;
    }
    mModel.temporaryPath.clear();
    mModel.cleanup.release();
}

void FileModelSink::abort() noexcept
{
    drop(mData);
    drop(mModel);
}

} // namespace qdq
