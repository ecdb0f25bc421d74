// checkModelFile (include/qdq/model_edit.h): the ONNX checker and shape inference on a copy of a model whose large
// and external initializers are placeholders, built at the protobuf wire level (src/fixes/model_wire.h).
#include "src/fixes/model_wire.h"

#include "qdq/onnx_guard.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

namespace qdq
{

using namespace model_wire;

namespace
{

// ----- checkModelFile -------------------------------------------------------------------------------------------

//! Builds the model for the checker with the data of large and external graph initializers replaced by
//! placeholders; external files are checked for existence here (the first problem is kept).
class CheckCopyBuilder
{
public:
    CheckCopyBuilder(WireSource& source, const ModelCheckOptions& options) : mSource(source), mOptions(options)
    {
        fs::path folder = fs::path(source.path()).parent_path();
        mFolder = folder.empty() ? fs::path(".") : folder;
    }

    //! The check copy in three pieces, parsed by checkModelFile as one stream: the model's fields before the
    //! graph with the graph's new length, the graph, and the fields after it.
    struct Pieces
    {
        std::string head;
        std::string graph;
        std::string tail;
    };

    Pieces build()
    {
        const GraphLocation graph = locateGraph(mSource);
        Pieces pieces;
        // Reserved at the graph's length in the file, which the copy never exceeds: pages past what is written are
        // never touched, so they cost address space, not memory. Before, the graph grew by doubling and was then
        // copied once more after the model's head: on the 500,000-node bench model the check alone took 2.10-2.55 s,
        // now 1.90-2.00 s (3 runs each); its peak RSS is the parsed model's and did not change.
        pieces.graph.reserve(static_cast<std::size_t>(graph.end - graph.payloadOffset));
        std::string& content = pieces.graph;
        std::uint64_t position = graph.payloadOffset;
        WireField field;
        std::uint64_t nodeIndex = 0;
        std::uint64_t initializerIndex = 0;
        while (mSource.nextField(position, graph.end, field))
        {
            // Fields that stay as they are go straight from the read window into content, not through a string of
            // their own (500,000-node bench model, 6 runs: building the copy 0.46-0.56 -> 0.43-0.50 s).
            if (field.number == kGraphNode && field.wireType == kLengthDelimited)
            {
                mSource.setContext("graph.node", nodeIndex++);
                appendNodeForCheck(field, content);
            }
            else if (field.number == kGraphInitializer && field.wireType == kLengthDelimited)
            {
                mSource.setContext("graph.initializer", initializerIndex++);
                content += initializerForCheck(field);
            }
            else
            {
                content += mSource.view(field.tagOffset, field.end - field.tagOffset);
            }
            mSource.setContext(nullptr);
        }
        pieces.head = mSource.read(0, graph.lengthOffset);
        appendVarint(pieces.head, content.size());
        pieces.tail = mSource.read(graph.end, mSource.size() - graph.end);
        return pieces;
    }

    const std::string& problem() const { return mProblem; }

private:
    void appendNodeForCheck(const WireField& field, std::string& content)
    {
        const NodeHeader header = decodeNodeHeader(mSource, field, [](std::uint32_t, std::string_view) {});
        if (!header.isConstant())
        {
            content += mSource.view(field.tagOffset, field.end - field.tagOffset);
            return;
        }
        const std::string bytes = mSource.read(field.tagOffset, field.end - field.tagOffset);
        onnx::NodeProto node;
        if (!node.ParseFromString(mSource.read(field.payloadOffset, field.payloadLength)))
        {
            mSource.fail(field.tagOffset, "invalid NodeProto");
        }
        bool changed = false;
        for (onnx::AttributeProto& attribute : *node.mutable_attribute())
        {
            if (attribute.has_t() && isExternal(attribute.t()))
            {
                placeholderForExternal(*attribute.mutable_t());
                changed = true;
            }
        }
        content += changed ? lengthDelimitedField(kGraphNode, node.SerializeAsString()) : bytes;
    }

    std::string initializerForCheck(const WireField& field)
    {
        const TensorHeader header = decodeTensorHeader(mSource, field);
        const bool integer = header.dataType == 6 || header.dataType == 7; // INT32, INT64
        if (!header.external() && header.dataBytes <= (integer ? kCheckPlaceholderBytes : kCheckPlaceholderOtherBytes))
        {
            return mSource.read(field.tagOffset, field.end - field.tagOffset);
        }
        if (header.external())
        {
            checkExternalFile(header.name, header.hasLocation, header.location);
        }
        // Every field but the data is kept; the first data field becomes one zero element of its kind.
        const std::optional<std::uint64_t> count = elementCount(header.dims);
        const bool hasElements = !count || *count > 0;
        std::string tensor;
        std::uint64_t position = field.payloadOffset;
        WireField inner;
        bool placed = false;
        while (mSource.nextField(position, field.end, inner))
        {
            if (isDataField(inner.number))
            {
                if (!placed && hasElements)
                {
                    tensor += placeholderField(inner.number, header.dataType);
                }
                placed = true;
            }
            else if (inner.number != kTensorExternalData && inner.number != kTensorDataLocation)
            {
                tensor += mSource.read(inner.tagOffset, inner.end - inner.tagOffset);
            }
        }
        if (!placed && hasElements)
        {
            tensor += placeholderField(kTensorRawData, header.dataType);
        }
        return lengthDelimitedField(kGraphInitializer, tensor);
    }

    static bool isExternal(const onnx::TensorProto& tensor)
    {
        return tensor.data_location() == onnx::TensorProto::EXTERNAL ||
               std::any_of(tensor.external_data().begin(), tensor.external_data().end(),
                           [](const onnx::StringStringEntryProto& entry) { return entry.key() == "location"; });
    }

    void placeholderForExternal(onnx::TensorProto& tensor)
    {
        bool hasLocation = false;
        std::string location;
        for (const onnx::StringStringEntryProto& entry : tensor.external_data())
        {
            if (entry.key() == "location")
            {
                hasLocation = true;
                location = entry.value();
            }
        }
        checkExternalFile(tensor.name(), hasLocation, location);
        tensor.clear_external_data();
        tensor.clear_data_location();
        std::vector<std::int64_t> dims(tensor.dims().begin(), tensor.dims().end());
        const std::optional<std::uint64_t> count = elementCount(dims);
        if (!count || *count > 0)
        {
            tensor.set_raw_data(
                std::string(static_cast<std::size_t>(std::max(1, elementBits(tensor.data_type()) / 8)), '\0'));
        }
    }

    //! One zero element in the given data field (packed where repeated).
    static std::string placeholderField(std::uint32_t number, std::int32_t dataType)
    {
        switch (number)
        {
        case kTensorFloatData:
            return lengthDelimitedField(number, std::string(4, '\0'));
        case kTensorDoubleData:
            return lengthDelimitedField(number, std::string(8, '\0'));
        case kTensorInt32Data:
        case kTensorInt64Data:
        case kTensorUint64Data:
            return lengthDelimitedField(number, std::string(1, '\0'));
        case kTensorStringData:
            return lengthDelimitedField(number, std::string());
        default:
            return lengthDelimitedField(
                kTensorRawData, std::string(static_cast<std::size_t>(std::max(1, elementBits(dataType) / 8)), '\0'));
        }
    }

    void checkExternalFile(const std::string& tensor, bool hasLocation, const std::string& location)
    {
        if (!mProblem.empty())
        {
            return;
        }
        if (!hasLocation || location.empty())
        {
            mProblem = "tensor " + inQuotes(tensor) + " is stored externally but has no location";
            return;
        }
        if (!mOptions.externalDataMustExist)
        {
            return;
        }
        const fs::path resolved = fs::path(location).is_absolute() ? fs::path(location) : mFolder / location;
        struct stat info
        {
        };
        if (location.find('\0') != std::string::npos || ::stat(resolved.c_str(), &info) != 0)
        {
            mProblem = "data of tensor " + inQuotes(tensor) + " should be stored in " + inQuotes(resolved.string()) +
                       ", but it does not exist or is not accessible";
        }
    }

    WireSource& mSource;
    const ModelCheckOptions& mOptions;
    fs::path mFolder;
    std::string mProblem;
};

} // namespace

std::string checkModelFile(const std::string& path, const ModelCheckOptions& options)
{
    WireSource source(path, options.limits, kScanWindowBytes);
    if (source.size() > kProtobufLimit)
    {
        failPath(path, "is over the 2 GiB a protobuf file can hold");
    }
    CheckCopyBuilder builder(source, options);
    // The model lives on an arena, dropped in one piece: on the 500,000-node bench model perf put 7% of `fix`'s
    // samples in ModelProto's destructor freeing the graph message by message; with the arena they are gone.
    google::protobuf::Arena arena;
    onnx::ModelProto& model = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
    {
        const CheckCopyBuilder::Pieces pieces = builder.build();
        namespace io = google::protobuf::io;
        io::ArrayInputStream head(pieces.head.data(), static_cast<int>(pieces.head.size()));
        io::ArrayInputStream graph(pieces.graph.data(), static_cast<int>(pieces.graph.size()));
        io::ArrayInputStream tail(pieces.tail.data(), static_cast<int>(pieces.tail.size()));
        io::ZeroCopyInputStream* streams[] = {&head, &graph, &tail};
        io::ConcatenatingInputStream stream(streams, 3);
        if (!model.ParseFromZeroCopyStream(&stream))
        {
            failPath(path, "cannot be parsed as an ONNX ModelProto");
        }
    }
    if (!builder.problem().empty())
    {
        return builder.problem();
    }
    try
    {
        onnx::checker::check_model(model);
        if (options.inferShapes)
        {
            const onnx::ShapeInferenceOptions strict(/*check_type*/ true, /*error_mode*/ 1,
                                                     /*enable_data_propagation*/ false);
            // Guarded: libonnx's Conv inference dies on a weight of higher rank than the input (qdq/onnx_guard.h).
            onnx::shape_inference::InferShapes(model, guardedSchemaRegistry(), strict);
        }
    }
    catch (const std::exception& error)
    {
        return error.what();
    }
    return {};
}

} // namespace qdq
