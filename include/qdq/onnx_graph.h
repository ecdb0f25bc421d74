// The user's ONNX model as a read-only graph: nodes, tensors, producers/consumers, initializers and the Q/DQ
// parameters TensorRT cares about. Large weights are never loaded unless asked.
#pragma once

#include "qdq/diagnostics.h"
#include "qdq/name_index.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace qdq
{

//! ONNX TensorProto.DataType values used here.
enum class OnnxDataType : int
{
    kUndefined = 0,
    kFloat = 1,
    kUint8 = 2,
    kInt8 = 3,
    kUint16 = 4,
    kInt16 = 5,
    kInt32 = 6,
    kInt64 = 7,
    kString = 8,
    kBool = 9,
    kFloat16 = 10,
    kDouble = 11,
    kUint32 = 12,
    kUint64 = 13,
    kBfloat16 = 16,
    kFloat8E4M3FN = 17,
    kFloat8E4M3FNUZ = 18,
    kFloat8E5M2 = 19,
    kFloat8E5M2FNUZ = 20,
    kUint4 = 21,
    kInt4 = 22,
    kFloat4E2M1 = 23,
};

std::string_view onnxDataTypeName(OnnxDataType type);

//! A constant tensor: an initializer or the value of a Constant node.
struct OnnxConstant
{
    std::string name;
    OnnxDataType dataType = OnnxDataType::kUndefined;
    std::vector<std::int64_t> dims;
    std::int64_t elementCount = 0;
    bool external = false;        //!< data lives in an external file
    std::string externalLocation; //!< relative path from the model's folder
    std::int64_t externalOffset = 0;
    std::int64_t externalLength = -1;
    bool dataLoaded = false;    //!< values below hold the data (small tensors are always loaded)
    std::vector<double> values; //!< decoded values when dataLoaded (numeric types only)
    bool fromConstantNode = false;
};

struct OnnxAttribute
{
    std::string name;
    enum class Kind
    {
        kInt,
        kFloat,
        kString,
        kInts,
        kFloats,
        kTensor,
        kGraph,
        kOther
    } kind = Kind::kOther;
    std::int64_t i = 0;
    double f = 0.0;
    std::string s;
    std::vector<std::int64_t> ints;
    std::vector<double> floats;
};

//! A random-access iterator over a list with operator[] (TensorNames, NodeRefs): a position, dereferenced through
//! the list.
template <class List, class Reference>
class ListIterator
{
public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = std::remove_cvref_t<Reference>;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Reference;

    ListIterator() = default;
    ListIterator(const List* list, std::size_t position) : mList(list), mPosition(position) {}
    Reference operator*() const { return (*mList)[mPosition]; }
    auto operator->() const requires std::is_reference_v<Reference> { return &(*mList)[mPosition]; }
    Reference operator[](difference_type offset) const { return *(*this + offset); }
    ListIterator& operator++() { return *this += 1; }
    ListIterator operator++(int)
    {
        ListIterator before = *this;
        *this += 1;
        return before;
    }
    ListIterator& operator--() { return *this += -1; }
    ListIterator operator--(int)
    {
        ListIterator before = *this;
        *this += -1;
        return before;
    }
    ListIterator& operator+=(difference_type offset)
    {
        mPosition = static_cast<std::size_t>(static_cast<difference_type>(mPosition) + offset);
        return *this;
    }
    ListIterator& operator-=(difference_type offset) { return *this += -offset; }
    friend ListIterator operator+(ListIterator it, difference_type offset) { return it += offset; }
    friend ListIterator operator+(difference_type offset, ListIterator it) { return it += offset; }
    friend ListIterator operator-(ListIterator it, difference_type offset) { return it -= offset; }
    friend difference_type operator-(const ListIterator& a, const ListIterator& b)
    {
        return static_cast<difference_type>(a.mPosition) - static_cast<difference_type>(b.mPosition);
    }
    friend bool operator==(const ListIterator& a, const ListIterator& b) { return a.mPosition == b.mPosition; }
    friend auto operator<=>(const ListIterator& a, const ListIterator& b) { return a.mPosition <=> b.mPosition; }

private:
    const List* mList = nullptr;
    std::size_t mPosition = 0;
};

//! The input or output tensor names of one node: a read-only view of the graph's tensor table, so each name is
//! stored once however many nodes read it. Elements are the table's own strings ("" for an omitted optional
//! input), which OnnxGraph's look-ups recognise without hashing.
class TensorNames
{
public:
    static constexpr std::uint32_t kNone = NameIndex::kNone;

    using iterator = ListIterator<TensorNames, const std::string&>;
    using const_iterator = iterator;
    using value_type = std::string;
    using size_type = std::size_t;

    TensorNames() = default;
    TensorNames(const std::string* names, const std::uint32_t* ids, std::uint32_t count)
        : mNames(names), mIds(ids), mCount(count)
    {
    }

    std::size_t size() const { return mCount; }
    bool empty() const { return mCount == 0; }
    const std::string& operator[](std::size_t i) const { return mIds[i] == kNone ? emptyName() : mNames[mIds[i]]; }
    const std::string& at(std::size_t i) const;
    const std::string& front() const { return (*this)[0]; }
    const std::string& back() const { return (*this)[mCount - 1]; }
    iterator begin() const { return iterator(this, 0); }
    iterator end() const { return iterator(this, mCount); }
    //! Tensor id of element i (see OnnxTensorTable), kNone for an omitted optional input.
    std::uint32_t id(std::size_t i) const { return mIds[i]; }
    std::span<const std::uint32_t> ids() const { return {mIds, mCount}; }
    std::vector<std::string> toVector() const { return {begin(), end()}; }
    bool operator==(const std::vector<std::string>& other) const
    {
        return other.size() == mCount && std::equal(other.begin(), other.end(), begin());
    }
    bool operator==(const TensorNames& other) const
    {
        return other.size() == mCount && std::equal(other.begin(), other.end(), begin());
    }

private:
    static const std::string& emptyName();

    const std::string* mNames = nullptr;
    const std::uint32_t* mIds = nullptr;
    std::uint32_t mCount = 0;
};

//! A tensor name handed to OnnxGraph's look-ups. A reference to a string of the graph's own tensor table (what
//! OnnxNode::inputs and outputs yield) is resolved by its address; any other name is hashed.
struct TensorKey
{
    TensorKey(const std::string& text) : name(text), object(&text) {}
    TensorKey(std::string_view text) : name(text) {}
    TensorKey(const char* text) : name(text) {}

    std::string_view name;
    const std::string* object = nullptr;
};

struct OnnxNode
{
    std::string name; //!< node name; a node without a name gets "node_of_<first output>" as TensorRT does
    bool nameWasEmpty = false;
    //! Whether opType is QuantizeLinear or DequantizeLinear, set with it by the reader: "DequantizeLinear" is too
    //! long for std::string's inline buffer, and checking a node's type is then a cache miss in passes over
    //! hundreds of thousands of nodes.
    enum class QdqKind : std::uint8_t
    {
        kNone,
        kQuantize,
        kDequantize,
    } qdqKind = QdqKind::kNone;
    std::string opType;  //!< "Conv", "QuantizeLinear", ...
    std::string domain;  //!< "" or "ai.onnx" for standard ops; anything else is a custom (plugin) op
    TensorNames inputs;  //!< tensor names; "" for an omitted optional input
    TensorNames outputs; //!< tensor names
    std::vector<OnnxAttribute> attributes;
    std::size_t index = 0; //!< position in the graph's node list

    const OnnxAttribute* attribute(std::string_view attributeName) const;
    std::optional<std::int64_t> intAttribute(std::string_view attributeName) const;
    bool isCustomDomain() const;
};

//! Nodes named by their indices (a tensor's consumers): a view that yields node pointers without copying.
class NodeRefs
{
public:
    using iterator = ListIterator<NodeRefs, const OnnxNode*>;
    using const_iterator = iterator;
    using value_type = const OnnxNode*;

    NodeRefs() = default;
    NodeRefs(const OnnxNode* nodes, std::span<const std::uint32_t> indices) : mNodes(nodes), mIndices(indices) {}

    std::size_t size() const { return mIndices.size(); }
    bool empty() const { return mIndices.empty(); }
    const OnnxNode* operator[](std::size_t i) const { return mNodes + mIndices[i]; }
    const OnnxNode* front() const { return (*this)[0]; }
    const OnnxNode* back() const { return (*this)[size() - 1]; }
    iterator begin() const { return iterator(this, 0); }
    iterator end() const { return iterator(this, size()); }
    std::reverse_iterator<iterator> rbegin() const { return std::reverse_iterator<iterator>(end()); }
    std::reverse_iterator<iterator> rend() const { return std::reverse_iterator<iterator>(begin()); }
    operator std::vector<const OnnxNode*>() const { return {begin(), end()}; }

private:
    const OnnxNode* mNodes = nullptr;
    std::span<const std::uint32_t> mIndices;
};

//! Q/DQ parameters of one QuantizeLinear / DequantizeLinear node.
struct QdqParameters
{
    std::size_t node = 0; //!< index into OnnxGraph::nodes
    bool isQuantize = false;
    bool scaleIsConstant = false;
    std::vector<double> scale; //!< empty when not inline/constant
    std::int64_t scaleElements = 0;
    bool hasZeroPoint = false;
    bool zeroPointIsConstant = false;
    OnnxDataType zeroPointType = OnnxDataType::kUndefined; //!< kUndefined when absent (defaults to uint8 in ONNX)
    std::vector<double> zeroPoint;
    std::optional<std::int64_t> axis;
    std::optional<std::int64_t> blockSize;
    //! Q output_dtype attribute (opset 21), or the type a TensorRT-domain Q/DQ op implies (trt::TRT_FP8QuantizeLinear:
    //! FLOAT8E4M3FN, trt::TRT_INT4DequantizeLinear: INT4)
    std::optional<std::int64_t> outputDtype;
};

//! Every tensor name of a graph under a dense id (node inputs and outputs, initializers, graph inputs, outputs and
//! value_info), with its producer, consumers, constant and element type. Filled by the ONNX reader.
struct OnnxTensorTable
{
    static constexpr std::uint32_t kNone = NameIndex::kNone;

    std::vector<std::string> names;           //!< id -> name
    NameIndex index;                          //!< name -> id
    std::vector<std::uint32_t> producer;      //!< id -> index of the first node writing it, or kNone
    std::vector<std::uint32_t> constant;      //!< id -> index into OnnxGraph::constants (first definition), or kNone
    std::vector<OnnxDataType> type;           //!< id -> element type, kUndefined when unknown
    std::vector<std::uint32_t> consumerStart; //!< id -> first entry in consumerNodes; size names.size() + 1
    std::vector<std::uint32_t> consumerNodes; //!< node indices reading each tensor, in node order, once per node

    //! The id of key, or kNone: by address when key is one of names, else by hashing.
    std::uint32_t find(const TensorKey& key) const
    {
        if (key.object != nullptr && !names.empty())
        {
            const auto address = reinterpret_cast<std::uintptr_t>(key.object);
            const auto first = reinterpret_cast<std::uintptr_t>(names.data());
            if (address >= first && address < first + names.size() * sizeof(std::string))
            {
                return static_cast<std::uint32_t>((address - first) / sizeof(std::string));
            }
        }
        return index.find(key.name, [this](std::uint32_t id) -> const std::string& { return names[id]; });
    }
    //! The id of name, adding it when new.
    std::uint32_t intern(std::string_view name);

private:
    static constexpr std::size_t kRecent = 64;
    std::uint32_t mRecent[kRecent] = {}; //!< recently interned ids by hash (checked against names before use)
};

//! Everything OnnxGraph holds; OnnxGraph adds the copy that re-points its nodes at the copied tensor table.
struct OnnxGraphData
{
    static constexpr std::uint32_t kNone = NameIndex::kNone;

    std::string sourcePath;
    std::int64_t irVersion = 0;
    std::vector<std::pair<std::string, std::int64_t>> opsets; //!< (domain, version)
    std::string producerName;
    std::string producerVersion;
    std::string graphName;

    std::vector<OnnxNode> nodes;
    std::vector<std::string> graphInputs; //!< excluding initializers
    std::vector<std::string> graphOutputs;

    std::vector<OnnxConstant> constants; //!< initializers and Constant-node values

    OnnxTensorTable tensors;
    NameIndex nodeIndexByName;       //!< node name -> first node with that name
    bool duplicateNodeNames = false; //!< some node name is used by more than one node
    //! Tensor ids of each node's inputs and outputs (kNone for an omitted optional input), in node order:
    //! node i's inputs are nodeInputIds[nodeInputStart[i] .. nodeInputStart[i + 1]).
    std::vector<std::uint32_t> nodeInputStart;
    std::vector<std::uint32_t> nodeInputIds;
    std::vector<std::uint32_t> nodeOutputStart;
    std::vector<std::uint32_t> nodeOutputIds;

    std::vector<QdqParameters> qdq;       //!< one entry per Q/DQ node, in node order
    std::vector<std::uint32_t> qdqOfNode; //!< node index -> index into qdq, or kNone

    bool externalDataMissing = false;
    //! Rebuilt from a build log's parser lines (log_graph.h): nodes, tensors, shapes and types are known; the values
    //! of initializers and Constant nodes (weights, scales, zero points) and the nodes' attributes are not.
    bool rebuiltFromLog = false;
    std::vector<ReaderWarning> warnings;
};

struct OnnxGraph : OnnxGraphData
{
    OnnxGraph() = default;
    OnnxGraph(const OnnxGraph& other) : OnnxGraphData(other) { linkNodeTensors(); }
    OnnxGraph(OnnxGraph&& other) noexcept = default;
    OnnxGraph& operator=(const OnnxGraph& other)
    {
        if (this != &other)
        {
            OnnxGraphData::operator=(other);
            linkNodeTensors();
        }
        return *this;
    }
    OnnxGraph& operator=(OnnxGraph&& other) noexcept = default;

    //! Points every node's inputs and outputs at this graph's tensor table and id lists (the reader calls it once
    //! the table is complete; copies call it again). Moving a graph keeps them valid.
    void linkNodeTensors();

    const OnnxNode* findNode(std::string_view nodeName) const;
    const OnnxNode* findNode(const std::string& nodeName) const;
    const OnnxNode* findNode(const char* nodeName) const { return findNode(std::string_view(nodeName)); }
    //! Index of the first node named nodeName, or kNone.
    std::uint32_t nodeIndex(std::string_view nodeName) const;
    //! Same, resolving a node's own name (nodes[i].name) by its address.
    std::uint32_t nodeIndex(const std::string& nodeName) const;
    std::uint32_t nodeIndex(const char* nodeName) const { return nodeIndex(std::string_view(nodeName)); }
    const OnnxNode* producer(const TensorKey& tensor) const;
    std::span<const std::uint32_t> consumers(const TensorKey& tensor) const;
    const OnnxConstant* constant(const TensorKey& tensor) const;
    bool isConstant(const TensorKey& tensor) const { return constant(tensor) != nullptr; }
    //! Element type from value_info, graph inputs/outputs or the initializer; nullopt when unknown.
    std::optional<OnnxDataType> tensorType(const TensorKey& tensor) const;
    const QdqParameters* qdqOf(std::size_t nodeIndex) const;
    std::size_t quantizeCount() const;
    std::size_t dequantizeCount() const;

    // By tensor id (see tensors).
    const OnnxNode* producerOf(std::uint32_t tensorId) const
    {
        std::uint32_t node = tensorId < tensors.producer.size() ? tensors.producer[tensorId] : kNone;
        return node == kNone ? nullptr : &nodes[node];
    }
    std::span<const std::uint32_t> consumersOf(std::uint32_t tensorId) const;
    std::span<const std::uint32_t> inputIds(std::size_t nodeIndex) const
    {
        if (nodeIndex + 1 >= nodeInputStart.size())
        {
            return {};
        }
        return std::span<const std::uint32_t>(nodeInputIds)
            .subspan(nodeInputStart[nodeIndex], nodeInputStart[nodeIndex + 1] - nodeInputStart[nodeIndex]);
    }
    std::span<const std::uint32_t> outputIds(std::size_t nodeIndex) const
    {
        if (nodeIndex + 1 >= nodeOutputStart.size())
        {
            return {};
        }
        return std::span<const std::uint32_t>(nodeOutputIds)
            .subspan(nodeOutputStart[nodeIndex], nodeOutputStart[nodeIndex + 1] - nodeOutputStart[nodeIndex]);
    }
};

struct OnnxReadOptions
{
    //! Load the data of external-data and large inline initializers (weights). Off by default.
    bool loadWeights = false;
    //! Inline tensors up to this many bytes (scalars and short vectors) are decoded while streaming. Larger ones are
    //! decoded only where a Q/DQ node uses them as scale or zero point (read again from the model), or with
    //! loadWeights: small weights are never read by the analysis, and a model may have 100,000 of them.
    std::size_t smallTensorBytes = 32;
    //! Read every INT32 or UINT8 constant a DequantizeLinear dequantizes, and every INT32 bias of a QOperator op,
    //! whatever its size (`fix` turns them into float values; a 21,841-class head bias or a 151,296-value position
    //! embedding is larger than the analysis needs). Off by default: diagnose and predict read such a constant only
    //! up to 16,384 elements. The values decoded this way stay within Limits::maxInputBytes (8 bytes an element).
    bool loadQuantizedConstants = false;
};

} // namespace qdq
