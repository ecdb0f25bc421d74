#include "qdq/load_inputs.h"

#include "qdq/engine_merge.h"
#include "qdq/log_graph.h"
#include "src/input_plan.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

namespace qdq
{

namespace input_plan
{

namespace
{

//! The files as given: each role's file checked against its content, then the other files and folders' artifacts.
InputPlan listPlannedFiles(const InputFiles& files)
{
    InputPlan plan;
    const auto role = [&](const std::string& path, InputKind expected)
    {
        if (path.empty())
        {
            return;
        }
        InputKind detected = detectInputKind(path);
        if (detected != expected)
        {
            SourceLocation where;
            where.path = path;
            throw InputError(where, "given as " + std::string(inputKindName(expected)) + " but its content is " +
                                        std::string(inputKindName(detected)));
        }
        plan.files.push_back(PlannedFile{path, expected, false, files.onnxReading});
    };
    role(files.onnx, InputKind::kOnnx);
    role(files.layers, InputKind::kLayerInfo);
    role(files.profile, InputKind::kProfile);
    role(files.log, InputKind::kBuildLog);
    for (const auto& path : files.files)
    {
        if (isFolder(path))
        {
            FolderArtifacts folder = listFolderArtifacts(path);
            for (const auto& file : folder.files)
            {
                plan.files.push_back(PlannedFile{file.path, file.kind, false, files.onnxReading});
            }
            plan.notes.push_back(folder.note(path));
            continue;
        }
        plan.files.push_back(PlannedFile{path, detectInputKind(path), false, files.onnxReading});
    }
    if (plan.files.empty())
    {
        throw InputError(SourceLocation{}, "no input files");
    }
    return plan;
}

//! A second file of one kind is refused before anything large is read; the model is the separate ONNX file.
//! Returns whether a model is among the files.
bool refuseSecondFilesOfAKind(InputPlan& plan)
{
    bool seen[5] = {false, false, false, false, false};
    for (std::size_t i = 0; i < plan.files.size(); ++i)
    {
        const PlannedFile& file = plan.files[i];
        int slot = -1;
        const char* what = "";
        const char* option = "";
        switch (file.kind)
        {
        case InputKind::kOnnx:
            slot = 0, what = "ONNX model", option = "--onnx";
            plan.separateOnnx = i; // the only one: a second is refused below
            break;
        case InputKind::kLayerInfo:
            slot = 1, what = "layer-info JSON", option = "--layers";
            break;
        case InputKind::kProfile:
            slot = 2, what = "profile JSON", option = "--profile";
            break;
        case InputKind::kBuildLog:
            slot = 3, what = "build log", option = "--log";
            break;
        case InputKind::kCalibrationCache:
            slot = 4, what = "calibration cache", option = "--calibration-cache";
            break;
        case InputKind::kTiming:
        case InputKind::kMetadata:
            // Not used by the analysis; accepted so users can pass a whole TREx/trtexec output folder.
            break;
        case InputKind::kUnknown:
        {
            SourceLocation where;
            where.path = file.path;
            throw InputError(where, "unknown input kind");
        }
        }
        if (slot < 0)
        {
            continue;
        }
        if (seen[slot])
        {
            SourceLocation where;
            where.path = file.path;
            throw InputError(where, std::string("a second ") + what + " was given; name each engine's files with " +
                                        option + " (or run diff for two engines)");
        }
        seen[slot] = true;
    }
    return seen[0];
}

} // namespace

InputPlan planInputs(const InputFiles& files)
{
    InputPlan plan = listPlannedFiles(files);
    const bool withModel = refuseSecondFilesOfAKind(plan);
    if (plan.files.size() < 2)
    {
        plan.separateOnnx.reset();
    }
    // Without a model, the log's parser lines stand in for it.
    if (!withModel)
    {
        for (auto& file : plan.files)
        {
            file.rebuildGraph = file.kind == InputKind::kBuildLog;
        }
    }
    return plan;
}

void readInput(Inputs& inputs, const PlannedFile& file, const Limits& limits, const ProgressCallback& progress)
{
    switch (file.kind)
    {
    case InputKind::kOnnx:
        inputs.onnx = readOnnx(file.path, file.onnxReading, limits);
        break;
    case InputKind::kLayerInfo:
        inputs.layerInfo = readLayerInfo(file.path, limits);
        break;
    case InputKind::kProfile:
        inputs.profile = readProfile(file.path, limits);
        break;
    case InputKind::kBuildLog:
        inputs.buildLog = readBuildLog(file.path, progress, limits);
        if (file.rebuildGraph && !inputs.buildLog->parsedNodes.empty())
        {
            if (logGraphComplete(*inputs.buildLog))
            {
                inputs.onnx = rebuildGraphFromLog(*inputs.buildLog, limits);
            }
            else
            {
                // An excerpt or a cut-off parse: its graph would make the model's rules judge a part as the whole.
                inputs.buildLog->warnings.push_back(
                    {SourceLocation{file.path, inputs.buildLog->parsedNodes.front().line, 0, false},
                     "the ONNX parser's lines are incomplete (an excerpt, or the log ends before the parse does): no "
                     "graph is rebuilt from them (qdq-doctor inspect shows it); give the ONNX model for the model's "
                     "checks"});
            }
        }
        break;
    case InputKind::kCalibrationCache:
        inputs.calibration = readCalibrationCache(file.path, limits);
        break;
    case InputKind::kTiming:
    case InputKind::kMetadata:
    case InputKind::kUnknown:
        break;
    }
}

//! TensorRT's own warnings about quantized types a log holds, as notes with their cause: the FP4 warning on a GPU
//! without FP4 (../shared/realdata/cookbook111-dynquant-fp8-fp4-h100/log-main.py.log:96, an H100) and the FP8 scale
//! conversions of Q/DQ compiled by Myelin (FORMATS-trt11.md L8).
void noteQuantizedTypeWarnings(Inputs& inputs)
{
    if (!inputs.buildLog)
    {
        return;
    }
    bool fp4 = false;
    bool scales = false;
    for (const LogMessage& warning : inputs.buildLog->warningsInLog)
    {
        const std::string where = inputs.buildLog->sourcePath + ":" + std::to_string(warning.line);
        if (!fp4 && warning.text.find("hardware does not accelerate FP4 compute") != std::string::npos)
        {
            fp4 = true;
            inputs.inputNotes.push_back(
                where + ": TensorRT warned that \"the hardware does not accelerate FP4 compute\": FP4 needs a "
                        "Blackwell GPU (compute capability 10.0+; ../shared/docs/tensorrt-10-11.md section 3), so the "
                        "FP4 Q/DQ of this network run without FP4 tensor cores and the engine is slower than its "
                        "quantization promises. Build for a Blackwell GPU, or quantize to FP8 (compute capability "
                        "8.9+) or INT8 for this one.");
        }
        else if (!scales && warning.text.find("scales to fp32") != std::string::npos &&
                 warning.text.find("Converting") != std::string::npos)
        {
            scales = true;
            inputs.inputNotes.push_back(
                where + ": TensorRT warned \"" + printable(warning.text, 120) +
                "\": the Q/DQ scales of a Myelin-compiled FP8 convolution are not FP32 in the graph (FP16 scales of "
                "an FP16 export, a guess from the wording; FORMATS-trt11.md L8) and TensorRT converts them at build "
                "time. The engine still runs; to keep the scales as exported, write them as FP32 initializers.");
        }
    }
}

void finishInputs(Inputs& inputs, const InputPlan& plan)
{
    inputs.inputNotes = plan.notes;
    noteQuantizedTypeWarnings(inputs);
    if (inputs.calibration)
    {
        const CalibrationCache& cache = *inputs.calibration;
        inputs.inputNotes.push_back(
            cache.sourcePath + ": a calibration cache (" + std::to_string(cache.scales.size()) + " scales" +
            (cache.version.empty() ? "" : ", TensorRT " + cache.version) +
            "): an implicit build's scales, which diagnose does not judge; `qdq-doctor fix MODEL.onnx "
            "--calibration-cache " +
            cache.sourcePath + " -o EXPLICIT.onnx` writes them as Q/DQ (docs/fix.md#calibration-cache)");
    }
    inputs.sources.clear();
    for (const auto& file : plan.files)
    {
        Inputs::Source source{file.kind, file.path, std::nullopt};
        if (file.kind == InputKind::kBuildLog && inputs.buildLog)
        {
            source.trtVersion = inputs.buildLog->trtVersion;
            if (!source.trtVersion && inputs.buildLog->engine.writer.trtMajor != 0)
            {
                // A log without a version line whose layer list has 11.x-only forms (FORMATS-trt11.md L11, T1).
                source.trtVersion = std::to_string(inputs.buildLog->engine.writer.trtMajor);
            }
        }
        if (file.kind == InputKind::kLayerInfo && inputs.layerInfo && inputs.layerInfo->writer.trtMajor != 0)
        {
            source.trtVersion = std::to_string(inputs.layerInfo->writer.trtMajor); // FORMATS-trt11.md J1, J7
        }
        inputs.sources.push_back(std::move(source));
    }
    // The layer-info JSON, the log's engine block and the profile of one build become one engine (or are refused
    // when they describe different engines).
    mergeEngineDescriptions(inputs);
    inputs.deriveMissingPlan();
    if (const EnginePlan* engine = inputs.engine(); engine != nullptr && engine->optimizationProfiles() > 1)
    {
        // Each optimization profile has its own copy of the layers (" [profile N]" names, or a Myelin graph of its
        // own: ../shared/realdata/FORMATS-trt11.md T7); counts over the whole list count each layer once per profile.
        std::map<int, std::size_t> perProfile; // a hostile name may number its profile 2^31: no dense table
        for (const EngineLayer& layer : engine->layers)
        {
            ++perProfile[layer.optimizationProfile];
        }
        std::string counts;
        for (const auto& [profile, layers] : perProfile)
        {
            counts += (counts.empty() ? "" : ", ") + std::string("profile ") + std::to_string(profile) + ": " +
                      std::to_string(layers) + " layers";
        }
        inputs.inputNotes.push_back(engine->sourcePath + ": the engine has " + std::to_string(perProfile.size()) +
                                    " optimization profiles (" + counts +
                                    "); each layer's profile is told by its name, and layer counts in this report "
                                    "count every profile's copy");
    }
}

} // namespace input_plan

namespace
{
//! How much of a text that looks like a log in a folder is read to see that it is one.
constexpr std::size_t kLogCheckBytes = 1 << 20;

std::string readStart(const std::string& path, std::size_t bytes)
{
    std::ifstream in(path, std::ios::binary);
    std::string text(bytes, '\0');
    in.read(text.data(), static_cast<std::streamsize>(bytes));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}
} // namespace

bool isFolder(const std::string& path)
{
    std::error_code error;
    return std::filesystem::is_directory(path, error);
}

FolderArtifacts listFolderArtifacts(const std::string& folder)
{
    namespace fs = std::filesystem;
    SourceLocation where;
    where.path = folder;
    std::vector<fs::path> entries;
    std::error_code error;
    for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error))
    {
        entries.push_back(it->path());
    }
    if (error)
    {
        throw InputError(where, "cannot list the folder: " + error.message());
    }
    // Name order, byte by byte: the same files are read in the same order on every machine.
    std::sort(entries.begin(), entries.end(),
              [](const fs::path& a, const fs::path& b) { return a.filename().string() < b.filename().string(); });
    FolderArtifacts artifacts;
    for (const auto& entry : entries)
    {
        std::string name = entry.filename().string();
        std::string path = entry.string();
        if (fs::is_directory(entry, error))
        {
            artifacts.skipped.push_back(name + "/ (a folder: give it on its own)");
            continue;
        }
        if (!fs::is_regular_file(entry, error))
        {
            // Sockets, pipes and broken links: opening a pipe would wait forever.
            artifacts.skipped.push_back(name + " (not a regular file)");
            continue;
        }
        try
        {
            if (isSerializedEngine(path))
            {
                artifacts.skipped.push_back(name +
                                            " (a serialized TensorRT engine: export what qdq-doctor reads "
                                            "with `" +
                                            engineExportCommand(path) + "`)");
                continue;
            }
            InputKind kind = detectInputKind(path);
            if (kind == InputKind::kUnknown)
            {
                artifacts.skipped.push_back(name + " (unknown kind)");
                continue;
            }
            if (kind == InputKind::kBuildLog)
            {
                // Any text that says "TensorRT" passes the kind check (a README, notes): in a folder, a log must
                // also hold lines the log reader recognizes near its start, or it is skipped rather than refused.
                readBuildLogFromBuffer(readStart(path, kLogCheckBytes), path);
            }
            artifacts.files.push_back(FolderArtifacts::File{path, kind});
        }
        catch (const InputError& refused)
        {
            artifacts.skipped.push_back(name + " (" + refused.message() + ")");
        }
    }
    if (artifacts.files.empty())
    {
        std::string message = "the folder holds no ONNX model or TensorRT artifact";
        if (!artifacts.skipped.empty())
        {
            message += " (skipped " + std::to_string(artifacts.skipped.size()) + ": " + artifacts.skipped.front() +
                       (artifacts.skipped.size() > 1 ? ", ..." : "") + ")";
        }
        throw InputError(where, message);
    }
    return artifacts;
}

std::string FolderArtifacts::note(const std::string& folder) const
{
    std::string text = "read folder " + folder + ":";
    const char* separator = " ";
    for (const auto& file : files)
    {
        text += separator + std::filesystem::path(file.path).filename().string() + " (" +
                std::string(inputKindName(file.kind)) + ")";
        separator = ", ";
    }
    if (!skipped.empty())
    {
        text += "; skipped";
        separator = " ";
        for (const auto& entry : skipped)
        {
            text += separator + entry;
            separator = ", ";
        }
    }
    return text;
}

Inputs loadInputs(const InputFiles& files, const Limits& limits, const ProgressCallback& progress)
{
    using namespace input_plan;
    // Kinds first (cheap, in order, so errors name the first bad file), then the large ONNX model is read on a
    // second thread while the other files are read here.
    const InputPlan plan = planInputs(files);
    Inputs inputs;
    if (!plan.separateOnnx)
    {
        for (const auto& file : plan.files)
        {
            readInput(inputs, file, limits, progress);
        }
    }
    else
    {
        std::exception_ptr onnxFailure;
        std::thread reader(
            [&]
            {
                try
                {
                    readInput(inputs, plan.files[*plan.separateOnnx], limits, progress);
                }
                catch (...)
                {
                    onnxFailure = std::current_exception();
                }
            });
        try
        {
            for (std::size_t i = 0; i < plan.files.size(); ++i)
            {
                if (i != *plan.separateOnnx)
                {
                    readInput(inputs, plan.files[i], limits, progress);
                }
            }
        }
        catch (...)
        {
            reader.join();
            throw;
        }
        reader.join();
        if (onnxFailure)
        {
            std::rethrow_exception(onnxFailure);
        }
    }
    finishInputs(inputs, plan);
    return inputs;
}

} // namespace qdq
