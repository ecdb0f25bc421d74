// Build-log reader: the ONNX parser's lines (network inputs, initializers, "Parsing node", a node's inputs and
// outputs lines, "Registering layer", network outputs).

#include "parsers/build_log_parser.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace qdq::buildlog
{

namespace
{

//! "(-1, 1, 28, 28)" or "()" into dims; false when the text is not a dims list.
bool parseDimsList(std::string_view text, std::vector<std::int64_t>& dims)
{
    dims.clear();
    if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    {
        return false;
    }
    text = text.substr(1, text.size() - 2);
    while (!text.empty())
    {
        while (!text.empty() && (text.front() == ' ' || text.front() == ','))
        {
            text.remove_prefix(1);
        }
        if (text.empty())
        {
            break;
        }
        std::size_t end = 0;
        while (end < text.size() && text[end] != ',')
        {
            ++end;
        }
        std::int64_t value = 0;
        if (!parseInt(trim(text.substr(0, end)), value))
        {
            return false;
        }
        dims.push_back(value);
        text.remove_prefix(end);
    }
    return true;
}

//! "[a -> (1, 2)[FLOAT]], [optional input, not set], [b -> ()[INT8]], " into tensors. False when the list is cut off
//! or unreadable (the entries read so far are kept).
bool parseTensorList(std::string_view text, std::vector<ParsedTensor>& tensors)
{
    static constexpr std::string_view kOptional = "[optional input, not set]";
    tensors.clear();
    while (true)
    {
        text = trim(text);
        if (text.empty())
        {
            return true;
        }
        if (text.front() != '[')
        {
            return false;
        }
        if (text.starts_with(kOptional))
        {
            tensors.emplace_back();
            text.remove_prefix(kOptional.size());
        }
        else
        {
            const std::size_t arrow = text.find(" -> (");
            if (arrow == std::string_view::npos)
            {
                return false;
            }
            ParsedTensor tensor;
            tensor.name = std::string(text.substr(1, arrow - 1));
            text.remove_prefix(arrow + 4);
            const std::size_t dimsEnd = text.find(')');
            if (dimsEnd == std::string_view::npos)
            {
                tensors.push_back(std::move(tensor));
                return false;
            }
            tensor.dimsKnown = parseDimsList(text.substr(0, dimsEnd + 1), tensor.dims);
            text.remove_prefix(dimsEnd + 1);
            const std::size_t close = text.find("]]");
            if (text.empty() || text.front() != '[' || close == std::string_view::npos)
            {
                tensors.push_back(std::move(tensor));
                return false;
            }
            tensor.type = std::string(text.substr(1, close - 1));
            text.remove_prefix(close + 2);
            tensors.push_back(std::move(tensor));
        }
        text = trim(text);
        if (!text.empty() && text.front() == ',')
        {
            text.remove_prefix(1);
        }
    }
}

} // namespace

void BuildLogParser::parserLineWarning(std::uint64_t lineNo, std::string message)
{
    if (++mParserLineWarnings <= kMaxBadLineWarnings)
    {
        warn(lineNo, std::move(message));
    }
}

bool BuildLogParser::handleNodeTensors(std::string_view m, std::uint64_t lineNo)
{
    const std::size_t looked = std::min(mOpenNodes.size(), kOpenNodesLooked);
    for (std::size_t k = 0; k < looked; ++k)
    {
        const std::size_t slot = mOpenNodes.size() - 1 - k;
        ParsedOnnxNode& node = mLog.parsedNodes[mOpenNodes[slot]];
        const std::string& name = node.onnxNode;
        if (m.size() <= name.size() + node.opType.size() + 4 || (!name.empty() && m[0] != name[0]) ||
            !m.starts_with(name))
        {
            continue;
        }
        std::string_view rest = m.substr(name.size());
        if (!startsWith(rest, " [") || !rest.substr(2).starts_with(node.opType))
        {
            continue;
        }
        rest.remove_prefix(2 + node.opType.size());
        const bool inputs = startsWith(rest, "] inputs:");
        if (!inputs && !startsWith(rest, "] outputs:"))
        {
            continue;
        }
        rest.remove_prefix(inputs ? 9 : 10);
        std::vector<ParsedTensor>& tensors = inputs ? node.inputs : node.outputs;
        if (!parseTensorList(rest, tensors))
        {
            parserLineWarning(lineNo, std::string(inputs ? "inputs" : "outputs") + " line of ONNX node '" +
                                          printable(name, 256) + "' is cut off or unreadable");
        }
        (inputs ? node.inputsLine : node.outputsLine) = lineNo;
        if (!inputs)
        {
            // Nodes opened after this one (inside an If branch) whose outputs never came are closed with it.
            mOpenNodes.resize(slot);
        }
        return true;
    }
    return false;
}

void BuildLogParser::readParsingNode(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = trim(m.substr(14));
    ParsedOnnxNode node;
    std::size_t open = rest.rfind(" [");
    if (open != std::string_view::npos && rest.back() == ']')
    {
        node.onnxNode = std::string(rest.substr(0, open));
        node.opType = std::string(rest.substr(open + 2, rest.size() - open - 3));
    }
    else
    {
        node.onnxNode = std::string(rest);
    }
    node.line = lineNo;
    mLog.parsedNodes.push_back(std::move(node));
    if (mOpenNodes.size() >= kMaxOpenNodes)
    {
        mOpenNodes.erase(mOpenNodes.begin(), mOpenNodes.begin() + kMaxOpenNodes / 2);
    }
    mOpenNodes.push_back(mLog.parsedNodes.size() - 1);
}

void BuildLogParser::readRegisteringLayer(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = trim(m.substr(19));
    RegisteredLayer layer;
    std::size_t f = rest.find(" for ONNX node: ");
    if (f != std::string_view::npos)
    {
        layer.trtLayer = std::string(rest.substr(0, f));
        layer.onnxNode = std::string(rest.substr(f + 16));
    }
    else
    {
        std::size_t r = rest.rfind(" required by ");
        layer.trtLayer = std::string(rest.substr(0, r));
    }
    layer.line = lineNo;
    mLog.registeredLayers.push_back(std::move(layer));
}

//! "Marking X as output: Y"; false when the line is another "Marking ..." line.
bool BuildLogParser::readMarkingOutput(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = trim(m.substr(8));
    std::size_t as = rest.rfind(" as output: ");
    if (as == std::string_view::npos)
    {
        return false;
    }
    mLog.networkOutputs.push_back({std::string(rest.substr(0, as)), std::string(trim(rest.substr(as + 12))), lineNo});
    mOpenNodes.clear();
    return true;
}

//! "Adding network input: x with dtype: float32, dimensions: (-1, 1, 28, 28)"
void BuildLogParser::readNetworkInput(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = trim(m.substr(22));
    ParsedNetworkInput input;
    input.line = lineNo;
    std::size_t with = rest.rfind(" with dtype: ");
    input.name = std::string(rest.substr(0, with));
    if (with != std::string_view::npos)
    {
        std::string_view typeAndDims = rest.substr(with + 13);
        std::size_t comma = typeAndDims.find(", dimensions: ");
        input.dtype = std::string(trim(typeAndDims.substr(0, comma)));
        if (comma != std::string_view::npos)
        {
            input.dimsKnown = parseDimsList(trim(typeAndDims.substr(comma + 14)), input.dims);
        }
    }
    mLog.networkInputs.push_back(std::move(input));
    mOpenNodes.clear();
}

} // namespace qdq::buildlog
