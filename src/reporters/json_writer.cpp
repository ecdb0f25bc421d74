#include "src/reporters/json_writer.h"

#include "qdq/diagnostics.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace qdq
{

double roundMs(double value)
{
    return std::round(value * 1e6) / 1e6;
}

JsonWriter::JsonWriter(std::string& out, ArrayElementsAt at) : mOut(out)
{
    // Only the number of open levels shows in the text (the indent); the array's own level says whether a comma
    // comes before the first element.
    mLevels.assign(at.depth > 0 ? at.depth - 1 : 0, Level{true, false});
    mLevels.push_back({false, !at.followsElements});
}

JsonWriter& JsonWriter::appendElements(const std::string& text)
{
    if (mLevels.empty() || mLevels.back().isObject)
    {
        throw std::logic_error("JsonWriter::appendElements: no array is open");
    }
    if (text.empty())
    {
        return *this;
    }
    if (mFlush)
    {
        // Handed over as it is: a large part would otherwise be copied once more into mOut.
        if (!mOut.empty())
        {
            mFlush(mOut);
            mOut.clear();
        }
        mFlush(text);
    }
    else
    {
        mOut += text;
    }
    mLevels.back().empty = false;
    return *this;
}

void JsonWriter::newline()
{
    mOut += '\n';
    mOut.append(2 * mLevels.size(), ' ');
}

void JsonWriter::beforeValue()
{
    if (mFlush && mOut.size() >= kFlushBytes)
    {
        mFlush(mOut);
        mOut.clear();
    }
    if (mAfterKey)
    {
        mAfterKey = false;
        return;
    }
    if (!mLevels.empty())
    {
        if (!mLevels.back().empty)
        {
            mOut += ',';
        }
        mLevels.back().empty = false;
        newline();
    }
}

JsonWriter& JsonWriter::beginObject()
{
    beforeValue();
    mOut += '{';
    mLevels.push_back({true, true});
    return *this;
}

JsonWriter& JsonWriter::endObject()
{
    close('}');
    return *this;
}

JsonWriter& JsonWriter::beginArray()
{
    beforeValue();
    mOut += '[';
    mLevels.push_back({false, true});
    return *this;
}

JsonWriter& JsonWriter::endArray()
{
    close(']');
    return *this;
}

void JsonWriter::close(char bracket)
{
    bool empty = mLevels.back().empty;
    mLevels.pop_back();
    if (!empty)
    {
        newline();
    }
    mOut += bracket;
    if (mLevels.empty())
    {
        // The end of the document: hand over the rest.
        mOut += '\n';
        if (mFlush)
        {
            mFlush(mOut);
            mOut.clear();
        }
    }
}

JsonWriter& JsonWriter::key(std::string_view name)
{
    beforeValue();
    writeString(name);
    mOut += ": ";
    mAfterKey = true;
    return *this;
}

JsonWriter& JsonWriter::value(std::string_view text)
{
    beforeValue();
    writeString(text);
    return *this;
}

namespace
{
#if !defined(__SSE2__)
// Bytes that go out as they are: printable ASCII other than '"', '\\' and DEL. (The SSE2 path below tests the same
// four conditions on 16 bytes at once.)
constexpr bool isPlain(unsigned char c)
{
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}
#endif

//! The end of the run of plain bytes starting at i: 16 bytes at a time where SSE2 is available.
std::size_t plainRunEnd(std::string_view text, std::size_t i)
{
    const std::size_t size = text.size();
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(0x20);
    const __m128i del = _mm_set1_epi8(0x7f);
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    // Bit k set: byte k of block is not plain. A signed compare puts bytes >= 0x80 below 0x20 too: they leave the
    // fast path like controls.
    const auto specialMask = [&](__m128i block)
    {
        const __m128i special =
            _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(block, space), _mm_cmpeq_epi8(block, del)),
                         _mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash)));
        return static_cast<unsigned>(_mm_movemask_epi8(special));
    };
    while (i + 16 <= size)
    {
        const unsigned mask = specialMask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + i)));
        if (mask != 0)
        {
            return i + static_cast<std::size_t>(__builtin_ctz(mask));
        }
        i += 16;
    }
    if (i == size)
    {
        return size;
    }
    // The last few bytes: the 16 ending at the end of text when there are that many (the bytes before i were
    // already found plain), else a copy padded with plain bytes. Never a read past the end of text.
    const std::size_t left = size - i;
    unsigned mask;
    if (size >= 16)
    {
        mask = specialMask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + size - 16))) >> (16 - left);
    }
    else
    {
        alignas(16) char padded[16];
        std::memset(padded, 'a', sizeof(padded));
        std::memcpy(padded, text.data() + i, left);
        mask = specialMask(_mm_load_si128(reinterpret_cast<const __m128i*>(padded))) & ((1u << left) - 1);
    }
    return mask != 0 ? i + static_cast<std::size_t>(__builtin_ctz(mask)) : size;
#else
    while (i < size && isPlain(static_cast<unsigned char>(text[i])))
    {
        ++i;
    }
    return i;
#endif
}
} // namespace

void JsonWriter::writeString(std::string_view text)
{
    mOut += '"';
    int valid = -1; // UTF-8 validity of text, checked at the first byte >= 0x80
    std::size_t i = 0;
    const std::size_t size = text.size();
    while (i < size)
    {
        std::size_t run = plainRunEnd(text, i);
        mOut.append(text.data() + i, run - i);
        if (run == size)
        {
            break;
        }
        i = run + 1;
        unsigned char c = static_cast<unsigned char>(text[run]);
        switch (c)
        {
        case '"':
            mOut += "\\\"";
            break;
        case '\\':
            mOut += "\\\\";
            break;
        case '\n':
            mOut += "\\n";
            break;
        case '\r':
            mOut += "\\r";
            break;
        case '\t':
            mOut += "\\t";
            break;
        case '\b':
            mOut += "\\b";
            break;
        case '\f':
            mOut += "\\f";
            break;
        default:
            if (c < 0x20 || c == 0x7f)
            {
                // Controls, DEL included, are escaped so that the JSON is safe to print on a terminal.
                char escaped[8];
                std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
                mOut += escaped;
            }
            else if (valid < 0 ? (valid = isValidUtf8(text) ? 1 : 0) == 0 : valid == 0)
            {
                mOut += "\xEF\xBF\xBD"; // invalid UTF-8: U+FFFD per byte, as nlohmann's replace handler does
            }
            else if (c == 0xC2 && i < size && static_cast<unsigned char>(text[i]) < 0xA0)
            {
                // A C1 control (U+0080..U+009F), escaped like the other controls.
                char escaped[8];
                std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned char>(text[i]));
                mOut += escaped;
                ++i;
            }
            else
            {
                mOut += static_cast<char>(c);
            }
        }
    }
    mOut += '"';
}

JsonWriter& JsonWriter::value(double number)
{
    beforeValue();
    if (!std::isfinite(number))
    {
        mOut += "null";
        return *this;
    }
    if (number == std::floor(number) && std::fabs(number) < 1e15)
    {
        // Whole numbers print with ".0" as nlohmann does for doubles.
        char buffer[32];
        auto result = std::to_chars(buffer, buffer + sizeof(buffer), number);
        mOut.append(buffer, result.ptr);
        mOut += ".0";
        return *this;
    }
    char buffer[32];
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), number);
    mOut.append(buffer, result.ptr);
    return *this;
}

JsonWriter& JsonWriter::value(std::int64_t number)
{
    beforeValue();
    mOut += std::to_string(number);
    return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t number)
{
    beforeValue();
    mOut += std::to_string(number);
    return *this;
}

JsonWriter& JsonWriter::value(bool flag)
{
    beforeValue();
    mOut += flag ? "true" : "false";
    return *this;
}

JsonWriter& JsonWriter::null()
{
    beforeValue();
    mOut += "null";
    return *this;
}

JsonWriter& JsonWriter::value(const std::optional<double>& number)
{
    return number ? value(roundMs(*number)) : null();
}

JsonWriter& JsonWriter::value(const std::vector<std::string>& strings)
{
    beginArray();
    for (const auto& text : strings)
    {
        value(std::string_view(text));
    }
    return endArray();
}

JsonWriter& JsonWriter::value(const std::vector<std::size_t>& indices)
{
    beginArray();
    for (std::size_t index : indices)
    {
        value(std::uint64_t{index});
    }
    return endArray();
}

JsonWriter& JsonWriter::value(const std::vector<std::string_view>& strings)
{
    beginArray();
    for (std::string_view text : strings)
    {
        value(text);
    }
    return endArray();
}

} // namespace qdq
