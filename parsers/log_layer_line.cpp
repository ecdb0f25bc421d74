#include "parsers/log_layer_line.h"

#include <charconv>
#include <cstdint>
#include <optional>

namespace qdq
{

namespace
{

bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && isSpace(s.front()))
    {
        s.remove_prefix(1);
    }
    while (!s.empty() && isSpace(s.back()))
    {
        s.remove_suffix(1);
    }
    return s;
}

bool isIdentChar(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

bool allSpace(std::string_view s)
{
    for (char c : s)
    {
        if (!isSpace(c))
        {
            return false;
        }
    }
    return true;
}

bool parseInt64(std::string_view s, std::int64_t& value)
{
    s = trim(s);
    if (s.empty())
    {
        return false;
    }
    auto result = std::from_chars(s.data(), s.data() + s.size(), value);
    return result.ec == std::errc() && result.ptr == s.data() + s.size();
}

//! A tensor type spec at position j of s: `(Type[dims])` (8.5+, j at '(') or `[Type(dims)]` (8.0-8.4, j at '[').
//! Returns the position just past the spec, or npos.
std::size_t matchTensorSpec(std::string_view s, std::size_t j, EngineTensor& tensor)
{
    const char open = s[j];
    const char dimsOpen = open == '(' ? '[' : '(';
    const char dimsClose = open == '(' ? ']' : ')';
    const char close = open == '(' ? ')' : ']';
    std::size_t k = j + 1;
    std::size_t typeBegin = k;
    while (k < s.size() && isIdentChar(s[k]))
    {
        ++k;
    }
    if (k == typeBegin || k >= s.size() || s[k] != dimsOpen)
    {
        return std::string_view::npos;
    }
    std::string_view type = s.substr(typeBegin, k - typeBegin);
    std::size_t dimsBegin = k + 1;
    std::size_t dimsEnd = dimsBegin;
    while (dimsEnd < s.size() && s[dimsEnd] != dimsClose)
    {
        char c = s[dimsEnd];
        if (!((c >= '0' && c <= '9') || c == '-' || c == ',' || c == ':' || c == ' '))
        {
            return std::string_view::npos;
        }
        ++dimsEnd;
    }
    if (dimsEnd + 1 >= s.size() || s[dimsEnd + 1] != close)
    {
        return std::string_view::npos;
    }
    std::vector<std::int64_t> dims;
    int vectorWidth = 0;
    if (!parseDimensions(s.substr(dimsBegin, dimsEnd - dimsBegin), dims, vectorWidth))
    {
        return std::string_view::npos;
    }
    tensor.dimensions = std::move(dims);
    tensor.vectorWidth = vectorWidth;
    tensor.format = std::string(type);
    tensor.precision = precisionFromFormat(type);
    return dimsEnd + 2;
}

//! Length of an arrow (" -> ", "-> ", " ->" at the end, "->" at the end) at position p, or 0.
std::size_t arrowAt(std::string_view s, std::size_t p)
{
    std::string_view rest = s.substr(p);
    if (rest.starts_with(" -> "))
    {
        return 4;
    }
    if (rest.starts_with("-> "))
    {
        return 3;
    }
    if (rest == " ->")
    {
        return 3;
    }
    if (rest == "->")
    {
        return 2;
    }
    return 0;
}

bool parseTensorSection(std::string_view s, EngineLayer& layer, std::string& why)
{
    std::vector<EngineTensor>* list = &layer.inputs;
    std::size_t p = 0;
    if (std::size_t arrow = arrowAt(s, p); arrow != 0)
    {
        p += arrow;
        list = &layer.outputs;
    }
    bool sawArrow = list == &layer.outputs;
    while (p < s.size() && !allSpace(s.substr(p)))
    {
        bool found = false;
        std::size_t j = p;
        while ((j = s.find_first_of("([", j)) != std::string_view::npos)
        {
            EngineTensor tensor;
            bool parenForm = s[j] == '(';
            if (parenForm && j > p && s[j - 1] != ' ')
            {
                ++j;
                continue;
            }
            std::size_t end = matchTensorSpec(s, j, tensor);
            if (end == std::string_view::npos)
            {
                ++j;
                continue;
            }
            // What follows must end the tensor: end of line, ", " (next tensor), or the arrow.
            std::size_t next = std::string_view::npos;
            bool switchToOutputs = false;
            std::string_view rest = s.substr(end);
            if (allSpace(rest))
            {
                next = s.size();
            }
            else if (std::size_t arrow = arrowAt(s, end); arrow != 0 && list == &layer.inputs)
            {
                next = end + arrow;
                switchToOutputs = true;
            }
            else if (rest.starts_with(", "))
            {
                next = end + 2;
            }
            if (next == std::string_view::npos)
            {
                ++j;
                continue;
            }
            std::size_t nameEnd = parenForm && j > p ? j - 1 : j;
            tensor.name = std::string(trim(s.substr(p, nameEnd - p)));
            list->push_back(std::move(tensor));
            if (switchToOutputs)
            {
                list = &layer.outputs;
                sawArrow = true;
            }
            p = next;
            found = true;
            break;
        }
        if (!found)
        {
            why = "cannot split the tensor list near \"" + std::string(s.substr(p, 60)) + "\"";
            return false;
        }
    }
    if (!sawArrow)
    {
        why = "no \" -> \" between the input and output tensors";
        return false;
    }
    return true;
}

bool isKeyStart(std::string_view s, std::size_t k)
{
    if (k >= s.size() || !(s[k] >= 'A' && s[k] <= 'Z'))
    {
        return false;
    }
    std::size_t i = k;
    while (i < s.size() && (isIdentChar(s[i]) || s[i] == '/'))
    {
        ++i;
    }
    return i < s.size() && s[i] == ':' && (i + 1 == s.size() || s[i + 1] == ' ');
}

//! End of a bracketed value starting at p ('[' or '{'), honoring nesting and double quotes; npos if unbalanced.
std::size_t matchBracket(std::string_view s, std::size_t p)
{
    int depth = 0;
    bool inQuote = false;
    for (std::size_t i = p; i < s.size(); ++i)
    {
        char c = s[i];
        if (inQuote)
        {
            if (c == '\\')
            {
                ++i;
            }
            else if (c == '"')
            {
                inQuote = false;
            }
            continue;
        }
        if (c == '"')
        {
            inQuote = true;
        }
        else if (c == '[' || c == '{')
        {
            ++depth;
        }
        else if (c == ']' || c == '}')
        {
            if (--depth == 0)
            {
                return i + 1;
            }
        }
    }
    return std::string_view::npos;
}

//! End of a plain value starting at p: the next ", Key: " or, inside an object, the closing " }".
std::size_t plainValueEnd(std::string_view s, std::size_t p, bool inObject)
{
    for (std::size_t i = p; i < s.size(); ++i)
    {
        if (s[i] == ',' && i + 1 < s.size() && s[i + 1] == ' ' && isKeyStart(s, i + 2))
        {
            return i;
        }
        if (inObject && s[i] == '}')
        {
            return i;
        }
    }
    return s.size();
}

struct KeyValue
{
    std::string_view key;
    std::string_view value;
};

//! Reads "Key: value" pairs separated by ", " from s starting at p; stops at the end or (inObject) at '}'.
//! Returns the position where it stopped, or npos on a malformed pair.
std::size_t readPairs(std::string_view s, std::size_t p, bool inObject, std::vector<KeyValue>& pairs)
{
    while (p < s.size())
    {
        while (p < s.size() && s[p] == ' ')
        {
            ++p;
        }
        if (p >= s.size() || (inObject && s[p] == '}'))
        {
            return p;
        }
        std::size_t colon = s.find(": ", p);
        std::size_t keyEnd = colon;
        if (colon == std::string_view::npos)
        {
            // A key with an empty value at the very end ("Metadata:").
            std::string_view tail = trim(s.substr(p));
            if (!tail.empty() && tail.back() == ':')
            {
                pairs.push_back({tail.substr(0, tail.size() - 1), {}});
                return s.size();
            }
            return std::string_view::npos;
        }
        std::string_view key = s.substr(p, keyEnd - p);
        for (char c : key)
        {
            if (!(isIdentChar(c) || c == '/'))
            {
                return std::string_view::npos;
            }
        }
        std::size_t v = colon + 2;
        std::size_t end = 0;
        if (key == "Metadata" && !inObject)
        {
            end = s.size();
        }
        else if (key != "Name" && v < s.size() && (s[v] == '[' || s[v] == '{'))
        {
            end = matchBracket(s, v);
            if (end == std::string_view::npos)
            {
                return std::string_view::npos;
            }
        }
        else
        {
            end = plainValueEnd(s, v, inObject);
        }
        pairs.push_back({key, trim(s.substr(v, end - v))});
        p = end;
        if (p < s.size() && s[p] == ',')
        {
            ++p;
        }
    }
    return p;
}

bool parseTensorList(std::string_view s, std::vector<EngineTensor>& tensors, std::string& why)
{
    // s is "[ { ... }, { ... }]" or "[]".
    std::size_t p = 1;
    while (p < s.size())
    {
        while (p < s.size() && (s[p] == ' ' || s[p] == ','))
        {
            ++p;
        }
        if (p >= s.size() || s[p] == ']')
        {
            return true;
        }
        if (s[p] != '{')
        {
            why = "expected '{' in a tensor list";
            return false;
        }
        std::vector<KeyValue> pairs;
        std::size_t end = readPairs(s, p + 1, true, pairs);
        if (end == std::string_view::npos || end >= s.size() || s[end] != '}')
        {
            why = "malformed tensor object";
            return false;
        }
        EngineTensor tensor;
        for (const KeyValue& kv : pairs)
        {
            if (kv.key == "Name")
            {
                tensor.name = std::string(kv.value);
            }
            else if (kv.key == "Location")
            {
                tensor.location = std::string(kv.value);
            }
            else if (kv.key == "Dimensions")
            {
                std::string_view dims = kv.value;
                if (dims.size() >= 2 && dims.front() == '[' && dims.back() == ']')
                {
                    dims = dims.substr(1, dims.size() - 2);
                }
                if (!parseDimensions(dims, tensor.dimensions, tensor.vectorWidth))
                {
                    tensor.dimensions.clear();
                }
            }
            else if (kv.key == "Format/Datatype")
            {
                tensor.format = std::string(kv.value);
                tensor.precision = precisionFromFormat(kv.value);
            }
            else if (kv.key == "Datatype")
            {
                // TensorRT 11: the precision alone; "Format" is the layout (FORMATS-trt11.md T1, T5).
                tensor.precision = precisionFromFormat(kv.value);
                if (tensor.format.empty())
                {
                    tensor.format = std::string(kv.value);
                }
            }
            else if (kv.key == "Format")
            {
                tensor.format = std::string(kv.value); // never read for the precision: it names none (T5)
            }
        }
        tensors.push_back(std::move(tensor));
        p = end + 1;
    }
    why = "unterminated tensor list";
    return false;
}

std::optional<Precision> weightsType(std::string_view object)
{
    std::size_t k = object.find("\"Type\"");
    if (k == std::string_view::npos)
    {
        return std::nullopt;
    }
    std::size_t q1 = object.find('"', object.find(':', k));
    if (q1 == std::string_view::npos)
    {
        return std::nullopt;
    }
    std::size_t q2 = object.find('"', q1 + 1);
    if (q2 == std::string_view::npos)
    {
        return std::nullopt;
    }
    return precisionFromFormat(object.substr(q1 + 1, q2 - q1 - 1));
}

} // namespace

bool parseDimensions(std::string_view text, std::vector<std::int64_t>& dims, int& vectorWidth)
{
    dims.clear();
    vectorWidth = 0;
    text = trim(text);
    if (text.empty())
    {
        return true;
    }
    while (true)
    {
        std::size_t comma = text.find(',');
        std::string_view item = trim(text.substr(0, comma));
        std::size_t colon = item.find(':');
        std::int64_t value = 0;
        if (!parseInt64(item.substr(0, colon), value))
        {
            return false;
        }
        if (colon != std::string_view::npos)
        {
            std::int64_t width = 0;
            if (!parseInt64(item.substr(colon + 1), width) || width <= 0 || width > 1024)
            {
                return false;
            }
            vectorWidth = static_cast<int>(width);
        }
        dims.push_back(value);
        if (comma == std::string_view::npos)
        {
            return true;
        }
        text.remove_prefix(comma + 1);
    }
}

bool parseLogLayerLine(std::string_view text, EngineLayer& layer, std::string& why)
{
    text = trim(text);
    if (!text.starts_with("Layer("))
    {
        why = "not a Layer(...) line";
        return false;
    }
    std::size_t typeEnd = text.find("): ");
    if (typeEnd == std::string_view::npos)
    {
        why = "no \"): \" after the layer type";
        return false;
    }
    layer.type = std::string(text.substr(6, typeEnd - 6));
    std::string_view rest = text.substr(typeEnd + 3);
    std::size_t tacticPos = rest.find(", Tactic: ");
    if (tacticPos == std::string_view::npos)
    {
        why = "no \", Tactic: \" after the layer name";
        return false;
    }
    layer.setName(rest.substr(0, tacticPos));
    rest = rest.substr(tacticPos + 10);
    std::size_t comma = rest.find(',');
    if (comma == std::string_view::npos)
    {
        why = "no tensor list after the tactic";
        return false;
    }
    layer.tacticValue = std::string(trim(rest.substr(0, comma)));
    std::string_view tensors = rest.substr(comma + 1);
    // ", " precedes the tensors; an empty input list leaves ",  -> out".
    if (tensors.starts_with(' ') && !tensors.starts_with(" -> "))
    {
        tensors.remove_prefix(1);
    }
    return parseTensorSection(tensors, layer, why);
}

bool parseLayerInfoRecord(std::string_view text, EngineLayer& layer, std::string& why)
{
    text = trim(text);
    if (!text.starts_with("Name: "))
    {
        why = "not a Name: record";
        return false;
    }
    std::size_t typePos = text.find(", LayerType: ");
    if (typePos == std::string_view::npos)
    {
        why = "no \", LayerType: \" after the layer name";
        return false;
    }
    layer.setName(text.substr(6, typePos - 6));
    std::vector<KeyValue> pairs;
    std::size_t end = readPairs(text, typePos + 2, false, pairs);
    if (end == std::string_view::npos)
    {
        why = "malformed key/value list";
        return false;
    }
    for (const KeyValue& kv : pairs)
    {
        const std::string_view key = kv.key;
        if (key == "LayerType")
        {
            layer.type = std::string(kv.value);
        }
        else if (key == "Inputs" || key == "Outputs")
        {
            if (!kv.value.starts_with('['))
            {
                why = std::string(key) + " is not a list";
                return false;
            }
            if (!parseTensorList(kv.value, key == "Inputs" ? layer.inputs : layer.outputs, why))
            {
                return false;
            }
        }
        else if (key == "ParameterType")
        {
            layer.parameterType = std::string(kv.value);
        }
        else if (key == "Origin")
        {
            layer.origin = std::string(kv.value);
        }
        else if (key == "TacticName")
        {
            layer.tacticName = std::string(kv.value);
        }
        else if (key == "TacticValue")
        {
            layer.tacticValue = std::string(kv.value);
        }
        else if (key == "PluginType")
        {
            layer.pluginType = std::string(kv.value);
        }
        else if (key == "Activation" || key == "ConvActivation")
        {
            layer.activation = std::string(kv.value);
        }
        else if (key == "Metadata")
        {
            layer.hasMetadata = true;
            layer.metadata = std::string(kv.value);
        }
        else if (key == "Constants")
        {
            // TensorRT 11 Myelin layers' weights and scalars (FORMATS-trt11.md T2): not inputs; skipped.
        }
        else
        {
            if ((key == "Weights" || key == "ConvWeights") && !layer.weightsPrecision)
            {
                layer.weightsPrecision = weightsType(kv.value);
            }
            layer.otherFields.emplace_back(key, kv.value);
        }
    }
    if (layer.type.empty())
    {
        why = "empty LayerType";
        return false;
    }
    return true;
}

namespace
{
bool parseShape(std::string_view value, std::vector<std::int64_t>& shape)
{
    if (value.size() < 2 || value.front() != '[' || value.back() != ']')
    {
        return false;
    }
    int width = 0;
    return parseDimensions(value.substr(1, value.size() - 2), shape, width) && width == 0;
}

//! `[ { MinShape: [..], OptShape: [..], MaxShape: [..], Format: .. }, { Format: .. }]`, one object per profile.
bool parseProfileInfo(std::string_view s, IoTensor& tensor, std::string& why)
{
    std::size_t p = 1;
    while (p < s.size())
    {
        while (p < s.size() && (s[p] == ' ' || s[p] == ','))
        {
            ++p;
        }
        if (p >= s.size() || s[p] == ']')
        {
            return p < s.size();
        }
        std::vector<KeyValue> pairs;
        std::size_t end = s[p] == '{' ? readPairs(s, p + 1, true, pairs) : std::string_view::npos;
        if (end == std::string_view::npos || end >= s.size() || s[end] != '}')
        {
            why = "malformed ProfileInfo entry";
            return false;
        }
        IoTensor::ProfileShape shape;
        for (const KeyValue& kv : pairs)
        {
            std::vector<std::int64_t>* target = kv.key == "MinShape"   ? &shape.minShape
                                                : kv.key == "OptShape" ? &shape.optShape
                                                : kv.key == "MaxShape" ? &shape.maxShape
                                                                       : nullptr;
            if (target != nullptr && !parseShape(kv.value, *target))
            {
                why = std::string(kv.key) + " is not a list of integers";
                return false;
            }
            if (kv.key == "Format")
            {
                shape.format = std::string(kv.value);
            }
        }
        tensor.profiles.push_back(std::move(shape));
        p = end + 1;
    }
    why = "unterminated ProfileInfo list";
    return false;
}

bool applyIoPair(const KeyValue& kv, IoTensor& tensor, std::string& why)
{
    if (kv.key == "IOMode")
    {
        if (kv.value != "Input" && kv.value != "Output")
        {
            why = "IOMode \"" + std::string(kv.value.substr(0, 64)) + "\" is neither Input nor Output";
            return false;
        }
        tensor.input = kv.value == "Input";
    }
    else if (kv.key == "DataType")
    {
        tensor.dataType = std::string(kv.value);
        tensor.precision = precisionFromFormat(kv.value);
    }
    else if (kv.key == "Dimensions" && !parseShape(kv.value, tensor.dimensions))
    {
        why = "Dimensions is not a list of integers";
        return false;
    }
    else if (kv.key == "Location")
    {
        tensor.location = std::string(kv.value);
    }
    else if (kv.key == "ProfileInfo" && (!kv.value.starts_with('[') || !parseProfileInfo(kv.value, tensor, why)))
    {
        why = why.empty() ? "ProfileInfo is not a list" : why;
        return false;
    }
    return true;
}
} // namespace

bool parseIoTensorRecord(std::string_view text, IoTensor& tensor, std::string& why)
{
    text = trim(text);
    if (!text.starts_with("Name: "))
    {
        why = "not a \"Name: ..., IOMode: ...\" record";
        return false;
    }
    const std::size_t modeAt = text.find(", IOMode: ");
    if (modeAt == std::string_view::npos)
    {
        why = "no \", IOMode: \" after the tensor name";
        return false;
    }
    tensor.name = std::string(text.substr(6, modeAt - 6));
    std::vector<KeyValue> pairs;
    if (readPairs(text, modeAt + 2, false, pairs) == std::string_view::npos)
    {
        why = "malformed key/value list";
        return false;
    }
    bool moded = false;
    for (const KeyValue& kv : pairs)
    {
        moded = moded || kv.key == "IOMode";
        if (!applyIoPair(kv, tensor, why))
        {
            return false;
        }
    }
    if (tensor.dataType.empty())
    {
        why = "no DataType";
        return false;
    }
    return moded;
}

} // namespace qdq
