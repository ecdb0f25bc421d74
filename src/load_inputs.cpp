#include "qdq/load_inputs.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <thread>

namespace qdq
{

namespace
{

void addFile(Inputs& inputs, const std::string& path, InputKind kind, const Limits& limits,
             const ProgressCallback& progress)
{
    SourceLocation where;
    where.path = path;
    auto duplicate = [&](const char* what, const char* option)
    {
        throw InputError(where, std::string("a second ") + what + " was given; name each engine's files with " +
                                    option + " (or run diff for two engines)");
    };
    Inputs::Source source{kind, path, std::nullopt};
    switch (kind)
    {
    case InputKind::kOnnx:
        if (inputs.onnx)
        {
            duplicate("ONNX model", "--onnx");
        }
        inputs.onnx = readOnnx(path, OnnxReadOptions{}, limits);
        break;
    case InputKind::kLayerInfo:
        if (inputs.layerInfo)
        {
            duplicate("layer-info JSON", "--layers");
        }
        inputs.layerInfo = readLayerInfo(path, limits);
        break;
    case InputKind::kProfile:
        if (inputs.profile)
        {
            duplicate("profile JSON", "--profile");
        }
        inputs.profile = readProfile(path, limits);
        break;
    case InputKind::kBuildLog:
        if (inputs.buildLog)
        {
            duplicate("build log", "--log");
        }
        inputs.buildLog = readBuildLog(path, progress, limits);
        source.trtVersion = inputs.buildLog->trtVersion;
        break;
    case InputKind::kTiming:
    case InputKind::kMetadata:
        // Not used by the analysis; accepted so users can pass a whole TREx/trtexec output folder.
        break;
    case InputKind::kUnknown:
        throw InputError(where, "unknown input kind");
    }
    inputs.sources.push_back(source);
}

} // namespace

Inputs loadInputs(const InputFiles& files, const Limits& limits, const ProgressCallback& progress)
{
    Inputs inputs;
    auto role = [&](const std::string& path, InputKind expected)
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
        addFile(inputs, path, expected, limits, progress);
    };
    role(files.onnx, InputKind::kOnnx);
    role(files.layers, InputKind::kLayerInfo);
    role(files.profile, InputKind::kProfile);
    role(files.log, InputKind::kBuildLog);
    // Kinds first (cheap, in order, so errors name the first bad file), then the large ONNX model is read on a
    // second thread while the other files are read here.
    std::vector<std::pair<std::string, InputKind>> detected;
    for (const auto& path : files.files)
    {
        detected.emplace_back(path, detectInputKind(path));
    }
    std::size_t onnxCount = 0;
    for (const auto& [path, kind] : detected)
    {
        onnxCount += kind == InputKind::kOnnx ? 1 : 0;
    }
    if (onnxCount == 1 && !inputs.onnx && detected.size() > 1)
    {
        auto onnxEntry = std::find_if(detected.begin(), detected.end(),
                                      [](const auto& entry) { return entry.second == InputKind::kOnnx; });
        std::string onnxPath = onnxEntry->first;
        std::optional<OnnxGraph> graph;
        std::exception_ptr failure;
        std::thread reader(
            [&]
            {
                try
                {
                    graph = readOnnx(onnxPath, OnnxReadOptions{}, limits);
                }
                catch (...)
                {
                    failure = std::current_exception();
                }
            });
        try
        {
            for (const auto& [path, kind] : detected)
            {
                if (kind != InputKind::kOnnx)
                {
                    addFile(inputs, path, kind, limits, progress);
                }
            }
        }
        catch (...)
        {
            reader.join();
            throw;
        }
        reader.join();
        if (failure)
        {
            std::rethrow_exception(failure);
        }
        inputs.onnx = std::move(graph);
        inputs.sources.push_back(Inputs::Source{InputKind::kOnnx, onnxPath, std::nullopt});
        // Keep sources in the order the files were given.
        std::stable_sort(inputs.sources.begin(), inputs.sources.end(),
                         [&](const auto& a, const auto& b)
                         {
                             auto position = [&](const std::string& p)
                             {
                                 return std::find_if(detected.begin(), detected.end(),
                                                     [&](const auto& e) { return e.first == p; }) -
                                        detected.begin();
                             };
                             return position(a.path) < position(b.path);
                         });
    }
    else
    {
        for (const auto& [path, kind] : detected)
        {
            addFile(inputs, path, kind, limits, progress);
        }
    }
    if (inputs.sources.empty())
    {
        throw InputError(SourceLocation{}, "no input files");
    }
    inputs.deriveMissingPlan();
    return inputs;
}

} // namespace qdq
