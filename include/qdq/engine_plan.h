// The engine as TensorRT reports it: layers with their types, tensors and precisions. Filled by the layer-info
// reader (trtexec --exportLayerInfo, IEngineInspector) and by the build-log reader (Engine Layer Information /
// Layers: blocks). Read-only after parsing.
#pragma once

#include "qdq/diagnostics.h"
#include "qdq/name_index.h"
#include "qdq/precision.h"

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qdq
{

//! Immutable text shared by its copies: the tensors of an engine repeat a handful of Format/Datatype strings, and one
//! heap string per tensor would cost 200,000 allocations on a 100,000-layer engine.
class SharedText
{
public:
    SharedText() = default;
    SharedText(std::string_view text) // NOLINT: implicit, as a std::string would be
        : mText(text.empty() ? nullptr : std::make_shared<const std::string>(text))
    {
    }
    SharedText(const std::string& text) : SharedText(std::string_view(text)) {} // NOLINT
    SharedText(const char* text) : SharedText(std::string_view(text)) {}        // NOLINT

    const std::string& str() const { return mText ? *mText : emptyString(); }
    operator std::string_view() const { return str(); } // NOLINT
    bool empty() const { return !mText || mText->empty(); }
    friend bool operator==(const SharedText& a, std::string_view b) { return std::string_view(a.str()) == b; }
    friend std::string operator+(const std::string& a, const SharedText& b) { return a + b.str(); }
    friend std::string operator+(std::string&& a, const SharedText& b) { return std::move(a) + b.str(); }
    friend std::ostream& operator<<(std::ostream& out, const SharedText& text);

private:
    static const std::string& emptyString();
    std::shared_ptr<const std::string> mText;
};

struct EngineTensor
{
    std::string name;
    std::vector<std::int64_t> dimensions; //!< as printed; vectorized channel "64:32" is stored as 64
    int vectorWidth = 0;                  //!< 32 for "64:32", 0 when not vectorized or unknown
    SharedText format;                    //!< raw Format/Datatype string (or log type, e.g. "Int8")
    Precision precision = Precision::kUnknown;
    std::string location; //!< "Device", "Host" or empty
};

//! A group of ONNX node names from layer Metadata: `[ONNX Layer: a]\x1f[ONNX Layer: b]\x1e[ONNX Layer: c]`.
//! Top-level split on \x1e gives subgroups; \x1f joins nodes within a subgroup.
struct MetadataGroup
{
    std::vector<std::string> onnxNodes;
};

//! Key/value text pairs stored in one buffer: a 100,000-layer engine has millions of them, and two std::strings
//! per pair would cost more memory than the input file.
class FieldList
{
public:
    using value_type = std::pair<std::string_view, std::string_view>;

    class const_iterator
    {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = FieldList::value_type;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = value_type;

        const_iterator(const FieldList* list, std::size_t index) : mList(list), mIndex(index) {}
        value_type operator*() const { return (*mList)[mIndex]; }
        const_iterator& operator++()
        {
            ++mIndex;
            return *this;
        }
        const_iterator operator++(int)
        {
            const_iterator previous = *this;
            ++mIndex;
            return previous;
        }
        bool operator==(const const_iterator& other) const { return mIndex == other.mIndex; }
        bool operator!=(const const_iterator& other) const { return mIndex != other.mIndex; }

    private:
        const FieldList* mList;
        std::size_t mIndex;
    };

    void emplace_back(std::string_view key, std::string_view value)
    {
        mEnds.push_back(static_cast<std::uint32_t>(mText.size() + key.size()));
        mText.append(key);
        mEnds.push_back(static_cast<std::uint32_t>(mText.size() + value.size()));
        mText.append(value);
    }
    //! Appends key and a value that writeValue(std::string&) appends to the buffer (no temporary string).
    template <class WriteValue>
    void emplaceWith(std::string_view key, WriteValue&& writeValue)
    {
        mText.append(key);
        mEnds.push_back(static_cast<std::uint32_t>(mText.size()));
        writeValue(mText);
        mEnds.push_back(static_cast<std::uint32_t>(mText.size()));
    }
    //! The value of the last pair.
    std::string_view backValue() const { return std::string_view(mText).substr(mEnds[mEnds.size() - 2]); }
    void clear()
    {
        mText.clear();
        mEnds.clear();
    }
    void reserve(std::size_t pairs) { mEnds.reserve(2 * pairs); }
    void shrinkToFit()
    {
        mText.shrink_to_fit();
        mEnds.shrink_to_fit();
    }
    std::size_t size() const { return mEnds.size() / 2; }
    bool empty() const { return mEnds.empty(); }
    value_type operator[](std::size_t index) const
    {
        std::uint32_t keyBegin = index == 0 ? 0 : mEnds[2 * index - 1];
        std::uint32_t keyEnd = mEnds[2 * index];
        std::uint32_t valueEnd = mEnds[2 * index + 1];
        std::string_view text(mText);
        return {text.substr(keyBegin, keyEnd - keyBegin), text.substr(keyEnd, valueEnd - keyEnd)};
    }
    const_iterator begin() const { return {this, 0}; }
    const_iterator end() const { return {this, size()}; }
    bool operator==(const FieldList& other) const { return mText == other.mText && mEnds == other.mEnds; }

private:
    std::string mText;
    std::vector<std::uint32_t> mEnds; //!< end offsets: key, value, key, value ...
};

//! The facts of a layer that a plan merged from several files (engine_merge.h) may take from different files.
enum class LayerFact : std::uint8_t
{
    kRecord,   //!< LayerType, ParameterType, Origin, weights, activation and the other per-type keys
    kTensors,  //!< Inputs and Outputs with their formats
    kTactic,   //!< TacticName / TacticValue
    kMetadata, //!< Metadata
};

//! Which file told one fact of a merged layer: an index into EnginePlan::mergedFrom and the line there.
struct FactSource
{
    LayerFact fact = LayerFact::kRecord;
    std::uint32_t file = 0;
    std::uint64_t line = 0;
};

struct EngineLayer
{
    std::string name; //!< full layer name, as in the profile (including " [profile N]" when present)
    std::size_t profileSuffixAt = std::string::npos; //!< where a trailing " [profile N]" starts in name
    int optimizationProfile = 0;                     //!< N from " [profile N]", 0 otherwise
    std::string type;          //!< LayerType (e.g. "CaskConvolution", "Reformat", "Scale"); empty in names-only lists
    std::string parameterType; //!< ParameterType when present
    std::string origin;        //!< Origin: "QDQ", "REFORMAT", ... or empty
    std::vector<EngineTensor> inputs;
    std::vector<EngineTensor> outputs;
    std::string tacticName;
    std::string tacticValue;                   //!< as printed (hex "0x..." or decimal)
    std::optional<Precision> weightsPrecision; //!< Weights.Type / ConvWeights.Type
    std::string activation;                    //!< Activation / ConvActivation when present
    std::string pluginType;
    bool hasMetadata = false;
    std::string metadata;   //!< raw Metadata text
    FieldList otherFields;  //!< remaining keys (scalars as text, objects/arrays as compact JSON), in file order
    std::uint64_t line = 0; //!< line in the source file where the layer record starts
    //! Only in a plan merged from several files: which file told each fact (EnginePlan::mergedFrom); a fact not
    //! listed comes from the file of the kRecord entry, and line is that record's line.
    std::vector<FactSource> factSources;

    //! Sets name, and profileSuffixAt / optimizationProfile from a trailing " [profile N]".
    void setName(std::string_view fullName)
    {
        name.assign(fullName);
        findProfileSuffix();
    }
    //! Sets profileSuffixAt / optimizationProfile from a trailing " [profile N]" of name.
    void findProfileSuffix();
    //! name without a trailing " [profile N]" suffix.
    std::string_view baseName() const { return std::string_view(name).substr(0, profileSuffixAt); }
    //! The [ONNX Layer: ...] groups of metadata (parsed on each call: few callers need them).
    std::vector<MetadataGroup> metadataGroups() const;
    //! All ONNX node names from Metadata, in order, without duplicates.
    std::vector<std::string> metadataOnnxNodes() const;
    //! The same names as views into metadata (valid while the layer is unchanged).
    std::vector<std::string_view> metadataOnnxNodeViews() const;
};

enum class LayerListForm
{
    kUnknown,
    kNamesOnly, //!< {"Layers": ["a", "b"]} or bare names after a LAYER_NAMES_ONLY dump
    kDetailed,  //!< per-layer objects / records with LayerType and tensors
    kLogLine,   //!< build log `Layer(Type): name, Tactic: ..., in -> out` lines
};

struct EngineLayer;

//! Which layers write and read each tensor name. Names are views of the plan's tensor names, numbered in order of
//! first appearance; the consumers of all tensors share one array.
class TensorIndex
{
public:
    explicit TensorIndex(const std::vector<EngineLayer>& layers);

    //! The first layer that writes tensor.
    std::optional<std::size_t> producer(std::string_view tensor) const;
    //! The layers that read tensor, in layer order, each once.
    std::span<const std::size_t> consumers(std::string_view tensor) const;
    std::size_t layerCount() const { return mLayerCount; }

private:
    std::uint32_t idOf(std::string_view tensor) const;

    std::size_t mLayerCount = 0;
    std::vector<std::string_view> mNames; //!< id -> name
    NameIndex mIndex;
    std::vector<std::size_t> mProducer; //!< id -> first writer, or npos
    std::vector<std::uint32_t> mStart;  //!< id -> first entry in mConsumers (size: ids + 1)
    std::vector<std::size_t> mConsumers;
};

//! One engine input or output as TensorRT 11 lists it under "I/O Tensors" (JSON) / `I/O Tensors:` (text), which
//! replaced 10.x's "Bindings" (../shared/realdata/FORMATS-trt11.md J7, T3).
struct IoTensor
{
    //! MinShape/OptShape/MaxShape (inputs only) and the long format of one optimization profile.
    struct ProfileShape
    {
        std::vector<std::int64_t> minShape;
        std::vector<std::int64_t> optShape;
        std::vector<std::int64_t> maxShape;
        std::string format; //!< "Row major linear FP32 format (kLINEAR)"
    };
    std::string name;
    bool input = false;   //!< IOMode "Input" (else "Output")
    std::string dataType; //!< DataType as printed ("Float", "Int64")
    Precision precision = Precision::kUnknown;
    std::vector<std::int64_t> dimensions;
    std::string location;
    std::vector<ProfileShape> profiles; //!< one entry per optimization profile
    std::uint64_t line = 0;
};

//! What a layer list's own forms tell about the TensorRT that wrote it: the 11.x key forms ("Datatype" and "Format" as
//! two keys, "I/O Tensors"; FORMATS-trt11.md J1, J7, T1, T3) are in no 10.x file.
struct WriterEvidence
{
    int trtMajor = 0;       //!< 11 when an 11.x-only form was seen, else 0
    std::uint64_t line = 0; //!< the line of the first such form
    std::string what;       //!< e.g. "\"Datatype\" and \"Format\" as two keys (TensorRT 11.x form)"
};

struct EnginePlan
{
    std::string sourcePath;
    LayerListForm form = LayerListForm::kUnknown;
    std::vector<EngineLayer> layers;
    std::vector<std::string> bindings; //!< 10.x "Bindings", or the names of the 11.x I/O tensors
    std::vector<IoTensor> ioTensors;   //!< TensorRT 11.x "I/O Tensors" (empty for 10.x files)
    //! TensorRT 11.1's "Engine Metadata" object ({"Multi-Device": "Disabled"}: FORMATS-trt11.md J9, T4).
    std::vector<std::pair<std::string, std::string>> engineMetadata;
    WriterEvidence writer;
    //! How many optimization profiles the layer names tell (" [profile N]"; at least 1 for a non-empty list).
    int optimizationProfiles() const;
    //! Sets each layer's optimizationProfile where the name holds the profile inside it (a TensorRT Myelin kernel:
    //! `node_conv2d [profile 1]_myl1_2`) or names none but belongs to a Myelin graph whose other kernels do
    //! (`__myl_Move_myl1_1`): ../shared/realdata/FORMATS-trt11.md T7. Readers call it once the list is read.
    void assignOptimizationProfiles();
    std::vector<ReaderWarning> warnings;
    //! Only in a plan merged from several files (engine_merge.h): the files, in the order FactSource::file counts
    //! them; sourcePath is the one that told most layer records.
    std::vector<std::string> mergedFrom;

    //! The file and line that told fact of layer: the layer's own file and line, or for a merged plan the file the
    //! fact was taken from.
    std::pair<std::string_view, std::uint64_t> factSource(std::size_t layer, LayerFact fact) const;

    //! Built on first use (and again when the number of layers changed), so that producer/consumer look-ups stay
    //! O(1) on engines with 100,000 layers. It holds views of the tensor names: rename tensors in place only before
    //! the first use.
    const TensorIndex& tensorIndex() const;

private:
    //! The index holds views of this plan's names: a copy of the plan builds its own, a move keeps it.
    struct IndexCache
    {
        IndexCache() = default;
        IndexCache(const IndexCache&) {}
        IndexCache& operator=(const IndexCache&)
        {
            index.reset();
            return *this;
        }
        IndexCache(IndexCache&&) noexcept = default;
        IndexCache& operator=(IndexCache&&) noexcept = default;
        std::unique_ptr<const TensorIndex> index;
    };
    mutable IndexCache mTensorIndex;
};

} // namespace qdq
