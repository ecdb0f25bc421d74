#include "parsers/json_pull.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace qdq::json
{

namespace
{
// Byte classes inside a string: 0 plain, 1 quote, 2 backslash, 3 control character, 4 start of a multi-byte UTF-8
// sequence (or an invalid byte).
constexpr std::array<std::uint8_t, 256> makeStringClasses()
{
    std::array<std::uint8_t, 256> classes{};
    for (int c = 0; c < 0x20; ++c)
    {
        classes[static_cast<std::size_t>(c)] = 3;
    }
    classes['"'] = 1;
    classes['\\'] = 2;
    for (int c = 0x80; c < 0x100; ++c)
    {
        classes[static_cast<std::size_t>(c)] = 4;
    }
    return classes;
}
constexpr std::array<std::uint8_t, 256> kStringClasses = makeStringClasses();

// The character a one-letter escape (n for a line feed, t for a tab, ...) stands for; 0 for the unicode escape (u)
// and the invalid ones.
constexpr std::array<char, 256> makeEscapes()
{
    std::array<char, 256> escapes{};
    escapes['"'] = '"';
    escapes['\\'] = '\\';
    escapes['/'] = '/';
    escapes['b'] = '\b';
    escapes['f'] = '\f';
    escapes['n'] = '\n';
    escapes['r'] = '\r';
    escapes['t'] = '\t';
    return escapes;
}
constexpr std::array<char, 256> kEscapes = makeEscapes();

constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHighBits = 0x8080808080808080ULL;

std::uint64_t load8(const char* p)
{
    std::uint64_t value = 0;
    std::memcpy(&value, p, sizeof(value));
    return value;
}

// Nonzero when some byte of v is below n (n <= 128).
constexpr std::uint64_t hasByteLess(std::uint64_t v, std::uint64_t n)
{
    return (v - kOnes * n) & ~v & kHighBits;
}

// Nonzero when some byte of v equals c.
constexpr std::uint64_t hasByte(std::uint64_t v, std::uint64_t c)
{
    return hasByteLess(v ^ (kOnes * c), 1);
}

// Nonzero when some byte of v needs a look inside a string: quote, backslash, control, or >= 0x80.
constexpr std::uint64_t hasStringSpecial(std::uint64_t v)
{
    return hasByte(v, '"') | hasByte(v, '\\') | hasByteLess(v, 0x20) | (v & kHighBits);
}

// Exact number of '\n' bytes in [begin, end).
std::uint64_t countNewlines(const char* begin, const char* end)
{
    std::uint64_t count = 0;
    constexpr std::uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL;
    while (end - begin >= 8)
    {
        std::uint64_t x = load8(begin) ^ (kOnes * '\n');
        std::uint64_t t = ((x & kLow7) + kLow7) | x; // high bit set in every nonzero byte
        // One bit (bit 7) per newline byte: move each to bit 0 and sum the bytes with a multiply.
        count += (((~t & kHighBits) >> 7) * kOnes) >> 56;
        begin += 8;
    }
    for (; begin < end; ++begin)
    {
        count += *begin == '\n' ? 1 : 0;
    }
    return count;
}

bool isWhitespace(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

// Length of the valid UTF-8 sequence at text[i] (text[i] >= 0x80), or 0 when invalid.
std::size_t utf8Length(std::string_view text, std::size_t i)
{
    return utf8SequenceLength(text, i);
}

void appendUtf8(std::string& out, std::uint32_t codePoint)
{
    if (codePoint < 0x80)
    {
        out += static_cast<char>(codePoint);
    }
    else if (codePoint < 0x800)
    {
        out += static_cast<char>(0xC0 | (codePoint >> 6));
        out += static_cast<char>(0x80 | (codePoint & 0x3F));
    }
    else if (codePoint < 0x10000)
    {
        out += static_cast<char>(0xE0 | (codePoint >> 12));
        out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (codePoint & 0x3F));
    }
    else
    {
        out += static_cast<char>(0xF0 | (codePoint >> 18));
        out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (codePoint & 0x3F));
    }
}

std::string describeByte(unsigned char c)
{
    char buffer[32];
    if (c >= 0x21 && c < 0x7F)
    {
        std::snprintf(buffer, sizeof(buffer), "'%c'", static_cast<char>(c));
    }
    else
    {
        std::snprintf(buffer, sizeof(buffer), "byte 0x%02x", c);
    }
    return buffer;
}

bool startsWith(std::string_view text, std::string_view prefix)
{
    return text.substr(0, prefix.size()) == prefix;
}
} // namespace

std::string_view tokenDescription(Token token)
{
    switch (token)
    {
    case Token::kObjectBegin:
        return "an object";
    case Token::kObjectEnd:
        return "'}'";
    case Token::kArrayBegin:
        return "an array";
    case Token::kArrayEnd:
        return "']'";
    case Token::kKey:
        return "a key";
    case Token::kString:
        return "a string";
    case Token::kNumber:
        return "a number";
    case Token::kTrue:
        return "true";
    case Token::kFalse:
        return "false";
    case Token::kNull:
        return "null";
    case Token::kEnd:
        return "the end of the value";
    }
    return "a token";
}

PullParser::PullParser(std::string_view text, std::string pathForMessages, const Limits& limits)
    : mInput(text), mPath(std::move(pathForMessages)), mLimits(limits)
{
    mStack.reserve(64);
}

std::uint64_t PullParser::countLines(std::size_t offset, bool checkLimit)
{
    offset = std::min(offset, mInput.size());
    if (offset < mCountedTo)
    {
        // Going back (error messages only): count the newlines between offset and the counted position.
        return mLine - countNewlines(mInput.data() + offset, mInput.data() + mCountedTo);
    }
    const char* data = mInput.data();
    std::size_t pos = mCountedTo;
    if (!checkLimit || offset - mLineStart <= mLimits.maxLineBytes)
    {
        // No line in [mLineStart, offset) can be over the limit: count without looking at each line.
        std::uint64_t newlines = countNewlines(data + pos, data + offset);
        if (newlines > 0)
        {
            const void* last = ::memrchr(data + pos, '\n', offset - pos);
            mLineStart = static_cast<std::size_t>(static_cast<const char*>(last) - data) + 1;
            mLine += newlines;
        }
        mCountedTo = offset;
        return mLine;
    }
    while (pos < offset)
    {
        const void* found = std::memchr(data + pos, '\n', offset - pos);
        if (found == nullptr)
        {
            break;
        }
        std::size_t newline = static_cast<std::size_t>(static_cast<const char*>(found) - data);
        if (checkLimit && newline - mLineStart > mLimits.maxLineBytes)
        {
            std::uint64_t line = mLine;
            mCountedTo = pos;
            fail(mLineStart, "line " + std::to_string(line) + " is longer than the line length limit of " +
                                 std::to_string(mLimits.maxLineBytes >> 20) + " MiB (raise it with --max-line-mb)");
        }
        ++mLine;
        mLineStart = newline + 1;
        pos = newline + 1;
    }
    mCountedTo = offset;
    if (checkLimit && offset - mLineStart > mLimits.maxLineBytes)
    {
        fail(mLineStart, "line " + std::to_string(mLine) + " is longer than the line length limit of " +
                             std::to_string(mLimits.maxLineBytes >> 20) + " MiB (raise it with --max-line-mb)");
    }
    return mLine;
}

std::uint64_t PullParser::lineOf(std::size_t offset)
{
    return countLines(offset, true);
}

SourceLocation PullParser::locationOf(std::size_t offset)
{
    SourceLocation where;
    where.path = mPath;
    where.line = countLines(offset, false);
    return where;
}

void PullParser::fail(std::size_t offset, const std::string& message)
{
    // The line, and the byte offset as well: a truncated or minified JSON is one long line.
    throw InputError(locationOf(offset), message + " (at byte " + std::to_string(offset) + ")");
}

ReaderWarning PullParser::warningAt(std::size_t offset, std::string message)
{
    return ReaderWarning{locationOf(offset), std::move(message)};
}

void PullParser::skipWhitespace()
{
    const std::size_t size = mInput.size();
    const char* data = mInput.data();
    while (mPos < size && isWhitespace(data[mPos]))
    {
        ++mPos;
    }
}

void PullParser::push(char container)
{
    if (mStack.size() >= mLimits.maxJsonDepth)
    {
        fail(mPos,
             "JSON nesting deeper than " + std::to_string(mLimits.maxJsonDepth) + " (raise it with --max-json-depth)");
    }
    mStack.push_back(container);
}

Token PullParser::next()
{
    const std::size_t size = mInput.size();
    switch (mState)
    {
    case State::kStart:
        skipWhitespace();
        return parseValue();
    case State::kAfterObjectBegin:
        skipWhitespace();
        if (mPos < size && mInput[mPos] == '}')
        {
            mTokenOffset = mPos++;
            mStack.pop_back();
            mState = State::kAfterValue;
            return Token::kObjectEnd;
        }
        if (mPos >= size || mInput[mPos] != '"')
        {
            fail(mPos, mPos >= size ? "unexpected end of input inside an object (truncated file?)"
                                    : "expected a string key or '}' after '{', found " + describeByte(mInput[mPos]));
        }
        parseString();
        mState = State::kAfterKey;
        return Token::kKey;
    case State::kAfterKey:
        skipWhitespace();
        if (mPos >= size || mInput[mPos] != ':')
        {
            fail(mPos, mPos >= size ? "unexpected end of input after an object key (truncated file?)"
                                    : "expected ':' after object key, found " + describeByte(mInput[mPos]));
        }
        ++mPos;
        skipWhitespace();
        return parseValue();
    case State::kAfterArrayBegin:
        skipWhitespace();
        if (mPos < size && mInput[mPos] == ']')
        {
            mTokenOffset = mPos++;
            mStack.pop_back();
            mState = State::kAfterValue;
            return Token::kArrayEnd;
        }
        return parseValue();
    case State::kAfterValue:
    {
        if (mStack.empty())
        {
            mState = State::kDone;
            return Token::kEnd;
        }
        skipWhitespace();
        const bool inObject = mStack.back() == '{';
        if (mPos >= size)
        {
            fail(mPos, inObject ? "unexpected end of input inside an object (truncated file?)"
                                : "unexpected end of input inside an array (truncated file?)");
        }
        char c = mInput[mPos];
        if (c == ',')
        {
            ++mPos;
            skipWhitespace();
            if (!inObject)
            {
                return parseValue();
            }
            if (mPos >= size || mInput[mPos] != '"')
            {
                fail(mPos, mPos >= size
                               ? "unexpected end of input inside an object (truncated file?)"
                               : "expected a string key after ',' in an object, found " + describeByte(mInput[mPos]));
            }
            parseString();
            mState = State::kAfterKey;
            return Token::kKey;
        }
        if (inObject && c == '}')
        {
            mTokenOffset = mPos++;
            mStack.pop_back();
            return Token::kObjectEnd;
        }
        if (!inObject && c == ']')
        {
            mTokenOffset = mPos++;
            mStack.pop_back();
            return Token::kArrayEnd;
        }
        fail(mPos, inObject ? "expected ',' or '}' after object member, found " + describeByte(c)
                            : "expected ',' or ']' after array element, found " + describeByte(c));
    }
    case State::kDone:
        return Token::kEnd;
    }
    return Token::kEnd;
}

Token PullParser::parseValue()
{
    const std::size_t size = mInput.size();
    if (mPos >= size)
    {
        fail(mPos, mStack.empty() ? "unexpected end of input: expected a JSON value"
                                  : "unexpected end of input: expected a JSON value (truncated file?)");
    }
    mTokenOffset = mPos;
    char c = mInput[mPos];
    switch (c)
    {
    case '{':
        push('{');
        ++mPos;
        mState = State::kAfterObjectBegin;
        return Token::kObjectBegin;
    case '[':
        push('[');
        ++mPos;
        mState = State::kAfterArrayBegin;
        return Token::kArrayBegin;
    case '"':
        parseString();
        mState = State::kAfterValue;
        return Token::kString;
    case 't':
        return parseLiteral("true", Token::kTrue);
    case 'f':
        return parseLiteral("false", Token::kFalse);
    case 'n':
        if (startsWith(mInput.substr(mPos), "nan"))
        {
            return parseLiteral("nan", Token::kNumber);
        }
        return parseLiteral("null", Token::kNull);
    case 'N':
        return parseLiteral("NaN", Token::kNumber);
    case 'I':
        return parseLiteral("Infinity", Token::kNumber);
    case 'i':
        return parseLiteral("inf", Token::kNumber);
    default:
        if (c == '-' || isDigit(c))
        {
            return parseNumber();
        }
        break;
    }
    if (c == ']' || c == '}')
    {
        fail(mPos, std::string("expected a JSON value, found '") + c + "' (trailing comma?)");
    }
    fail(mPos, "expected a JSON value, found " + describeByte(static_cast<unsigned char>(c)));
}

Token PullParser::parseLiteral(std::string_view word, Token token)
{
    std::size_t start = mPos;
    if (!startsWith(mInput.substr(mPos), word))
    {
        fail(mPos, "expected a JSON value, found " + describeByte(static_cast<unsigned char>(mInput[mPos])));
    }
    mPos += word.size();
    if (mPos < mInput.size() && (std::isalnum(static_cast<unsigned char>(mInput[mPos])) || mInput[mPos] == '_'))
    {
        fail(start, "expected a JSON value, found an unknown word");
    }
    mText = mInput.substr(start, word.size());
    mState = State::kAfterValue;
    return token;
}

Token PullParser::parseNumber()
{
    const std::size_t size = mInput.size();
    const char* data = mInput.data();
    std::size_t start = mPos;
    if (data[mPos] == '-')
    {
        ++mPos;
        if (mPos < size && (data[mPos] == 'n' || data[mPos] == 'i' || data[mPos] == 'I'))
        {
            std::string_view rest = mInput.substr(mPos);
            std::string_view word = startsWith(rest, "nan") ? "nan" : startsWith(rest, "inf") ? "inf" : "Infinity";
            parseLiteral(word, Token::kNumber);
            mText = mInput.substr(start, mPos - start);
            return Token::kNumber;
        }
    }
    if (mPos >= size || !isDigit(data[mPos]))
    {
        fail(start, "invalid number: expected a digit after '-'");
    }
    if (data[mPos] == '0')
    {
        ++mPos;
        if (mPos < size && isDigit(data[mPos]))
        {
            fail(start, "invalid number: leading zeros are not allowed in JSON");
        }
    }
    else
    {
        while (mPos < size && isDigit(data[mPos]))
        {
            ++mPos;
        }
    }
    if (mPos < size && data[mPos] == '.')
    {
        ++mPos;
        if (mPos >= size || !isDigit(data[mPos]))
        {
            fail(start, "invalid number: expected a digit after '.'");
        }
        while (mPos < size && isDigit(data[mPos]))
        {
            ++mPos;
        }
    }
    if (mPos < size && (data[mPos] == 'e' || data[mPos] == 'E'))
    {
        ++mPos;
        if (mPos < size && (data[mPos] == '+' || data[mPos] == '-'))
        {
            ++mPos;
        }
        if (mPos >= size || !isDigit(data[mPos]))
        {
            fail(start, "invalid number: expected a digit in the exponent");
        }
        while (mPos < size && isDigit(data[mPos]))
        {
            ++mPos;
        }
    }
    mText = mInput.substr(start, mPos - start);
    mState = State::kAfterValue;
    return Token::kNumber;
}

namespace
{
//! Where scanning a string that starts at `start` stops: the end of the input, or one byte past the line length
//! limit (a string holds no raw line break, so a longer string is a longer line). Keeps a 100 MB string from being
//! read, copied and unescaped before the limit is noticed.
std::size_t stringScanEnd(std::size_t size, std::size_t start, std::uint64_t maxLineBytes)
{
    return size - start > maxLineBytes ? start + static_cast<std::size_t>(maxLineBytes) + 1 : size;
}
} // namespace

void PullParser::failStringEnd(std::size_t pos)
{
    if (pos < mInput.size())
    {
        countLines(pos, true); // throws: the line holding this string is over the limit
        fail(mTokenOffset, "string longer than the line length limit of " + std::to_string(mLimits.maxLineBytes >> 20) +
                               " MiB (raise it with --max-line-mb)");
    }
    fail(mTokenOffset, "unterminated string (truncated file?)");
}

void PullParser::parseString()
{
    // mPos is at the opening quote.
    mTokenOffset = mPos;
    const std::size_t size = mInput.size();
    const auto* data = reinterpret_cast<const unsigned char*>(mInput.data());
    std::size_t start = mPos + 1;
    std::size_t pos = start;
    const std::size_t end = stringScanEnd(size, start, mLimits.maxLineBytes);
    for (;;)
    {
#if defined(__SSE2__)
        // 16 bytes at a time: quote, backslash, and (as signed bytes) controls below 0x20 and bytes >= 0x80.
        const __m128i quote = _mm_set1_epi8('"');
        const __m128i backslash = _mm_set1_epi8('\\');
        const __m128i space = _mm_set1_epi8(0x20);
        while (pos + 16 <= end)
        {
            const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + pos));
            const __m128i special =
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)),
                             _mm_cmplt_epi8(chunk, space));
            const int mask = _mm_movemask_epi8(special);
            if (mask != 0)
            {
                pos += static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
                break;
            }
            pos += 16;
        }
#endif
        while (pos + 8 <= end && hasStringSpecial(load8(mInput.data() + pos)) == 0)
        {
            pos += 8;
        }
        while (pos < end && kStringClasses[data[pos]] == 0)
        {
            ++pos;
        }
        if (pos >= end)
        {
            failStringEnd(pos);
        }
        switch (kStringClasses[data[pos]])
        {
        case 1:
            mText = mInput.substr(start, pos - start);
            mPos = pos + 1;
            return;
        case 2:
            parseStringSlow(start, pos);
            return;
        case 3:
            fail(pos, data[pos] == '\n' ? "line break inside a string (unterminated string?)"
                                        : "control character " + describeByte(data[pos]) + " inside a string");
        default:
        {
            std::size_t length = utf8Length(mInput, pos);
            if (length == 0)
            {
                fail(pos, "invalid UTF-8 (" + describeByte(data[pos]) + ") inside a string");
            }
            pos += length;
        }
        }
    }
}

std::uint32_t PullParser::parseHex4(std::size_t at)
{
    if (at + 4 > mInput.size())
    {
        fail(at, "truncated \\u escape in a string");
    }
    std::uint32_t value = 0;
    for (std::size_t k = 0; k < 4; ++k)
    {
        char c = mInput[at + k];
        value <<= 4;
        if (c >= '0' && c <= '9')
        {
            value |= static_cast<std::uint32_t>(c - '0');
        }
        else if (c >= 'a' && c <= 'f')
        {
            value |= static_cast<std::uint32_t>(c - 'a' + 10);
        }
        else if (c >= 'A' && c <= 'F')
        {
            value |= static_cast<std::uint32_t>(c - 'A' + 10);
        }
        else
        {
            fail(at, "invalid \\u escape in a string: expected 4 hex digits");
        }
    }
    return value;
}

std::size_t PullParser::appendUnicodeEscape(std::size_t pos)
{
    const std::size_t size = mInput.size();
    const auto* data = reinterpret_cast<const unsigned char*>(mInput.data());
    std::uint32_t codePoint = parseHex4(pos);
    std::size_t escapeStart = pos - 2;
    pos += 4;
    if (codePoint >= 0xD800 && codePoint <= 0xDBFF)
    {
        if (pos + 6 > size || data[pos] != '\\' || data[pos + 1] != 'u')
        {
            fail(escapeStart, "invalid \\u escape: high surrogate without a low surrogate");
        }
        std::uint32_t low = parseHex4(pos + 2);
        if (low < 0xDC00 || low > 0xDFFF)
        {
            fail(escapeStart, "invalid \\u escape: high surrogate without a low surrogate");
        }
        codePoint = 0x10000 + ((codePoint - 0xD800) << 10) + (low - 0xDC00);
        pos += 6;
    }
    else if (codePoint >= 0xDC00 && codePoint <= 0xDFFF)
    {
        fail(escapeStart, "invalid \\u escape: unpaired low surrogate");
    }
    appendUtf8(mScratch, codePoint);
    return pos;
}

void PullParser::parseStringSlow(std::size_t start, std::size_t pos)
{
    const std::size_t size = mInput.size();
    const auto* data = reinterpret_cast<const unsigned char*>(mInput.data());
    mScratch.assign(mInput.data() + start, pos - start);
    const std::size_t end = stringScanEnd(size, start, mLimits.maxLineBytes);
    for (;;)
    {
        std::size_t runStart = pos;
        while (pos < end && kStringClasses[data[pos]] == 0)
        {
            ++pos;
        }
        if (pos >= end)
        {
            failStringEnd(pos);
        }
        mScratch.append(mInput.data() + runStart, pos - runStart);
        switch (kStringClasses[data[pos]])
        {
        case 1:
            mText = mScratch;
            mPos = pos + 1;
            return;
        case 2:
        {
            if (pos + 1 >= size)
            {
                fail(mTokenOffset, "unterminated string (truncated file?)");
            }
            const unsigned char e = data[pos + 1];
            if (const char decoded = kEscapes[e]; decoded != 0)
            {
                mScratch += decoded;
                pos += 2;
            }
            else if (e == 'u')
            {
                pos = appendUnicodeEscape(pos + 2);
            }
            else
            {
                fail(pos, "invalid escape '\\" + std::string(1, static_cast<char>(e)) + "' in a string");
            }
            break;
        }
        case 3:
            fail(pos, data[pos] == '\n' ? "line break inside a string (unterminated string?)"
                                        : "control character " + describeByte(data[pos]) + " inside a string");
        default:
        {
            std::size_t length = utf8Length(mInput, pos);
            if (length == 0)
            {
                fail(pos, "invalid UTF-8 (" + describeByte(data[pos]) + ") inside a string");
            }
            mScratch.append(mInput.data() + pos, length);
            pos += length;
        }
        }
    }
}

void PullParser::skipValue(Token first)
{
    if (first != Token::kObjectBegin && first != Token::kArrayBegin)
    {
        return;
    }
    const std::size_t target = mStack.size() - 1;
    while (mStack.size() > target)
    {
        next();
    }
}

void appendQuoted(std::string& out, std::string_view text)
{
    out += '"';
    for (char c : text)
    {
        auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\')
        {
            out += '\\';
            out += c;
        }
        else if (u < 0x20)
        {
            char buffer[8];
            std::snprintf(buffer, sizeof(buffer), "\\u%04x", u);
            out += buffer;
        }
        else
        {
            out += c;
        }
    }
    out += '"';
}

std::string PullParser::valueText(Token first)
{
    std::string out;
    appendValueText(first, out);
    return out;
}

void PullParser::appendValueText(Token first, std::string& out)
{
    switch (first)
    {
    case Token::kString:
    case Token::kNumber:
        out += mText;
        return;
    case Token::kTrue:
        out += "true";
        return;
    case Token::kFalse:
        out += "false";
        return;
    case Token::kNull:
        out += "null";
        return;
    default:
        break;
    }
    if (first != Token::kObjectBegin && first != Token::kArrayBegin)
    {
        return;
    }
    // Compact JSON, written token by token (no recursion).
    out += first == Token::kObjectBegin ? '{' : '[';
    const std::size_t target = mStack.size() - 1;
    bool needComma = false;
    while (mStack.size() > target)
    {
        Token token = next();
        if (token == Token::kObjectEnd || token == Token::kArrayEnd)
        {
            out += token == Token::kObjectEnd ? '}' : ']';
            needComma = true;
            continue;
        }
        if (needComma)
        {
            out += ',';
        }
        switch (token)
        {
        case Token::kKey:
            appendQuoted(out, mText);
            out += ':';
            needComma = false;
            break;
        case Token::kObjectBegin:
        case Token::kArrayBegin:
            out += token == Token::kObjectBegin ? '{' : '[';
            needComma = false;
            break;
        case Token::kString:
            appendQuoted(out, mText);
            needComma = true;
            break;
        case Token::kNumber:
            out += mText;
            needComma = true;
            break;
        case Token::kTrue:
        case Token::kFalse:
        case Token::kNull:
            out += token == Token::kTrue ? "true" : token == Token::kFalse ? "false" : "null";
            needComma = true;
            break;
        default:
            break;
        }
    }
}

double PullParser::numberValue()
{
    double value = 0.0;
    const char* begin = mText.data();
    const char* end = begin + mText.size();
    auto result = std::from_chars(begin, end, value);
    if (result.ec == std::errc() && result.ptr == end)
    {
        return value;
    }
    if (result.ec == std::errc::result_out_of_range)
    {
        // Underflow reads as 0; overflow is an error.
        std::string copy(mText);
        errno = 0;
        double parsed = std::strtod(copy.c_str(), nullptr);
        if (!std::isinf(parsed))
        {
            return parsed;
        }
    }
    std::string shown = mText.size() > 40 ? std::string(mText.substr(0, 40)) + "..." : std::string(mText);
    throw InputError(locationOf(mTokenOffset), "number " + shown + " is out of range");
}

bool PullParser::integerValue(std::int64_t& value) const
{
    const char* begin = mText.data();
    const char* end = begin + mText.size();
    auto result = std::from_chars(begin, end, value);
    return result.ec == std::errc() && result.ptr == end;
}

bool PullParser::atEndOfInput()
{
    skipWhitespace();
    return mPos >= mInput.size();
}

void PullParser::expectEndOfInput()
{
    if (!atEndOfInput())
    {
        fail(mPos, "unexpected " + describeByte(static_cast<unsigned char>(mInput[mPos])) +
                       " after the end of the JSON value (trailing garbage)");
    }
}

void PullParser::seek(std::size_t offset)
{
    mPos = std::min(offset, mInput.size());
    mState = State::kStart;
    mStack.clear();
}

std::size_t firstContentOffset(std::string_view text)
{
    std::size_t pos = 0;
    if (startsWith(text, "\xEF\xBB\xBF"))
    {
        pos = 3;
    }
    while (pos < text.size() && isWhitespace(text[pos]))
    {
        ++pos;
    }
    return pos;
}

void requireJsonStart(std::string_view text, const std::string& path, std::string_view allowed, std::string_view what,
                      const Limits& limits)
{
    SourceLocation where;
    where.path = path;
    if (text.size() > limits.maxInputBytes)
    {
        throw InputError(where, "input is " + std::to_string(text.size() >> 20) +
                                    " MiB, over the input size limit of " + std::to_string(limits.maxInputBytes >> 20) +
                                    " MiB (raise it with --max-input-mb)");
    }
    if (text.empty())
    {
        throw InputError(where, "file is empty; expected " + std::string(what));
    }
    std::size_t pos = firstContentOffset(text);
    if (pos >= text.size())
    {
        throw InputError(where, "file holds only whitespace; expected " + std::string(what));
    }
    auto first = static_cast<unsigned char>(text[pos]);
    if (allowed.find(static_cast<char>(first)) != std::string_view::npos)
    {
        // A TensorRT log line also starts with '[': "[04/25/2026-00:54:26] [I] ..." or "[I] ...".
        std::string_view rest = text.substr(pos);
        bool logLike =
            first == '[' &&
            ((rest.size() > 3 && isDigit(rest[1]) && isDigit(rest[2]) && rest[3] == '/') ||
             (rest.size() > 2 && std::strchr("IVWEF", rest[1]) != nullptr && rest[1] != '\0' && rest[2] == ']'));
        if (!logLike)
        {
            return;
        }
        where.line =
            1 + static_cast<std::uint64_t>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
        throw InputError(where, "this looks like a TensorRT log (text), not " + std::string(what));
    }
    where.line = 1 + static_cast<std::uint64_t>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
    std::string_view prefix = text.substr(0, 4096);
    bool binary = prefix.find('\0') != std::string_view::npos ||
                  (first < 0x20 && !isWhitespace(static_cast<char>(first))) ||
                  (first >= 0x80 && utf8Length(text, pos) == 0);
    if (binary)
    {
        where.line = 0;
        where.byteOffset = pos;
        where.hasByteOffset = true;
        throw InputError(where, "binary data (starts with " + describeByte(first) + "), not " + std::string(what));
    }
    std::string_view rest = text.substr(pos);
    if (startsWith(rest, "&&&&") || startsWith(rest, "[I]") || startsWith(rest, "[V]") || startsWith(rest, "[W]") ||
        rest.find("[TRT]") < 512)
    {
        throw InputError(where, "this looks like a TensorRT log (text), not " + std::string(what));
    }
    std::string expected;
    for (char c : allowed)
    {
        expected += expected.empty() ? "" : " or ";
        expected += "'" + std::string(1, c) + "'";
    }
    throw InputError(where, "not " + std::string(what) + ": expected " + expected + " at the start, found " +
                                describeByte(first));
}

} // namespace qdq::json
