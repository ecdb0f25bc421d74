// libFuzzer target: the engine simulator and the prediction check on graphs the fuzz input describes. Random bytes
// seldom form an ONNX model that reaches the simulator's interesting cases, so the bytes are a small program instead:
// each step adds one node (the op from a list of the ones the simulator treats specially) reading earlier tensors, a
// later one (forward references make cycles and dangling inputs) or constants; Q/DQ pairs get scales from the bytes.
// The graph is serialized and read back through the real ONNX reader, predicted for TensorRT 8.x or 10.x, rendered,
// and checked against an engine whose layers are the prediction's own (names, types and tensors). Any exception
// other than InputError, a sanitizer report or a hang is a bug.
#include "fuzz_common.h"
#include "graph_program.h"
#include "qdq/analysis.h"
#include "qdq/predict.h"
#include "qdq/prediction_check.h"
#include "tools/onnx_builder.h"

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size > 4096)
    {
        return 0;
    }
    qdq::fuzz::Bytes bytes(data, size);
    qdq::SimulationOptions options;
    const std::uint8_t flags = bytes.next();
    options.trtMajor = (flags & 3) == 0 ? 0 : (flags & 3) == 1 ? 8 : 10;
    options.trtMinor = (flags >> 2) & 7;
    options.fp16 = (flags & 32) != 0;
    options.int8 = (flags & 64) != 0;

    qdq::tools::GraphBuilder g;
    std::vector<std::string> tensors = {g.input("x")};
    std::size_t step = 0;
    while (!bytes.empty() && step < 200)
    {
        const std::string op = qdq::fuzz::kGraphOps[bytes.next() % qdq::fuzz::kGraphOpCount];
        const std::uint8_t pick = bytes.next();
        // A pick past the tensors so far names a tensor a later step writes (or none): cycles and dangling inputs.
        const std::string input =
            pick < 240 ? tensors[pick % tensors.size()] : "n" + std::to_string(step + (pick - 240)) + "_out";
        const std::string other = tensors[bytes.next() % tensors.size()];
        const std::string name = "n" + std::to_string(step++);
        std::string out;
        if (op == "Q/DQ")
        {
            out = g.qdq(name, input, 0.01f + static_cast<float>(bytes.next() % 4) * 0.01f);
        }
        else if (op == "Conv")
        {
            const bool quantized = (bytes.next() & 1) != 0;
            out = g.node("Conv", name,
                         {input, quantized ? g.quantizedWeight(name + "w", 4, 4) : g.weight(name + ".w", {4, 4, 3, 3})},
                         {name + "_out"});
        }
        else if (op == "Gemm" || op == "MatMul")
        {
            out = g.node(op, name, {input, g.weight(name + ".w", {4, 4})}, {name + "_out"});
        }
        else if (op == "Add" || op == "Mul" || op == "Concat")
        {
            const bool constant = (bytes.next() & 1) != 0;
            out = g.node(op, name, {input, constant ? g.weight(name + ".c", {1}) : other}, {name + "_out"});
            if (op == "Concat")
            {
                g.intAttribute(name, "axis", 1);
            }
        }
        else if (op == "Reshape")
        {
            out = g.node(op, name, {input, g.int32Constant(name + ".shape", {2})}, {name + "_out"});
        }
        else if (op == "custom")
        {
            g.opset("com.example", 1);
            out = g.node("IntSoftmax", name, {input}, {name + "_out"}, "com.example");
        }
        else
        {
            out = g.node(op, name, {input}, {name + "_out"});
        }
        tensors.push_back(out);
        if ((bytes.next() & 7) == 0)
        {
            g.output(out);
        }
    }
    g.output(tensors.back());
    const std::string path = "fuzz.onnx";
    try
    {
        qdq::OnnxGraph graph = g.build(path);
        qdq::Prediction prediction = qdq::predictEngine(graph, options);
        (void)qdq::renderPredictionJson(prediction, graph, path);
        (void)qdq::renderPredictionText(prediction, graph, path);
        // The prediction held against an engine made of its own layers.
        qdq::Inputs inputs;
        inputs.onnx = std::move(graph);
        qdq::Prediction again = qdq::predictEngine(*inputs.onnx, options);
        qdq::EnginePlan plan;
        for (const auto& layer : again.layers)
        {
            qdq::EngineLayer engineLayer;
            engineLayer.setName(layer.name);
            engineLayer.type = std::string(layer.kind);
            plan.layers.push_back(std::move(engineLayer));
        }
        inputs.layerInfo = std::move(plan);
        qdq::Report report = qdq::diagnose(inputs);
        if (report.predictionCheck && report.predictionCheck->exact > report.predictionCheck->realLayers)
        {
            __builtin_trap();
        }
    }
    catch (const qdq::InputError& error)
    {
        qdq::fuzz::checkError(error, path);
    }
    return 0;
}
