#include "qdq/diagnostics.h"
#include "qdq/precision.h"
#include "src/reporters/json_writer.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace qdq;

TEST(Printable, EscapesControlAndInvalidUtf8)
{
    EXPECT_EQ(printable("a\x1e"
                        "b"),
              "a\\x1eb");
    EXPECT_EQ(printable("\x1b[31mred"), "\\x1b[31mred");
    EXPECT_EQ(printable(std::string("ok\xff", 3)), "ok\\xff");
    EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");
    EXPECT_EQ(printable(std::string(10, 'x'), 4), "xxxx...");
}

TEST(Utf8, Validity)
{
    EXPECT_TRUE(isValidUtf8("plain"));
    EXPECT_TRUE(isValidUtf8("\xe2\x80\x94"));
    EXPECT_FALSE(isValidUtf8("\xc0\xaf"));     // overlong
    EXPECT_FALSE(isValidUtf8("\xed\xa0\x80")); // surrogate
    EXPECT_FALSE(isValidUtf8("\xe2\x80"));     // truncated
}

TEST(Precision, LongAndShortFormats)
{
    EXPECT_EQ(precisionFromFormat("Row major linear FP32"), Precision::kFP32);
    EXPECT_EQ(precisionFromFormat("Thirty-two wide channel vectorized row major Int8 format."), Precision::kINT8);
    EXPECT_EQ(precisionFromFormat("Channel major FP16 format where channel % 8 == 0"), Precision::kFP16);
    EXPECT_EQ(precisionFromFormat("Half"), Precision::kFP16);
    EXPECT_EQ(precisionFromFormat("Float"), Precision::kFP32);
    EXPECT_EQ(precisionFromFormat("Int32"), Precision::kINT32);
    EXPECT_EQ(precisionFromFormat("Row major linear BOOL"), Precision::kBool);
    EXPECT_EQ(precisionFromFormat("BF16"), Precision::kBF16);
    EXPECT_EQ(precisionFromFormat("FP8"), Precision::kFP8);
    EXPECT_EQ(precisionFromFormat("N/A due to dynamic shapes"), Precision::kUnknown);
    EXPECT_EQ(precisionFromFormat("Row major linear Int64"), Precision::kINT64);
}

TEST(InputErrorMessage, NamesFileAndLine)
{
    SourceLocation where{"model.json", 12, 0, false};
    InputError error(where, "unexpected end of input");
    EXPECT_STREQ(error.what(), "model.json:12: error: unexpected end of input");
    SourceLocation byByte{"m.onnx", 0, 77, true};
    EXPECT_EQ(byByte.describe(), "m.onnx: byte 77");
}

TEST(JsonWriter, FlushingWriterHandsOverTheWholeDocumentAndEscapesControls)
{
    // A top-level array as well as an object: the end of either document hands over what is left.
    std::string whole;
    JsonWriter plain(whole);
    std::string streamed;
    std::string buffer;
    JsonWriter flushing(buffer, [&](const std::string& text) { streamed += text; });
    for (JsonWriter* json : {&plain, &flushing})
    {
        json->beginArray().value("tab\there").value("del\x7f c1\xc2\x9b");
        json->beginObject().member("n", std::int64_t{3}).endObject();
        json->endArray();
    }
    EXPECT_EQ(streamed, whole);
    EXPECT_TRUE(buffer.empty());
    EXPECT_NE(whole.find("\"tab\\there\""), std::string::npos) << whole;
    EXPECT_NE(whole.find("del\\u007f c1\\u009b"), std::string::npos) << whole;
}

// The writer scans 16 bytes at a time and the last few specially: every length up to 40, with each special byte at
// each position, must come out as a byte-by-byte escaper writes it.
TEST(JsonWriter, EscapesAtEveryPositionOfEveryLength)
{
    const auto reference = [](std::string_view text)
    {
        std::string out = "\"";
        for (unsigned char c : text)
        {
            switch (c)
            {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20 || c == 0x7f)
                {
                    char escaped[8];
                    std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
                    out += escaped;
                }
                else
                {
                    out += static_cast<char>(c);
                }
            }
        }
        return out + "\"";
    };
    for (std::size_t length = 0; length <= 40; ++length)
    {
        for (char special : {'"', '\\', '\n', '\t', '\x01', '\x1f', '\x7f'})
        {
            for (std::size_t at = 0; at <= length; ++at)
            {
                std::string text(length, 'x');
                if (at < length)
                {
                    text[at] = special;
                }
                std::string out;
                JsonWriter json(out);
                json.value(text);
                ASSERT_EQ(out, reference(text)) << "length " << length << " at " << at;
            }
        }
    }
    // Bytes >= 0x80 leave the fast path: valid UTF-8 is kept as it is.
    std::string out;
    JsonWriter json(out);
    // Appended, not `std::string(20, 'x') + "..."`: GCC 12 at -O2 reports a false -Warray-bounds on that temporary
    // once the test headers are precompiled.
    std::string accented(20, 'x');
    accented += "\xc3\xa9";
    json.value(accented);
    EXPECT_EQ(out, "\"" + accented + "\"");
}

// Elements written by a writer of their own, for an array another writer has open, read as that writer would have
// written them: as the first elements, after others, and as an empty part.
TEST(JsonWriter, ArrayElementsWrittenApartAreTheSameText)
{
    const auto element = [](JsonWriter& json, int i)
    { json.beginObject().member("i", std::int64_t{i}).key("v").beginArray().value("a").endArray().endObject(); };
    std::string whole;
    JsonWriter one(whole);
    one.beginObject().key("head").value(true).key("items").beginArray();
    for (int i = 0; i < 5; ++i)
    {
        element(one, i);
    }
    one.endArray().endObject();

    for (int split : {0, 2, 5})
    {
        std::string first;
        std::string rest;
        JsonWriter firstWriter(first, JsonWriter::ArrayElementsAt{2, false});
        JsonWriter restWriter(rest, JsonWriter::ArrayElementsAt{2, split > 0});
        for (int i = 0; i < 5; ++i)
        {
            element(i < split ? firstWriter : restWriter, i);
        }
        std::string streamed;
        std::string buffer;
        JsonWriter document(buffer, [&](const std::string& text) { streamed += text; });
        document.beginObject().key("head").value(true).key("items").beginArray();
        document.appendElements(first).appendElements(rest);
        document.endArray().endObject();
        EXPECT_EQ(streamed, whole) << "split at " << split;
    }

    std::string out;
    JsonWriter noArray(out);
    noArray.beginObject();
    EXPECT_THROW(noArray.appendElements("1"), std::logic_error);
}
