// The element conversions and the graph facts of autocast (src/fixes/autocast_graph.h).
#include "src/fixes/autocast_graph.h"

#include "qdq/diagnostics.h"
#include "qdq/name_index.h"

#include "parsers/external_data_ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

namespace qdq::autocast_detail
{

std::uint32_t floatBits(float value)
{
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

//! IEEE binary16 of value, rounded to nearest even; beyond the range: infinity; NaN stays NaN.
std::uint16_t toHalf(float value)
{
    const std::uint32_t bits = floatBits(value);
    const std::uint32_t sign = (bits >> 16) & 0x8000u;
    const std::uint32_t exponent = (bits >> 23) & 0xFFu;
    std::uint32_t mantissa = bits & 0x7FFFFFu;
    if (exponent == 0xFF)
    {
        return static_cast<std::uint16_t>(sign | 0x7C00u | (mantissa != 0 ? 0x200u : 0u));
    }
    const int halfExponent = static_cast<int>(exponent) - 127 + 15;
    if (halfExponent >= 31)
    {
        return static_cast<std::uint16_t>(sign | 0x7C00u);
    }
    if (halfExponent <= 0)
    {
        if (halfExponent < -10)
        {
            return static_cast<std::uint16_t>(sign);
        }
        mantissa |= 0x800000u;
        const int shift = 14 - halfExponent;
        std::uint32_t half = mantissa >> shift;
        const std::uint32_t rest = mantissa & ((1u << shift) - 1);
        const std::uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1u) != 0))
        {
            ++half;
        }
        return static_cast<std::uint16_t>(sign | half);
    }
    std::uint32_t half = (static_cast<std::uint32_t>(halfExponent) << 10) | (mantissa >> 13);
    const std::uint32_t rest = mantissa & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0))
    {
        ++half; // may carry into the exponent, up to infinity: the rounding IEEE asks for
    }
    return static_cast<std::uint16_t>(sign | half);
}

//! bfloat16 of value (the upper half of its bits), rounded to nearest even; NaN stays NaN.
std::uint16_t toBfloat16(float value)
{
    const std::uint32_t bits = floatBits(value);
    if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x7FFFFFu) != 0)
    {
        return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
    }
    const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

//! The float values of a FLOAT tensor held in the model (raw_data or float_data). Raw data of fewer than 4 bytes holds
//! no value (and no copy is made from it).
std::vector<float> floatValues(const onnx::TensorProto& tensor)
{
    std::vector<float> values;
    if (tensor.has_raw_data())
    {
        values.resize(tensor.raw_data().size() / sizeof(float));
        if (!values.empty())
        {
            std::memcpy(values.data(), tensor.raw_data().data(), values.size() * sizeof(float));
        }
    }
    else
    {
        values.assign(tensor.float_data().begin(), tensor.float_data().end());
    }
    return values;
}

//! The number of elements the tensor's dims hold, or nullopt for a negative dim or an overflow.
std::optional<std::uint64_t> elementCount(const onnx::TensorProto& tensor)
{
    std::uint64_t count = 1;
    for (const auto dim : tensor.dims())
    {
        if (dim < 0 || (dim > 0 && count > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(dim)))
        {
            return std::nullopt;
        }
        count *= static_cast<std::uint64_t>(dim);
    }
    return count;
}

//! Why a FLOAT tensor's values are not the ones its dims ask for (raw data of another size, a float_data of another
//! count); empty when they are. A conversion of such a tensor would write fewer values than the tensor has.
std::string floatValuesMismatch(const onnx::TensorProto& tensor)
{
    const auto count = elementCount(tensor);
    if (!count)
    {
        return "has a negative or overflowing dim";
    }
    if (tensor.has_raw_data())
    {
        return tensor.raw_data().size() == *count * sizeof(float)
                   ? std::string()
                   : "holds " + std::to_string(tensor.raw_data().size()) + " bytes of raw data, not the " +
                         std::to_string(*count * sizeof(float)) + " its dims hold";
    }
    return static_cast<std::uint64_t>(tensor.float_data_size()) == *count
               ? std::string()
               : "holds " + std::to_string(tensor.float_data_size()) + " float values, not the " +
                     std::to_string(*count) + " its dims hold";
}

bool isExternal(const onnx::TensorProto& tensor)
{
    return tensor.data_location() == onnx::TensorProto::EXTERNAL || tensor.external_data_size() > 0;
}

//! Rewrites a FLOAT tensor as lowType (raw little-endian data). Returns its bytes before and after.
std::pair<std::uint64_t, std::uint64_t> convertTensor(onnx::TensorProto& tensor, int lowType)
{
    const std::vector<float> values = floatValues(tensor);
    std::string raw(values.size() * 2, '\0');
    for (std::size_t i = 0; i < values.size(); ++i)
    {
        const std::uint16_t element = lowType == kFloat16 ? toHalf(values[i]) : toBfloat16(values[i]);
        raw[2 * i] = static_cast<char>(element & 0xFF);
        raw[2 * i + 1] = static_cast<char>(element >> 8);
    }
    tensor.clear_float_data();
    tensor.set_raw_data(std::move(raw));
    tensor.set_data_type(lowType);
    return {values.size() * 4, values.size() * 2};
}

// ----- the graph as autocast sees it -------------------------------------------------------------------------------

bool isStandardDomain(const std::string& domain)
{
    return domain.empty() || domain == "ai.onnx";
}

const onnx::AttributeProto* findAttribute(const onnx::NodeProto& node, const std::string& name)
{
    for (const auto& attribute : node.attribute())
    {
        if (attribute.name() == name)
        {
            return &attribute;
        }
    }
    return nullptr;
}

std::int64_t intAttribute(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback)
{
    const onnx::AttributeProto* attribute = findAttribute(node, name);
    return attribute != nullptr ? attribute->i() : fallback;
}

//! Fills readerStart and readerSlots from the nodes' input ids: each tensor's readers in node order.
void indexReaders(GraphFacts& facts)
{
    const std::size_t tensorCount = facts.names.size();
    facts.readerStart.assign(tensorCount + 1, 0);
    for (const std::uint32_t id : facts.inputIds)
    {
        if (id != GraphFacts::kNone)
        {
            ++facts.readerStart[id + 1];
        }
    }
    for (std::size_t id = 0; id < tensorCount; ++id)
    {
        facts.readerStart[id + 1] += facts.readerStart[id];
    }
    facts.readerSlots.resize(facts.readerStart[tensorCount]);
    std::vector<std::uint32_t> next(facts.readerStart.begin(), facts.readerStart.end() - 1);
    const std::size_t nodeCount = facts.inputStart.size() - 1;
    for (std::size_t node = 0; node < nodeCount; ++node)
    {
        const auto inputs = facts.inputsOf(node);
        for (std::size_t k = 0; k < inputs.size(); ++k)
        {
            if (inputs[k] != GraphFacts::kNone)
            {
                facts.readerSlots[next[inputs[k]]++] = {node, static_cast<int>(k)};
            }
        }
    }
}

//! The names a subgraph (and the subgraphs in it) reads but does not define: tensors of an outer scope.
void collectOuterReads(const onnx::GraphProto& subgraph, std::set<std::string>& defined, std::set<std::string>& read)
{
    for (const auto& input : subgraph.input())
    {
        defined.insert(input.name());
    }
    for (const auto& initializer : subgraph.initializer())
    {
        defined.insert(initializer.name());
    }
    for (const auto& node : subgraph.node())
    {
        for (const auto& input : node.input())
        {
            read.insert(input);
        }
        for (const auto& attribute : node.attribute())
        {
            if (attribute.has_g())
            {
                collectOuterReads(attribute.g(), defined, read);
            }
            for (const auto& nested : attribute.graphs())
            {
                collectOuterReads(nested, defined, read);
            }
        }
        for (const auto& output : node.output())
        {
            defined.insert(output);
        }
    }
}

//! Flags the main graph's tensors that a subgraph of one of its nodes reads (GraphFacts::kSubgraphRead).
void markSubgraphReads(const onnx::GraphProto& graph, GraphFacts& facts)
{
    for (const auto& node : graph.node())
    {
        for (const auto& attribute : node.attribute())
        {
            std::set<std::string> defined;
            std::set<std::string> read;
            if (attribute.has_g())
            {
                collectOuterReads(attribute.g(), defined, read);
            }
            for (const auto& nested : attribute.graphs())
            {
                collectOuterReads(nested, defined, read);
            }
            for (const std::string& name : read)
            {
                const std::uint32_t id = name.empty() || defined.count(name) != 0 ? GraphFacts::kNone : facts.id(name);
                if (id != GraphFacts::kNone)
                {
                    facts.flags[id] |= GraphFacts::kSubgraphRead;
                }
            }
        }
    }
}

GraphFacts gatherFacts(onnx::GraphProto& graph)
{
    GraphFacts facts;
    const std::size_t expected = static_cast<std::size_t>(graph.initializer_size() + 2 * graph.node_size() + 16);
    facts.ids.reserve(expected);
    facts.names.reserve(expected);
    for (auto& initializer : *graph.mutable_initializer())
    {
        const std::uint32_t id = facts.intern(initializer.name());
        facts.types[id] = initializer.data_type();
        facts.initializers[id] = &initializer;
    }
    // An initializer that is also declared as a graph input (IR < 4 exports) is a constant here: TensorRT's parser
    // takes such inputs as weights.
    for (const auto& input : graph.input())
    {
        const std::uint32_t id = facts.intern(input.name());
        if (facts.initializers[id] == nullptr)
        {
            facts.flags[id] |= GraphFacts::kGraphInput;
            facts.types[id] = input.type().tensor_type().elem_type();
        }
    }
    // Declared types (value_info, outputs) win over inference: they are what the exporter wrote.
    std::unordered_map<std::string, int> declared;
    for (const auto& info : graph.value_info())
    {
        declared[info.name()] = info.type().tensor_type().elem_type();
    }
    for (const auto& output : graph.output())
    {
        facts.flags[facts.intern(output.name())] |= GraphFacts::kGraphOutput;
        declared[output.name()] = output.type().tensor_type().elem_type();
    }
    const auto tensorType = [&facts](const std::string& tensor) { return facts.type(tensor); };
    facts.inputStart.reserve(static_cast<std::size_t>(graph.node_size()) + 1);
    facts.outputStart.reserve(static_cast<std::size_t>(graph.node_size()) + 1);
    for (int i = 0; i < graph.node_size(); ++i)
    {
        const onnx::NodeProto& node = graph.node(i);
        facts.inputStart.push_back(static_cast<std::uint32_t>(facts.inputIds.size()));
        facts.outputStart.push_back(static_cast<std::uint32_t>(facts.outputIds.size()));
        for (int k = 0; k < node.input_size(); ++k)
        {
            if (node.input(k).empty())
            {
                facts.inputIds.push_back(GraphFacts::kNone);
                continue;
            }
            facts.inputIds.push_back(facts.intern(node.input(k)));
        }
        for (int k = 0; k < node.output_size(); ++k)
        {
            const std::string& name = node.output(k);
            if (name.empty())
            {
                continue;
            }
            const std::uint32_t id = facts.intern(name);
            facts.outputIds.push_back(id);
            if (facts.producers[id] == GraphFacts::kNone)
            {
                facts.producers[id] = static_cast<std::uint32_t>(i);
            }
            const auto found = declared.empty() ? declared.end() : declared.find(name);
            const int inferred = outputType(node, static_cast<std::size_t>(k), tensorType);
            facts.types[id] = found != declared.end() && found->second != 0 ? found->second : inferred;
        }
    }
    facts.inputStart.push_back(static_cast<std::uint32_t>(facts.inputIds.size()));
    facts.outputStart.push_back(static_cast<std::uint32_t>(facts.outputIds.size()));
    indexReaders(facts);
    markSubgraphReads(graph, facts);
    return facts;
}

std::int64_t defaultOpset(const onnx::ModelProto& model)
{
    for (const auto& opset : model.opset_import())
    {
        if (isStandardDomain(opset.domain()))
        {
            return opset.version();
        }
    }
    return 0;
}

} // namespace qdq::autocast_detail
