// diagnose: correlation, prediction and every rule, with findings sorted worst first.
#include "qdq/analysis.h"
#include "qdq/consistency.h"
#include "qdq/load_inputs.h"
#include "qdq/patterns.h"
#include "qdq/prediction_check.h"
#include "qdq/root_causes.h"

#include "src/input_plan.h"
#include "src/task_graph.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_set>

namespace qdq
{

namespace
{

int severityRank(Severity severity)
{
    switch (severity)
    {
    case Severity::kError:
        return 0;
    case Severity::kWarning:
        return 1;
    case Severity::kInfo:
        return 2;
    }
    return 3;
}

std::string missingInputNote(const RuleInfo& info, bool haveOnnx, bool haveEngine, bool graphRebuilt)
{
    if ((info.needs & kNeedsOnnx) && !haveOnnx)
    {
        return info.slug + ": not checked, needs the ONNX model";
    }
    if ((info.needs & kReadsModelValues) && graphRebuilt && (info.needs & kNeedsOnnx))
    {
        return info.slug + ": not checked, needs the ONNX model (the build log has no scale values)";
    }
    if ((info.needs & kNeedsEngine) && !haveEngine)
    {
        return info.slug + ": not checked, needs the engine's layer list (--exportLayerInfo JSON or a verbose build "
                           "log)";
    }
    return {};
}

//! The readers' warnings about one input (truncated, odd or partly understood), so a partial report says so.
void addReaderWarnings(std::vector<std::string>& notes, const std::vector<ReaderWarning>& warnings)
{
    constexpr std::size_t kShown = 10;
    for (std::size_t i = 0; i < warnings.size() && i < kShown; ++i)
    {
        notes.push_back(warnings[i].describe());
    }
    if (warnings.size() > kShown)
    {
        notes.push_back(std::to_string(warnings.size() - kShown) + " more warnings about " +
                        warnings.front().where.path + " (qdq-doctor inspect lists them all)");
    }
}

//! What the pipelined diagnose reads while it works; absent for diagnose() on inputs already read.
struct Loading
{
    Inputs& inputs;
    const input_plan::InputPlan& plan;
    const Limits& limits;
    const ProgressCallback& progress;
};

void finishReport(Report& report, const Inputs& inputs, std::vector<FindingSink>& sinks);

//! The engine files name the layers after the ONNX nodes they execute. A model whose nodes none of those layers
//! executes is another export (or another network) than the one the engine was built from, and every
//! correlation-based statement about it would be wrong (all its quantized operations "not found in the engine"):
//! refused the way two engine files of different builds are (engine_merge.cpp, refuse), an InputError naming both
//! files and how few names matched. A model fewer than half of whose layers match (the threshold
//! NameOverlap::sameEngine uses) is diagnosed with that said as the first note: an edited model, or names the
//! correlator could not read. A graph rebuilt from the build log matches its engine by construction; layers that
//! execute no ONNX node (standalone Q/DQ, reformats, dropped) do not count.
std::string modelMismatch(const Inputs& inputs, const Correlation& correlation)
{
    const EnginePlan* engine = inputs.engine();
    if (!inputs.onnx || inputs.onnx->rebuiltFromLog || engine == nullptr)
    {
        return {};
    }
    const Correlation::LayerTotals totals = correlation.layerTotals();
    const std::size_t named = totals.mapped + totals.unattributed;
    if (named == 0 || totals.mapped * 2 >= named)
    {
        return {};
    }
    std::string engineFiles = engine->sourcePath;
    if (engine->mergedFrom.size() > 1)
    {
        engineFiles.clear();
        for (const auto& path : engine->mergedFrom)
        {
            engineFiles += (engineFiles.empty() ? "" : " + ") + path;
        }
    }
    const std::string counts = "only " + std::to_string(totals.mapped) + " of the " + std::to_string(named) +
                               " engine layers that execute ONNX nodes name a node of the model";
    if (totals.mapped == 0)
    {
        SourceLocation where;
        where.path = inputs.onnx->sourcePath;
        throw InputError(where, inputs.onnx->sourcePath + " is not the model " + engineFiles +
                                    " was built from: " + counts +
                                    " (diagnose needs the ONNX file the engine was built from; node names differ "
                                    "between exports)");
    }
    return inputs.onnx->sourcePath + " may not be the model " + engineFiles + " was built from: " + counts +
           "; what this report says about the other layers and their nodes rests on a partial match";
}

//! One diagnosis as a task graph on two threads (run()): the inputs are read, the engine is correlated with the model
//! and predicted from it, and every rule runs once what it reads is there. Every rule is independent and read-only and
//! writes its own sink; findings are gathered in catalogue order, so the result does not depend on scheduling.
class Diagnosis
{
public:
    Diagnosis(const Inputs& inputs, const AnalysisOptions& options, const Loading* loading,
              const WhileRulesRun& whileRulesRun)
        : mInputs(inputs), mOptions(options), mLoading(loading), mWhileRulesRun(whileRulesRun), mRules(allRules()),
          mSinks(mRules.size()), mRuleRuns(mRules.size(), false),
          mContexts{{{inputs, mNoCorrelation, mNoPrediction, options, false, &mReport.buildMode},
                     {inputs, mNoCorrelation, mReport.prediction, options, false, &mReport.buildMode}},
                    {{inputs, mReport.correlation, mNoPrediction, options, false, &mReport.buildMode},
                     {inputs, mReport.correlation, mReport.prediction, options, false, &mReport.buildMode}}}
    {
    }

    Report run()
    {
        TaskGraph graph;
        // Reading (pipelined form): the ONNX model on one thread while the other files are read on the other. An
        // error names the first bad file: those read here come before the model's.
        const auto otherFiles = graph.add("read the other inputs", {}, [this] { readOtherFiles(); });
        const auto model = graph.add("read the ONNX model", {}, [this] { readModelBeside(); });
        const auto merged = graph.add("merge the engine artifacts", {otherFiles}, [this] { mergeInputs(); });
        const auto allRead = graph.add("choose the rules", {merged, model}, [this] { chooseRules(); });
        // The correlation needs every input; so does the prediction, whose build flags and version come from them,
        // unless the caller gave those.
        const auto correlation = graph.add("correlate the engine with the model", {allRead}, [this] { correlate(); });
        const auto prediction = graph.add("predict the engine from the model",
                                          predictionWaitsForEveryInput() ? std::vector{allRead} : std::vector{model},
                                          [this] { predict(); });
        // The engine's tensor index (the rules share it, built lazily) is built by the thread that is free first.
        const auto index = graph.add("index the engine's tensors", {merged}, [this] { indexEngineTensors(); });
        if (mWhileRulesRun)
        {
            graph.add("hand the report to the caller while the rules run", {correlation},
                      [this] { mWhileRulesRun(mReport); });
        }
        // Rules that need neither the correlation nor the prediction first (they can start while both are made),
        // then those that read the correlation, the prediction's check against the engine (about 0.2 s on a
        // 100,000-layer engine: run beside the rules, it costs little wall time), then those that read the
        // prediction. A rule sees the correlation and the prediction only when its flags say it reads them.
        const auto addRules = [&](unsigned reads)
        {
            for (std::size_t r = 0; r < mRules.size(); ++r)
            {
                if ((mRules[r]->info().needs & (kReadsCorrelation | kReadsPrediction)) != reads)
                {
                    continue;
                }
                std::vector<TaskGraph::TaskId> after = {allRead, index};
                if (reads & kReadsCorrelation)
                {
                    after.push_back(correlation);
                }
                if (reads & kReadsPrediction)
                {
                    after.push_back(prediction);
                }
                graph.add(mRules[r]->info().slug, std::move(after), [this, r] { runRule(r); });
            }
        };
        addRules(0);
        addRules(kReadsCorrelation);
        graph.add("check the prediction against the engine", {correlation, prediction},
                  [this] { checkAgainstEngine(); });
        addRules(kReadsPrediction);
        addRules(kReadsCorrelation | kReadsPrediction);
        graph.run(1);

        finishReport(mReport, mInputs, mSinks);
        if (!mModelMismatch.empty())
        {
            mReport.notes.insert(mReport.notes.begin(), mModelMismatch); // the headline of the notes
        }
        attributeRootCauses(mReport, mInputs);
        // Last: the findings are in their final order (grouped by cause), which the check's numbers refer to.
        mReport.consistency = checkConsistency(mReport, mInputs);
        return std::move(mReport);
    }

private:
    bool modelOnItsOwnThread() const { return mLoading != nullptr && mLoading->plan.separateOnnx.has_value(); }

    //! The simulation's build flags and TensorRT version come from the inputs (the build log, the version a layer
    //! list or its metadata gives: simulationOptionsFor), so the prediction waits for every input unless they were
    //! given. (It used to start as soon as the model was read when no build log was given; fuzz_graph_commands found
    //! it reading Inputs::sources while the other thread appended to it, a heap-use-after-free, and a version from
    //! the layer list could come too late.)
    bool predictionWaitsForEveryInput() const
    {
        return !modelOnItsOwnThread() || !mOptions.simulation.has_value(); // else the model alone is read apart
    }

    void readOtherFiles()
    {
        if (mLoading == nullptr)
        {
            return;
        }
        for (std::size_t i = 0; i < mLoading->plan.files.size(); ++i)
        {
            if (!modelOnItsOwnThread() || i != *mLoading->plan.separateOnnx)
            {
                input_plan::readInput(mLoading->inputs, mLoading->plan.files[i], mLoading->limits, mLoading->progress);
            }
        }
    }

    void readModelBeside()
    {
        if (modelOnItsOwnThread())
        {
            input_plan::readInput(mLoading->inputs, mLoading->plan.files[*mLoading->plan.separateOnnx],
                                  mLoading->limits, mLoading->progress);
        }
    }

    void mergeInputs()
    {
        if (mLoading != nullptr)
        {
            input_plan::finishInputs(mLoading->inputs, mLoading->plan);
        }
    }

    //! Which rules run (those whose inputs are there) and the notes on those that cannot.
    void chooseRules()
    {
        mReport.inputs = mInputs.sources;
        // The build mode: given by the caller, else from the inputs and the command line's request (which throws on
        // a contradiction: exit 2).
        mReport.buildMode = mOptions.simulation ? *mOptions.simulation : resolveBuildMode(mInputs, mOptions.buildMode);
        const bool haveOnnx = mInputs.onnx.has_value();
        const bool haveEngine = mInputs.engine() != nullptr;
        const bool graphRebuilt = haveOnnx && mInputs.onnx->rebuiltFromLog;
        // A rebuilt graph without Q/DQ nodes has no scale values to miss: no note about them.
        const bool valuesMissed = graphRebuilt && !mInputs.onnx->qdq.empty();
        for (std::size_t r = 0; r < mRules.size(); ++r)
        {
            const RuleInfo& info = mRules[r]->info();
            std::string note = missingInputNote(info, haveOnnx, haveEngine, graphRebuilt);
            if (!note.empty())
            {
                if (valuesMissed || !graphRebuilt || !(info.needs & kReadsModelValues))
                {
                    mReport.notes.push_back(note);
                }
            }
            else if (haveOnnx || haveEngine || mInputs.buildLog.has_value())
            {
                if ((info.needs & kReadsModelValues) && valuesMissed)
                {
                    mReport.notes.push_back(info.slug +
                                            ": the model's part not checked, needs the ONNX model (the build log has "
                                            "no scale values); checked on the engine artifacts alone");
                }
                mRuleRuns[r] = true;
            }
        }
    }

    void correlate()
    {
        mReport.correlation = qdq::correlate(mInputs);
        mModelMismatch = modelMismatch(mInputs, mReport.correlation);
    }

    void predict()
    {
        if (mInputs.onnx && mOptions.predict)
        {
            // Without the caller's options this runs after chooseRules, which resolved the build mode.
            mReport.prediction =
                predictEngine(*mInputs.onnx, mOptions.simulation ? *mOptions.simulation : mReport.buildMode);
        }
    }

    void indexEngineTensors()
    {
        if (const EnginePlan* plan = mInputs.engine())
        {
            plan->tensorIndex();
        }
    }

    void checkAgainstEngine()
    {
        const EnginePlan* engine = mInputs.engine();
        if (mInputs.onnx && engine != nullptr && !engine->layers.empty() && !mReport.prediction.layers.empty())
        {
            mReport.predictionCheck = checkPrediction(mReport.prediction, *mInputs.onnx, *engine, mReport.correlation);
        }
    }

    void runRule(std::size_t r)
    {
        if (!mRuleRuns[r])
        {
            return;
        }
        const Rule& rule = *mRules[r];
        const bool readsCorrelation = (rule.info().needs & kReadsCorrelation) != 0;
        const bool readsPrediction = (rule.info().needs & kReadsPrediction) != 0;
        const Context& context = mContexts[readsCorrelation ? 1 : 0][readsPrediction ? 1 : 0];
        if ((rule.info().needs & kReadsModelValues) && context.inputs.onnx && context.inputs.onnx->rebuiltFromLog)
        {
            // The graph lacks the values the rule reads: it judges the engine artifacts alone.
            const Context withoutGraph{context.inputs, context.correlation, context.prediction, context.options,
                                       true,           context.mode};
            rule.check(withoutGraph, mSinks[r]);
        }
        else
        {
            rule.check(context, mSinks[r]);
        }
        for (auto& finding : mSinks[r].findings())
        {
            std::sort(finding.onnxNodes.begin(), finding.onnxNodes.end());
            finding.onnxNodes.erase(std::unique(finding.onnxNodes.begin(), finding.onnxNodes.end()),
                                    finding.onnxNodes.end());
        }
    }

    const Inputs& mInputs;
    const AnalysisOptions& mOptions;
    const Loading* mLoading;
    const WhileRulesRun& mWhileRulesRun;
    Report mReport;
    const std::vector<std::unique_ptr<Rule>>& mRules;
    std::vector<FindingSink> mSinks;
    std::string mModelMismatch;  //!< correlate: the note on a model that matches under half of the layers
    std::vector<bool> mRuleRuns; //!< chooseRules: the rule's inputs are there (written before any rule runs)
    // Empty ones for rules that do not read them, so that a rule missing a flag fails its tests instead of racing the
    // thread that makes them.
    const Prediction mNoPrediction;
    const Correlation mNoCorrelation;
    const Context mContexts[2][2];
};

//! Fallback explanations (Finding::fallbackGroup): dropped where another finding names the layer, the rest merged by
//! rule and group.
void mergeFallbackFindings(FindingSink& sink)
{
    auto& findings = sink.findings();
    if (std::none_of(findings.begin(), findings.end(), [](const Finding& f) { return !f.fallbackGroup.empty(); }))
    {
        return;
    }
    std::unordered_set<std::string_view> namedElsewhere;
    for (const auto& finding : findings)
    {
        if (finding.fallbackGroup.empty())
        {
            namedElsewhere.insert(finding.engineLayers.begin(), finding.engineLayers.end());
        }
    }
    // Decided before anything moves: the views above point into the findings' strings.
    std::vector<char> dropped(findings.size(), 0);
    for (std::size_t i = 0; i < findings.size(); ++i)
    {
        const Finding& finding = findings[i];
        dropped[i] = !finding.fallbackGroup.empty() &&
                     std::all_of(finding.engineLayers.begin(), finding.engineLayers.end(),
                                 [&](const std::string& layer) { return namedElsewhere.count(layer) > 0; });
    }
    namedElsewhere.clear();
    std::vector<Finding> kept;
    std::map<std::pair<std::string, std::string>, std::pair<std::size_t, std::size_t>> groups; // -> (index, count)
    for (std::size_t i = 0; i < findings.size(); ++i)
    {
        Finding& finding = findings[i];
        if (dropped[i] != 0)
        {
            continue;
        }
        if (finding.fallbackGroup.empty())
        {
            kept.push_back(std::move(finding));
            continue;
        }
        auto [it, inserted] = groups.try_emplace({finding.rule, finding.fallbackGroup}, kept.size(), 1);
        if (inserted)
        {
            kept.push_back(std::move(finding));
            continue;
        }
        Finding& group = kept[it->second.first];
        ++it->second.second;
        group.engineLayers.insert(group.engineLayers.end(), finding.engineLayers.begin(), finding.engineLayers.end());
        group.onnxNodes.insert(group.onnxNodes.end(), finding.onnxNodes.begin(), finding.onnxNodes.end());
        group.evidence.insert(group.evidence.end(), finding.evidence.begin(), finding.evidence.end());
        if (finding.costMs)
        {
            group.costMs = group.costMs.value_or(0.0) + *finding.costMs;
        }
        group.likely = group.likely || finding.likely;
        if (severityRank(finding.severity) < severityRank(group.severity))
        {
            group.severity = finding.severity;
        }
    }
    for (const auto& [key, entry] : groups)
    {
        Finding& group = kept[entry.first];
        std::sort(group.onnxNodes.begin(), group.onnxNodes.end());
        group.onnxNodes.erase(std::unique(group.onnxNodes.begin(), group.onnxNodes.end()), group.onnxNodes.end());
        if (entry.second > 1)
        {
            group.message = std::to_string(entry.second) + " " + key.second + ": " +
                            patterns::nameList(group.engineLayers, 4) + " (each one in the evidence).";
        }
    }
    findings = std::move(kept);
}

//! The tactic-skip lines of a log, grouped by what TensorRT could not do ("could not infer output types for
//! quantize (fp8)", "Assertion vol == 1 failed."), most frequent first: "N x what".
std::vector<std::string> tacticSkipReasons(const std::vector<LogMessage>& skips)
{
    std::map<std::string, std::size_t> counts;
    for (const auto& skip : skips)
    {
        std::string_view text = skip.text;
        const std::size_t because = text.find("due to exception ");
        std::string_view reason = because == std::string_view::npos ? text : text.substr(because + 17);
        if (!reason.empty() && reason.front() == '[')
        {
            // "[type.cpp:infer_type:145] Could not infer ...": the source location says nothing to a user
            const std::size_t close = reason.find("] ");
            reason = close == std::string_view::npos ? reason : reason.substr(close + 2);
        }
        std::string what;
        static constexpr std::string_view kInfer = "Could not infer output types for operation:";
        if (reason.rfind(kInfer, 0) == 0)
        {
            // "Could not infer output types for operation:    43: quantize: name'-(fp8[128,...]...": the operation
            // and the type TensorRT tried (NVIDIA/Model-Optimizer#118).
            std::string_view operation = reason.substr(kInfer.size());
            const std::size_t number = operation.find(": ");
            operation = number == std::string_view::npos ? std::string_view{} : operation.substr(number + 2);
            const std::string_view name = operation.substr(0, operation.find(':'));
            std::string_view type;
            if (const std::size_t open = operation.find("-("); open != std::string_view::npos)
            {
                type = operation.substr(open + 2);
                type = type.substr(0, type.find('['));
            }
            what = "could not infer output types for " + std::string(name.empty() ? "an operation" : name) +
                   (type.empty() || type.size() > 8 ? "" : " (" + std::string(type) + ")");
        }
        else
        {
            what = std::string(reason.substr(0, 80)) + (reason.size() > 80 ? "..." : "");
            while (!what.empty() && what.back() == ' ')
            {
                what.pop_back();
            }
        }
        ++counts[what];
    }
    std::vector<std::pair<std::string, std::size_t>> sorted(counts.begin(), counts.end());
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<std::string> reasons;
    for (const auto& [what, count] : sorted)
    {
        reasons.push_back(std::to_string(count) + " x " + what);
    }
    return reasons;
}

//! Tactics left out because the workspace pool was too small ("UNSUPPORTED_STATE: Skipping tactic 0 due to
//! insufficient memory ...", a warning): the log itself says to raise the pool ("Try increasing the workspace size
//! with IBuilderConfig::setMemoryPoolLimit." / "Example of equivalent trtexec option: --memPoolSize=workspace:16384",
//! cookbook-mnist-trt10141/result-02.log, whose options block shows a 1 KiB pool).
void addMemorySkipNote(Report& report, const BuildLog& log)
{
    if (log.memorySkips.empty())
    {
        return;
    }
    std::string pool;
    for (const auto& [key, value] : log.buildOptions)
    {
        if (key == "Memory Pools")
        {
            pool = " (Build Options: Memory Pools: " + value.substr(0, value.find(',')) + ")";
        }
    }
    // A log of several backend strategies builds the network once per strategy (log_build_facts.h): the skips of a
    // strategy that was not kept did not shape the engine listed.
    std::size_t inKeptBuild = log.memorySkips.size();
    const BackendStrategy* kept = nullptr;
    for (std::size_t i = 0; i < log.backendStrategies.size(); ++i)
    {
        if (!log.backendStrategies[i].kept)
        {
            continue;
        }
        kept = &log.backendStrategies[i];
        const std::uint64_t end = i + 1 < log.backendStrategies.size() ? log.backendStrategies[i + 1].line : UINT64_MAX;
        inKeptBuild = static_cast<std::size_t>(std::count_if(log.memorySkips.begin(), log.memorySkips.end(),
                                                             [&](const LogMessage& skip)
                                                             { return skip.line >= kept->line && skip.line < end; }));
    }
    std::string note = log.sourcePath + ":" + std::to_string(log.memorySkips.front().line) + ": " +
                       std::to_string(log.memorySkips.size()) +
                       " tactic(s) were left out for insufficient workspace memory" + pool;
    if (kept != nullptr && inKeptBuild == 0)
    {
        note += ", all in builds of backend strategies that were not kept (the engine listed is strategy " +
                std::to_string(kept->id) + "'s): a larger pool may still change which strategy wins";
    }
    else
    {
        note += ": kernels that need a larger workspace were never timed, so the engine cannot use them";
    }
    report.notes.push_back(note + "; raise the pool (trtexec --memPoolSize=workspace:<size>) and compare");
}

//! The build's outcome as the log tells it: a failed build no finding explains is said first (or "No findings" reads
//! as a clean build); tactic-skip error lines are counted and explained, never taken for a failure.
void addBuildOutcomeNotes(Report& report, const BuildLog& log)
{
    if (!log.hasEngineBlock && log.passedLine == 0 && !log.errors.empty())
    {
        const bool explained =
            std::any_of(report.findings.begin(), report.findings.end(),
                        [&](const Finding& finding)
                        {
                            return std::any_of(finding.evidence.begin(), finding.evidence.end(),
                                               [&](const Evidence& evidence)
                                               {
                                                   return evidence.file == log.sourcePath &&
                                                          std::any_of(log.errors.begin(), log.errors.end(),
                                                                      [&](const LogMessage& error)
                                                                      { return error.line == evidence.line; });
                                               });
                        });
        if (!explained)
        {
            const LogMessage& first = log.errors.front();
            std::string text = first.text.size() > 300 ? first.text.substr(0, 300) + "..." : first.text;
            report.notes.insert(report.notes.begin(), log.sourcePath + ":" + std::to_string(first.line) +
                                                          ": the build failed (" + std::to_string(log.errors.size()) +
                                                          " error line(s), no engine); the first: \"" + text +
                                                          "\". No rule of qdq-doctor explains it.");
        }
    }
    addMemorySkipNote(report, log);
    if (log.tacticSkips.empty())
    {
        return;
    }
    const std::vector<std::string> reasons = tacticSkipReasons(log.tacticSkips);
    std::string note = log.sourcePath + ":" + std::to_string(log.tacticSkips.front().line) + ": " +
                       std::to_string(log.tacticSkips.size()) +
                       " error line(s) are tactic skips (\"Skipping tactic ... due to exception\"): TensorRT tried "
                       "those kernels, could not run them and timed others; they do not fail a build";
    note += log.passedLine != 0  ? " (this one passed: line " + std::to_string(log.passedLine) + ")"
            : log.hasEngineBlock ? " (this log has the built engine's layers)"
                                 : "";
    note += ". What was skipped: ";
    for (std::size_t i = 0; i < reasons.size() && i < 3; ++i)
    {
        note += (i == 0 ? "" : "; ") + reasons[i];
    }
    if (reasons.size() > 3)
    {
        note += "; " + std::to_string(reasons.size() - 3) + " other reason(s)";
    }
    report.notes.push_back(std::move(note));
    // FP8 tactics under weak typing: in TensorRT 10.2 a weakly typed `--fp8` build never timed FP8 tactics, and the
    // maintainers' remedy was --stronglyTyped (NVIDIA/TensorRT#3987). From 11.0 every network is strongly typed.
    const bool fp8Skipped =
        std::any_of(log.tacticSkips.begin(), log.tacticSkips.end(),
                    [](const LogMessage& skip) { return skip.text.find("(fp8[") != std::string::npos; });
    // The typing the diagnosis resolved (Report::buildMode: the log's evidence, its version, the command line).
    if (fp8Skipped && !report.buildMode.stronglyTyped())
    {
        report.notes.push_back(log.sourcePath +
                               ": FP8 tactics were skipped in a weakly typed build: build with --stronglyTyped (the "
                               "network's Q/DQ then decide each tensor's type). In TensorRT 10.2 a weakly typed --fp8 "
                               "build never timed FP8 kernels, and --stronglyTyped was the maintainers' remedy "
                               "(NVIDIA/TensorRT#3987); TensorRT 11 builds every network strongly typed.");
    }
}

//! Every rule's findings, the fallback findings merged, de-duplicated: each once (same rule on the same nodes and
//! layers; node lists were sorted by the workers).
void gatherFindings(Report& report, std::vector<FindingSink>& sinks)
{
    FindingSink sink;
    for (auto& ruleSink : sinks)
    {
        for (auto& finding : ruleSink.findings())
        {
            sink.add(std::move(finding));
        }
    }
    mergeFallbackFindings(sink);

    std::set<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>> seen;
    for (auto& finding : sink.findings())
    {
        if (seen.emplace(finding.rule, finding.onnxNodes, finding.engineLayers).second)
        {
            report.findings.push_back(std::move(finding));
        }
    }
}

//! Worst first: by severity, then cost, rule and first node or layer.
void sortFindings(Report& report)
{
    std::stable_sort(report.findings.begin(), report.findings.end(),
                     [](const Finding& a, const Finding& b)
                     {
                         if (severityRank(a.severity) != severityRank(b.severity))
                         {
                             return severityRank(a.severity) < severityRank(b.severity);
                         }
                         double costA = a.costMs.value_or(-1.0);
                         double costB = b.costMs.value_or(-1.0);
                         if (costA != costB)
                         {
                             return costA > costB;
                         }
                         if (a.rule != b.rule)
                         {
                             return a.rule < b.rule;
                         }
                         std::string nodeA =
                             a.onnxNodes.empty() ? (a.engineLayers.empty() ? "" : a.engineLayers[0]) : a.onnxNodes[0];
                         std::string nodeB =
                             b.onnxNodes.empty() ? (b.engineLayers.empty() ? "" : b.engineLayers[0]) : b.onnxNodes[0];
                         return nodeA < nodeB;
                     });
}

//! The notes of the inputs: the build's outcome, the loading, the merge of engine artifacts and the correlation.
void addInputNotes(Report& report, const Inputs& inputs)
{
    if (inputs.buildLog)
    {
        addBuildOutcomeNotes(report, *inputs.buildLog);
    }
    for (const auto& note : inputs.inputNotes)
    {
        report.notes.push_back(note);
    }
    if (inputs.planFromProfile)
    {
        report.notes.push_back("no layer list given (--exportLayerInfo JSON or a verbose build log): the profile's "
                               "layer names stand in for it, without layer types or tensor precisions");
    }
    if (!inputs.engineMergeNote.empty())
    {
        report.notes.push_back(inputs.engineMergeNote);
    }
    for (const auto& note : report.correlation.notes)
    {
        report.notes.push_back(note);
    }
}

//! kernel-without-tensor-cores reads kernel names: say when no file gives any.
void addKernelNameNote(Report& report, const Inputs& inputs)
{
    if (const EnginePlan* plan = inputs.engine(); plan != nullptr && !plan->layers.empty())
    {
        const bool named =
            std::any_of(plan->layers.begin(), plan->layers.end(),
                        [](const EngineLayer& layer) { return !layer.tacticName.empty(); }) ||
            (inputs.buildLog && std::any_of(inputs.buildLog->tactics.begin(), inputs.buildLog->tactics.end(),
                                            [](const TacticChoice& choice) { return !choice.tacticName.empty(); }));
        if (!named)
        {
            report.notes.push_back(
                "kernel-without-tensor-cores: not checked, no file names the kernels (the layer list has no "
                "TacticName: export it with trtexec --profilingVerbosity=detailed --exportLayerInfo, or give the "
                "--verbose build log with its tactic names)");
        }
    }
}

//! A graph rebuilt from the build log's parser lines, and what it lacks.
void addRebuiltGraphNote(Report& report, const Inputs& inputs)
{
    if (inputs.onnx && inputs.onnx->rebuiltFromLog)
    {
        const OnnxGraph& graph = *inputs.onnx;
        report.notes.push_back(
            "graph rebuilt from " + graph.sourcePath + ": " + std::to_string(graph.nodes.size()) + " nodes (" +
            std::to_string(graph.qdq.size()) + " Q/DQ), " + std::to_string(graph.constants.size()) + " constants, " +
            std::to_string(graph.graphInputs.size()) + " inputs, " + std::to_string(graph.graphOutputs.size()) +
            " outputs, from the ONNX parser's lines; scale values and attributes are not in the "
            "log (docs/log-graph.md)");
    }
}

//! The readers' warnings of each input.
void addAllReaderWarnings(Report& report, const Inputs& inputs)
{
    if (inputs.onnx)
    {
        addReaderWarnings(report.notes, inputs.onnx->warnings);
    }
    if (inputs.layerInfo)
    {
        addReaderWarnings(report.notes, inputs.layerInfo->warnings);
    }
    if (inputs.profile)
    {
        addReaderWarnings(report.notes, inputs.profile->warnings);
    }
    if (inputs.buildLog)
    {
        addReaderWarnings(report.notes, inputs.buildLog->warnings);
    }
}

//! With times: the total and the time in standalone Q/DQ and reformat layers.
void sumLayerTimes(Report& report, const Inputs& inputs)
{
    if (inputs.timings() != nullptr)
    {
        report.hasTimings = true;
        for (const auto& mapping : report.correlation.layers)
        {
            double time = mapping.timeMs.value_or(0.0);
            report.totalMs += time;
            if (mapping.state == LayerState::kInsertedQdq)
            {
                report.standaloneQdqMs += time;
            }
            else if (mapping.state == LayerState::kInsertedReformat)
            {
                report.reformatMs += time;
            }
        }
        if (inputs.engine() == nullptr)
        {
            report.totalMs = inputs.timings()->totalAverageMs();
        }
    }
}

void finishReport(Report& report, const Inputs& inputs, std::vector<FindingSink>& sinks)
{
    gatherFindings(report, sinks);
    sortFindings(report);
    addInputNotes(report, inputs);
    addKernelNameNote(report, inputs);
    addRebuiltGraphNote(report, inputs);
    addAllReaderWarnings(report, inputs);
    sumLayerTimes(report, inputs);
}

} // namespace

Report diagnose(const Inputs& inputs, const AnalysisOptions& options, const WhileRulesRun& whileRulesRun)
{
    return Diagnosis(inputs, options, nullptr, whileRulesRun).run();
}

Report loadAndDiagnose(const InputFiles& files, const Limits& limits, const ProgressCallback& progress, Inputs& inputs,
                       const AnalysisOptions& options, const WhileRulesRun& whileRulesRun)
{
    const input_plan::InputPlan plan = input_plan::planInputs(files);
    inputs = Inputs{};
    const Loading loading{inputs, plan, limits, progress};
    return Diagnosis(inputs, options, &loading, whileRulesRun).run();
}

} // namespace qdq
