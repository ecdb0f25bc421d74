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

namespace
{

bool isAlnum(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

bool isDigit(std::string_view text, std::size_t at)
{
    return at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) != 0;
}

//! The position of the last acceptable occurrence of marker in name (npos when none). accept(at, end) judges an
//! occurrence at [at, end).
template <class Accept>
std::size_t lastMarker(std::string_view name, std::string_view marker, Accept&& accept)
{
    std::size_t best = std::string_view::npos;
    for (std::size_t at = name.find(marker); at != std::string_view::npos; at = name.find(marker, at + 1))
    {
        if (accept(at, at + marker.size()))
        {
            best = at;
        }
    }
    return best;
}

bool precededBy(std::string_view name, std::size_t at, std::string_view prefix)
{
    return at >= prefix.size() && name.substr(at - prefix.size(), prefix.size()) == prefix;
}

} // namespace

QdqNameKind qdqNameKind(std::string_view name)
{
    std::size_t bestAt = std::string_view::npos;
    QdqNameKind best = QdqNameKind::kNone;
    const auto consider = [&](std::size_t at, QdqNameKind kind)
    {
        if (at != std::string_view::npos && (bestAt == std::string_view::npos || at > bestAt))
        {
            bestAt = at;
            best = kind;
        }
    };
    // ONNX op names (PyTorch, pytorch-quantization, Model Optimizer, ONNX Runtime, Paddle2ONNX): "QuantizeLinear" not
    // continued by a lower-case letter ("QuantizeLinearity" is not one).
    const auto opName = [&](std::size_t, std::size_t end)
    { return end == name.size() || !std::islower(static_cast<unsigned char>(name[end])); };
    consider(lastMarker(name, "DequantizeLinear", opName), QdqNameKind::kDequantize);
    consider(lastMarker(name, "QuantizeLinear",
                        [&](std::size_t at, std::size_t end)
                        { return !precededBy(name, at, "De") && opName(at, end); }),
             QdqNameKind::kQuantize);
    // TensorRT's names for Q/DQ scales (8.0-8.2).
    consider(lastMarker(name, "dequantize_scale_node", [](std::size_t, std::size_t) { return true; }),
             QdqNameKind::kDequantize);
    consider(lastMarker(name, "quantize_scale_node",
                        [&](std::size_t at, std::size_t) { return !precededBy(name, at, "de"); }),
             QdqNameKind::kQuantize);
    // tf2onnx: utils.make_name("QuantLinearNode") = "QuantLinearNode__<counter>".
    const auto tf2onnx = [&](std::size_t at, std::size_t end)
    { return (at == 0 || !isAlnum(name[at - 1])) && isDigit(name, end); };
    consider(lastMarker(name, "DequantLinearNode__", tf2onnx), QdqNameKind::kDequantize);
    consider(lastMarker(name, "QuantLinearNode__",
                        [&](std::size_t at, std::size_t end)
                        { return !precededBy(name, at, "De") && tf2onnx(at, end); }),
             QdqNameKind::kQuantize);
    // PaddlePaddle operator names: "quantize_linear" / "dequantize_linear", alone or numbered ("_3", ".3",
    // "_0.tmp_0"), as a whole word (not "fake_quantize_linear_op", "quantize_linear_layer").
    const auto paddle = [&](std::size_t at, std::size_t end)
    {
        if (at > 0 && (isAlnum(name[at - 1]) || name[at - 1] == '_'))
        {
            return false;
        }
        if (end == name.size())
        {
            return true;
        }
        return ((name[end] == '_' || name[end] == '.') && isDigit(name, end + 1)) || name[end] == ':' ||
               name[end] == '/' || name[end] == ' ';
    };
    consider(lastMarker(name, "dequantize_linear", paddle), QdqNameKind::kDequantize);
    consider(lastMarker(name, "quantize_linear",
                        [&](std::size_t at, std::size_t end)
                        { return !precededBy(name, at, "de") && paddle(at, end); }),
             QdqNameKind::kQuantize);
    // Network API layers without a name: "(Unnamed Layer* 1) [Quantize]".
    if (endsWith(name, "[Quantize]"))
    {
        consider(name.size() - 10, QdqNameKind::kQuantize);
    }
    if (endsWith(name, "[Dequantize]"))
    {
        consider(name.size() - 12, QdqNameKind::kDequantize);
    }
    // TensorRT's DynamicQuantize layer (FP8/FP4 with block scales computed at run time): a quantize op. Its API name
    // is "(Unnamed Layer* 0) [DynamicQuantize]" (FORMATS-trt11.md L4;
    // cookbook111-dynquant-fp8-fp4-h100/log-main.py.log:83).
    if (endsWith(name, "[DynamicQuantize]"))
    {
        consider(name.size() - 17, QdqNameKind::kQuantize);
    }
    return best;
}

bool looksLikeQuantizeName(std::string_view name)
{
    return qdqNameKind(name) == QdqNameKind::kQuantize;
}

bool looksLikeDequantizeName(std::string_view name)
{
    return qdqNameKind(name) == QdqNameKind::kDequantize;
}

bool looksLikeQuantizedWeightName(std::string_view name)
{
    static constexpr std::string_view kSuffix = "_quantized";
    return endsWith(name, kSuffix) && name.size() > kSuffix.size();
}

} // namespace qdq
