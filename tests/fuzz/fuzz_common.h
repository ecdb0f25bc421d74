// Shared by the libFuzzer targets: the limits every target runs under. They are lower than the CLI's defaults so
// one input cannot ask for gigabytes, but high enough that every limit check is still reachable from a small input.
#pragma once

#include "qdq/diagnostics.h"
#include "qdq/limits.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qdq::fuzz
{

inline Limits fuzzLimits()
{
    Limits limits;
    limits.maxInputBytes = 1u << 20;
    limits.maxLineBytes = 4096;
    limits.maxJsonDepth = 64;
    limits.maxGraphNodes = 20000;
    return limits;
}

inline std::string_view asView(const std::uint8_t* data, std::size_t size)
{
    return {reinterpret_cast<const char*>(data), size};
}

//! Every message a reader produces must name the file it was given.
inline void checkError(const InputError& error, const std::string& path)
{
    if (error.where().path != path && error.where().path.find(path) == std::string::npos)
    {
        __builtin_trap();
    }
}

} // namespace qdq::fuzz
