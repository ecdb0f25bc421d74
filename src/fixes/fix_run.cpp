// `qdq-doctor fix` end to end: diagnose, plan, write (streaming, src/fixes/model_writer.cpp), check with the ONNX
// checker, then diagnose and predict the fixed model in process to show what the edits buy.
#include "qdq/diagnostics.h"
#include "qdq/engine_view.h"
#include "qdq/fix.h"
#include "qdq/interrupt_cleanup.h"
#include "qdq/output_guard.h"
#include "qdq/quantized_types.h"
#include "qdq/readers.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#if defined(__GLIBC__) // defined by the C library's headers, included above
#include <malloc.h>
#endif

namespace qdq
{

namespace
{

FixSide sideOf(const Report& report, const OnnxGraph& graph)
{
    FixSide side;
    std::map<std::string, std::size_t> bySlug;
    for (const auto& finding : report.findings)
    {
        ++side.findings;
        side.errors += finding.severity == Severity::kError ? 1 : 0;
        side.warnings += finding.severity == Severity::kWarning ? 1 : 0;
        ++bySlug[finding.rule];
    }
    side.bySlug.assign(bySlug.begin(), bySlug.end());
    side.predicted = summarizePrediction(report.prediction, graph);
    return side;
}

//! The nodes each rule's warnings and errors name: a finding of the fixed model is new when it names a node its rule
//! did not name before (findings that gather many nodes, such as standalone-qdq, change their message as they shrink).
std::set<std::string> warningKeys(const Report& report)
{
    std::set<std::string> keys;
    for (const auto& finding : report.findings)
    {
        if (finding.severity == Severity::kInfo)
        {
            continue;
        }
        keys.insert(finding.rule + "|");
        for (const auto& node : finding.onnxNodes)
        {
            keys.insert(finding.rule + "|" + node);
        }
    }
    return keys;
}

bool isNewWarning(const Finding& finding, const std::set<std::string>& before)
{
    if (finding.severity == Severity::kInfo)
    {
        return false;
    }
    if (finding.onnxNodes.empty())
    {
        return before.count(finding.rule + "|") == 0;
    }
    return std::any_of(finding.onnxNodes.begin(), finding.onnxNodes.end(),
                       [&](const std::string& node) { return before.count(finding.rule + "|" + node) == 0; });
}

//! Refuses the edits whose added or changed nodes a new warning of the candidate names (new: not among baseKeys, the
//! warnings of the model the edits were planned on). When the warning names a node an edit added, only the edits that
//! added named nodes are refused in this round: the new nodes are the likelier cause, and if the warning stays without
//! them, the next round refuses the edits that changed the other named nodes. (ShuffleNet: a Q/DQ inserted for
//! int8-conv-float-output joined a fan-out whose Qs a scale unification was changing; refusing both lost the
//! unification too, every pass.) An edit that removes an error is never refused: a model TensorRT rejects is worse
//! than any warning, and the warning is resolved by the next pass's edits where a rule can, or else reported as the
//! price of that edit (ONNX Runtime's YOLOv8 export: the float biases of the convs before each Split were refused for
//! a requantize-before-split warning that the Q/DQ removal beside them brought, and the parser's error stayed).
//! Returns whether an edit was refused that was not before.
bool refuseEditsNamedByNewWarnings(const Report& candidate, const FixPlan& plan, const std::set<std::string>& baseKeys,
                                   std::map<std::string, std::string>& refused)
{
    // The nodes each edit added, and those whose inputs or producers it changed.
    std::multimap<std::string, std::size_t> addedBy;
    std::multimap<std::string, std::size_t> touchedBy;
    for (std::size_t i = 0; i < plan.edits.size(); ++i)
    {
        for (const auto& name : plan.edits[i].added)
        {
            addedBy.emplace(name, i);
        }
        for (const auto& name : plan.edits[i].touched)
        {
            touchedBy.emplace(name, i);
        }
    }
    bool refusedMore = false;
    for (const auto& finding : candidate.findings)
    {
        if (!isNewWarning(finding, baseKeys))
        {
            continue;
        }
        std::set<std::size_t> adders;
        std::set<std::size_t> touchers;
        bool namesRewrite = false;
        for (const auto& node : finding.onnxNodes)
        {
            for (auto [it, last] = addedBy.equal_range(node); it != last; ++it)
            {
                if (plan.edits[it->second].removesError)
                {
                    continue;
                }
                // A rewrite of a QOperator op is never refused: without it TensorRT cannot import the model at all,
                // and the warnings of its Q/DQ (a uint8 zero point, ...) are those of the op's own quantization, which
                // the next pass fixes where it can.
                if (plan.edits[it->second].edit.kind == FixEdit::Kind::kRewriteQuantizedOp)
                {
                    namesRewrite = true;
                    continue;
                }
                adders.insert(it->second);
            }
            for (auto [it, last] = touchedBy.equal_range(node); it != last; ++it)
            {
                if (plan.edits[it->second].edit.kind != FixEdit::Kind::kRewriteQuantizedOp &&
                    !plan.edits[it->second].removesError)
                {
                    touchers.insert(it->second);
                }
            }
        }
        if (adders.empty() && namesRewrite)
        {
            continue;
        }
        for (std::size_t edit : adders.empty() ? touchers : adders)
        {
            for (const auto& key : plan.edits[edit].keys)
            {
                const bool added = refused
                                       .emplace(key, "refused: with it the fixed model gets a new " + finding.rule +
                                                         " warning (" + finding.message + ")")
                                       .second;
                refusedMore = refusedMore || added;
            }
        }
    }
    return refusedMore;
}

//! The rules of the applied error-removing edits that added or changed a node the new warning names ("" when none
//! did): edits refuseEditsNamedByNewWarnings never refuses.
std::string errorRulesBringing(const Finding& warning, const std::vector<PlannedEdit>& applied)
{
    std::set<std::string> named(warning.onnxNodes.begin(), warning.onnxNodes.end());
    const auto namesAny = [&named](const std::vector<std::string>& nodes) {
        return std::any_of(nodes.begin(), nodes.end(), [&named](const std::string& node) { return named.count(node); });
    };
    std::string rules;
    for (const auto& edit : applied)
    {
        if (edit.removesError && (namesAny(edit.added) || namesAny(edit.touched)) &&
            rules.find(edit.rule) == std::string::npos)
        {
            rules += (rules.empty() ? "" : ", ") + edit.rule;
        }
    }
    return rules;
}

//! The skips of every pass that still stand at the end: a skip of one pass may be made by a later one (it conflicted
//! with an edit that is now in the model). Each is listed once, and only when the edits of the same kind asked for by
//! its rule did not, between them, change every one of its nodes. (Dropping a skip when such an edit changed any one
//! of its nodes hid, on DenseNet, Concat groups that no edit had unified.) An edit skipped again by a later pass keeps
//! its first place with the later pass's reason: the YOLOv8-style model's Split insertions, refused by the first pass
//! for a fan-out mismatch that pass fixed, then by the second for a new standalone Q/DQ, were listed twice.
std::vector<SkippedEdit> skipsStillStanding(std::vector<SkippedEdit> skips, const std::vector<PlannedEdit>& made)
{
    const auto sameEdit = [](const SkippedEdit& a, const SkippedEdit& b)
    {
        return a.rule == b.rule && a.edit.kind == b.edit.kind && a.edit.nodes == b.edit.nodes &&
               a.edit.tensor == b.edit.tensor && a.edit.consumers == b.edit.consumers;
    };
    const auto madeLater = [&made](const SkippedEdit& skipped)
    {
        if (skipped.edit.kind == FixEdit::Kind::kInsertQdq)
        {
            // Made: a later insertion on the tensor reaches every read this one was for (the YOLOv8-style model's
            // /n1/cv2/act/Mul_output_0, refused by the first pass, made by the second, was listed as both).
            const auto covers = [&skipped](const PlannedEdit& edit)
            {
                const auto& reads = edit.edit.consumers;
                return edit.edit.kind == FixEdit::Kind::kInsertQdq && edit.edit.tensor == skipped.edit.tensor &&
                       (reads.empty() ||
                        (!skipped.edit.consumers.empty() &&
                         std::all_of(skipped.edit.consumers.begin(), skipped.edit.consumers.end(),
                                     [&reads](const auto& read)
                                     { return std::find(reads.begin(), reads.end(), read) != reads.end(); })));
            };
            return std::any_of(made.begin(), made.end(), covers);
        }
        if (skipped.edit.nodes.empty())
        {
            return false;
        }
        // Covered: changed by a later edit of the same kind for the same rule, or removed by any edit (a set-scale
        // group that held the pair a ConvActPool removal took out, DenseNet's stem).
        std::set<std::string> changed;
        for (const auto& edit : made)
        {
            if (edit.edit.kind == skipped.edit.kind &&
                std::find(edit.rules.begin(), edit.rules.end(), skipped.rule) != edit.rules.end())
            {
                changed.insert(edit.edit.nodes.begin(), edit.edit.nodes.end());
            }
            changed.insert(edit.removed.begin(), edit.removed.end());
        }
        return std::all_of(skipped.edit.nodes.begin(), skipped.edit.nodes.end(),
                           [&changed](const std::string& node) { return changed.count(node) != 0; });
    };
    std::vector<SkippedEdit> standing;
    for (auto& skipped : skips)
    {
        if (madeLater(skipped))
        {
            continue;
        }
        const auto listed = std::find_if(standing.begin(), standing.end(),
                                         [&](const SkippedEdit& other) { return sameEdit(other, skipped); });
        if (listed == standing.end())
        {
            standing.push_back(std::move(skipped));
        }
        else
        {
            *listed = std::move(skipped); // skips come pass by pass: the later reason is the one that stands
        }
    }
    return standing;
}

struct CheckResult
{
    std::string problem; //!< the checker's or shape inference's message; empty when the model passed
    std::string error;   //!< why the check could not run (the file cannot be read as a model)
};

CheckResult runCheck(const std::string& path, const ModelCheckOptions& options)
{
    CheckResult result;
    try
    {
        result.problem = checkModelFile(path, options);
    }
    catch (const InputError& error)
    {
        result.error = error.message();
    }
    return result;
}

//! Hands the heap's free pages back to the system (glibc keeps them otherwise), so that memory freed on this thread
//! counts no more while another thread still allocates.
void releaseFreedPages()
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

//! The model alone diagnosed; holder keeps the graph the report's names point into.
Report diagnoseModelOnly(OnnxGraph graph, const std::string& path, const SimulationOptions& simulation, Inputs& holder)
{
    holder = Inputs{};
    holder.sources.push_back({InputKind::kOnnx, path, std::nullopt});
    holder.onnx = std::move(graph);
    AnalysisOptions options;
    options.simulation = simulation;
    return diagnose(holder, options);
}

//! A candidate of the fixed model, in a folder of its own: <folder>/.qdq-doctor-fix-<pid>-<n>/<the output's file name>,
//! and, when the model has external data, its data file beside it (<name>.data, ModelSink::dataLocation). The data
//! file already has the output's name, so the candidate's tensors name the output's data file: the candidate loads
//! where it is (the fixed model's diagnosis reads external scales from it) and becomes the output by two renames.
//! Removed (its files, then the folder) when it goes out of scope or is replaced, and when the process is interrupted,
//! unless kept.
class Candidate
{
public:
    Candidate() = default;
    Candidate(const Candidate&) = delete;
    Candidate& operator=(const Candidate&) = delete;
    ~Candidate() { remove(); }

    const std::string& model() const { return mModel; }
    std::string data() const { return mModel + ".data"; }
    bool hasData() const
    {
        std::error_code ignored;
        return !mModel.empty() && std::filesystem::exists(data(), ignored);
    }

    //! Makes the folder (a new one: an existing name is an error) and names the model in it.
    void create(const std::filesystem::path& parent, const std::string& folderName, const std::string& modelName)
    {
        remove();
        const std::filesystem::path folder = parent / folderName;
        if (::mkdir(folder.c_str(), 0700) != 0)
        {
            throw InputError(SourceLocation{folder.string()},
                             std::string("cannot create the fixed model's temporary folder: ") + std::strerror(errno));
        }
        mFolder = folder.string();
        mModel = (folder / modelName).string();
        mFolderCleanup.watch(mFolder, /*folder*/ true);
        mModelCleanup.watch(mModel);
        mDataCleanup.watch(data());
    }

    //! Takes over other's files (other is left empty).
    void takeFrom(Candidate& other)
    {
        remove();
        mFolder = other.mFolder;
        mModel = other.mModel;
        other.keep();
        if (!mModel.empty())
        {
            mFolderCleanup.watch(mFolder, /*folder*/ true);
            mModelCleanup.watch(mModel);
            mDataCleanup.watch(data());
        }
    }

    //! Forgets the files (they became the output, or another Candidate took them).
    void keep()
    {
        mFolder.clear();
        mModel.clear();
        mModelCleanup.release();
        mDataCleanup.release();
        mFolderCleanup.release();
    }

    void remove()
    {
        if (!mModel.empty())
        {
            std::error_code ignored;
            std::filesystem::remove(mModel, ignored);
            std::filesystem::remove(data(), ignored);
            std::filesystem::remove(mFolder, ignored); // only when empty
        }
        keep();
    }

    //! Renames the model (and its data file, first) onto output; the folder is removed. Without force nothing that
    //! exists is replaced; a data file placed for a model that then cannot be is removed again. Returns whether a data
    //! file was moved.
    bool moveInto(const std::string& output, bool force)
    {
        const bool withData = hasData();
        if (withData)
        {
            moveOutputFileIntoPlace(data(), output + ".data", force);
        }
        try
        {
            moveOutputFileIntoPlace(mModel, output, force);
        }
        catch (const InputError&)
        {
            if (withData)
            {
                std::error_code ignored;
                std::filesystem::remove(output + ".data", ignored);
            }
            throw;
        }
        std::error_code ignored;
        std::filesystem::remove(mFolder, ignored);
        keep();
        return withData;
    }

private:
    std::string mFolder;
    std::string mModel;
    InterruptCleanup mModelCleanup;
    InterruptCleanup mDataCleanup;
    InterruptCleanup mFolderCleanup;
};

//! What the fixed model may not replace, known once the first candidate is written: the output is never one of the
//! input's external data files, and the output's data file (<output>.data, written when the model has external data)
//! is refused on the output's terms (an existing file without --force; a folder, device, pipe or socket never), and
//! never when it is the input model or one of its data files, force or not (the rename would replace what the input
//! needs).
void checkOutputsAgainstInputData(const std::string& output, const std::string& source, const ModelWriteResult& written,
                                  bool force)
{
    std::error_code error;
    const auto isInputData = [&](const std::string& path)
    {
        return std::filesystem::exists(path, error) &&
               std::any_of(written.sourceDataFiles.begin(), written.sourceDataFiles.end(),
                           [&](const std::string& file) { return std::filesystem::equivalent(path, file, error); });
    };
    if (isInputData(output))
    {
        throw InputError(SourceLocation{output}, "is an external data file of the input model; write the fixed model "
                                                 "to another file");
    }
    if (written.dataBytes == 0)
    {
        return;
    }
    const std::string data = output + ".data";
    if (std::filesystem::exists(data, error) && std::filesystem::equivalent(data, source, error))
    {
        throw InputError(SourceLocation{data}, "is the input model; the fixed model's data file would replace it: "
                                               "write the fixed model under another name");
    }
    if (isInputData(data))
    {
        throw InputError(SourceLocation{data}, "is the external data file of the input model; the fixed model's data "
                                               "file would replace it: write the fixed model under another name");
    }
    checkOutputFilePath(data, force);
}

//! The input model and its diagnoses (see runFix). Held by pointer and never moved: the reports hold views of the
//! graphs' names.
struct BeforeStage
{
    Inputs inputs;
    Report full; //!< every input diagnosed: the findings fix plans from
    bool engineGiven = false;
    Inputs modelOnlyHolder; //!< with an engine given: the model alone (moved out of inputs)
    Report modelOnly;       //!< and its report, the "before" the fixed model is compared with

    const Report& report() const { return engineGiven ? modelOnly : full; }
    const OnnxGraph& graph() const { return engineGiven ? *modelOnlyHolder.onnx : *inputs.onnx; }
};

//! The newest default-domain opset the ONNX library here (Debian 12's libonnx 1.12) has schemas for.
constexpr std::int64_t kNewestCheckedOpset = 17;

//! Plan, write a candidate, diagnose it; an edit whose new nodes a new warning names is refused and the plan made
//! again. The candidate lives in the output's folder and becomes the output by a rename.
//! Check: the ONNX checker and shape inference on what is written (external data need not be present).
//!
//! Passes: the candidate is then planned as a new run of fix would plan it. When that plan has edits (one edit
//! revealed a finding; an edit skipped for a conflict can now be made; an edit refused for a warning another edit
//! caused), the candidate is fixed in turn exactly as `fix` of the output would fix it: a new warning is measured
//! on the candidate's own warnings, and no edit is refused yet. fix stops when the plan of its candidate is empty,
//! or when a pass changed nothing: in both cases fix applied to its output changes nothing.
class FixRun
{
public:
    FixRun(const InputFiles& files, const FixOptions& options, const Limits& limits, const ProgressCallback& progress,
           const FixStageCallback& stageStarts)
        : mFiles(files), mOptions(options), mLimits(limits), mProgress(progress), mStageStarts(stageStarts)
    {
        mResult.dryRun = options.dryRun;
        // The float-bias edits need the values of every quantized constant they convert, large ones included.
        mFiles.onnxReading.loadQuantizedConstants = true;
        mCandidateReading = mFiles.onnxReading;
        takeTheCalibrationCache();
    }

    FixReport run()
    {
        mStage = prepare(true);
        describeTheInput();
        checkTheOutputPath();
        mCheck.externalDataMustExist = false;
        mCheck.limits = mLimits;
        mPassBaseKeys = mBeforeKeys;
        writeCandidatesPassByPass();
        if (mStillRefusing)
        {
            fallBackWhenWritesRanOut();
        }
        if (mPass > 0)
        {
            gatherThePasses();
        }
        mPassSource.remove();
        reportTheEdits();
        compareWithTheImplicitEngine();
        tellTheTrtexecCommand();
        releaseTheFixedModel();
        if (mHasTimings)
        {
            sumTheFixedCosts();
        }
        reportTheCheck();
        moveIntoPlace();
        tell("");
        return std::move(mResult);
    }

private:
    //! Each stage's text stays under 60 characters: a status line that wraps on an 80-column terminal cannot be
    //! overwritten by the next.
    void tell(std::string_view what) const
    {
        if (mStageStarts)
        {
            mStageStarts(what);
        }
    }

    std::string diagnosedName() const { return mOptions.output.empty() ? mResult.source : mOptions.output; }

    //! --calibration-cache, or a cache among the inputs: the first pass places Q/DQ with its scales
    //! (planCalibrationFix), which needs the weights for their per-channel scales; the candidates are read without.
    void takeTheCalibrationCache()
    {
        if (!mOptions.calibrationCache.empty())
        {
            const InputKind kind = detectInputKind(mOptions.calibrationCache);
            if (kind != InputKind::kCalibrationCache)
            {
                throw InputError(SourceLocation{mOptions.calibrationCache},
                                 "given as --calibration-cache but its content is " + std::string(inputKindName(kind)));
            }
            mFiles.files.push_back(mOptions.calibrationCache);
            mCalibrationMode = true;
        }
        for (const std::string& path : mFiles.files)
        {
            mCalibrationMode =
                mCalibrationMode || (!isFolder(path) && detectInputKind(path) == InputKind::kCalibrationCache);
        }
        if (mCalibrationMode)
        {
            mFiles.onnxReading.loadWeights = true;
        }
    }

    //! The implicit engine given beside the cache: which weighted op each of its layers ran, and which in INT8
    //! (EngineView::runsQuantized). Asked before the model moves to the model-only diagnosis: the correlation's
    //! node index is keyed by the graph it was made with.
    static std::optional<ImplicitEngineRuns> implicitEngineRuns(const Inputs& inputs, const Report& report)
    {
        const EnginePlan* engine = inputs.engine();
        if (engine == nullptr || !inputs.onnx)
        {
            return std::nullopt;
        }
        AnalysisOptions options;
        const Context context{inputs, report.correlation, report.prediction, options, false, &report.buildMode};
        const EngineView view(context);
        ImplicitEngineRuns runs;
        runs.source = engine->sourcePath;
        for (const OnnxNode& node : inputs.onnx->nodes)
        {
            if (node.opType != "Conv" && node.opType != "ConvTranspose" && node.opType != "Gemm" &&
                node.opType != "MatMul")
            {
                continue;
            }
            const std::vector<std::size_t> layers = patterns::layersOf(context, node.name);
            if (layers.empty())
            {
                continue;
            }
            runs.layerOfNode[node.name] = engine->layers[layers.front()].name;
            if (view.runsQuantized(node.name))
            {
                runs.quantizedNodes.insert(node.name);
            }
        }
        countTheImplicitLayers(*inputs.onnx, report.correlation, runs);
        return runs;
    }

    //! The implicit engine's layers as the fix report counts the predicted ones (PredictionSummary).
    static void countTheImplicitLayers(const OnnxGraph& graph, const Correlation& correlation, ImplicitEngineRuns& runs)
    {
        runs.layers = correlation.layers.size();
        for (const LayerMapping& layer : correlation.layers)
        {
            runs.standaloneQdq += layer.state == LayerState::kInsertedQdq;
            bool conv = false;
            bool add = false;
            bool pool = false;
            for (const std::string_view name : layer.onnxNodes)
            {
                const OnnxNode* node = graph.findNode(name);
                const std::string_view op = node == nullptr ? std::string_view() : std::string_view(node->opType);
                conv = conv || op == "Conv" || op == "ConvTranspose";
                add = add || (op == "Add" && node->inputs.size() == 2 && !graph.isConstant(node->inputs[0]) &&
                              !graph.isConstant(node->inputs[1]));
                pool = pool || op == "MaxPool";
            }
            runs.convWithAdd += conv && add;
            runs.convActPool += conv && pool;
        }
    }

    //! With the implicit engine: each weighted op the predicted explicit engine quantizes otherwise than it did, and
    //! what the two builds' typing means for the float layers.
    void compareWithTheImplicitEngine()
    {
        if (!mResult.calibration || !mImplicit)
        {
            return;
        }
        AnalysisOptions options;
        options.simulation = mSimulation;
        const Context context{mAfterHolder, mAfter.correlation, mAfter.prediction, options, false, &mAfter.buildMode};
        const EngineView explicitEngine(context);
        CalibrationFixSummary& summary = *mResult.calibration;
        for (const auto& [node, layer] : mImplicit->layerOfNode)
        {
            const bool implicitInt8 = mImplicit->quantizedNodes.count(node) != 0;
            const bool explicitInt8 = explicitEngine.runsQuantized(node);
            if (implicitInt8 == explicitInt8)
            {
                continue;
            }
            std::string why;
            for (const auto& kept : summary.keptFloat)
            {
                why = kept.node == node ? ": " + kept.why : why;
            }
            summary.engineDifferences.push_back(
                node + ": " + (implicitInt8 ? "INT8" : "float") + " in the implicit engine (" + layer + "), " +
                (explicitInt8 ? "INT8" : "float") + " in the predicted explicit one" + why);
        }
        summary.notes.push_back(
            "the implicit build was weakly typed: TensorRT chose each layer's precision. The explicit model is for a "
            "strongly typed build, where each float layer runs in the graph's type (" +
            std::string(mOptions.autocast.enabled() ? autocastTargetName(mOptions.autocast.target) : "FP32") + " here" +
            (mOptions.autocast.enabled() ? "" : "; --autocast fp16 writes it in FP16") +
            "). Compare the two engines with qdq-doctor diff --baseline " + mImplicit->source + " --candidate " +
            (mOptions.output.empty() ? std::string("EXPLICIT.onnx") : mOptions.output));
    }

    //! The trtexec command line that builds the explicitly quantized model: no --int8, no --calib.
    void tellTheTrtexecCommand()
    {
        if (!mResult.calibration)
        {
            return;
        }
        const std::string model = mOptions.output.empty() ? "EXPLICIT.onnx" : mOptions.output;
        mResult.calibration->trtexec =
            mSimulation.typing == Typing::kWeak
                ? "trtexec --onnx=" + model + " --int8 --fp16 (weakly typed, TensorRT 10.x before 11; no --calib)"
                : "trtexec --onnx=" + model + " --stronglyTyped (a no-op in TensorRT 11, where every network is)";
    }

    //! The input model diagnosed, which planning reads. It is dropped while the candidate is read back and diagnosed
    //! (holding both models and their reports at once was the peak of fix's memory) and made again from the files
    //! when a round refuses edits and plans anew.
    std::unique_ptr<BeforeStage> prepare(bool first)
    {
        auto stage = std::make_unique<BeforeStage>();
        stage->inputs = loadInputs(mFiles, mLimits, first ? mProgress : ProgressCallback{});
        if (!stage->inputs.onnx || stage->inputs.onnx->rebuiltFromLog)
        {
            std::string where = mFiles.files.empty() ? mFiles.onnx : mFiles.files.front();
            throw InputError(SourceLocation{where}, "fix needs the ONNX model (a .onnx file) among its inputs");
        }
        if (first)
        {
            resolveTheBuildMode(stage->inputs);
        }
        if (stage->inputs.calibration)
        {
            mCache = *stage->inputs.calibration;
        }
        AnalysisOptions analysis;
        analysis.simulation = mSimulation;
        tell(first ? "diagnosing the model" : "diagnosing the model again without the refused edits");
        stage->full = diagnose(stage->inputs, analysis);
        if (first && mCalibrationMode)
        {
            mImplicit = implicitEngineRuns(stage->inputs, stage->full);
        }
        // Before: the model alone, as the fixed model will be diagnosed. (The full report's names stay valid when the
        // graph moves: they are views into its node storage.)
        stage->engineGiven = stage->inputs.engine() != nullptr || stage->inputs.timings() != nullptr;
        if (stage->engineGiven)
        {
            const std::string source = stage->inputs.onnx->sourcePath;
            stage->modelOnly =
                diagnoseModelOnly(std::move(*stage->inputs.onnx), source, mSimulation, stage->modelOnlyHolder);
        }
        return stage;
    }

    void resolveTheBuildMode(const Inputs& inputs)
    {
        mSimulation = resolveBuildMode(inputs, mOptions.buildMode);
        if (mCalibrationMode)
        {
            targetTheExplicitBuild(inputs);
        }
        if (mOptions.autocast.enabled() && mSimulation.typingAssumed)
        {
            // The autocast model is for a strongly typed build: with nothing telling the typing, both diagnoses
            // assume one (and say so), where a build log or an option that tells it is followed.
            mSimulation.typing = Typing::kStrong;
            mSimulation.typingSource = "assumed: --autocast writes the model for a strongly typed build";
            mSimulation.fp16 = false;
            mSimulation.int8 = true;
            mSimulation.precisionSource = "strongly typed: each tensor keeps the model's type";
        }
        mResult.buildMode = mSimulation;
    }

    //! --calibration-cache writes the model for a new, explicitly quantized build, not for the implicit one whose
    //! files may be given: unless the command line says otherwise, strongly typed TensorRT 11 (implicit INT8 and
    //! weak typing are gone from it), on the GPU the files tell.
    void targetTheExplicitBuild(const Inputs& inputs)
    {
        const bool engineFiles = inputs.engine() != nullptr || inputs.buildLog.has_value();
        if (mOptions.buildMode.trtVersion.empty() && (mSimulation.trtMajor == 0 || engineFiles))
        {
            mSimulation.trtMajor = 11;
            mSimulation.trtMinor = 0;
            mSimulation.trtMinorKnown = false;
            mSimulation.versionSource = "assumed: --calibration-cache writes the model for TensorRT 11, which has no "
                                        "implicit INT8 (--trt-version sets another)";
        }
        if (!mOptions.buildMode.typing && (mSimulation.typingAssumed || engineFiles))
        {
            mSimulation.typing = Typing::kStrong;
            mSimulation.typingAssumed = true;
            mSimulation.typingSource = "assumed: --calibration-cache writes the model for a strongly typed build "
                                       "(the implicit engine's files tell its own build, not this one)";
            mSimulation.fp16 = false;
            mSimulation.int8 = true;
            mSimulation.precisionSource = "strongly typed: each tensor keeps the model's type";
        }
    }

    //! A later pass's source (an earlier candidate) diagnosed again, for a round that plans it anew.
    std::unique_ptr<BeforeStage> prepareCandidate(const std::string& path)
    {
        auto stage = std::make_unique<BeforeStage>();
        tell("diagnosing the model again without the refused edits");
        stage->full =
            diagnoseModelOnly(readOnnx(path, mCandidateReading, mLimits), diagnosedName(), mSimulation, stage->inputs);
        return stage;
    }

    //! The input's side of the report, and what the cost of the fixed findings needs, kept past the stage.
    void describeTheInput()
    {
        mResult.source = mStage->graph().sourcePath;
        if (!mOptions.dryRun && mOptions.output.empty())
        {
            throw InputError(SourceLocation{mResult.source}, "fix needs -o FIXED.onnx (or --dry-run)");
        }
        mResult.before = sideOf(mStage->report(), mStage->graph());
        // What libonnx 1.12's checker cannot cover in a model with FP8/INT4/FP4 types or TensorRT-domain Q/DQ ops.
        mUncheckedQuantizedTypes = quantizedTypesUncheckedByOnnx(mStage->graph());
        mBeforeKeys = warningKeys(mStage->report());
        // (rule, cost) of each finding with edits; (rule, saving): each layer counted once.
        mHasTimings = mStage->full.hasTimings;
        for (const auto& finding : mStage->full.findings)
        {
            if (!finding.edits.empty() && finding.costMs)
            {
                mFindingCosts.emplace_back(finding.rule, *finding.costMs);
            }
            if (!finding.edits.empty() && finding.savingMs)
            {
                mFindingSavings.emplace_back(finding.rule, *finding.savingMs);
            }
        }
    }

    //! The output is checked before anything is written: it must not exist (without --force) or be the model. Its
    //! data file, written only for a model with external data, is checked once the first candidate says there is one.
    void checkTheOutputPath()
    {
        mFolder = std::filesystem::temp_directory_path();
        mCandidateName = std::filesystem::path(diagnosedName()).filename().string();
        if (mOptions.dryRun)
        {
            return;
        }
        std::error_code error;
        const std::filesystem::path output(mOptions.output);
        if (std::filesystem::exists(output, error) && std::filesystem::equivalent(output, mResult.source, error))
        {
            throw InputError(SourceLocation{mOptions.output},
                             "is the input model itself; write the fixed model to another file");
        }
        checkOutputFilePath(mOptions.output, mOptions.force);
        // Nor any other input of the command (a layer JSON, a profile, a log), --force or not.
        mOutputs.addInputs(mFiles);
        mOutputs.claim(mOptions.output);
        mFolder = std::filesystem::absolute(output).parent_path();
        // A missing output folder is made, as diagnose makes its -o folder.
        if (!std::filesystem::exists(mFolder, error))
        {
            std::filesystem::create_directories(mFolder, error);
            if (error)
            {
                throw InputError(SourceLocation{mOptions.output},
                                 "cannot create the output's folder " + mFolder.string() + ": " + error.message());
            }
        }
        else if (!std::filesystem::is_directory(mFolder, error))
        {
            throw InputError(SourceLocation{mOptions.output}, mFolder.string() + " is not a folder");
        }
    }

    //! Rounds of plan, write, diagnose: a round that refuses edits plans its pass again; a pass whose candidate
    //! still has edits to make starts the next pass from that candidate.
    void writeCandidatesPassByPass()
    {
        for (int attempt = 0; attempt < kMostWrites; ++attempt)
        {
            const std::string source = mPass == 0 ? mResult.source : mPassSource.model();
            if (mCheckResult.valid())
            {
                mCheckResult.wait(); // the check of a candidate that is not the last is dropped
            }
            planTheRound(source);
            writeTheCandidate(attempt, source);
            mStage.reset();
            diagnoseTheCandidate();
            // The first pass of --calibration-cache quantizes a float model: every warning of its candidate is new,
            // and the next pass's rules correct the placements they warn about instead.
            mStillRefusing = !(mCalibrationMode && mPass == 0) &&
                             refuseEditsNamedByNewWarnings(mAfter, mPlan, mPassBaseKeys, mRefused);
            if (mStillRefusing)
            {
                continue; // plan this pass again from its source
            }
            if (!startAnotherPass(attempt))
            {
                break;
            }
        }
    }

    void planTheRound(const std::string& source)
    {
        if (mNextPassPlan)
        {
            mPlan = std::move(*mNextPassPlan);
            mNextPassPlan.reset();
            return;
        }
        if (!mStage)
        {
            mStage = mPass == 0 ? prepare(false) : prepareCandidate(source);
        }
        tell("planning the edits");
        if (mCalibrationMode && mPass == 0)
        {
            if (!mCache)
            {
                throw InputError(SourceLocation{mResult.source}, "--calibration-cache: no cache was read");
            }
            CalibrationFixSummary summary;
            mPlan = planCalibrationFix(mStage->graph(), *mCache, summary, mRefused, mImplicit ? &*mImplicit : nullptr);
            if (mImplicit)
            {
                summary.implicitLayers = mImplicit->layers;
                summary.implicitStandaloneQdq = mImplicit->standaloneQdq;
                summary.implicitConvWithAdd = mImplicit->convWithAdd;
                summary.implicitConvActPool = mImplicit->convActPool;
            }
            mResult.calibration = std::move(summary);
            return;
        }
        mPlan = planFix(mStage->full, mStage->graph(), mOptions, mRefused);
    }

    void writeTheCandidate(int attempt, const std::string& source)
    {
        createTheCandidate(attempt);
        tell(mPass > 0          ? "writing the fixed model again: pass " + std::to_string(mPass + 1)
             : mOptions.dryRun  ? "writing the fixed model to a temporary file (dry run)"
             : mRefused.empty() ? "writing the fixed model"
                                : "writing the fixed model again without the refused edits");
        FileModelSink sink(mCandidate.model(), true);
        ModelWriteOptions writeOptions;
        writeOptions.limits = mLimits;
        ModelWriteResult written;
        try
        {
            written = writeEditedModel(source, mPlan.modelEdits, sink, writeOptions);
        }
        catch (const InputError& error)
        {
            mCandidate.remove(); // the writer removed what it wrote; the folder goes
            if (!mOptions.dryRun && error.where().path != mResult.source)
            {
                throw InputError(SourceLocation{mOptions.output}, "cannot be written: " + error.message());
            }
            throw;
        }
        if (mOptions.autocast.enabled())
        {
            autocastTheCandidate(written, sink);
        }
        if (mPass == 0)
        {
            mResult.notes = written.notes;
            if (!mOptions.dryRun)
            {
                checkOutputsAgainstInputData(mOptions.output, mResult.source, written, mOptions.force);
                if (written.dataBytes > 0)
                {
                    mOutputs.claim(mOptions.output + ".data");
                }
            }
        }
    }

    void createTheCandidate(int attempt)
    {
        try
        {
            mCandidate.create(mFolder, ".qdq-doctor-fix-" + std::to_string(::getpid()) + "-" + std::to_string(attempt),
                              mCandidateName);
        }
        catch (const InputError& error)
        {
            if (!mOptions.dryRun)
            {
                throw InputError(SourceLocation{mOptions.output}, "cannot be written: " + error.message());
            }
            throw;
        }
    }

    void autocastTheCandidate(const ModelWriteResult& written, const FileModelSink& sink)
    {
        tell("writing the float part in " + autocastTargetName(mOptions.autocast.target));
        try
        {
            std::shared_ptr<void> parsedModel;
            AutocastDataSource data;
            data.modelPath = mResult.source;
            data.ownLocation = written.dataBytes > 0 ? sink.dataLocation() : std::string();
            data.ownFolder = std::filesystem::path(mCandidate.model()).parent_path().string();
            AutocastSummary summary =
                autocastModelFile(mCandidate.model(), mOptions.autocast, mLimits, data, &parsedModel);
            // Freed beside the ONNX checker, the longest step after this one, instead of before it.
            mParsedModelRelease = std::jthread([held = std::move(parsedModel)]() mutable { held.reset(); });
            if (summary.changed || !mResult.autocast)
            {
                mAutocastChanged = mAutocastChanged || summary.changed;
                mResult.autocast = std::move(summary);
            }
        }
        catch (const InputError& error)
        {
            mCandidate.remove();
            throw InputError(SourceLocation{mResult.source}, error.message());
        }
    }

    //! The ONNX checker and shape inference run on the second core while the candidate is read back and diagnosed.
    void diagnoseTheCandidate()
    {
        startTheCheck();
        tell("diagnosing the fixed model (ONNX checker beside it)");
        mAfter = diagnoseModelOnly(readOnnx(mCandidate.model(), mCandidateReading, mLimits), diagnosedName(),
                                   mSimulation, mAfterHolder);
    }

    void startTheCheck()
    {
        mCheckResult =
            std::async(std::launch::async, [path = mCandidate.model(), this] { return runCheck(path, mCheck); });
    }

    //! After a round that refused nothing. A pass that changed nothing ends the passes: its source is the output,
    //! and this pass was what fix applied to that output does. Else: what fix would do to this candidate, planned
    //! afresh as a new run plans it. Returns whether a next pass runs.
    bool startAnotherPass(int attempt)
    {
        if (mPass == 0)
        {
            mFirstUnfixed = mPlan.unfixed;
        }
        if (mPass > 0 && !mPlan.edits.empty())
        {
            noteThePassEdits();
        }
        if (mPass > 0 && mPlan.modelEdits.empty())
        {
            return false;
        }
        FixPlan candidatePlan = planFix(mAfter, *mAfterHolder.onnx, mOptions, {});
        if (candidatePlan.modelEdits.empty() || attempt + 1 == kMostWrites)
        {
            if (!candidatePlan.modelEdits.empty())
            {
                mResult.notes.push_back("fix stopped after " + std::to_string(kMostWrites) +
                                        " writes with edits still to make; run fix again on its output");
            }
            return false;
        }
        // A next pass, as fix applied to this candidate would run: the candidate is its source, its warnings are
        // what a new warning is measured on, and no edit is refused yet.
        keepThePassEdits();
        mPassBaseKeys = warningKeys(mAfter);
        mRefused.clear();
        mPassSource.takeFrom(mCandidate);
        mNextPassPlan = std::move(candidatePlan);
        mEarlierPassesChanged = mEarlierPassesChanged || !mPlan.modelEdits.empty();
        ++mPass;
        return true;
    }

    void noteThePassEdits()
    {
        std::string rules;
        for (const auto& edit : mPlan.edits)
        {
            if (rules.find(edit.rule) == std::string::npos)
            {
                rules += (rules.empty() ? "" : ", ") + edit.rule;
            }
        }
        mResult.notes.push_back("pass " + std::to_string(mPass + 1) + ": " + std::to_string(mPlan.edits.size()) +
                                " more edit(s) (" + rules +
                                ") on the fixed model, made as a second run of fix on the output would make them");
    }

    void keepThePassEdits()
    {
        for (auto& edit : mPlan.edits)
        {
            mEarlierPasses.push_back(std::move(edit));
        }
        for (auto& skipped : mPlan.skipped)
        {
            mEarlierSkipped.push_back(std::move(skipped));
        }
    }

    //! The writes ran out while a round was still refusing edits: the last candidate has new warnings that no
    //! round has resolved. A later pass falls back on its source, the previous pass's candidate, which had none;
    //! the first pass keeps its candidate and says so (its new warnings are listed).
    void fallBackWhenWritesRanOut()
    {
        if (mPass > 0)
        {
            for (const auto& edit : mPlan.edits)
            {
                mPlan.skipped.push_back({edit.edit, edit.rule,
                                         "not made: fix stopped after " + std::to_string(kMostWrites) +
                                             " writes while edits of pass " + std::to_string(mPass + 1) +
                                             " were still refused for new warnings"});
            }
            mPlan.edits.clear();
            mPlan.modelEdits = ModelEdits{};
            mCheckResult.wait();
            mCandidate.takeFrom(mPassSource);
            startTheCheck();
            mAfter = diagnoseModelOnly(readOnnx(mCandidate.model(), mCandidateReading, mLimits), diagnosedName(),
                                       mSimulation, mAfterHolder);
        }
        mResult.notes.push_back("fix stopped after " + std::to_string(kMostWrites) +
                                " writes while edits were still refused for new warnings" +
                                (mPass > 0 ? "; the output is the model as pass " + std::to_string(mPass) + " left it"
                                           : std::string("; the new warnings below remain")) +
                                ": choose edits with --rules, or run fix again on the output");
    }

    //! Every pass's edits and the skips that still stand; what is left unfixed is the first pass's.
    void gatherThePasses()
    {
        for (auto& edit : mPlan.edits)
        {
            mEarlierPasses.push_back(std::move(edit));
        }
        mPlan.edits = std::move(mEarlierPasses);
        for (auto& skipped : mPlan.skipped)
        {
            mEarlierSkipped.push_back(std::move(skipped));
        }
        mPlan.skipped = skipsStillStanding(std::move(mEarlierSkipped), mPlan.edits);
        mPlan.unfixed = std::move(mFirstUnfixed);
    }

    //! Float biases made from INT32 ones, in a model autocast wrote with FP16/BF16 Q/DQ scales (opset 19 and later):
    //! TensorRT takes a float bias as it is (docs/rules/quantized-bias.md), but ONNX Runtime's graph optimizations,
    //! from the basic level, quantize such a bias again in the low type (a Div and a Round a conv in the optimized
    //! graph) and the outputs come out wrong. Measured with ONNX Runtime 1.30 on the zoo converted to opset 19
    //! (docs/fix.md#autocast): relative error 1.01 for mobilenetv3-small-w0.5 (0.025 with graph optimizations off,
    //! 0.022 with the bias edit alone).
    void noteFloatBiasesUnderLowScales()
    {
        if (!mResult.autocast || !mResult.autocast->qdqScalesLowered || mResult.autocast->nodesLowered == 0)
        {
            return;
        }
        const std::size_t floatBiases = static_cast<std::size_t>(
            std::count_if(mResult.edits.begin(), mResult.edits.end(),
                          [](const PlannedEdit& edit) { return edit.edit.kind == FixEdit::Kind::kFloatBias; }));
        if (floatBiases == 0)
        {
            return;
        }
        mResult.autocast->notes.push_back(
            std::to_string(floatBiases) + " float bias(es) made from INT32 ones now read " + mResult.autocast->target +
            " Q/DQ scales: TensorRT takes them as they are, but ONNX Runtime 1.30's graph optimizations (basic level "
            "and up) quantize such a bias again in " +
            mResult.autocast->target +
            " (a Div and a Round a conv in its optimized graph) and its outputs come out wrong: check this model in "
            "ONNX Runtime with graph_optimization_level ORT_DISABLE_ALL");
    }

    void reportTheEdits()
    {
        mResult.edits = std::move(mPlan.edits);
        mResult.skipped = std::move(mPlan.skipped);
        // Left to the user: what the first pass could not fix, unless a later pass did (ONNX Runtime's QOperator
        // models: their uint8 quantizers feed integer ops in the first pass, and are made symmetric once those are
        // rewritten).
        std::set<std::string> rulesAfter;
        for (const auto& finding : mAfter.findings)
        {
            rulesAfter.insert(finding.rule);
        }
        for (auto& unfixed : mPlan.unfixed)
        {
            if (mPass == 0 || rulesAfter.count(unfixed.rule) != 0)
            {
                mResult.unfixed.push_back(std::move(unfixed));
            }
        }
        noteFloatBiasesUnderLowScales();
        // Unchanged: no pass changed the model (a second pass may run and refuse everything the first refused).
        mResult.unchanged = !mEarlierPassesChanged && mPlan.modelEdits.empty() && !mAutocastChanged;
        mResult.after = sideOf(mAfter, *mAfterHolder.onnx);
        for (const auto& finding : mAfter.findings)
        {
            if (isNewWarning(finding, mBeforeKeys))
            {
                mResult.newFindings.push_back(finding.rule + ": " + finding.message);
                if (std::string errorRules = errorRulesBringing(finding, mResult.edits); !errorRules.empty())
                {
                    mResult.priceOfErrorFixes.push_back(finding.rule + " (the price of removing the " + errorRules +
                                                        " error): " + finding.message);
                }
            }
        }
    }

    //! The fixed model's graph and diagnosis are not needed past here. Freed (and their pages handed back) while the
    //! checker still runs: its shape inference grows the check's model by a value info per tensor, and with both
    //! held that was fix's peak. 500,000-node bench model: peak RSS 1.24-1.30 GiB -> 0.93-0.97 GiB
    //! (bench/README.md).
    void releaseTheFixedModel()
    {
        mAfter = Report{};
        mAfterHolder = Inputs{};
        releaseFreedPages();
    }

    //! The cost of the findings whose every edit was applied (a profile or log table gave times).
    void sumTheFixedCosts()
    {
        std::set<std::string> appliedRules;
        for (const auto& edit : mResult.edits)
        {
            appliedRules.insert(edit.rules.begin(), edit.rules.end());
        }
        // A rule counts when its edits were applied and none skipped.
        auto fullyApplied = [&](const std::string& rule)
        {
            return appliedRules.count(rule) != 0 &&
                   std::none_of(mResult.skipped.begin(), mResult.skipped.end(),
                                [&rule](const SkippedEdit& skipped) { return skipped.rule == rule; });
        };
        auto sumApplied = [&](const std::vector<std::pair<std::string, double>>& values) -> std::optional<double>
        {
            double sum = 0.0;
            bool any = false;
            for (const auto& [findingRule, value] : values)
            {
                // Captured by name: clang 14 (the fuzz build's compiler) cannot capture a structured binding.
                const std::string& rule = findingRule;
                if (fullyApplied(rule))
                {
                    sum += value;
                    any = true;
                }
            }
            return any ? std::optional<double>(sum) : std::nullopt;
        };
        mResult.fixedCostMs = sumApplied(mFindingCosts);
        mResult.expectedSavingMs = sumApplied(mFindingSavings);
    }

    //! The check of the last candidate (started above): the input model is checked too when it failed.
    void reportTheCheck()
    {
        if (mCheckResult.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
        {
            tell("waiting for the ONNX checker and shape inference");
        }
        const CheckResult candidateCheck = mCheckResult.get();
        mResult.notes.insert(mResult.notes.end(), mUncheckedQuantizedTypes.begin(), mUncheckedQuantizedTypes.end());
        if (!candidateCheck.error.empty())
        {
            mResult.checker = "not run: " + candidateCheck.error;
        }
        else if (candidateCheck.problem.empty())
        {
            mResult.checker = "passed";
        }
        else if (mResult.autocast && mResult.autocast->opset > kNewestCheckedOpset)
        {
            checkWithoutShapeInference(candidateCheck);
        }
        else
        {
            tell("checking the input model too");
            const CheckResult original = runCheck(mResult.source, mCheck);
            mResult.checker =
                candidateCheck.problem + (original.error.empty() && original.problem == candidateCheck.problem
                                              ? " (the input model fails the same way)"
                                              : "");
        }
    }

    //! Debian's libonnx 1.12 knows opsets up to 17: its shape inference applies QuantizeLinear-13's schema, which
    //! has no FLOAT16 input. What it can check is the checker's part without shape inference.
    void checkWithoutShapeInference(const CheckResult& candidateCheck)
    {
        ModelCheckOptions checkerOnly = mCheck;
        checkerOnly.inferShapes = false;
        const CheckResult structural = runCheck(mCandidate.model(), checkerOnly);
        const std::string unchecked = "shape inference and type checks not run: the ONNX library here (1.12) knows "
                                      "opsets up to 17 and the model is opset " +
                                      std::to_string(mResult.autocast->opset) +
                                      " (check it with ONNX Runtime, tests/fixtures/autocast_compare.py)";
        mResult.checker = structural.error.empty() && structural.problem.empty()
                              ? "ONNX checker passed; " + unchecked
                              : (structural.error.empty() ? structural.problem : structural.error) + "; " + unchecked;
        mResult.notes.push_back("not checked: " + unchecked + "; shape inference said: " + candidateCheck.problem);
    }

    void moveIntoPlace()
    {
        mResult.output = mOptions.output;
        if (!mOptions.dryRun)
        {
            if (mCandidate.moveInto(mOptions.output, mOptions.force)) // it is the output now
            {
                mResult.dataFile = mOptions.output + ".data";
            }
            mResult.written = true;
        }
    }

    static constexpr int kMostWrites = 12;

    InputFiles mFiles; //!< the caller's, with the ONNX model read for editing
    const FixOptions& mOptions;
    const Limits& mLimits;
    const ProgressCallback& mProgress;
    const FixStageCallback& mStageStarts;
    FixReport mResult;
    OnnxReadOptions mCandidateReading;           //!< the fixed model's reading: no weights
    bool mCalibrationMode = false;               //!< --calibration-cache (or a cache among the inputs)
    std::optional<CalibrationCache> mCache;      //!< its scales
    std::optional<ImplicitEngineRuns> mImplicit; //!< the implicit engine given beside it
    SimulationOptions mSimulation;
    std::unique_ptr<BeforeStage> mStage;
    std::vector<std::string> mUncheckedQuantizedTypes;
    std::set<std::string> mBeforeKeys;
    bool mHasTimings = false;
    std::vector<std::pair<std::string, double>> mFindingCosts;
    std::vector<std::pair<std::string, double>> mFindingSavings;
    std::filesystem::path mFolder;
    OutputGuard mOutputs;
    std::string mCandidateName;
    ModelCheckOptions mCheck;
    std::future<CheckResult> mCheckResult;
    std::map<std::string, std::string> mRefused; //!< this pass's refused edits (PlannedEdit::keys) and why
    std::set<std::string> mPassBaseKeys;         //!< the warnings of this pass's source: what "new" is measured on
    FixPlan mPlan;
    std::optional<FixPlan> mNextPassPlan; //!< planned on the last candidate, which the next pass starts from
    std::vector<PlannedEdit> mEarlierPasses;
    std::vector<SkippedEdit> mEarlierSkipped;
    std::vector<UnfixedFinding> mFirstUnfixed;
    Inputs mAfterHolder;
    Report mAfter;
    Candidate mCandidate;
    Candidate mPassSource; //!< the candidate a later pass edits (the model itself in the first pass)
    int mPass = 0;
    bool mEarlierPassesChanged = false; //!< a pass before this one had edits to write
    bool mStillRefusing = false;      //!< the last write's diagnosis refused more edits: the writes ran out in a round
    bool mAutocastChanged = false;    //!< --autocast changed a candidate
    std::jthread mParsedModelRelease; //!< frees the model autocast parsed (joined when a new one starts, or at the end)
};

} // namespace

FixReport runFix(const InputFiles& files, const FixOptions& options, const Limits& limits,
                 const ProgressCallback& progress, const FixStageCallback& stageStarts)
{
    return FixRun(files, options, limits, progress, stageStarts).run();
}

} // namespace qdq
