// Generates samples/: one small Q/DQ ONNX model per user report (a-e), plus the engine artifacts each story needs,
// written in the exact formats real TensorRT artifacts use (../shared/realdata/FORMATS.md). Deterministic.
//
//   qdq-make-samples SAMPLES_DIR
//
// The engine artifacts describe what TensorRT builds for these graphs, following the behaviour documented in the
// TensorRT developer guide and seen in the real artifacts (reference sections 2-4); they are the project's own files.
#include "tools/onnx_builder.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using qdq::tools::GraphBuilder;

namespace
{

void writeText(const fs::path& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out)
    {
        throw std::runtime_error("cannot write " + path.string());
    }
}

// ---- trtexec writer style -----------------------------------------------------------------------------------------

struct Tensor
{
    std::string name;
    std::string dims; //!< "1,64,56,56"
    std::string format;
};

struct Layer
{
    std::string name;
    std::string type;
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
    std::string parameterType;
    std::string origin;
    std::string extra; //!< more "  \"Key\": value,\n" lines
    std::string metadata;
    double averageMs = 0.0;
};

std::string jsonEscape(const std::string& text)
{
    std::string out;
    for (char c : text)
    {
        switch (c)
        {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\x1e':
            out += "\\u001e";
            break;
        case '\x1f':
            out += "\\u001f";
            break;
        default:
            out += c;
        }
    }
    return out;
}

std::string tensors(const std::vector<Tensor>& list, bool withLocation)
{
    std::string text = "[";
    for (std::size_t i = 0; i < list.size(); ++i)
    {
        text += std::string(i == 0 ? "\n" : ",") + "  {\n    \"Name\": \"" + jsonEscape(list[i].name) + "\",\n" +
                (withLocation ? "    \"Location\": \"Device\",\n" : "") + "    \"Dimensions\": [" + list[i].dims +
                "],\n    \"Format/Datatype\": \"" + list[i].format + "\"\n  }";
    }
    return text + "]";
}

//! --exportLayerInfo JSON. version 82: no Location, no Metadata; 84: Location; 10: Location, StreamId, Metadata.
std::string layerInfoJson(const std::vector<Layer>& layers, const std::vector<std::string>& bindings, int version)
{
    std::string text = "{\"Layers\": [";
    for (std::size_t i = 0; i < layers.size(); ++i)
    {
        const Layer& l = layers[i];
        text += std::string(i == 0 ? "{\n" : ",{\n") + "  \"Name\": \"" + jsonEscape(l.name) + "\",\n" +
                "  \"LayerType\": \"" + l.type + "\",\n" + "  \"Inputs\": " + tensors(l.inputs, version >= 84) + ",\n" +
                "  \"Outputs\": " + tensors(l.outputs, version >= 84) + ",\n" + "  \"ParameterType\": \"" +
                l.parameterType + "\",\n" + l.extra +
                (l.origin.empty() ? "" : "  \"Origin\": \"" + l.origin + "\",\n") + "  \"TacticValue\": \"0x" +
                std::string(15, '0') + std::to_string(i % 10) + "\"";
        if (version >= 10 && version < 80)
        {
            text += ",\n  \"StreamId\": 0,\n  \"Metadata\": \"" + jsonEscape(l.metadata) + "\"";
        }
        text += "\n}";
    }
    text += "],\n\"Bindings\": [";
    for (std::size_t i = 0; i < bindings.size(); ++i)
    {
        text += std::string(i == 0 ? "\"" : "\n,\"") + bindings[i] + "\"";
    }
    return text + "\n]}\n";
}

//! --exportProfile JSON; withMedian from TensorRT 8.4 on.
std::string profileJson(const std::vector<Layer>& layers, int count, bool withMedian)
{
    double total = 0.0;
    for (const auto& l : layers)
    {
        total += l.averageMs;
    }
    char buffer[512];
    std::string text = "[\n  { \"count\" : " + std::to_string(count) + " }\n";
    for (const auto& l : layers)
    {
        double percentage = total > 0 ? 100.0 * l.averageMs / total : 0.0;
        if (withMedian)
        {
            std::snprintf(buffer, sizeof(buffer),
                          "\", \"timeMs\" : %g, \"averageMs\" : %g, \"medianMs\" : %g, \"percentage\" : %g }\n",
                          l.averageMs * count, l.averageMs, l.averageMs, percentage);
        }
        else
        {
            std::snprintf(buffer, sizeof(buffer), "\", \"timeMs\" : %g, \"averageMs\" : %g, \"percentage\" : %g }\n",
                          l.averageMs * count, l.averageMs, percentage);
        }
        text += ", { \"name\" : \"" + jsonEscape(l.name) + buffer;
    }
    return text + "]\n";
}

const char* kFp32 = "Row major linear FP32";
const char* kFp16 = "Row major linear FP16 format";
const char* kInt8Linear = "Row major Int8 format";
const char* kInt8x32 = "Thirty-two wide channel vectorized row major Int8 format";
const char* kInt8x4 = "Four wide channel vectorized row major Int8 format";

std::string scaleLayerKeys()
{
    return "  \"Mode\": \"UNIFORM\",\n  \"Shift\": {\"Type\": \"Float\", \"Count\": 0},\n  \"Scale\": {\"Type\": "
           "\"Float\", \"Count\": 1},\n  \"Power\": {\"Type\": \"Float\", \"Count\": 0},\n  \"ChannelAxis\": 1,\n";
}

std::string convKeys(int outMaps, const char* activation, int weights)
{
    return "  \"Kernel\": [3,3],\n  \"PaddingMode\": \"kEXPLICIT_ROUND_DOWN\",\n  \"PrePadding\": [1,1],\n  "
           "\"PostPadding\": [1,1],\n  \"Stride\": [1,1],\n  \"Dilation\": [1,1],\n  \"OutMaps\": " +
           std::to_string(outMaps) +
           ",\n  \"Groups\": 1,\n  \"Weights\": {\"Type\": \"Int8\", \"Count\": " + std::to_string(weights) +
           "},\n  \"Bias\": {\"Type\": \"Float\", \"Count\": " + std::to_string(outMaps) +
           "},\n  \"HasSparseWeights\": 0,\n  \"Activation\": \"" + activation + "\",\n";
}

//! `"TacticName": ...` line of a layer-info record (detailed profiling verbosity).
std::string tacticName(const char* kernel)
{
    return std::string("  \"TacticName\": \"") + kernel + "\",\n";
}

// ---- report c: ResNet stem loses Conv+MaxPool in explicit INT8 (the embedded demo) --------------------------------

//! x -> QuantizeLinear q -> DequantizeLinear dq, with TensorRT 8-era node names.
std::string namedQdq(GraphBuilder& g, const std::string& q, const std::string& dq, const std::string& tensor,
                     float scale)
{
    std::string s = g.scale(q + "_scale", scale);
    std::string z = g.zeroPoint(q + "_zero_point");
    std::string qo = g.node("QuantizeLinear", q, {tensor, s, z});
    return g.node("DequantizeLinear", dq, {qo, s, z});
}

//! A float 3x3 weight with a per-channel Q/DQ pair (axis 0), pytorch-quantization style.
std::string namedWeight(GraphBuilder& g, const std::string& name, const std::string& q, const std::string& dq, long out,
                        long in)
{
    std::string w = g.weight(name, {out, in, 3, 3});
    std::string s = g.scaleVector(q + "_scale", std::vector<float>(static_cast<std::size_t>(out), 0.004f));
    std::string qo = g.node("QuantizeLinear", q, {w, s});
    g.intAttribute(q, "axis", 0);
    std::string dqo = g.node("DequantizeLinear", dq, {qo, s});
    g.intAttribute(dq, "axis", 0);
    return dqo;
}

void writeSampleCModel(const fs::path& dir)
{
    GraphBuilder g;
    std::string x = g.input("input", {1, 3, -1, -1});
    auto qdqNamed = [&](const std::string& q, const std::string& dq, const std::string& tensor, float scale)
    { return namedQdq(g, q, dq, tensor, scale); };
    auto weight = [&](const std::string& name, const std::string& q, const std::string& dq, long out, long in)
    { return namedWeight(g, name, q, dq, out, in); };
    auto bn = [&](const std::string& name, const std::string& tensor, long channels)
    {
        return g.node("BatchNormalization", name,
                      {tensor, g.weight(name + ".weight", {channels}, 1.0f), g.weight(name + ".bias", {channels}, 0.0f),
                       g.weight(name + ".running_mean", {channels}, 0.0f),
                       g.weight(name + ".running_var", {channels}, 1.0f)});
    };
    std::string in = qdqNamed("QuantizeLinear_2", "DequantizeLinear_3", x, 0.0186f);
    std::string c =
        g.node("Conv", "Conv_9", {in, weight("conv1.weight", "QuantizeLinear_7", "DequantizeLinear_8", 16, 3)});
    std::string r = g.node("Relu", "Relu_11", {bn("BatchNormalization_10", c, 16)});
    std::string p = g.node("MaxPool", "MaxPool_12", {r}, {"onnx::MaxPool_136"});
    g.intsAttribute("MaxPool_12", "kernel_shape", {3, 3});
    std::string c1 = g.node("Conv", "Conv_22",
                            {qdqNamed("QuantizeLinear_15", "DequantizeLinear_16", p, 0.0271f),
                             weight("layer1.0.conv1.weight", "QuantizeLinear_20", "DequantizeLinear_21", 16, 16)});
    std::string r1 = g.node("Relu", "Relu_24", {bn("BatchNormalization_23", c1, 16)});
    std::string c2 = g.node("Conv", "Conv_34",
                            {qdqNamed("QuantizeLinear_27", "DequantizeLinear_28", r1, 0.0193f),
                             weight("layer1.0.conv2.weight", "QuantizeLinear_32", "DequantizeLinear_33", 16, 16)});
    std::string sum = g.node("Add", "Add_36", {bn("BatchNormalization_35", c2, 16), p});
    g.output(g.node("Relu", "Relu_37", {sum}, {"output"}));
    g.save((dir / "model.onnx").string());
}

std::vector<Layer> sampleCLayers()
{
    // TensorRT 8.2 (the report's version): unfused Quantize nodes are Scale layers, no Location/Metadata keys.
    return {
        {"QuantizeLinear_2",
         "Scale",
         {{"input", "128,3,224,224", kFp32}},
         {{"input_quantized", "128,3,224,224", kInt8x4}},
         "Scale",
         "",
         scaleLayerKeys(),
         "",
         0.2785},
        {"conv1.weight + QuantizeLinear_7 + Conv_9 + BatchNormalization_10 + Relu_11",
         "CaskConvolution",
         {{"input_quantized", "128,3,224,224", kInt8x4}},
         {{"onnx::MaxPool_136", "128,16,112,112", kFp32}},
         "Convolution",
         "",
         convKeys(16, "RELU", 432),
         "",
         0.9131},
        {"MaxPool_12",
         "TiledPooling",
         {{"onnx::MaxPool_136", "128,16,112,112", kFp32}},
         {{"Reformatted Output Tensor 0 to MaxPool_12", "128,16,56,56", kFp32}},
         "Pooling",
         "",
         "  \"PoolingType\": \"MAX\",\n  \"WindowSize\": [3,3],\n",
         "",
         0.4318},
        {"Reformatting CopyNode for Output Tensor 0 to MaxPool_12",
         "Reformat",
         {{"Reformatted Output Tensor 0 to MaxPool_12", "128,16,56,56", kFp32}},
         {{"onnx::MaxPool_136_pooled", "128,16,56,56", kInt8x32}},
         "Reformat",
         "REFORMAT",
         "",
         "",
         0.1677},
        {"QuantizeLinear_15",
         "Scale",
         {{"onnx::MaxPool_136_pooled", "128,16,56,56", kInt8x32}},
         {{"onnx::DequantizeLinear_140", "128,16,56,56", kInt8x32}},
         "Scale",
         "",
         scaleLayerKeys(),
         "",
         0.1256},
        {"layer1.0.conv1.weight + QuantizeLinear_20 + Conv_22 + BatchNormalization_23 + Relu_24",
         "CaskConvolution",
         {{"onnx::DequantizeLinear_140", "128,16,56,56", kInt8x32}},
         {{"onnx::DequantizeLinear_154", "128,16,56,56", kInt8x32}},
         "Convolution",
         "",
         convKeys(16, "RELU", 2304),
         "",
         0.3512},
        {"layer1.0.conv2.weight + QuantizeLinear_32 + Conv_34 + BatchNormalization_35 + Add_36 + Relu_37",
         "CaskConvolution",
         {{"onnx::DequantizeLinear_154", "128,16,56,56", kInt8x32},
          {"onnx::MaxPool_136_pooled", "128,16,56,56", kInt8x32}},
         {{"output", "128,16,56,56", kFp32}},
         "Convolution",
         "",
         convKeys(16, "RELU", 2304),
         "",
         0.4023},
    };
}

void sampleC(const fs::path& dir)
{
    writeSampleCModel(dir);
    std::vector<Layer> layers = sampleCLayers();
    writeText(dir / "layers.json", layerInfoJson(layers, {"input", "output"}, 82));
    writeText(dir / "profile.json", profileJson(layers, 781, false));
}

// ---- report a: a plugin between DQ and Q -------------------------------------------------------------------------

void sampleA(const fs::path& dir)
{
    GraphBuilder g;
    g.opset("custom.plugins", 1);
    std::string x = g.qdq("/input_q", g.input("tokens", {1, 64, -1, -1}), 0.02f);
    std::string c0 = g.node("Conv", "/encoder/proj/Conv", {x, g.quantizedWeight("encoder.proj", 64, 64, 1)});
    std::string dq = g.qdq("/encoder/softmax/input_q", c0, 0.031f);
    std::string soft = g.node("IntSoftmax", "/encoder/IntSoftmax", {dq}, {}, "custom.plugins");
    std::string out = g.qdq("/encoder/softmax/output_q", soft, 0.0039f);
    g.output(g.node("Conv", "/encoder/out/Conv", {out, g.quantizedWeight("encoder.out", 64, 64, 1)}, {"logits"}),
             {1, 64, -1, -1}); // the plugin hides the shape from ONNX shape inference
    g.save((dir / "model.onnx").string());

    std::vector<Layer> layers = {
        {"/input_q/QuantizeLinear",
         "Reformat",
         {{"tokens", "1,64,16,16", kFp32}},
         {{"/input_q/QuantizeLinear_output_0", "1,64,16,16", kInt8x32}},
         "Reformat",
         "QDQ",
         "",
         "[ONNX Layer: /input_q/QuantizeLinear]",
         0.0071},
        {"encoder.proj.weight + /encoder.proj/_weight_quantizer/QuantizeLinear + /encoder/proj/Conv",
         "CaskConvolution",
         {{"/input_q/QuantizeLinear_output_0", "1,64,16,16", kInt8x32}},
         {{"/encoder/softmax/input_q/QuantizeLinear_output_0", "1,64,16,16", kInt8x32}},
         "Convolution",
         "",
         convKeys(64, "NONE", 4096),
         "[ONNX Layer: /encoder/proj/Conv]\x1e[ONNX Layer: /encoder/softmax/input_q/QuantizeLinear]",
         0.0102},
        {"/encoder/softmax/input_q/DequantizeLinear",
         "Reformat",
         {{"/encoder/softmax/input_q/QuantizeLinear_output_0", "1,64,16,16", kInt8x32}},
         {{"/encoder/softmax/input_q/DequantizeLinear_output_0", "1,64,16,16", kFp32}},
         "Reformat",
         "QDQ",
         "",
         "[ONNX Layer: /encoder/softmax/input_q/DequantizeLinear]",
         0.0083},
        {"/encoder/IntSoftmax",
         "PluginV2",
         {{"/encoder/softmax/input_q/DequantizeLinear_output_0", "1,64,16,16", kFp32}},
         {{"/encoder/IntSoftmax_out", "1,64,16,16", kFp32}},
         "PluginV2",
         "",
         "  \"PluginType\": \"IntSoftmax\",\n  \"PluginVersion\": \"1\",\n",
         "[ONNX Layer: /encoder/IntSoftmax]",
         0.0215},
        {"/encoder/softmax/output_q/QuantizeLinear",
         "Reformat",
         {{"/encoder/IntSoftmax_out", "1,64,16,16", kFp32}},
         {{"/encoder/softmax/output_q/QuantizeLinear_output_0", "1,64,16,16", kInt8x32}},
         "Reformat",
         "QDQ",
         "",
         "[ONNX Layer: /encoder/softmax/output_q/QuantizeLinear]",
         0.0079},
        {"encoder.out.weight + /encoder.out/_weight_quantizer/QuantizeLinear + /encoder/out/Conv",
         "CaskConvolution",
         {{"/encoder/softmax/output_q/QuantizeLinear_output_0", "1,64,16,16", kInt8x32}},
         {{"logits", "1,64,16,16", kFp32}},
         "Convolution",
         "",
         convKeys(64, "NONE", 4096),
         "[ONNX Layer: /encoder/out/Conv]\x1e[ONNX Layer: /encoder/softmax/output_q/DequantizeLinear]",
         0.0098},
    };
    writeText(dir / "layers.json", layerInfoJson(layers, {"tokens", "logits"}, 10));
    writeText(dir / "profile.json", profileJson(layers, 2000, true));
}

// ---- report b: YOLOv8 C2f block: Scale layers around Split, PointWise SiLU + Add, Concat scales --------------------

void sampleB(const fs::path& dir)
{
    GraphBuilder g;
    auto silu = [&](const std::string& prefix, const std::string& tensor)
    {
        std::string s = g.node("Sigmoid", prefix + "/act/Sigmoid", {tensor});
        return g.node("Mul", prefix + "/act/Mul", {tensor, s});
    };
    std::string x = g.qdq("/model.1/cv1/conv/_input_quantizer", g.input("images", {1, 16, -1, -1}), 0.0213f);
    std::string c1 = g.node("Conv", "/model.1/cv1/conv/Conv", {x, g.quantizedWeight("model.1.cv1.conv", 32, 16, 1)});
    std::string a1 = silu("/model.1/cv1", c1);
    // Q/DQ right after the first Conv-SiLU, then Split, then Q/DQ with a different scale before the next conv.
    std::string q1 = g.qdq("/model.1/cv1/act/output_quantizer", a1, 0.0412f);
    std::string split = g.node("Split", "/model.1/Split", {q1}, {"/model.1/Split_output_0", "/model.1/Split_output_1"});
    (void)split;
    g.intAttribute("/model.1/Split", "axis", 1); // the channels, as YOLOv8's C2f splits them
    std::string branch = "/model.1/Split_output_1";
    std::string m1 = g.node("Conv", "/model.1/m.0/cv1/conv/Conv",
                            {g.qdq("/model.1/m.0/cv1/conv/_input_quantizer", branch, 0.0377f),
                             g.quantizedWeight("model.1.m.0.cv1.conv", 16, 16)});
    std::string ma1 = silu("/model.1/m.0/cv1", m1);
    std::string m2 = g.node("Conv", "/model.1/m.0/cv2/conv/Conv",
                            {g.qdq("/model.1/m.0/cv2/conv/_input_quantizer", ma1, 0.0290f),
                             g.quantizedWeight("model.1.m.0.cv2.conv", 16, 16)});
    std::string ma2 = silu("/model.1/m.0/cv2", m2);
    // Residual Add after SiLU with the Q/DQ only on the residual branch (the placement the user tried after the
    // maintainer's suggestion): the Add still runs as its own PointWise layer.
    std::string add =
        g.node("Add", "/model.1/m.0/Add", {g.qdq("/model.1/m.0/add_input0_quantizer", branch, 0.0377f), ma2});
    std::string concat =
        g.node("Concat", "/model.1/Concat", {"/model.1/Split_output_0", "/model.1/Split_output_1", add},
               {"/model.1/Concat_output_0"});
    g.intAttribute("/model.1/Concat", "axis", 1);
    std::string c2 = g.node("Conv", "/model.1/cv2/conv/Conv",
                            {g.qdq("/model.1/cv2/conv/_input_quantizer", concat, 0.0514f),
                             g.quantizedWeight("model.1.cv2.conv", 32, 48, 1)});
    g.output(silu("/model.1/cv2", c2));
    g.save((dir / "model.onnx").string());
}

// ---- report d: residual Add runs FP32, Concat falls to an FP32 copy (TensorRT 8.0 verbose log) ---------------------

void sampleD(const fs::path& dir)
{
    GraphBuilder g;
    std::string x =
        namedQdq(g, "QuantizeLinear_95", "DequantizeLinear_96", g.input("input.1", {1, 3, -1, -1}), 0.0178f);
    std::string c0 =
        g.node("Conv", "Conv_101",
               {x, namedWeight(g, "backbone.conv1.weight", "QuantizeLinear_98", "DequantizeLinear_99", 32, 3)});
    std::string r0 = g.node("Relu", "Relu_108", {c0}, {"451"});
    std::string c1 =
        g.node("Conv", "Conv_142",
               {namedQdq(g, "QuantizeLinear_136", "DequantizeLinear_137", r0, 0.0263f),
                namedWeight(g, "backbone.block.conv.weight", "QuantizeLinear_139", "DequantizeLinear_140", 32, 32)});
    std::string r1 = g.node("Relu", "Relu_149", {c1}, {"477"});
    std::string c2 =
        g.node("Conv", "Conv_84",
               {namedQdq(g, "QuantizeLinear_78", "DequantizeLinear_79", r0, 0.0263f),
                namedWeight(g, "backbone.side.conv.weight", "QuantizeLinear_81", "DequantizeLinear_82", 32, 32)});
    std::string r2 = g.node("Relu", "Relu_91", {c2}, {"438"});
    // The residual Add reads 477 in float while the Concat reads the same tensor: TensorRT copies it.
    std::string add = g.node("Add", "Add_132", {r0, r1}, {"478"});
    g.output(g.node("Relu", "Relu_133", {add}, {"residual_out"}));
    std::string cat = g.node("Concat", "Concat_150", {r1, r2}, {"479"});
    g.intAttribute("Concat_150", "axis", 1);
    std::string head =
        g.node("Conv", "Conv_160",
               {namedQdq(g, "QuantizeLinear_154", "DequantizeLinear_155", cat, 0.0301f),
                namedWeight(g, "head.conv.weight", "QuantizeLinear_157", "DequantizeLinear_158", 16, 64)},
               {"output"});
    g.output(head);
    g.save((dir / "model.onnx").string());

    const std::string stamp = "[03/23/2021-14:10:47] ";
    std::string log;
    log += "&&&& RUNNING TensorRT.trtexec [TensorRT v8003] # trtexec --onnx=model.onnx --int8 --verbose\n";
    log += stamp + "[I] === Build Options ===\n" + stamp + "[I] Precision: FP32+INT8\n" + stamp +
           "[I] TensorRT version: 8003\n";
    for (const char* node : {"QuantizeLinear_95", "Conv_101", "Relu_108", "QuantizeLinear_136", "Conv_142", "Relu_149",
                             "QuantizeLinear_78", "Conv_84", "Relu_91", "Add_132", "Relu_133", "Concat_150",
                             "QuantizeLinear_154", "Conv_160"})
    {
        log += stamp + "[V] [TRT] Registering layer: " + node + " for ONNX node: " + node + "\n";
    }
    log += stamp + "[W] [TRT] Calibrator won't be used in explicit precision mode. Use quantization aware training to "
                   "generate network with Quantize/Dequantize nodes.\n";
    log += stamp + "[V] [TRT] Eliminating concatenation Concat_150\n";
    log += stamp + "[V] [TRT] Generating copy for 477 to 479 because of stomping hazard.\n";
    log += stamp + "[V] [TRT] Engine Layer Information:\n";
    log += "Layer(Scale): QuantizeLinear_95_quantize_scale_node, Tactic: 0, input.1[Float(32,3,320,320)] -> "
           "input.1_q[Int8(32,3,320,320)]\n";
    log += "Layer(CaskConvolution): backbone.conv1.weight + QuantizeLinear_98_quantize_scale_node + Conv_101 + "
           "Relu_108, Tactic: 7144526460361122478, input.1_q[Int8(32,3,320,320)] -> 451[Float(32,32,160,160)]\n";
    log += "Layer(Scale): QuantizeLinear_136_quantize_scale_node, Tactic: 0, 451[Float(32,32,160,160)] -> "
           "451_q[Int8(32,32,160,160)]\n";
    log += "Layer(CaskConvolution): backbone.block.conv.weight + QuantizeLinear_139_quantize_scale_node + Conv_142 + "
           "Relu_149 || backbone.side.conv.weight + QuantizeLinear_81_quantize_scale_node + Conv_84 + Relu_91, Tactic: "
           "-3908975881807046106, 451_q[Int8(32,32,160,160)] -> Conv_142 + Relu_149 || Conv_84 + "
           "Relu_91[Float(32,64,160,160)]\n";
    log += "Layer(ElementWise): Add_132 + Relu_133, Tactic: 1, 451[Float(32,32,160,160)], Conv_142 + Relu_149 || "
           "Conv_84 + Relu_91[Float(32,32,160,160)] -> residual_out[Float(32,32,160,160)]\n";
    log += "Layer(Reformat): 477 copy, Tactic: 0, Conv_142 + Relu_149 || Conv_84 + Relu_91[Float(32,32,160,160)] -> "
           "479[Float(32,32,160,160)]\n";
    log += "Layer(Scale): QuantizeLinear_154_quantize_scale_node, Tactic: 0, 479[Float(64,32,160,160)] -> "
           "479_q[Int8(64,32,160,160)]\n";
    log += "Layer(CaskConvolution): head.conv.weight + QuantizeLinear_157_quantize_scale_node + Conv_160, Tactic: "
           "7144526460361122478, 479_q[Int8(64,32,160,160)] -> output[Float(64,16,160,160)]\n";
    log += stamp + "[I] === Profile (544 iterations ) ===\n";
    log += stamp + "[I]                                                                     Layer   Time (ms)   Avg. "
                   "Time (ms)   Time %\n";
    struct Row
    {
        const char* name;
        double total;
    };
    for (Row row :
         {Row{"QuantizeLinear_95_quantize_scale_node", 61.2},
          Row{"backbone.conv1.weight + QuantizeLinear_98_quantize_scale_node + Conv_101 + Relu_108", 212.5},
          Row{"QuantizeLinear_136_quantize_scale_node", 98.1},
          Row{"backbone.block.conv.weight + QuantizeLinear_139_quantize_scale_node + Conv_142 + Relu_149 || "
              "backbone.side.conv.weight + QuantizeLinear_81_quantize_scale_node + Conv_84 + Relu_91",
              301.4},
          Row{"Add_132 + Relu_133", 143.6}, Row{"477 copy", 88.9}, Row{"QuantizeLinear_154_quantize_scale_node", 131.0},
          Row{"head.conv.weight + QuantizeLinear_157_quantize_scale_node + Conv_160", 176.3}})
    {
        char buffer[512];
        std::snprintf(buffer, sizeof(buffer), "%s[I] %72s %11.2f %16.4f %8.1f\n", stamp.c_str(), row.name, row.total,
                      row.total / 544.0, row.total / 12.13);
        log += buffer;
    }
    log += "&&&& PASSED TensorRT.trtexec [TensorRT v8003] # trtexec --onnx=model.onnx --int8 --verbose\n";
    writeText(dir / "build.log", log);
}

// ---- report e: explicit slower than implicit: Quantize hoisted above a Concat, ConvTranspose + act, FP16 I/O
// ----------

//! The head convolution's kernels (RTX 3060, Ampere): the implicit build writes FP16, the explicit one FP32 (its Q/DQ
//! leave the output float), so the two builds pick different INT8 kernels: the ~5% "tactic selection" of the report.
constexpr const char* kImplicitHeadTactic = "sm80_xmma_fprop_implicit_gemm_interleaved_i8f16_i8i32_f32_nchw_vect_c_"
                                            "32kcrs_vect_c_32_nchw_tilesize128x128x64_stage3_warpsize2x2x1_g1_"
                                            "tensor16x8x32";
constexpr const char* kExplicitHeadTactic = "sm80_xmma_fprop_implicit_gemm_interleaved_i8f32_i8i32_f32_nchw_vect_c_"
                                            "32kcrs_vect_c_32_nchw_tilesize64x64x64_stage4_warpsize2x2x1_g1_"
                                            "tensor16x8x32";

void writeSampleEModel(const fs::path& dir)
{
    GraphBuilder g;
    std::string x = g.input("features", {1, 32, -1, -1});
    std::string a = g.node("Resize", "/neck/up/Resize", {x}, {"/neck/up/Resize_output_0"});
    std::string up =
        g.node("ConvTranspose", "/neck/deconv/ConvTranspose",
               {g.qdq("/neck/deconv/input_quantizer", x, 0.0211f), g.quantizedWeight("neck.deconv", 32, 32, 2)});
    std::string act = g.node("Relu", "/neck/deconv/act/Relu", {up});
    std::string b = g.qdq("/neck/deconv/output_quantizer", act, 0.0342f);
    std::string skip = g.node("Sigmoid", "/neck/skip/Sigmoid", {x});
    std::string cat = g.node("Concat", "/neck/Concat", {a, b, skip}, {"/neck/Concat_output_0"});
    g.intAttribute("/neck/Concat", "axis", 1);
    std::string conv =
        g.node("Conv", "/head/conv/Conv",
               {g.qdq("/head/conv/input_quantizer", cat, 0.0388f), g.quantizedWeight("head.conv", 32, 96, 1)});
    g.output(g.node("Relu", "/head/act/Relu", {conv}, {"heatmap"}));
    g.save((dir / "model.onnx").string());
}

std::vector<Layer> sampleEImplicitLayers()
{
    // The implicit INT8 engine (TensorRT 10.8 --int8 --fp16 on the FP32 model) and the explicit one (this model).
    return {
        {"Reformatting CopyNode for Network Input features",
         "Reformat",
         {{"features", "1,32,80,80", kFp16}},
         {{"features_reformatted", "1,32,80,80", "Channel major FP16 format where channel % 8 == 0"}},
         "Reformat",
         "REFORMAT",
         "",
         "",
         0.0061},
        {"/neck/up/Resize",
         "Resize",
         {{"features_reformatted", "1,32,80,80", kFp16}},
         {{"/neck/up/Resize_output_0", "1,32,160,160", kFp16}},
         "Resize",
         "",
         "",
         "[ONNX Layer: /neck/up/Resize]",
         0.0147},
        {"/neck/deconv/ConvTranspose + /neck/deconv/act/Relu",
         "CaskDeconvolution",
         {{"features_reformatted", "1,32,80,80", kFp16}},
         {{"/neck/deconv/act/Relu_output_0", "1,32,160,160", kFp16}},
         "Deconvolution",
         "",
         "",
         "[ONNX Layer: /neck/deconv/ConvTranspose]\x1e[ONNX Layer: /neck/deconv/act/Relu]",
         0.0213},
        {"PWN(/neck/skip/Sigmoid)",
         "PointWiseV2",
         {{"features_reformatted", "1,32,80,80", kFp16}},
         {{"/neck/skip/Sigmoid_output_0", "1,32,160,160", kFp16}},
         "PointWise",
         "",
         "",
         "[ONNX Layer: /neck/skip/Sigmoid]",
         0.0081},
        {"/neck/Concat_output_0 Quantize + Reformat",
         "Reformat",
         {{"/neck/Concat_output_0", "1,96,160,160", kFp16}},
         {{"/neck/Concat_output_0_int8", "1,96,160,160", kInt8x32}},
         "Reformat",
         "REFORMAT",
         "",
         "[ONNX Layer: /neck/Concat]",
         0.0119},
        {"/head/conv/Conv + /head/act/Relu",
         "CaskConvolution",
         {{"/neck/Concat_output_0_int8", "1,96,160,160", kInt8x32}},
         {{"heatmap", "1,32,160,160", kFp16}},
         "Convolution",
         "",
         convKeys(32, "RELU", 3072) + tacticName(kImplicitHeadTactic),
         "[ONNX Layer: /head/conv/Conv]\x1e[ONNX Layer: /head/act/Relu]",
         0.0188},
    };
}

//! The explicit engine's input reformat and the Resize branch of the Concat, quantized by a clone of the head's Q.
std::vector<Layer> sampleEExplicitResizeBranch()
{
    return {
        {"Reformatting CopyNode for Network Input features",
         "Reformat",
         {{"features", "1,32,80,80", kFp16}},
         {{"features_fp32", "1,32,80,80", kFp32}},
         "Reformat",
         "REFORMAT",
         "",
         "",
         0.0064},
        {"/neck/up/Resize",
         "Resize",
         {{"features_fp32", "1,32,80,80", kFp32}},
         {{"/neck/up/Resize_output_0", "1,32,160,160", kFp32}},
         "Resize",
         "",
         "",
         "[ONNX Layer: /neck/up/Resize]",
         0.0262},
        {"/head/conv/input_quantizer/QuantizeLinear_clone_0",
         "Reformat",
         {{"/neck/up/Resize_output_0", "1,32,160,160", kFp32}},
         {{"/neck/Concat_output_0_part0", "1,32,160,160", kInt8x32}},
         "Reformat",
         "QDQ",
         "",
         "[ONNX Layer: /head/conv/input_quantizer/QuantizeLinear]",
         0.0109},
    };
}

//! The explicit engine's ConvTranspose branch of the Concat, between its own Q/DQ pairs.
std::vector<Layer> sampleEExplicitDeconvBranch()
{
    return {
        {"/neck/deconv/input_quantizer/QuantizeLinear",
         "Reformat",
         {{"features_fp32", "1,32,80,80", kFp32}},
         {{"/neck/deconv/input_quantizer/QuantizeLinear_output_0", "1,32,80,80", kInt8x32}},
         "Reformat",
         "QDQ",
         "",
         "[ONNX Layer: /neck/deconv/input_quantizer/QuantizeLinear]",
         0.0052},
        {"neck.deconv.weight + /neck.deconv/_weight_quantizer/QuantizeLinear + /neck/deconv/ConvTranspose",
         "CaskDeconvolution",
         {{"/neck/deconv/input_quantizer/QuantizeLinear_output_0", "1,32,80,80", kInt8x32}},
         {{"/neck/deconv/ConvTranspose_output_0", "1,32,160,160", kFp32}},
         "Deconvolution",
         "",
         "",
         "[ONNX Layer: /neck/deconv/ConvTranspose]\x1e[ONNX Layer: /neck/deconv/input_quantizer/DequantizeLinear]",
         0.0241},
        {"PWN(/neck/deconv/act/Relu)",
         "PointWiseV2",
         {{"/neck/deconv/ConvTranspose_output_0", "1,32,160,160", kFp32}},
         {{"/neck/deconv/act/Relu_output_0", "1,32,160,160", kFp32}},
         "PointWise",
         "",
         "",
         "[ONNX Layer: /neck/deconv/act/Relu]",
         0.0097},
        {"/neck/deconv/output_quantizer/QuantizeLinear",
         "Reformat",
         {{"/neck/deconv/act/Relu_output_0", "1,32,160,160", kFp32}},
         {{"/neck/deconv/output_quantizer/QuantizeLinear_output_0", "1,32,160,160", kInt8x32}},
         "Reformat",
         "QDQ",
         "",
         "[ONNX Layer: /neck/deconv/output_quantizer/QuantizeLinear]",
         0.0104},
        {"/neck/deconv/output_quantizer/DequantizeLinear + /head/conv/input_quantizer/QuantizeLinear_clone_1",
         "Reformat",
         {{"/neck/deconv/output_quantizer/QuantizeLinear_output_0", "1,32,160,160", kInt8x32}},
         {{"/neck/Concat_output_0_part1", "1,32,160,160", kInt8x32}},
         "Reformat",
         "QDQ",
         "",
         "[ONNX Layer: /neck/deconv/output_quantizer/DequantizeLinear]\x1e[ONNX Layer: "
         "/head/conv/input_quantizer/QuantizeLinear]",
         0.0098},
    };
}

//! The explicit engine's Sigmoid branch of the Concat, the head convolution and the output reformat.
std::vector<Layer> sampleEExplicitSkipBranchAndHead()
{
    return {
        {"PWN(/neck/skip/Sigmoid)",
         "PointWiseV2",
         {{"features_fp32", "1,32,80,80", kFp32}},
         {{"/neck/skip/Sigmoid_output_0", "1,32,160,160", kFp32}},
         "PointWise",
         "",
         "",
         "[ONNX Layer: /neck/skip/Sigmoid]",
         0.0129},
        {"/head/conv/input_quantizer/QuantizeLinear_clone_2",
         "Reformat",
         {{"/neck/skip/Sigmoid_output_0", "1,32,160,160", kFp32}},
         {{"/neck/Concat_output_0_part2", "1,32,160,160", kInt8x32}},
         "Reformat",
         "QDQ",
         "",
         "[ONNX Layer: /head/conv/input_quantizer/QuantizeLinear]",
         0.0111},
        {"head.conv.weight + /head.conv/_weight_quantizer/QuantizeLinear + /head/conv/Conv + /head/act/Relu",
         "CaskConvolution",
         {{"/neck/Concat_output_0_int8", "1,96,160,160", kInt8x32}},
         {{"heatmap_fp32", "1,32,160,160", kFp32}},
         "Convolution",
         "",
         convKeys(32, "RELU", 3072) + tacticName(kExplicitHeadTactic),
         "[ONNX Layer: /head/conv/Conv]\x1e[ONNX Layer: /head/conv/input_quantizer/DequantizeLinear]\x1e[ONNX "
         "Layer: /head/act/Relu]",
         0.0197},
        {"Reformatting CopyNode for Network Output heatmap",
         "Reformat",
         {{"heatmap_fp32", "1,32,160,160", kFp32}},
         {{"heatmap", "1,32,160,160", kFp16}},
         "Reformat",
         "REFORMAT",
         "",
         "",
         0.0071},
    };
}

std::vector<Layer> sampleEExplicitLayers()
{
    std::vector<Layer> layers = sampleEExplicitResizeBranch();
    for (std::vector<Layer> part : {sampleEExplicitDeconvBranch(), sampleEExplicitSkipBranchAndHead()})
    {
        layers.insert(layers.end(), part.begin(), part.end());
    }
    return layers;
}

void sampleE(const fs::path& dir)
{
    writeSampleEModel(dir);
    std::vector<Layer> implicitLayers = sampleEImplicitLayers();
    std::vector<Layer> explicitLayers = sampleEExplicitLayers();
    fs::create_directories(dir / "implicit");
    fs::create_directories(dir / "explicit");
    writeText(dir / "implicit" / "layers.json", layerInfoJson(implicitLayers, {"features", "heatmap"}, 10));
    writeText(dir / "implicit" / "profile.json", profileJson(implicitLayers, 5000, true));
    writeText(dir / "explicit" / "layers.json", layerInfoJson(explicitLayers, {"features", "heatmap"}, 10));
    writeText(dir / "explicit" / "profile.json", profileJson(explicitLayers, 5000, true));
    (void)kInt8Linear;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 2)
    {
        std::fprintf(stderr, "usage: qdq-make-samples SAMPLES_DIR\n");
        return 2;
    }
    fs::path root = argv[1];
    try
    {
        struct Sample
        {
            const char* folder;
            void (*make)(const fs::path&);
        };
        for (Sample sample :
             {Sample{"a-plugin-between-dq-and-q", sampleA}, Sample{"b-yolov8-split-concat-silu", sampleB},
              Sample{"c-resnet-conv-maxpool", sampleC}, Sample{"d-residual-add-concat-fp32", sampleD},
              Sample{"e-explicit-slower-than-implicit", sampleE}})
        {
            fs::path dir = root / sample.folder;
            fs::create_directories(dir);
            sample.make(dir);
            std::printf("wrote %s\n", dir.c_str());
        }
    }
    catch (const std::exception& error)
    {
        std::fprintf(stderr, "qdq-make-samples: %s\n", error.what());
        return 1;
    }
    return 0;
}
