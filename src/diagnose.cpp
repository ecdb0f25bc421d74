// diagnose: correlation, prediction and every rule, with findings sorted worst first.
#include "qdq/analysis.h"
#include "qdq/load_inputs.h"
#include "qdq/patterns.h"
#include "qdq/prediction_check.h"
#include "qdq/root_causes.h"

#include "src/input_plan.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
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

// Two threads. The calling one reads the files other than the ONNX model (pipelined form), correlates the engine
// with the model, hands the report to whileRulesRun, then takes rules. The helper reads the ONNX model (pipelined
// form), predicts the engine from it, then takes rules. The engine's tensor index is built by whichever is free
// first. Every rule is independent and read-only and writes its own sink; every rule waits for the index, a rule
// that reads the correlation (kReadsCorrelation) for it, and one that reads the prediction (kReadsPrediction) for
// that. Findings are gathered in catalogue order, so the result does not depend on scheduling.
Report runDiagnosis(const Inputs& inputs, const AnalysisOptions& options, const Loading* loading,
                    const WhileRulesRun& whileRulesRun)
{
    Report report;
    const auto& rules = allRules();
    std::vector<FindingSink> sinks(rules.size());
    std::vector<std::size_t> order; //!< the order rules are taken in (filled once the inputs are known)

    enum : int
    {
        kPending = 0,
        kReady = 1,
        kFailed = 2
    };
    std::atomic<int> inputsState{kPending}; // published once the rule order is known, too
    std::atomic<int> graphState{kPending};
    std::atomic<int> correlationState{kPending};
    std::atomic<int> predictionState{kPending};
    std::atomic<int> indexState{kPending};
    const auto waitFor = [](std::atomic<int>& state)
    {
        int value = state.load(std::memory_order_acquire);
        while (value == kPending)
        {
            state.wait(kPending, std::memory_order_acquire);
            value = state.load(std::memory_order_acquire);
        }
        return value;
    };
    const auto publish = [](std::atomic<int>& state, int value)
    {
        state.store(value, std::memory_order_release);
        state.notify_all();
    };
    // A rule sees the correlation and the prediction only when its flags say it reads them; otherwise empty ones,
    // so that a rule missing a flag fails its tests instead of racing the thread that makes them.
    const Prediction noPrediction;
    const Correlation noCorrelation;
    const Context contexts[2][2] = {
        {{inputs, noCorrelation, noPrediction, options}, {inputs, noCorrelation, report.prediction, options}},
        {{inputs, report.correlation, noPrediction, options}, {inputs, report.correlation, report.prediction, options}},
    };
    // Holding the prediction against the engine is one more task for the two threads, taken with the rules that
    // read the prediction (about 0.2 s on a 100,000-layer engine: run beside the rules, it costs little wall time).
    const std::size_t kPredictionCheckTask = rules.size();
    std::atomic<std::size_t> next{0};
    std::exception_ptr ruleError;
    std::mutex ruleErrorMutex;
    const auto runRules = [&]
    {
        if (waitFor(indexState) != kReady)
        {
            return;
        }
        for (std::size_t k = next++; k < order.size(); k = next++)
        {
            const std::size_t r = order[k];
            if (r == kPredictionCheckTask)
            {
                if (waitFor(correlationState) != kReady || waitFor(predictionState) != kReady)
                {
                    return;
                }
                try
                {
                    if (!report.prediction.layers.empty())
                    {
                        report.predictionCheck =
                            checkPrediction(report.prediction, *inputs.onnx, *inputs.engine(), report.correlation);
                    }
                }
                catch (...)
                {
                    std::lock_guard<std::mutex> lock(ruleErrorMutex);
                    if (!ruleError)
                    {
                        ruleError = std::current_exception();
                    }
                }
                continue;
            }
            const bool readsCorrelation = (rules[r]->info().needs & kReadsCorrelation) != 0;
            const bool readsPrediction = (rules[r]->info().needs & kReadsPrediction) != 0;
            if ((readsCorrelation && waitFor(correlationState) != kReady) ||
                (readsPrediction && waitFor(predictionState) != kReady))
            {
                return;
            }
            try
            {
                const Context& context = contexts[readsCorrelation ? 1 : 0][readsPrediction ? 1 : 0];
                if ((rules[r]->info().needs & kReadsModelValues) && context.inputs.onnx &&
                    context.inputs.onnx->rebuiltFromLog)
                {
                    // The graph lacks the values the rule reads: it judges the engine artifacts alone.
                    const Context withoutGraph{context.inputs, context.correlation, context.prediction, context.options,
                                               true};
                    rules[r]->check(withoutGraph, sinks[r]);
                }
                else
                {
                    rules[r]->check(context, sinks[r]);
                }
                for (auto& finding : sinks[r].findings())
                {
                    std::sort(finding.onnxNodes.begin(), finding.onnxNodes.end());
                    finding.onnxNodes.erase(std::unique(finding.onnxNodes.begin(), finding.onnxNodes.end()),
                                            finding.onnxNodes.end());
                }
            }
            catch (...)
            {
                std::lock_guard<std::mutex> lock(ruleErrorMutex);
                if (!ruleError)
                {
                    ruleError = std::current_exception();
                }
            }
        }
    };

    const bool onnxOnHelper = loading != nullptr && loading->plan.separateOnnx.has_value();
    std::exception_ptr onnxError;
    std::exception_ptr predictorError;
    std::exception_ptr indexError;
    // The engine's lazily built tensor index (the rules share it; the correlation does not use it) is built by the
    // thread that is free first: the calling one while the model is still being read, else the helper.
    std::atomic<bool> indexClaimed{false};
    const auto buildIndex = [&]
    {
        if (indexClaimed.exchange(true))
        {
            return;
        }
        try
        {
            if (const EnginePlan* plan = inputs.engine())
            {
                plan->tensorIndex();
            }
            publish(indexState, kReady);
        }
        catch (...)
        {
            indexError = std::current_exception();
            publish(indexState, kFailed);
        }
    };
    std::thread helper(
        [&]
        {
            if (onnxOnHelper)
            {
                try
                {
                    input_plan::readInput(loading->inputs, loading->plan.files[*loading->plan.separateOnnx],
                                          loading->limits, loading->progress);
                    publish(graphState, kReady);
                }
                catch (...)
                {
                    onnxError = std::current_exception();
                    publish(graphState, kFailed);
                    publish(predictionState, kFailed);
                    publish(indexState, kFailed);
                    return;
                }
            }
            // The model is complete once this thread has read it, or else once all inputs are.
            // The simulation's build flags and TensorRT version come from the build log when one is given: wait
            // for it (the other inputs do not change the prediction, so the model's read overlaps theirs).
            const bool logDecidesSimulation =
                !options.simulation && onnxOnHelper &&
                std::any_of(loading->plan.files.begin(), loading->plan.files.end(),
                            [](const auto& file) { return file.kind == InputKind::kBuildLog; });
            if (((!onnxOnHelper || logDecidesSimulation) && waitFor(inputsState) != kReady) ||
                inputsState.load(std::memory_order_acquire) == kFailed)
            {
                publish(predictionState, kFailed);
                publish(indexState, kFailed);
                return;
            }
            try
            {
                if (inputs.onnx && options.predict)
                {
                    report.prediction = predictEngine(*inputs.onnx, options.simulation ? *options.simulation
                                                                                       : simulationOptionsFor(inputs));
                }
                publish(predictionState, kReady);
            }
            catch (...)
            {
                predictorError = std::current_exception();
                publish(predictionState, kFailed);
            }
            if (waitFor(inputsState) != kReady)
            {
                publish(indexState, kFailed);
                return;
            }
            buildIndex();
            runRules();
        });

    if (loading != nullptr)
    {
        // Errors name the first bad file: one read here before the ONNX model's.
        std::exception_ptr loadError;
        try
        {
            for (std::size_t i = 0; i < loading->plan.files.size(); ++i)
            {
                if (!onnxOnHelper || i != *loading->plan.separateOnnx)
                {
                    input_plan::readInput(loading->inputs, loading->plan.files[i], loading->limits, loading->progress);
                }
            }
        }
        catch (...)
        {
            loadError = std::current_exception();
        }
        if (!loadError)
        {
            try
            {
                input_plan::finishInputs(loading->inputs, loading->plan);
            }
            catch (...)
            {
                loadError = std::current_exception();
            }
        }
        if (!loadError && onnxOnHelper && graphState.load(std::memory_order_acquire) == kPending)
        {
            buildIndex();
        }
        if (onnxOnHelper && waitFor(graphState) != kReady && !loadError)
        {
            loadError = onnxError;
        }
        if (loadError)
        {
            publish(inputsState, kFailed);
            publish(correlationState, kFailed);
            helper.join();
            std::rethrow_exception(loadError);
        }
    }

    std::exception_ptr correlationError;
    try
    {
        report.inputs = inputs.sources;
        const bool haveOnnx = inputs.onnx.has_value();
        const bool haveEngine = inputs.engine() != nullptr;
        const bool graphRebuilt = haveOnnx && inputs.onnx->rebuiltFromLog;
        // Rules that need neither the correlation nor the prediction first (they can start while both are made),
        // then those that need the correlation, then those that also need the prediction.
        std::vector<std::size_t> readingCorrelation;
        std::vector<std::size_t> readingPrediction;
        for (std::size_t r = 0; r < rules.size(); ++r)
        {
            std::string note = missingInputNote(rules[r]->info(), haveOnnx, haveEngine, graphRebuilt);
            // A rebuilt graph without Q/DQ nodes has no scale values to miss: no note about them.
            const bool valuesMissed = graphRebuilt && !inputs.onnx->qdq.empty();
            if (!note.empty())
            {
                if (valuesMissed || !graphRebuilt || !(rules[r]->info().needs & kReadsModelValues))
                {
                    report.notes.push_back(note);
                }
            }
            else if (haveOnnx || haveEngine || inputs.buildLog.has_value())
            {
                if ((rules[r]->info().needs & kReadsModelValues) && valuesMissed)
                {
                    report.notes.push_back(rules[r]->info().slug +
                                           ": the model's part not checked, needs the ONNX model (the build log has no "
                                           "scale values); checked on the engine artifacts alone");
                }
                const unsigned needs = rules[r]->info().needs;
                ((needs & kReadsPrediction) != 0    ? readingPrediction
                 : (needs & kReadsCorrelation) != 0 ? readingCorrelation
                                                    : order)
                    .push_back(r);
            }
        }
        order.insert(order.end(), readingCorrelation.begin(), readingCorrelation.end());
        if (haveOnnx && haveEngine && options.predict && !inputs.engine()->layers.empty())
        {
            order.push_back(kPredictionCheckTask);
        }
        order.insert(order.end(), readingPrediction.begin(), readingPrediction.end());
        publish(inputsState, kReady);
        report.correlation = correlate(inputs);
        publish(correlationState, kReady);
    }
    catch (...)
    {
        correlationError = std::current_exception();
        publish(inputsState, kFailed);
        publish(correlationState, kFailed);
    }
    std::exception_ptr callbackError;
    if (!correlationError && whileRulesRun)
    {
        try
        {
            whileRulesRun(report);
        }
        catch (...)
        {
            callbackError = std::current_exception();
        }
    }
    runRules();
    helper.join();
    for (const std::exception_ptr& error : {correlationError, predictorError, indexError, ruleError, callbackError})
    {
        if (error)
        {
            std::rethrow_exception(error);
        }
    }
    finishReport(report, inputs, sinks);
    attributeRootCauses(report, inputs);
    return report;
}

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

void finishReport(Report& report, const Inputs& inputs, std::vector<FindingSink>& sinks)
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

    // De-duplicate (same rule on the same nodes and layers; node lists were sorted by the workers) and sort worst
    // first.
    std::set<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>> seen;
    for (auto& finding : sink.findings())
    {
        if (seen.emplace(finding.rule, finding.onnxNodes, finding.engineLayers).second)
        {
            report.findings.push_back(std::move(finding));
        }
    }
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

    // A build that failed with an error no finding explains: say so first, or "No findings" reads as a clean build.
    if (inputs.buildLog && !inputs.buildLog->hasEngineBlock && !inputs.buildLog->errors.empty())
    {
        const BuildLog& log = *inputs.buildLog;
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
    if (const EnginePlan* plan = inputs.engine(); plan != nullptr && !plan->layers.empty())
    {
        // kernel-without-tensor-cores reads kernel names: say when no file gives any.
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

} // namespace

Report diagnose(const Inputs& inputs, const AnalysisOptions& options, const WhileRulesRun& whileRulesRun)
{
    return runDiagnosis(inputs, options, nullptr, whileRulesRun);
}

Report loadAndDiagnose(const InputFiles& files, const Limits& limits, const ProgressCallback& progress, Inputs& inputs,
                       const AnalysisOptions& options, const WhileRulesRun& whileRulesRun)
{
    const input_plan::InputPlan plan = input_plan::planInputs(files);
    inputs = Inputs{};
    const Loading loading{inputs, plan, limits, progress};
    return runDiagnosis(inputs, options, &loading, whileRulesRun);
}

} // namespace qdq
