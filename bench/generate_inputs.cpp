// Generators for large benchmark inputs, written in the exact formats real TensorRT artifacts use
// (../shared/realdata/FORMATS.md): a verbose build log, a detailed layer-info JSON, its profile JSON, and a Q/DQ ONNX
// model with inline weights. Deterministic: the same arguments give the same bytes.
#include "bench/generate_inputs.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace qdq::bench
{

namespace
{

class Output
{
public:
    explicit Output(const std::string& path) : mFile(std::fopen(path.c_str(), "wb"))
    {
        if (mFile == nullptr)
        {
            throw std::runtime_error("cannot write " + path);
        }
        std::setvbuf(mFile, nullptr, _IOFBF, 1 << 20);
    }
    ~Output()
    {
        if (mFile != nullptr)
        {
            std::fclose(mFile);
        }
    }
    void write(const std::string& text)
    {
        std::fwrite(text.data(), 1, text.size(), mFile);
        mBytes += text.size();
    }
    std::uint64_t bytes() const { return mBytes; }

private:
    std::FILE* mFile;
    std::uint64_t mBytes = 0;
};

std::string layerName(std::size_t i)
{
    return "/model/stage" + std::to_string(i / 64) + "/block" + std::to_string(i % 64) + "/conv/Conv";
}

std::string weightName(std::size_t i)
{
    return "model.stage" + std::to_string(i / 64) + ".block" + std::to_string(i % 64) + ".conv.weight";
}

std::string quantizeName(std::size_t i)
{
    return "/model/stage" + std::to_string(i / 64) + "/block" + std::to_string(i % 64) +
           "/conv/_input_quantizer/QuantizeLinear";
}

std::string hex16(std::uint64_t value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "0x%016llx", static_cast<unsigned long long>(value));
    return buffer;
}

} // namespace

std::uint64_t generateBuildLog(const std::string& path, std::uint64_t targetBytes, std::size_t layers)
{
    Output out(path);
    const std::string stamp = "[11/22/2026-08:00:00] ";
    out.write("&&&& RUNNING TensorRT.trtexec [TensorRT v101601] [b11] # trtexec --onnx=model.onnx --int8 --fp16 "
              "--verbose --dumpProfile\n");
    out.write(stamp + "[I] === Build Options ===\n" + stamp + "[I] Precision: FP32+FP16+INT8\n");
    out.write(stamp + "[I] TensorRT version: 10.16.1\n");
    // The ONNX parser's lines: the network input, the initializers, each node with its inputs and outputs (a chain
    // of Q -> Conv), the marked output (log_graph.h rebuilds the graph from them).
    const std::string shape = " -> (1, 64, 56, 56)[FLOAT]]";
    out.write(stamp + "[V] [TRT] Adding network input: images with dtype: float32, dimensions: (1, 64, 56, 56)\n");
    out.write(stamp + "[V] [TRT] Importing initializer: q_scale\n" + stamp +
              "[V] [TRT] Importing initializer: q_zero_point\n");
    for (std::size_t i = 0; i < layers; ++i)
    {
        out.write(stamp + "[V] [TRT] Importing initializer: " + weightName(i) + "\n");
    }
    std::string activation = "images";
    for (std::size_t i = 0; i < layers; ++i)
    {
        const std::string q = quantizeName(i);
        const std::string conv = layerName(i);
        out.write(stamp + "[V] [TRT] Parsing node: " + q + " [QuantizeLinear]\n");
        out.write(stamp + "[V] [TRT] Searching for input: " + activation + "\n");
        out.write(stamp + "[V] [TRT] " + q + " [QuantizeLinear] inputs: [" + activation + shape +
                  ", [q_scale -> ()[FLOAT]], [q_zero_point -> ()[INT8]], \n");
        out.write(stamp + "[V] [TRT] Registering layer: " + q + " for ONNX node: " + q + "\n");
        out.write(stamp + "[V] [TRT] Registering tensor: " + q + "_output_0 for ONNX tensor: " + q + "_output_0\n");
        out.write(stamp + "[V] [TRT] " + q + " [QuantizeLinear] outputs: [" + q + "_output_0" + shape + ", \n");
        out.write(stamp + "[V] [TRT] Parsing node: " + conv + " [Conv]\n");
        out.write(stamp + "[V] [TRT] " + conv + " [Conv] inputs: [" + q + "_output_0" + shape + ", [" + weightName(i) +
                  " -> (64, 64, 3, 3)[FLOAT]], \n");
        out.write(stamp + "[V] [TRT] Registering layer: " + conv + " for ONNX node: " + conv + "\n");
        activation = conv + "_output_0";
        out.write(stamp + "[V] [TRT] " + conv + " [Conv] outputs: [" + activation + shape + ", \n");
    }
    out.write(stamp + "[V] [TRT] Marking " + activation + "_1 as output: " + activation + "\n");
    out.write(stamp + "[W] [TRT] Calibrator won't be used in explicit precision mode. Use quantization aware training "
                      "to generate network with Quantize/Dequantize nodes.\n");
    for (std::size_t i = 0; i < layers; ++i)
    {
        out.write(stamp + "[V] [TRT] Running: ConstWeightsQuantizeFusion on " + weightName(i) + "\n");
        out.write(stamp + "[V] [TRT] ConstWeightsQuantizeFusion: Fusing " + weightName(i) + " with " + quantizeName(i) +
                  "\n");
        out.write(stamp + "[V] [TRT] QuantizeDoubleInputNodes: fusing " + quantizeName(i + 1) + " into " +
                  layerName(i) + "\n");
    }
    // Tactic timing noise fills the bulk of a real verbose log.
    std::uint64_t tactic = 0x9cb304e2edbc1221ull;
    std::size_t layer = 0;
    const std::uint64_t tailReserve = static_cast<std::uint64_t>(layers) * 420 + 4096;
    while (out.bytes() + tailReserve < targetBytes)
    {
        out.write(stamp + "[V] [TRT] *************** Autotuning format combination: Int8(802816,1:32,14336,256) -> "
                          "Int8(802816,1:32,14336,256) ***************\n");
        out.write(stamp + "[V] [TRT] --------------- Timing Runner: " + layerName(layer) + " (CaskConvolution)\n");
        for (int k = 0; k < 16; ++k)
        {
            tactic = tactic * 6364136223846793005ull + 1442695040888963407ull;
            out.write(stamp +
                      "[V] [TRT] Tactic Name: sm80_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_"
                      "nchw_vect_c_32kcrs_vect_c_32_nchw_vect_c_32_tilesize128x128x64_stage3_warpsize2x2x1_"
                      "g1_tensor16x8x32 Tactic: " +
                      hex16(tactic) + " Time: 0.0" + std::to_string(1000 + k * 37) + "\n");
        }
        out.write(stamp + "[V] [TRT] " + layerName(layer) +
                  " (CaskConvolution[0x80000009]) profiling completed in "
                  "0.0819 seconds. Fastest Tactic: " +
                  hex16(tactic) + " Time: 0.0107\n");
        layer = (layer + 1) % layers;
    }
    out.write(stamp + "[V] [TRT] Engine Layer Information:\n");
    for (std::size_t i = 0; i < layers; ++i)
    {
        out.write("Layer(CaskConvolution): " + weightName(i) + " + " + quantizeName(i) + " + " + layerName(i) +
                  ", Tactic: " + hex16(0x4749124f62d8bd23ull + i) + ", t" + std::to_string(i) +
                  " (Int8[1,64:32,56,56]) -> t" + std::to_string(i + 1) + " (Int8[1,64:32,56,56])\n");
    }
    out.write(stamp + "[I] === Profile (100 iterations ) ===\n");
    out.write(stamp + "[I]    Time(ms)     Avg.(ms)   Median(ms)   Time(%)   Layer\n");
    for (std::size_t i = 0; i < layers; ++i)
    {
        out.write(stamp + "[I]        1.23       0.0123       0.0120       0.1   " + weightName(i) + " + " +
                  quantizeName(i) + " + " + layerName(i) + "\n");
    }
    out.write(stamp + "[I]      123.00       1.2300       1.2000     100.0   Total\n");
    out.write("&&&& PASSED TensorRT.trtexec [TensorRT v101601] [b11]\n");
    return out.bytes();
}

std::uint64_t generateLayerInfo(const std::string& path, std::size_t layers)
{
    Output out(path);
    out.write("{\"Layers\": [");
    for (std::size_t i = 0; i < layers; ++i)
    {
        const bool standaloneQuantize = i % 10 == 0;
        std::string name = standaloneQuantize ? quantizeName(i)
                                              : weightName(i) + " + " + quantizeName(i) + " + " + layerName(i) +
                                                    " + /model/act" + std::to_string(i) + "/Relu";
        std::string record = i == 0 ? "{\n" : ",{\n";
        record += "  \"Name\": \"" + name + "\",\n";
        record += std::string("  \"LayerType\": \"") + (standaloneQuantize ? "Reformat" : "CaskConvolution") + "\",\n";
        record += "  \"Inputs\": [\n  {\n    \"Name\": \"t" + std::to_string(i) +
                  "\",\n    \"Location\": \"Device\",\n    \"Dimensions\": [1,64,56,56],\n    \"Format/Datatype\": "
                  "\"Thirty-two wide channel vectorized row major Int8 format\"\n  }],\n";
        record += "  \"Outputs\": [\n  {\n    \"Name\": \"t" + std::to_string(i + 1) +
                  "\",\n    \"Location\": \"Device\",\n    \"Dimensions\": [1,64,56,56],\n    \"Format/Datatype\": "
                  "\"Thirty-two wide channel vectorized row major Int8 format\"\n  }],\n";
        if (standaloneQuantize)
        {
            record += "  \"ParameterType\": \"Reformat\",\n  \"Origin\": \"QDQ\",\n  \"TacticValue\": "
                      "\"0x00000000000003ea\",\n  \"StreamId\": 0,\n  \"Metadata\": \"[ONNX Layer: " +
                      quantizeName(i) + "]\"\n}";
        }
        else
        {
            record += "  \"ParameterType\": \"Convolution\",\n  \"Kernel\": [3,3],\n  \"PaddingMode\": "
                      "\"kEXPLICIT_ROUND_DOWN\",\n  \"PrePadding\": [1,1],\n  \"PostPadding\": [1,1],\n  \"Stride\": "
                      "[1,1],\n  \"Dilation\": [1,1],\n  \"OutMaps\": 64,\n  \"Groups\": 1,\n  \"Weights\": "
                      "{\"Type\": \"Int8\", \"Count\": 36864},\n  \"Bias\": {\"Type\": \"Float\", \"Count\": 64},\n  "
                      "\"HasBias\": 1,\n  \"HasReLU\": 1,\n  \"HasSparseWeights\": 0,\n  \"HasDynamicFilter\": 0,\n  "
                      "\"HasDynamicBias\": 0,\n  \"HasResidual\": 0,\n  \"ConvXAsActInputIdx\": -1,\n  "
                      "\"BiasAsActInputIdx\": -1,\n  \"ResAsActInputIdx\": -1,\n  \"Activation\": \"RELU\",\n  "
                      "\"TacticName\": \"sm80_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_"
                      "vect_c_32_nchw_vect_c_32_tilesize32x32x64_stage6_warpsize2x1x1_g1_tensor16x8x32_t1r3s3\",\n  "
                      "\"TacticValue\": \"" +
                      hex16(0x4749124f62d8bd23ull + i) +
                      "\",\n  \"StreamId\": 0,\n  \"Metadata\": \"[ONNX Layer: " + layerName(i) +
                      "]\\u001e[ONNX Layer: " + quantizeName(i + 1) + "]\\u001e[ONNX Layer: /model/act" +
                      std::to_string(i) + "/Relu]\"\n}";
        }
        out.write(record);
    }
    out.write("],\n\"Bindings\": [\"t0\"\n,\"t" + std::to_string(layers) + "\"\n]}\n");
    return out.bytes();
}

std::uint64_t generateProfile(const std::string& path, std::size_t layers)
{
    Output out(path);
    out.write("[\n  { \"count\" : 100 }\n");
    for (std::size_t i = 0; i < layers; ++i)
    {
        const bool standaloneQuantize = i % 10 == 0;
        std::string name = standaloneQuantize ? quantizeName(i)
                                              : weightName(i) + " + " + quantizeName(i) + " + " + layerName(i) +
                                                    " + /model/act" + std::to_string(i) + "/Relu";
        out.write(
            ", { \"name\" : \"" + name +
            "\", \"timeMs\" : 1.2288, \"averageMs\" : 0.012288, \"medianMs\" : 0.012288, \"percentage\" : 0.001 }\n");
    }
    out.write("]\n");
    return out.bytes();
}

std::uint64_t generateOnnx(const std::string& path, std::uint64_t targetBytes, std::size_t* nodesWritten)
{
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("qdq-doctor-bench");
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    onnx::GraphProto* graph = model.mutable_graph();
    graph->set_name("bench");
    auto* input = graph->add_input();
    input->set_name("input");
    input->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);

    const int channels = 256;
    const std::size_t weightBytes = static_cast<std::size_t>(channels) * channels * 3 * 3 * 4; // 2.25 MiB per conv
    std::string weightData(weightBytes, '\0');
    for (std::size_t k = 0; k < weightBytes; ++k)
    {
        weightData[k] = static_cast<char>((k * 2654435761u) >> 24);
    }
    std::string current = "input";
    std::size_t block = 0;
    std::uint64_t bytes = 0;
    auto addScalar = [&](const std::string& name, float value)
    {
        auto* tensor = graph->add_initializer();
        tensor->set_name(name);
        tensor->set_data_type(onnx::TensorProto::FLOAT);
        tensor->add_float_data(value);
    };
    auto addZeroPoint = [&](const std::string& name)
    {
        auto* tensor = graph->add_initializer();
        tensor->set_name(name);
        tensor->set_data_type(onnx::TensorProto::INT8);
        tensor->add_int32_data(0);
    };
    auto addNode = [&](const std::string& op, const std::string& name, std::vector<std::string> inputs,
                       std::vector<std::string> outputs)
    {
        auto* node = graph->add_node();
        node->set_op_type(op);
        node->set_name(name);
        for (auto& in : inputs)
        {
            node->add_input(in);
        }
        for (auto& out : outputs)
        {
            node->add_output(out);
        }
        return node;
    };
    while (bytes < targetBytes)
    {
        std::string prefix = "/block" + std::to_string(block);
        addScalar(prefix + "/x_scale", 0.02f);
        addZeroPoint(prefix + "/x_zero_point");
        addNode("QuantizeLinear", prefix + "/input_quantizer/QuantizeLinear",
                {current, prefix + "/x_scale", prefix + "/x_zero_point"}, {prefix + "/xq"});
        addNode("DequantizeLinear", prefix + "/input_quantizer/DequantizeLinear",
                {prefix + "/xq", prefix + "/x_scale", prefix + "/x_zero_point"}, {prefix + "/xdq"});
        auto* weight = graph->add_initializer();
        weight->set_name(prefix + ".conv.weight");
        weight->set_data_type(onnx::TensorProto::FLOAT);
        for (long d : {channels, channels, 3, 3})
        {
            weight->add_dims(d);
        }
        weight->set_raw_data(weightData);
        auto* wscale = graph->add_initializer();
        wscale->set_name(prefix + "/w_scale");
        wscale->set_data_type(onnx::TensorProto::FLOAT);
        wscale->add_dims(channels);
        for (int c = 0; c < channels; ++c)
        {
            wscale->add_float_data(0.001f * static_cast<float>(c + 1));
        }
        auto* wzero = graph->add_initializer();
        wzero->set_name(prefix + "/w_zero_point");
        wzero->set_data_type(onnx::TensorProto::INT8);
        wzero->add_dims(channels);
        for (int c = 0; c < channels; ++c)
        {
            wzero->add_int32_data(0);
        }
        auto* wq = addNode("QuantizeLinear", prefix + "/weight_quantizer/QuantizeLinear",
                           {prefix + ".conv.weight", prefix + "/w_scale", prefix + "/w_zero_point"}, {prefix + "/wq"});
        auto* axis = wq->add_attribute();
        axis->set_name("axis");
        axis->set_type(onnx::AttributeProto::INT);
        axis->set_i(0);
        auto* wdq = addNode("DequantizeLinear", prefix + "/weight_quantizer/DequantizeLinear",
                            {prefix + "/wq", prefix + "/w_scale", prefix + "/w_zero_point"}, {prefix + "/wdq"});
        wdq->add_attribute()->CopyFrom(*axis);
        addNode("Conv", prefix + "/conv/Conv", {prefix + "/xdq", prefix + "/wdq"}, {prefix + "/conv_out"});
        addNode("Relu", prefix + "/act/Relu", {prefix + "/conv_out"}, {prefix + "/relu_out"});
        current = prefix + "/relu_out";
        bytes += weightBytes + 600;
        ++block;
    }
    auto* output = graph->add_output();
    output->set_name(current);
    output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    if (nodesWritten != nullptr)
    {
        *nodesWritten = static_cast<std::size_t>(graph->node_size());
    }
    std::ofstream file(path, std::ios::binary);
    if (!model.SerializeToOstream(&file))
    {
        throw std::runtime_error("cannot write " + path);
    }
    file.close();
    return static_cast<std::uint64_t>(model.ByteSizeLong());
}

std::uint64_t generateMatchingOnnx(const std::string& path, std::size_t layers, std::uint64_t weightBytes,
                                   std::size_t epilogueQdqEvery, bool externalData)
{
    std::ofstream data;
    std::uint64_t dataBytes = 0;
    const std::string dataLocation = std::filesystem::path(path).filename().string() + ".data";
    if (externalData)
    {
        data.open(path + ".data", std::ios::binary | std::ios::trunc);
    }
    // Each conv's INT8 weight is k x k x 1 x 1 (k channels in and out, so that shape inference agrees along the
    // chain), with k chosen so the weights add up to about weightBytes (8 x 8 at least: the graph-only model).
    std::uint64_t channels = 8;
    while ((channels + 1) * (channels + 1) * layers <= weightBytes)
    {
        ++channels;
    }
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("qdq-doctor-bench");
    auto* opset = model.add_opset_import();
    opset->set_version(17);
    onnx::GraphProto* graph = model.mutable_graph();
    graph->set_name("qdq-doctor-bench-layers");
    const auto setShape = [&](onnx::ValueInfoProto* value)
    {
        value->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
        auto* shape = value->mutable_type()->mutable_tensor_type()->mutable_shape();
        for (std::uint64_t d : {std::uint64_t{1}, channels, std::uint64_t{56}, std::uint64_t{56}})
        {
            shape->add_dim()->set_dim_value(static_cast<std::int64_t>(d));
        }
    };
    auto* input = graph->add_input();
    input->set_name("t0");
    setShape(input);
    auto addNode =
        [&](const std::string& op, const std::string& name, std::vector<std::string> inputs, const std::string& output)
    {
        auto* node = graph->add_node();
        node->set_op_type(op);
        node->set_name(name);
        for (auto& in : inputs)
        {
            node->add_input(in);
        }
        node->add_output(output);
    };
    auto* scale = graph->add_initializer();
    scale->set_name("scale");
    scale->set_data_type(onnx::TensorProto::FLOAT);
    scale->add_float_data(0.02f);
    auto* zero = graph->add_initializer();
    zero->set_name("zero_point");
    zero->set_data_type(onnx::TensorProto::INT8);
    zero->add_int32_data(0);
    std::string current = "t0";
    for (std::size_t i = 0; i < layers; ++i)
    {
        std::string q = quantizeName(i);
        std::string dq = q.substr(0, q.size() - 14) + "DequantizeLinear";
        addNode("QuantizeLinear", q, {current, "scale", "zero_point"}, q + "_output_0");
        addNode("DequantizeLinear", dq, {q + "_output_0", "scale", "zero_point"}, dq + "_output_0");
        auto* weight = graph->add_initializer();
        weight->set_name(weightName(i));
        weight->set_data_type(onnx::TensorProto::INT8);
        for (std::uint64_t d : {channels, channels, std::uint64_t{1}, std::uint64_t{1}})
        {
            weight->add_dims(static_cast<std::int64_t>(d));
        }
        const std::string weightData(channels * channels, static_cast<char>(1 + i % 7));
        if (externalData)
        {
            data.write(weightData.data(), static_cast<std::streamsize>(weightData.size()));
            weight->set_data_location(onnx::TensorProto::EXTERNAL);
            for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", dataLocation},
                                             {"offset", std::to_string(dataBytes)},
                                             {"length", std::to_string(weightData.size())}})
            {
                auto* entry = weight->add_external_data();
                entry->set_key(key);
                entry->set_value(value);
            }
            dataBytes += weightData.size();
        }
        else
        {
            weight->set_raw_data(weightData);
        }
        std::string wdq = "/model/w" + std::to_string(i) + "/DequantizeLinear";
        addNode("DequantizeLinear", wdq, {weightName(i), "scale"}, wdq + "_output_0");
        addNode("Conv", layerName(i), {dq + "_output_0", wdq + "_output_0"}, layerName(i) + "_output_0");
        std::string relu = "/model/act" + std::to_string(i) + "/Relu";
        std::string reluInput = layerName(i) + "_output_0";
        if (epilogueQdqEvery != 0 && i % epilogueQdqEvery == epilogueQdqEvery / 2)
        {
            // A Q/DQ pair between the conv and its Relu, which TensorRT cannot fuse (qdq-inside-conv-epilogue):
            // something for `fix` to edit.
            std::string eq = "/model/epilogue" + std::to_string(i) + "/QuantizeLinear";
            std::string edq = "/model/epilogue" + std::to_string(i) + "/DequantizeLinear";
            addNode("QuantizeLinear", eq, {reluInput, "scale", "zero_point"}, eq + "_output_0");
            addNode("DequantizeLinear", edq, {eq + "_output_0", "scale", "zero_point"}, edq + "_output_0");
            reluInput = edq + "_output_0";
        }
        addNode("Relu", relu, {reluInput}, "t" + std::to_string(i + 1));
        current = "t" + std::to_string(i + 1);
    }
    auto* output = graph->add_output();
    output->set_name(current);
    setShape(output);
    std::ofstream file(path, std::ios::binary);
    if (!model.SerializeToOstream(&file))
    {
        throw std::runtime_error("cannot write " + path);
    }
    return static_cast<std::uint64_t>(model.ByteSizeLong());
}

} // namespace qdq::bench

namespace qdq::bench
{

namespace
{

//! Writes one ViT-style encoder block quantized as ONNX Runtime quantizes DeiT
//! (../shared/models/deit-tiny-ort-qdq.onnx: Q/DQ on every MatMul input and output and on the Softmax): LayerNorm
//! written out, one MatMul for Q, K and V split per head, per head the scale's square root multiplied into Q and K, Q *
//! K^T, Softmax, * V, then the projection, the residual Adds, a second LayerNorm and an MLP with GELU in its Erf form.
class TransformerWriter
{
public:
    TransformerWriter(onnx::GraphProto& graph, std::size_t heads) : mGraph(graph), mHeads(heads) {}

    std::string node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                     std::size_t outputs = 1)
    {
        auto* node = mGraph.add_node();
        node->set_op_type(op);
        node->set_name(name);
        for (auto& in : inputs)
        {
            node->add_input(in);
        }
        for (std::size_t i = 0; i < outputs; ++i)
        {
            node->add_output(name + "_output_" + std::to_string(i));
        }
        return name + "_output_0";
    }

    std::string qdq(const std::string& prefix, const std::string& tensor)
    {
        const std::string q = node("QuantizeLinear", prefix + "_QuantizeLinear", {tensor, "scale", "zero_point"});
        return node("DequantizeLinear", prefix + "_DequantizeLinear", {q, "scale", "zero_point"});
    }

    //! A quantized MatMul with a bias Add: x -> Q/DQ -> MatMul(W via DQ) -> Q/DQ -> Add(bias).
    std::string linear(const std::string& prefix, const std::string& x)
    {
        const std::string weight = prefix + ".weight_quantized";
        auto* w = mGraph.add_initializer();
        w->set_name(weight);
        w->set_data_type(onnx::TensorProto::INT8);
        w->add_dims(8);
        w->add_dims(8);
        w->set_raw_data(std::string(64, '\x01'));
        const std::string wdq = node("DequantizeLinear", prefix + "/weight_DequantizeLinear", {weight, "scale"});
        const std::string y = node("MatMul", prefix + "/MatMul", {qdq(prefix + "/MatMul_input", x), wdq});
        return node("Add", prefix + "/Add", {qdq(prefix + "/MatMul_output", y), "bias"});
    }

    std::string layerNorm(const std::string& prefix, const std::string& x)
    {
        const std::string mean = node("ReduceMean", prefix + "/ReduceMean", {x});
        const std::string centred = node("Sub", prefix + "/Sub", {x, mean});
        const std::string square = node("Pow", prefix + "/Pow", {centred, "two"});
        const std::string variance = node("ReduceMean", prefix + "/ReduceMean_1", {square});
        const std::string deviation =
            node("Sqrt", prefix + "/Sqrt", {node("Add", prefix + "/Add", {variance, "epsilon"})});
        const std::string normalized = node("Div", prefix + "/Div", {centred, deviation});
        return node("Add", prefix + "/Add_1", {node("Mul", prefix + "/Mul", {normalized, "gamma"}), "beta"});
    }

    std::string attentionHead(const std::string& prefix, const std::string& q, const std::string& k,
                              const std::string& v)
    {
        const std::string scaledQ = node("Mul", prefix + "/Mul", {q, "root_scale"});
        const std::string keyT = node("Transpose", prefix + "/Transpose", {k});
        const std::string scaledK = node("Mul", prefix + "/Mul_1", {keyT, "root_scale"});
        const std::string scores = node("MatMul", prefix + "/MatMul",
                                        {qdq(prefix + "/Mul_output", scaledQ), qdq(prefix + "/Mul_1_output", scaledK)});
        const std::string probabilities =
            node("Softmax", prefix + "/Softmax", {qdq(prefix + "/MatMul_output", scores)});
        const std::string context =
            node("MatMul", prefix + "/MatMul_1",
                 {qdq(prefix + "/Softmax_output", probabilities), qdq(prefix + "/v_output", v)});
        return qdq(prefix + "/MatMul_1_output", context);
    }

    std::string block(const std::string& prefix, const std::string& x)
    {
        const std::string qkv = linear(prefix + "/attn/qkv", layerNorm(prefix + "/norm1", x));
        const std::string split = node("Split", prefix + "/attn/Split", {qkv}, 3 * mHeads);
        const std::string splitBase = prefix + "/attn/Split_output_";
        std::vector<std::string> heads;
        for (std::size_t h = 0; h < mHeads; ++h)
        {
            heads.push_back(attentionHead(prefix + "/attn/head" + std::to_string(h), splitBase + std::to_string(h),
                                          splitBase + std::to_string(mHeads + h),
                                          splitBase + std::to_string(2 * mHeads + h)));
        }
        const std::string merged = node("Concat", prefix + "/attn/Concat", heads);
        const std::string attended = node("Add", prefix + "/Add", {x, linear(prefix + "/attn/proj", merged)});
        const std::string hidden = linear(prefix + "/mlp/fc1", layerNorm(prefix + "/norm2", attended));
        const std::string erf =
            node("Erf", prefix + "/mlp/act/Erf", {node("Div", prefix + "/mlp/act/Div", {hidden, "sqrt2"})});
        const std::string gate =
            node("Mul", prefix + "/mlp/act/Mul", {hidden, node("Add", prefix + "/mlp/act/Add", {erf, "one"})});
        const std::string gelu = node("Mul", prefix + "/mlp/act/Mul_1", {gate, "half"});
        return node("Add", prefix + "/Add_1", {attended, linear(prefix + "/mlp/fc2", gelu)});
    }

private:
    onnx::GraphProto& mGraph;
    std::size_t mHeads;
};

void addFloatConstant(onnx::GraphProto& graph, const std::string& name, float value)
{
    auto* tensor = graph.add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_float_data(value);
}

} // namespace

std::uint64_t generateTransformerOnnx(const std::string& path, std::size_t targetNodes, std::size_t* blocksWritten)
{
    constexpr std::size_t kHeads = 10;
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("qdq-doctor-bench");
    model.add_opset_import()->set_version(17);
    onnx::GraphProto* graph = model.mutable_graph();
    graph->set_name("qdq-doctor-bench-transformer");
    for (const auto& [name, value] : {std::pair<const char*, float>{"scale", 0.02f},
                                      {"bias", 0.0f},
                                      {"two", 2.0f},
                                      {"epsilon", 1e-6f},
                                      {"gamma", 1.0f},
                                      {"beta", 0.0f},
                                      {"root_scale", 0.5946f},
                                      {"sqrt2", 1.4142f},
                                      {"one", 1.0f},
                                      {"half", 0.5f}})
    {
        addFloatConstant(*graph, name, value);
    }
    auto* zero = graph->add_initializer();
    zero->set_name("zero_point");
    zero->set_data_type(onnx::TensorProto::INT8);
    zero->add_int32_data(0);
    auto* input = graph->add_input();
    input->set_name("tokens");
    input->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    TransformerWriter writer(*graph, kHeads);
    std::string current = "tokens";
    std::size_t blocks = 0;
    while (static_cast<std::size_t>(graph->node_size()) < targetNodes)
    {
        current = writer.block("/blocks/blocks." + std::to_string(blocks), current);
        ++blocks;
    }
    auto* output = graph->add_output();
    output->set_name(current);
    output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    if (blocksWritten != nullptr)
    {
        *blocksWritten = blocks;
    }
    std::ofstream file(path, std::ios::binary);
    if (!model.SerializeToOstream(&file))
    {
        throw std::runtime_error("cannot write " + path);
    }
    return static_cast<std::uint64_t>(model.ByteSizeLong());
}

namespace
{

struct MyelinKernel
{
    std::string name;
    bool gemm = false;
    bool int8 = false;
    std::vector<std::string> nodes;
};

//! The kernels of the Myelin graph: a gemm per MatMul (with the DequantizeLinear nodes feeding it), the rest in
//! order, grouped so that the engine has about `layers` kernels.
std::vector<MyelinKernel> myelinKernels(const onnx::GraphProto& graph, std::size_t layers)
{
    std::unordered_map<std::string, const onnx::NodeProto*> producer;
    std::size_t matmuls = 0;
    for (const auto& node : graph.node())
    {
        for (const auto& output : node.output())
        {
            producer[output] = &node;
        }
        matmuls += node.op_type() == "MatMul" ? 1 : 0;
    }
    std::unordered_set<const onnx::NodeProto*> inGemm;
    std::vector<MyelinKernel> kernels;
    for (const auto& node : graph.node())
    {
        if (node.op_type() != "MatMul")
        {
            continue;
        }
        MyelinKernel kernel;
        kernel.gemm = true;
        kernel.int8 = true;
        kernel.nodes.push_back(node.name());
        for (const auto& input : node.input())
        {
            auto found = producer.find(input);
            if (found != producer.end() && found->second->op_type() == "DequantizeLinear")
            {
                kernel.nodes.push_back(found->second->name());
                inGemm.insert(found->second);
            }
            else
            {
                kernel.int8 = false;
            }
        }
        inGemm.insert(&node);
        kernels.push_back(std::move(kernel));
    }
    const std::size_t rest = static_cast<std::size_t>(graph.node_size()) - inGemm.size();
    const std::size_t kgenWanted = layers > matmuls ? layers - matmuls : 1;
    const std::size_t perKernel = std::max<std::size_t>(1, (rest + kgenWanted - 1) / kgenWanted);
    MyelinKernel current;
    std::string ops;
    for (const auto& node : graph.node())
    {
        if (inGemm.count(&node) != 0)
        {
            continue;
        }
        current.nodes.push_back(node.name());
        ops += node.op_type().substr(0, 4);
        if (current.nodes.size() == perKernel)
        {
            current.name = "__myl_" + ops;
            kernels.push_back(std::move(current));
            current = MyelinKernel{};
            ops.clear();
        }
    }
    if (!current.nodes.empty())
    {
        current.name = "__myl_" + ops;
        kernels.push_back(std::move(current));
    }
    for (std::size_t k = 0; k < kernels.size(); ++k)
    {
        MyelinKernel& kernel = kernels[k];
        kernel.name = (kernel.gemm ? kernel.nodes.front() : kernel.name) + "_myl0_" + std::to_string(k);
    }
    return kernels;
}

} // namespace

std::uint64_t generateMyelinEngine(const std::string& modelPath, const std::string& layersPath,
                                   const std::string& profilePath, std::size_t layers)
{
    onnx::ModelProto model;
    {
        std::ifstream in(modelPath, std::ios::binary);
        if (!model.ParseFromIstream(&in))
        {
            throw std::runtime_error("cannot read " + modelPath);
        }
    }
    const std::vector<MyelinKernel> kernels = myelinKernels(model.graph(), layers);
    Output out(layersPath);
    Output profile(profilePath);
    out.write("{\"Layers\": [");
    profile.write("[\n  { \"count\" : 100 }\n");
    for (std::size_t k = 0; k < kernels.size(); ++k)
    {
        const MyelinKernel& kernel = kernels[k];
        const std::string type = kernel.gemm ? (kernel.int8 ? "Int8" : "Half") : "Half";
        std::string metadata;
        for (const auto& node : kernel.nodes)
        {
            metadata += (metadata.empty() ? "" : "\\u001f") + std::string("[ONNX Layer: ") + node + "]";
        }
        std::string record = k == 0 ? "{\n" : ",{\n";
        record += "  \"Name\": \"" + kernel.name + "\",\n  \"LayerType\": \"" + (kernel.gemm ? "gemm" : "kgen") +
                  "\",\n  \"Inputs\": [{\"Name\": \"__myln_k_arg__bb1_" + std::to_string(k) +
                  "_myl0\", \"Dimensions\": [197,192], \"Format/Datatype\": \"" + type +
                  "\"}],\n  \"Outputs\": [{\"Name\": \"__myln_k_arg__bb1_" + std::to_string(k + 1) +
                  "_myl0\", \"Dimensions\": [197,192], \"Format/Datatype\": \"Half\"}],\n  \"TacticName\": \"" +
                  (kernel.gemm ? (kernel.int8 ? "sm80_xmma_gemm_i8i8_i8i32_f32_tn_n_tilesize128x128x64"
                                              : "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32")
                               : "__myl_" + std::to_string(k)) +
                  "\",\n  \"StreamId\": 0,\n  \"Metadata\": \"" + metadata + "\"\n}";
        out.write(record);
        profile.write(", { \"name\" : \"" + kernel.name +
                      "\", \"timeMs\" : 1.2288, \"averageMs\" : 0.012288, \"medianMs\" : 0.012288, "
                      "\"percentage\" : 0.001 }\n");
    }
    out.write("],\n\"Bindings\": [\"__myln_k_arg__bb1_0_myl0\"]}\n");
    profile.write("]\n");
    return out.bytes() + profile.bytes();
}

} // namespace qdq::bench
