// What a new user runs into first: a folder given as input, a serialized engine given instead of its exports, a layer
// list in another writer's shape, a diff that names each finding once.
#include "qdq/load_inputs.h"
#include "qdq/readers.h"
#include "test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

using namespace qdq;
using namespace qdq::test;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace
{

fs::path sampleDir(const std::string& name)
{
    return fs::path(QDQ_SOURCE_DIR) / "samples" / name;
}

std::size_t occurrences(const std::string& text, const std::string& needle)
{
    std::size_t count = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size()))
    {
        ++count;
    }
    return count;
}

//! A copy of the sample's files in a fresh folder, plus extra files.
fs::path sampleCopy(const std::string& sample, const std::string& name)
{
    fs::path dir = tempDir(name);
    for (const auto& entry : fs::directory_iterator(sampleDir(sample)))
    {
        if (entry.is_regular_file())
        {
            fs::copy_file(entry.path(), dir / entry.path().filename());
        }
    }
    return dir;
}

//! The first bytes of a TensorRT 8+ engine: the "ptrt" tag, then binary header fields.
std::string engineBytes()
{
    std::string bytes = "ptrt";
    bytes += std::string("\x00\x00\x00\x00\xe8\x00\x00\x00", 8);
    bytes += std::string(4096, '\0');
    return bytes;
}

} // namespace

// ----- a folder as input ---------------------------------------------------------------------------------------

TEST(Friction, DiagnoseFolderReadsEveryArtifactAndNamesTheRest)
{
    fs::path dir = sampleCopy("c-resnet-conv-maxpool", "friction-folder");
    writeFile(dir / "README.md", "# my notes\nnothing TensorRT here\n");
    fs::create_directory(dir / "old");
    writeFile(dir / "old" / "layers.json", readFile(dir / "layers.json"));

    const auto files = {(dir / "model.onnx").string(), (dir / "layers.json").string(), (dir / "profile.json").string()};
    auto byFiles = runCli({"diagnose", "--format", "json", files.begin()[0], files.begin()[1], files.begin()[2]});
    auto byFolder = runCli({"diagnose", "--format", "json", dir.string()});
    ASSERT_EQ(byFolder.exitStatus, 0) << byFolder.err;
    Json fromFiles = Json::parse(byFiles.out);
    Json fromFolder = Json::parse(byFolder.out);
    EXPECT_EQ(fromFolder["findings"], fromFiles["findings"]);
    EXPECT_EQ(fromFolder["accounting"], fromFiles["accounting"]);
    // Name order, whatever the directory's own order.
    ASSERT_EQ(fromFolder["inputs"].size(), 3u);
    EXPECT_EQ(fromFolder["inputs"][0]["path"], (dir / "layers.json").string());
    EXPECT_EQ(fromFolder["inputs"][1]["path"], (dir / "model.onnx").string());
    EXPECT_EQ(fromFolder["inputs"][2]["path"], (dir / "profile.json").string());
    std::string notes = fromFolder["notes"].dump();
    EXPECT_NE(notes.find("read folder " + dir.string() +
                         ": layers.json (layer-info), model.onnx (onnx), profile.json (profile); skipped README.md ("),
              std::string::npos)
        << notes;
    EXPECT_NE(notes.find("old/ (a folder: give it on its own)"), std::string::npos) << notes;
    EXPECT_EQ(runCli({"diagnose", "--format", "json", dir.string()}).out, byFolder.out);

    // The same files named one by one: no folder note.
    EXPECT_EQ(Json::parse(byFiles.out)["notes"].dump().find("read folder"), std::string::npos);
}

// Every real artifact folder lists as its files: nothing TensorRT wrote is skipped (logs whose start the log reader
// does not recognize would be).
TEST(RealDataFriction, EveryRealFolderListsItsArtifacts)
{
    REQUIRE_SHARED();
    std::size_t folders = 0;
    for (const auto& entry : fs::directory_iterator(realdata("")))
    {
        if (!entry.is_directory())
        {
            continue;
        }
        ++folders;
        FolderArtifacts artifacts = listFolderArtifacts(entry.path().string());
        std::size_t files = 0;
        for (const auto& file : fs::directory_iterator(entry.path()))
        {
            files += file.is_regular_file() ? 1 : 0;
        }
        EXPECT_EQ(artifacts.files.size(), files) << entry.path() << ": " << artifacts.note(entry.path().string());
        EXPECT_TRUE(artifacts.skipped.empty()) << artifacts.note(entry.path().string());
    }
    EXPECT_GE(folders, 30u);
}

TEST(Friction, FolderWithoutArtifactsOrWithTwoLayerListsIsRefused)
{
    fs::path empty = tempDir("friction-empty");
    writeFile(empty / "notes.txt", "hello\n");
    auto result = runCli({"diagnose", empty.string()});
    EXPECT_EQ(result.exitStatus, 2);
    EXPECT_NE(result.err.find(empty.string() + ": error: the folder holds no ONNX model or TensorRT artifact"),
              std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("notes.txt"), std::string::npos) << result.err;

    // A folder holding both engines of sample e: a second layer list is refused as for files, naming it.
    fs::path both = tempDir("friction-two");
    fs::copy_file(sampleDir("e-explicit-slower-than-implicit") / "implicit" / "layers.json", both / "a.json");
    fs::copy_file(sampleDir("e-explicit-slower-than-implicit") / "explicit" / "layers.json", both / "b.json");
    result = runCli({"diagnose", both.string()});
    EXPECT_EQ(result.exitStatus, 2);
    EXPECT_NE(result.err.find((both / "b.json").string() + ": error: a second layer-info JSON"), std::string::npos)
        << result.err;
}

TEST(Friction, DiffAndInspectTakeFolders)
{
    fs::path sample = sampleDir("e-explicit-slower-than-implicit");
    auto byFiles = runCli({"diff", "--format", "json", "--baseline", (sample / "implicit" / "layers.json").string(),
                           (sample / "implicit" / "profile.json").string(), "--candidate",
                           (sample / "explicit" / "layers.json").string(),
                           (sample / "explicit" / "profile.json").string(), (sample / "model.onnx").string()});
    auto byFolders = runCli({"diff", "--format", "json", "--baseline", (sample / "implicit").string(), "--candidate",
                             (sample / "explicit").string(), (sample / "model.onnx").string()});
    ASSERT_EQ(byFolders.exitStatus, 0) << byFolders.err;
    Json fromFiles = Json::parse(byFiles.out);
    Json fromFolders = Json::parse(byFolders.out);
    EXPECT_EQ(fromFolders["regions"], fromFiles["regions"]);
    std::string notes = fromFolders["notes"].dump();
    EXPECT_NE(notes.find("baseline: read folder " + (sample / "implicit").string()), std::string::npos) << notes;
    EXPECT_NE(notes.find("candidate: read folder " + (sample / "explicit").string()), std::string::npos) << notes;

    auto inspect = runCli({"inspect", "--format", "json", sample.string()});
    ASSERT_EQ(inspect.exitStatus, 0) << inspect.err;
    Json summaries = Json::parse(inspect.out);
    ASSERT_EQ(summaries.size(), 1u);
    EXPECT_EQ(summaries[0]["kind"], "onnx");
    EXPECT_NE(inspect.err.find("skipped explicit/ (a folder: give it on its own), implicit/ (a folder"),
              std::string::npos)
        << inspect.err;
}

// ----- a serialized engine --------------------------------------------------------------------------------------

TEST(Friction, SerializedEngineIsRecognizedWithTheTrtexecExportCommand)
{
    fs::path dir = tempDir("friction-engine");
    // By the "ptrt" tag whatever the name, by the name when the tag is not there (older or wrapped engines).
    const fs::path tagged = writeFile(dir / "resnet50 int8.bin", engineBytes());
    const fs::path named = writeFile(dir / "model.plan", std::string("\x01\x02\x00\x00", 4) + std::string(64, '\0'));
    for (const fs::path& path : {tagged, named})
    {
        auto result = runCli({"diagnose", path.string()});
        EXPECT_EQ(result.exitStatus, 2) << path;
        EXPECT_NE(result.err.find(path.string() + ": error: a serialized TensorRT engine"), std::string::npos)
            << result.err;
        EXPECT_NE(result.err.find("--profilingVerbosity=detailed --dumpLayerInfo --exportLayerInfo=layers.json "
                                  "--dumpProfile --separateProfileRun --exportProfile=profile.json"),
                  std::string::npos)
            << result.err;
        EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
        EXPECT_EQ(runCli({"inspect", path.string()}).exitStatus, 2);
    }
    // The path is quoted for the shell where it needs to be.
    EXPECT_EQ(engineExportCommand(tagged.string()).rfind("trtexec --loadEngine='" + tagged.string() + "' ", 0), 0u);
    EXPECT_EQ(engineExportCommand("plans/model.engine").rfind("trtexec --loadEngine=plans/model.engine ", 0), 0u);
    EXPECT_TRUE(isSerializedEngine(tagged.string()));
    EXPECT_TRUE(isSerializedEngine(named.string()));

    // Ultralytics' .engine: a 4-byte length and JSON metadata before the engine.
    std::string metadata = R"({"description": "Ultralytics YOLOv8n", "batch": 1})";
    std::string wrapped(4, '\0');
    wrapped[0] = static_cast<char>(metadata.size());
    wrapped += metadata + engineBytes();
    const fs::path ultralytics = writeFile(dir / "yolov8n.bin", wrapped);
    EXPECT_TRUE(isSerializedEngine(ultralytics.string()));
    EXPECT_NE(runCli({"diagnose", ultralytics.string()}).err.find("a serialized TensorRT engine"), std::string::npos);
}

TEST(Friction, NearEnginesAreNotTakenForEngines)
{
    fs::path dir = tempDir("friction-not-engine");
    // The tag one byte late, in a file named like a blob: still "binary data that is not an ONNX model".
    const fs::path late = writeFile(dir / "blob.bin", "x" + engineBytes());
    auto result = runCli({"diagnose", late.string()});
    EXPECT_EQ(result.exitStatus, 2);
    EXPECT_NE(result.err.find("binary data that is not an ONNX model"), std::string::npos) << result.err;
    EXPECT_FALSE(isSerializedEngine(late.string()));
    // An ONNX model named .engine is read as the model it is; a text file named .plan is read by its content.
    const fs::path onnxNamed = dir / "model.engine";
    fs::copy_file(sampleDir("c-resnet-conv-maxpool") / "model.onnx", onnxNamed);
    EXPECT_FALSE(isSerializedEngine(onnxNamed.string()));
    EXPECT_EQ(runCli({"diagnose", onnxNamed.string()}).exitStatus, 0);
    const fs::path layersNamed = dir / "layers.plan";
    fs::copy_file(sampleDir("c-resnet-conv-maxpool") / "layers.json", layersNamed);
    EXPECT_EQ(detectInputKind(layersNamed.string()), InputKind::kLayerInfo);
}

TEST(Friction, EngineInAFolderIsSkippedWithTheCommand)
{
    fs::path dir = sampleCopy("c-resnet-conv-maxpool", "friction-folder-engine");
    writeFile(dir / "model.engine", engineBytes());
    auto result = runCli({"diagnose", dir.string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    EXPECT_NE(flowed(result.out)
                  .find("skipped model.engine (a serialized TensorRT engine: export what qdq-doctor reads with "
                        "`trtexec --loadEngine=" +
                        (dir / "model.engine").string()),
              std::string::npos)
        << result.out;
}

// ----- layer lists in other shapes, end to end -----------------------------------------------------------------

TEST(Friction, BareArrayLayerListIsDiagnosedLikeTrtexecs)
{
    fs::path sample = sampleDir("c-resnet-conv-maxpool");
    Json layers = Json::parse(readFile(sample / "layers.json"));
    fs::path dir = tempDir("friction-bare");
    fs::path bare = writeFile(dir / "layers.json", layers["Layers"].dump(2));
    auto original = runCli({"diagnose", "--format", "json", (sample / "model.onnx").string(),
                            (sample / "layers.json").string(), (sample / "profile.json").string()});
    auto fromBare = runCli({"diagnose", "--format", "json", (sample / "model.onnx").string(), bare.string(),
                            (sample / "profile.json").string()});
    ASSERT_EQ(fromBare.exitStatus, 0) << fromBare.err;
    EXPECT_EQ(Json::parse(fromBare.out)["accounting"], Json::parse(original.out)["accounting"]);
    EXPECT_EQ(Json::parse(fromBare.out)["findings"].size(), Json::parse(original.out)["findings"].size());
}

// ----- diff names each finding once ----------------------------------------------------------------------------

TEST(Friction, DiffTextPrintsEachFindingOnce)
{
    fs::path sample = sampleDir("e-explicit-slower-than-implicit");
    auto result = runCli({"diff", "--baseline", (sample / "implicit").string(), "--candidate",
                          (sample / "explicit").string(), (sample / "model.onnx").string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    const std::string& text = result.out;
    // standalone-qdq touches four regions: its message and fix appear once, each region refers to it.
    EXPECT_EQ(occurrences(text, "Q/DQ node(s) run as their own layer"), 1u) << text;
    // Findings are numbered in the report's order (by root cause); read standalone-qdq's label off its line.
    const std::string line = "] [warning] standalone-qdq  cost 0.047 ms  (regions 1, 2, 3, 4)";
    const std::size_t at = text.find(line);
    ASSERT_NE(at, std::string::npos) << text;
    const std::size_t open = text.rfind('[', at);
    ASSERT_NE(open, std::string::npos);
    const std::string label = text.substr(open, at - open + 1); // "[F5]"
    EXPECT_EQ(occurrences(text, "finding:   " + label + " standalone-qdq"), 4u) << text;
    // Every message is printed once.
    Json json = Json::parse(runCli({"diff", "--format", "json", "--baseline", (sample / "implicit").string(),
                                    "--candidate", (sample / "explicit").string(), (sample / "model.onnx").string()})
                                .out);
    std::set<std::string> messages;
    for (const auto& region : json["regions"])
    {
        for (const auto& finding : region["findings"])
        {
            messages.insert(finding["message"].get<std::string>());
        }
    }
    ASSERT_GE(messages.size(), 5u);
    for (const auto& message : messages)
    {
        EXPECT_EQ(occurrences(text, message.substr(0, 60)), 1u) << message;
    }
}

// A diff whose findings each touch one region reads as before: one reference per region, one entry below.
TEST(Friction, DiffWithFindingsInOneRegionEach)
{
    fs::path sample = sampleDir("c-resnet-conv-maxpool");
    auto result =
        runCli({"diff", "--baseline", (sample / "model.onnx").string(), "--candidate", (sample / "model.onnx").string(),
                (sample / "layers.json").string(), (sample / "profile.json").string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    for (std::size_t n = 1; result.out.find("[F" + std::to_string(n) + "] [") != std::string::npos; ++n)
    {
        EXPECT_EQ(occurrences(result.out, "[F" + std::to_string(n) + "] ["), 1u);
        EXPECT_GE(occurrences(result.out, "finding:   [F" + std::to_string(n) + "] "), 1u);
    }
}

// ----- external data outside the model's folder ----------------------------------------------------------------

TEST(Friction, RealModelWithEscapingExternalDataIsDiagnosed)
{
    REQUIRE_SHARED();
    // A real model whose weights file is reached through a link that leaves the model's folder: the bytes are never
    // read, the tensors stored there are named in a warning, and the graph with its inline scales is diagnosed as the
    // graph-only copy of the same model (whose weights file is absent) is.
    const std::string name = "unet-convtranspose-qat.onnx";
    fs::path root = tempDir("friction-escaping-weights");
    fs::create_directories(root / "model");
    fs::copy_file(sharedModel("with-weights/" + name), root / "model" / name);
    fs::copy_file(sharedModel("with-weights/" + name + ".data"), root / (name + ".data"));
    fs::create_symlink(root / (name + ".data"), root / "model" / (name + ".data"));

    auto escaping = runCli({"diagnose", "--format", "json", (root / "model" / name).string()});
    ASSERT_EQ(escaping.exitStatus, 0) << escaping.err;
    auto graphOnly = runCli({"diagnose", "--format", "json", sharedModel(name).string()});
    ASSERT_EQ(graphOnly.exitStatus, 0) << graphOnly.err;
    Json report = Json::parse(escaping.out);
    std::vector<std::string> rules;
    std::vector<std::string> graphOnlyRules;
    for (const auto& finding : report["findings"])
    {
        rules.push_back(finding["rule"]);
    }
    Json graphOnlyReport = Json::parse(graphOnly.out);
    for (const auto& finding : graphOnlyReport["findings"])
    {
        graphOnlyRules.push_back(finding["rule"]);
    }
    EXPECT_FALSE(rules.empty());
    EXPECT_EQ(rules, graphOnlyRules);
    std::string notes = report["notes"].dump();
    EXPECT_NE(notes.find("external data location '" + name +
                         ".data' resolves outside the model's folder (through a symbolic link): only files inside "
                         "the model's folder are read, so the data of "),
              std::string::npos)
        << notes;
}
