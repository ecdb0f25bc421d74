#include "qdq/load_inputs.h"

#include "qdq/engine_merge.h"
#include "qdq/log_graph.h"
#include "src/input_plan.h"

#include <exception>
#include <thread>

namespace qdq
{

namespace input_plan
{

InputPlan planInputs(const InputFiles& files)
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
        plan.files.push_back(PlannedFile{path, expected});
    };
    role(files.onnx, InputKind::kOnnx);
    role(files.layers, InputKind::kLayerInfo);
    role(files.profile, InputKind::kProfile);
    role(files.log, InputKind::kBuildLog);
    for (const auto& path : files.files)
    {
        plan.files.push_back(PlannedFile{path, detectInputKind(path)});
    }
    if (plan.files.empty())
    {
        throw InputError(SourceLocation{}, "no input files");
    }

    // A second file of one kind is refused before anything large is read.
    bool seen[4] = {false, false, false, false};
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
    if (plan.files.size() < 2)
    {
        plan.separateOnnx.reset();
    }
    // Without a model, the log's parser lines stand in for it.
    if (!seen[0])
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
        inputs.onnx = readOnnx(file.path, OnnxReadOptions{}, limits);
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
    case InputKind::kTiming:
    case InputKind::kMetadata:
    case InputKind::kUnknown:
        break;
    }
}

void finishInputs(Inputs& inputs, const InputPlan& plan)
{
    inputs.sources.clear();
    for (const auto& file : plan.files)
    {
        Inputs::Source source{file.kind, file.path, std::nullopt};
        if (file.kind == InputKind::kBuildLog && inputs.buildLog)
        {
            source.trtVersion = inputs.buildLog->trtVersion;
        }
        inputs.sources.push_back(std::move(source));
    }
    // The layer-info JSON, the log's engine block and the profile of one build become one engine (or are refused
    // when they describe different engines).
    mergeEngineDescriptions(inputs);
    inputs.deriveMissingPlan();
}

} // namespace input_plan

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
