// libFuzzer target: every command on graphs built from the fuzz bytes. The bytes are a program (graph_program.h):
// each step adds nodes with tools/onnx_builder, and the steps are chosen to build what a well-formed exporter never
// writes but a reader still accepts: cycles (a forward reference to a tensor a later step writes, an explicit
// Q -> DQ loop), self-loops, dangling inputs, two producers of one tensor, duplicate initializer and graph input
// names, Q/DQ nodes with 0 to 4 inputs and scales / zero points of odd shapes, types and values (or produced by
// nodes), deep chains of thousands of nodes, empty and odd names, nodes with no outputs. The model is written to a
// file and every command runs on it in-process through the entry points src/main.cpp calls:
//   inspect (text, JSON); diagnose (loadAndDiagnose with the JSON streamed, text, JSON, SARIF, HTML) and the graph
//   command's pictures (DOT); predict (text, JSON); fix to an output path, then fix --dry-run of that output;
//   diff of the model against itself (both sides predicted).
// Half of the runs (by the first byte) also give diagnose and fix an engine: samples/c-resnet-conv-maxpool's layer
// list and profile, so the correlator walks the fuzzed graph too.
// Only qdq::InputError may escape, and it must name a file it was given. Beyond that it checks the renderers'
// promises: the text report holds no control byte but '\n'; every JSON (diagnose, SARIF, predict, diff, fix,
// inspect) parses; the streamed JSON is what writeReportJson writes; predict's streamed JSON is renderPredictionJson.
#include "fuzz_common.h"
#include "graph_program.h"
#include "qdq/diff.h"
#include "qdq/fix.h"
#include "qdq/graph.h"
#include "qdq/html_report.h"
#include "qdq/inspect.h"
#include "qdq/load_inputs.h"
#include "qdq/predict.h"
#include "qdq/sarif.h"
#include "tools/onnx_builder.h"

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace
{

std::filesystem::path gFolder; //!< the model, the fixed model and (as TMPDIR) dry runs' candidates
const std::string kSample = QDQ_SOURCE_DIR "/samples/c-resnet-conv-maxpool/";

//! A broken promise: says which, then crashes (libFuzzer keeps the input).
[[noreturn]] void broken(const std::string& command, const std::string& what)
{
    std::fprintf(stderr, "fuzz_graph_commands: %s: %s\n", command.c_str(), what.c_str());
    __builtin_trap();
}

// ---------------------------------------------------------------------------------------------------------------
// The graph program.

//! What one step of the program adds.
enum class Step : std::uint8_t
{
    kOp,                //!< one op of kGraphOps (Q/DQ: a well-formed pair)
    kRawQuantize,       //!< QuantizeLinear or DequantizeLinear with 0..4 inputs, odd scales and zero points
    kQdqLoop,           //!< q: x -> a, dq: a -> x, Relu: x -> y (the issue's cycle), x read or fresh
    kSecondProducer,    //!< a node writing a tensor an earlier node (or an initializer, a graph input) holds
    kNoOutputs,         //!< a node that writes nothing
    kManyOutputs,       //!< Split / TopK with several outputs, empty or repeated names among them
    kDuplicateConstant, //!< an initializer or graph input named like an existing tensor
    kGraphOutput,       //!< a graph output naming any tensor (dangling, empty, an initializer)
    kChain,             //!< a chain of 2 to 4,096 nodes (4,096 chain nodes a program)
    kOddNode,           //!< empty op type, empty or odd node name, an unknown domain, a subgraph op without subgraph
    kQuantizedConv,     //!< Conv on a per-channel Q/DQ or DQ-only weight, with an odd bias
    kExternalData,      //!< an initializer whose data is external: odd locations, offsets, lengths, files (issue 38)
    kSubgraph,          //!< an If or Loop whose branches read a tensor of the outer graph (issue 38)
    kCount,
};

constexpr float kScaleValues[] = {0.05f,
                                  0.01f,
                                  0.0f,
                                  -0.5f,
                                  1e-30f,
                                  1e30f,
                                  std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN()};
//! ONNX element types for zero points and scales: the usual ones, the float8 and 4-bit ones, and unknown numbers.
constexpr int kElementTypes[] = {3, 2, 6, 1, 5, 7, 10, 16, 17, 18, 19, 20, 21, 22, 0, 99};
const char* const kOddNames[] = {"",         "same",        "a\nb",           "\x1b[31mred",
                                 "\xc3\x28", "\xc2\x9b[2J", "n/with/slashes", "Conv_0 + Relu_1"};

//! External-data locations: a file the run writes into the model's folder (whole, cut short, empty), one absent,
//! one named like fix's output or its data file, absolute paths, paths climbing out, a FIFO, a folder, odd names.
const char* const kLocations[] = {
    "w.bin",         "short.bin", "empty.bin",    "absent.bin", "fixed.onnx", "fixed.onnx.data",
    "/etc/hostname", "../w.bin",  "sub/../w.bin", "fifo",       "sub",        "",
    "w.bin\n",       "./w.bin",   "/dev/zero",    "model.onnx"};
//! offset / length values: none, numbers, numbers past the file, no numbers, negative, over 18 digits.
const char* const kRangeValues[] = {
    nullptr, "0",  "4", "16",  "64",   "4096", "abc", "-1", "99999999999999999999999", "18446744073709551615",
    " 4",    "4x", "",  "1e3", "0x10", "256"};

//! An initializer the program marks for external data, applied to the serialized model (GraphBuilder writes none).
struct ExternalMark
{
    std::string initializer;
    std::uint8_t location = 0;
    std::uint8_t offset = 0;
    std::uint8_t length = 0;
};

//! An If or Loop node added to the serialized model: its branches read `outer` (a tensor of the graph) and write
//! `output`; kind picks If or Loop, what the branches compute (Relu, a Q/DQ of the outer tensor, Identity) and
//! whether the else branch reads the outer tensor too.
struct SubgraphMark
{
    std::string outer;
    std::string output;
    std::string name;
    std::uint8_t kind = 0;
};

class Program
{
public:
    Program(qdq::tools::GraphBuilder& builder, qdq::fuzz::Bytes& bytes) : g(builder), mBytes(bytes) {}

    void run(bool shapedInput)
    {
        mTensors.push_back(g.input("x", shapedInput ? std::vector<long>{1, 4, 8, 8} : std::vector<long>{}));
        while (!mBytes.empty() && mStep < 256)
        {
            addStep(static_cast<Step>(mBytes.next() % static_cast<int>(Step::kCount)));
            ++mStep;
        }
        g.output(mTensors.back());
    }

    const std::vector<ExternalMark>& externalMarks() const { return mExternal; }
    const std::vector<SubgraphMark>& subgraphMarks() const { return mSubgraphs; }

private:
    qdq::tools::GraphBuilder& g;
    qdq::fuzz::Bytes& mBytes;
    std::vector<ExternalMark> mExternal;
    std::vector<SubgraphMark> mSubgraphs;
    std::vector<std::string> mTensors; //!< tensors that exist so far (inputs, initializers, node outputs)
    std::size_t mStep = 0;
    std::size_t mConstants = 0;
    //! Chain nodes so far, at most kMostChainNodes a program: every command takes about 1 ms a node under the
    //! sanitizers, so a program stays within the run's 30 s timeout.
    static constexpr std::size_t kMostChainNodes = 4096;
    std::size_t mChainNodes = 0;

    std::string fresh() const { return "t" + std::to_string(mStep); }
    std::string constantName() { return "c" + std::to_string(mStep) + "_" + std::to_string(mConstants++); }
    std::string nodeName(const char* suffix = "") const { return "n" + std::to_string(mStep) + suffix; }

    //! A tensor to read: an existing one, one a later step (or this one: a self-loop) writes, one nobody writes, an
    //! omitted input, or a new constant.
    std::string read()
    {
        const std::uint8_t pick = mBytes.next();
        if (pick < 160)
        {
            return mTensors[pick % mTensors.size()];
        }
        if (pick < 224)
        {
            return "t" + std::to_string(mStep + (pick - 160) % 16);
        }
        if (pick < 240)
        {
            return "ghost" + std::to_string(pick % 4);
        }
        if (pick < 248)
        {
            return "";
        }
        return g.weight(constantName(), {1});
    }

    //! The tensor a node writes: a fresh one mostly, else an existing tensor (a second producer) or "".
    std::string written()
    {
        const std::uint8_t pick = mBytes.next();
        if (pick < 200)
        {
            return fresh();
        }
        if (pick < 248)
        {
            return mTensors[pick % mTensors.size()];
        }
        return "";
    }

    void wrote(const std::string& tensor)
    {
        if (!tensor.empty())
        {
            mTensors.push_back(tensor);
        }
    }

    std::vector<long> smallDims()
    {
        const std::uint8_t shape = mBytes.next();
        std::vector<long> dims;
        for (int axis = 0; axis < (shape & 3); ++axis)
        {
            dims.push_back((shape >> (2 + 2 * axis)) & 3); // 0..3: empty tensors too
        }
        return dims;
    }

    //! A Q/DQ scale: per-tensor, per-channel, of odd shape (empty, 2-D), of an integer or unknown type, odd values,
    //! produced by a node, or missing.
    std::string scale()
    {
        const std::uint8_t kind = mBytes.next();
        const float value = kScaleValues[(kind >> 3) % 8];
        switch (kind % 8)
        {
        case 0:
        case 1:
            return g.scale(constantName(), value);
        case 2:
            return g.scaleVector(constantName(), std::vector<float>(1 + (kind >> 6), value));
        case 3:
            return g.weight(constantName(), smallDims(), value);
        case 4:
            return g.int32Constant(constantName(), smallDims());
        case 5:
            return g.typedZeroPoint(constantName(), kElementTypes[(kind >> 3) % 16]);
        case 6:
            return read();
        default:
            return "";
        }
    }

    //! A zero point: int8 / uint8 of any value, of a float8 / 4-bit / unknown type, a vector, a float, produced by a
    //! node, or missing.
    std::string zeroPoint()
    {
        const std::uint8_t kind = mBytes.next();
        switch (kind % 8)
        {
        case 0:
        case 1:
            return g.zeroPoint(constantName(), (kind & 8) != 0, static_cast<int>(kind >> 4) * 17 - 128);
        case 2:
            return g.typedZeroPoint(constantName(), kElementTypes[(kind >> 3) % 16]);
        case 3:
            return g.int8Constant(constantName(), smallDims());
        case 4:
            return g.uint8Constant(constantName(), smallDims());
        case 5:
            return g.weight(constantName(), smallDims());
        case 6:
            return read();
        default:
            return "";
        }
    }

    void oddAxis(const std::string& node)
    {
        const std::uint8_t axis = mBytes.next();
        if ((axis & 3) == 0)
        {
            g.intAttribute(node, "axis", static_cast<std::int8_t>(axis) >> 2);
        }
        else if ((axis & 7) == 1)
        {
            g.intAttribute(node, "axis", std::numeric_limits<long>::min());
        }
    }

    void addStep(Step step)
    {
        switch (step)
        {
        case Step::kOp:
            addOp();
            break;
        case Step::kRawQuantize:
            addRawQuantize();
            break;
        case Step::kQdqLoop:
            addQdqLoop();
            break;
        case Step::kSecondProducer:
            addSecondProducer();
            break;
        case Step::kNoOutputs:
            addNoOutputs();
            break;
        case Step::kManyOutputs:
            addManyOutputs();
            break;
        case Step::kDuplicateConstant:
            addDuplicateConstant();
            break;
        case Step::kGraphOutput:
            g.output(read());
            break;
        case Step::kChain:
            addChain();
            break;
        case Step::kOddNode:
            addOddNode();
            break;
        case Step::kQuantizedConv:
            addQuantizedConv();
            break;
        case Step::kExternalData:
            addExternalData();
            break;
        case Step::kSubgraph:
            addSubgraph();
            break;
        case Step::kCount:
            break;
        }
    }

    void addOp()
    {
        const std::string op = qdq::fuzz::kGraphOps[mBytes.next() % qdq::fuzz::kGraphOpCount];
        const std::string input = read();
        const std::string name = nodeName();
        if (op == "Q/DQ")
        {
            // g.qdq writes <name>/DequantizeLinear_out: stands for this step's tensor through an Identity.
            const std::string dq = g.qdq(name, input, kScaleValues[mBytes.next() % 8]);
            wrote(g.node("Identity", nodeName("i"), {dq}, {written()}));
            return;
        }
        std::vector<std::string> inputs = {input};
        if (op == "Conv" || op == "Gemm" || op == "MatMul")
        {
            inputs.push_back(g.weight(constantName(), op == "Conv" ? std::vector<long>{4, 4, 3, 3} : smallDims()));
        }
        else if (op == "Add" || op == "Mul" || op == "Concat")
        {
            inputs.push_back(read());
        }
        else if (op == "Reshape")
        {
            inputs.push_back(g.int32Constant(constantName(), smallDims()));
        }
        const std::string out = written();
        if (op == "custom")
        {
            g.opset("com.example", 1);
            g.node("IntSoftmax", name, inputs, {out}, "com.example");
        }
        else
        {
            g.node(op, name, inputs, {out});
        }
        if (op == "Concat" || op == "Softmax" || op == "Split" || op == "Gather")
        {
            oddAxis(name);
        }
        wrote(out);
    }

    void addRawQuantize()
    {
        const std::uint8_t shape = mBytes.next();
        const char* op = (shape & 1) != 0 ? "QuantizeLinear" : "DequantizeLinear";
        const int arity = (shape >> 1) % 5;
        std::vector<std::string> inputs;
        if (arity > 0)
        {
            inputs.push_back(read());
        }
        if (arity > 1)
        {
            inputs.push_back(scale());
        }
        if (arity > 2)
        {
            inputs.push_back(zeroPoint());
        }
        if (arity > 3)
        {
            inputs.push_back(read());
        }
        const std::string out = written();
        g.node(op, nodeName(), inputs, {out});
        oddAxis(nodeName());
        if ((shape & 0x30) == 0x30)
        {
            g.intAttribute(nodeName(), "block_size", static_cast<std::int8_t>(mBytes.next()));
        }
        wrote(out);
    }

    void addQdqLoop()
    {
        const std::uint8_t shape = mBytes.next();
        const std::string x = (shape & 1) != 0 ? read() : fresh() + "x";
        const std::string s = (shape & 2) != 0 ? scale() : g.scale(constantName(), 0.05f);
        const std::string z = (shape & 4) != 0 ? zeroPoint() : g.zeroPoint(constantName());
        const std::string a = fresh() + "a";
        g.node("QuantizeLinear", nodeName("q"), {x, s, z}, {a});
        // The loop closes through the DQ, or through an op between them, or (shape bit 4) not at all: a Q/DQ pair
        // whose DQ output feeds nothing but the Relu.
        if ((shape & 8) != 0)
        {
            g.node("Identity", nodeName("i"), {a}, {fresh() + "b"});
            g.node("DequantizeLinear", nodeName("dq"), {fresh() + "b", s, z}, {(shape & 16) != 0 ? fresh() : x});
        }
        else
        {
            g.node("DequantizeLinear", nodeName("dq"), {a, s, z}, {(shape & 16) != 0 ? fresh() : x});
        }
        wrote(x);
        wrote(a);
        if ((shape & 32) != 0)
        {
            // Conv reading the loop as its weight: the weight-path walks.
            wrote(g.node("Conv", nodeName("conv"), {read(), x}, {written()}));
        }
        else
        {
            wrote(g.node("Relu", nodeName("r"), {x}, {written()}));
        }
    }

    void addSecondProducer()
    {
        const std::string target = mTensors[mBytes.next() % mTensors.size()];
        const std::uint8_t op = mBytes.next();
        const std::string input = read();
        switch (op % 4)
        {
        case 0:
            g.node("Relu", nodeName(), {input}, {target});
            break;
        case 1:
            g.node("Identity", nodeName(), {input}, {target});
            break;
        case 2:
            g.node("QuantizeLinear", nodeName(), {input, g.scale(constantName(), 0.1f), g.zeroPoint(constantName())},
                   {target});
            break;
        default:
            g.node("DequantizeLinear", nodeName(), {input, g.scale(constantName(), 0.1f), g.zeroPoint(constantName())},
                   {target});
            break;
        }
    }

    void addNoOutputs()
    {
        const char* const ops[] = {"Relu", "QuantizeLinear", "DequantizeLinear", "Conv", "Add", "Identity"};
        const std::string op = ops[mBytes.next() % 6];
        std::vector<std::string> inputs = {read()};
        if (op != "Relu" && op != "Identity")
        {
            inputs.push_back(read());
        }
        g.nodeWithoutOutputs(op, nodeName(), inputs);
    }

    void addManyOutputs()
    {
        const std::uint8_t shape = mBytes.next();
        const char* op = (shape & 1) != 0 ? "Split" : "TopK";
        std::vector<std::string> outputs;
        for (int i = 0; i < 1 + ((shape >> 1) & 3); ++i)
        {
            const std::uint8_t kind = (shape >> 3) + i;
            outputs.push_back(kind % 5 == 0 ? "" : kind % 7 == 0 ? fresh() : fresh() + "_" + std::to_string(i));
        }
        g.node(op, nodeName(), {read()}, outputs);
        for (const auto& out : outputs)
        {
            wrote(out);
        }
    }

    void addDuplicateConstant()
    {
        const std::string name = mTensors[mBytes.next() % mTensors.size()];
        const std::uint8_t kind = mBytes.next();
        if ((kind & 3) == 0)
        {
            g.input(name, smallDims());
        }
        else if ((kind & 3) == 1)
        {
            g.scale(name, kScaleValues[(kind >> 2) % 8]);
        }
        else if ((kind & 3) == 2)
        {
            g.zeroPoint(name);
        }
        else
        {
            g.weight(name, {4, 4, 3, 3}); // a conv weight named like a tensor a node writes
        }
    }

    void addChain()
    {
        const std::uint8_t shape = mBytes.next();
        const std::size_t perStep = (shape % 4) == 2 ? 2 : 1; // a residual step is an Add and a Relu
        // Most chains are short (2 to 65 steps: every command takes about 1 ms a node under the sanitizers); a length
        // byte of 192 and more asks for 64 to 4,096 steps.
        const std::uint8_t asked = mBytes.next();
        const std::size_t steps = asked < 192 ? 2u + asked % 64u : 64u * (asked - 191u);
        const std::size_t length = std::min<std::size_t>(steps, (kMostChainNodes - mChainNodes) / perStep);
        const std::string base = nodeName("c");
        // Bit 2: the chain's end feeds its start, one cycle thousands of nodes long.
        const bool loop = (shape & 4) != 0;
        std::string tensor = loop ? base + "_loop" : read();
        if ((shape % 4) == 1)
        {
            g.scale(base + "_s", 0.05f);
            g.zeroPoint(base + "_z");
        }
        for (std::size_t i = 0; i < length; ++i)
        {
            const std::string name = base + std::to_string(i);
            const std::string out = name + "_out";
            switch (shape % 4)
            {
            case 0:
                g.node("Relu", name, {tensor}, {out});
                break;
            case 1:
                g.node((i & 1) != 0 ? "DequantizeLinear" : "QuantizeLinear", name, {tensor, base + "_s", base + "_z"},
                       {out});
                break;
            case 2: // a residual Add every step: each tensor read twice
                g.node("Add", name, {tensor, g.node("Relu", name + "r", {tensor}, {name + "_r"})}, {out});
                break;
            default:
                g.node("Identity", name, {tensor}, {out});
                break;
            }
            tensor = out;
        }
        mChainNodes += length * perStep;
        if (loop)
        {
            g.node("Relu", nodeName("back"), {tensor}, {base + "_loop"});
        }
        wrote(tensor);
        const std::string out = written();
        g.node("Identity", nodeName(), {tensor}, {out});
        wrote(out);
    }

    void addOddNode()
    {
        const std::uint8_t kind = mBytes.next();
        const std::string name = kOddNames[(kind >> 3) % (sizeof(kOddNames) / sizeof(kOddNames[0]))];
        const std::string out = (kind & 0x80) != 0 ? name : written();
        switch (kind % 6)
        {
        case 0:
            g.node("", name, {read()}, {out});
            break;
        case 1:
            g.node("Relu", name, {read()}, {out});
            break;
        case 2:
            g.node("QuantizeLinear", name, {read(), scale(), zeroPoint()}, {out});
            break;
        case 3:
            g.node("If", name, {read()}, {out});
            break;
        case 4:
            g.node("Loop", name, {read(), read()}, {out});
            break;
        default:
            g.node("Relu", name, {read()}, {out}, "ai.unknown");
            break;
        }
        wrote(out);
    }

    //! A float weight (read by a Mul, so autocast converts it, or by a Conv) or an INT8 / INT32 constant behind a DQ,
    //! its data marked external.
    void addExternalData()
    {
        const std::uint8_t kind = mBytes.next();
        ExternalMark mark;
        mark.initializer = constantName();
        mark.location = mBytes.next();
        mark.offset = mBytes.next();
        mark.length = mBytes.next();
        std::string value;
        switch (kind % 4)
        {
        case 0:
        case 1:
            value = g.weight(mark.initializer, (kind & 4) != 0 ? std::vector<long>{4, 4, 3, 3} : smallDims());
            break;
        case 2:
            value = g.node("DequantizeLinear", nodeName("dq"),
                           {g.int8Constant(mark.initializer, smallDims()), g.scale(constantName(), 0.05f)});
            break;
        default:
            value = g.node("DequantizeLinear", nodeName("dq"),
                           {g.int32Constant(mark.initializer, smallDims()), g.scale(constantName(), 0.001f)});
            break;
        }
        mExternal.push_back(mark);
        const std::string out = written();
        g.node((kind & 4) != 0 ? "Conv" : "Mul", nodeName(), {read(), value}, {out});
        wrote(out);
    }

    //! An If or Loop whose branches read an outer tensor; added to the model after serialization (subgraphMarks).
    void addSubgraph()
    {
        SubgraphMark mark;
        mark.kind = mBytes.next();
        mark.outer = read();
        mark.name = nodeName("sub");
        mark.output = written();
        if (mark.output.empty())
        {
            mark.output = fresh();
        }
        mSubgraphs.push_back(mark);
        wrote(mark.output);
    }

    void addQuantizedConv()
    {
        const std::uint8_t kind = mBytes.next();
        const std::string input = read();
        const std::string prefix = nodeName("w");
        const std::string weight =
            (kind & 1) != 0 ? g.quantizedWeight(prefix, 4, 4) : g.int8Weight(prefix, 1 + (kind >> 1) % 4, 4);
        std::vector<std::string> inputs = {input, weight};
        switch ((kind >> 3) % 4)
        {
        case 0:
            break;
        case 1:
            inputs.push_back(g.weight(constantName(), {4}));
            break;
        case 2:
            inputs.push_back(g.int32Constant(constantName(), smallDims()));
            break;
        default:
            inputs.push_back(read());
            break;
        }
        const std::string out = written();
        g.node("Conv", nodeName(), inputs, {out});
        if ((kind & 0x40) != 0)
        {
            g.intAttribute(nodeName(), "group", static_cast<std::int8_t>(mBytes.next()));
        }
        wrote(out);
    }
};

// ---------------------------------------------------------------------------------------------------------------
// The commands.

struct Run
{
    std::vector<std::string> files; //!< the model, and with an engine the sample's layer list and profile
    std::string model;
    std::string fixed;
    bool pictures = false;         //!< draw the HTML report's finding pictures with Graphviz (small graphs only)
    std::uint8_t predict = 0;      //!< which TensorRT version and precision predict assumes
    qdq::AutocastOptions autocast; //!< fix's --autocast and --autocast-io
};

bool namesAFile(const qdq::InputError& error, const Run& run)
{
    const std::string& where = error.where().path;
    if (where.empty())
    {
        return false;
    }
    if (where.find(gFolder.string()) != std::string::npos)
    {
        return true;
    }
    for (const auto& file : run.files)
    {
        if (where.find(file) != std::string::npos)
        {
            return true;
        }
    }
    return false;
}

//! Runs one command: an InputError must name a file it was given; any other exception is a finding.
void command(const char* name, const Run& run, const std::function<void()>& body)
{
    try
    {
        body();
    }
    catch (const qdq::InputError& error)
    {
        if (!namesAFile(error, run))
        {
            broken(name, "the error names no file it was given: " + error.where().path + ": " + error.message());
        }
    }
    catch (const std::exception& error)
    {
        broken(name, std::string("exception escaped: ") + error.what());
    }
}

void checkJson(const char* command, const std::string& json)
{
    if (!nlohmann::json::accept(json))
    {
        broken(command, "the JSON does not parse");
    }
}

void checkText(const char* command, const std::string& text)
{
    for (unsigned char c : text)
    {
        if ((c < 0x20 && c != '\n') || c == 0x7f)
        {
            broken(command, "a control byte in the text report");
        }
    }
}

void inspect(const Run& run)
{
    command("inspect", run,
            [&]
            {
                qdq::InspectOptions options;
                options.limits = qdq::fuzz::fuzzLimits();
                std::vector<qdq::FileSummary> summaries = {qdq::inspectFile(run.model, options)};
                (void)qdq::renderInspectText(summaries);
                checkJson("inspect", qdq::renderInspectJson(summaries));
            });
}

void drawGraphs(const qdq::Inputs& inputs, const qdq::Report& report)
{
    try
    {
        (void)qdq::graph::writeDot(qdq::graph::buildOnnxGraph(inputs, report));
        if (inputs.engine() != nullptr)
        {
            (void)qdq::graph::writeDot(qdq::graph::buildEngineGraph(inputs, report));
        }
    }
    catch (const std::invalid_argument&)
    {
        // `graph` reports this and exits 2 (src/main.cpp).
    }
    for (std::size_t i = 0; i < report.findings.size() && i < 20; ++i)
    {
        try
        {
            (void)qdq::graph::writeDot(qdq::graph::buildFindingGraph(inputs, report, report.findings[i]));
        }
        catch (const std::invalid_argument&)
        {
            // A finding that names nothing drawable has no picture (src/main.cpp writeGraphFiles).
        }
    }
}

void diagnose(const Run& run)
{
    command("diagnose", run,
            [&]
            {
                qdq::InputFiles files;
                files.files = run.files;
                qdq::Inputs inputs;
                std::string streamed;
                qdq::ReportJsonStream stream([&](std::string_view piece) { streamed.append(piece); });
                qdq::Report report =
                    qdq::loadAndDiagnose(files, qdq::fuzz::fuzzLimits(), {}, inputs, qdq::AnalysisOptions{},
                                         [&](const qdq::Report& partial) { stream.head(partial, inputs); });
                stream.tail(report, inputs);
                checkText("diagnose", qdq::renderReportText(report, inputs));
                std::string json;
                qdq::writeReportJson(report, inputs, [&](std::string_view piece) { json.append(piece); });
                if (json != streamed)
                {
                    broken("diagnose", "the streamed JSON differs from writeReportJson's");
                }
                checkJson("diagnose --format json", json);
                checkJson("diagnose --format sarif", qdq::renderReportSarif(report, inputs, "fuzz"));
                const bool small = !inputs.onnx || inputs.onnx->nodes.size() <= 64;
                const qdq::HtmlPictures pictures =
                    run.pictures && small ? qdq::drawFindingPictures(inputs, report) : qdq::HtmlPictures{};
                (void)qdq::renderReportHtml(report, inputs, pictures, "fuzz");
                drawGraphs(inputs, report);
            });
}

void predict(const Run& run)
{
    command("predict", run,
            [&]
            {
                qdq::InputFiles files;
                files.files = {run.model};
                qdq::Inputs inputs = qdq::loadInputs(files, qdq::fuzz::fuzzLimits());
                if (!inputs.onnx)
                {
                    return;
                }
                qdq::SimulationOptions options = qdq::simulationOptionsFor(inputs);
                const char* const versions[] = {"", "8.2", "8.6", "10.3"};
                const char* const precisions[] = {"", "fp16", "int8", "best"};
                if (run.predict % 4 != 0)
                {
                    qdq::applyTrtVersion(versions[run.predict % 4], options);
                }
                if ((run.predict / 4) % 4 != 0)
                {
                    qdq::applyPrecisionFlag(precisions[(run.predict / 4) % 4], options);
                }
                const qdq::Prediction prediction = qdq::predictEngine(*inputs.onnx, options);
                (void)qdq::renderPredictionText(prediction, *inputs.onnx, run.model);
                std::string streamed;
                (void)qdq::predictEngineWritingJson(*inputs.onnx, options, run.model,
                                                    [&](std::string_view piece) { streamed.append(piece); });
                if (streamed != qdq::renderPredictionJson(prediction, *inputs.onnx, run.model))
                {
                    broken("predict", "the streamed JSON differs from renderPredictionJson's");
                }
                checkJson("predict --format json", streamed);
            });
}

void fix(const Run& run)
{
    std::error_code ignored;
    std::filesystem::remove(run.fixed, ignored);
    bool written = false;
    command("fix", run,
            [&]
            {
                qdq::InputFiles files;
                files.files = run.files;
                qdq::FixOptions options;
                options.output = run.fixed;
                options.autocast = run.autocast;
                const qdq::FixReport report = qdq::runFix(files, options, qdq::fuzz::fuzzLimits());
                (void)qdq::renderFixText(report);
                checkJson("fix --format json", qdq::renderFixJson(report));
                written = report.written;
            });
    if (!written)
    {
        return;
    }
    command("fix --dry-run of the output", run,
            [&]
            {
                qdq::InputFiles files;
                files.files = {run.fixed};
                qdq::FixOptions options;
                options.dryRun = true;
                const qdq::FixReport report = qdq::runFix(files, options, qdq::fuzz::fuzzLimits());
                (void)qdq::renderFixText(report);
            });
}

void diff(const Run& run)
{
    command("diff", run,
            [&]
            {
                qdq::InputFiles files;
                files.files = {run.model};
                qdq::Inputs baseline = qdq::loadInputs(files, qdq::fuzz::fuzzLimits());
                qdq::Inputs candidate = qdq::loadInputs(files, qdq::fuzz::fuzzLimits());
                qdq::standInPredictedEngine(baseline, &candidate);
                qdq::standInPredictedEngine(candidate, &baseline);
                const qdq::DiffReport report = qdq::diffEngines(baseline, candidate);
                (void)qdq::renderDiffText(report, baseline, candidate, 20);
                checkJson("diff --format json", qdq::renderDiffJson(report, baseline, candidate));
                (void)qdq::renderDiffHtml(report, baseline, candidate, "", "fuzz");
                (void)qdq::graph::writeDot(qdq::graph::buildDiffGraph(report, baseline, candidate));
            });
}

// ---------------------------------------------------------------------------------------------------------------
// What GraphBuilder cannot write, applied to the serialized model: external data and subgraphs.

void markExternal(onnx::ModelProto& model, const ExternalMark& mark)
{
    for (auto& tensor : *model.mutable_graph()->mutable_initializer())
    {
        if (tensor.name() != mark.initializer)
        {
            continue;
        }
        tensor.clear_raw_data();
        tensor.clear_float_data();
        tensor.clear_int32_data();
        tensor.set_data_location(onnx::TensorProto::EXTERNAL);
        const auto entry = [&](const char* key, const char* value)
        {
            if (value != nullptr)
            {
                auto* item = tensor.add_external_data();
                item->set_key(key);
                item->set_value(value);
            }
        };
        if ((mark.location & 0x80) == 0) // else: no location at all
        {
            entry("location", kLocations[mark.location % std::size(kLocations)]);
        }
        entry("offset", kRangeValues[mark.offset % std::size(kRangeValues)]);
        entry("length", kRangeValues[mark.length % std::size(kRangeValues)]);
        if ((mark.offset & 0x80) != 0)
        {
            entry("checksum", "0");
        }
        return;
    }
}

//! A branch graph: reads outer (not declared: an outer-scope read) and writes out.
onnx::GraphProto branch(const std::string& name, const std::string& outer, std::uint8_t kind)
{
    onnx::GraphProto graph;
    graph.set_name(name);
    const std::string out = name + "_out";
    const auto unary = [&](const char* op)
    {
        auto* node = graph.add_node();
        node->set_op_type(op);
        node->set_name(name + "/" + op);
        node->add_input(outer);
        node->add_output(out);
    };
    switch (kind % 3)
    {
    case 0:
        unary("Relu");
        break;
    case 1:
    {
        // A Q/DQ inside the branch with its scale an initializer of the branch.
        auto* scale = graph.add_initializer();
        scale->set_name(name + "/scale");
        scale->set_data_type(onnx::TensorProto::FLOAT);
        scale->add_float_data(0.05f);
        auto* q = graph.add_node();
        q->set_op_type("QuantizeLinear");
        q->set_name(name + "/QuantizeLinear");
        q->add_input(outer);
        q->add_input(scale->name());
        q->add_output(name + "/q");
        auto* dq = graph.add_node();
        dq->set_op_type("DequantizeLinear");
        dq->set_name(name + "/DequantizeLinear");
        dq->add_input(name + "/q");
        dq->add_input(scale->name());
        dq->add_output(out);
        break;
    }
    default:
        unary("Identity");
        break;
    }
    graph.add_output()->set_name(out);
    return graph;
}

//! Inserts the If (or Loop) node before the first node that reads its output, so the graph stays in order.
void addSubgraphNode(onnx::ModelProto& model, const SubgraphMark& mark)
{
    onnx::GraphProto& graph = *model.mutable_graph();
    onnx::NodeProto node;
    node.set_name(mark.name);
    const bool loop = (mark.kind & 0x10) != 0;
    if (loop)
    {
        // Loop(max_trip_count "", cond, v_initial): the body reads the outer tensor and carries nothing.
        node.set_op_type("Loop");
        node.add_input("");
        node.add_input(mark.name + "/cond");
        node.add_output(mark.output);
        onnx::GraphProto body = branch(mark.name + "/body", mark.outer, mark.kind >> 5);
        auto* iteration = body.add_input();
        iteration->set_name(mark.name + "/i");
        auto* condition = body.add_input();
        condition->set_name(mark.name + "/c");
        auto* condOut = body.add_node();
        condOut->set_op_type("Identity");
        condOut->add_input(mark.name + "/c");
        condOut->add_output(mark.name + "/c_out");
        // outputs: cond, then the scan output
        onnx::ValueInfoProto scan = body.output(0);
        body.clear_output();
        body.add_output()->set_name(mark.name + "/c_out");
        *body.add_output() = scan;
        auto* attribute = node.add_attribute();
        attribute->set_name("body");
        attribute->set_type(onnx::AttributeProto::GRAPH);
        *attribute->mutable_g() = body;
    }
    else
    {
        node.set_op_type("If");
        node.add_input(mark.name + "/cond");
        node.add_output(mark.output);
        for (const char* which : {"then_branch", "else_branch"})
        {
            auto* attribute = node.add_attribute();
            attribute->set_name(which);
            attribute->set_type(onnx::AttributeProto::GRAPH);
            const bool readsOuter = which[0] == 't' || (mark.kind & 8) != 0;
            *attribute->mutable_g() =
                branch(mark.name + "/" + which, readsOuter ? mark.outer : mark.name + "/cond", mark.kind >> 2);
        }
    }
    auto* cond = graph.add_initializer();
    cond->set_name(mark.name + "/cond");
    cond->set_data_type(onnx::TensorProto::BOOL);
    cond->add_int32_data(1);
    int at = graph.node_size();
    for (int i = 0; i < graph.node_size() && at == graph.node_size(); ++i)
    {
        for (const auto& input : graph.node(i).input())
        {
            if (input == mark.output)
            {
                at = i;
                break;
            }
        }
    }
    *graph.add_node() = node;
    for (int i = graph.node_size() - 1; i > at; --i)
    {
        graph.mutable_node()->SwapElements(i, i - 1);
    }
}

//! The model the program built, with its external-data marks and subgraphs applied, written to path.
void saveModel(const qdq::tools::GraphBuilder& builder, const Program& program, const std::string& path)
{
    if (program.externalMarks().empty() && program.subgraphMarks().empty())
    {
        builder.save(path);
        return;
    }
    onnx::ModelProto model;
    if (!model.ParseFromString(builder.serialize()))
    {
        broken("program", "the builder's model does not parse");
    }
    for (const ExternalMark& mark : program.externalMarks())
    {
        markExternal(model, mark);
    }
    for (const SubgraphMark& mark : program.subgraphMarks())
    {
        addSubgraphNode(model, mark);
    }
    std::string bytes;
    model.SerializeToString(&bytes);
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (file == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size())
    {
        broken("program", "cannot write " + path);
    }
    std::fclose(file);
}

//! The data files external-data locations may name, in the model's folder (kLocations).
void writeDataFiles()
{
    const auto write = [](const std::filesystem::path& path, std::size_t bytes)
    {
        std::FILE* file = std::fopen(path.c_str(), "wb");
        for (std::size_t i = 0; file != nullptr && i < bytes; ++i)
        {
            std::fputc(static_cast<int>(i * 37 % 251), file);
        }
        if (file != nullptr)
        {
            std::fclose(file);
        }
    };
    write(gFolder / "w.bin", 4096);
    write(gFolder / "short.bin", 10);
    write(gFolder / "empty.bin", 0);
    std::filesystem::create_directories(gFolder / "sub");
    ::mkfifo((gFolder / "fifo").c_str(), 0600); // opened before it is checked, it would hang the run: a timeout
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    gFolder = std::filesystem::temp_directory_path() / ("qdq-fuzz-graph-" + std::to_string(::getpid()));
    std::filesystem::remove_all(gFolder);
    std::filesystem::create_directories(gFolder);
    // Dry runs write their candidate to the temporary folder: this one.
    ::setenv("TMPDIR", gFolder.c_str(), 1);
    writeDataFiles();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size > 4096)
    {
        return 0;
    }
    qdq::fuzz::Bytes bytes(data, size);
    // The first byte: bit 0 the input has a shape (ONNX shape inference then runs when the model is written),
    // bit 1 an engine is given, bit 2 Graphviz draws the finding pictures, bits 4-7 predict's version and precision.
    const std::uint8_t flags = bytes.next();
    qdq::tools::GraphBuilder builder;
    // bit 3: fix also autocasts (bits 4 and 5: bf16 rather than fp16, --autocast-io; bit 6: opset 19, where the Q/DQ
    // scales take the low type).
    const bool autocast = (flags & 8) != 0;
    if (autocast && (flags & 0x40) != 0)
    {
        builder.opset("", 19);
    }
    Program program(builder, bytes);
    program.run((flags & 1) != 0);

    Run run;
    run.model = (gFolder / "model.onnx").string();
    run.fixed = (gFolder / "fixed.onnx").string();
    run.files = {run.model};
    if ((flags & 2) != 0)
    {
        run.files.push_back(kSample + "layers.json");
        run.files.push_back(kSample + "profile.json");
    }
    run.pictures = (flags & 4) != 0;
    run.predict = static_cast<std::uint8_t>(flags >> 4);
    if (autocast)
    {
        run.autocast.target =
            (flags & 0x10) != 0 ? qdq::AutocastOptions::Target::kBf16 : qdq::AutocastOptions::Target::kFp16;
        run.autocast.castIo = (flags & 0x20) != 0;
    }
    saveModel(builder, program, run.model);

    inspect(run);
    diagnose(run);
    predict(run);
    fix(run);
    diff(run);
    return 0;
}
