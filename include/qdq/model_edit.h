// Applies graph edits (remove, insert and rewire nodes; add, replace and remove initializers; rename graph outputs)
// to an ONNX model file and writes the result, streaming: the source is walked at the protobuf wire level, every field
// that is not edited is copied byte for byte (weights in 1 MiB chunks, never held whole), and only the edited nodes
// and small tensors are encoded anew. A model written with no edits and without external data is byte-identical to
// its source; one with external data gets its own data file beside it (see writeEditedModel).
#pragma once

#include "qdq/interrupt_cleanup.h"
#include "qdq/limits.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qdq
{

//! One attribute of a new node. Exactly one of i, f and s is set, or none of them: then it is an INTS attribute
//! holding `ints` (possibly empty).
struct NewAttribute
{
    std::string name;
    std::optional<std::int64_t> i;
    std::optional<float> f;
    std::vector<std::int64_t> ints;
    std::optional<std::string> s;

    static NewAttribute ofInt(std::string name, std::int64_t value) { return {std::move(name), value, {}, {}, {}}; }
    static NewAttribute ofFloat(std::string name, float value) { return {std::move(name), {}, value, {}, {}}; }
    static NewAttribute ofInts(std::string name, std::vector<std::int64_t> values)
    {
        return {std::move(name), {}, {}, std::move(values), {}};
    }
    static NewAttribute ofString(std::string name, std::string value)
    {
        return {std::move(name), {}, {}, {}, std::move(value)};
    }
};

//! A node to insert. name, opType and at least one output are required; domain empty is the default ONNX domain;
//! an empty input name is an omitted optional input.
struct NewNode
{
    std::string name;
    std::string opType;
    std::string domain;
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
    std::vector<NewAttribute> attributes;
    std::string docString;
};

//! A small tensor to add or to put in place of an existing initializer (scales, zero points). dataType is an ONNX
//! TensorProto.DataType value (1 FLOAT, 2 UINT8, 3 INT8, 7 INT64, 10 FLOAT16, ...); rawData holds the elements
//! little-endian, exactly as many bytes as dims and dataType call for (STRING tensors are not supported).
struct NewInitializer
{
    std::string name;
    std::int32_t dataType = 0;
    std::vector<std::int64_t> dims; //!< empty: a scalar
    std::string rawData;
};

//! The raw data of one FLOAT element for NewInitializer::rawData (little-endian, as ONNX stores it).
std::string rawFloatData(float value);

//! The edits to apply. Node positions are indices of the ORIGINAL model's graph.node entries (0-based, in file
//! order: the indices of OnnxGraph::nodes). Edits that contradict the model or each other are programming errors of
//! the caller and make writeEditedModel throw std::invalid_argument naming the edit: a node index out of range or
//! given twice, a rewired input slot the node does not have, a rewire of a removed node, an output slot a renamed
//! node does not have or a rename of a removed node, replacing or removing an
//! initializer that does not exist, renaming a graph output that does not exist, a new node, node output or
//! initializer name that is used twice among the new ones or already names a node or tensor of the model (names
//! of removed nodes and initializers may be reused), a malformed attribute or tensor. Removing a node does not
//! touch its outputs' consumers, and removing an initializer does not touch the nodes that read it: rewiring them is
//! the caller's job.
struct ModelEdits
{
    //! Original node indices to leave out of the output.
    std::vector<std::uint32_t> removeNodes;

    //! A node to insert before original node beforeNode (the node count: after the last node).
    struct Insert
    {
        std::uint32_t beforeNode = 0;
        NewNode node;
    };
    //! Nodes to insert; several at one position keep their order in this vector.
    std::vector<Insert> insertNodes;

    //! Sets input inputSlot of original node `node` to newInput.
    struct Rewire
    {
        std::uint32_t node = 0;
        std::uint32_t inputSlot = 0;
        std::string newInput;
    };
    std::vector<Rewire> rewireInputs;

    //! Sets output outputSlot of original node `node` to newOutput: a node takes over a tensor name, such as a network
    //! output whose DequantizeLinear is removed. The old name's readers are the caller's to rewire; newOutput must not
    //! be written by another node that stays.
    struct RenameNodeOutput
    {
        std::uint32_t node = 0;
        std::uint32_t outputSlot = 0;
        std::string newOutput;
    };
    std::vector<RenameNodeOutput> renameNodeOutputs;

    //! Renames a graph output (its graph.output ValueInfoProto keeps its type and shape).
    struct RenameOutput
    {
        std::string from;
        std::string to;
    };
    std::vector<RenameOutput> renameGraphOutputs;

    //! New initializers, written after the last original initializer.
    std::vector<NewInitializer> addInitializers;
    //! Initializers whose whole TensorProto is replaced in place (same name as an original initializer).
    std::vector<NewInitializer> replaceInitializers;
    //! Names of original initializers to leave out.
    std::vector<std::string> removeInitializers;
    //! Tensors whose graph.value_info entries are left out: an edit changed their element type (a QuantizeLinear made
    //! symmetric INT8 writes int8 where the exporter declared uint8; ONNX Runtime refuses the declared type).
    std::vector<std::string> dropValueInfos;
    //! The default ONNX domain's opset the output declares, when it is to be raised (per-channel Q/DQ needs 13); the
    //! caller has rewritten the nodes whose form the newer opset changed. Other domains keep theirs; an ir_version
    //! below 7 (the first to know opset 13) is raised to 7.
    std::optional<std::int64_t> defaultOpset;

    //! True when there is nothing to apply.
    bool empty() const
    {
        return removeNodes.empty() && insertNodes.empty() && rewireInputs.empty() && renameNodeOutputs.empty() &&
               renameGraphOutputs.empty() && addInitializers.empty() && replaceInitializers.empty() &&
               removeInitializers.empty() && dropValueInfos.empty() && !defaultOpset;
    }
};

//! Where the edited model goes, and the external data file beside it. writeEditedModel calls begin(), write() any
//! number of times, then (only for a model with external data to copy) beginData() and writeData() any number of
//! times, then commit(); on any failure it calls abort() instead.
class ModelSink
{
public:
    virtual ~ModelSink() = default;

    //! The file the model ends in, or empty for a sink that writes no file. The writer refuses a file that is the
    //! source model itself or an external data file the model references.
    virtual std::string path() const = 0;
    //! The external data file's name as the model's tensors give it in their `location` (a bare file name, found in
    //! the model's own folder: "fixed.onnx.data"). Empty: the sink takes no data file, and external tensors keep
    //! their locations as they are.
    virtual std::string dataLocation() const { return {}; }
    //! The data file's path, or empty for a sink that writes no file: the writer refuses one that is the source model
    //! or one of its data files.
    virtual std::string dataPath() const { return {}; }

    //! Starts a write. Throws InputError when the output cannot be created.
    virtual void begin() = 0;
    //! Appends bytes. Throws InputError when they cannot be written.
    virtual void write(std::string_view bytes) = 0;
    //! Starts the data file (after the model's bytes). Throws InputError when it cannot be created.
    virtual void beginData() {}
    //! Appends bytes to the data file.
    virtual void writeData(std::string_view /*bytes*/) {}
    //! Everything was written: makes it the output (the data file first, then the model). Throws InputError when that
    //! fails (then nothing is left).
    virtual void commit() = 0;
    //! Drops whatever begin(), write(), beginData() and writeData() made. Never throws.
    virtual void abort() noexcept = 0;
};

//! Writes a model (or any output file) atomically: into "<output>.tmp-XXXXXX" in the output's folder, renamed onto the
//! output only when everything succeeded, so a failed write never leaves a partial file (the temporary file is
//! removed). begin() refuses, with an InputError naming the path, an existing output unless `force`, an output that is
//! a folder, and a folder that is missing or cannot be written. The rename does not replace an output created by
//! someone else in the meantime unless `force`. Nothing is fsync'ed: the rename makes the file appear whole to
//! other processes, not durable across a power loss.
//!
//! The data file is "<output>.data" (location "<output's file name>.data"), written the same way under
//! "<output>.data.tmp-XXXXXX" and refused in beginData() on the same terms as the output. commit() renames it into
//! place before the model, and removes it again when the model's rename fails. Two renames are not one: a crash
//! between them leaves the new data file beside the previous model (never a model without its data).
class FileModelSink : public ModelSink
{
public:
    explicit FileModelSink(std::string outputPath, bool force = false);
    ~FileModelSink() override;
    FileModelSink(const FileModelSink&) = delete;
    FileModelSink& operator=(const FileModelSink&) = delete;

    //! The output's folder ("." for a bare file name).
    std::filesystem::path folder() const;
    std::string path() const override { return mPath; }
    std::string dataLocation() const override;
    std::string dataPath() const override { return mPath + ".data"; }
    void begin() override;
    void write(std::string_view bytes) override;
    void beginData() override;
    void writeData(std::string_view bytes) override;
    void commit() override;
    void abort() noexcept override;

private:
    //! A file being written under a temporary name next to its final one.
    struct Pending
    {
        int fd = -1;
        std::string temporaryPath;
        InterruptCleanup cleanup; //!< removes the temporary file if the process is interrupted
    };
    void open(Pending& file, const std::string& finalPath);
    void writeTo(Pending& file, const std::string& finalPath, std::string_view bytes);
    static void drop(Pending& file) noexcept;

    std::string mPath;
    bool mForce = false;
    Pending mModel;
    Pending mData;
};

//! Keeps the model and its data file in memory (tests).
class MemoryModelSink : public ModelSink
{
public:
    //! dataLocation: the location external tensors get (empty: they keep theirs).
    explicit MemoryModelSink(std::string dataLocation = "model.onnx.data") : mDataLocation(std::move(dataLocation)) {}

    std::string path() const override { return {}; }
    std::string dataLocation() const override { return mDataLocation; }
    void begin() override { mBytes.clear(); }
    void write(std::string_view bytes) override { mBytes.append(bytes); }
    void beginData() override { mData.clear(); }
    void writeData(std::string_view bytes) override { mData.append(bytes); }
    void commit() override {}
    void abort() noexcept override
    {
        mBytes.clear();
        mData.clear();
    }

    //! The model written (empty after abort()).
    const std::string& bytes() const { return mBytes; }
    //! The data file written (empty when the model has no external data to copy).
    const std::string& dataBytes() const { return mData; }

private:
    std::string mDataLocation;
    std::string mBytes;
    std::string mData;
};

struct ModelWriteOptions
{
    //! maxInputBytes applies to the source model.
    Limits limits;
    //! Size of the buffer the source is copied and the output written through (at least 4 KiB).
    std::size_t bufferBytes = 1 << 20;
};

//! What writeEditedModel did.
struct ModelWriteResult
{
    std::uint64_t sourceBytes = 0;
    std::uint64_t outputBytes = 0;
    std::uint64_t copiedBytes = 0;  //!< bytes copied verbatim from the source
    std::uint64_t encodedBytes = 0; //!< bytes of fields encoded anew (new or edited nodes, tensors, outputs)
    std::size_t nodesRemoved = 0;
    std::size_t nodesInserted = 0;
    std::size_t nodesRewired = 0; //!< nodes re-encoded for rewired inputs or renamed outputs
    std::size_t initializersAdded = 0;
    std::size_t initializersReplaced = 0;
    std::size_t initializersRemoved = 0;
    std::size_t graphOutputsRenamed = 0;
    std::size_t valueInfosDropped = 0; //!< graph.value_info entries left out (ModelEdits::dropValueInfos)
    bool opsetRaised = false;          //!< the default domain's opset_import was set (ModelEdits::defaultOpset)
    std::size_t externalTensors = 0;   //!< tensors whose data now lies in the sink's data file
    std::uint64_t dataBytes = 0;       //!< bytes of the data file (0: none was written)
    //! The source's external data files that exist, copied or not (outside its folder): the paths the locations lead
    //! to, one per location.
    std::vector<std::string> sourceDataFiles;
    //! What the user should know: missing external data files and locations outside the model's folder (references
    //! kept), removed initializers still declared as graph inputs.
    std::vector<std::string> notes;
};

//! Applies edits to the model at sourcePath and writes the result to sink. Two passes over the source: the first
//! walks the graph's fields (tags and lengths; node and tensor headers only where an edit needs them), checks the
//! edits and plans the output, whose graph length is then known; the second copies and writes. Memory stays at a
//! 64 KiB read window, one buffer of options.bufferBytes and the encoded edits, whatever the model's size.
//!
//! External data: every graph initializer and Constant node value stored in an external file is moved to the sink's
//! data file (sink.dataLocation(), in the model's own folder): its bytes are copied there in chunks, in graph order,
//! and its TensorProto is re-encoded with the new location, offset and length (data_location EXTERNAL; other
//! external_data keys such as a checksum are kept). An initializer replaced by an edit whose original was external
//! goes to the data file too, and so does an added initializer of 1,024 bytes or more (ONNX's default size_threshold)
//! when the model has a data file; smaller ones stay inline. A tensor keeps its location as it is, with a note,
//! when its file is missing or lies outside the source model's folder (absolute, '..', a symbolic link leaving it:
//! such files are never opened, as the ONNX reader never opens them). Tensors inside subgraphs are not looked at.
//! The output then loads from its own folder with ONNX's loader, whatever folder it is written to. A model without
//! external data gets no data file.
//!
//! Throws std::invalid_argument for edits that do not fit the model (see ModelEdits), InputError (naming the file
//! and byte offset) for a source that cannot be read or is not a well-formed model, for external data that lies
//! outside its file, for an output or data file that is the source or one of its external data files, and for write
//! failures; the sink is aborted on every failure.
ModelWriteResult writeEditedModel(const std::string& sourcePath, const ModelEdits& edits, ModelSink& sink,
                                  const ModelWriteOptions& options = {});

//! Refuses, with an InputError naming the path, an output a new file (a model, a report) cannot be put at: a folder, a
//! device, pipe or socket (directly or through a link; even with force, since the file is renamed onto the name and
//! would replace the device node itself), and an existing file or link without force. A name not yet taken passes.
void checkOutputFilePath(const std::string& path, bool force);

//! Renames the finished file `from` onto `to`. Without force it never replaces anything that appeared at `to`
//! meanwhile (RENAME_NOREPLACE); with force it replaces a file or link, never a device, pipe, socket or folder.
//! Throws InputError naming `to`; `from` is left in place then.
void moveOutputFileIntoPlace(const std::string& from, const std::string& to, bool force);

struct ModelCheckOptions
{
    //! Also run ONNX shape inference (strict: an inference error fails the check).
    bool inferShapes = true;
    //! A missing external data file fails the check (the ONNX checker's behaviour); off for graph-only models.
    bool externalDataMustExist = true;
    Limits limits;
};

//! Runs onnx::checker::check_model and (optionally) onnx::shape_inference::InferShapes on a model file. Returns an
//! empty string when it passes, else the checker's or shape inference's message. Throws InputError when the file
//! cannot be read as a model.
//!
//! Cost: the model is parsed into an onnx::ModelProto in memory, but the data of graph initializers over 64 KiB and
//! of external tensors is replaced by a one-element placeholder first (the checker looks at a tensor's type, dims
//! and which data field it uses, not at the values; external files are checked for existence here). Memory is
//! therefore about the graph's size, not the weights'. Constant nodes and subgraphs are loaded whole.
std::string checkModelFile(const std::string& path, const ModelCheckOptions& options = {});

} // namespace qdq
