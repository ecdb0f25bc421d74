// A small streaming JSON writer for the reports. Building a DOM for a 100,000-layer engine costs gigabytes; writing
// straight into a string keeps memory at the size of the output, and a flush function (which takes the text written
// so far) keeps it at about a megabyte. Control characters (C0, DEL, C1) inside strings are escaped, so the output is
// safe to print on a terminal. Output is pretty-printed with two-space indents,
// keys in the order written, numbers in their shortest round-trip form: deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qdq
{

class JsonWriter
{
public:
    explicit JsonWriter(std::string& out) : mOut(out) {}
    //! Hands the text to flush (then clears out) whenever about a megabyte is pending, and at the end of the document.
    JsonWriter(std::string& out, std::function<void(const std::string&)> flush) : mOut(out), mFlush(std::move(flush)) {}

    //! Where the elements a writer of its own writes will go: into the array another writer has open at `depth` (the
    //! document's outermost value is depth 1), after `followsElements` or as its first elements.
    struct ArrayElementsAt
    {
        std::size_t depth = 1;
        bool followsElements = false;
    };
    //! Writes elements of that array, and nothing else, so that parts of a large array can be written on another
    //! thread: the text, handed to the other writer's appendElements, is what that writer would have written itself.
    //! Nothing is flushed: the caller takes out's text as it likes.
    JsonWriter(std::string& out, ArrayElementsAt at);
    //! Appends text written by an ArrayElementsAt writer to the array this writer has open.
    JsonWriter& appendElements(const std::string& text);

    JsonWriter& beginObject();
    JsonWriter& endObject();
    JsonWriter& beginArray();
    JsonWriter& endArray();
    //! Starts a member of the current object; the value follows.
    JsonWriter& key(std::string_view name);

    JsonWriter& value(std::string_view text);
    JsonWriter& value(const char* text) { return value(std::string_view(text)); }
    JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
    JsonWriter& value(double number);
    JsonWriter& value(std::int64_t number);
    JsonWriter& value(std::uint64_t number);
    JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
    JsonWriter& value(bool flag);
    JsonWriter& null();
    JsonWriter& value(const std::optional<double>& number);
    JsonWriter& value(const std::vector<std::string>& strings);
    //! An array of indices (findings of a root cause, ...).
    JsonWriter& value(const std::vector<std::size_t>& indices);
    JsonWriter& value(const std::vector<std::string_view>& strings);

    //! Shorthands: key then value.
    template <typename T>
    JsonWriter& member(std::string_view name, const T& v)
    {
        key(name);
        return value(v);
    }

private:
    void beforeValue();
    //! Ends the innermost object or array.
    void close(char bracket);
    void newline();
    void writeString(std::string_view text);

    struct Level
    {
        bool isObject = false;
        bool empty = true;
    };
    static constexpr std::size_t kFlushBytes = 1u << 20;
    std::string& mOut;
    std::function<void(const std::string&)> mFlush;
    std::vector<Level> mLevels;
    bool mAfterKey = false;
};

//! Milliseconds rounded to 6 decimals, so sums of profile times print the same on every platform.
double roundMs(double value);

} // namespace qdq
