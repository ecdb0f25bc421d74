// The text report's layout: lines wrapped to a width, long layer names shortened after their first mention, and the
// "not checked" notes folded into one line per missing input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace qdq::text_layout
{

//! The width of the text report when it is not written to a terminal (report.txt, a pipe): deterministic.
inline constexpr std::size_t kDefaultWidth = 100;

//! Wraps every line of `text` longer than `width` characters (UTF-8 code points) at spaces. A continuation line is
//! indented under the line's value: after a label such as "   evidence:      ", after a "12. " or "- " bullet, or
//! at the line's own indentation. A word longer than the room left is cut.
std::string wrapLines(std::string_view text, std::size_t width);

//! Replaces every mention of each name in `names` after the first by a short form ("first + ... + last" for a fused
//! layer's name, else its head and tail around "..."), when the name is long and its short form is unique among them.
//! keepFirstMention false: every mention, the first too (the compact report; the JSON has the full names).
std::string shortenRepeatedNames(std::string text, std::vector<std::string_view> names, bool keepFirstMention = true);

//! The notes with every "<rule>: not checked, needs <input>" folded into one note per missing input (the JSON keeps
//! each note).
std::vector<std::string> foldNotCheckedNotes(const std::vector<std::string>& notes);

} // namespace qdq::text_layout
