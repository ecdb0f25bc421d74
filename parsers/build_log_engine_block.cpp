// Build-log reader: engine layer lists (log lines, IEngineInspector records, names-only lists, layer-info JSON pasted
// into a log) and the blocks printed after them (bindings, TensorRT 11's I/O Tensors and Engine Metadata), and the
// choice of the list the log's engine is read from.

#include "parsers/build_log_parser.h"
#include "parsers/log_layer_line.h"

#include <string>
#include <string_view>
#include <vector>

namespace qdq::buildlog
{

namespace
{

bool sameNames(const EngineBlock& a, const EngineBlock& b)
{
    if (a.layers.size() != b.layers.size())
    {
        return false;
    }
    for (std::size_t i = 0; i < a.layers.size(); ++i)
    {
        if (a.layers[i].name != b.layers[i].name)
        {
            return false;
        }
    }
    return true;
}

} // namespace

void BuildLogParser::openBlock(LayerListForm form, std::uint64_t lineNo)
{
    closeBlock();
    mBlock = EngineBlock{};
    mBlock.form = form;
    mBlock.line = lineNo;
    mBlock.namesOnly = mNamesOnlyNext;
    mNamesOnlyNext = false;
    mInBlock = true;
    mInBindings = false;
}

void BuildLogParser::closeBlock()
{
    if (mInBlock || mInBindings)
    {
        if (!mBlock.layers.empty())
        {
            mBlocks.push_back(std::move(mBlock));
        }
        mBlock = EngineBlock{};
    }
    mInBlock = false;
    mInBindings = false;
}

void BuildLogParser::addLayer(EngineLayer layer)
{
    if (mBlock.layers.size() >= mLimits.maxGraphNodes)
    {
        throw InputError(at(layer.line), "the engine layer list has more than " +
                                             std::to_string(mLimits.maxGraphNodes) +
                                             " layers, over the graph size limit (raise it with --max-graph-nodes)");
    }
    mBlock.layers.push_back(std::move(layer));
    ++mRecognized;
}

//! A blank line ends a bindings list and a names-only layer list (bindings may still follow). Record lists stay open:
//! IEngineInspector programs print a blank line between per-layer records.
void BuildLogParser::endListsAtBlankLine()
{
    mInBindings = false;
    mInEngineMetadata = false;
    if (mInBlock && mBlock.form != LayerListForm::kLogLine && mBlock.form != LayerListForm::kDetailed)
    {
        mInBlock = false;
        mBlock.form = LayerListForm::kNamesOnly;
        if (!mBlock.layers.empty())
        {
            mBlocks.push_back(std::move(mBlock));
        }
        mBlock = EngineBlock{};
    }
}

//! "Layer(Type): name, Tactic: X, in -> out" of an engine layer list.
void BuildLogParser::readLayerLine(std::string_view text, std::uint64_t lineNo)
{
    if (!mInBlock || mBlock.form == LayerListForm::kNamesOnly)
    {
        openBlock(LayerListForm::kLogLine, lineNo);
    }
    EngineLayer layer;
    layer.line = lineNo;
    std::string why;
    if (parseLogLayerLine(text, layer, why))
    {
        addLayer(std::move(layer));
    }
    else
    {
        ++mBlock.badRecords;
        warn(lineNo, "engine layer line not understood (" + why + "); skipped");
    }
}

//! "Name: X, LayerType: T, ..." of an IEngineInspector program.
void BuildLogParser::readLayerRecord(std::string_view text, std::uint64_t lineNo)
{
    if (!mInBlock || mBlock.form == LayerListForm::kLogLine)
    {
        openBlock(LayerListForm::kDetailed, lineNo);
    }
    mBlock.form = LayerListForm::kDetailed;
    EngineLayer layer;
    layer.line = lineNo;
    std::string why;
    if (parseLayerInfoRecord(text, layer, why))
    {
        if (mBlock.writer.trtMajor == 0 && text.find("Datatype: ") != std::string_view::npos &&
            text.find(", Format: ") != std::string_view::npos)
        {
            // `Datatype: Float, Format: (Linear) ...`: a TensorRT 11.x form (FORMATS-trt11.md T1).
            mBlock.writer = {11, lineNo, "Datatype and Format as two keys (a TensorRT 11.x form)"};
        }
        addLayer(std::move(layer));
    }
    else
    {
        ++mBlock.badRecords;
        warn(lineNo, "layer record not understood (" + why + "); skipped");
    }
}

//! A line inside a layer list that is no layer line or record: a name of a names-only list, or else skipped
//! (excerpt elisions such as "...more").
void BuildLogParser::readNamesOnlyLayer(std::string_view text, std::uint64_t lineNo)
{
    if (mBlock.namesOnly && mBlock.form != LayerListForm::kLogLine && mBlock.form != LayerListForm::kDetailed)
    {
        mBlock.form = LayerListForm::kNamesOnly;
        EngineLayer layer;
        layer.line = lineNo;
        layer.setName(text);
        addLayer(std::move(layer));
    }
}

bool BuildLogParser::readPastedJsonLine(std::string_view text, std::uint64_t lineNo)
{
    if (startsWith(text, "\"Name\": \""))
    {
        std::string_view value = text.substr(9);
        std::size_t q = value.rfind('"');
        if (q != std::string_view::npos)
        {
            mPendingJsonName = std::string(value.substr(0, q));
            mPendingJsonLine = lineNo;
            return true;
        }
    }
    else if (startsWith(text, "\"LayerType\": \"") && !mPendingJsonName.empty())
    {
        std::string_view value = text.substr(14);
        std::size_t q = value.rfind('"');
        if (q != std::string_view::npos)
        {
            EngineLayer layer;
            layer.setName(mPendingJsonName);
            layer.type = std::string(value.substr(0, q));
            layer.line = mPendingJsonLine;
            mSalvaged.push_back(std::move(layer));
        }
    }
    return false;
}

//! The `Bindings:` list (10.x) and TensorRT 11's `I/O Tensors:` and `Engine Metadata:` blocks after a layer list.
bool BuildLogParser::handleBindingLines(std::string_view text, std::uint64_t lineNo)
{
    if (handleElevenBlocks(text, lineNo))
    {
        return true;
    }
    if (text == "Bindings:" || text == "I/O Tensors:")
    {
        if (mBlocks.empty() && mBlock.layers.empty())
        {
            return true;
        }
        mIoTensorLines = text == "I/O Tensors:";
        if (mInBlock)
        {
            mInBlock = false;
            if (!mBlock.layers.empty())
            {
                mBlocks.push_back(std::move(mBlock));
                mBlock = EngineBlock{};
            }
        }
        mInBindings = !mBlocks.empty();
        if (mInBindings)
        {
            mBlocks.back().bindings.clear();
            mBlocks.back().ioTensors.clear();
            if (mIoTensorLines && mBlocks.back().writer.trtMajor == 0)
            {
                mBlocks.back().writer = {11, lineNo, "an I/O Tensors: block (a TensorRT 11.x form)"};
            }
        }
        return true;
    }
    if (mInBindings)
    {
        mBlocks.back().bindings.emplace_back(text);
        return true;
    }
    return false;
}

//! "The following layers are used for L2 cache management and do not correspond to any layers in the
//! INetworkDefinition: __mye1085_myl0_0, __mye1087_myl0_12" (TensorRT 11.0, FORMATS-trt11.md L5), printed 3 times.
void BuildLogParser::readL2CacheLayers(std::string_view message, std::uint64_t lineNo)
{
    const std::size_t colon = message.rfind(": ");
    if (colon == std::string_view::npos)
    {
        return;
    }
    std::string_view names = message.substr(colon + 2);
    while (!names.empty())
    {
        const std::size_t comma = names.find(',');
        const std::string_view name = trim(names.substr(0, comma));
        if (!name.empty())
        {
            mLog.l2CacheLayers.emplace_back(name);
        }
        names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
    }
    mLog.l2CacheLine = lineNo;
}

//! The lines of TensorRT 11's `I/O Tensors:` block (one tensor a line) and 11.1's `Engine Metadata:` block
//! (FORMATS-trt11.md T3, T4), after their headers. A tensor line that cannot be read is an input error: the engine's
//! inputs and outputs would be silently wrong.
bool BuildLogParser::handleElevenBlocks(std::string_view text, std::uint64_t lineNo)
{
    if (text == "Engine Metadata:")
    {
        mInBindings = false;
        mInEngineMetadata = !mBlocks.empty() && !mInBlock;
        ++mRecognized;
        return true;
    }
    if (mInEngineMetadata)
    {
        const std::size_t colon = text.find(": ");
        if (colon == std::string_view::npos)
        {
            throw InputError(at(lineNo),
                             "an Engine Metadata line is not \"Key: value\": \"" + printable(text, 80) + "\"");
        }
        mBlocks.back().engineMetadata.emplace_back(std::string(text.substr(0, colon)),
                                                   std::string(trim(text.substr(colon + 2))));
        ++mRecognized;
        return true;
    }
    if (mInBindings && mIoTensorLines)
    {
        IoTensor tensor;
        tensor.line = lineNo;
        std::string why;
        if (!parseIoTensorRecord(text, tensor, why))
        {
            throw InputError(at(lineNo),
                             "an I/O Tensors line is not understood (" + why + "): \"" + printable(text, 80) + "\"");
        }
        mBlocks.back().bindings.push_back(tensor.name);
        mBlocks.back().ioTensors.push_back(std::move(tensor));
        ++mRecognized;
        return true;
    }
    return false;
}

//! Keeps the last list; a names-only re-print of an engine already listed in detail keeps the detailed one.
std::size_t BuildLogParser::chooseEngineBlock() const
{
    std::size_t chosen = mBlocks.size() - 1;
    if (mBlocks[chosen].form == LayerListForm::kNamesOnly)
    {
        for (std::size_t i = chosen; i-- > 0;)
        {
            if (sameNames(mBlocks[i], mBlocks[chosen]))
            {
                chosen = i;
                break;
            }
        }
    }
    return chosen;
}

void BuildLogParser::adoptEngineBlock()
{
    const std::size_t chosen = chooseEngineBlock();
    bool distinct = false;
    for (std::size_t i = 0; i < mBlocks.size(); ++i)
    {
        if (!sameNames(mBlocks[i], mBlocks[chosen]))
        {
            distinct = true;
        }
    }
    EngineBlock& block = mBlocks[chosen];
    for (std::size_t i = mBlocks.size(); block.bindings.empty() && i-- > 0;)
    {
        if (i != chosen && sameNames(mBlocks[i], block) && !mBlocks[i].bindings.empty())
        {
            block.bindings = mBlocks[i].bindings;
        }
    }
    if (distinct)
    {
        ReaderWarning warning{
            at(block.line),
            std::to_string(mBlocks.size()) +
                " different engine layer lists found (several builds in one log?); using the one at line " +
                std::to_string(block.line)};
        mLog.warnings.push_back(warning);
        mLog.engine.warnings.push_back(warning);
    }
    mLog.hasEngineBlock = true;
    mLog.engine.form = block.form == LayerListForm::kUnknown ? LayerListForm::kNamesOnly : block.form;
    mLog.engine.layers = std::move(block.layers);
    mLog.engine.bindings = std::move(block.bindings);
    mLog.engine.ioTensors = std::move(block.ioTensors);
    mLog.engine.engineMetadata = std::move(block.engineMetadata);
    mLog.engine.writer = block.writer;
    mLog.engine.assignOptimizationProfiles();
}

//! No layer list but records of pasted layer-info JSON: the engine is those records (name and type only).
void BuildLogParser::adoptSalvagedLayers()
{
    mRecognized += mSalvaged.size();
    std::uint64_t line = mSalvaged.front().line;
    ReaderWarning warning{at(line),
                          "only a fragment of layer-info JSON pasted into the file was found; " +
                              std::to_string(mSalvaged.size()) +
                              " layer records (name and type only) were salvaged and the layer list is incomplete"};
    mLog.warnings.push_back(warning);
    mLog.engine.warnings.push_back(warning);
    mLog.hasEngineBlock = true;
    mLog.engine.form = LayerListForm::kDetailed;
    mLog.engine.layers = std::move(mSalvaged);
}

} // namespace qdq::buildlog
