#include "qdq/load_inputs.h"

namespace qdq
{

namespace
{

void addFile(Inputs& inputs, const std::string& path, InputKind kind, const Limits& limits,
    const ProgressCallback& progress)
{
    SourceLocation where;
    where.path = path;
    auto duplicate = [&](const char* what, const char* option) {
        throw InputError(where, std::string("a second ") + what + " was given; name each engine's files with " + option
                + " (or run diff for two engines)");
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
    case InputKind::kUnknown: throw InputError(where, "unknown input kind");
    }
    inputs.sources.push_back(source);
}

} // namespace

Inputs loadInputs(const InputFiles& files, const Limits& limits, const ProgressCallback& progress)
{
    Inputs inputs;
    auto role = [&](const std::string& path, InputKind expected) {
        if (path.empty())
        {
            return;
        }
        InputKind detected = detectInputKind(path);
        if (detected != expected)
        {
            SourceLocation where;
            where.path = path;
            throw InputError(where, "given as " + std::string(inputKindName(expected)) + " but its content is "
                    + std::string(inputKindName(detected)));
        }
        addFile(inputs, path, expected, limits, progress);
    };
    role(files.onnx, InputKind::kOnnx);
    role(files.layers, InputKind::kLayerInfo);
    role(files.profile, InputKind::kProfile);
    role(files.log, InputKind::kBuildLog);
    for (const auto& path : files.files)
    {
        addFile(inputs, path, detectInputKind(path), limits, progress);
    }
    if (inputs.sources.empty())
    {
        throw InputError(SourceLocation{}, "no input files");
    }
    inputs.deriveMissingPlan();
    return inputs;
}

} // namespace qdq
