#include "qdq/layer_names.h"

#include <array>
#include <cctype>

namespace qdq
{

namespace
{

bool startsWith(std::string_view text, std::string_view prefix)
{
    return text.substr(0, prefix.size()) == prefix;
}

bool endsWith(std::string_view text, std::string_view suffix)
{
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string_view trim(std::string_view text)
{
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    {
        text.remove_prefix(1);
    }
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    {
        text.remove_suffix(1);
    }
    return text;
}

//! Splits on any of the separators at bracket depth 0 ("(", "[" and "{" nest).
std::vector<std::string_view> splitTopLevel(std::string_view text, std::initializer_list<std::string_view> separators)
{
    std::vector<std::string_view> parts;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < text.size(); ++i)
    {
        char c = text[i];
        if (c == '(' || c == '[' || c == '{')
        {
            ++depth;
        }
        else if ((c == ')' || c == ']' || c == '}') && depth > 0)
        {
            --depth;
        }
        if (depth != 0)
        {
            continue;
        }
        for (auto separator : separators)
        {
            if (separator.front() == c && text.compare(i, separator.size(), separator) == 0)
            {
                parts.push_back(text.substr(start, i - start));
                i += separator.size() - 1;
                start = i + 1;
                break;
            }
        }
    }
    parts.push_back(text.substr(start));
    return parts;
}

void collectTokens(std::string_view piece, std::vector<std::string>& tokens, int recursion)
{
    piece = trim(piece);
    if (piece.empty() || recursion > 64)
    {
        return;
    }
    // PWN(a, b) and the documented spelling fusedPointwiseNode(a, b) nest; their arguments are ", "-separated.
    for (std::string_view wrapper : {std::string_view("PWN("), std::string_view("fusedPointwiseNode(")})
    {
        if (startsWith(piece, wrapper) && piece.back() == ')')
        {
            std::string_view inner = piece.substr(wrapper.size(), piece.size() - wrapper.size() - 1);
            for (auto part : splitTopLevel(inner, {", ", " + ", " || "}))
            {
                collectTokens(part, tokens, recursion + 1);
            }
            return;
        }
    }
    if (startsWith(piece, "{ForeignNode[") && endsWith(piece, "]}"))
    {
        std::string_view inner = piece.substr(13, piece.size() - 15);
        std::size_t dots = inner.find("...");
        if (dots == std::string_view::npos)
        {
            collectTokens(inner, tokens, recursion + 1);
            return;
        }
        for (auto part : splitTopLevel(inner.substr(0, dots), {" + "}))
        {
            collectTokens(part, tokens, recursion + 1);
        }
        for (auto part : splitTopLevel(inner.substr(dots + 3), {" + "}))
        {
            collectTokens(part, tokens, recursion + 1);
        }
        return;
    }
    tokens.push_back(stripTrtSuffixes(piece));
}

} // namespace

std::string stripTrtSuffixes(std::string_view token)
{
    std::string_view text = trim(token);
    // " [profile N]"
    if (endsWith(text, "]"))
    {
        std::size_t open = text.rfind(" [profile ");
        if (open != std::string_view::npos)
        {
            text = text.substr(0, open);
        }
    }
    bool changed = true;
    while (changed)
    {
        changed = false;
        std::size_t clone = text.rfind("_clone_");
        if (clone != std::string_view::npos && clone + 7 < text.size())
        {
            bool digits = true;
            for (std::size_t i = clone + 7; i < text.size(); ++i)
            {
                digits = digits && std::isdigit(static_cast<unsigned char>(text[i]));
            }
            if (digits)
            {
                text = text.substr(0, clone);
                changed = true;
            }
        }
        for (std::string_view suffix : {std::string_view("_cpy"), std::string_view("_quantize_scale_node"),
                                        std::string_view("_dequantize_scale_node")})
        {
            if (endsWith(text, suffix) && text.size() > suffix.size())
            {
                text.remove_suffix(suffix.size());
                changed = true;
            }
        }
    }
    return std::string(text);
}

LayerNameParts parseLayerName(std::string_view name)
{
    LayerNameParts parts;
    std::string_view text = trim(name);
    // Drop a multi-profile suffix from the whole name first.
    if (endsWith(text, "]"))
    {
        std::size_t open = text.rfind(" [profile ");
        if (open != std::string_view::npos)
        {
            text = text.substr(0, open);
        }
    }
    static constexpr std::string_view kReformatInput = "Reformatting CopyNode for Input Tensor ";
    static constexpr std::string_view kReformatOutput = "Reformatting CopyNode for Output Tensor ";
    static constexpr std::string_view kReformatNetworkInput = "Reformatting CopyNode for Network Input ";
    static constexpr std::string_view kReformatNetworkOutput = "Reformatting CopyNode for Network Output ";
    auto reformat = [&](std::string_view prefix, bool ofInput, bool hasIndex)
    {
        parts.reformatCopyNode = true;
        parts.reformatOfInput = ofInput;
        std::string_view rest = text.substr(prefix.size());
        if (hasIndex)
        {
            std::size_t to = rest.find(" to ");
            rest = to == std::string_view::npos ? std::string_view() : rest.substr(to + 4);
        }
        parts.reformatTarget = std::string(trim(rest));
    };
    if (startsWith(text, kReformatInput))
    {
        reformat(kReformatInput, true, true);
        return parts;
    }
    if (startsWith(text, kReformatOutput))
    {
        reformat(kReformatOutput, false, true);
        return parts;
    }
    if (startsWith(text, kReformatNetworkInput))
    {
        reformat(kReformatNetworkInput, true, false);
        return parts;
    }
    if (startsWith(text, kReformatNetworkOutput))
    {
        reformat(kReformatNetworkOutput, false, false);
        return parts;
    }
    if (endsWith(text, " copy") && text.size() > 5)
    {
        parts.tensorCopy = true;
        parts.copiedTensor = std::string(text.substr(0, text.size() - 5));
        return parts;
    }
    if (startsWith(text, "{ForeignNode[") && endsWith(text, "]}"))
    {
        parts.foreignNode = true;
        std::string_view inner = text.substr(13, text.size() - 15);
        std::size_t dots = inner.find("...");
        if (dots != std::string_view::npos)
        {
            auto firstParts = splitTopLevel(inner.substr(0, dots), {" + "});
            auto lastParts = splitTopLevel(inner.substr(dots + 3), {" + "});
            parts.rangeFirst = stripTrtSuffixes(firstParts.back());
            parts.rangeLast = stripTrtSuffixes(lastParts.front());
        }
    }
    auto branches = splitTopLevel(text, {" || "});
    parts.horizontalMerge = branches.size() > 1;
    for (auto branch : branches)
    {
        for (auto piece : splitTopLevel(branch, {" + "}))
        {
            collectTokens(piece, parts.tokens, 0);
        }
    }
    return parts;
}

std::optional<std::string> helperSubject(std::string_view token)
{
    static constexpr std::array<std::string_view, 7> kPrefixes = {
        "copied_squeeze_after_", "unsqueeze_node_after_", "squeeze_after_",  "reshape_before_",
        "reshape_after_",        "transpose_before_",     "transpose_after_"};
    for (auto prefix : kPrefixes)
    {
        if (startsWith(token, prefix) && token.size() > prefix.size())
        {
            return std::string(token.substr(prefix.size()));
        }
    }
    return std::nullopt;
}

bool isUnnamedLayerToken(std::string_view token)
{
    return startsWith(token, "(Unnamed Layer* ");
}

bool looksLikeQuantizeName(std::string_view name)
{
    return (name.find("QuantizeLinear") != std::string_view::npos &&
            name.find("DequantizeLinear") == std::string_view::npos) ||
           (name.find("quantize_scale_node") != std::string_view::npos &&
            name.find("dequantize_scale_node") == std::string_view::npos) ||
           endsWith(name, "[Quantize]");
}

bool looksLikeDequantizeName(std::string_view name)
{
    return name.find("DequantizeLinear") != std::string_view::npos ||
           name.find("dequantize_scale_node") != std::string_view::npos || endsWith(name, "[Dequantize]");
}

} // namespace qdq
