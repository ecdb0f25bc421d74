// Errors and warnings that readers return. Readers never print: they throw InputError for input that cannot be
// read at all, and collect ReaderWarning for input that varies but can still be used.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace qdq
{

//! Where in a file something was seen. line is 1-based (0 = unknown); byteOffset is 0-based.
struct SourceLocation
{
    std::string path;
    std::uint64_t line = 0;
    std::uint64_t byteOffset = 0;
    bool hasByteOffset = false;

    //! "path:line" or "path: byte N" or "path".
    std::string describe() const;
};

//! A warning from a reader: the input is usable but something was odd or missing.
struct ReaderWarning
{
    SourceLocation where;
    std::string message;

    std::string describe() const;
};

//! Input that cannot be read: unknown kind, truncated, corrupt, over a limit. The CLI maps this to exit status 2.
class InputError : public std::runtime_error
{
public:
    InputError(SourceLocation where, std::string message);

    const SourceLocation& where() const noexcept { return mWhere; }
    const std::string& message() const noexcept { return mMessage; }

private:
    SourceLocation mWhere;
    std::string mMessage;
};

//! Makes a string safe to print on a terminal or put in a one-line message: control characters (including
//! \x1e/\x1f and ESC), and invalid UTF-8 become \xNN escapes. Long strings are cut at maxBytes with "...".
std::string printable(std::string_view text, std::size_t maxBytes = 4096);

//! Length of the valid UTF-8 sequence starting at text[i] (1 for ASCII), or 0 when it is invalid (bad lead or
//! continuation byte, truncated, overlong, surrogate, past U+10FFFF).
std::size_t utf8SequenceLength(std::string_view text, std::size_t i);

//! True when text is valid UTF-8.
bool isValidUtf8(std::string_view text);

//! Escapes, in serialized JSON, the characters a JSON serializer leaves raw but a terminal may obey: DEL and the
//! C1 controls U+0080..U+009F (CSI U+009B starts an escape sequence) become \u007f / \u00XX. The document parses
//! to the same values.
std::string terminalSafeJson(std::string json);

} // namespace qdq
