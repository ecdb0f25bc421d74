// Inputs made safe (issue 38): every external data reference is checked in one place before anything opens it
// (parsers/external_data_ref.h), autocast resolves locations against the model's folder and loads every value it
// converts, nothing is copied short, a float initializer with a few bytes of raw data is refused rather than copied
// from, and no command writes over one of its inputs. Each case has a near-identical one that must still work.
#include "graph_builder.h"
#include "test_support.h"

#include "parsers/external_data_ref.h"
#include "qdq/autocast.h"
#include "qdq/fix.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>

#include <cstring>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace qdq;
using namespace qdq::test;
namespace fs = std::filesystem;

namespace
{

//! x[1,64] * k[1,64] -> Relu: k is the float initializer autocast converts.
std::string mulModel(float value = 0.5f)
{
    GraphBuilder g;
    std::string y = g.node("Mul", "/m/Mul", {g.input("x", {1, 64}), g.weight("k", {1, 64}, value)});
    g.output(g.node("Relu", "/relu/Relu", {y}), {1, 64});
    return g.serialize();
}

onnx::ModelProto parsed(const std::string& bytes)
{
    onnx::ModelProto model;
    EXPECT_TRUE(model.ParseFromString(bytes));
    return model;
}

onnx::TensorProto* initializerNamed(onnx::ModelProto& model, const std::string& name)
{
    for (auto& tensor : *model.mutable_graph()->mutable_initializer())
    {
        if (tensor.name() == name)
        {
            return &tensor;
        }
    }
    return nullptr;
}

//! Points tensor at external data: the given entries (an absent value is left out), data_location EXTERNAL.
void setExternal(onnx::TensorProto& tensor, const std::vector<std::pair<std::string, std::string>>& entries)
{
    tensor.clear_raw_data();
    tensor.clear_float_data();
    tensor.clear_external_data();
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [key, value] : entries)
    {
        auto* entry = tensor.add_external_data();
        entry->set_key(key);
        entry->set_value(value);
    }
}

void save(const onnx::ModelProto& model, const fs::path& path)
{
    std::ofstream out(path, std::ios::binary);
    ASSERT_TRUE(model.SerializeToOstream(&out));
}

std::string floatBytes(std::size_t count, float value)
{
    std::string bytes(count * sizeof(float), '\0');
    for (std::size_t i = 0; i < count; ++i)
    {
        std::memcpy(bytes.data() + i * sizeof(float), &value, sizeof(float));
    }
    return bytes;
}

//! The model of mulModel with k in external data at location (entries as given), saved as dir/model.onnx.
fs::path externalMulModel(const fs::path& dir, const std::vector<std::pair<std::string, std::string>>& entries)
{
    onnx::ModelProto model = parsed(mulModel());
    setExternal(*initializerNamed(model, "k"), entries);
    const fs::path path = dir / "model.onnx";
    save(model, path);
    return path;
}

FixOptions autocastOptions(const fs::path& output, bool dryRun = false)
{
    FixOptions options;
    options.output = dryRun ? std::string() : output.string();
    options.dryRun = dryRun;
    options.force = true;
    options.rules = {"none"};
    options.autocast.target = AutocastOptions::Target::kFp16;
    options.buildMode.typing = Typing::kStrong;
    return options;
}

FixReport fixWith(const fs::path& model, const FixOptions& options)
{
    InputFiles files;
    files.files = {model.string()};
    return runFix(files, options, Limits{});
}

//! The InputError message of fix, or "" when it succeeds.
std::string fixError(const fs::path& model, const FixOptions& options)
{
    try
    {
        fixWith(model, options);
    }
    catch (const InputError& error)
    {
        return error.where().path + ": " + error.message();
    }
    return "";
}

onnx::ModelProto loadModel(const fs::path& path)
{
    return parsed(readFile(path));
}

} // namespace

// ----- the one check -------------------------------------------------------------------------------------------------

TEST(ExternalDataRef, NumbersAreDecimalsOfAtMost18Digits)
{
    EXPECT_EQ(parseExternalDataNumber("0"), 0u);
    EXPECT_EQ(parseExternalDataNumber("256"), 256u);
    EXPECT_EQ(parseExternalDataNumber("999999999999999999"), 999999999999999999u);
    EXPECT_FALSE(parseExternalDataNumber(""));
    EXPECT_FALSE(parseExternalDataNumber("abc"));
    EXPECT_FALSE(parseExternalDataNumber("-1"));
    EXPECT_FALSE(parseExternalDataNumber(" 1"));
    EXPECT_FALSE(parseExternalDataNumber("12345678901234567890123"));
}

TEST(ExternalDataRef, RangeIsCheckedAgainstTheFileAndTheTensorsSize)
{
    const fs::path dir = tempDir("external-ref");
    writeFile(dir / "w.bin", std::string(256, 'x'));
    ExternalDataEntries entries;
    entries.tensor = "k";
    entries.location = "w.bin";
    entries.dataType = onnx::TensorProto::FLOAT;
    entries.dims = {1, 64};
    const CheckedExternalData whole = checkExternalData((dir / "m.onnx").string(), dir, entries);
    EXPECT_EQ(whole.length, 256u);
    EXPECT_EQ(readExternalData(whole, "k").size(), 256u);
    // Without a length, the tensor's own size: a cut file is an error, not a short copy.
    writeFile(dir / "cut.bin", std::string(100, 'x'));
    entries.location = "cut.bin";
    EXPECT_THROW(checkExternalData((dir / "m.onnx").string(), dir, entries), InputError);
    // A length the dims do not hold (a huge one cannot become an allocation).
    entries.location = "w.bin";
    entries.length = "999999999999999999";
    EXPECT_THROW(checkExternalData((dir / "m.onnx").string(), dir, entries), InputError);
    entries.length = "256";
    entries.offset = "abc";
    EXPECT_THROW(checkExternalData((dir / "m.onnx").string(), dir, entries), InputError);
    entries.offset = "0";
    EXPECT_EQ(checkExternalData((dir / "m.onnx").string(), dir, entries).length, 256u);
}

// ----- autocast ------------------------------------------------------------------------------------------------------

TEST(FixInputsSafe, AutocastRefusesALocationOutOfTheFolderWithoutOpeningIt)
{
    const fs::path root = tempDir("safe-outside");
    fs::create_directories(root / "m");
    // A FIFO outside the model's folder: opened, it would block the command until killed.
    ASSERT_EQ(::mkfifo((root / "outside.fifo").c_str(), 0600), 0);
    const fs::path model = externalMulModel(root / "m", {{"location", "../outside.fifo"}});
    const std::string error = fixError(model, autocastOptions(root / "m" / "fixed.onnx"));
    EXPECT_NE(error.find("'..'"), std::string::npos) << error;
    // --dry-run checks the same way.
    const std::string dryRun = fixError(model, autocastOptions({}, true));
    EXPECT_NE(dryRun.find("'..'"), std::string::npos) << dryRun;
    const fs::path absolute = externalMulModel(root / "m", {{"location", (root / "outside.fifo").string()}});
    const std::string absoluteError = fixError(absolute, autocastOptions(root / "m" / "fixed.onnx"));
    EXPECT_NE(absoluteError.find("absolute"), std::string::npos) << absoluteError;
}

TEST(FixInputsSafe, AutocastReadsALocationInsideTheFolder)
{
    const fs::path dir = tempDir("safe-inside");
    writeFile(dir / "weights.bin", floatBytes(64, 0.5f));
    const fs::path model = externalMulModel(dir, {{"location", "weights.bin"}, {"offset", "0"}, {"length", "256"}});
    const FixReport report = fixWith(model, autocastOptions(dir / "fixed.onnx"));
    ASSERT_TRUE(report.autocast);
    EXPECT_EQ(report.autocast->externalInlined, 1u);
    onnx::ModelProto fixed = loadModel(dir / "fixed.onnx");
    const onnx::TensorProto* k = initializerNamed(fixed, "k");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->data_type(), onnx::TensorProto::FLOAT16);
    ASSERT_EQ(k->raw_data().size(), 128u);
    EXPECT_EQ(static_cast<unsigned char>(k->raw_data()[1]), 0x38); // 0.5 in binary16 is 0x3800
}

TEST(FixInputsSafe, AMissingLocationNamedLikeTheFixedModelIsNotReadFromTheCandidate)
{
    // The model's folder has no file "fixed.onnx"; the candidate's folder does (the candidate itself). Resolved there,
    // the fixed model's own bytes became its weights.
    const fs::path root = tempDir("safe-own-name");
    fs::create_directories(root / "m");
    fs::create_directories(root / "out");
    const fs::path model = externalMulModel(root / "m", {{"location", "fixed.onnx"}});
    const std::string error = fixError(model, autocastOptions(root / "out" / "fixed.onnx"));
    EXPECT_FALSE(error.empty());
    EXPECT_FALSE(fs::exists(root / "out" / "fixed.onnx"));
    // The same model whose data file is there is converted.
    writeFile(root / "m" / "fixed.onnx", floatBytes(64, 0.25f));
    EXPECT_EQ(fixError(model, autocastOptions(root / "out" / "other.onnx")), "");
    onnx::ModelProto fixed = loadModel(root / "out" / "other.onnx");
    ASSERT_NE(initializerNamed(fixed, "k"), nullptr);
    EXPECT_EQ(initializerNamed(fixed, "k")->data_type(), onnx::TensorProto::FLOAT16);
}

TEST(FixInputsSafe, ExternalNumbersThatAreNoNumbersAreInputErrors)
{
    // The data file is missing, so the writer keeps the reference and autocast is the first to parse it.
    const fs::path dir = tempDir("safe-numbers");
    for (const auto& [key, value] :
         std::vector<std::pair<std::string, std::string>>{{"offset", "abc"}, {"length", "12345678901234567890123"}})
    {
        const fs::path model = externalMulModel(dir, {{"location", "missing.bin"}, {key, value}});
        const std::string error = fixError(model, autocastOptions(dir / "fixed.onnx"));
        EXPECT_NE(error.find("is not a non-negative integer"), std::string::npos) << key << ": " << error;
    }
    const fs::path model = externalMulModel(dir, {{"location", "missing.bin"}, {"offset", "0"}});
    const std::string error = fixError(model, autocastOptions(dir / "fixed.onnx"));
    EXPECT_NE(error.find("cannot be read"), std::string::npos) << error;
}

TEST(FixInputsSafe, ACutDataFileWithoutLengthsIsNotCopiedShort)
{
    const fs::path dir = tempDir("safe-cut");
    writeFile(dir / "weights.bin", floatBytes(64, 0.5f).substr(0, 100));
    const fs::path model = externalMulModel(dir, {{"location", "weights.bin"}});
    FixOptions options = autocastOptions(dir / "fixed.onnx");
    options.autocast.target = AutocastOptions::Target::kNone; // the writer alone
    const std::string error = fixError(model, options);
    EXPECT_NE(error.find("100-byte file"), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(dir / "fixed.onnx.data"));
    // The whole file, still without lengths, is copied whole.
    writeFile(dir / "weights.bin", floatBytes(64, 0.5f));
    EXPECT_EQ(fixError(model, options), "");
    EXPECT_EQ(fs::file_size(dir / "fixed.onnx.data"), 256u);
}

TEST(FixInputsSafe, AConstantWhoseValueIsInExternalDataIsLoadedBeforeItIsConverted)
{
    const fs::path dir = tempDir("safe-constant");
    GraphBuilder g;
    std::string k = g.node("Constant", "/k/Constant", {});
    std::string y = g.node("Mul", "/m/Mul", {g.input("x", {1, 64}), k});
    g.output(g.node("Relu", "/relu/Relu", {y}), {1, 64});
    onnx::ModelProto model = parsed(g.serialize());
    for (auto& node : *model.mutable_graph()->mutable_node())
    {
        if (node.op_type() == "Constant")
        {
            auto* value = node.add_attribute();
            value->set_name("value");
            value->set_type(onnx::AttributeProto::TENSOR);
            value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
            value->mutable_t()->add_dims(1);
            value->mutable_t()->add_dims(64);
            setExternal(*value->mutable_t(), {{"location", "constant.bin"}, {"offset", "0"}, {"length", "256"}});
        }
    }
    save(model, dir / "model.onnx");
    writeFile(dir / "constant.bin", floatBytes(64, 0.5f));
    ASSERT_EQ(fixError(dir / "model.onnx", autocastOptions(dir / "fixed.onnx")), "");
    const onnx::ModelProto fixed = loadModel(dir / "fixed.onnx");
    bool seen = false;
    for (const auto& node : fixed.graph().node())
    {
        if (node.op_type() != "Constant")
        {
            continue;
        }
        seen = true;
        const onnx::TensorProto& value = node.attribute(0).t();
        EXPECT_EQ(value.data_type(), onnx::TensorProto::FLOAT16);
        EXPECT_EQ(value.external_data_size(), 0);
        ASSERT_EQ(value.raw_data().size(), 128u);
        EXPECT_EQ(static_cast<unsigned char>(value.raw_data()[1]), 0x38);
    }
    EXPECT_TRUE(seen);
    // Its data file gone: refused, not written as FP16 with FP32 bytes behind it.
    fs::remove(dir / "constant.bin");
    fs::remove(dir / "fixed.onnx");
    EXPECT_NE(fixError(dir / "model.onnx", autocastOptions(dir / "fixed.onnx")).find("constant.bin"),
              std::string::npos);
}

TEST(FixInputsSafe, AFloatInitializerWithAFewBytesOfRawDataIsRefusedNotCopiedFrom)
{
    const fs::path dir = tempDir("safe-short-raw");
    for (std::size_t bytes : {0u, 3u})
    {
        GraphBuilder g;
        std::string y = g.node("Mul", "/m/Mul", {g.input("x", {1, 1}), g.weight("k", {1, 1}, 0.5f)});
        g.output(g.node("Relu", "/relu/Relu", {y}), {1, 1});
        onnx::ModelProto model = parsed(g.serialize());
        onnx::TensorProto& k = *initializerNamed(model, "k");
        k.clear_float_data();
        k.set_raw_data(std::string(bytes, '\x01'));
        save(model, dir / "model.onnx");
        const std::string error = fixError(dir / "model.onnx", autocastOptions(dir / "fixed.onnx"));
        EXPECT_NE(error.find("bytes of raw data"), std::string::npos) << bytes << ": " << error;
    }
    // An empty tensor (a zero dim) with no bytes is converted: nothing to copy.
    GraphBuilder g;
    std::string y = g.node("Mul", "/m/Mul", {g.input("x", {1, 0}), g.weight("k", {1, 0}, 0.5f)});
    g.output(g.node("Relu", "/relu/Relu", {y}), {1, 0});
    onnx::ModelProto model = parsed(g.serialize());
    initializerNamed(model, "k")->clear_float_data();
    initializerNamed(model, "k")->set_raw_data("");
    save(model, dir / "empty.onnx");
    EXPECT_EQ(fixError(dir / "empty.onnx", autocastOptions(dir / "fixed-empty.onnx")), "");
}

// ----- no command writes over one of its inputs ----------------------------------------------------------------------

namespace
{

fs::path cliModel(const fs::path& dir)
{
    return writeFile(dir / "m.onnx", mulModel());
}

} // namespace

TEST(OutputsNeverInputs, GraphRefusesToDrawOverItsModelEvenWithForce)
{
    const fs::path dir = tempDir("outputs-graph");
    const fs::path model = cliModel(dir);
    const std::string before = readFile(model);
    CommandResult result = runCli({"graph", model.string(), "--view", "onnx", "-o", model.string(), "--force"});
    EXPECT_EQ(result.exitStatus, 2) << result.err;
    EXPECT_NE(result.err.find("is an input of this command"), std::string::npos) << result.err;
    EXPECT_EQ(readFile(model), before);
    // A hard link of the model is the model.
    ASSERT_EQ(::link(model.c_str(), (dir / "link.svg").c_str()), 0);
    result = runCli({"graph", model.string(), "--view", "onnx", "-o", (dir / "link.svg").string(), "--force"});
    EXPECT_EQ(result.exitStatus, 2) << result.err;
    EXPECT_EQ(readFile(model), before);
    // Another file is written, --force or not.
    result = runCli({"graph", model.string(), "--view", "onnx", "-o", (dir / "m.svg").string(), "--force"});
    EXPECT_EQ(result.exitStatus, 0) << result.err;
    EXPECT_NE(readFile(dir / "m.svg").find("<svg"), std::string::npos);
}

TEST(OutputsNeverInputs, FixRefusesToWriteOverItsLayerJson)
{
    const fs::path dir = tempDir("outputs-fix");
    const fs::path model = cliModel(dir);
    // The layers of this model's engine (a layer list of another model is refused: diagnose.cpp, modelMismatch).
    const fs::path layers =
        writeFile(dir / "layers.json", "{\"Layers\": [\"/m/Mul\", \"/relu/Relu\"], \"Bindings\": [\"x\", \"y\"]}\n");
    const std::string before = readFile(layers);
    CommandResult result =
        runCli({"fix", model.string(), layers.string(), "-o", layers.string(), "--force", "--rules", "none"});
    EXPECT_EQ(result.exitStatus, 2) << result.err;
    EXPECT_NE(result.err.find("is an input of this command"), std::string::npos) << result.err;
    EXPECT_EQ(readFile(layers), before);
    result = runCli(
        {"fix", model.string(), layers.string(), "-o", (dir / "fixed.onnx").string(), "--force", "--rules", "none"});
    EXPECT_EQ(result.exitStatus, 0) << result.err;
}

TEST(OutputsNeverInputs, DiagnoseAndDiffRefuseAReportFolderHoldingTheirInput)
{
    const fs::path dir = tempDir("outputs-diagnose");
    const std::string layerJson = readFile(fixture("layer-info/names_only.json"));
    const fs::path input = writeFile(dir / "report.json", layerJson);
    CommandResult result = runCli({"diagnose", input.string(), "-o", dir.string(), "--force"});
    EXPECT_EQ(result.exitStatus, 2) << result.err;
    EXPECT_EQ(readFile(input), layerJson);
    EXPECT_FALSE(fs::exists(dir / "report.txt")); // nothing written before the refusal
    const fs::path layers = writeFile(dir / "layers.json", layerJson);
    result = runCli({"diagnose", layers.string(), "-o", dir.string(), "--force"});
    EXPECT_EQ(result.exitStatus, 0) << result.err;

    const fs::path diffDir = tempDir("outputs-diff");
    const fs::path baseline = writeFile(diffDir / "diff.json", layerJson);
    const fs::path candidate = writeFile(diffDir / "candidate.json", layerJson);
    result = runCli({"diff", "--baseline", baseline.string(), "--candidate", candidate.string(), "-o", diffDir.string(),
                     "--force"});
    EXPECT_EQ(result.exitStatus, 2) << result.err;
    EXPECT_EQ(readFile(baseline), layerJson);
    const fs::path renamed = diffDir / "baseline.json";
    fs::rename(baseline, renamed);
    result = runCli(
        {"diff", "--baseline", renamed.string(), "--candidate", candidate.string(), "-o", diffDir.string(), "--force"});
    EXPECT_EQ(result.exitStatus, 0) << result.err;
}

// ----- newcomer edges ------------------------------------------------------------------------------------------------

TEST(FixInputsSafe, FixMakesAMissingOutputFolder)
{
    const fs::path dir = tempDir("fix-missing-folder");
    const fs::path model = cliModel(dir);
    const CommandResult result =
        runCli({"fix", model.string(), "-o", (dir / "missing" / "dir" / "fixed.onnx").string(), "--rules", "none"});
    EXPECT_EQ(result.exitStatus, 0) << result.err;
    EXPECT_TRUE(fs::exists(dir / "missing" / "dir" / "fixed.onnx"));
    // A file where the folder would be is an input error.
    writeFile(dir / "plain", "x");
    const CommandResult blocked =
        runCli({"fix", model.string(), "-o", (dir / "plain" / "fixed.onnx").string(), "--rules", "none"});
    EXPECT_EQ(blocked.exitStatus, 2) << blocked.err;
}

// ----- subgraphs -----------------------------------------------------------------------------------------------------

namespace
{

//! x -> Relu -> r -> Add(r, r) -> out; withIf: an If on a bool input whose branches read r from the outer scope
//! (then: Identity(r), else: Neg(r)) and whose output is a second graph output.
fs::path subgraphModel(const fs::path& dir, bool withIf)
{
    GraphBuilder g;
    g.opset("", 17);
    const std::string r = g.node("Relu", "/relu/Relu", {g.input("x", {1, 8})});
    g.output(g.node("Add", "/add/Add", {r, r}), {1, 8});
    onnx::ModelProto model = parsed(g.serialize());
    if (withIf)
    {
        onnx::GraphProto& graph = *model.mutable_graph();
        auto* cond = graph.add_input();
        cond->set_name("cond");
        cond->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
        cond->mutable_type()->mutable_tensor_type()->mutable_shape();
        auto branch = [&](const std::string& name, const std::string& op)
        {
            onnx::GraphProto body;
            body.set_name(name);
            auto* node = body.add_node();
            node->set_op_type(op);
            node->set_name(name + "/" + op);
            node->add_input(r);
            node->add_output(name + "_out");
            auto* out = body.add_output();
            out->set_name(name + "_out");
            out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
            auto* shape = out->mutable_type()->mutable_tensor_type()->mutable_shape();
            shape->add_dim()->set_dim_value(1);
            shape->add_dim()->set_dim_value(8);
            return body;
        };
        auto* node = graph.add_node();
        node->set_op_type("If");
        node->set_name("/if/If");
        node->add_input("cond");
        node->add_output("branch_out");
        for (const auto& [attribute, op] :
             {std::pair<std::string, std::string>{"then_branch", "Identity"}, {"else_branch", "Neg"}})
        {
            auto* a = node->add_attribute();
            a->set_name(attribute);
            a->set_type(onnx::AttributeProto::GRAPH);
            *a->mutable_g() = branch(attribute, op);
        }
        auto* out = graph.add_output();
        out->set_name("branch_out");
        out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
        auto* shape = out->mutable_type()->mutable_tensor_type()->mutable_shape();
        shape->add_dim()->set_dim_value(1);
        shape->add_dim()->set_dim_value(8);
    }
    const fs::path path = dir / (withIf ? "if.onnx" : "plain.onnx");
    save(model, path);
    return path;
}

//! The element type ONNX shape inference gives tensor in the model at path (0 when it gives none).
int inferredType(const fs::path& path, const std::string& tensor)
{
    onnx::ModelProto model = loadModel(path);
    onnx::shape_inference::InferShapes(model);
    for (const auto& info : model.graph().value_info())
    {
        if (info.name() == tensor)
        {
            return info.type().tensor_type().elem_type();
        }
    }
    return 0;
}

} // namespace

TEST(FixInputsSafe, AutocastKeepsFp32WhatASubgraphReadsAndShapeInferencePasses)
{
    const fs::path dir = tempDir("safe-subgraph");
    const fs::path withIf = subgraphModel(dir, true);
    const FixReport report = fixWith(withIf, autocastOptions(dir / "if-fixed.onnx"));
    EXPECT_EQ(onnxFullCheck(dir / "if-fixed.onnx"), "");
    EXPECT_EQ(inferredType(dir / "if-fixed.onnx", "/relu/Relu_out"), onnx::TensorProto::FLOAT);
    ASSERT_TRUE(report.autocast);
    bool named = false;
    for (const auto& group : report.autocast->kept)
    {
        named = named || (group.reason == "subgraph-input" &&
                          std::find(group.nodes.begin(), group.nodes.end(), "/relu/Relu") != group.nodes.end());
    }
    EXPECT_TRUE(named);
    // Without the If the Relu is converted.
    const fs::path plain = subgraphModel(dir, false);
    fixWith(plain, autocastOptions(dir / "plain-fixed.onnx"));
    EXPECT_EQ(onnxFullCheck(dir / "plain-fixed.onnx"), "");
    EXPECT_EQ(inferredType(dir / "plain-fixed.onnx", "/relu/Relu_out"), onnx::TensorProto::FLOAT16);
}

// ----- the zero-point edit and constants -----------------------------------------------------------------------------

namespace
{

//! images -> uint8 Q/DQ (zero point 128) -> Conv -> Add(., DQ(Q(c))) -> output, c a float constant [8, 1, 1] of
//! value cValue behind a uint8 Q/DQ with zero point 0 (its range starts at 0, as ONNX Runtime writes a constant >= 0).
fs::path constantQdqModel(const fs::path& dir, float cValue)
{
    GraphBuilder g;
    auto pair = [&](const std::string& prefix, const std::string& tensor, float scale, int zeroPoint)
    {
        std::string s = g.scale(prefix + "/scale", scale);
        std::string z = g.zeroPoint(prefix + "/zero_point", true, zeroPoint);
        std::string q = g.node("QuantizeLinear", prefix + "/QuantizeLinear", {tensor, s, z});
        return g.node("DequantizeLinear", prefix + "/DequantizeLinear", {q, s, z});
    };
    std::string x = pair("/in_q", g.input("images", {1, 3, 8, 8}), 0.02f, 128);
    std::string conv = g.node("Conv", "/conv0/Conv", {x, g.int8Weight("w0", 8, 3)});
    std::string c = pair("/c_q", g.weight("c", {8, 1, 1}, cValue), 0.01f, 0);
    g.output(g.node("Add", "/add/Add", {conv, c}));
    const fs::path path = dir / (cValue >= 0 ? "constant-positive.onnx" : "constant-negative.onnx");
    g.save(path.string());
    return path;
}

bool addsRelu(const FixReport& report)
{
    for (const auto& edit : report.edits)
    {
        for (const std::string& added : edit.added)
        {
            if (added.find("/c_q/") != std::string::npos && added.ends_with("/Relu"))
            {
                return true;
            }
        }
    }
    return false;
}

} // namespace

TEST(FixInputsSafe, TheZeroPointEditPutsNoReluBeforeAConstantKnownNonNegative)
{
    const fs::path dir = tempDir("safe-constant-relu");
    FixOptions options;
    options.force = true;
    options.output = (dir / "positive-fixed.onnx").string();
    const FixReport positive = fixWith(constantQdqModel(dir, 0.5f), options);
    ASSERT_FALSE(positive.edits.empty()) << renderFixText(positive);
    EXPECT_FALSE(addsRelu(positive)) << renderFixText(positive);
    // The same constant with a negative value needs the clamp its range applied.
    options.output = (dir / "negative-fixed.onnx").string();
    const FixReport negative = fixWith(constantQdqModel(dir, -0.5f), options);
    EXPECT_TRUE(addsRelu(negative)) << renderFixText(negative);
}

// ----- quantized constants of any size are read when an edit converts them ---------------------------------------

namespace
{

//! images -> Q/DQ -> 1x1 Conv of `channels` outputs, its bias an INT32 constant behind a DequantizeLinear, + a
//! UINT8 constant (zero point 128) behind another, as ONNX Runtime quantizes a head bias and a position embedding.
fs::path largeConstantsModel(const fs::path& dir, long channels)
{
    GraphBuilder g;
    std::string bias = g.node("DequantizeLinear", "/bias/DequantizeLinear",
                              {g.int32Constant("conv.bias_quantized", {channels}), g.scale("bias.scale", 0.5f)});
    std::string conv =
        g.node("Conv", "/conv/Conv",
               {g.qdq("/in_q", g.input("images", {1, 1, 2, 2})), g.quantizedWeight("w", channels, 1, 1), bias});
    std::string embedding = g.node("DequantizeLinear", "/pos/DequantizeLinear",
                                   {g.uint8Constant("pos_quantized", {1, channels, 1, 1}), g.scale("pos.scale", 0.25f),
                                    g.zeroPoint("pos.zero_point", true, 128)});
    g.output(g.node("Add", "/add/Add", {conv, embedding}), {1, channels, 2, 2});
    return writeFile(dir / ("large-" + std::to_string(channels) + ".onnx"), g.serialize());
}

} // namespace

TEST(FixInputsSafe, QuantizedConstantsLargerThanTheAnalysisReadsAreMadeFloat)
{
    const fs::path dir = tempDir("safe-large-constants");
    // 16,000 elements were read before; 20,000 (past the analysis's 16,384) were "not available" though inline.
    for (long channels : {16000L, 20000L})
    {
        const fs::path model = largeConstantsModel(dir, channels);
        FixOptions options;
        options.force = true;
        options.output = (dir / ("fixed-" + std::to_string(channels) + ".onnx")).string();
        const FixReport report = fixWith(model, options);
        std::size_t floatBiases = 0;
        for (const auto& edit : report.edits)
        {
            floatBiases += edit.edit.kind == FixEdit::Kind::kFloatBias ? 1 : 0;
        }
        EXPECT_EQ(floatBiases, 2u) << channels << "\n" << renderFixText(report);
        for (const auto& [rule, count] : report.after.bySlug)
        {
            EXPECT_TRUE(rule != "quantized-bias" && rule != "nonzero-zero-point") << channels << ": " << rule;
        }
        // The float values are what the DequantizeLinear computes: the last bias element (channels - 1) x 0.5.
        OnnxGraph fixed = readOnnx(options.output, OnnxReadOptions{true, 32});
        const OnnxNode* conv = fixed.findNode("/conv/Conv");
        ASSERT_NE(conv, nullptr);
        const OnnxConstant* floatBias = fixed.constant(TensorKey(conv->inputs[2]));
        ASSERT_NE(floatBias, nullptr);
        ASSERT_EQ(floatBias->values.size(), static_cast<std::size_t>(channels));
        EXPECT_FLOAT_EQ(static_cast<float>(floatBias->values.back()), 0.5f * static_cast<float>(channels - 1));
    }
    // diagnose and predict still leave the large one unread; fix's reading takes it.
    const fs::path model = dir / "large-20000.onnx";
    EXPECT_FALSE(readOnnx(model.string()).constant(TensorKey("conv.bias_quantized"))->dataLoaded);
    OnnxReadOptions forFix;
    forFix.loadQuantizedConstants = true;
    EXPECT_TRUE(readOnnx(model.string(), forFix).constant(TensorKey("conv.bias_quantized"))->dataLoaded);
    // Within --max-input-mb: a UINT8 constant whose decoded values (8 bytes an element) exceed the limit that its
    // 60,000-byte file meets stays unread.
    GraphBuilder g;
    std::string embedding = g.node("DequantizeLinear", "/pos/DequantizeLinear",
                                   {g.uint8Constant("pos_quantized", {1, 60000}), g.scale("pos.scale", 0.25f),
                                    g.zeroPoint("pos.zero_point", true, 128)});
    g.output(g.node("Add", "/add/Add", {g.input("x", {1, 60000}), embedding}), {1, 60000});
    const fs::path small = writeFile(dir / "embedding.onnx", g.serialize());
    Limits tight;
    tight.maxInputBytes = fs::file_size(small) + 1000;
    EXPECT_FALSE(readOnnx(small.string(), forFix, tight).constant(TensorKey("pos_quantized"))->dataLoaded);
    EXPECT_TRUE(readOnnx(small.string(), forFix).constant(TensorKey("pos_quantized"))->dataLoaded);
}

// ----- a symmetric conversion leaves out the exporter's declared uint8 type of the Q's output ---------------------

TEST(FixInputsSafe, ASymmetricConversionLeavesOutTheDeclaredUint8TypeOfItsQuantizeOutput)
{
    // onnx.version_converter (and shape inference) write value_info for every tensor; ONNX Runtime then refused the
    // fixed uint8 exports at opset 19: "Type (tensor(uint8)) of output arg (input_QuantizeLinear_Output) ...".
    const fs::path dir = tempDir("safe-value-info");
    GraphBuilder g;
    std::string s = g.scale("/in_q/scale", 0.02f);
    std::string z = g.zeroPoint("/in_q/zero_point", true, 128);
    std::string q = g.node("QuantizeLinear", "/in_q/QuantizeLinear", {g.input("images", {1, 3, 8, 8}), s, z});
    std::string x = g.node("DequantizeLinear", "/in_q/DequantizeLinear", {q, s, z});
    std::string conv = g.node("Conv", "/conv/Conv", {x, g.int8Weight("w", 4, 3)});
    g.output(g.node("Relu", "/relu/Relu", {conv}), {1, 4, 6, 6});
    onnx::ModelProto model = parsed(g.serialize());
    const auto declare = [&](const std::string& name, int type)
    {
        auto* info = model.mutable_graph()->add_value_info();
        info->set_name(name);
        info->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    };
    declare(q, onnx::TensorProto::UINT8);
    declare(conv, onnx::TensorProto::FLOAT);
    save(model, dir / "model.onnx");
    FixOptions options;
    options.force = true;
    options.output = (dir / "fixed.onnx").string();
    const FixReport report = fixWith(dir / "model.onnx", options);
    ASSERT_TRUE(std::any_of(report.edits.begin(), report.edits.end(),
                            [](const PlannedEdit& edit) { return edit.edit.kind == FixEdit::Kind::kSymmetricInt8; }))
        << renderFixText(report);
    const onnx::ModelProto fixed = loadModel(dir / "fixed.onnx");
    std::vector<std::string> declared;
    for (const auto& info : fixed.graph().value_info())
    {
        declared.push_back(info.name());
    }
    // The Q's output (now int8) is no longer declared uint8; the conv's float output keeps its declaration.
    EXPECT_EQ(declared, std::vector<std::string>{conv});
    EXPECT_EQ(report.checker, "passed") << report.checker;
}
