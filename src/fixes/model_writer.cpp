// Streaming ONNX model editor (include/qdq/model_edit.h). The source is walked at the protobuf wire level: a
// ModelProto is a sequence of fields (tag varint, then a varint, fixed bytes or a length-prefixed payload), and so is
// the GraphProto inside field 7. Pass 1 walks the graph's fields and turns the edits into splices (byte ranges of
// the source to drop or to replace, and new bytes to insert at an offset), which gives the new graph length that its
// length prefix needs. Pass 2 copies the source between splices in buffered chunks. Memory is the two buffers plus
// the splices, whatever the model's size. Only the edited nodes, tensors and value infos are parsed with the ONNX
// protobuf classes; everything else is copied byte for byte, unknown fields included. External data: pass 1 gives each
// external tensor its place in the sink's data file (re-encoding that small TensorProto with the new location, offset
// and length), and pass 2, after the model, copies the bytes there from the source's data files through the same kind
// of buffer.
#include "src/fixes/model_wire.h"

#include "qdq/onnx_guard.h"

#include <algorithm>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

namespace qdq
{

using namespace model_wire;

namespace
{

// ----- encoding the edits ---------------------------------------------------------------------------------------

struct StringHash
{
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
};
using StringSet = std::unordered_set<std::string, StringHash, std::equal_to<>>;
template <typename Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

//! The graph.node field of a new node (validated).
std::string encodeNode(const NewNode& node, std::size_t editIndex)
{
    const std::string where = "insertNodes[" + std::to_string(editIndex) + "]";
    if (node.name.empty() || node.opType.empty())
    {
        invalidEdit(where + ": a new node needs a name and an op type");
    }
    if (std::none_of(node.outputs.begin(), node.outputs.end(),
                     [](const std::string& output) { return !output.empty(); }))
    {
        invalidEdit(where + " (" + inQuotes(node.name) + "): a new node needs an output");
    }
    onnx::NodeProto proto;
    for (const std::string& input : node.inputs)
    {
        proto.add_input(input);
    }
    for (const std::string& output : node.outputs)
    {
        proto.add_output(output);
    }
    proto.set_name(node.name);
    proto.set_op_type(node.opType);
    if (!node.domain.empty())
    {
        proto.set_domain(node.domain);
    }
    StringSet attributeNames;
    for (const NewAttribute& attribute : node.attributes)
    {
        if (attribute.name.empty() || !attributeNames.insert(attribute.name).second)
        {
            invalidEdit(where + " (" + inQuotes(node.name) + "): attribute names must be non-empty and distinct (" +
                        inQuotes(attribute.name) + ")");
        }
        const int kinds = static_cast<int>(attribute.i.has_value()) + static_cast<int>(attribute.f.has_value()) +
                          static_cast<int>(attribute.s.has_value());
        if (kinds > 1 || (kinds == 1 && !attribute.ints.empty()))
        {
            invalidEdit(where + " (" + inQuotes(node.name) + "): attribute " + inQuotes(attribute.name) +
                        " has more than one value");
        }
        onnx::AttributeProto* attributeProto = proto.add_attribute();
        attributeProto->set_name(attribute.name);
        if (attribute.i)
        {
            attributeProto->set_type(onnx::AttributeProto::INT);
            attributeProto->set_i(*attribute.i);
        }
        else if (attribute.f)
        {
            attributeProto->set_type(onnx::AttributeProto::FLOAT);
            attributeProto->set_f(*attribute.f);
        }
        else if (attribute.s)
        {
            attributeProto->set_type(onnx::AttributeProto::STRING);
            attributeProto->set_s(*attribute.s);
        }
        else
        {
            attributeProto->set_type(onnx::AttributeProto::INTS);
            for (std::int64_t value : attribute.ints)
            {
                attributeProto->add_ints(value);
            }
        }
    }
    if (!node.docString.empty())
    {
        proto.set_doc_string(node.docString);
    }
    return lengthDelimitedField(kGraphNode, proto.SerializeAsString());
}

//! The TensorProto of a new tensor (validated), its data inline.
onnx::TensorProto initializerProto(const NewInitializer& tensor, const std::string& where)
{
    if (tensor.name.empty())
    {
        invalidEdit(where + ": a tensor needs a name");
    }
    const int bits = elementBits(tensor.dataType);
    if (bits == 0)
    {
        invalidEdit(where + " (" + inQuotes(tensor.name) + "): data type " + std::to_string(tensor.dataType) +
                    " is not a fixed-size ONNX tensor type");
    }
    const std::optional<std::uint64_t> count = elementCount(tensor.dims);
    if (!count || *count > (UINT64_MAX - 7) / static_cast<std::uint64_t>(bits))
    {
        invalidEdit(where + " (" + inQuotes(tensor.name) + "): negative or overflowing dims");
    }
    const std::uint64_t expected = (*count * static_cast<std::uint64_t>(bits) + 7) / 8;
    if (tensor.rawData.size() != expected)
    {
        invalidEdit(where + " (" + inQuotes(tensor.name) + "): rawData holds " + std::to_string(tensor.rawData.size()) +
                    " bytes, its dims and data type call for " + std::to_string(expected));
    }
    onnx::TensorProto proto;
    for (std::int64_t dim : tensor.dims)
    {
        proto.add_dims(dim);
    }
    proto.set_data_type(tensor.dataType);
    proto.set_name(tensor.name);
    proto.set_raw_data(tensor.rawData);
    return proto;
}

//! The graph.initializer field of a new tensor (validated).
std::string encodeInitializer(const NewInitializer& tensor, const std::string& where)
{
    return lengthDelimitedField(kGraphInitializer, initializerProto(tensor, where).SerializeAsString());
}

// ----- writing --------------------------------------------------------------------------------------------------

//! The output side of pass 2: one buffer that batches small encoded pieces and receives copied source chunks, written
//! to the model (ModelSink::write) or to its data file (ModelSink::writeData).
class BufferedOutput
{
public:
    using Write = void (ModelSink::*)(std::string_view);

    BufferedOutput(ModelSink& sink, Write write, std::size_t bufferBytes)
        : mSink(sink), mWrite(write), mBuffer(bufferBytes, '\0')
    {
    }

    //! Copies bytes [from, to) of a file that readInto(offset, data, length) reads.
    template <typename ReadInto>
    void copy(ReadInto&& readInto, std::uint64_t from, std::uint64_t to)
    {
        mCopied += to - from;
        while (from < to)
        {
            const std::uint64_t count = std::min<std::uint64_t>(to - from, mBuffer.size() - mUsed);
            readInto(from, mBuffer.data() + mUsed, count);
            mUsed += count;
            from += count;
            if (mUsed == mBuffer.size())
            {
                flush();
            }
        }
    }

    void put(std::string_view bytes)
    {
        mEncoded += bytes.size();
        if (bytes.size() > mBuffer.size() - mUsed)
        {
            flush();
        }
        if (bytes.size() >= mBuffer.size())
        {
            (mSink.*mWrite)(bytes);
            mWritten += bytes.size();
            return;
        }
        std::memcpy(mBuffer.data() + mUsed, bytes.data(), bytes.size());
        mUsed += bytes.size();
    }

    void flush()
    {
        if (mUsed > 0)
        {
            (mSink.*mWrite)(std::string_view(mBuffer.data(), mUsed));
            mWritten += mUsed;
            mUsed = 0;
        }
    }

    std::uint64_t written() const { return mWritten; }
    std::uint64_t copied() const { return mCopied; }
    std::uint64_t encoded() const { return mEncoded; }

private:
    ModelSink& mSink;
    Write mWrite;
    std::string mBuffer;
    std::size_t mUsed = 0;
    std::uint64_t mWritten = 0;
    std::uint64_t mCopied = 0;
    std::uint64_t mEncoded = 0;
};

//! A change to the graph's bytes: source bytes [offset, end) are replaced by `bytes` (offset == end: an insertion,
//! bytes empty: a removal). Splices at one offset apply in rank order, then in the order they were made.
struct Splice
{
    std::uint64_t offset = 0;
    std::uint64_t end = 0;
    int rank = 0;
    std::string bytes;
};

enum SpliceRank : int
{
    kRankNewNode = 0,        // inserted nodes come first at an offset ...
    kRankNewInitializer = 1, // ... then added initializers ...
    kRankEdit = 2,           // ... then the removal or replacement of the field that starts there
};

//! What becomes of an external data file the source model references (one per location; see writeEditedModel).
struct ExternalFile
{
    enum class Fate
    {
        kCopied,  //!< inside the source model's folder and present: its tensors' bytes go to the sink's data file
        kMissing, //!< not there: the location is kept
        kOutside, //!< absolute, '..' or through a link out of the folder: never opened, the location is kept
    };
    Fate fate = Fate::kMissing;
    std::string outsideWhy; //!< kOutside: why
    fs::path target;        //!< the file the location names, wherever it is (for refusing it as an output)
    int fd = -1;            //!< kCopied: open for reading
    std::uint64_t size = 0;
    struct timespec modified
    {
    };
    std::size_t tensors = 0;
    std::string firstTensor;
};

//! A piece of the data file: a byte range of a source data file, or the bytes of a replaced tensor.
struct DataPiece
{
    std::size_t file = 0; //!< index of the ExternalFile (when bytes is empty)
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    std::string bytes;
};

class EditedModelWriter
{
public:
    EditedModelWriter(const std::string& sourcePath, const ModelEdits& edits, ModelSink& sink,
                      const ModelWriteOptions& options)
        : mSourcePath(sourcePath), mEdits(edits), mSink(sink), mOptions(options), mDataLocation(sink.dataLocation())
    {
    }
    ~EditedModelWriter()
    {
        for (ExternalFile& file : mExternalFiles)
        {
            if (file.fd >= 0)
            {
                ::close(file.fd);
            }
        }
    }
    EditedModelWriter(const EditedModelWriter&) = delete;
    EditedModelWriter& operator=(const EditedModelWriter&) = delete;

    ModelWriteResult run()
    {
        prepareEdits();
        WireSource source(mSourcePath, mOptions.limits, kScanWindowBytes);
        mSource = &source;
        mResult.sourceBytes = source.size();
        refuseSourceAsOutput();
        const fs::path sourceFolder = fs::path(mSourcePath).parent_path();
        mSourceFolder = sourceFolder.empty() ? fs::path(".") : sourceFolder;
        mGraph = locateGraph(source);
        if (mEdits.defaultOpset)
        {
            planTheDefaultOpset(*mEdits.defaultOpset);
        }
        scanGraph();
        finishEdits();
        refuseDataFileAsOutput();
        const std::uint64_t outputBytes = plannedOutputBytes();
        if (outputBytes > kProtobufLimit)
        {
            failPath(outputPathForMessages(), "the edited model would be " + std::to_string(outputBytes >> 20) +
                                                  " MiB, over the 2 GiB a protobuf file can hold");
        }
        mSink.begin();
        if (!mDataPieces.empty())
        {
            mSink.beginData(); // before any byte is written: an existing data file is refused first
        }
        emit(outputBytes);
        source.checkUnchanged();
        emitData();
        mSink.commit();
        writeNotes();
        return std::move(mResult);
    }

private:
    // ----- edits that need no model ---------------------------------------------------------------------------
    void prepareEdits()
    {
        prepareRemovals();
        prepareInsertions();
        prepareRewires();
        prepareOutputRenames();
        prepareGraphOutputRenames();
        prepareInitializers();
        mDroppedValueInfos.insert(mEdits.dropValueInfos.begin(), mEdits.dropValueInfos.end());
    }

    //! Removed nodes, sorted; a node removed twice is refused.
    void prepareRemovals()
    {
        mRemovedNodes = mEdits.removeNodes;
        std::sort(mRemovedNodes.begin(), mRemovedNodes.end());
        if (auto twice = std::adjacent_find(mRemovedNodes.begin(), mRemovedNodes.end()); twice != mRemovedNodes.end())
        {
            invalidEdit("removeNodes: node " + std::to_string(*twice) + " is removed twice");
        }
    }

    //! New nodes encoded, in the order of the node they go before; their names and outputs are unique.
    void prepareInsertions()
    {
        for (std::size_t i = 0; i < mEdits.insertNodes.size(); ++i)
        {
            const NewNode& node = mEdits.insertNodes[i].node;
            mInserts.push_back({mEdits.insertNodes[i].beforeNode, encodeNode(node, i)});
            if (!mNewNodeNames.insert(node.name).second)
            {
                invalidEdit("insertNodes: node name " + inQuotes(node.name) + " is used by two new nodes");
            }
            for (const std::string& output : node.outputs)
            {
                if (!output.empty() && !mNewTensorNames.insert(output).second)
                {
                    invalidEdit("insertNodes[" + std::to_string(i) + "]: tensor " + inQuotes(output) +
                                " is produced twice by the new nodes");
                }
            }
        }
        std::stable_sort(mInserts.begin(), mInserts.end(),
                         [](const Insert& a, const Insert& b) { return a.beforeNode < b.beforeNode; });
    }

    //! Rewired inputs by node: no rewired node is removed, no input rewired twice.
    void prepareRewires()
    {
        for (std::size_t i = 0; i < mEdits.rewireInputs.size(); ++i)
        {
            const ModelEdits::Rewire& rewire = mEdits.rewireInputs[i];
            if (std::binary_search(mRemovedNodes.begin(), mRemovedNodes.end(), rewire.node))
            {
                invalidEdit("rewireInputs[" + std::to_string(i) + "]: node " + std::to_string(rewire.node) +
                            " is also removed");
            }
            auto& slots = mRewires[rewire.node];
            for (const ModelEdits::Rewire* other : slots)
            {
                if (other->inputSlot == rewire.inputSlot)
                {
                    invalidEdit("rewireInputs[" + std::to_string(i) + "]: input " + std::to_string(rewire.inputSlot) +
                                " of node " + std::to_string(rewire.node) + " is rewired twice");
                }
            }
            slots.push_back(&rewire);
        }
    }

    //! Renamed node outputs by node: no renamed node is removed, no output renamed twice, no name written twice.
    void prepareOutputRenames()
    {
        for (std::size_t i = 0; i < mEdits.renameNodeOutputs.size(); ++i)
        {
            const ModelEdits::RenameNodeOutput& rename = mEdits.renameNodeOutputs[i];
            const std::string where = "renameNodeOutputs[" + std::to_string(i) + "]: ";
            if (rename.newOutput.empty())
            {
                invalidEdit(where + "empty name");
            }
            if (std::binary_search(mRemovedNodes.begin(), mRemovedNodes.end(), rename.node))
            {
                invalidEdit(where + "node " + std::to_string(rename.node) + " is also removed");
            }
            auto& slots = mOutputRenames[rename.node];
            for (const ModelEdits::RenameNodeOutput* other : slots)
            {
                if (other->outputSlot == rename.outputSlot)
                {
                    invalidEdit(where + "output " + std::to_string(rename.outputSlot) + " of node " +
                                std::to_string(rename.node) + " is renamed twice");
                }
            }
            slots.push_back(&rename);
            // A name no node that stays may write: checked like a new node's output.
            if (!mNewTensorNames.insert(rename.newOutput).second)
            {
                invalidEdit(where + "tensor " + inQuotes(rename.newOutput) +
                            " is already the output of a new node or of another rename");
            }
        }
    }

    //! Renamed graph outputs: each once.
    void prepareGraphOutputRenames()
    {
        for (const ModelEdits::RenameOutput& rename : mEdits.renameGraphOutputs)
        {
            if (rename.from.empty() || rename.to.empty())
            {
                invalidEdit("renameGraphOutputs: empty name");
            }
            if (!mRenames.emplace(rename.from, rename.to).second)
            {
                invalidEdit("renameGraphOutputs: graph output " + inQuotes(rename.from) + " is renamed twice");
            }
        }
    }

    //! Removed, replaced and added initializers: each once, none both removed and replaced, new names unique.
    void prepareInitializers()
    {
        for (const std::string& name : mEdits.removeInitializers)
        {
            if (!mRemovedInitializers.emplace(name, false).second)
            {
                invalidEdit("removeInitializers: initializer " + inQuotes(name) + " is removed twice");
            }
        }
        for (std::size_t i = 0; i < mEdits.replaceInitializers.size(); ++i)
        {
            const NewInitializer& tensor = mEdits.replaceInitializers[i];
            std::string bytes = encodeInitializer(tensor, "replaceInitializers[" + std::to_string(i) + "]");
            if (mRemovedInitializers.count(tensor.name) > 0)
            {
                invalidEdit("replaceInitializers: initializer " + inQuotes(tensor.name) + " is also removed");
            }
            if (!mReplacements.emplace(tensor.name, Replacement{std::move(bytes), &tensor, false}).second)
            {
                invalidEdit("replaceInitializers: initializer " + inQuotes(tensor.name) + " is replaced twice");
            }
        }
        for (std::size_t i = 0; i < mEdits.addInitializers.size(); ++i)
        {
            const NewInitializer& tensor = mEdits.addInitializers[i];
            mAddedInitializers.push_back(encodeInitializer(tensor, "addInitializers[" + std::to_string(i) + "]"));
            if (!mNewTensorNames.insert(tensor.name).second)
            {
                invalidEdit("addInitializers[" + std::to_string(i) + "]: tensor " + inQuotes(tensor.name) +
                            " is already a new initializer or the output of a new node");
            }
        }
    }

    // ----- files and folders ----------------------------------------------------------------------------------
    std::string outputPathForMessages() const { return mSink.path().empty() ? "<output>" : mSink.path(); }

    void refuseSourceAsOutput()
    {
        const std::string output = mSink.path();
        std::error_code error;
        if (output.empty() || !fs::exists(output, error))
        {
            return;
        }
        mOutputExists = true;
        if (fs::equivalent(output, mSourcePath, error))
        {
            failPath(output,
                     "is the input model " + inQuotes(mSourcePath) + " itself; write the edited model to another file");
        }
    }

    //! The model's output may not be one of the source's data files, nor may the data file (when one is written) be
    //! one of them or the source model: writing it would destroy what is being read, force or not.
    void refuseDataFileAsOutput()
    {
        const std::string dataPath = mDataPieces.empty() ? std::string() : mSink.dataPath();
        if (!dataPath.empty() && !mKeptOnDataFile.empty())
        {
            failPath(mSourcePath, mKeptOnDataFile);
        }
        std::error_code error;
        if (!dataPath.empty() && fs::exists(dataPath, error) && fs::equivalent(dataPath, mSourcePath, error))
        {
            failPath(dataPath,
                     "is the input model " + inQuotes(mSourcePath) +
                         "; the fixed model's data file would replace it: write the model under another name");
        }
        for (const auto& [location, index] : mFileByLocation)
        {
            const ExternalFile& file = mExternalFiles[index];
            if (file.fate == ExternalFile::Fate::kMissing)
            {
                continue;
            }
            if (mOutputExists && fs::equivalent(mSink.path(), file.target, error))
            {
                failPath(mSink.path(), "is the external data file " + inQuotes(location) + " of tensor " +
                                           inQuotes(file.firstTensor) + "; write the edited model to another file");
            }
            if (!dataPath.empty() && fs::exists(dataPath, error) && fs::equivalent(dataPath, file.target, error))
            {
                failPath(dataPath, "is the external data file " + inQuotes(location) + " of tensor " +
                                       inQuotes(file.firstTensor) +
                                       " of the input model; the edited model's data file would replace it: write "
                                       "the model under another name");
            }
        }
    }

    //! What becomes of the external data file at a location (pass 1; each location is looked up once): its index.
    std::size_t externalFile(const std::string& location, const std::string& tensor, std::uint64_t at)
    {
        auto [entry, inserted] = mFileByLocation.try_emplace(location, mExternalFiles.size());
        if (inserted)
        {
            mExternalFiles.push_back(lookUpExternalFile(location, at));
        }
        ExternalFile& file = mExternalFiles[entry->second];
        if (file.tensors++ == 0)
        {
            file.firstTensor = tensor;
        }
        return entry->second;
    }

    ExternalFile lookUpExternalFile(const std::string& location, std::uint64_t at)
    {
        ExternalFile file;
        std::error_code error;
        // An empty or NUL-holding location is kept as it is: the checker's to report.
        if (location.empty() || location.find('\0') != std::string::npos)
        {
            return file;
        }
        file.target = fs::weakly_canonical(
            fs::absolute(fs::path(location).is_absolute() ? fs::path(location) : mSourceFolder / location, error),
            error);
        const ResolvedExternalLocation where = resolveExternalDataLocation(mSourceFolder, location);
        if (where.unresolvable)
        {
            mSource->fail(at, "cannot resolve external data location " + inQuotes(location));
        }
        struct stat info
        {
        };
        if (!where.refused.empty())
        {
            // Never opened, as the ONNX reader never opens it; kept only when it names something (else: missing).
            file.fate =
                ::stat(file.target.c_str(), &info) == 0 ? ExternalFile::Fate::kOutside : ExternalFile::Fate::kMissing;
            file.outsideWhy = where.refused;
            return file;
        }
        file.target = where.resolved;
        if (::stat(file.target.c_str(), &info) != 0)
        {
            return file;
        }
        if (!S_ISREG(info.st_mode))
        {
            failPath(file.target.string(), "external data location " + inQuotes(location) + " is not a regular file");
        }
        // Opened without blocking (a file swapped for a FIFO meanwhile would block), then checked again.
        file.fd = ::open(file.target.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (file.fd < 0 || ::fstat(file.fd, &info) != 0 || !S_ISREG(info.st_mode))
        {
            const std::string why = file.fd < 0 ? std::strerror(errno) : "not a regular file";
            if (file.fd >= 0)
            {
                ::close(file.fd);
            }
            failPath(file.target.string(), "cannot open the external data file: " + why);
        }
        file.fate = ExternalFile::Fate::kCopied;
        file.size = static_cast<std::uint64_t>(info.st_size);
        file.modified = info.st_mtim;
        return file;
    }

    //! An external_data offset or length: a non-negative decimal integer.
    std::uint64_t externalNumber(const onnx::StringStringEntryProto& entry, const std::string& tensor,
                                 std::uint64_t at) const
    {
        const std::string& text = entry.value();
        std::uint64_t value = 0;
        bool ok = !text.empty() && text.size() <= 18;
        for (char c : text)
        {
            ok = ok && c >= '0' && c <= '9';
            value = ok ? value * 10 + static_cast<std::uint64_t>(c - '0') : 0;
        }
        if (!ok)
        {
            mSource->fail(at, "external data " + entry.key() + " " + inQuotes(text) + " of tensor " + inQuotes(tensor) +
                                  " is not a non-negative integer");
        }
        return value;
    }

    //! Gives a tensor's bytes their place in the data file: the same source range twice gets one place.
    std::uint64_t placeData(std::size_t fileIndex, std::uint64_t offset, std::uint64_t length)
    {
        const auto [place, inserted] = mPlaced.try_emplace(std::make_tuple(fileIndex, offset, length), mDataBytes);
        if (!inserted)
        {
            return place->second;
        }
        // A range that continues the last one (an exporter writes tensors one after another in graph order) extends
        // it, so that pass 2 copies runs of the source in 1 MiB reads. Before, each tensor was its own read: on the
        // bench model with 100,000 weights of 5 KB in external data, writing took 3.0 s against 1.1 s for the same
        // model with inline weights.
        DataPiece* last = mDataPieces.empty() ? nullptr : &mDataPieces.back();
        if (last != nullptr && last->bytes.empty() && last->file == fileIndex && last->offset + last->length == offset)
        {
            last->length += length;
        }
        else
        {
            mDataPieces.push_back({fileIndex, offset, length, {}});
        }
        mDataBytes += length;
        return place->second;
    }

    //! Points a tensor at its bytes in the data file: location, offset and length first, then the other keys.
    void setDataFilePlace(onnx::TensorProto& tensor, std::uint64_t offset, std::uint64_t length) const
    {
        google::protobuf::RepeatedPtrField<onnx::StringStringEntryProto> kept;
        for (onnx::StringStringEntryProto& entry : *tensor.mutable_external_data())
        {
            if (entry.key() != "location" && entry.key() != "offset" && entry.key() != "length")
            {
                *kept.Add() = std::move(entry);
            }
        }
        tensor.clear_external_data();
        const std::pair<const char*, std::string> place[] = {
            {"location", mDataLocation}, {"offset", std::to_string(offset)}, {"length", std::to_string(length)}};
        for (const auto& [key, value] : place)
        {
            onnx::StringStringEntryProto* entry = tensor.add_external_data();
            entry->set_key(key);
            entry->set_value(value);
        }
        for (onnx::StringStringEntryProto& entry : kept)
        {
            *tensor.add_external_data() = std::move(entry);
        }
        tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    }

    //! A location kept as it is (its file missing or outside the model's folder) must not name what this writer
    //! writes: beside the written model it would lead to the model itself or its new data file, whose bytes a reader
    //! would then take for the tensor's.
    void refuseKeptLocationOnOwnFiles(const std::string& location, const std::string& tensor, std::uint64_t at)
    {
        if (location.empty() || fs::path(location).is_absolute() || mSink.path().empty())
        {
            return;
        }
        const fs::path written = fs::path(mSink.path()).lexically_normal();
        const fs::path named = (written.parent_path() / location).lexically_normal();
        const std::string data =
            mSink.dataPath().empty() ? std::string() : fs::path(mSink.dataPath()).lexically_normal().string();
        const std::string why = "external data location " + inQuotes(location) + " of tensor " + inQuotes(tensor) +
                                " is not in the model's folder, and beside the written model it names ";
        const std::string remedy = ": give the tensor its data file, or write the model under another name";
        if (named == written)
        {
            mSource->fail(at, why + "the written model itself" + remedy);
        }
        if (!data.empty() && named.string() == data && mKeptOnDataFile.empty())
        {
            mKeptOnDataFile = why + "its new data file" + remedy;
        }
    }

    //! Moves an external tensor's data to the sink's data file. True when the tensor changed (its file is copied);
    //! false when it keeps its location (no data file, no location, a missing file or one outside the folder).
    bool moveToDataFile(onnx::TensorProto& tensor, std::uint64_t at)
    {
        const onnx::StringStringEntryProto* location = nullptr;
        const onnx::StringStringEntryProto* offsetEntry = nullptr;
        const onnx::StringStringEntryProto* lengthEntry = nullptr;
        for (const onnx::StringStringEntryProto& entry : tensor.external_data())
        {
            if (entry.key() == "location")
            {
                location = &entry;
            }
            else if (entry.key() == "offset")
            {
                offsetEntry = &entry;
            }
            else if (entry.key() == "length")
            {
                lengthEntry = &entry;
            }
        }
        if (location == nullptr)
        {
            return false;
        }
        const std::size_t fileIndex = externalFile(location->value(), tensor.name(), at);
        const ExternalFile& file = mExternalFiles[fileIndex];
        if (file.fate != ExternalFile::Fate::kCopied || mDataLocation.empty())
        {
            refuseKeptLocationOnOwnFiles(location->value(), tensor.name(), at);
            return false;
        }
        // The range checked as every reader checks it (parsers/external_data_ref.h): numbers, inside the file, and
        // the tensor's size from its dims and type where that is known (a cut file is never copied short).
        ExternalDataEntries entries;
        entries.tensor = tensor.name();
        entries.location = location->value();
        if (offsetEntry != nullptr)
        {
            externalNumber(*offsetEntry, tensor.name(), at);
            entries.offset = offsetEntry->value();
        }
        if (lengthEntry != nullptr)
        {
            externalNumber(*lengthEntry, tensor.name(), at);
            entries.length = lengthEntry->value();
        }
        entries.dataType = tensor.data_type();
        entries.dims.assign(tensor.dims().begin(), tensor.dims().end());
        const auto [offset, length] = checkedExternalRange(mSourcePath, file.target.string(), file.size, entries);
        setDataFilePlace(tensor, placeData(fileIndex, offset, length), length);
        ++mResult.externalTensors;
        return true;
    }

    //! The graph.initializer field of a new or replacing tensor whose data goes to the data file.
    std::string externalInitializer(const NewInitializer& tensor, const std::string& where)
    {
        onnx::TensorProto proto = initializerProto(tensor, where);
        proto.clear_raw_data();
        setDataFilePlace(proto, mDataBytes, tensor.rawData.size());
        mDataPieces.push_back({0, 0, tensor.rawData.size(), tensor.rawData});
        mDataBytes += tensor.rawData.size();
        ++mResult.externalTensors;
        return lengthDelimitedField(kGraphInitializer, proto.SerializeAsString());
    }

    //! The replacement of an initializer whose original lies in a copied external file: its data goes to the data
    //! file too, so the tensor stays external. Empty when the replacement stays inline.
    std::string externalReplacement(const TensorHeader& original, const NewInitializer& tensor, std::uint64_t at)
    {
        if (!original.hasLocation || mDataLocation.empty() ||
            mExternalFiles[externalFile(original.location, original.name, at)].fate != ExternalFile::Fate::kCopied)
        {
            return {};
        }
        return externalInitializer(tensor, "replaceInitializers");
    }

    // ----- pass 1 ---------------------------------------------------------------------------------------------
    // ----- the model's own fields -----------------------------------------------------------------------------
    //! ModelEdits::defaultOpset: the opset_import entry of the default domain ("" or "ai.onnx") re-encoded with the
    //! new version (an older one only: a newer opset is never lowered), or one added at the end of the model when
    //! the model has none; with the opset raised, an ir_version below 7 is raised to 7.
    void planTheDefaultOpset(std::int64_t version)
    {
        WireSource& source = *mSource;
        std::uint64_t position = 0;
        WireField field;
        bool found = false;
        std::optional<Splice> irRaise;
        while (source.nextField(position, source.size(), field))
        {
            if (field.number == kModelIrVersion && field.wireType == kVarint && field.value < kIrVersionOfOpset13)
            {
                // IR 7 is the first to know opset 13; before IR 4 every initializer also had to be a graph input
                // (mnist.onnx of ../shared/realdata, IR 3: the checker refuses a new scale that is not one).
                std::string raised;
                appendVarint(raised, (static_cast<std::uint64_t>(kModelIrVersion) << 3) | kVarint);
                appendVarint(raised, kIrVersionOfOpset13);
                irRaise = Splice{field.tagOffset, field.end, 0, std::move(raised)};
                continue;
            }
            if (field.number != kModelOpsetImport || field.wireType != kLengthDelimited)
            {
                continue;
            }
            std::string domain;
            std::uint64_t oldVersion = 0;
            std::uint64_t inner = field.payloadOffset;
            WireField entry;
            while (source.nextField(inner, field.end, entry))
            {
                if (entry.number == kOpsetDomain && entry.wireType == kLengthDelimited)
                {
                    domain = source.read(entry.payloadOffset, entry.payloadLength);
                }
                else if (entry.number == kOpsetVersion && entry.wireType == kVarint)
                {
                    oldVersion = entry.value;
                }
            }
            if (!isStandardDomain(domain))
            {
                continue;
            }
            found = true;
            if (oldVersion >= static_cast<std::uint64_t>(version))
            {
                continue;
            }
            mModelSplices.push_back({field.tagOffset, field.end, 0, opsetImportField(domain, version)});
        }
        if (!found)
        {
            mModelSplices.push_back({source.size(), source.size(), 0, opsetImportField("", version)});
        }
        mResult.opsetRaised = !mModelSplices.empty();
        if (mResult.opsetRaised && irRaise)
        {
            // in file order with the opset entries (the IR version may come before or after them)
            mModelSplices.insert(std::upper_bound(mModelSplices.begin(), mModelSplices.end(), irRaise->offset,
                                                  [](std::uint64_t offset, const Splice& splice)
                                                  { return offset < splice.offset; }),
                                 std::move(*irRaise));
        }
    }

    static std::string opsetImportField(const std::string& domain, std::int64_t version)
    {
        std::string entry;
        if (!domain.empty())
        {
            entry = lengthDelimitedField(kOpsetDomain, domain);
        }
        appendVarint(entry, (static_cast<std::uint64_t>(kOpsetVersion) << 3) | kVarint);
        appendVarint(entry, static_cast<std::uint64_t>(version));
        return lengthDelimitedField(kModelOpsetImport, entry);
    }

    //! Copies the model's bytes in [from, to) outside the graph, with the opset entries replaced.
    void copyModelFields(BufferedOutput& out, std::uint64_t from, std::uint64_t to)
    {
        const auto source = [this](std::uint64_t offset, char* data, std::uint64_t length)
        { mSource->readInto(offset, data, length); };
        std::uint64_t position = from;
        for (const Splice& splice : mModelSplices)
        {
            if (splice.offset < from || splice.offset > to || (splice.offset == to && to != mSource->size()))
            {
                continue;
            }
            out.copy(source, position, splice.offset);
            out.put(splice.bytes);
            position = splice.end;
        }
        out.copy(source, position, to);
    }

    void scanGraph()
    {
        WireSource& source = *mSource;
        mCheckNames = !mNewTensorNames.empty() || !mNewNodeNames.empty();
        // Locations are looked at when their data moves to the sink's data file, or to refuse writing over a data file.
        mLookAtExternalData = !mDataLocation.empty() || mOutputExists;
        mLastNodeEnd = mGraph.payloadOffset;
        std::uint64_t position = mGraph.payloadOffset;
        WireField field;
        while (source.nextField(position, mGraph.end, field))
        {
            switch (field.number)
            {
            case kGraphNode:
                scanNode(field);
                break;
            case kGraphInitializer:
                scanInitializer(field);
                break;
            case kGraphInput:
                scanGraphInput(field);
                break;
            case kGraphOutput:
                scanGraphOutput(field);
                break;
            case kGraphValueInfo:
                scanValueInfo(field);
                break;
            default:
                break;
            }
            source.setContext(nullptr);
        }
    }

    void scanNode(const WireField& field)
    {
        WireSource& source = *mSource;
        const std::uint64_t index = mNodeCount++;
        source.setContext("graph.node", index);
        source.expectLengthDelimited(field, "graph.node");
        if (mNodeCount > mOptions.limits.maxGraphNodes)
        {
            source.fail(field.tagOffset, "graph has more than " + std::to_string(mOptions.limits.maxGraphNodes) +
                                             " nodes, over the graph node limit (raise it with --max-graph-nodes)");
        }
        for (; mNextInsert < mInserts.size() && mInserts[mNextInsert].beforeNode == index; ++mNextInsert)
        {
            addSplice(field.tagOffset, field.tagOffset, kRankNewNode, std::move(mInserts[mNextInsert].bytes));
            ++mResult.nodesInserted;
        }
        mLastNodeEnd = field.end;
        if (std::binary_search(mRemovedNodes.begin(), mRemovedNodes.end(), index))
        {
            addSplice(field.tagOffset, field.end, kRankEdit, {});
            ++mResult.nodesRemoved;
            return;
        }
        const auto rewire = mRewires.find(static_cast<std::uint32_t>(index));
        const auto outputRename = mOutputRenames.find(static_cast<std::uint32_t>(index));
        if (!mCheckNames && !mLookAtExternalData && rewire == mRewires.end() && outputRename == mOutputRenames.end())
        {
            return;
        }
        const NodeHeader header = decodeNodeHeader(source, field,
                                                   [&](std::uint32_t number, std::string_view name)
                                                   {
                                                       if (mCheckNames)
                                                       {
                                                           checkExistingNodeName(number, name, index);
                                                       }
                                                   });
        const bool externalValue =
            mLookAtExternalData && header.isConstant() && field.payloadLength <= kMaxReencodedBytes;
        if (rewire == mRewires.end() && outputRename == mOutputRenames.end() && !externalValue)
        {
            return;
        }
        onnx::NodeProto node;
        if (!node.ParseFromString(source.read(field.payloadOffset, field.payloadLength)))
        {
            source.fail(field.tagOffset, "invalid NodeProto");
        }
        bool changed = false;
        if (rewire != mRewires.end())
        {
            for (const ModelEdits::Rewire* edit : rewire->second)
            {
                if (edit->inputSlot >= static_cast<std::uint32_t>(node.input_size()))
                {
                    invalidEdit("rewireInputs: node " + std::to_string(index) + " (" + inQuotes(node.name()) + ", " +
                                node.op_type() + ") has " + std::to_string(node.input_size()) +
                                " input(s), no input slot " + std::to_string(edit->inputSlot));
                }
                node.set_input(static_cast<int>(edit->inputSlot), edit->newInput);
            }
            ++mResult.nodesRewired;
            mRewiresFound += rewire->second.size();
            changed = true;
        }
        if (outputRename != mOutputRenames.end())
        {
            for (const ModelEdits::RenameNodeOutput* edit : outputRename->second)
            {
                if (edit->outputSlot >= static_cast<std::uint32_t>(node.output_size()))
                {
                    invalidEdit("renameNodeOutputs: node " + std::to_string(index) + " (" + inQuotes(node.name()) +
                                ", " + node.op_type() + ") has " + std::to_string(node.output_size()) +
                                " output(s), no output slot " + std::to_string(edit->outputSlot));
                }
                node.set_output(static_cast<int>(edit->outputSlot), edit->newOutput);
            }
            ++mResult.nodesRewired;
            mOutputRenamesFound += outputRename->second.size();
            changed = true;
        }
        if (externalValue)
        {
            for (onnx::AttributeProto& attribute : *node.mutable_attribute())
            {
                const bool tensorChanged = attribute.has_t() && moveToDataFile(*attribute.mutable_t(), field.tagOffset);
                changed = changed || tensorChanged;
            }
        }
        if (changed)
        {
            addSplice(field.tagOffset, field.end, kRankEdit,
                      lengthDelimitedField(kGraphNode, node.SerializeAsString()));
        }
    }

    void checkExistingNodeName(std::uint32_t number, std::string_view name, std::uint64_t index) const
    {
        if (name.empty())
        {
            return;
        }
        if (number == kNodeName && mNewNodeNames.find(name) != mNewNodeNames.end())
        {
            invalidEdit("insertNodes: node name " + inQuotes(name) + " is already used by node " +
                        std::to_string(index));
        }
        if (number == kNodeOutput && mNewTensorNames.find(name) != mNewTensorNames.end())
        {
            invalidEdit("new tensor " + inQuotes(name) + " is already produced by node " + std::to_string(index));
        }
    }

    void scanInitializer(const WireField& field)
    {
        WireSource& source = *mSource;
        source.setContext("graph.initializer", mInitializerCount++);
        source.expectLengthDelimited(field, "graph.initializer");
        mLastInitializerEnd = field.end;
        if (!mCheckNames && !mLookAtExternalData && mReplacements.empty() && mRemovedInitializers.empty())
        {
            return;
        }
        const TensorHeader header = decodeTensorHeader(source, field);
        if (auto removed = mRemovedInitializers.find(header.name); removed != mRemovedInitializers.end())
        {
            addSplice(field.tagOffset, field.end, kRankEdit, {});
            ++mResult.initializersRemoved;
            removed->second = true;
            return;
        }
        if (mCheckNames && mNewTensorNames.find(header.name) != mNewTensorNames.end())
        {
            invalidEdit("new tensor " + inQuotes(header.name) + " is already an initializer of the model");
        }
        if (auto replacement = mReplacements.find(header.name); replacement != mReplacements.end())
        {
            if (replacement->second.found)
            {
                source.fail(field.tagOffset, "initializer " + inQuotes(header.name) +
                                                 " is defined more than once; it cannot be replaced");
            }
            const std::string external = externalReplacement(header, *replacement->second.tensor, field.tagOffset);
            addSplice(field.tagOffset, field.end, kRankEdit, external.empty() ? replacement->second.bytes : external);
            ++mResult.initializersReplaced;
            replacement->second.found = true;
            return;
        }
        if (!mLookAtExternalData || !header.hasLocation)
        {
            return;
        }
        if (field.payloadLength > kMaxReencodedBytes)
        {
            mNotes.push_back("tensor " + inQuotes(header.name) + " has an external data location but also " +
                             std::to_string(header.dataBytes) + " bytes of inline data: its location is kept");
            return;
        }
        onnx::TensorProto tensor;
        if (!tensor.ParseFromString(source.read(field.payloadOffset, field.payloadLength)))
        {
            source.fail(field.tagOffset, "invalid TensorProto");
        }
        if (moveToDataFile(tensor, field.tagOffset))
        {
            addSplice(field.tagOffset, field.end, kRankEdit,
                      lengthDelimitedField(kGraphInitializer, tensor.SerializeAsString()));
        }
    }

    void scanGraphInput(const WireField& field)
    {
        if (!mCheckNames && mRemovedInitializers.empty())
        {
            return;
        }
        mSource->setContext("graph.input");
        mSource->expectLengthDelimited(field, "graph.input");
        const std::string name = decodeValueInfoName(*mSource, field);
        if (mCheckNames && mNewTensorNames.find(name) != mNewTensorNames.end())
        {
            invalidEdit("new tensor " + inQuotes(name) + " is already a graph input");
        }
        if (mRemovedInitializers.count(name) > 0)
        {
            mRemovedButDeclared.push_back(name);
        }
    }

    //! A value_info entry of a tensor whose type an edit changed is left out (the type is inferred again).
    void scanValueInfo(const WireField& field)
    {
        if (mDroppedValueInfos.empty())
        {
            return;
        }
        mSource->setContext("graph.value_info");
        mSource->expectLengthDelimited(field, "graph.value_info");
        if (mDroppedValueInfos.count(decodeValueInfoName(*mSource, field)) > 0)
        {
            addSplice(field.tagOffset, field.end, kRankEdit, {});
            ++mResult.valueInfosDropped;
        }
    }

    void scanGraphOutput(const WireField& field)
    {
        if (mRenames.empty())
        {
            return;
        }
        WireSource& source = *mSource;
        source.setContext("graph.output");
        source.expectLengthDelimited(field, "graph.output");
        const auto rename = mRenames.find(decodeValueInfoName(source, field));
        if (rename == mRenames.end())
        {
            return;
        }
        onnx::ValueInfoProto valueInfo;
        if (!valueInfo.ParseFromString(source.read(field.payloadOffset, field.payloadLength)))
        {
            source.fail(field.tagOffset, "invalid ValueInfoProto");
        }
        valueInfo.set_name(rename->second);
        addSplice(field.tagOffset, field.end, kRankEdit,
                  lengthDelimitedField(kGraphOutput, valueInfo.SerializeAsString()));
        ++mResult.graphOutputsRenamed;
        mRenamesFound.insert(rename->first);
    }

    void addSplice(std::uint64_t offset, std::uint64_t end, int rank, std::string bytes)
    {
        mSplices.push_back({offset, end, rank, std::move(bytes)});
    }

    //! Checks the edits that name things pass 1 looked for, and places the nodes and initializers that go last.
    void finishEdits()
    {
        const std::string count = " (the model has " + std::to_string(mNodeCount) + " nodes)";
        if (!mRemovedNodes.empty() && mRemovedNodes.back() >= mNodeCount)
        {
            invalidEdit("removeNodes: node " + std::to_string(mRemovedNodes.back()) + " is out of range" + count);
        }
        for (; mNextInsert < mInserts.size(); ++mNextInsert)
        {
            if (mInserts[mNextInsert].beforeNode != mNodeCount)
            {
                invalidEdit("insertNodes: position " + std::to_string(mInserts[mNextInsert].beforeNode) +
                            " is out of range" + count);
            }
            addSplice(mLastNodeEnd, mLastNodeEnd, kRankNewNode, std::move(mInserts[mNextInsert].bytes));
            ++mResult.nodesInserted;
        }
        if (mRewiresFound != mEdits.rewireInputs.size())
        {
            for (const auto& [node, edits] : mRewires)
            {
                if (node >= mNodeCount)
                {
                    invalidEdit("rewireInputs: node " + std::to_string(node) + " is out of range" + count);
                }
            }
        }
        if (mOutputRenamesFound != mEdits.renameNodeOutputs.size())
        {
            for (const auto& [node, edits] : mOutputRenames)
            {
                if (node >= mNodeCount)
                {
                    invalidEdit("renameNodeOutputs: node " + std::to_string(node) + " is out of range" + count);
                }
            }
        }
        for (const auto& [name, found] : mRemovedInitializers)
        {
            if (!found)
            {
                invalidEdit("removeInitializers: the model has no initializer " + inQuotes(name));
            }
        }
        for (const auto& [name, replacement] : mReplacements)
        {
            if (!replacement.found)
            {
                invalidEdit("replaceInitializers: the model has no initializer " + inQuotes(name));
            }
        }
        for (const auto& [from, to] : mRenames)
        {
            if (mRenamesFound.count(from) == 0)
            {
                invalidEdit("renameGraphOutputs: the model has no graph output " + inQuotes(from));
            }
        }
        // New initializers follow the last one; without any, they follow the nodes. In a model whose weights are
        // copied to a data file, those of kExternalThresholdBytes or more go there too, as ONNX's own conversion puts
        // them; in a model without one they stay inline (no data file appears).
        const std::uint64_t initializersEnd = mInitializerCount > 0 ? mLastInitializerEnd : mLastNodeEnd;
        const bool dataFile = !mDataPieces.empty();
        for (std::size_t i = 0; i < mAddedInitializers.size(); ++i)
        {
            const NewInitializer& tensor = mEdits.addInitializers[i];
            std::string bytes = dataFile && tensor.rawData.size() >= kExternalThresholdBytes
                                    ? externalInitializer(tensor, "addInitializers[" + std::to_string(i) + "]")
                                    : std::move(mAddedInitializers[i]);
            addSplice(initializersEnd, initializersEnd, kRankNewInitializer, std::move(bytes));
            ++mResult.initializersAdded;
        }
        std::stable_sort(mSplices.begin(), mSplices.end(),
                         [](const Splice& a, const Splice& b)
                         { return a.offset != b.offset ? a.offset < b.offset : a.rank < b.rank; });
    }

    std::uint64_t plannedOutputBytes()
    {
        mNewGraphLength = mGraph.end - mGraph.payloadOffset;
        for (const Splice& splice : mSplices)
        {
            mNewGraphLength += splice.bytes.size();
            mNewGraphLength -= splice.end - splice.offset;
        }
        const std::uint64_t oldHeader = mGraph.payloadOffset - mGraph.tagOffset;
        const std::uint64_t newHeader = mGraph.lengthOffset - mGraph.tagOffset + varintSize(mNewGraphLength);
        std::uint64_t modelFields = mSource->size() - (mGraph.end - mGraph.payloadOffset) - oldHeader;
        for (const Splice& splice : mModelSplices)
        {
            modelFields += splice.bytes.size();
            modelFields -= splice.end - splice.offset;
        }
        return modelFields + newHeader + mNewGraphLength;
    }

    // ----- pass 2 ---------------------------------------------------------------------------------------------
    void emit(std::uint64_t plannedBytes)
    {
        BufferedOutput out(mSink, &ModelSink::write, std::max<std::size_t>(mOptions.bufferBytes, 4096));
        const auto source = [this](std::uint64_t offset, char* data, std::uint64_t length)
        { mSource->readInto(offset, data, length); };
        copyModelFields(out, 0, mGraph.tagOffset);
        if (mNewGraphLength == mGraph.end - mGraph.payloadOffset)
        {
            // the length prefix as it was, however it was encoded
            out.copy(source, mGraph.tagOffset, mGraph.payloadOffset);
        }
        else
        {
            out.copy(source, mGraph.tagOffset, mGraph.lengthOffset);
            std::string length;
            appendVarint(length, mNewGraphLength);
            out.put(length);
        }
        std::uint64_t position = mGraph.payloadOffset;
        for (const Splice& splice : mSplices)
        {
            out.copy(source, position, splice.offset);
            out.put(splice.bytes);
            position = splice.end;
        }
        out.copy(source, position, mGraph.end);
        copyModelFields(out, mGraph.end, mSource->size());
        out.flush();
        if (out.written() != plannedBytes)
        {
            throw std::logic_error("model writer: wrote " + std::to_string(out.written()) + " bytes, planned " +
                                   std::to_string(plannedBytes));
        }
        mResult.outputBytes = out.written();
        mResult.copiedBytes = out.copied();
        mResult.encodedBytes = out.encoded();
    }

    //! The data file: the external tensors' bytes in the order pass 1 placed them, each source range read in chunks.
    void emitData()
    {
        if (mDataPieces.empty())
        {
            return;
        }
        BufferedOutput out(mSink, &ModelSink::writeData, std::max<std::size_t>(mOptions.bufferBytes, 4096));
        for (const DataPiece& piece : mDataPieces)
        {
            if (!piece.bytes.empty() || piece.length == 0)
            {
                out.put(piece.bytes);
                continue;
            }
            const ExternalFile& file = mExternalFiles[piece.file];
            out.copy([&file](std::uint64_t offset, char* data, std::uint64_t length)
                     { readExternal(file, offset, data, length); },
                     piece.offset, piece.offset + piece.length);
        }
        out.flush();
        if (out.written() != mDataBytes)
        {
            throw std::logic_error("model writer: wrote " + std::to_string(out.written()) + " bytes of data, planned " +
                                   std::to_string(mDataBytes));
        }
        for (const ExternalFile& file : mExternalFiles)
        {
            struct stat info
            {
            };
            if (file.fd >= 0 &&
                (::fstat(file.fd, &info) != 0 || static_cast<std::uint64_t>(info.st_size) != file.size ||
                 info.st_mtim.tv_sec != file.modified.tv_sec || info.st_mtim.tv_nsec != file.modified.tv_nsec))
            {
                failPath(file.target.string(), "changed while the edited model's data file was being written");
            }
        }
        mResult.dataBytes = mDataBytes;
    }

    static void readExternal(const ExternalFile& file, std::uint64_t offset, char* data, std::uint64_t length)
    {
        std::uint64_t done = 0;
        while (done < length)
        {
            const ssize_t n = ::pread(file.fd, data + done, length - done, static_cast<off_t>(offset + done));
            if (n < 0 && errno == EINTR)
            {
                continue;
            }
            if (n <= 0)
            {
                failPath(file.target.string(), n < 0 ? std::string("read failed: ") + std::strerror(errno)
                                                     : std::string("file ended early (changed while being read?)"));
            }
            done += static_cast<std::uint64_t>(n);
        }
    }

    void writeNotes()
    {
        for (const auto& [location, index] : mFileByLocation)
        {
            const ExternalFile& file = mExternalFiles[index];
            if (file.fate != ExternalFile::Fate::kMissing)
            {
                mResult.sourceDataFiles.push_back(file.target.string());
            }
            const std::string tensors =
                std::to_string(file.tensors) + " tensor(s) such as " + inQuotes(file.firstTensor);
            if (file.fate == ExternalFile::Fate::kMissing)
            {
                mResult.notes.push_back("external data file " + inQuotes(location) + " is missing: reference kept (" +
                                        tensors +
                                        " keep the location as it was, which the output reads from its own "
                                        "folder)");
            }
            else if (file.fate == ExternalFile::Fate::kOutside)
            {
                mResult.notes.push_back("external data location " + inQuotes(location) + " " + file.outsideWhy +
                                        ": only files inside the input model's folder are read, so its bytes are not "
                                        "copied; reference kept (" +
                                        tensors + "), which ONNX's loader refuses");
            }
        }
        for (const std::string& name : mRemovedButDeclared)
        {
            mResult.notes.push_back("initializer " + inQuotes(name) +
                                    " was removed but is still declared as a graph input: it becomes an input to feed");
        }
        for (std::string& note : mNotes)
        {
            mResult.notes.push_back(std::move(note));
        }
    }

    struct Insert
    {
        std::uint32_t beforeNode = 0;
        std::string bytes;
    };
    struct Replacement
    {
        std::string bytes;
        const NewInitializer* tensor = nullptr;
        bool found = false;
    };

    const std::string& mSourcePath;
    const ModelEdits& mEdits;
    ModelSink& mSink;
    const ModelWriteOptions& mOptions;
    ModelWriteResult mResult;
    WireSource* mSource = nullptr;
    GraphLocation mGraph;

    // The edits, validated and encoded.
    std::vector<std::uint32_t> mRemovedNodes; // sorted
    std::vector<Insert> mInserts;             // stable-sorted by position
    std::size_t mNextInsert = 0;
    std::map<std::uint32_t, std::vector<const ModelEdits::Rewire*>> mRewires;
    std::size_t mRewiresFound = 0;
    std::map<std::uint32_t, std::vector<const ModelEdits::RenameNodeOutput*>> mOutputRenames;
    std::size_t mOutputRenamesFound = 0;
    StringMap<std::string> mRenames;
    StringSet mRenamesFound;
    StringMap<bool> mRemovedInitializers; // name -> found
    StringSet mDroppedValueInfos;
    StringMap<Replacement> mReplacements;
    std::vector<std::string> mAddedInitializers;
    StringSet mNewNodeNames;
    StringSet mNewTensorNames;

    // Pass 1.
    bool mCheckNames = false;
    bool mLookAtExternalData = false;
    bool mOutputExists = false;
    fs::path mSourceFolder;
    const std::string mDataLocation; //!< the sink's: where external tensors go (empty: they stay)
    std::vector<ExternalFile> mExternalFiles;
    std::map<std::string, std::size_t> mFileByLocation; //!< index in mExternalFiles by original location
    //! Why a kept location (its file missing or outside the folder) names the data file this writer writes: an error
    //! once a data file is written at all (a model whose data are all missing writes none).
    std::string mKeptOnDataFile;
    std::vector<DataPiece> mDataPieces;                                                     //!< the data file, in order
    std::map<std::tuple<std::size_t, std::uint64_t, std::uint64_t>, std::uint64_t> mPlaced; //!< range -> offset
    std::uint64_t mDataBytes = 0;
    std::uint64_t mNodeCount = 0;
    std::uint64_t mInitializerCount = 0;
    std::uint64_t mLastNodeEnd = 0;
    std::uint64_t mLastInitializerEnd = 0;
    std::vector<Splice> mSplices;
    std::vector<Splice> mModelSplices; //!< outside the graph: the opset_import entries (sorted by offset)
    std::uint64_t mNewGraphLength = 0;
    std::vector<std::string> mRemovedButDeclared;
    std::vector<std::string> mNotes;
};

} // namespace

// ----- entry points -----------------------------------------------------------------------------------------------

std::string rawFloatData(float value)
{
    std::string bytes(sizeof(float), '\0');
    std::memcpy(bytes.data(), &value, sizeof(float)); // ONNX raw data is little-endian, as are the supported hosts
    return bytes;
}

ModelWriteResult writeEditedModel(const std::string& sourcePath, const ModelEdits& edits, ModelSink& sink,
                                  const ModelWriteOptions& options)
{
    try
    {
        EditedModelWriter writer(sourcePath, edits, sink, options);
        return writer.run();
    }
    catch (...)
    {
        sink.abort();
        throw;
    }
}

} // namespace qdq
