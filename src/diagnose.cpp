// diagnose: correlation, prediction and every rule, with findings sorted worst first.
#include "qdq/analysis.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

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

std::string missingInputNote(const RuleInfo& info, bool haveOnnx, bool haveEngine)
{
    if ((info.needs & kNeedsOnnx) && !haveOnnx)
    {
        return info.slug + ": not checked, needs the ONNX model";
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

} // namespace

Report diagnose(const Inputs& inputs, const AnalysisOptions& options)
{
    Report report;
    report.inputs = inputs.sources;
    const bool haveOnnx = inputs.onnx.has_value();
    const bool haveEngine = inputs.engine() != nullptr;
    const auto& rules = allRules();
    std::vector<FindingSink> sinks(rules.size());
    // Rules that read the prediction go last, so that the others can start as soon as the correlation is ready.
    std::vector<std::size_t> order;
    std::vector<std::size_t> readingPrediction;
    for (std::size_t r = 0; r < rules.size(); ++r)
    {
        std::string note = missingInputNote(rules[r]->info(), haveOnnx, haveEngine);
        if (!note.empty())
        {
            report.notes.push_back(note);
        }
        else if (haveOnnx || haveEngine || inputs.buildLog.has_value())
        {
            ((rules[r]->info().needs & kReadsPrediction) != 0 ? readingPrediction : order).push_back(r);
        }
    }
    order.insert(order.end(), readingPrediction.begin(), readingPrediction.end());

    // Two threads. One correlates the engine with the model, the other predicts the engine from the model; each
    // then takes rules from the list (every rule is independent and read-only, and writes its own sink). A rule
    // waits for the correlation, and a rule that reads the prediction waits for it too. Findings are gathered in
    // catalogue order below, so the result does not depend on scheduling.
    enum : int
    {
        kPending = 0,
        kReady = 1,
        kFailed = 2
    };
    std::atomic<int> correlationState{kPending};
    std::atomic<int> predictionState{kPending};
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
    const Prediction noPrediction;
    const Context context{inputs, report.correlation, report.prediction, options};
    const Context contextWithoutPrediction{inputs, report.correlation, noPrediction, options};
    std::atomic<std::size_t> next{0};
    std::exception_ptr ruleError;
    std::mutex ruleErrorMutex;
    const auto runRules = [&]
    {
        if (waitFor(correlationState) != kReady)
        {
            return;
        }
        for (std::size_t k = next++; k < order.size(); k = next++)
        {
            const std::size_t r = order[k];
            const bool readsPrediction = (rules[r]->info().needs & kReadsPrediction) != 0;
            if (readsPrediction && waitFor(predictionState) != kReady)
            {
                return;
            }
            try
            {
                rules[r]->check(readsPrediction ? context : contextWithoutPrediction, sinks[r]);
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
    std::exception_ptr predictorError;
    std::thread helper(
        [&]
        {
            try
            {
                if (inputs.onnx && options.predict)
                {
                    report.prediction = predictEngine(*inputs.onnx);
                }
                publish(predictionState, kReady);
            }
            catch (...)
            {
                predictorError = std::current_exception();
                publish(predictionState, kFailed);
            }
            runRules();
        });
    std::exception_ptr correlationError;
    try
    {
        report.correlation = correlate(inputs);
        // Lazily built indexes are built before the rules share them.
        if (const EnginePlan* plan = inputs.engine())
        {
            plan->tensorIndex();
        }
        publish(correlationState, kReady);
    }
    catch (...)
    {
        correlationError = std::current_exception();
        publish(correlationState, kFailed);
    }
    runRules();
    helper.join();
    if (correlationError || predictorError || ruleError)
    {
        std::rethrow_exception(correlationError ? correlationError : predictorError ? predictorError : ruleError);
    }

    FindingSink sink;
    for (auto& ruleSink : sinks)
    {
        for (auto& finding : ruleSink.findings())
        {
            sink.add(std::move(finding));
        }
    }

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

    if (inputs.planFromProfile)
    {
        report.notes.push_back("no layer list given (--exportLayerInfo JSON or a verbose build log): the profile's "
                               "layer names stand in for it, without layer types or tensor precisions");
    }
    for (const auto& note : report.correlation.notes)
    {
        report.notes.push_back(note);
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
    return report;
}

} // namespace qdq
