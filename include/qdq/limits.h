// Explicit input limits. Every reader checks them and names the limit it hit, with the option that raises it.
#pragma once

#include <cstdint>

namespace qdq
{

struct Limits
{
    //! Largest input file, any kind (--max-input-mb).
    std::uint64_t maxInputBytes = 8ull << 30;
    //! Longest single line in a text input (--max-line-mb).
    std::uint64_t maxLineBytes = 256ull << 20;
    //! Deepest JSON nesting (--max-json-depth).
    std::uint32_t maxJsonDepth = 256;
    //! Most layers / ONNX nodes in one graph (--max-graph-nodes).
    std::uint64_t maxGraphNodes = 5'000'000;
};

} // namespace qdq
