// diagnose: correlation, prediction and every rule, with findings sorted worst first.
#include "qdq/analysis.h"

#include <algorithm>
#include <atomic>
#include <exception>
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
    // The prediction reads only the model: it runs beside the correlation.
    std::thread predictor;
    std::exception_ptr predictorError;
    if (inputs.onnx && options.predict)
    {
        predictor = std::thread(
            [&]
            {
                try
                {
                    report.prediction = predictEngine(*inputs.onnx);
                }
                catch (...)
                {
                    predictorError = std::current_exception();
                }
            });
    }
    std::exception_ptr correlationError;
    try
    {
        report.correlation = correlate(inputs);
    }
    catch (...)
    {
        correlationError = std::current_exception();
    }
    if (predictor.joinable())
    {
        predictor.join();
    }
    if (correlationError || predictorError)
    {
        std::rethrow_exception(correlationError ? correlationError : predictorError);
    }
    Context context{inputs, report.correlation, report.prediction, options};
    const bool haveOnnx = inputs.onnx.has_value();
    const bool haveEngine = inputs.engine() != nullptr;

    // Rules are independent and read-only: run them on two threads, each rule into its own sink, and gather the
    // sinks in catalogue order so the result does not depend on scheduling. Lazily built indexes are built first.
    if (const EnginePlan* plan = inputs.engine())
    {
        plan->tensorIndex();
    }
    const auto& rules = allRules();
    std::vector<FindingSink> sinks(rules.size());
    std::vector<char> run(rules.size(), 0);
    for (std::size_t r = 0; r < rules.size(); ++r)
    {
        std::string note = missingInputNote(rules[r]->info(), haveOnnx, haveEngine);
        if (!note.empty())
        {
            report.notes.push_back(note);
            continue;
        }
        run[r] = haveOnnx || haveEngine || inputs.buildLog.has_value();
    }
    std::atomic<std::size_t> next{0};
    auto worker = [&]
    {
        for (std::size_t r = next++; r < rules.size(); r = next++)
        {
            if (run[r])
            {
                rules[r]->check(context, sinks[r]);
            }
        }
    };
    std::thread helper(worker);
    worker();
    helper.join();
    FindingSink sink;
    for (auto& ruleSink : sinks)
    {
        for (auto& finding : ruleSink.findings())
        {
            sink.add(std::move(finding));
        }
    }

    // De-duplicate (same rule on the same nodes and layers) and sort worst first.
    std::set<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>> seen;
    for (auto& finding : sink.findings())
    {
        std::sort(finding.onnxNodes.begin(), finding.onnxNodes.end());
        finding.onnxNodes.erase(std::unique(finding.onnxNodes.begin(), finding.onnxNodes.end()),
                                finding.onnxNodes.end());
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
