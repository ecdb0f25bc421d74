// A small streaming (pull) JSON tokenizer over a string_view, for the JSON readers (layer info, profile, timing,
// TREx metadata). No DOM: the reader asks for one token at a time and copies only what it keeps. Strings are
// decoded (all escapes, \u surrogate pairs -> UTF-8) and checked for valid UTF-8; nesting depth is bounded by
// Limits::maxJsonDepth without recursion; byte offsets map to 1-based lines incrementally (for layer records and
// error messages), checking Limits::maxLineBytes on the way. Several top-level values may follow each other in one
// text (IEngineInspector output): see atEndOfInput() / seek(). Internal to parsers/.
#pragma once

#include "qdq/diagnostics.h"
#include "qdq/limits.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qdq::json
{

enum class Token : std::uint8_t
{
    kObjectBegin,
    kObjectEnd,
    kArrayBegin,
    kArrayEnd,
    kKey,    //!< an object member name; text() holds it, the member's value comes next
    kString, //!< text() holds the decoded string
    kNumber, //!< text() holds the number as written (also nan/inf spellings some writers print)
    kTrue,
    kFalse,
    kNull,
    kEnd, //!< the current top-level value is complete
};

//! "'{'", "a string", "a number", ... for messages.
std::string_view tokenDescription(Token token);

class PullParser
{
public:
    //! text must outlive the parser. pathForMessages names the file in errors.
    PullParser(std::string_view text, std::string pathForMessages, const Limits& limits);

    //! The next token. After a complete top-level value it returns kEnd until seek() starts another one.
    Token next();

    //! Decoded key or string of the last kKey/kString token, or the raw text of the last kNumber. Valid until the
    //! next call to next().
    std::string_view text() const { return mText; }

    //! Byte offset where the last token starts.
    std::size_t tokenOffset() const { return mTokenOffset; }

    //! Current nesting depth (0 at top level, between values).
    std::size_t depth() const { return mStack.size(); }

    //! Skips the rest of a value whose first token was `first` (no-op for scalars).
    void skipValue(Token first);

    //! The rest of a value whose first token was `first`, as text: strings decoded, numbers as written,
    //! true/false/null spelled out, objects and arrays as compact JSON.
    std::string valueText(Token first);
    //! valueText() appended to out (no temporary string).
    void appendValueText(Token first, std::string& out);

    //! The last kNumber as a double; throws InputError (at the token's line) when it is out of range.
    double numberValue();
    //! The last kNumber as an integer; false when it is not an integer or does not fit.
    bool integerValue(std::int64_t& value) const;

    //! Skips whitespace after a complete top-level value; true when nothing else is left.
    bool atEndOfInput();
    //! Throws "unexpected ... after the end of the JSON value" unless only whitespace is left.
    void expectEndOfInput();
    //! Offset of the next unread byte (between top-level values: after whitespace when atEndOfInput() was called).
    std::size_t position() const { return mPos; }
    //! Starts reading a new top-level value at offset (only between top-level values).
    void seek(std::size_t offset);

    //! 1-based line of a byte offset. Cheap for increasing offsets (counts incrementally); checks the line-length
    //! limit for the lines it passes.
    std::uint64_t lineOf(std::size_t offset);
    //! Counts the remaining lines (so the line-length limit is checked for the whole text).
    void checkAllLines() { lineOf(mInput.size()); }

    SourceLocation locationOf(std::size_t offset);
    [[noreturn]] void fail(std::size_t offset, const std::string& message);
    //! A warning at the line of offset.
    ReaderWarning warningAt(std::size_t offset, std::string message);

    const std::string& path() const { return mPath; }
    std::string_view input() const { return mInput; }

private:
    enum class State : std::uint8_t
    {
        kStart,
        kAfterObjectBegin,
        kAfterKey,
        kAfterArrayBegin,
        kAfterValue,
        kDone,
    };

    Token parseValue();
    Token parseNumber();
    Token parseLiteral(std::string_view word, Token token);
    void parseString(); // sets mText
    void parseStringSlow(std::size_t start, std::size_t pos);
    //! Decodes a unicode escape (4 hex digits after the u, and the low surrogate after a high one) whose hex digits
    //! start at `pos`; returns the position after it.
    std::size_t appendUnicodeEscape(std::size_t pos);
    //! A string that reached its scan end: over the line length limit, or unterminated. Throws.
    [[noreturn]] void failStringEnd(std::size_t pos);
    void skipWhitespace();
    void push(char container);
    std::uint32_t parseHex4(std::size_t at);
    std::uint64_t countLines(std::size_t offset, bool checkLimit);

    std::string_view mInput;
    std::string mPath;
    Limits mLimits;
    std::size_t mPos = 0;
    std::size_t mTokenOffset = 0;
    State mState = State::kStart;
    std::vector<char> mStack;
    std::string_view mText;
    std::string mScratch;
    // Incremental line counting: mLine is the line of offset mCountedTo; mLineStart is where that line begins.
    std::size_t mCountedTo = 0;
    std::uint64_t mLine = 1;
    std::size_t mLineStart = 0;
};

//! Skips a UTF-8 byte order mark and JSON whitespace from the start of text; returns the offset of the first byte.
std::size_t firstContentOffset(std::string_view text);

//! Throws InputError unless text starts (after a BOM and whitespace) with one of `allowed` (e.g. "{[").
//! The message says what was found instead: an empty file, binary data, a TensorRT log, other text.
//! `what` names the expected input, e.g. "layer-information JSON".
void requireJsonStart(std::string_view text, const std::string& path, std::string_view allowed, std::string_view what,
                      const Limits& limits);

//! Appends text to out as a JSON string literal (with quotes and escapes).
void appendQuoted(std::string& out, std::string_view text);

} // namespace qdq::json
