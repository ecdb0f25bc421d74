#include "parsers/external_data_ref.h"

#include "parsers/external_data_location.h"
#include "parsers/onnx_tensor_data.h"
#include "qdq/diagnostics.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace qdq
{

namespace fs = std::filesystem;

namespace
{

std::string quoted(const std::string& text)
{
    return "'" + printable(text, 512) + "'";
}

[[noreturn]] void fail(const std::string& path, const std::string& message)
{
    throw InputError(SourceLocation{path}, message);
}

//! offset or length: absent (nullopt), or its number; anything else fails naming the model.
std::optional<std::uint64_t> numberEntry(const std::string& modelPath, const ExternalDataEntries& entries,
                                         const char* key, const std::optional<std::string>& text)
{
    if (!text)
    {
        return std::nullopt;
    }
    const auto value = parseExternalDataNumber(*text);
    if (!value)
    {
        fail(modelPath, std::string("external data ") + key + " " + quoted(*text) + " of tensor " +
                            quoted(entries.tensor) + " is not a non-negative integer of at most 18 digits");
    }
    return value;
}

//! The location resolved inside dataFolder, or a failure naming the model.
fs::path resolvedLocation(const std::string& modelPath, const fs::path& dataFolder, const ExternalDataEntries& entries)
{
    if (entries.location.empty())
    {
        fail(modelPath, "tensor " + quoted(entries.tensor) + " has external data without a location");
    }
    if (entries.location.find('\0') != std::string::npos)
    {
        fail(modelPath, "external data location of tensor " + quoted(entries.tensor) + " contains a NUL byte");
    }
    const ResolvedExternalLocation where = resolveExternalDataLocation(dataFolder, entries.location);
    if (where.unresolvable)
    {
        fail(modelPath, "cannot resolve external data location " + quoted(entries.location) + " of tensor " +
                            quoted(entries.tensor));
    }
    if (!where.refused.empty())
    {
        fail(modelPath, "external data location " + quoted(entries.location) + " of tensor " + quoted(entries.tensor) +
                            " " + where.refused + ": only files inside the model's folder are read");
    }
    return where.resolved;
}

} // namespace

std::optional<std::uint64_t> parseExternalDataNumber(std::string_view text)
{
    if (text.empty() || text.size() > 18)
    {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    for (const char c : text)
    {
        if (c < '0' || c > '9')
        {
            return std::nullopt;
        }
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
}

std::optional<std::uint64_t> tensorRawBytes(int dataType, const std::vector<std::int64_t>& dims)
{
    std::int64_t elements = 1;
    for (const std::int64_t dim : dims)
    {
        if (dim < 0 || (dim > 0 && elements > std::numeric_limits<std::int64_t>::max() / dim))
        {
            return std::nullopt;
        }
        elements *= dim;
    }
    const std::int64_t bytes = onnx_detail::expectedRawBytes(dataType, elements);
    return bytes < 0 ? std::nullopt : std::optional<std::uint64_t>(static_cast<std::uint64_t>(bytes));
}

std::pair<std::uint64_t, std::uint64_t> checkedExternalRange(const std::string& modelPath, const std::string& dataFile,
                                                             std::uint64_t fileSize, const ExternalDataEntries& entries)
{
    const auto offset = numberEntry(modelPath, entries, "offset", entries.offset);
    const auto length = numberEntry(modelPath, entries, "length", entries.length);
    const auto size = tensorRawBytes(entries.dataType, entries.dims);
    if (length && size && *length != *size)
    {
        fail(modelPath, "external data length " + std::to_string(*length) + " of tensor " + quoted(entries.tensor) +
                            " is not the " + std::to_string(*size) + " bytes its dims and type hold");
    }
    const std::uint64_t start = offset.value_or(0);
    const std::uint64_t rest = start <= fileSize ? fileSize - start : 0;
    const std::uint64_t bytes = length ? *length : size ? *size : rest;
    if (start > fileSize || bytes > rest)
    {
        fail(dataFile, "external data of tensor " + quoted(entries.tensor) + " (offset " + std::to_string(start) +
                           ", length " + std::to_string(bytes) + ") lies outside the " + std::to_string(fileSize) +
                           "-byte file" +
                           (length ? "" : " (the length its dims and type hold: the file is cut short)"));
    }
    return {start, bytes};
}

CheckedExternalData checkExternalData(const std::string& modelPath, const fs::path& dataFolder,
                                      const ExternalDataEntries& entries)
{
    CheckedExternalData checked;
    checked.file = resolvedLocation(modelPath, dataFolder, entries);
    const std::string file = checked.file.string();
    // The numbers first: a reference that cannot be right is refused before its file is looked at.
    numberEntry(modelPath, entries, "offset", entries.offset);
    numberEntry(modelPath, entries, "length", entries.length);
    struct stat info
    {
    };
    if (::stat(file.c_str(), &info) != 0)
    {
        fail(file, "external data file " + quoted(entries.location) + " of tensor " + quoted(entries.tensor) +
                       " cannot be read: " + std::strerror(errno));
    }
    if (!S_ISREG(info.st_mode))
    {
        fail(file, "external data location " + quoted(entries.location) + " of tensor " + quoted(entries.tensor) +
                       " is not a regular file");
    }
    checked.fileSize = static_cast<std::uint64_t>(info.st_size);
    std::tie(checked.offset, checked.length) = checkedExternalRange(modelPath, file, checked.fileSize, entries);
    return checked;
}

std::string readExternalData(const CheckedExternalData& data, const std::string& tensor)
{
    const std::string file = data.file.string();
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat info
    {
    };
    if (fd < 0 || ::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) ||
        static_cast<std::uint64_t>(info.st_size) < data.offset + data.length)
    {
        const std::string why = fd < 0 ? std::strerror(errno) : "it is no longer a regular file of the size checked";
        if (fd >= 0)
        {
            ::close(fd);
        }
        fail(file, "cannot read the external data of tensor " + quoted(tensor) + ": " + why);
    }
    std::string bytes(data.length, '\0');
    std::uint64_t done = 0;
    while (done < data.length)
    {
        const ssize_t got =
            ::pread(fd, bytes.data() + done, data.length - done, static_cast<off_t>(data.offset + done));
        if (got < 0 && errno == EINTR)
        {
            continue;
        }
        if (got <= 0)
        {
            ::close(fd);
            fail(file, "cannot read the external data of tensor " + quoted(tensor) + ": it ends before its " +
                           std::to_string(data.length) + " bytes");
        }
        done += static_cast<std::uint64_t>(got);
    }
    ::close(fd);
    return bytes;
}

} // namespace qdq
