// `fix --autocast fp16|bf16`: the float part written in the low type, Q/DQ scales in it from opset 19 (FP32 with the
// DQ's reader kept FP32 before), and each documented keep-in-FP32 reason, each with a near-identical model where it
// must not apply. The types of the written model are read back with ONNX's own shape inference where its opset allows.
#include "graph_builder.h"
#include "test_support.h"

#include "qdq/autocast.h"
#include "qdq/fix.h"
#include "qdq/onnx_guard.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>

using namespace qdq;
using namespace qdq::test;

namespace
{

onnx::ModelProto loadModel(const std::filesystem::path& path)
{
    onnx::ModelProto model;
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(model.ParseFromIstream(&in)) << path;
    return model;
}

FixReport autocastFix(const std::filesystem::path& model, const std::filesystem::path& output,
                      AutocastOptions::Target target = AutocastOptions::Target::kFp16, bool castIo = false,
                      std::vector<std::string> rules = {"none"})
{
    InputFiles files;
    files.files = {model.string()};
    FixOptions options;
    options.output = output.string();
    options.force = true;
    options.rules = std::move(rules);
    options.autocast.target = target;
    options.autocast.castIo = castIo;
    options.buildMode.typing = Typing::kStrong;
    return runFix(files, options, Limits{});
}

//! The element type of every initializer, graph input, output and (after ONNX shape inference, when it can run) every
//! node output of the model.
std::map<std::string, int> elementTypes(onnx::ModelProto model, bool infer = true)
{
    if (infer)
    {
        onnx::shape_inference::InferShapes(model, guardedSchemaRegistry());
    }
    std::map<std::string, int> types;
    for (const auto& tensor : model.graph().initializer())
    {
        types[tensor.name()] = tensor.data_type();
    }
    for (const auto* list : {&model.graph().input(), &model.graph().output(), &model.graph().value_info()})
    {
        for (const auto& info : *list)
        {
            types[info.name()] = info.type().tensor_type().elem_type();
        }
    }
    return types;
}

//! The group of kept nodes that names node, or nullptr.
const AutocastKeptGroup* keptNode(const FixReport& report, const std::string& node)
{
    for (const auto& group : report.autocast->kept)
    {
        if (std::find(group.nodes.begin(), group.nodes.end(), node) != group.nodes.end())
        {
            return &group;
        }
    }
    return nullptr;
}

std::size_t countOp(const onnx::ModelProto& model, const std::string& opType)
{
    std::size_t count = 0;
    for (const auto& node : model.graph().node())
    {
        count += node.op_type() == opType ? 1 : 0;
    }
    return count;
}

//! input -> Q/DQ -> Conv (Q/DQ weight) -> GlobalAveragePool -> output, at the given opset.
std::filesystem::path quantizedConvModel(const std::string& name, long opset)
{
    GraphBuilder g;
    g.opset("", opset);
    std::string x = g.qdq("/in_q", g.input("images", {1, 3, 8, 8}));
    std::string conv = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("w", 4, 3)});
    g.output(g.node("GlobalAveragePool", "/pool/GlobalAveragePool", {conv}), {1, 4, 1, 1});
    const auto path = tempDir("autocast-" + name) / "model.onnx";
    g.save(path.string());
    return path;
}

} // namespace

TEST(FixAutocast, Opset19WritesFp16ScalesAndNoCastBetweenDqAndConv)
{
    const auto dir = quantizedConvModel("opset19", 19).parent_path();
    const FixReport report = autocastFix(dir / "model.onnx", dir / "fixed.onnx");
    ASSERT_TRUE(report.autocast);
    const onnx::ModelProto fixed = loadModel(dir / "fixed.onnx");
    // libonnx 1.12 knows opsets up to 17: the types are read from the written tensors, not inferred.
    const auto types = elementTypes(fixed, /*infer*/ false);
    EXPECT_EQ(types.at("/in_q/scale"), onnx::TensorProto::FLOAT16);
    EXPECT_EQ(types.at("w/w_scale"), onnx::TensorProto::FLOAT16);
    EXPECT_EQ(types.at("w.weight"), onnx::TensorProto::FLOAT16);
    EXPECT_EQ(types.at("images"), onnx::TensorProto::FLOAT); // graph I/O keep their type
    EXPECT_EQ(types.at("/pool/GlobalAveragePool_out"), onnx::TensorProto::FLOAT);
    EXPECT_TRUE(report.autocast->qdqScalesLowered);
    EXPECT_EQ(report.autocast->qdqKeptFp32, 0u);
    EXPECT_EQ(keptNode(report, "/conv/Conv"), nullptr);
    // libonnx 1.12 knows opsets up to 17: the checker runs without shape inference and the report says so.
    EXPECT_EQ(report.checker.rfind("ONNX checker passed; shape inference and type checks not run", 0), 0u)
        << report.checker;
    // One Cast after the input (FP32 -> FP16 for the Q) and one before the output; the Conv reads the DQ directly.
    EXPECT_EQ(countOp(fixed, "Cast"), 2u);
    for (const auto& node : fixed.graph().node())
    {
        if (node.op_type() == "Conv")
        {
            EXPECT_EQ(node.input(0), "/in_q/DequantizeLinear_out");
        }
    }
}

TEST(FixAutocast, Opset17KeepsFp32ScalesAndTheDqReaderWithTheCastAfterIt)
{
    const auto dir = quantizedConvModel("opset17", 17).parent_path();
    const FixReport report = autocastFix(dir / "model.onnx", dir / "fixed.onnx");
    ASSERT_TRUE(report.autocast);
    EXPECT_EQ(report.checker, "passed");
    const onnx::ModelProto fixed = loadModel(dir / "fixed.onnx");
    const auto types = elementTypes(fixed);
    EXPECT_EQ(types.at("/in_q/scale"), onnx::TensorProto::FLOAT);
    EXPECT_EQ(types.at("w.weight"), onnx::TensorProto::FLOAT);
    EXPECT_FALSE(report.autocast->qdqScalesLowered);
    EXPECT_EQ(report.autocast->qdqKeptFp32, 4u);
    const AutocastKeptGroup* conv = keptNode(report, "/conv/Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->reason, "dq-reader");
    // The pooling after it computes in FP16 (ONNX's inference of the written graph says so), behind a Cast.
    EXPECT_EQ(types.at("/conv/Conv_out/autocast_fp16"), onnx::TensorProto::FLOAT16);
    EXPECT_EQ(types.at("/pool/GlobalAveragePool_out/autocast_fp16"), onnx::TensorProto::FLOAT16);
    EXPECT_EQ(keptNode(report, "/pool/GlobalAveragePool"), nullptr);
    for (const auto& node : fixed.graph().node())
    {
        if (node.op_type() == "Conv")
        {
            EXPECT_EQ(node.input(0), "/in_q/DequantizeLinear_out");
        }
    }
}

TEST(FixAutocast, QuantizedEpilogueStaysFp32AndAPoolingAfterItDoesNot)
{
    // Conv -> Relu -> Q/DQ -> Conv -> Sigmoid -> AveragePool at opset 17: the Relu and the Sigmoid are fused into
    // their quantized convs (no Cast inside the chain); the average pooling is a layer of its own and goes FP16.
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images", {1, 3, 8, 8}));
    std::string relu = g.node("Relu", "/relu/Relu", {g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("w", 4, 3)})});
    std::string next = g.node("Conv", "/next/Conv", {g.qdq("/mid_q", relu), g.quantizedWeight("w2", 4, 4)});
    std::string head = g.node("Sigmoid", "/head/Sigmoid", {next});
    g.output(g.node("GlobalAveragePool", "/head/GlobalAveragePool", {head}), {1, 4, 1, 1});
    const auto dir = tempDir("autocast-epilogue");
    g.save((dir / "model.onnx").string());
    const FixReport report = autocastFix(dir / "model.onnx", dir / "fixed.onnx");
    for (const std::string node : {"/relu/Relu", "/head/Sigmoid"})
    {
        const AutocastKeptGroup* keep = keptNode(report, node);
        ASSERT_NE(keep, nullptr) << node;
        EXPECT_EQ(keep->reason, "quantized-epilogue") << node;
    }
    EXPECT_EQ(keptNode(report, "/head/GlobalAveragePool"), nullptr);
    EXPECT_EQ(report.checker, "passed");
    const auto types = elementTypes(loadModel(dir / "fixed.onnx"));
    EXPECT_EQ(types.at("/head/Sigmoid_out/autocast_fp16"), onnx::TensorProto::FLOAT16);
}

TEST(FixAutocast, ConcatBetweenFp32QdqStaysFp32AndAConcatIntoAPoolingDoesNot)
{
    // Two quantized convs -> Relu -> Concat at opset 17: into a Q/DQ and the next conv, TensorRT runs the Concat
    // quantized (no Cast there); into a GlobalAveragePool (float) it goes FP16 with the pooling.
    for (const bool quantizedAfter : {true, false})
    {
        GraphBuilder g;
        std::string x = g.qdq("/in_q", g.input("images", {1, 3, 8, 8}));
        std::string a = g.node("Relu", "/a/Relu", {g.node("Conv", "/a/Conv", {x, g.quantizedWeight("wa", 4, 3)})});
        std::string b = g.node("Relu", "/b/Relu", {g.node("Conv", "/b/Conv", {x, g.quantizedWeight("wb", 4, 3)})});
        std::string cat = g.node("Concat", "/cat/Concat", {a, b});
        g.intAttribute("/cat/Concat", "axis", 1);
        if (quantizedAfter)
        {
            g.output(g.node("Conv", "/next/Conv", {g.qdq("/cat_q", cat), g.quantizedWeight("wn", 4, 8)}), {1, 4, 4, 4});
        }
        else
        {
            g.output(g.node("GlobalAveragePool", "/pool/GlobalAveragePool", {cat}), {1, 8, 1, 1});
        }
        const auto dir = tempDir(std::string("autocast-concat-") + (quantizedAfter ? "q" : "pool"));
        g.save((dir / "model.onnx").string());
        const FixReport report = autocastFix(dir / "model.onnx", dir / "fixed.onnx");
        EXPECT_EQ(report.checker, "passed");
        const AutocastKeptGroup* keep = keptNode(report, "/cat/Concat");
        if (quantizedAfter)
        {
            ASSERT_NE(keep, nullptr);
            EXPECT_EQ(keep->reason, "quantized-data-movement");
            EXPECT_EQ(countOp(loadModel(dir / "fixed.onnx"), "Cast"), 0u);
        }
        else
        {
            EXPECT_EQ(keep, nullptr);
            EXPECT_EQ(elementTypes(loadModel(dir / "fixed.onnx")).at("/cat/Concat_out"), onnx::TensorProto::FLOAT16);
        }
    }
}

TEST(FixAutocast, ExternalDataWeightsAreConvertedAndWrittenInline)
{
    GraphBuilder g;
    std::string y = g.node("Mul", "/m/Mul", {g.input("x", {1, 256}), g.weight("k", {1, 256}, 0.5f)});
    g.output(g.node("Relu", "/relu/Relu", {y}), {1, 256});
    const auto dir = tempDir("autocast-external");
    saveWithExternalData(g.serialize(), dir / "model.onnx", "model.onnx.data", 512);
    const FixReport report = autocastFix(dir / "model.onnx", dir / "fixed.onnx");
    EXPECT_EQ(report.checker, "passed");
    EXPECT_EQ(report.autocast->externalInlined, 1u);
    const onnx::ModelProto fixed = loadModel(dir / "fixed.onnx");
    for (const auto& tensor : fixed.graph().initializer())
    {
        if (tensor.name() == "k")
        {
            EXPECT_EQ(tensor.data_type(), onnx::TensorProto::FLOAT16);
            EXPECT_EQ(tensor.external_data_size(), 0);
            EXPECT_EQ(tensor.raw_data().size(), 512u); // 256 halves
            // 0.5 in IEEE binary16 is 0x3800, little-endian.
            EXPECT_EQ(static_cast<unsigned char>(tensor.raw_data()[1]), 0x38);
        }
    }
}

TEST(FixAutocast, SoftmaxStaysFp32AndReluDoesNot)
{
    for (const std::string op : {"Softmax", "Relu"})
    {
        GraphBuilder g;
        std::string x = g.node("Mul", "/scale/Mul", {g.input("x", {2, 16}), g.weight("s", {1}, 0.5f)});
        std::string y = g.node(op, "/act/" + op, {x});
        g.output(g.node("Add", "/bias/Add", {y, g.weight("b", {16}, 0.1f)}), {2, 16});
        const auto dir = tempDir("autocast-" + op);
        g.save((dir / "model.onnx").string());
        const FixReport report = autocastFix(dir / "model.onnx", dir / "fixed.onnx");
        EXPECT_EQ(report.checker, "passed") << op;
        const AutocastKeptGroup* keep = keptNode(report, "/act/" + op);
        if (op == "Softmax")
        {
            ASSERT_NE(keep, nullptr);
            EXPECT_EQ(keep->reason, "reduction");
        }
        else
        {
            EXPECT_EQ(keep, nullptr);
        }
        const auto types = elementTypes(loadModel(dir / "fixed.onnx"));
        EXPECT_EQ(types.at("/scale/Mul_out"), onnx::TensorProto::FLOAT16) << op;
        EXPECT_EQ(types.at("/act/" + op + "_out"),
                  op == "Softmax" ? onnx::TensorProto::FLOAT : onnx::TensorProto::FLOAT16);
        EXPECT_EQ(types.at("s"), onnx::TensorProto::FLOAT16);
    }
}

TEST(FixAutocast, HandWrittenLayerNormStaysFp32AndASimilarChainDoesNot)
{
    // ReduceMean -> Sub -> Pow -> ReduceMean -> Add -> Sqrt -> Div; the near-identical chain squares with Abs, which
    // is no variance: only its ReduceMeans stay FP32 (reductions), the Sub, Add, Sqrt and Div go FP16.
    for (const std::string square : {"Pow", "Abs"})
    {
        GraphBuilder g;
        std::string x = g.input("x", {2, 8});
        std::string mean = g.node("ReduceMean", "/ln/ReduceMean", {x});
        g.intsAttribute("/ln/ReduceMean", "axes", {-1});
        std::string d = g.node("Sub", "/ln/Sub", {x, mean});
        std::string sq =
            square == "Pow" ? g.node("Pow", "/ln/Pow", {d, g.weight("two", {}, 2.0f)}) : g.node("Abs", "/ln/Pow", {d});
        std::string var = g.node("ReduceMean", "/ln/ReduceMean_1", {sq});
        g.intsAttribute("/ln/ReduceMean_1", "axes", {-1});
        std::string sd = g.node("Sqrt", "/ln/Sqrt", {g.node("Add", "/ln/Add", {var, g.weight("eps", {}, 1e-5f)})});
        g.output(g.node("Div", "/ln/Div", {d, sd}), {2, 8});
        const auto dir = tempDir("autocast-ln-" + square);
        g.save((dir / "model.onnx").string());
        const FixReport report = autocastFix(dir / "model.onnx", dir / "fixed.onnx");
        EXPECT_EQ(report.checker, "passed") << square;
        for (const std::string node : {"/ln/Sub", "/ln/Add", "/ln/Sqrt", "/ln/Div"})
        {
            const AutocastKeptGroup* keep = keptNode(report, node);
            if (square == "Pow")
            {
                ASSERT_NE(keep, nullptr) << node;
                EXPECT_EQ(keep->reason, "layernorm-pattern") << node;
            }
            else
            {
                EXPECT_EQ(keep, nullptr) << node;
            }
        }
        ASSERT_NE(keptNode(report, "/ln/ReduceMean_1"), nullptr);
    }
}

TEST(FixAutocast, ExpStaysFp32ForFp16ButNotForBf16)
{
    for (const auto target : {AutocastOptions::Target::kFp16, AutocastOptions::Target::kBf16})
    {
        GraphBuilder g;
        std::string y = g.node("Exp", "/exp/Exp", {g.input("x", {4})});
        g.output(g.node("Relu", "/relu/Relu", {y}), {4});
        const auto dir = tempDir("autocast-exp-" + autocastTargetName(target));
        g.save((dir / "model.onnx").string());
        const FixReport report = autocastFix(dir / "model.onnx", dir / "fixed.onnx", target);
        const AutocastKeptGroup* keep = keptNode(report, "/exp/Exp");
        if (target == AutocastOptions::Target::kFp16)
        {
            ASSERT_NE(keep, nullptr);
            EXPECT_EQ(keep->reason, "overflow-op");
        }
        else
        {
            EXPECT_EQ(keep, nullptr);
        }
    }
}

TEST(FixAutocast, InitializerBeyondFp16RangeKeepsItsReaderFp32)
{
    for (const float value : {1e5f, 1e4f})
    {
        GraphBuilder g;
        std::string y = g.node("Mul", "/big/Mul", {g.input("x", {4}), g.weight("k", {4}, value)});
        g.output(g.node("Relu", "/relu/Relu", {y}), {4});
        const auto dir = tempDir("autocast-range-" + std::to_string(static_cast<int>(value)));
        g.save((dir / "model.onnx").string());
        const FixReport report = autocastFix(dir / "model.onnx", dir / "fixed.onnx");
        EXPECT_EQ(report.checker, "passed");
        const auto types = elementTypes(loadModel(dir / "fixed.onnx"));
        const AutocastKeptGroup* keep = keptNode(report, "/big/Mul");
        if (value > 65504.0f)
        {
            ASSERT_NE(keep, nullptr);
            EXPECT_EQ(keep->reason, "init-range");
            EXPECT_EQ(types.at("k"), onnx::TensorProto::FLOAT);
        }
        else
        {
            EXPECT_EQ(keep, nullptr);
            EXPECT_EQ(types.at("k"), onnx::TensorProto::FLOAT16);
        }
        // BF16 has FP32's range: the same model keeps nothing there.
        const FixReport bf16 = autocastFix(dir / "model.onnx", dir / "fixed-bf16.onnx", AutocastOptions::Target::kBf16);
        EXPECT_EQ(keptNode(bf16, "/big/Mul"), nullptr);
    }
}

TEST(FixAutocast, AutocastIoRetypesTheGraphInputsAndOutputsWithoutCasts)
{
    for (const bool castIo : {true, false})
    {
        GraphBuilder g;
        std::string y = g.node("Mul", "/m/Mul", {g.input("x", {4}), g.weight("k", {4}, 2.0f)});
        g.output(g.node("Relu", "/relu/Relu", {y}), {4});
        const auto dir = tempDir(std::string("autocast-io-") + (castIo ? "on" : "off"));
        g.save((dir / "model.onnx").string());
        const FixReport report =
            autocastFix(dir / "model.onnx", dir / "fixed.onnx", AutocastOptions::Target::kFp16, castIo);
        EXPECT_EQ(report.checker, "passed");
        const onnx::ModelProto fixed = loadModel(dir / "fixed.onnx");
        const auto types = elementTypes(fixed);
        const int io = castIo ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT;
        EXPECT_EQ(types.at("x"), io);
        EXPECT_EQ(types.at("/relu/Relu_out"), io);
        EXPECT_EQ(countOp(fixed, "Cast"), castIo ? 0u : 2u);
    }
}

TEST(FixAutocast, ReportNamesEachKeptNodeInTextAndJson)
{
    GraphBuilder g;
    std::string y = g.node("Softmax", "/attn/Softmax", {g.input("x", {2, 4})});
    g.output(g.node("Relu", "/relu/Relu", {y}), {2, 4});
    const auto dir = tempDir("autocast-report");
    g.save((dir / "model.onnx").string());
    const FixReport report = autocastFix(dir / "model.onnx", dir / "fixed.onnx");
    const std::string text = renderFixText(report);
    EXPECT_NE(text.find("Autocast (fp16"), std::string::npos) << text;
    EXPECT_NE(text.find("[reduction]"), std::string::npos) << text;
    EXPECT_NE(text.find("/attn/Softmax"), std::string::npos) << text;
    const std::string json = renderFixJson(report);
    EXPECT_NE(json.find("\"kept_fp32\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"/attn/Softmax\""), std::string::npos) << json;
    EXPECT_FALSE(report.unchanged);
}

TEST(RealDataFixAutocast, Resnet18QatConvsIsFp16ButTheDocumentedKeeps)
{
    REQUIRE_SHARED();
    const auto model = sharedModel("resnet18-qat-convs.onnx");
    const auto dir = tempDir("autocast-resnet18");
    InputFiles files;
    files.files = {model.string()};
    FixOptions options;
    options.output = (dir / "fixed.onnx").string();
    options.force = true;
    options.autocast.target = AutocastOptions::Target::kFp16;
    options.buildMode.trtVersion = "11";
    const FixReport report = runFix(files, options, Limits{});
    ASSERT_TRUE(report.autocast);
    EXPECT_EQ(report.checker, "passed");
    EXPECT_TRUE(report.buildMode.stronglyTyped());
    // Every float tensor a node outside the documented keeps writes is FP16 (ONNX's inference of the written model).
    const onnx::ModelProto fixed = loadModel(dir / "fixed.onnx");
    const auto types = elementTypes(fixed);
    std::set<std::string> kept;
    for (const auto& group : report.autocast->kept)
    {
        kept.insert(group.nodes.begin(), group.nodes.end());
    }
    std::size_t fp16Outputs = 0;
    for (const auto& node : fixed.graph().node())
    {
        // A Constant takes the type its readers want: FP32 for the scales of FP32 Q/DQ (the checker, which passed,
        // checks that readers and constants agree).
        if (kept.count(node.name()) != 0 || node.op_type() == "Cast" || node.op_type() == "QuantizeLinear" ||
            node.op_type() == "Constant")
        {
            continue;
        }
        for (const auto& output : node.output())
        {
            const auto found = types.find(output);
            if (found == types.end() || found->second == onnx::TensorProto::FLOAT16)
            {
                fp16Outputs += found == types.end() ? 0 : 1;
                continue;
            }
            // A graph output keeps FP32 behind its Cast; nothing else a lowered node writes may be FP32.
            EXPECT_NE(found->second, onnx::TensorProto::FLOAT) << node.name() << " writes FP32 " << output;
        }
    }
    EXPECT_GT(fp16Outputs, 0u);
    // The pooling of the head (outside every Q/DQ region) computes in FP16 now.
    EXPECT_EQ(types.at("/avgpool/GlobalAveragePool_output_0"), onnx::TensorProto::FLOAT16);
    // Under TensorRT 11 the fixed model has no fp32-island warning (today's rule gives at most an info finding, which
    // does not read the tensor types; the strong-typing rule reads them), and fix brought no new warning.
    Inputs inputs;
    inputs.sources.push_back({InputKind::kOnnx, (dir / "fixed.onnx").string(), std::nullopt});
    inputs.onnx = readOnnx((dir / "fixed.onnx").string());
    AnalysisOptions analysis;
    analysis.simulation = report.buildMode;
    const Report diagnosis = diagnose(inputs, analysis);
    for (const auto& finding : diagnosis.findings)
    {
        EXPECT_FALSE(finding.rule == "fp32-island" && finding.severity != Severity::kInfo) << finding.message;
    }
    EXPECT_TRUE(report.newFindings.empty());
}

TEST(FixAutocast, CliAutocastAloneAndAutocastIoWithoutAutocast)
{
    GraphBuilder g;
    std::string y = g.node("Mul", "/m/Mul", {g.input("x", {4}), g.weight("k", {4}, 2.0f)});
    g.output(g.node("Relu", "/relu/Relu", {y}), {4});
    const auto dir = tempDir("autocast-cli");
    g.save((dir / "model.onnx").string());
    const std::string model = (dir / "model.onnx").string();
    const CommandResult alone =
        runCli({"fix", "--autocast", "fp16", "--rules", "none", model, "-o", (dir / "fp16.onnx").string()});
    EXPECT_EQ(alone.exitStatus, 0) << alone.out << alone.err;
    EXPECT_NE(alone.out.find("Autocast (fp16"), std::string::npos) << alone.out << alone.err;
    EXPECT_NE(alone.out.find("strongly typed"), std::string::npos) << alone.out << alone.err; // assumed for --autocast
    const CommandResult ioOnly = runCli({"fix", "--autocast-io", model, "-o", (dir / "io.onnx").string()});
    EXPECT_EQ(ioOnly.exitStatus, 2) << ioOnly.out << ioOnly.err;
    EXPECT_NE(ioOnly.err.find("needs --autocast"), std::string::npos) << ioOnly.out << ioOnly.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "io.onnx"));
}

TEST(FixAutocast, AutocastOfItsOwnOutputChangesNothing)
{
    // The Casts the first run put at the graph's boundary are boundaries to the second, not float ops to lower: the
    // second run converts nothing and writes a byte-identical copy (before, it cast the input again under the name
    // the first run had taken, and the checker refused the graph as not in SSA form).
    GraphBuilder g;
    std::string y = g.node("Mul", "/m/Mul", {g.input("x", {4}), g.weight("k", {4}, 2.0f)});
    g.output(g.node("Relu", "/relu/Relu", {y}), {4});
    const auto dir = tempDir("autocast-twice");
    g.save((dir / "model.onnx").string());
    const FixReport first = autocastFix(dir / "model.onnx", dir / "once.onnx");
    EXPECT_TRUE(first.autocast->changed);
    const FixReport second = autocastFix(dir / "once.onnx", dir / "twice.onnx");
    EXPECT_EQ(second.checker, "passed");
    EXPECT_FALSE(second.autocast->changed);
    EXPECT_TRUE(second.unchanged);
    std::ifstream a(dir / "once.onnx", std::ios::binary);
    std::ifstream b(dir / "twice.onnx", std::ios::binary);
    const std::string once((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
    const std::string twice((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
    EXPECT_EQ(once, twice);
}

TEST(FixAutocast, AQuantizedConcatWithFp16ScalesGetsTheOnnxRuntimeNote)
{
    // DQ, DQ -> Concat -> Q/DQ -> conv: ONNX Runtime fuses it into QLinearConcat, which refuses FP16 scales (measured
    // with ONNX Runtime 1.30 on the zoo's yolo-like and googlenet at opset 19). Near-identical: the Concat read by a
    // pooling (no QLinearConcat), and the same model at opset 17 (scales stay FP32).
    for (const auto& [opset, quantizedAfter, noted] :
         {std::tuple{19L, true, true}, std::tuple{19L, false, false}, std::tuple{17L, true, false}})
    {
        GraphBuilder g;
        g.opset("", opset);
        std::string x = g.input("images", {1, 3, 8, 8});
        std::string cat = g.node("Concat", "/cat/Concat", {g.qdq("/a_q", x), g.qdq("/b_q", x)});
        g.intAttribute("/cat/Concat", "axis", 1);
        if (quantizedAfter)
        {
            g.output(g.node("Conv", "/next/Conv", {g.qdq("/cat_q", cat), g.quantizedWeight("wn", 4, 6)}), {1, 4, 6, 6});
        }
        else
        {
            g.output(g.node("GlobalAveragePool", "/pool/GlobalAveragePool", {cat}), {1, 6, 1, 1});
        }
        const auto dir = tempDir("autocast-qlinearconcat-" + std::to_string(opset) + (quantizedAfter ? "q" : "pool"));
        g.save((dir / "model.onnx").string());
        const FixReport report = autocastFix(dir / "model.onnx", dir / "fixed.onnx");
        ASSERT_TRUE(report.autocast);
        const auto& notes = report.autocast->notes;
        const bool found =
            std::any_of(notes.begin(), notes.end(),
                        [](const std::string& note) { return note.find("QLinearConcat") != std::string::npos; });
        EXPECT_EQ(found, noted) << opset << " " << quantizedAfter;
        if (noted)
        {
            EXPECT_NE(renderFixText(report).find("1 quantized Concat(s) (/cat/Concat) now have fp16 Q/DQ scales"),
                      std::string::npos)
                << renderFixText(report);
        }
    }
}

TEST(FixAutocast, FloatBiasesUnderFp16ScalesGetTheOnnxRuntimeNote)
{
    // ONNX Runtime 1.30 quantizes a float conv bias again in FP16 when the Q/DQ scales are FP16, and the outputs go
    // wrong (the zoo at opset 19: docs/fix.md#autocast). Near-identical: the same model at opset 17 (FP32 scales),
    // and at opset 19 with a float bias from the start (no float-bias edit).
    for (const auto& [opset, quantizedBias, noted] :
         {std::tuple{19L, true, true}, std::tuple{17L, true, false}, std::tuple{19L, false, false}})
    {
        GraphBuilder g;
        g.opset("", opset);
        std::string bias = quantizedBias
                               ? g.node("DequantizeLinear", "/bias/DequantizeLinear",
                                        {g.int32Constant("conv.bias_quantized", {4}), g.scale("bias.scale", 0.001f)})
                               : g.weight("conv.bias", {4});
        std::string x = g.qdq("/in_q", g.input("images", {1, 3, 8, 8}));
        std::string conv = g.node("Conv", "/conv/Conv", {x, g.quantizedWeight("w", 4, 3), bias});
        g.output(g.node("GlobalAveragePool", "/pool/GlobalAveragePool", {conv}), {1, 4, 1, 1});
        const auto dir = tempDir("autocast-float-bias-" + std::to_string(opset) + (quantizedBias ? "q" : "f"));
        g.save((dir / "model.onnx").string());
        const FixReport report =
            autocastFix(dir / "model.onnx", dir / "fixed.onnx", AutocastOptions::Target::kFp16, false, /*rules*/ {});
        ASSERT_TRUE(report.autocast);
        const auto& notes = report.autocast->notes;
        const bool found =
            std::any_of(notes.begin(), notes.end(),
                        [](const std::string& note) { return note.find("ORT_DISABLE_ALL") != std::string::npos; });
        EXPECT_EQ(found, noted) << opset << " " << quantizedBias << "\n" << renderFixText(report);
    }
}
