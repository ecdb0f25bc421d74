// qdq-doctor command line. CLI11 stays in this file; the commands live in src/*.cpp.
#include "qdq/diff.h"
#include "qdq/embedded_sample.h"
#include "qdq/fix.h"
#include "qdq/graph.h"
#include "qdq/heap_prefault.h"
#include "qdq/html_report.h"
#include "qdq/inspect.h"
#include "qdq/interrupt_cleanup.h"
#include "qdq/load_inputs.h"
#include "qdq/output_guard.h"
#include "qdq/predict.h"
#include "qdq/readers.h"
#include "qdq/sarif.h"
#include "qdq/text_report.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <list>
#include <optional>
#include <sys/ioctl.h>
#include <unistd.h>
#include <vector>

namespace
{

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;

struct GlobalOptions
{
    std::uint64_t maxInputMb = 8192;
    std::uint64_t maxLineMb = 256;
    std::uint32_t maxJsonDepth = 256;
    std::uint64_t maxGraphNodes = 5'000'000;
    bool progress = false;

    qdq::Limits limits() const
    {
        qdq::Limits limits;
        // MiB to bytes, saturating: a huge value means "no limit", never a small one after overflow.
        auto bytes = [](std::uint64_t mb) { return mb > (UINT64_MAX >> 20) ? UINT64_MAX : mb << 20; };
        limits.maxInputBytes = bytes(maxInputMb);
        limits.maxLineBytes = bytes(maxLineMb);
        limits.maxJsonDepth = maxJsonDepth;
        limits.maxGraphNodes = maxGraphNodes;
        return limits;
    }
};

void addLimitOptions(CLI::App& app, GlobalOptions& options)
{
    app.add_option("--max-input-mb", options.maxInputMb, "Largest input file in MiB")->capture_default_str();
    app.add_option("--max-line-mb", options.maxLineMb, "Longest text line in MiB")->capture_default_str();
    app.add_option("--max-json-depth", options.maxJsonDepth, "Deepest JSON nesting")->capture_default_str();
    app.add_option("--max-graph-nodes", options.maxGraphNodes, "Most ONNX nodes or engine layers")
        ->capture_default_str();
    app.add_flag("--progress", options.progress, "Report progress on stderr for large inputs (default: on a TTY)");
}

//! An option's value may not be empty: `--trt-version ""` is a mistake, not the option left out.
const CLI::Validator& nonEmpty()
{
    static const CLI::Validator validator(
        [](std::string& value) { return value.empty() ? std::string("an empty value is not allowed") : std::string(); },
        "NONEMPTY");
    return validator;
}

//! --trt-version, --strongly-typed, --weakly-typed and --gpu, the same on diagnose, predict, fix and diff.
void addBuildModeOptions(CLI::App& app, qdq::BuildModeRequest& request)
{
    app.add_option("--trt-version", request.trtVersion,
                   "TensorRT version of the build, e.g. 10.16 or 11 (default: from the build log, else 10.x)")
        ->check(nonEmpty());
    auto* strong = app.add_flag_callback(
        "--strongly-typed", [&request] { request.typing = qdq::Typing::kStrong; },
        "The network is built strongly typed (trtexec --stronglyTyped; always in TensorRT 11)");
    auto* weak = app.add_flag_callback(
        "--weakly-typed", [&request] { request.typing = qdq::Typing::kWeak; },
        "The network is built weakly typed with precision flags (TensorRT 8.x-10.x)");
    strong->excludes(weak);
    app.add_option("--gpu", request.gpu,
                   "GPU of the build: compute capability (sm89, sm_90, 8.9) or a name (A100, L4, H100, B200); "
                   "default: from the build log's device lines or the kernel names")
        ->check(nonEmpty());
}

qdq::ProgressCallback progressReporter(const GlobalOptions& options, const std::string& path)
{
    if (!options.progress && !::isatty(STDERR_FILENO))
    {
        return {};
    }
    return [path](std::uint64_t done, std::uint64_t total)
    {
        if (total > 0)
        {
            std::fprintf(stderr, "\rqdq-doctor: reading %s: %3.0f%%", qdq::printable(path, 200).c_str(),
                         100.0 * static_cast<double>(done) / static_cast<double>(total));
            if (done >= total)
            {
                std::fputc('\n', stderr);
            }
        }
        else
        {
            std::fprintf(stderr, "\rqdq-doctor: reading %s: %llu MiB", qdq::printable(path, 200).c_str(),
                         static_cast<unsigned long long>(done >> 20));
        }
        std::fflush(stderr);
    };
}

//! fix's stages after the read: on a terminal one status line that the next stage overwrites and the end clears;
//! elsewhere (--progress into a file) a line each.
qdq::FixStageCallback fixStageReporter(const GlobalOptions& options)
{
    const bool terminal = ::isatty(STDERR_FILENO) != 0;
    if (!options.progress && !terminal)
    {
        return {};
    }
    return [terminal](std::string_view stage)
    {
        if (terminal)
        {
            // \r and erase-line: the next stage, or the report, starts on a clean line.
            std::fprintf(stderr, "\r\033[K%s%.*s%s",
                         stage.empty() ? "" : "qdq-doctor: fix: ", static_cast<int>(stage.size()), stage.data(),
                         stage.empty() ? "" : " ...");
        }
        else if (!stage.empty())
        {
            std::fprintf(stderr, "qdq-doctor: fix: %.*s\n", static_cast<int>(stage.size()), stage.data());
        }
        std::fflush(stderr);
    };
}

void reportError(const std::exception& error)
{
    std::fprintf(stderr, "qdq-doctor: %s\n", qdq::printable(error.what(), 2000).c_str());
}

int runInspect(const std::vector<std::string>& files, const std::string& format, const GlobalOptions& options)
{
    std::vector<qdq::FileSummary> summaries;
    int status = kExitOk;
    // A folder stands for the artifacts in it; what it holds besides is named on stderr.
    std::vector<std::string> paths;
    for (const auto& path : files)
    {
        if (!qdq::isFolder(path))
        {
            paths.push_back(path);
            continue;
        }
        try
        {
            qdq::FolderArtifacts folder = qdq::listFolderArtifacts(path);
            for (const auto& file : folder.files)
            {
                paths.push_back(file.path);
            }
            std::fprintf(stderr, "qdq-doctor: note: %s\n", qdq::printable(folder.note(path), 4000).c_str());
        }
        catch (const qdq::InputError& error)
        {
            reportError(error);
            status = kExitBadInput;
        }
    }
    for (const auto& path : paths)
    {
        try
        {
            qdq::InspectOptions inspectOptions;
            inspectOptions.limits = options.limits();
            inspectOptions.progress = progressReporter(options, path);
            summaries.push_back(qdq::inspectFile(path, inspectOptions));
        }
        catch (const qdq::InputError& error)
        {
            reportError(error);
            status = kExitBadInput;
        }
    }
    std::string output = format == "json" ? qdq::renderInspectJson(summaries) : qdq::renderInspectText(summaries);
    std::fwrite(output.data(), 1, output.size(), stdout);
    return status;
}

struct PredictOptions
{
    std::string file;
    std::string format = "text";
    std::string precision;
    qdq::BuildModeRequest buildMode;
};

//! `predict MODEL.onnx|BUILD.log`: the engine the simulator expects, from the model or the graph a build log holds.
int runPredict(const PredictOptions& predictOptions, const GlobalOptions& options)
{
    // predict leaves the second core partly idle (it interns names while the model is read and writes the Q/DQ part
    // of the JSON while the layers are built); there it maps the heap's fresh pages (include/qdq/heap_prefault.h).
    // diagnose and fix keep both cores busy already: there it measured slower (fix 9.7-10.3 -> 10.6-11.0 s).
    qdq::startHeapPrefault();
    qdq::InputFiles files;
    files.files = {predictOptions.file};
    // Held, not destroyed: the command ends with _Exit, and freeing a large model node by node costs more than
    // predicting its engine.
    qdq::Inputs& inputs =
        *new qdq::Inputs(qdq::loadInputs(files, options.limits(), progressReporter(options, predictOptions.file)));
    if (!inputs.onnx)
    {
        throw qdq::InputError(qdq::SourceLocation{predictOptions.file},
                              "predict needs an ONNX model, or a verbose build log with the ONNX parser's lines "
                              "(trtexec --verbose)");
    }
    qdq::SimulationOptions simulation = qdq::resolveBuildMode(inputs, predictOptions.buildMode);
    if (!predictOptions.precision.empty())
    {
        if (simulation.stronglyTyped())
        {
            throw qdq::InputError(qdq::SourceLocation{"--precision"},
                                  "a strongly typed build has no precision flags (" + simulation.typingSource +
                                      "): the model's types decide each layer's precision");
        }
        qdq::applyPrecisionFlag(predictOptions.precision, simulation);
    }
    if (predictOptions.format == "json")
    {
        new qdq::Prediction(qdq::predictEngineWritingJson(*inputs.onnx, simulation, predictOptions.file,
                                                          [](std::string_view text)
                                                          { std::fwrite(text.data(), 1, text.size(), stdout); }));
        return kExitOk;
    }
    const qdq::Prediction& prediction = *new qdq::Prediction(qdq::predictEngine(*inputs.onnx, simulation));
    std::string output = qdq::renderPredictionText(prediction, *inputs.onnx, predictOptions.file);
    std::fwrite(output.data(), 1, output.size(), stdout);
    return kExitOk;
}

struct FixCommandOptions
{
    qdq::InputFiles files;
    qdq::FixOptions fix;
    std::string rules; //!< comma-separated slugs
    std::string format = "text";
    std::string autocast; //!< --autocast fp16|bf16
};

//! `fix MODEL.onnx [engine files] -o FIXED.onnx`: the findings' graph edits written as a new model (docs/fix.md).
int runFix(FixCommandOptions& fixOptions, const GlobalOptions& options)
{
    std::string rules = fixOptions.rules;
    for (std::size_t start = 0; start < rules.size();)
    {
        std::size_t end = rules.find(',', start);
        end = end == std::string::npos ? rules.size() : end;
        std::string slug = rules.substr(start, end - start);
        if (slug == "none" && rules == "none")
        {
            // --rules none: no rule's edit (with --autocast: the autocast alone). A slug no rule has, so planFix
            // lists every edit as left out by --rules.
            fixOptions.fix.rules.push_back(slug);
        }
        else if (!slug.empty())
        {
            const bool known = std::any_of(qdq::allRules().begin(), qdq::allRules().end(),
                                           [&](const auto& rule) { return rule->info().slug == slug; });
            if (!known)
            {
                throw qdq::InputError(qdq::SourceLocation{"--rules"}, "unknown rule '" + slug + "' (see docs/rules/)");
            }
            fixOptions.fix.rules.push_back(slug);
        }
        start = end + 1;
    }
    if (!fixOptions.autocast.empty())
    {
        fixOptions.fix.autocast.target =
            fixOptions.autocast == "bf16" ? qdq::AutocastOptions::Target::kBf16 : qdq::AutocastOptions::Target::kFp16;
    }
    else if (fixOptions.fix.autocast.castIo)
    {
        throw qdq::InputError(qdq::SourceLocation{"--autocast-io"}, "needs --autocast fp16 or --autocast bf16");
    }
    const std::string first = fixOptions.files.files.empty() ? std::string("model") : fixOptions.files.files.front();
    qdq::FixReport report = qdq::runFix(fixOptions.files, fixOptions.fix, options.limits(),
                                        progressReporter(options, first), fixStageReporter(options));
    std::string output = fixOptions.format == "json" ? qdq::renderFixJson(report) : qdq::renderFixText(report);
    std::fwrite(output.data(), 1, output.size(), stdout);
    return kExitOk;
}

struct DiagnoseOptions
{
    qdq::InputFiles files;
    std::string format = "text";
    std::string outputDir;
    std::string failOn;
    bool force = false;
    bool dot = false;              //!< also write the .dot text of every picture
    bool details = false;          //!< the text report with every finding in full
    std::string collapse = "auto"; //!< "none": the whole-graph pictures draw every layer
    qdq::BuildModeRequest buildMode;
};

//! Drawing options for --collapse: "auto" collapses chains of similar layers in pictures of more than 200 layers,
//! "none" draws every layer (slow to lay out for thousands).
qdq::graph::Options drawingOptions(const std::string& collapse)
{
    qdq::graph::Options options;
    if (collapse == "none")
    {
        options.collapseAbove = std::numeric_limits<std::size_t>::max();
    }
    return options;
}

//! The running command's inputs and the outputs it wrote: no report lands on an input or on another report.
qdq::OutputGuard& commandOutputs()
{
    static qdq::OutputGuard guard;
    return guard;
}

//! Writes a file next to its final name (a new temporary name), then renames it: a crash never leaves half a report,
//! an existing file is replaced only when the user said --force, and a device or pipe never (checkOutputFilePath);
//! an input of the command never (commandOutputs).
void writeReportFile(const std::filesystem::path& path,
                     const std::function<void(const std::function<void(std::string_view)>&)>& produce, bool force)
{
    commandOutputs().claim(path.string());
    qdq::FileModelSink file(path.string(), force);
    file.begin();
    try
    {
        produce([&file](std::string_view piece) { file.write(piece); });
        file.commit();
    }
    catch (...)
    {
        file.abort();
        throw;
    }
}

//! Creates -o DIR (and its parents) when missing; a DIR that is a file, or cannot be created, is an InputError naming
//! it.
void makeOutputFolder(const std::filesystem::path& dir)
{
    std::error_code error;
    if (std::filesystem::exists(dir, error) && !std::filesystem::is_directory(dir, error))
    {
        throw qdq::InputError(qdq::SourceLocation{dir.string()},
                              "is not a folder; -o names the folder the reports go to");
    }
    std::filesystem::create_directories(dir, error);
    if (error)
    {
        throw qdq::InputError(qdq::SourceLocation{dir.string()}, "cannot create the folder: " + error.message());
    }
}

void writeReportFile(const std::filesystem::path& path, const std::string& content, bool force)
{
    writeReportFile(
        path, [&](const std::function<void(std::string_view)>& write) { write(content); }, force);
}

//! Writes NAME.svg (and NAME.dot with --dot) in dir and returns the SVG. A picture that cannot be drawn is reported
//! on stderr and skipped (the SVG returned is then empty): the reports themselves are already written.
std::string writeGraphFiles(const std::filesystem::path& dir, const std::string& name,
                            const std::function<qdq::graph::Graph()>& build, bool dot, bool force)
{
    std::string text;
    try
    {
        text = qdq::graph::writeDot(build());
    }
    catch (const std::invalid_argument& error)
    {
        std::fprintf(stderr, "qdq-doctor: no %s.svg: %s\n", name.c_str(), qdq::printable(error.what(), 500).c_str());
        return "";
    }
    std::string svg;
    try
    {
        svg = qdq::graph::renderDot(text);
    }
    catch (const std::runtime_error& error)
    {
        std::fprintf(stderr, "qdq-doctor: cannot draw %s.svg: %s\n", name.c_str(),
                     qdq::printable(error.what(), 1000).c_str());
    }
    if (dot)
    {
        writeReportFile(dir / (name + ".dot"), text, force);
    }
    if (!svg.empty())
    {
        writeReportFile(dir / (name + ".svg"), svg, force);
    }
    return svg;
}

//! engine.svg, onnx.svg and finding-NN-<slug>.svg (drawn around the finding) for `diagnose -o DIR`; returns the
//! findings' pictures for report.html.
qdq::HtmlPictures writeDiagnoseGraphs(const std::filesystem::path& dir, const qdq::Inputs& inputs,
                                      const qdq::Report& report, bool dot, bool force,
                                      const qdq::graph::Options& drawing)
{
    constexpr std::size_t kMaxFindingGraphs = qdq::kHtmlMaxFindingPictures;
    qdq::HtmlPictures pictures;
    if (inputs.engine() != nullptr)
    {
        writeGraphFiles(
            dir, "engine", [&] { return qdq::graph::buildEngineGraph(inputs, report, drawing); }, dot, force);
    }
    if (inputs.onnx)
    {
        writeGraphFiles(
            dir, "onnx", [&] { return qdq::graph::buildOnnxGraph(inputs, report, drawing); }, dot, force);
    }
    for (std::size_t i = 0; i < report.findings.size() && i < kMaxFindingGraphs; ++i)
    {
        const auto& finding = report.findings[i];
        char number[16];
        std::snprintf(number, sizeof(number), "%02zu", i + 1);
        std::string name = std::string("finding-") + number + "-" + qdq::graph::fileSlug(finding.rule);
        pictures.findings.push_back(writeGraphFiles(
            dir, name, [&] { return qdq::graph::buildFindingGraph(inputs, report, finding); }, dot, force));
    }
    if (report.findings.size() > kMaxFindingGraphs)
    {
        std::fprintf(stderr, "qdq-doctor: drew the first %zu of %zu findings\n", kMaxFindingGraphs,
                     report.findings.size());
    }
    return pictures;
}

//! The width of the terminal standard output is, or 0 when it is not one.
std::size_t terminalColumns()
{
    winsize size{};
    if (isatty(STDOUT_FILENO) == 0 || ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0 || size.ws_col == 0)
    {
        return 0;
    }
    return std::clamp<std::size_t>(size.ws_col, 60, 240);
}

//! diagnose of timing (--exportTimes) or engine metadata files alone has nothing to diagnose: no model, layer list,
//! profile or build log. Said before anything is read, rather than a report of "No findings."
void refuseInputsWithNothingToAnalyse(const qdq::InputFiles& files)
{
    if (!files.onnx.empty() || !files.layers.empty() || !files.profile.empty() || !files.log.empty())
    {
        return;
    }
    std::vector<std::string> paths;
    for (const std::string& path : files.files)
    {
        if (!qdq::isFolder(path))
        {
            if (const qdq::InputKind kind = qdq::detectInputKind(path);
                kind != qdq::InputKind::kTiming && kind != qdq::InputKind::kMetadata)
            {
                return;
            }
            paths.push_back(path);
            continue;
        }
        for (const auto& file : qdq::listFolderArtifacts(path).files)
        {
            if (file.kind != qdq::InputKind::kTiming && file.kind != qdq::InputKind::kMetadata)
            {
                return;
            }
            paths.push_back(file.path);
        }
    }
    if (paths.empty())
    {
        return; // an empty folder: loadInputs names it
    }
    throw qdq::InputError(qdq::SourceLocation{paths.front()},
                          "holds only engine timings or metadata: nothing could be analysed. Give diagnose the "
                          "ONNX model, the layer-info JSON (trtexec --exportLayerInfo), the profile JSON "
                          "(--exportProfile) or the verbose build log beside it");
}

int runDiagnose(const DiagnoseOptions& diagnoseOptions, const GlobalOptions& options)
{
    std::string progressName =
        diagnoseOptions.files.files.empty() ? diagnoseOptions.files.log : diagnoseOptions.files.files.front();
    // Function-local statics: main ends with _Exit, so a 100,000-layer model is not torn down node by node.
    static std::optional<qdq::Inputs> inputsStorage;
    static std::optional<qdq::Report> reportStorage;
    const bool toFiles = !diagnoseOptions.outputDir.empty();
    const bool json = diagnoseOptions.format == "json";
    // JSON on stdout alone is streamed in two parts: what depends only on the correlation is written while the
    // rules run (with -o DIR the files are written first, and stdout only once they are).
    std::optional<qdq::ReportJsonStream> stream;
    if (json && !toFiles)
    {
        stream.emplace([](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), stdout); });
    }
    if (toFiles)
    {
        commandOutputs().addInputs(diagnoseOptions.files);
    }
    qdq::Inputs& inputs = inputsStorage.emplace();
    const qdq::Report& report = reportStorage.emplace(qdq::loadAndDiagnose(
        diagnoseOptions.files, options.limits(), progressReporter(options, progressName), inputs,
        qdq::AnalysisOptions{true, std::nullopt, diagnoseOptions.buildMode},
        stream ? qdq::WhileRulesRun([&](const qdq::Report& partial) { stream->head(partial, inputs); })
               : qdq::WhileRulesRun{}));
    // The JSON of a 100,000-layer engine is hundreds of MB: it is streamed, never held whole.
    const bool sarif = diagnoseOptions.format == "sarif";
    const bool html = diagnoseOptions.format == "html";
    // report.txt and a pipe get 100 columns (deterministic); a terminal its own width.
    const bool textToTerminal = !toFiles && !(json || sarif || html) && terminalColumns() != 0;
    std::string text = toFiles || !(json || sarif || html)
                           ? qdq::renderReportText(report, inputs,
                                                   qdq::TextReportOptions{textToTerminal ? terminalColumns() : 100,
                                                                          diagnoseOptions.details})
                           : "";
    std::string htmlPage;
    std::string sarifLog = toFiles || sarif ? qdq::renderReportSarif(report, inputs, QDQ_VERSION) : "";
    if (toFiles)
    {
        std::filesystem::path dir = diagnoseOptions.outputDir;
        makeOutputFolder(dir);
        for (const char* name : {"report.json", "report.txt", "report.sarif", "report.html"})
        {
            commandOutputs().claim((dir / name).string()); // before any is written
        }
        writeReportFile(
            dir / "report.json",
            [&](const std::function<void(std::string_view)>& write) { qdq::writeReportJson(report, inputs, write); },
            diagnoseOptions.force);
        writeReportFile(dir / "report.txt", text, diagnoseOptions.force);
        writeReportFile(dir / "report.sarif", sarifLog, diagnoseOptions.force);
        qdq::HtmlPictures pictures = writeDiagnoseGraphs(
            dir, inputs, report, diagnoseOptions.dot, diagnoseOptions.force, drawingOptions(diagnoseOptions.collapse));
        htmlPage = qdq::renderReportHtml(report, inputs, pictures, QDQ_VERSION);
        writeReportFile(dir / "report.html", htmlPage, diagnoseOptions.force);
    }
    if (stream)
    {
        stream->tail(report, inputs);
    }
    else if (sarif)
    {
        std::fwrite(sarifLog.data(), 1, sarifLog.size(), stdout);
    }
    else if (html)
    {
        if (htmlPage.empty())
        {
            htmlPage = qdq::renderReportHtml(report, inputs, qdq::drawFindingPictures(inputs, report), QDQ_VERSION);
        }
        std::fwrite(htmlPage.data(), 1, htmlPage.size(), stdout);
    }
    else if (json)
    {
        qdq::writeReportJson(report, inputs,
                             [](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), stdout); });
    }
    else
    {
        std::fwrite(text.data(), 1, text.size(), stdout);
    }
    if (!diagnoseOptions.failOn.empty())
    {
        for (const auto& finding : report.findings)
        {
            if (finding.severity == qdq::Severity::kError ||
                (diagnoseOptions.failOn == "warning" && finding.severity == qdq::Severity::kWarning))
            {
                return 1;
            }
        }
    }
    return kExitOk;
}

struct DiffOptions
{
    std::vector<std::string> baseline;
    std::vector<std::string> candidate;
    std::string format = "text";
    std::string outputDir;
    bool force = false;
    bool dot = false;
    std::size_t top = 20;
    qdq::BuildModeRequest buildMode;
};

int runDiff(const DiffOptions& diffOptions, const GlobalOptions& options)
{
    // Checked before anything is read, whether a side is a model (whose engine is predicted in that mode) or not.
    qdq::checkBuildModeRequest(diffOptions.buildMode);
    qdq::InputFiles baselineFiles;
    baselineFiles.files = diffOptions.baseline;
    qdq::InputFiles candidateFiles;
    candidateFiles.files = diffOptions.candidate;
    qdq::Inputs baseline =
        qdq::loadInputs(baselineFiles, options.limits(), progressReporter(options, diffOptions.baseline.front()));
    qdq::Inputs candidate =
        qdq::loadInputs(candidateFiles, options.limits(), progressReporter(options, diffOptions.candidate.front()));
    // A side given as a model alone is the engine the simulator predicts for it: diff then holds the prediction
    // against a real engine, region by region.
    const bool baselinePredicted = qdq::standInPredictedEngine(baseline, &candidate, diffOptions.buildMode);
    const bool candidatePredicted = qdq::standInPredictedEngine(candidate, &baseline, diffOptions.buildMode);
    qdq::DiffReport report = qdq::diffEngines(baseline, candidate);
    if (baselinePredicted)
    {
        report.notes.insert(report.notes.begin(), "the baseline is the engine predicted from " +
                                                      baseline.onnx->sourcePath + " (qdq-doctor predict)");
    }
    if (candidatePredicted)
    {
        report.notes.insert(report.notes.begin(), "the candidate is the engine predicted from " +
                                                      candidate.onnx->sourcePath + " (qdq-doctor predict)");
    }
    std::vector<std::string> folderNotes;
    for (const auto& note : baseline.inputNotes)
    {
        folderNotes.push_back("baseline: " + note);
    }
    for (const auto& note : candidate.inputNotes)
    {
        folderNotes.push_back("candidate: " + note);
    }
    report.notes.insert(report.notes.begin(), folderNotes.begin(), folderNotes.end());
    std::string text = qdq::renderDiffText(report, baseline, candidate, diffOptions.top);
    std::string json = qdq::renderDiffJson(report, baseline, candidate);
    std::string htmlPage;
    if (!diffOptions.outputDir.empty())
    {
        std::filesystem::path dir = diffOptions.outputDir;
        for (const auto* side : {&diffOptions.baseline, &diffOptions.candidate})
        {
            for (const std::string& path : *side)
            {
                commandOutputs().addInput(path);
            }
        }
        makeOutputFolder(dir);
        for (const char* name : {"diff.json", "diff.txt", "diff.html"})
        {
            commandOutputs().claim((dir / name).string()); // before any is written
        }
        writeReportFile(dir / "diff.json", json, diffOptions.force);
        writeReportFile(dir / "diff.txt", text, diffOptions.force);
        std::string svg = writeGraphFiles(
            dir, "diff", [&] { return qdq::graph::buildDiffGraph(report, baseline, candidate); }, diffOptions.dot,
            diffOptions.force);
        htmlPage = qdq::renderDiffHtml(report, baseline, candidate, svg, QDQ_VERSION);
        writeReportFile(dir / "diff.html", htmlPage, diffOptions.force);
    }
    if (diffOptions.format == "html")
    {
        if (htmlPage.empty())
        {
            std::string svg;
            try
            {
                svg = qdq::graph::render(qdq::graph::buildDiffGraph(report, baseline, candidate),
                                         qdq::graph::Format::kSvg);
            }
            catch (const std::exception& error)
            {
                std::fprintf(stderr, "qdq-doctor: no diff picture: %s\n", qdq::printable(error.what(), 500).c_str());
            }
            htmlPage = qdq::renderDiffHtml(report, baseline, candidate, svg, QDQ_VERSION);
        }
        std::fwrite(htmlPage.data(), 1, htmlPage.size(), stdout);
        return kExitOk;
    }
    const std::string& output = diffOptions.format == "json" ? json : text;
    std::fwrite(output.data(), 1, output.size(), stdout);
    return kExitOk;
}

struct GraphCommandOptions
{
    qdq::InputFiles files;
    std::string view;
    std::vector<std::string> focus;
    std::size_t radius = 2;
    std::string format = "svg";
    std::string output;
    bool force = false;
    std::string collapse = "auto";
};

//! `qdq-doctor graph`: one picture for a bug report.
int runGraph(const GraphCommandOptions& graphOptions, const GlobalOptions& options)
{
    qdq::Inputs inputs = qdq::loadInputs(
        graphOptions.files, options.limits(),
        progressReporter(options, graphOptions.files.files.empty() ? std::string() : graphOptions.files.files.front()));
    qdq::Report report = qdq::diagnose(inputs);
    std::string view = graphOptions.view;
    if (view.empty())
    {
        view = inputs.engine() != nullptr ? "engine" : "onnx";
    }
    qdq::graph::Options drawOptions = drawingOptions(graphOptions.collapse);
    drawOptions.focus = graphOptions.focus;
    drawOptions.radius = graphOptions.radius;
    qdq::graph::Graph picture;
    try
    {
        picture = view == "engine" ? qdq::graph::buildEngineGraph(inputs, report, drawOptions)
                                   : qdq::graph::buildOnnxGraph(inputs, report, drawOptions);
    }
    catch (const std::invalid_argument& error)
    {
        std::fprintf(stderr, "qdq-doctor graph: %s\n", qdq::printable(error.what(), 1000).c_str());
        return kExitBadInput;
    }
    std::string output =
        qdq::graph::render(picture, graphOptions.format == "dot" ? qdq::graph::Format::kDot : qdq::graph::Format::kSvg);
    if (graphOptions.output.empty() || graphOptions.output == "-")
    {
        std::fwrite(output.data(), 1, output.size(), stdout);
    }
    else
    {
        commandOutputs().addInputs(graphOptions.files);
        writeReportFile(graphOptions.output, output, graphOptions.force);
    }
    return kExitOk;
}

//! `qdq-doctor demo`: diagnose on the sample compiled into the binary.
int runDemo(const std::string& format, const GlobalOptions& options)
{
    std::string pattern = (std::filesystem::temp_directory_path() / "qdq-doctor-demo-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
    {
        std::perror("qdq-doctor: cannot create a temporary folder");
        return kExitBadInput;
    }
    std::filesystem::path dir = pattern;
    // Ctrl-C during the demo leaves no folder behind in the temporary folder.
    qdq::InterruptCleanup folderCleanup(dir.string(), /*folder*/ true);
    std::list<qdq::InterruptCleanup> fileCleanups; // a list: a watch stays where it was made
    DiagnoseOptions diagnoseOptions;
    diagnoseOptions.format = format;
    for (const auto& file : qdq::embeddedSample())
    {
        fileCleanups.emplace_back((dir / file.name).string());
        std::ofstream out(dir / file.name, std::ios::binary);
        out.write(file.bytes.data(), static_cast<std::streamsize>(file.bytes.size()));
        diagnoseOptions.files.files.push_back(file.name);
    }
    // Relative names keep the report free of the temporary folder's random name.
    std::filesystem::path previous = std::filesystem::current_path();
    std::filesystem::current_path(dir);
    std::fprintf(stderr, "qdq-doctor demo: diagnosing the bundled sample (user report c: ResNet stem loses its "
                         "Conv+MaxPool fusion in explicit INT8)\n");
    int status = kExitOk;
    try
    {
        status = runDiagnose(diagnoseOptions, options);
    }
    catch (...)
    {
        std::error_code ec;
        std::filesystem::current_path(previous, ec);
        std::filesystem::remove_all(dir, ec);
        throw;
    }
    std::error_code ec;
    std::filesystem::current_path(previous, ec);
    std::filesystem::remove_all(dir, ec);
    return status;
}

//! The subcommands, and the options each binds (CLI11 keeps references to them: this is never moved).
struct Commands
{
    CLI::App* inspect = nullptr;
    std::vector<std::string> inspectFiles;
    std::string inspectFormat = "text";
    CLI::App* diagnose = nullptr;
    DiagnoseOptions diagnoseOptions;
    CLI::App* diff = nullptr;
    DiffOptions diffOptions;
    CLI::App* graphCommand = nullptr;
    GraphCommandOptions graphOptions;
    CLI::App* predict = nullptr;
    PredictOptions predictOptions;
    CLI::App* fixCommand = nullptr;
    FixCommandOptions fixOptions;
    CLI::App* demo = nullptr;
    std::string demoFormat = "text";
};

void addInspectCommand(CLI::App& app, Commands& c, GlobalOptions& options)
{
    c.inspect = app.add_subcommand("inspect", "Detect each file's kind from its content and summarize it");
    c.inspect
        ->add_option("files", c.inspectFiles,
                     "ONNX models, layer-info JSON, profile JSON, verbose build logs, or folders of them")
        ->required();
    c.inspect->add_option("--format", c.inspectFormat, "Output format")->check(CLI::IsMember({"text", "json"}));
    addLimitOptions(*c.inspect, options);
}

void addDiagnoseCommand(CLI::App& app, Commands& c, GlobalOptions& options)
{
    c.diagnose = app.add_subcommand(
        "diagnose",
        "Correlate engine layers with ONNX nodes and explain every missed fusion, standalone Q/DQ and reformat");
    c.diagnose->add_option(
        "files", c.diagnoseOptions.files.files,
        "Any of: the Q/DQ ONNX model, layer-info JSON, profile JSON, verbose build log (kinds from content), or a "
        "folder holding them");
    c.diagnose->add_option("--onnx", c.diagnoseOptions.files.onnx, "The ONNX model (when kinds must be named)")
        ->check(nonEmpty());
    c.diagnose->add_option("--layers", c.diagnoseOptions.files.layers, "The layer-info JSON (--exportLayerInfo)")
        ->check(nonEmpty());
    c.diagnose->add_option("--profile", c.diagnoseOptions.files.profile, "The profile JSON (--exportProfile)")
        ->check(nonEmpty());
    c.diagnose->add_option("--log", c.diagnoseOptions.files.log, "The verbose build log (--verbose)")
        ->check(nonEmpty());
    c.diagnose
        ->add_option("--format", c.diagnoseOptions.format,
                     "Output format (sarif: SARIF 2.1.0, docs/sarif.md; html: docs/html-report.md)")
        ->check(CLI::IsMember({"text", "json", "sarif", "html"}));
    c.diagnose
        ->add_option("-o,--output-dir", c.diagnoseOptions.outputDir,
                     "Write report.json, report.txt, report.sarif, report.html and the SVG pictures here")
        ->check(nonEmpty());
    c.diagnose->add_flag("--force", c.diagnoseOptions.force, "Replace existing report files in the output folder");
    c.diagnose
        ->add_option("--fail-on", c.diagnoseOptions.failOn, "Exit 1 when findings of this severity or worse exist")
        ->check(CLI::IsMember({"warning", "error"}));
    c.diagnose->add_flag("--dot", c.diagnoseOptions.dot, "With -o, also write the DOT text of every picture");
    c.diagnose->add_flag("--details", c.diagnoseOptions.details,
                         "Text report: every finding in full (message, each evidence, fix) and how each saving is "
                         "estimated");
    addBuildModeOptions(*c.diagnose, c.diagnoseOptions.buildMode);
    c.diagnose
        ->add_option("--collapse", c.diagnoseOptions.collapse,
                     "With -o: auto collapses chains of similar layers in pictures over 200 layers, none draws "
                     "every layer")
        ->check(CLI::IsMember({"auto", "none"}))
        ->capture_default_str();
    addLimitOptions(*c.diagnose, options);
}

void addDiffCommand(CLI::App& app, Commands& c, GlobalOptions& options)
{
    c.diff = app.add_subcommand(
        "diff", "Where did the time go between two builds (implicit vs explicit INT8, QAT vs PTQ, TensorRT 8 vs 10)");
    c.diff
        ->add_option("--baseline", c.diffOptions.baseline,
                     "The reference engine's files (layer-info, log, profile, ONNX) or their folder")
        ->required();
    c.diff->add_option("--candidate", c.diffOptions.candidate, "The engine to explain (files or their folder)")
        ->required();
    c.diff->add_option("--format", c.diffOptions.format, "Output format")
        ->check(CLI::IsMember({"text", "json", "html"}));
    c.diff->add_option("--top", c.diffOptions.top, "Regions shown in the text table")->capture_default_str();
    c.diff
        ->add_option("-o,--output-dir", c.diffOptions.outputDir,
                     "Write diff.json, diff.txt, diff.svg and diff.html here")
        ->check(nonEmpty());
    c.diff->add_flag("--force", c.diffOptions.force, "Replace existing files in the output folder");
    c.diff->add_flag("--dot", c.diffOptions.dot, "With -o, also write diff.dot");
    addBuildModeOptions(*c.diff, c.diffOptions.buildMode);
    addLimitOptions(*c.diff, options);
}

void addGraphCommand(CLI::App& app, Commands& c, GlobalOptions& options)
{
    c.graphCommand = app.add_subcommand("graph", "Draw the engine or the ONNX graph with the findings (SVG or DOT)");
    c.graphCommand->add_option("files", c.graphOptions.files.files, "The same inputs as diagnose")->required();
    c.graphCommand->add_option("--view", c.graphOptions.view, "engine (default when a layer list is given) or onnx")
        ->check(CLI::IsMember({"engine", "onnx"}));
    c.graphCommand
        ->add_option("--focus", c.graphOptions.focus, "Draw only around this engine layer or ONNX node (repeatable)")
        ->allow_extra_args(false);
    c.graphCommand->add_option("--radius", c.graphOptions.radius, "Edges around the focus")->capture_default_str();
    c.graphCommand->add_option("--format", c.graphOptions.format, "Output format")
        ->check(CLI::IsMember({"svg", "dot"}));
    c.graphCommand->add_option("-o,--output", c.graphOptions.output, "Output file (default: standard output)")
        ->check(nonEmpty());
    c.graphCommand->add_flag("--force", c.graphOptions.force, "Replace an existing output file");
    c.graphCommand
        ->add_option("--collapse", c.graphOptions.collapse,
                     "auto collapses chains of similar layers in pictures over 200 layers, none draws every layer")
        ->check(CLI::IsMember({"auto", "none"}))
        ->capture_default_str();
    addLimitOptions(*c.graphCommand, options);
}

void addPredictCommand(CLI::App& app, Commands& c, GlobalOptions& options)
{
    c.predict = app.add_subcommand(
        "predict", "Predict the engine layers TensorRT will build from an ONNX model or a verbose build log's graph");
    c.predict->add_option("file", c.predictOptions.file, "The ONNX model, or a trtexec --verbose log with parser lines")
        ->required();
    c.predict->add_option("--format", c.predictOptions.format, "Output format")->check(CLI::IsMember({"text", "json"}));
    c.predict
        ->add_option("--precision", c.predictOptions.precision,
                     "Build flags: fp32, fp16, int8, best (default: from the log, else --int8 --fp16)")
        ->check(CLI::IsMember({"fp32", "fp16", "int8", "best"}));
    addBuildModeOptions(*c.predict, c.predictOptions.buildMode);
    addLimitOptions(*c.predict, options);
}

void addFixCommand(CLI::App& app, Commands& c, GlobalOptions& options)
{
    c.fixCommand = app.add_subcommand(
        "fix", "Write the model with the findings' Q/DQ edits applied, and show what they buy (docs/fix.md)");
    c.fixCommand
        ->add_option(
            "files", c.fixOptions.files.files,
            "The Q/DQ ONNX model (FP32 with --calibration-cache), plus any layer-info JSON, profile JSON or build "
            "log of its engine")
        ->required();
    c.fixCommand->add_option("-o,--output", c.fixOptions.fix.output, "The fixed model to write (FIXED.onnx)")
        ->check(nonEmpty());
    c.fixCommand
        ->add_option("--rules", c.fixOptions.rules,
                     "Apply only these rules' edits (comma-separated slugs; none: no rule's edit)")
        ->check(nonEmpty());
    c.fixCommand->add_flag("--dry-run", c.fixOptions.fix.dryRun, "Write nothing; print the same report");
    c.fixCommand->add_flag("--force", c.fixOptions.fix.force, "Replace an existing output file");
    c.fixCommand->add_option("--format", c.fixOptions.format, "Output format")->check(CLI::IsMember({"text", "json"}));
    c.fixCommand
        ->add_option("--autocast", c.fixOptions.autocast,
                     "Also write the float part in fp16 or bf16 for a strongly typed build (docs/fix.md#autocast)")
        ->check(CLI::IsMember({"fp16", "bf16"}));
    c.fixCommand->add_flag("--autocast-io", c.fixOptions.fix.autocast.castIo,
                           "With --autocast: float graph inputs and outputs take the low type too");
    c.fixCommand
        ->add_option("--calibration-cache", c.fixOptions.fix.calibrationCache,
                     "Quantize the FP32 model with an implicit INT8 build's calibration cache or a dynamic-range "
                     "file (docs/fix.md#calibration-cache)")
        ->check(nonEmpty());
    addBuildModeOptions(*c.fixCommand, c.fixOptions.fix.buildMode);
    addLimitOptions(*c.fixCommand, options);
}

void addDemoCommand(CLI::App& app, Commands& c)
{
    c.demo = app.add_subcommand("demo", "Run diagnose on the sample compiled into the binary");
    c.demo->add_option("--format", c.demoFormat, "Output format")
        ->check(CLI::IsMember({"text", "json", "sarif", "html"}));
}

//! A first word that is no subcommand (a typo) is named, with the subcommands there are: CLI11 alone would say
//! only that a subcommand is required. Returns whether the command line may be parsed.
bool firstWordIsASubcommand(CLI::App& app, int argc, char** argv)
{
    if (argc > 1 && argv[1][0] != '-')
    {
        const std::string word = argv[1];
        std::string names;
        bool known = false;
        for (const CLI::App* subcommand : app.get_subcommands({}))
        {
            known = known || subcommand->get_name() == word;
            names += (names.empty() ? "" : ", ") + subcommand->get_name();
        }
        if (!known)
        {
            std::fprintf(stderr, "qdq-doctor: '%s' is not a subcommand; the subcommands are %s (qdq-doctor --help)\n",
                         qdq::printable(word, 200).c_str(), names.c_str());
            return false;
        }
    }
    return true;
}

//! Parses the command line; returns the exit status when it ends the run (help, version, a parse error).
std::optional<int> parseCommandLine(CLI::App& app, int argc, char** argv)
{
    try
    {
        app.parse(argc, argv);
    }
    catch (const CLI::CallForHelp& help)
    {
        return app.exit(help);
    }
    catch (const CLI::CallForAllHelp& help)
    {
        return app.exit(help);
    }
    catch (const CLI::CallForVersion& version)
    {
        return app.exit(version);
    }
    catch (const CLI::ParseError& error)
    {
        app.exit(error);
        return kExitBadInput;
    }
    return std::nullopt;
}

//! Runs the parsed subcommand; input errors and bugs become an exit status and a message, never a crash.
int runCommand(Commands& c, const GlobalOptions& options)
{
    try
    {
        if (c.inspect->parsed())
        {
            return runInspect(c.inspectFiles, c.inspectFormat, options);
        }
        if (c.diagnose->parsed())
        {
            const auto& f = c.diagnoseOptions.files;
            if (f.files.empty() && f.onnx.empty() && f.layers.empty() && f.profile.empty() && f.log.empty())
            {
                std::fprintf(stderr, "qdq-doctor diagnose: no input files (try `qdq-doctor demo`)\n");
                return kExitBadInput;
            }
            refuseInputsWithNothingToAnalyse(f);
            return runDiagnose(c.diagnoseOptions, options);
        }
        if (c.diff->parsed())
        {
            return runDiff(c.diffOptions, options);
        }
        if (c.graphCommand->parsed())
        {
            return runGraph(c.graphOptions, options);
        }
        if (c.demo->parsed())
        {
            return runDemo(c.demoFormat, options);
        }
        if (c.predict->parsed())
        {
            return runPredict(c.predictOptions, options);
        }
        if (c.fixCommand->parsed())
        {
            return runFix(c.fixOptions, options);
        }
    }
    catch (const qdq::InputError& error)
    {
        reportError(error);
        return kExitBadInput;
    }
    catch (const std::filesystem::filesystem_error& error)
    {
        std::fprintf(stderr, "qdq-doctor: %s\n", qdq::printable(error.what(), 2000).c_str());
        return kExitBadInput;
    }
    catch (const std::exception& error)
    {
        // Anything else is a bug in qdq-doctor, not in the user's input; still no crash.
        std::fprintf(stderr, "qdq-doctor: internal error: %s\n", qdq::printable(error.what(), 2000).c_str());
        return 3;
    }
    return kExitOk;
}

} // namespace

int run(int argc, char** argv)
{
    CLI::App app{"qdq-doctor: explains why TensorRT built a slow engine from a Q/DQ ONNX model, and what to change."};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("qdq-doctor ") + QDQ_VERSION);
    GlobalOptions options;
    Commands commands;
    addInspectCommand(app, commands, options);
    addDiagnoseCommand(app, commands, options);
    addDiffCommand(app, commands, options);
    addGraphCommand(app, commands, options);
    addPredictCommand(app, commands, options);
    addFixCommand(app, commands, options);
    addDemoCommand(app, commands);
    if (!firstWordIsASubcommand(app, argc, argv))
    {
        return kExitBadInput;
    }
    if (std::optional<int> status = parseCommandLine(app, argc, argv))
    {
        return *status;
    }
    return runCommand(commands, options);
}

int main(int argc, char** argv)
{
    // Ctrl-C while fix or a report is being written removes the files not yet in place.
    qdq::removeTemporaryFilesOnInterrupt();
    int status = run(argc, argv);
    // Everything is written: leave without running destructors (freeing a large model object by object costs
    // longer than reading it). stdio buffers are flushed first.
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(status);
}
