#include "qdq/diagnostics.h"

#include <cstdio>

namespace qdq
{

std::string SourceLocation::describe() const
{
    std::string text = printable(path, 1024);
    if (line > 0)
    {
        text += ":" + std::to_string(line);
    }
    else if (hasByteOffset)
    {
        text += ": byte " + std::to_string(byteOffset);
    }
    return text;
}

std::string ReaderWarning::describe() const
{
    return where.describe() + ": warning: " + message;
}

InputError::InputError(SourceLocation where, std::string message)
    : std::runtime_error(where.describe() + ": error: " + message), mWhere(std::move(where)),
      mMessage(std::move(message))
{
}

std::size_t utf8SequenceLength(std::string_view text, std::size_t i)
{
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    unsigned char c = byte(i);
    std::size_t length = 0;
    std::uint32_t codePoint = 0;
    if (c < 0x80)
    {
        return 1;
    }
    if ((c & 0xE0) == 0xC0)
    {
        length = 2;
        codePoint = c & 0x1F;
    }
    else if ((c & 0xF0) == 0xE0)
    {
        length = 3;
        codePoint = c & 0x0F;
    }
    else if ((c & 0xF8) == 0xF0)
    {
        length = 4;
        codePoint = c & 0x07;
    }
    else
    {
        return 0;
    }
    if (i + length > text.size())
    {
        return 0;
    }
    for (std::size_t k = 1; k < length; ++k)
    {
        if ((byte(i + k) & 0xC0) != 0x80)
        {
            return 0;
        }
        codePoint = (codePoint << 6) | (byte(i + k) & 0x3F);
    }
    // Reject overlong forms, surrogates and values past U+10FFFF.
    if ((length == 2 && codePoint < 0x80) || (length == 3 && codePoint < 0x800) ||
        (length == 4 && codePoint < 0x10000) || (codePoint >= 0xD800 && codePoint <= 0xDFFF) || codePoint > 0x10FFFF)
    {
        return 0;
    }
    return length;
}

bool isValidUtf8(std::string_view text)
{
    for (std::size_t i = 0; i < text.size();)
    {
        std::size_t length = utf8SequenceLength(text, i);
        if (length == 0)
        {
            return false;
        }
        i += length;
    }
    return true;
}

std::string printable(std::string_view text, std::size_t maxBytes)
{
    std::string out;
    out.reserve(std::min(text.size(), maxBytes) + 8);
    for (std::size_t i = 0; i < text.size();)
    {
        if (out.size() >= maxBytes)
        {
            out += "...";
            break;
        }
        unsigned char c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c == 0x7F)
        {
            char escaped[8];
            std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
            out += escaped;
            ++i;
            continue;
        }
        std::size_t length = utf8SequenceLength(text, i);
        if (length == 0)
        {
            char escaped[8];
            std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
            out += escaped;
            ++i;
            continue;
        }
        // C1 controls (U+0080..U+009F) are terminal escapes too.
        if (length == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0)
        {
            char escaped[16];
            std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned char>(text[i + 1]));
            out += escaped;
            i += 2;
            continue;
        }
        out.append(text.substr(i, length));
        i += length;
    }
    return out;
}

std::string terminalSafeJson(std::string json)
{
    // In serialized JSON these bytes occur only inside strings (all structure is ASCII), so escaping is safe.
    auto isC1 = [&](std::size_t i)
    {
        return static_cast<unsigned char>(json[i]) == 0xC2 && i + 1 < json.size() &&
               static_cast<unsigned char>(json[i + 1]) >= 0x80 && static_cast<unsigned char>(json[i + 1]) < 0xA0;
    };
    std::size_t i = 0;
    while (i < json.size() && json[i] != '\x7f' && !isC1(i))
    {
        ++i;
    }
    if (i == json.size())
    {
        return json;
    }
    std::string out = json.substr(0, i);
    out.reserve(json.size() + 64);
    for (; i < json.size(); ++i)
    {
        if (json[i] == '\x7f')
        {
            out += "\\u007f";
        }
        else if (isC1(i))
        {
            char escaped[8];
            std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned char>(json[i + 1]));
            out += escaped;
            ++i;
        }
        else
        {
            out += json[i];
        }
    }
    return out;
}

} // namespace qdq
