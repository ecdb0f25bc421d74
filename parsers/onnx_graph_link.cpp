// The ONNX reader's last pass: nodes linked by tensor (producers, consumers, graph inputs and outputs), cycles,
// the Q/DQ pairs and the parameters of quantized operators.
#include "parsers/onnx_reader_impl.h"
#include "qdq/quantized_types.h"

#include <thread>

namespace qdq::onnx_detail
{

//! The scales, zero points and INT32 biases of ONNX Runtime's QOperator ops (QLinearConv, com.microsoft QLinearAdd,
//! QGemm, ...): `fix` rewrites such an op as DequantizeLinear -> float op -> QuantizeLinear and computes the float
//! bias from them. Weights are left unread: an INT8/UINT8 constant is read only when it is small enough to be a
//! zero point (one per channel).
void OnnxReader::loadQuantizedOpParameters()
{
    for (const OnnxNode& node : mGraph.nodes)
    {
        const bool standard = isStandardDomain(node.domain);
        const bool quantizedOp =
            (standard && (node.opType == "QLinearConv" || node.opType == "QLinearMatMul")) ||
            (node.domain == "com.microsoft" && (node.opType.starts_with("QLinear") || node.opType == "QGemm"));
        if (!quantizedOp)
        {
            continue;
        }
        for (std::uint32_t input : mGraph.inputIds(node.index))
        {
            const auto constant = input == OnnxGraph::kNone ? std::nullopt : resolveConstant(input);
            if (!constant)
            {
                continue;
            }
            const OnnxConstant& tensor = mGraph.constants[*constant];
            const bool integer8 = tensor.dataType == OnnxDataType::kInt8 || tensor.dataType == OnnxDataType::kUint8;
            // Weights (INT8/UINT8 over zero-point size) stay unread: the rewrite keeps them as they are.
            if (tensor.elementCount <= (integer8 ? 4096 : 16384) ||
                (!integer8 && tensor.dataType == OnnxDataType::kInt32 && mayLoadQuantizedConstant(tensor)))
            {
                ensureLoaded(*constant);
            }
        }
    }
}

//! With OnnxReadOptions::loadQuantizedConstants: whether constant, larger than the analysis reads, is read too.
//! Counts its decoded values (8 bytes an element) against Limits::maxInputBytes; past that, it stays unread and
//! `fix` says its values are not available.
bool OnnxReader::mayLoadQuantizedConstant(const OnnxConstant& constant)
{
    if (!mOptions.loadQuantizedConstants || constant.dataLoaded)
    {
        return false;
    }
    const std::uint64_t bytes =
        static_cast<std::uint64_t>(std::max<std::int64_t>(constant.elementCount, 0)) * sizeof(double);
    if (bytes > mLimits.maxInputBytes - std::min(mLimits.maxInputBytes, mQuantizedConstantBytes))
    {
        return false;
    }
    mQuantizedConstantBytes += bytes;
    return true;
}

//! Warns about each model-local function the graph calls: its nodes are not analyzed.
void OnnxReader::warnLocalFunctionCalls()
{
    for (const LocalFunction& function : mLocalFunctions)
    {
        std::size_t calls = 0;
        const OnnxNode* first = nullptr;
        for (const OnnxNode& node : mGraph.nodes)
        {
            if (node.opType == function.name && node.domain == function.domain)
            {
                first = first == nullptr ? &node : first;
                ++calls;
            }
        }
        if (calls == 0)
        {
            continue;
        }
        warn(function.offset, true,
             "the model's local function '" + printable(function.domain, 256) + "." + printable(function.name, 256) +
                 "' (" + std::to_string(function.nodes) + " nodes, " + std::to_string(function.qdqNodes) +
                 " of them QuantizeLinear/DequantizeLinear) is called by " + std::to_string(calls) +
                 " node(s) such as '" + printable(first->name, 256) +
                 "': TensorRT's ONNX parser expands local functions, qdq-doctor does not look inside them, so "
                 "their Q/DQ and ops are not analyzed and each call is treated as a custom op (inline the "
                 "functions, e.g. onnx.inliner.inline_local_functions, for a full diagnosis)");
    }
}

void OnnxReader::finish()
{
    mGraph.linkNodeTensors();
    linkGraph();
    checkCycles();
    collectQdq();
    // FP8 / INT4 / FP4 Q/DQ in an opset that lacks the type: a note naming the node; the rest is analysed.
    for (ReaderWarning& note : quantizedTypeOpsetNotes(mGraph))
    {
        mGraph.warnings.push_back(std::move(note));
    }
    loadQuantizedOpParameters();
    warnLocalFunctionCalls();
    if (mOptions.loadWeights)
    {
        for (std::size_t i = 0; i < mGraph.constants.size(); ++i)
        {
            ensureLoaded(i);
        }
    }
    for (const std::string& location : mExternalOrder)
    {
        const ExternalFile& file = mExternalFiles.at(location);
        if (!file.refused.empty())
        {
            std::string names;
            for (const auto& name : file.tensors)
            {
                names += (names.empty() ? "'" : ", '") + printable(name, 256) + "'";
            }
            if (file.references > file.tensors.size())
            {
                names += " and " + std::to_string(file.references - file.tensors.size()) + " more";
            }
            warn(0, false,
                 "external data location '" + printable(location, 512) + "' " + file.refused +
                     ": only files inside the model's folder are read, so the data of " +
                     std::to_string(file.references) + " tensor(s) stored there is skipped: " + names);
        }
        else if (file.missing)
        {
            warn(0, false,
                 "external data file '" + printable(location, 512) + "' is missing (looked for " +
                     printable(file.resolved.string(), 1024) + "); the weights of " + std::to_string(file.references) +
                     " initializer(s) such as '" + printable(file.firstTensor, 256) + "' are not available");
        }
    }
    if (mTensorsWithoutData > 0)
    {
        warn(0, false,
             std::to_string(mTensorsWithoutData) + " initializer(s) such as '" +
                 printable(mFirstTensorWithoutData, 256) + "' hold no data" +
                 (mWeightlessSeen ? " (weights stripped: TRT_WEIGHTLESS)" : std::string()));
    }
}

void OnnxReader::linkGraph()
{
    const std::size_t nodeCount = mGraph.nodes.size();
    growTensorArrays();
    // The node names not indexed yet (drainInterner indexes them while it waits) are indexed on the second core
    // while the producers and consumers are linked here: each insert waits on a cache miss (the bench's
    // 500,000-node model: linkGraph was 6% of predict's main thread).
    std::exception_ptr nameIndexFailure;
    const auto indexNodeNamesLeft = [&]
    {
        try
        {
            indexNodeNames(nodeCount);
        }
        catch (...)
        {
            nameIndexFailure = std::current_exception();
        }
    };
    std::thread nameIndexer;
    struct JoinOnExit
    {
        std::thread& thread;
        ~JoinOnExit()
        {
            if (thread.joinable())
            {
                thread.join();
            }
        }
    } joinOnExit{nameIndexer};
    if (nodeCount - mNodesIndexed >= kThreadedIndexNodes)
    {
        nameIndexer = std::thread(indexNodeNamesLeft);
    }
    else
    {
        indexNodeNamesLeft();
    }
    linkProducers();
    // The duplicate-name warnings go here, after the producers' and before the dangling inputs', once the index
    // is built: the thread is joined at the end, so that it runs while the consumers are listed below (predict on
    // the bench model waited about 50 ms for it when it was joined here).
    const std::size_t nameWarningsAt = mGraph.warnings.size();
    linkConsumers();
    const std::vector<bool> isGraphInput = collectGraphInputs();
    typeTensorsOfConstants();
    warnDanglingInputs(isGraphInput);

    if (nameIndexer.joinable())
    {
        nameIndexer.join();
    }
    if (nameIndexFailure)
    {
        std::rethrow_exception(nameIndexFailure);
    }
    warnDuplicateNodeNames(nameWarningsAt);
}

void OnnxReader::linkProducers()
{
    OnnxTensorTable& tensors = mGraph.tensors;
    tensors.producer.assign(tensors.names.size(), OnnxGraph::kNone);
    std::size_t duplicateProducers = 0;
    for (const OnnxNode& node : mGraph.nodes)
    {
        const auto index = static_cast<std::uint32_t>(node.index);
        for (std::uint32_t output : mGraph.outputIds(node.index))
        {
            if (output == OnnxGraph::kNone)
            {
                continue;
            }
            if (tensors.producer[output] == OnnxGraph::kNone)
            {
                tensors.producer[output] = index;
            }
            else if (++duplicateProducers <= kWarningCap)
            {
                warnNode(node.index, "tensor '" + printable(tensors.names[output], 256) +
                                         "' is produced by more than one node ('" +
                                         printable(mGraph.nodes[tensors.producer[output]].name, 256) + "' and '" +
                                         printable(node.name, 256) + "')");
            }
        }
    }
    if (duplicateProducers > kWarningCap)
    {
        warn(0, false, std::to_string(duplicateProducers - kWarningCap) + " more tensors with several producers");
    }
}

void OnnxReader::linkConsumers()
{
    // Consumers, as compressed rows: count, prefix sums, fill (each node once per tensor, in node order).
    OnnxTensorTable& tensors = mGraph.tensors;
    const std::size_t tensorCount = tensors.names.size();
    const std::size_t nodeCount = mGraph.nodes.size();
    std::vector<std::uint32_t> lastReader(tensorCount, OnnxGraph::kNone);
    tensors.consumerStart.assign(tensorCount + 1, 0);
    for (std::size_t i = 0; i < nodeCount; ++i)
    {
        for (std::uint32_t input : mGraph.inputIds(i))
        {
            if (input != OnnxGraph::kNone && lastReader[input] != i)
            {
                lastReader[input] = static_cast<std::uint32_t>(i);
                ++tensors.consumerStart[input + 1];
            }
        }
    }
    for (std::size_t id = 0; id < tensorCount; ++id)
    {
        tensors.consumerStart[id + 1] += tensors.consumerStart[id];
    }
    tensors.consumerNodes.assign(tensors.consumerStart[tensorCount], 0);
    std::vector<std::uint32_t> fill(tensors.consumerStart.begin(), tensors.consumerStart.end() - 1);
    std::fill(lastReader.begin(), lastReader.end(), OnnxGraph::kNone);
    for (std::size_t i = 0; i < nodeCount; ++i)
    {
        for (std::uint32_t input : mGraph.inputIds(i))
        {
            if (input != OnnxGraph::kNone && lastReader[input] != i)
            {
                lastReader[input] = static_cast<std::uint32_t>(i);
                tensors.consumerNodes[fill[input]++] = static_cast<std::uint32_t>(i);
            }
        }
    }
}

std::vector<bool> OnnxReader::collectGraphInputs()
{
    const OnnxTensorTable& tensors = mGraph.tensors;
    std::vector<bool> isGraphInput(tensors.names.size(), false);
    for (const std::string& input : mAllGraphInputs)
    {
        const std::uint32_t id = tensors.find(input);
        if (id != OnnxGraph::kNone)
        {
            isGraphInput[id] = true;
        }
        if (id == OnnxGraph::kNone || tensors.constant[id] == OnnxGraph::kNone)
        {
            mGraph.graphInputs.push_back(input);
        }
    }
    return isGraphInput;
}

void OnnxReader::typeTensorsOfConstants()
{
    OnnxTensorTable& tensors = mGraph.tensors;
    for (const OnnxConstant& constant : mGraph.constants)
    {
        const std::uint32_t id = tensors.find(constant.name);
        if (constant.dataType != OnnxDataType::kUndefined && tensors.type[id] == OnnxDataType::kUndefined)
        {
            tensors.type[id] = constant.dataType;
        }
    }
}

void OnnxReader::warnDanglingInputs(const std::vector<bool>& isGraphInput)
{
    const OnnxTensorTable& tensors = mGraph.tensors;
    std::size_t dangling = 0;
    std::vector<bool> reported(tensors.names.size(), false);
    for (const OnnxNode& node : mGraph.nodes)
    {
        for (std::uint32_t input : mGraph.inputIds(node.index))
        {
            if (input == OnnxGraph::kNone || tensors.producer[input] != OnnxGraph::kNone ||
                tensors.constant[input] != OnnxGraph::kNone || isGraphInput[input] || reported[input])
            {
                continue;
            }
            reported[input] = true;
            if (++dangling <= kWarningCap)
            {
                warnNode(node.index, "input '" + printable(tensors.names[input], 256) + "' of node '" +
                                         printable(node.name, 256) +
                                         "' is produced by no node, initializer or graph input");
            }
        }
    }
    if (dangling > kWarningCap)
    {
        warn(0, false, std::to_string(dangling - kWarningCap) + " more dangling node inputs");
    }
}

void OnnxReader::warnDuplicateNodeNames(std::size_t warningsAt)
{
    mGraph.duplicateNodeNames = !mDuplicateNameNodes.empty();
    std::vector<ReaderWarning> laterWarnings(mGraph.warnings.begin() + static_cast<std::ptrdiff_t>(warningsAt),
                                             mGraph.warnings.end());
    mGraph.warnings.resize(warningsAt);
    for (std::size_t i = 0; i < mDuplicateNameNodes.size() && i < kWarningCap; ++i)
    {
        const OnnxNode& node = mGraph.nodes[mDuplicateNameNodes[i]];
        warnNode(node.index, "node name '" + printable(node.name, 256) + "' is used by more than one node");
    }
    if (mDuplicateNameNodes.size() > kWarningCap)
    {
        warn(0, false, std::to_string(mDuplicateNameNodes.size() - kWarningCap) + " more duplicate node names");
    }
    mGraph.warnings.insert(mGraph.warnings.end(), std::make_move_iterator(laterWarnings.begin()),
                           std::make_move_iterator(laterWarnings.end()));
}

void OnnxReader::checkCycles()
{
    const std::size_t count = mGraph.nodes.size();
    // ONNX stores nodes in topological order: when every producer comes before its consumers there is no cycle.
    bool sorted = true;
    for (std::size_t i = 0; i < count && sorted; ++i)
    {
        for (std::uint32_t input : mGraph.inputIds(i))
        {
            const std::uint32_t producer =
                input == OnnxGraph::kNone ? OnnxGraph::kNone : mGraph.tensors.producer[input];
            if (producer != OnnxGraph::kNone && producer >= i)
            {
                sorted = false;
                break;
            }
        }
    }
    if (sorted)
    {
        return;
    }
    std::vector<std::vector<std::size_t>> successors(count);
    std::vector<std::size_t> pendingInputs(count, 0);
    for (const OnnxNode& node : mGraph.nodes)
    {
        for (std::uint32_t input : mGraph.inputIds(node.index))
        {
            std::uint32_t producer = input == OnnxGraph::kNone ? OnnxGraph::kNone : mGraph.tensors.producer[input];
            if (producer != OnnxGraph::kNone)
            {
                successors[producer].push_back(node.index);
                ++pendingInputs[node.index];
            }
        }
    }
    std::vector<std::size_t> ready;
    for (std::size_t i = 0; i < count; ++i)
    {
        if (pendingInputs[i] == 0)
        {
            ready.push_back(i);
        }
    }
    std::size_t done = 0;
    while (!ready.empty())
    {
        std::size_t current = ready.back();
        ready.pop_back();
        ++done;
        for (std::size_t next : successors[current])
        {
            if (--pendingInputs[next] == 0)
            {
                ready.push_back(next);
            }
        }
    }
    if (done == count)
    {
        return;
    }
    // Walk back through unfinished producers until a node repeats: that node lies on a cycle.
    std::size_t current = 0;
    while (pendingInputs[current] == 0)
    {
        ++current;
    }
    std::vector<bool> seen(count, false);
    while (!seen[current])
    {
        seen[current] = true;
        for (std::uint32_t input : mGraph.inputIds(current))
        {
            std::uint32_t producer = input == OnnxGraph::kNone ? OnnxGraph::kNone : mGraph.tensors.producer[input];
            if (producer != OnnxGraph::kNone && pendingInputs[producer] != 0)
            {
                current = producer;
                break;
            }
        }
    }
    warnNode(current, "the graph has a cycle through node '" + printable(mGraph.nodes[current].name, 256) + "' (" +
                          std::to_string(count - done) + " nodes are on or after a cycle)");
}

void OnnxReader::collectQdq()
{
    mGraph.qdqOfNode.assign(mGraph.nodes.size(), OnnxGraph::kNone);
    mGraph.qdq.reserve(static_cast<std::size_t>(std::count_if(mGraph.nodes.begin(), mGraph.nodes.end(),
                                                              [](const OnnxNode& node)
                                                              { return node.qdqKind != OnnxNode::QdqKind::kNone; })));
    for (const OnnxNode& node : mGraph.nodes)
    {
        const bool isQuantize = node.qdqKind == OnnxNode::QdqKind::kQuantize;
        const std::optional<OnnxDataType> tensorRtType = tensorRtQdqType(node.opType);
        if (node.qdqKind == OnnxNode::QdqKind::kNone || !importedAsQdq(node))
        {
            continue;
        }
        QdqParameters parameters;
        parameters.node = node.index;
        parameters.isQuantize = isQuantize;
        auto inputIds = mGraph.inputIds(node.index);
        // A quantized bias (an INT32 constant behind a DequantizeLinear, ONNX Runtime's QDQ format, or a UINT8
        // one when it quantizes an Add's constant operand like an activation) is small and read too: `fix` turns
        // it back into float values.
        if (!isQuantize && !inputIds.empty() && inputIds[0] != OnnxGraph::kNone)
        {
            if (auto bias = resolveConstant(inputIds[0]);
                bias &&
                (mGraph.constants[*bias].dataType == OnnxDataType::kInt32 ||
                 mGraph.constants[*bias].dataType == OnnxDataType::kUint8) &&
                (mGraph.constants[*bias].elementCount <= 16384 || mayLoadQuantizedConstant(mGraph.constants[*bias])))
            {
                ensureLoaded(*bias);
            }
        }
        if (inputIds.size() > 1 && inputIds[1] != OnnxGraph::kNone)
        {
            if (auto scale = resolveConstant(inputIds[1]))
            {
                ensureLoaded(*scale);
                const OnnxConstant& constant = mGraph.constants[*scale];
                parameters.scaleIsConstant = true;
                parameters.scaleElements = constant.elementCount;
                if (constant.dataLoaded)
                {
                    parameters.scale = constant.values;
                }
            }
        }
        if (inputIds.size() > 2 && inputIds[2] != OnnxGraph::kNone)
        {
            parameters.hasZeroPoint = true;
            if (auto zeroPoint = resolveConstant(inputIds[2]))
            {
                ensureLoaded(*zeroPoint);
                const OnnxConstant& constant = mGraph.constants[*zeroPoint];
                parameters.zeroPointIsConstant = true;
                parameters.zeroPointType = constant.dataType;
                if (constant.dataLoaded)
                {
                    parameters.zeroPoint = constant.values;
                }
            }
            else if (mGraph.tensors.type[inputIds[2]] != OnnxDataType::kUndefined)
            {
                parameters.zeroPointType = mGraph.tensors.type[inputIds[2]];
            }
        }
        parameters.axis = node.intAttribute("axis");
        parameters.blockSize = node.intAttribute("block_size");
        if (isQuantize && !node.opType.starts_with("TRT_FP4"))
        {
            parameters.outputDtype = node.intAttribute("output_dtype");
        }
        if (tensorRtType && !parameters.outputDtype)
        {
            parameters.outputDtype = static_cast<std::int64_t>(*tensorRtType);
        }
        mGraph.qdqOfNode[node.index] = static_cast<std::uint32_t>(mGraph.qdq.size());
        mGraph.qdq.push_back(std::move(parameters));
    }
}

} // namespace qdq::onnx_detail
