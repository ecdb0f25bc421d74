// `qdq-doctor fix` on models whose weights are in external data: the fixed model gets its own data file beside it
// (<output>.data), loads from its own folder with the project's reader and passes ONNX's checker there, whatever folder
// it is written to; the candidate's diagnosis and --dry-run read that layout; a missing data file keeps its reference;
// an existing data file is not overwritten without --force, and the input's own data file never.
#include "graph_builder.h"
#include "test_support.h"

#include "qdq/fix.h"
#include "qdq/interrupt_cleanup.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using namespace qdq;
using namespace qdq::test;
namespace fs = std::filesystem;

namespace
{

FixReport fixFile(const fs::path& model, const fs::path& output, FixOptions options = {})
{
    InputFiles files;
    files.files = {model.string()};
    options.output = output.string();
    return runFix(files, options, Limits{});
}

fs::path samplePath(const std::string& sample)
{
    return fs::path(QDQ_SOURCE_DIR) / "samples" / sample / "model.onnx";
}

//! The model saved in <root>/models with every initializer (the Q/DQ scales too, so that a diagnosis needs the data
//! file) in models/model.onnx.data.
fs::path externalDataCopy(const fs::path& model, const fs::path& root)
{
    fs::create_directories(root / "models");
    return saveWithExternalData(readFile(model), root / "models" / "model.onnx", "model.onnx.data", 0);
}

onnx::ModelProto parseFile(const fs::path& path)
{
    onnx::ModelProto model;
    EXPECT_TRUE(model.ParseFromString(readFile(path))) << path;
    return model;
}

std::string entryOf(const onnx::TensorProto& tensor, const std::string& key)
{
    for (const auto& entry : tensor.external_data())
    {
        if (entry.key() == key)
        {
            return entry.value();
        }
    }
    return {};
}

//! The locations of every external tensor of the model (initializers and node attribute tensors), one per tensor.
std::vector<std::string> externalLocations(const onnx::ModelProto& model)
{
    std::vector<std::string> locations;
    const auto look = [&locations](const onnx::TensorProto& tensor)
    {
        if (tensor.external_data_size() > 0 || tensor.data_location() == onnx::TensorProto::EXTERNAL)
        {
            locations.push_back(entryOf(tensor, "location"));
        }
    };
    for (const auto& tensor : model.graph().initializer())
    {
        look(tensor);
    }
    for (const auto& node : model.graph().node())
    {
        for (const auto& attribute : node.attribute())
        {
            if (attribute.has_t())
            {
                look(attribute.t());
            }
        }
    }
    return locations;
}

std::vector<std::string> filesIn(const fs::path& dir)
{
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir))
    {
        names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

OnnxGraph withWeights(const fs::path& model)
{
    OnnxReadOptions options;
    options.loadWeights = true;
    return readOnnx(model.string(), options);
}

//! Every constant the input stores externally, read back from the output (where it still exists) with the same values;
//! returns how many were compared. Neither model may have reader warnings (a data file not found, ...).
std::size_t expectSameWeights(const fs::path& input, const fs::path& output)
{
    const OnnxGraph before = withWeights(input);
    const OnnxGraph after = withWeights(output);
    for (const auto* graph : {&before, &after})
    {
        for (const auto& warning : graph->warnings)
        {
            ADD_FAILURE() << graph->sourcePath << ": " << warning.message;
        }
    }
    std::size_t compared = 0;
    for (const auto& constant : before.constants)
    {
        const OnnxConstant* fixed = after.constant(constant.name);
        if (!constant.external || fixed == nullptr)
        {
            continue;
        }
        EXPECT_TRUE(constant.dataLoaded && fixed->dataLoaded) << constant.name;
        EXPECT_TRUE(fixed->external) << constant.name;
        EXPECT_EQ(fixed->values, constant.values) << constant.name;
        ++compared;
    }
    return compared;
}

//! The report's notes about external data (a missing data file, one outside the model's folder), one a line.
std::string externalDataNotes(const FixReport& report)
{
    std::string notes;
    for (const std::string& note : report.notes)
    {
        notes += note.find("external data") != std::string::npos ? note + "\n" : "";
    }
    return notes;
}

bool sameSide(const FixSide& a, const FixSide& b)
{
    return a.findings == b.findings && a.errors == b.errors && a.warnings == b.warnings && a.bySlug == b.bySlug &&
           a.predicted.layers == b.predicted.layers && a.predicted.standaloneQdq == b.predicted.standaloneQdq;
}

} // namespace

// Written to another folder, the weights used to be referenced as "../models/model.onnx.data", which ONNX's loader and
// qdq-doctor's reader refuse. The fixed model is also the same as the fix of the model with inline weights: its
// diagnosis (and the candidate's, inside fix) read every scale from the data files.
TEST(FixExternalData, FixedIntoAnotherFolderLoadsFromThere)
{
    const fs::path root = tempDir("fix-external-other");
    const fs::path model = externalDataCopy(samplePath("b-yolov8-split-concat-silu"), root);
    const FixReport inlineReport = fixFile(samplePath("b-yolov8-split-concat-silu"), root / "inline-fixed.onnx");
    const fs::path output = root / "out" / "fixed.onnx";
    fs::create_directories(output.parent_path());
    const FixReport report = fixFile(model, output);

    ASSERT_FALSE(report.edits.empty());
    EXPECT_EQ(report.edits.size(), inlineReport.edits.size());
    EXPECT_TRUE(sameSide(report.before, inlineReport.before));
    EXPECT_TRUE(sameSide(report.after, inlineReport.after));
    EXPECT_EQ(externalDataNotes(report), "");
    EXPECT_EQ(report.checker, "passed");
    EXPECT_EQ(report.dataFile, output.string() + ".data");
    EXPECT_NE(renderFixText(report).find("  output:  " + output.string() + " (its weights in " + output.string() +
                                         ".data)\n"),
              std::string::npos)
        << renderFixText(report);
    EXPECT_EQ(filesIn(output.parent_path()), (std::vector<std::string>{"fixed.onnx", "fixed.onnx.data"}));
    const std::vector<std::string> locations = externalLocations(parseFile(output));
    EXPECT_FALSE(locations.empty());
    for (const std::string& location : locations)
    {
        EXPECT_EQ(location, "fixed.onnx.data");
    }
    EXPECT_GT(expectSameWeights(model, output), 0u);
    EXPECT_EQ(onnxFullCheck(output), "");
    // The input's folder is as it was.
    EXPECT_EQ(filesIn(root / "models"), (std::vector<std::string>{"model.onnx", "model.onnx.data"}));
}

TEST(FixExternalData, FixedIntoTheSameFolderGetsItsOwnDataFile)
{
    const fs::path root = tempDir("fix-external-same");
    const fs::path model = externalDataCopy(samplePath("b-yolov8-split-concat-silu"), root);
    const std::string data = readFile(root / "models" / "model.onnx.data");
    const fs::path output = root / "models" / "fixed.onnx";
    const FixReport report = fixFile(model, output);
    ASSERT_FALSE(report.edits.empty());
    EXPECT_EQ(filesIn(root / "models"),
              (std::vector<std::string>{"fixed.onnx", "fixed.onnx.data", "model.onnx", "model.onnx.data"}));
    for (const std::string& location : externalLocations(parseFile(output)))
    {
        EXPECT_EQ(location, "fixed.onnx.data");
    }
    EXPECT_EQ(readFile(root / "models" / "model.onnx.data"), data);
    EXPECT_GT(expectSameWeights(model, output), 0u);
    EXPECT_EQ(onnxFullCheck(output), "");
}

// The near-identical model with inline weights: no data file, nothing about external data in the output.
TEST(FixExternalData, InlineWeightsGetNoDataFile)
{
    const fs::path root = tempDir("fix-external-inline");
    const fs::path output = root / "fixed.onnx";
    const FixReport report = fixFile(samplePath("b-yolov8-split-concat-silu"), output);
    ASSERT_FALSE(report.edits.empty());
    EXPECT_EQ(filesIn(root), (std::vector<std::string>{"fixed.onnx"}));
    EXPECT_EQ(report.dataFile, "");
    EXPECT_TRUE(externalLocations(parseFile(output)).empty());
    EXPECT_EQ(externalDataNotes(report), "");
}

TEST(FixExternalData, DryRunReadsTheNewLayoutAndWritesNothing)
{
    const fs::path root = tempDir("fix-external-dry");
    const fs::path model = externalDataCopy(samplePath("b-yolov8-split-concat-silu"), root);
    fs::create_directories(root / "out");
    const FixReport written = fixFile(model, root / "written.onnx");
    FixOptions dry;
    dry.dryRun = true;
    const FixReport report = fixFile(model, root / "out" / "fixed.onnx", dry);
    EXPECT_FALSE(report.written);
    EXPECT_EQ(report.dataFile, "");
    EXPECT_EQ(report.edits.size(), written.edits.size());
    EXPECT_TRUE(sameSide(report.after, written.after));
    EXPECT_EQ(externalDataNotes(report), "");
    EXPECT_TRUE(filesIn(root / "out").empty());
    // The candidate's folder in the system's temporary folder is gone too.
    const std::string mine = ".qdq-doctor-fix-" + std::to_string(::getpid()) + "-";
    for (const auto& entry : fs::directory_iterator(fs::temp_directory_path()))
    {
        EXPECT_NE(entry.path().filename().string().rfind(mine, 0), 0u) << entry.path();
    }
}

// A missing data file stays as before: its references are kept, with a note, and no data file is written.
TEST(FixExternalData, MissingDataFileKeepsItsReferencesWithANote)
{
    const fs::path root = tempDir("fix-external-missing");
    const fs::path model = externalDataCopy(samplePath("b-yolov8-split-concat-silu"), root);
    fs::remove(root / "models" / "model.onnx.data");
    const fs::path output = root / "out" / "fixed.onnx";
    fs::create_directories(output.parent_path());
    const FixReport report = fixFile(model, output);
    EXPECT_EQ(filesIn(output.parent_path()), (std::vector<std::string>{"fixed.onnx"}));
    const std::vector<std::string> locations = externalLocations(parseFile(output));
    EXPECT_FALSE(locations.empty());
    for (const std::string& location : locations)
    {
        EXPECT_EQ(location, "model.onnx.data");
    }
    EXPECT_EQ(externalDataNotes(report).rfind("external data file 'model.onnx.data' is missing: reference kept", 0), 0u)
        << externalDataNotes(report);
}

// An existing <output>.data is someone's file: exit 2 without --force, and kept; --force replaces it, as it replaces
// the output. The input's own data file is never the output's, force or not.
TEST(FixExternalData, ExistingDataFileIsKeptWithoutForceAndTheInputsAlways)
{
    const fs::path root = tempDir("fix-external-exists");
    const fs::path model = externalDataCopy(samplePath("b-yolov8-split-concat-silu"), root);
    const fs::path output = root / "out" / "fixed.onnx";
    const fs::path data = root / "out" / "fixed.onnx.data";
    writeFile(data, "precious");
    CommandResult refused = runCli({"fix", model.string(), "-o", output.string()});
    EXPECT_EQ(refused.exitStatus, 2) << refused.out;
    EXPECT_NE(refused.err.find(data.string() + ": error: already exists (use --force to replace it)"),
              std::string::npos)
        << refused.err;
    EXPECT_EQ(readFile(data), "precious");
    EXPECT_EQ(filesIn(root / "out"), (std::vector<std::string>{"fixed.onnx.data"}));

    CommandResult forced = runCli({"fix", model.string(), "-o", output.string(), "--force"});
    EXPECT_EQ(forced.exitStatus, 0) << forced.err;
    EXPECT_EQ(filesIn(root / "out"), (std::vector<std::string>{"fixed.onnx", "fixed.onnx.data"}));
    EXPECT_EQ(onnxFullCheck(output), "");

    // An input whose data file is named as the output's would be.
    fs::create_directories(root / "second");
    const fs::path second = saveWithExternalData(readFile(samplePath("b-yolov8-split-concat-silu")),
                                                 root / "second" / "model.onnx", "out.onnx.data", 0);
    const std::string secondData = readFile(root / "second" / "out.onnx.data");
    CommandResult onInput = runCli({"fix", second.string(), "-o", (root / "second" / "out.onnx").string(), "--force"});
    EXPECT_EQ(onInput.exitStatus, 2) << onInput.out;
    EXPECT_NE(onInput.err.find("is the external data file of the input model"), std::string::npos) << onInput.err;
    EXPECT_EQ(readFile(root / "second" / "out.onnx.data"), secondData);
    EXPECT_EQ(filesIn(root / "second"), (std::vector<std::string>{"model.onnx", "out.onnx.data"}));

    // Nor is the output itself ever one of the input's data files.
    CommandResult onData =
        runCli({"fix", second.string(), "-o", (root / "second" / "out.onnx.data").string(), "--force"});
    EXPECT_EQ(onData.exitStatus, 2) << onData.out;
    EXPECT_NE(onData.err.find("is an external data file of the input model"), std::string::npos) << onData.err;
    EXPECT_EQ(readFile(root / "second" / "out.onnx.data"), secondData);
    EXPECT_EQ(filesIn(root / "second"), (std::vector<std::string>{"model.onnx", "out.onnx.data"}));
}

// Interrupted while the candidate and its data file exist (the fixed model being diagnosed), fix leaves nothing in the
// output's folder: the candidate's files and its folder are removed.
TEST(FixExternalData, InterruptLeavesNoCandidateOrDataFile)
{
    const fs::path root = tempDir("fix-external-interrupt");
    const fs::path model = externalDataCopy(samplePath("b-yolov8-split-concat-silu"), root);
    fs::create_directories(root / "out");
    const pid_t child = ::fork();
    if (child == 0)
    {
        ::signal(SIGINT, SIG_DFL);
        removeTemporaryFilesOnInterrupt();
        InputFiles files;
        files.files = {model.string()};
        FixOptions options;
        options.output = (root / "out" / "fixed.onnx").string();
        runFix(files, options, Limits{}, {},
               [&](std::string_view stage)
               {
                   if (stage.rfind("diagnosing the fixed model", 0) == 0)
                   {
                       bool dataThere = false;
                       for (const auto& entry : fs::recursive_directory_iterator(root / "out"))
                       {
                           dataThere = dataThere || entry.path().filename() == "fixed.onnx.data";
                       }
                       if (!dataThere)
                       {
                           ::_exit(3); // the candidate should have its data file by now
                       }
                       ::raise(SIGINT);
                   }
               });
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
    EXPECT_EQ(WTERMSIG(status), SIGINT);
    EXPECT_TRUE(filesIn(root / "out").empty()) << filesIn(root / "out").front();
}

// The real models shipped with their weights: fixed into another folder, each loads from there with its weights as
// they were, and passes ONNX's checker there when its input passes it.
TEST(RealDataFixExternalData, ModelsWithWeightsLoadFromTheOutputFolder)
{
    REQUIRE_SHARED();
    const fs::path root = tempDir("fix-external-real");
    std::size_t models = 0;
    for (const auto& entry : fs::directory_iterator(sharedModel("with-weights")))
    {
        if (entry.path().extension() != ".onnx")
        {
            continue;
        }
        ++models;
        const std::string name = entry.path().filename().string();
        const fs::path output = root / name / "fixed.onnx";
        fs::create_directories(output.parent_path());
        const FixReport report = fixFile(entry.path(), output);
        EXPECT_EQ(externalDataNotes(report), "") << name;
        EXPECT_EQ(filesIn(output.parent_path()), (std::vector<std::string>{"fixed.onnx", "fixed.onnx.data"})) << name;
        const std::vector<std::string> locations = externalLocations(parseFile(output));
        EXPECT_FALSE(locations.empty()) << name;
        EXPECT_TRUE(std::all_of(locations.begin(), locations.end(),
                                [](const std::string& location) { return location == "fixed.onnx.data"; }))
            << name;
        EXPECT_GT(expectSameWeights(entry.path(), output), 0u) << name;
        if (onnxFullCheck(entry.path()).empty())
        {
            EXPECT_EQ(onnxFullCheck(output), "") << name;
        }
    }
    EXPECT_EQ(models, 5u);
}
