// Rebuilds the model's graph from the ONNX parser's lines of a verbose build log (TensorRT 8.0 to 10.x), as the build
// log reader recorded them (BuildLog::networkInputs, initializers, parsedNodes with their inputs and outputs lines,
// networkOutputs):
//   Adding network input: x with dtype: float32, dimensions: (-1, 1, 28, 28)
//   Importing initializer: conv1.weight
//   Parsing node: Conv_9 [Conv]
//   Conv_9 [Conv] inputs: [x -> (-1, 1, 28, 28)[FLOAT]], [conv1.weight -> (32, 1, 5, 5)[FLOAT]], ...
//   Conv_9 [Conv] outputs: [y -> (-1, 32, 28, 28)[FLOAT]],
//   Marking y_3 as output: y
// The graph is written as an ONNX model (initializers and Constant values with their shapes and types but no data)
// and read back through the ONNX reader, so that everything downstream sees an ordinary OnnxGraph.
#include "qdq/log_graph.h"

#include "qdq/readers.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace qdq
{

namespace
{

constexpr std::size_t kWarningCap = 5;
constexpr std::uint64_t kNoLine = std::numeric_limits<std::uint64_t>::max();

//! onnx::TensorProto::DataType of a type as the parser prints it (`[FLOAT]`, `[HALF]`, `[INT8]` in tensor lists;
//! `float32`, `float16`, `int8` in `Adding network input`); 0 when unknown.
int elementTypeOf(std::string_view type)
{
    static const std::pair<std::string_view, int> kTypes[] = {
        {"FLOAT", onnx::TensorProto::FLOAT},
        {"float32", onnx::TensorProto::FLOAT},
        {"HALF", onnx::TensorProto::FLOAT16},
        {"FLOAT16", onnx::TensorProto::FLOAT16},
        {"float16", onnx::TensorProto::FLOAT16},
        {"BF16", onnx::TensorProto::BFLOAT16},
        {"BFLOAT16", onnx::TensorProto::BFLOAT16},
        {"bfloat16", onnx::TensorProto::BFLOAT16},
        {"DOUBLE", onnx::TensorProto::DOUBLE},
        {"float64", onnx::TensorProto::DOUBLE},
        {"INT8", onnx::TensorProto::INT8},
        {"int8", onnx::TensorProto::INT8},
        {"UINT8", onnx::TensorProto::UINT8},
        {"uint8", onnx::TensorProto::UINT8},
        {"INT32", onnx::TensorProto::INT32},
        {"int32", onnx::TensorProto::INT32},
        {"INT64", onnx::TensorProto::INT64},
        {"int64", onnx::TensorProto::INT64},
        {"BOOL", onnx::TensorProto::BOOL},
        {"bool", onnx::TensorProto::BOOL},
        {"FP8", static_cast<int>(OnnxDataType::kFloat8E4M3FN)},
        {"fp8", static_cast<int>(OnnxDataType::kFloat8E4M3FN)},
        {"INT4", static_cast<int>(OnnxDataType::kInt4)},
        {"int4", static_cast<int>(OnnxDataType::kInt4)},
    };
    for (const auto& [name, value] : kTypes)
    {
        if (type == name)
        {
            return value;
        }
    }
    return 0;
}

//! What the log says about one tensor.
struct TensorFacts
{
    int elementType = 0;
    const std::vector<std::int64_t>* dims = nullptr; //!< nullptr when unknown
};

class LogGraphBuilder
{
public:
    LogGraphBuilder(const BuildLog& log, const Limits& limits) : mLog(log), mLimits(limits) {}

    std::optional<OnnxGraph> run()
    {
        if (mLog.parsedNodes.empty())
        {
            return std::nullopt;
        }
        findFirstModel();
        const std::size_t nodeCount = countBefore(mLog.parsedNodes, mEnd);
        if (nodeCount > mLimits.maxGraphNodes)
        {
            throw InputError(at(mLog.parsedNodes[static_cast<std::size_t>(mLimits.maxGraphNodes)].line),
                             "the log's parser lines describe more than " + std::to_string(mLimits.maxGraphNodes) +
                                 " ONNX nodes (the graph node limit; raise it with --max-graph-nodes)");
        }
        collectFacts(nodeCount);
        std::string bytes;
        {
            // One arena for the model's million small messages: no malloc and free for each.
            google::protobuf::Arena arena;
            auto* model = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
            model->set_ir_version(8);
            model->set_producer_name("qdq-doctor (rebuilt from a TensorRT build log)");
            auto* opset = model->add_opset_import();
            opset->set_domain("");
            opset->set_version(13);
            writeGraph(*model->mutable_graph(), nodeCount);
            if (!model->SerializeToString(&bytes))
            {
                throw InputError(at(0), "the graph rebuilt from the log's parser lines cannot be written");
            }
        }
        mFacts = {};
        OnnxGraph graph;
        try
        {
            graph = readOnnxFromBuffer(bytes, mLog.sourcePath, OnnxReadOptions{}, mLimits);
        }
        catch (const InputError& error)
        {
            throw InputError(at(0), "the graph rebuilt from the log's parser lines cannot be read: " + error.message());
        }
        graph.rebuiltFromLog = true;
        graph.sourcePath = mLog.sourcePath;
        // The reader's warnings cite offsets in the rebuilt model, which the user does not have; its note that
        // initializers hold no data is what a rebuilt graph is.
        std::vector<ReaderWarning> warnings = std::move(mWarnings);
        for (ReaderWarning& warning : graph.warnings)
        {
            if (warning.message.find("hold no data") != std::string::npos)
            {
                continue;
            }
            warning.where = at(0);
            warnings.push_back(std::move(warning));
        }
        graph.warnings = std::move(warnings);
        return graph;
    }

private:
    SourceLocation at(std::uint64_t line) const
    {
        SourceLocation where;
        where.path = mLog.sourcePath;
        where.line = line;
        return where;
    }
    void warn(std::uint64_t line, std::string message) { mWarnings.push_back({at(line), std::move(message)}); }

    template <class Records>
    static std::size_t countBefore(const Records& records, std::uint64_t end)
    {
        return static_cast<std::size_t>(
            std::partition_point(records.begin(), records.end(), [end](const auto& r) { return r.line < end; }) -
            records.begin());
    }

    //! The first model's lines end where a second parse starts: network inputs added after nodes were parsed, or
    //! nodes parsed after the outputs were marked (the Python API logs of several builds, logs appended to).
    void findFirstModel()
    {
        const std::uint64_t firstNode = mLog.parsedNodes.front().line;
        for (const auto& input : mLog.networkInputs)
        {
            if (input.line > firstNode)
            {
                mEnd = std::min(mEnd, input.line);
                break;
            }
        }
        const std::uint64_t firstOutput = mLog.networkOutputs.empty() ? kNoLine : mLog.networkOutputs.front().line;
        if (firstOutput != kNoLine)
        {
            for (const auto& node : mLog.parsedNodes)
            {
                if (node.line > firstOutput)
                {
                    mEnd = std::min(mEnd, node.line);
                    break;
                }
            }
        }
        if (mEnd != kNoLine)
        {
            warn(mEnd, "the log's parser lines describe another network from this line on (a second parse or "
                       "build); the graph is that of the first");
        }
    }

    void note(std::string_view name, int elementType, const std::vector<std::int64_t>* dims, bool produced)
    {
        if (name.empty())
        {
            return;
        }
        auto [it, added] = mFacts.try_emplace(name);
        // What the producer's outputs line says wins over what a consumer's inputs line says.
        if (added || produced)
        {
            if (elementType != 0 || added)
            {
                it->second.elementType = elementType;
            }
            if (dims != nullptr || added)
            {
                it->second.dims = dims;
            }
        }
    }

    void collectFacts(std::size_t nodeCount)
    {
        mFacts.reserve(nodeCount * 2);
        for (std::size_t i = 0; i < nodeCount; ++i)
        {
            const ParsedOnnxNode& node = mLog.parsedNodes[i];
            for (const auto& output : node.outputs)
            {
                note(output.name, elementTypeOf(output.type), output.dimsKnown ? &output.dims : nullptr, true);
            }
        }
        for (std::size_t i = 0; i < nodeCount; ++i)
        {
            const ParsedOnnxNode& node = mLog.parsedNodes[i];
            for (const auto& input : node.inputs)
            {
                note(input.name, elementTypeOf(input.type), input.dimsKnown ? &input.dims : nullptr, false);
            }
        }
        // TensorRT prints a QuantizeLinear's output as FLOAT; in the model it has the zero point's type (INT8 or
        // UINT8), unknown without a zero point.
        for (std::size_t i = 0; i < nodeCount; ++i)
        {
            const ParsedOnnxNode& node = mLog.parsedNodes[i];
            if (node.opType != "QuantizeLinear" || node.outputs.empty() || node.outputs.front().name.empty())
            {
                continue;
            }
            int type = 0;
            if (node.inputs.size() > 2 && !node.inputs[2].name.empty())
            {
                type = elementTypeOf(node.inputs[2].type);
            }
            mFacts[node.outputs.front().name].elementType = type;
        }
    }

    TensorFacts facts(std::string_view name) const
    {
        auto found = mFacts.find(name);
        return found == mFacts.end() ? TensorFacts{} : found->second;
    }

    static void writeShape(onnx::TypeProto_Tensor& type, const TensorFacts& facts)
    {
        if (facts.elementType != 0)
        {
            type.set_elem_type(facts.elementType);
        }
        if (facts.dims != nullptr)
        {
            auto* shape = type.mutable_shape();
            for (std::int64_t dim : *facts.dims)
            {
                auto* d = shape->add_dim();
                if (dim >= 0)
                {
                    d->set_dim_value(dim);
                }
                else
                {
                    d->set_dim_param("?");
                }
            }
        }
    }

    static void writeValueInfo(onnx::ValueInfoProto& value, const std::string& name, const TensorFacts& facts)
    {
        value.set_name(name);
        writeShape(*value.mutable_type()->mutable_tensor_type(), facts);
    }

    //! A tensor with its shape and type but no data (an initializer, or a Constant node's value).
    static void writeTensor(onnx::TensorProto& tensor, const std::string& name, const TensorFacts& facts)
    {
        tensor.set_name(name);
        tensor.set_data_type(facts.elementType);
        if (facts.dims != nullptr)
        {
            for (std::int64_t dim : *facts.dims)
            {
                tensor.add_dims(std::max<std::int64_t>(dim, 0));
            }
        }
    }

    //! What writeGraph tracks while it writes the nodes in order. Names are views of the log's strings, which
    //! outlive the graph's writing.
    struct GraphNames
    {
        std::unordered_set<std::string_view> defined; // network inputs, initializers, outputs of earlier nodes
        std::unordered_map<std::string_view, std::uint64_t> producedLater;
        std::unordered_set<std::string_view> constantLayers;
        std::size_t unknownInputs = 0;
        std::size_t laterInputs = 0;
        std::size_t cutOff = 0;
    };

    void writeGraph(onnx::GraphProto& graph, std::size_t nodeCount)
    {
        graph.set_name("rebuilt from " + mLog.sourcePath);
        GraphNames names;
        names.defined.reserve(mFacts.size() + 16);
        names.producedLater.reserve(nodeCount);
        for (std::size_t i = 0; i < nodeCount; ++i)
        {
            for (const auto& output : mLog.parsedNodes[i].outputs)
            {
                names.producedLater.try_emplace(output.name, mLog.parsedNodes[i].line);
            }
        }
        writeInputsAndInitializers(graph, names);
        collectConstantLayers(names);
        for (std::size_t i = 0; i < nodeCount; ++i)
        {
            const ParsedOnnxNode& parsed = mLog.parsedNodes[i];
            defineUnknownInputs(graph, parsed, names);
            writeNode(graph, parsed, names);
        }
        if (names.laterInputs > kWarningCap)
        {
            warn(0, std::to_string(names.laterInputs - kWarningCap) + " more inputs written by nodes parsed later");
        }
        if (names.unknownInputs > kWarningCap)
        {
            warn(0, std::to_string(names.unknownInputs - kWarningCap) + " more inputs named by no earlier line");
        }
        if (names.cutOff > 1)
        {
            warn(0, std::to_string(names.cutOff - 1) + " more ONNX nodes without an outputs line");
        }
        writeOutputs(graph, nodeCount);
    }

    void writeInputsAndInitializers(onnx::GraphProto& graph, GraphNames& names)
    {
        for (std::size_t i = 0, n = countBefore(mLog.networkInputs, mEnd); i < n; ++i)
        {
            const ParsedNetworkInput& input = mLog.networkInputs[i];
            if (input.name.empty() || !names.defined.insert(input.name).second)
            {
                continue;
            }
            TensorFacts inputFacts{elementTypeOf(input.dtype), input.dimsKnown ? &input.dims : nullptr};
            writeValueInfo(*graph.add_input(), input.name, inputFacts);
        }
        for (std::size_t i = 0, n = countBefore(mLog.initializers, mEnd); i < n; ++i)
        {
            const std::string& name = mLog.initializers[i].name;
            if (!name.empty() && names.defined.insert(name).second)
            {
                writeTensor(*graph.add_initializer(), name, facts(name));
            }
        }
    }

    //! Constant layers the parser registered under their own name (`Registering layer: w for ONNX node: w`):
    //! initializers whose `Importing initializer` line is not in the log (an excerpt).
    void collectConstantLayers(GraphNames& names) const
    {
        for (const auto& registered : mLog.registeredLayers)
        {
            if (registered.line < mEnd && registered.trtLayer == registered.onnxNode)
            {
                names.constantLayers.insert(registered.onnxNode);
            }
        }
    }

    //! Declares the inputs of a node that no earlier line defines, as constants or network inputs.
    void defineUnknownInputs(onnx::GraphProto& graph, const ParsedOnnxNode& parsed, GraphNames& names)
    {
        const bool isQdq = parsed.opType == "QuantizeLinear" || parsed.opType == "DequantizeLinear";
        for (std::size_t k = 0; k < parsed.inputs.size(); ++k)
        {
            const std::string& name = parsed.inputs[k].name;
            if (name.empty() || names.defined.count(name) != 0)
            {
                continue;
            }
            auto later = names.producedLater.find(name);
            if (later != names.producedLater.end())
            {
                // Written by a node the parser imports later: the log is out of order, or the graph has a cycle.
                if (++names.laterInputs <= kWarningCap)
                {
                    warn(parsed.line, "input '" + printable(name, 256) + "' of ONNX node '" +
                                          printable(parsed.onnxNode, 256) +
                                          "' is written by a node parsed later (line " + std::to_string(later->second) +
                                          "): a cycle or an out-of-order log");
                }
                continue;
            }
            // Named by no input, initializer or earlier node (an excerpt, or a hostile log): a constant when it
            // is a Q/DQ scale or zero point or a constant layer, a network input otherwise.
            names.defined.insert(name);
            const bool constant = (isQdq && k > 0) || names.constantLayers.count(name) != 0;
            if (constant)
            {
                writeTensor(*graph.add_initializer(), name, facts(name));
            }
            else
            {
                writeValueInfo(*graph.add_input(), name, facts(name));
            }
            if (++names.unknownInputs <= kWarningCap)
            {
                warn(parsed.inputsLine != 0 ? parsed.inputsLine : parsed.line,
                     "input '" + printable(name, 256) + "' of ONNX node '" + printable(parsed.onnxNode, 256) +
                         "' is not a network input, an imported initializer or an earlier node's output; taken as " +
                         (constant ? "a constant" : "a network input"));
            }
        }
    }

    void writeNode(onnx::GraphProto& graph, const ParsedOnnxNode& parsed, GraphNames& names)
    {
        auto* node = graph.add_node();
        node->set_name(parsed.onnxNode);
        node->set_op_type(parsed.opType);
        for (const auto& input : parsed.inputs)
        {
            node->add_input(input.name);
        }
        for (const auto& output : parsed.outputs)
        {
            node->add_output(output.name);
            if (!output.name.empty() && names.defined.insert(output.name).second)
            {
                writeValueInfo(*graph.add_value_info(), output.name, facts(output.name));
            }
        }
        if (parsed.opType == "Constant" && !parsed.outputs.empty())
        {
            // The value is not in the log; its shape and type are.
            auto* value = node->add_attribute();
            value->set_name("value");
            value->set_type(onnx::AttributeProto::TENSOR);
            writeTensor(*value->mutable_t(), parsed.outputs.front().name, facts(parsed.outputs.front().name));
        }
        if (parsed.outputsLine == 0 && ++names.cutOff == 1)
        {
            warn(parsed.line, "ONNX node '" + printable(parsed.onnxNode, 256) + "' [" + printable(parsed.opType, 64) +
                                  "] has no outputs line: the log is cut off here or the node failed to import; "
                                  "the graph is partial");
        }
    }

    void writeOutputs(onnx::GraphProto& graph, std::size_t nodeCount)
    {
        const std::size_t outputCount = countBefore(mLog.networkOutputs, mEnd);
        std::unordered_set<std::string_view> outputs;
        for (std::size_t i = 0; i < outputCount; ++i)
        {
            const std::string& name = mLog.networkOutputs[i].onnxTensor;
            if (!name.empty() && outputs.insert(name).second)
            {
                writeValueInfo(*graph.add_output(), name, facts(name));
            }
        }
        if (outputCount == 0)
        {
            writeUnreadTensorsAsOutputs(graph, nodeCount, outputs);
        }
    }

    //! No `Marking ... as output` line: the parse did not finish. The tensors nobody reads stand in.
    void writeUnreadTensorsAsOutputs(onnx::GraphProto& graph, std::size_t nodeCount,
                                     std::unordered_set<std::string_view>& outputs)
    {
        std::unordered_set<std::string_view> read;
        for (std::size_t i = 0; i < nodeCount; ++i)
        {
            for (const auto& input : mLog.parsedNodes[i].inputs)
            {
                read.insert(input.name);
            }
        }
        for (std::size_t i = 0; i < nodeCount; ++i)
        {
            for (const auto& output : mLog.parsedNodes[i].outputs)
            {
                if (!output.name.empty() && read.count(output.name) == 0 && outputs.insert(output.name).second)
                {
                    writeValueInfo(*graph.add_output(), output.name, facts(output.name));
                }
            }
        }
        warn(mLog.parsedNodes[nodeCount - 1].line,
             "no `Marking ... as output` line follows the parser's nodes (the log is cut off or an excerpt); the "
             "tensors no node reads are taken as the network outputs");
    }

    const BuildLog& mLog;
    const Limits& mLimits;
    std::uint64_t mEnd = kNoLine; //!< first line of a second model's parser lines
    std::unordered_map<std::string_view, TensorFacts> mFacts;
    std::vector<ReaderWarning> mWarnings;
};

} // namespace

std::optional<OnnxGraph> rebuildGraphFromLog(const BuildLog& log, const Limits& limits)
{
    return LogGraphBuilder(log, limits).run();
}

bool logGraphComplete(const BuildLog& log)
{
    if (log.parsedNodes.empty() || log.networkInputs.empty() || log.networkOutputs.empty() ||
        log.networkInputs.front().line > log.parsedNodes.front().line)
    {
        return false;
    }
    const std::uint64_t end = log.networkOutputs.front().line;
    for (const auto& node : log.parsedNodes)
    {
        if (node.line > end)
        {
            break;
        }
        if (node.outputsLine == 0)
        {
            return false;
        }
    }
    return true;
}

std::optional<OnnxGraph> rebuildGraphFromLog(const std::string& logPath, const Limits& limits)
{
    return rebuildGraphFromLog(readBuildLog(logPath, {}, limits), limits);
}

std::optional<OnnxGraph> rebuildGraphFromLogText(std::string_view text, const std::string& pathForMessages,
                                                 const Limits& limits)
{
    return rebuildGraphFromLog(readBuildLogFromBuffer(text, pathForMessages, limits), limits);
}

} // namespace qdq
