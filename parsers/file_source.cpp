#include "parsers/file_source.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qdq
{

namespace
{
SourceLocation at(const std::string& path)
{
    SourceLocation where;
    where.path = path;
    return where;
}

struct FileDescriptor
{
    int fd = -1;
    // O_NONBLOCK: opening a FIFO without a writer would otherwise block forever; every caller then refuses
    // anything but a regular file (for which O_NONBLOCK changes nothing). O_NOCTTY: a terminal device given as
    // input never becomes the controlling terminal.
    explicit FileDescriptor(const std::string& path)
        : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY))
    {
    }
    ~FileDescriptor()
    {
        if (fd >= 0)
        {
            ::close(fd);
        }
    }
};

std::uint64_t sizeOfOpen(int fd, const std::string& path, const Limits& limits)
{
    struct stat info
    {
    };
    if (::fstat(fd, &info) != 0)
    {
        throw InputError(at(path), std::string("cannot stat: ") + std::strerror(errno));
    }
    if (S_ISDIR(info.st_mode))
    {
        throw InputError(at(path), "is a directory, not a file");
    }
    if (!S_ISREG(info.st_mode))
    {
        throw InputError(at(path), "is not a regular file");
    }
    auto size = static_cast<std::uint64_t>(info.st_size);
    if (size > limits.maxInputBytes)
    {
        throw InputError(at(path), "file is " + std::to_string(size >> 20) + " MiB, over the input size limit of " +
                                       std::to_string(limits.maxInputBytes >> 20) +
                                       " MiB (raise it with --max-input-mb)");
    }
    return size;
}

void readAll(int fd, char* data, std::size_t size, const std::string& path)
{
    std::size_t done = 0;
    while (done < size)
    {
        ssize_t n = ::read(fd, data + done, size - done);
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n < 0)
        {
            throw InputError(at(path), std::string("read failed: ") + std::strerror(errno));
        }
        if (n == 0)
        {
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    if (done != size)
    {
        throw InputError(at(path), "file changed size while being read");
    }
}
} // namespace

std::uint64_t checkedFileSize(const std::string& path, const Limits& limits)
{
    FileDescriptor file(path);
    if (file.fd < 0)
    {
        throw InputError(at(path), std::string("cannot open: ") + std::strerror(errno));
    }
    return sizeOfOpen(file.fd, path, limits);
}

std::string readWholeFile(const std::string& path, const Limits& limits)
{
    FileDescriptor file(path);
    if (file.fd < 0)
    {
        throw InputError(at(path), std::string("cannot open: ") + std::strerror(errno));
    }
    std::uint64_t size = sizeOfOpen(file.fd, path, limits);
    std::string data(size, '\0');
    readAll(file.fd, data.data(), data.size(), path);
    return data;
}

std::string readFilePrefix(const std::string& path, std::size_t maxBytes)
{
    FileDescriptor file(path);
    if (file.fd < 0)
    {
        throw InputError(at(path), std::string("cannot open: ") + std::strerror(errno));
    }
    sizeOfOpen(file.fd, path, Limits{UINT64_MAX, UINT64_MAX, 0, 0});
    std::string data(maxBytes, '\0');
    std::size_t done = 0;
    while (done < maxBytes)
    {
        ssize_t n = ::read(file.fd, data.data() + done, maxBytes - done);
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n <= 0)
        {
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    data.resize(done);
    return data;
}

MappedFile::MappedFile(const std::string& path, const Limits& limits)
{
    FileDescriptor file(path);
    if (file.fd < 0)
    {
        throw InputError(at(path), std::string("cannot open: ") + std::strerror(errno));
    }
    mSize = sizeOfOpen(file.fd, path, limits);
    if (mSize == 0)
    {
        return;
    }
    void* mapped = ::mmap(nullptr, mSize, PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (mapped != MAP_FAILED)
    {
        ::madvise(mapped, mSize, MADV_SEQUENTIAL);
        mData = static_cast<const char*>(mapped);
        mMapped = true;
        return;
    }
    mFallback.resize(mSize);
    readAll(file.fd, mFallback.data(), mSize, path);
    mData = mFallback.data();
}

MappedFile::~MappedFile()
{
    if (mMapped)
    {
        ::munmap(const_cast<char*>(mData), mSize);
    }
}

void MappedFile::releaseBefore(std::uint64_t offset)
{
    if (!mMapped)
    {
        return;
    }
    static const std::uint64_t pageSize = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    std::uint64_t end = std::min<std::uint64_t>(offset, mSize) / pageSize * pageSize;
    if (end > mReleased)
    {
        ::madvise(const_cast<char*>(mData) + mReleased, end - mReleased, MADV_DONTNEED);
        mReleased = end;
    }
}

std::uint64_t lineOfOffset(std::string_view text, std::size_t byteOffset)
{
    byteOffset = std::min(byteOffset, text.size());
    return 1 + static_cast<std::uint64_t>(std::count(text.begin(), text.begin() + static_cast<long>(byteOffset), '\n'));
}

} // namespace qdq
