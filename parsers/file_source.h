// File access shared by the readers: size checks against Limits, whole-file reads, and mapping large files.
// Internal to parsers/ and src/.
#pragma once

#include "qdq/diagnostics.h"
#include "qdq/limits.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace qdq
{

//! Size of a regular file; throws InputError when it cannot be opened, is not a regular file, or is over
//! limits.maxInputBytes.
std::uint64_t checkedFileSize(const std::string& path, const Limits& limits);

//! Reads a whole file (after checkedFileSize).
std::string readWholeFile(const std::string& path, const Limits& limits);

//! Reads at most maxBytes from the start of a file.
std::string readFilePrefix(const std::string& path, std::size_t maxBytes);

//! A read-only memory map of a whole file (falls back to reading for files that cannot be mapped).
class MappedFile
{
public:
    MappedFile(const std::string& path, const Limits& limits);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::string_view bytes() const { return {mData, mSize}; }

    //! Tells the kernel the bytes before offset will not be read again (keeps RSS low while streaming).
    void releaseBefore(std::uint64_t offset);

private:
    const char* mData = nullptr;
    std::size_t mSize = 0;
    bool mMapped = false;
    std::uint64_t mReleased = 0;
    std::string mFallback;
};

//! 1-based line number of byteOffset in text (counts '\n' before it).
std::uint64_t lineOfOffset(std::string_view text, std::size_t byteOffset);

} // namespace qdq
