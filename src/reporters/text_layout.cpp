#include "src/reporters/text_layout.h"

#include <algorithm>
#include <map>

namespace qdq::text_layout
{

namespace
{

bool isContinuationByte(char c)
{
    return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

std::size_t displayWidth(std::string_view text)
{
    return static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return !isContinuationByte(c); }));
}

//! The byte offset just past the first `columns` code points of `text` (or its size).
std::size_t bytesForColumns(std::string_view text, std::size_t columns)
{
    std::size_t seen = 0;
    for (std::size_t i = 0; i < text.size(); ++i)
    {
        if (!isContinuationByte(text[i]) && seen++ == columns)
        {
            return i;
        }
    }
    return text.size();
}

//! Where a wrapped line's continuation starts: under the value of "label:   value", after "12. " or "- ", or at the
//! line's own indentation.
std::size_t hangingIndent(std::string_view line)
{
    const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
    const std::string_view body = line.substr(indent);
    std::size_t digits = 0;
    while (digits < body.size() && body[digits] >= '0' && body[digits] <= '9')
    {
        ++digits;
    }
    if (digits > 0 && body.substr(digits).starts_with(". "))
    {
        return indent + digits + 2;
    }
    if (body.starts_with("- "))
    {
        return indent + 2;
    }
    // "evidence:      text", "Precision:     INT8 ...": a label of one or two words, a colon and two or more spaces.
    const std::size_t colon = body.find(':');
    if (colon != std::string_view::npos && colon > 0 && colon < 24 && body.substr(colon + 1).starts_with("  ") &&
        std::count(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(colon), ' ') <= 1)
    {
        const std::size_t value = body.find_first_not_of(' ', colon + 1);
        if (value != std::string_view::npos)
        {
            return indent + value;
        }
    }
    return indent;
}

void wrapLine(std::string_view line, std::size_t width, std::string& out)
{
    const std::size_t hang = std::min(hangingIndent(line), width / 2);
    std::string current;
    std::size_t currentWidth = 0;
    bool wrapped = false; // on the first line the spaces between words stay as they were (aligned columns)
    std::size_t pos = 0;
    while (pos < line.size())
    {
        const std::size_t wordStart = std::min(line.find_first_not_of(' ', pos), line.size());
        const std::size_t wordEnd = std::min(line.find(' ', wordStart), line.size());
        std::string_view gap = line.substr(pos, wordStart - pos);
        std::string_view word = line.substr(wordStart, wordEnd - wordStart);
        pos = wordEnd;
        if (wrapped && currentWidth == hang)
        {
            gap = "";
        }
        else if (wrapped)
        {
            gap = " ";
        }
        while (!word.empty())
        {
            const std::size_t needed = gap.size() + displayWidth(word);
            if (currentWidth + needed <= width)
            {
                current += gap;
                current += word;
                currentWidth += needed;
                break;
            }
            if (currentWidth > hang || (!wrapped && currentWidth > 0))
            {
                out += current + "\n";
                current.assign(hang, ' ');
                currentWidth = hang;
                wrapped = true;
                gap = "";
                continue;
            }
            // A word wider than a whole line: cut it where the line ends.
            current += gap;
            currentWidth += gap.size();
            const std::size_t cut =
                std::max<std::size_t>(bytesForColumns(word, width - std::min(width, currentWidth)), 1);
            out += current + std::string(word.substr(0, cut)) + "\n";
            word.remove_prefix(cut);
            current.assign(hang, ' ');
            currentWidth = hang;
            wrapped = true;
            gap = "";
        }
    }
    out += current + "\n";
}

//! "a + b + c + d" -> "a + ... + d"; a name without " + " keeps its head and tail.
std::string shortForm(std::string_view name)
{
    const std::size_t first = name.find(" + ");
    const std::size_t last = name.rfind(" + ");
    if (first != std::string_view::npos && last != first)
    {
        return std::string(name.substr(0, first)) + " + ... + " + std::string(name.substr(last + 3));
    }
    const std::size_t head = bytesForColumns(name, 28);
    std::size_t tail = name.size() - std::min<std::size_t>(name.size(), 20);
    while (tail < name.size() && isContinuationByte(name[tail]))
    {
        ++tail;
    }
    return std::string(name.substr(0, head)) + "..." + std::string(name.substr(tail));
}

} // namespace

std::string wrapLines(std::string_view text, std::size_t width)
{
    std::string out;
    out.reserve(text.size() + text.size() / 16);
    std::size_t start = 0;
    while (start < text.size())
    {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const std::string_view line = text.substr(start, end - start);
        if (displayWidth(line) <= width)
        {
            out += line;
            out += '\n';
        }
        else
        {
            wrapLine(line, width, out);
        }
        start = end + 1;
    }
    if (!text.empty() && text.back() != '\n' && !out.empty())
    {
        out.pop_back();
    }
    return out;
}

std::string shortenRepeatedNames(std::string text, std::vector<std::string_view> names, bool keepFirstMention)
{
    // Only names long enough to crowd a line; the longest first, so a name that contains another is handled whole.
    constexpr std::size_t kLongName = 60;
    constexpr std::size_t kMaxNames = 500; // bounds the searches on a report of a very large engine
    std::erase_if(names, [](std::string_view name) { return name.size() < kLongName; });
    std::sort(names.begin(), names.end(),
              [](std::string_view a, std::string_view b)
              { return a.size() != b.size() ? a.size() > b.size() : a < b; });
    names.erase(std::unique(names.begin(), names.end()), names.end());
    names.resize(std::min(names.size(), kMaxNames));
    std::map<std::string, std::size_t> shortCount;
    for (std::string_view name : names)
    {
        ++shortCount[shortForm(name)];
    }
    for (std::string_view name : names)
    {
        const std::string replacement = shortForm(name);
        // A name of one part is cut only when very long: its middle is often what tells it apart.
        constexpr std::size_t kLongSinglePart = 80;
        const bool onePart = name.find(" + ") == std::string_view::npos;
        if (shortCount[replacement] != 1 || replacement.size() + 8 > name.size() ||
            (onePart && name.size() <= kLongSinglePart))
        {
            continue;
        }
        std::size_t at = text.find(name);
        if (at == std::string::npos)
        {
            continue;
        }
        if (keepFirstMention)
        {
            at = text.find(name, at + name.size());
        }
        while (at != std::string::npos)
        {
            text.replace(at, name.size(), replacement);
            at = text.find(name, at + replacement.size());
        }
    }
    return text;
}

std::vector<std::string> foldNotCheckedNotes(const std::vector<std::string>& notes)
{
    constexpr std::string_view kMarker = ": not checked, needs ";
    std::vector<std::string> folded;
    std::map<std::string, std::vector<std::string>> rulesByInput;
    std::vector<std::string> inputOrder;
    for (const std::string& note : notes)
    {
        const std::size_t marker = note.find(kMarker);
        const std::string rule = marker == std::string::npos ? "" : note.substr(0, marker);
        if (rule.empty() || rule.find(' ') != std::string::npos)
        {
            folded.push_back(note);
            continue;
        }
        const std::string input = note.substr(marker + kMarker.size());
        auto [it, added] = rulesByInput.try_emplace(input);
        if (added)
        {
            inputOrder.push_back(input);
        }
        it->second.push_back(rule);
    }
    for (const std::string& input : inputOrder)
    {
        const auto& rules = rulesByInput[input];
        folded.push_back(rules.size() == 1 ? rules.front() + " not checked, for want of " + input
                                           : std::to_string(rules.size()) + " rules not checked, for want of " + input +
                                                 " (the JSON report's notes name them)");
    }
    return folded;
}

} // namespace qdq::text_layout
