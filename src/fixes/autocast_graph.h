// Internal to autocast (src/fixes/autocast*.cpp): the element conversions FP32 -> FP16/BF16 and the graph as autocast
// sees it (element types, readers, what subgraphs read).
#pragma once

#include "qdq/autocast.h"
#include "qdq/name_index.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qdq::autocast_detail
{

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kFloat16 = onnx::TensorProto::FLOAT16;
constexpr int kBfloat16 = onnx::TensorProto::BFLOAT16;
//! FP16's largest finite value and smallest normal value (IEEE 754 binary16).
constexpr double kFp16Max = 65504.0;
constexpr double kFp16MinNormal = 6.103515625e-05;
//! FP16's smallest subnormal, 2^-24: a non-zero value below half of it becomes 0.
constexpr double kFp16MinSubnormal = 5.9604644775390625e-08;
//! Q/DQ take FLOAT16 and BFLOAT16 scales from opset 19 (onnx.ai/onnx/operators/onnx__QuantizeLinear.html,
//! onnx__DequantizeLinear.html; Model-Optimizer PR #809 "Opset 19 is the first to support fp16 scales in Q/DQ nodes").
constexpr std::int64_t kFirstOpsetWithLowScales = 19;
//! Model-Optimizer's AutoCast uses opset 22 for BF16 (PR #809): most ONNX ops list bfloat16 from their version 22.
constexpr std::int64_t kFirstOpsetWithBf16Ops = 22;

std::uint32_t floatBits(float value);

//! IEEE binary16 of value, rounded to nearest even; beyond the range: infinity; NaN stays NaN.
std::uint16_t toHalf(float value);

//! bfloat16 of value (the upper half of its bits), rounded to nearest even; NaN stays NaN.
std::uint16_t toBfloat16(float value);

//! The float values of a FLOAT tensor held in the model (raw_data or float_data). Raw data of fewer than 4 bytes holds
//! no value (and no copy is made from it).
std::vector<float> floatValues(const onnx::TensorProto& tensor);

//! The number of elements the tensor's dims hold, or nullopt for a negative dim or an overflow.
std::optional<std::uint64_t> elementCount(const onnx::TensorProto& tensor);

//! Why a FLOAT tensor's values are not the ones its dims ask for (raw data of another size, a float_data of another
//! count); empty when they are. A conversion of such a tensor would write fewer values than the tensor has.
std::string floatValuesMismatch(const onnx::TensorProto& tensor);

bool isExternal(const onnx::TensorProto& tensor);

//! Rewrites a FLOAT tensor as lowType (raw little-endian data). Returns its bytes before and after.
std::pair<std::uint64_t, std::uint64_t> convertTensor(onnx::TensorProto& tensor, int lowType);

bool isStandardDomain(const std::string& domain);

const onnx::AttributeProto* findAttribute(const onnx::NodeProto& node, const std::string& name);

std::int64_t intAttribute(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback);

//! The element type a node gives its outputs, from its inputs' types (ONNX operator type constraints); 0 unknown.
template <typename TensorType>
int outputType(const onnx::NodeProto& node, std::size_t output, const TensorType& tensorType)
{
    const auto typeOf = [&](int input) -> int
    {
        if (input >= node.input_size() || node.input(input).empty())
        {
            return 0;
        }
        return tensorType(node.input(input));
    };
    const std::string& op = node.op_type();
    if (!isStandardDomain(node.domain()))
    {
        return 0;
    }
    if (op == "Constant")
    {
        if (const auto* value = findAttribute(node, "value"))
        {
            return value->t().data_type();
        }
        return findAttribute(node, "value_float") || findAttribute(node, "value_floats") ? kFloat : 0;
    }
    if (op == "Cast")
    {
        return static_cast<int>(intAttribute(node, "to", 0));
    }
    if (op == "CastLike")
    {
        return typeOf(1);
    }
    if (op == "DequantizeLinear")
    {
        return typeOf(1) != 0 ? typeOf(1) : kFloat;
    }
    if (op == "QuantizeLinear" || op == "DynamicQuantizeLinear")
    {
        if (op == "DynamicQuantizeLinear")
        {
            return output == 1 ? kFloat : onnx::TensorProto::UINT8;
        }
        const std::int64_t dtype = intAttribute(node, "output_dtype", 0);
        return dtype != 0 ? static_cast<int>(dtype) : (typeOf(2) != 0 ? typeOf(2) : onnx::TensorProto::UINT8);
    }
    static const std::set<std::string> int64Outputs = {"Shape",  "Size",   "NonZero",
                                                       "ArgMax", "ArgMin", "NonMaxSuppression"};
    if (int64Outputs.count(op) != 0)
    {
        return onnx::TensorProto::INT64;
    }
    static const std::set<std::string> boolOutputs = {
        "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "IsNaN", "IsInf"};
    if (boolOutputs.count(op) != 0)
    {
        return onnx::TensorProto::BOOL;
    }
    if (op == "ConstantOfShape")
    {
        const auto* value = findAttribute(node, "value");
        return value != nullptr ? value->t().data_type() : kFloat;
    }
    if (op == "RandomNormal" || op == "RandomUniform" || op == "EyeLike" || op == "RandomNormalLike" ||
        op == "RandomUniformLike" || op == "Multinomial" || op == "Bernoulli")
    {
        const std::int64_t dtype = intAttribute(node, "dtype", 0);
        return dtype != 0 ? static_cast<int>(dtype) : (op.find("Like") != std::string::npos ? typeOf(0) : kFloat);
    }
    if ((op == "TopK" || op == "MaxPool" || op == "Unique") && output > 0)
    {
        return onnx::TensorProto::INT64;
    }
    if (op == "Where")
    {
        return typeOf(1);
    }
    if (op == "OneHot")
    {
        return typeOf(2);
    }
    return typeOf(0);
}

struct Slot
{
    std::size_t node = 0;
    int input = 0;
};

//! Element types, producers, readers and constants of the main graph, by tensor id: one hash lookup per name (on the
//! 500,000-node bench model, separate maps per fact made autocast's analysis cost more than fix's own diagnosis).
struct GraphFacts
{
    static constexpr std::uint32_t kNone = 0xFFFFFFFFu;
    //! Name -> id, over names. An open-addressing index of ids instead of a std::unordered_map of strings: the map's
    //! look-ups were about 0.3 s of the 500,000-node bench model's analysis (qdq/name_index.h says why).
    NameIndex ids;
    std::vector<std::string> names; //!< id -> name (copies: the rewriter renames the model's inputs)
    std::vector<int> types;
    std::vector<std::uint32_t> producers; //!< id -> node index, kNone
    //! id -> the (node, input) slots reading it: readers(id). One array for all tensors, filled once the nodes are
    //! read (a vector per tensor was a million small blocks to allocate and free).
    std::vector<std::uint32_t> readerStart;
    std::vector<Slot> readerSlots;
    std::vector<onnx::TensorProto*> initializers; //!< id -> initializer, nullptr
    std::vector<std::uint8_t> flags;              //!< kGraphInput (not an initializer), kGraphOutput
    static constexpr std::uint8_t kGraphInput = 1;
    static constexpr std::uint8_t kGraphOutput = 2;
    //! Read by a subgraph (an If, Loop or Scan body names it from the outer scope): it keeps its type, since autocast
    //! does not convert subgraphs and the body's types were inferred from it.
    static constexpr std::uint8_t kSubgraphRead = 4;
    //! Each node's input and output tensor ids (kNone for an omitted input), node by node: the analysis' hot loops
    //! walk these instead of hashing names.
    std::vector<std::uint32_t> inputStart;
    std::vector<std::uint32_t> inputIds;
    std::vector<std::uint32_t> outputStart;
    std::vector<std::uint32_t> outputIds;

    std::span<const std::uint32_t> inputsOf(std::size_t node) const
    {
        return {inputIds.data() + inputStart[node], inputStart[node + 1] - inputStart[node]};
    }
    std::span<const std::uint32_t> outputsOf(std::size_t node) const
    {
        return {outputIds.data() + outputStart[node], outputStart[node + 1] - outputStart[node]};
    }
    bool isFloatId(std::uint32_t id) const { return id != kNone && types[id] == kFloat; }

    std::uint32_t id(const std::string& tensor) const
    {
        return ids.find(tensor, [this](std::uint32_t known) -> const std::string& { return names[known]; });
    }
    std::uint32_t intern(const std::string& tensor)
    {
        const auto nameOf = [this](std::uint32_t known) -> const std::string& { return names[known]; };
        const std::uint32_t hash = NameIndex::hashOf(tensor);
        if (const std::uint32_t found = ids.findHashed(tensor, hash, nameOf); found != kNone)
        {
            return found;
        }
        const auto added = static_cast<std::uint32_t>(names.size());
        names.push_back(tensor);
        types.push_back(0);
        producers.push_back(kNone);
        initializers.push_back(nullptr);
        flags.push_back(0);
        ids.insertHashed(tensor, hash, added, nameOf);
        return added;
    }
    std::span<const Slot> readers(std::uint32_t id) const
    {
        if (id == kNone || std::size_t(id) + 1 >= readerStart.size())
        {
            return {};
        }
        return {readerSlots.data() + readerStart[id], readerStart[id + 1] - readerStart[id]};
    }
    int type(const std::string& tensor) const
    {
        const std::uint32_t found = id(tensor);
        return found == kNone ? 0 : types[found];
    }
    bool isFloat(const std::string& tensor) const { return !tensor.empty() && type(tensor) == kFloat; }
    std::optional<std::size_t> producerOf(const std::string& tensor) const
    {
        const std::uint32_t found = id(tensor);
        return found == kNone || producers[found] == kNone ? std::nullopt
                                                           : std::optional<std::size_t>(producers[found]);
    }
    std::span<const Slot> readersOf(const std::string& tensor) const { return readers(id(tensor)); }
    onnx::TensorProto* initializerOf(const std::string& tensor) const
    {
        const std::uint32_t found = id(tensor);
        return found == kNone ? nullptr : initializers[found];
    }
    bool isGraphInput(const std::string& tensor) const
    {
        const std::uint32_t found = id(tensor);
        return found != kNone && (flags[found] & kGraphInput) != 0;
    }
    bool isGraphOutput(const std::string& tensor) const
    {
        const std::uint32_t found = id(tensor);
        return found != kNone && (flags[found] & kGraphOutput) != 0;
    }
};

//! Fills readerStart and readerSlots from the nodes' input ids: each tensor's readers in node order.
void indexReaders(GraphFacts& facts);

//! The names a subgraph (and the subgraphs in it) reads but does not define: tensors of an outer scope.
void collectOuterReads(const onnx::GraphProto& subgraph, std::set<std::string>& defined, std::set<std::string>& read);

//! Flags the main graph's tensors that a subgraph of one of its nodes reads (GraphFacts::kSubgraphRead).
void markSubgraphReads(const onnx::GraphProto& graph, GraphFacts& facts);

GraphFacts gatherFacts(onnx::GraphProto& graph);

std::int64_t defaultOpset(const onnx::ModelProto& model);

} // namespace qdq::autocast_detail
