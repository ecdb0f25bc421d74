// `qdq-doctor fix`: the findings' graph edits applied to the user's model, written as a new model, and what the
// correction buys (a second diagnosis and prediction of the fixed graph). docs/fix.md, docs/fix-schema.md.
#pragma once

#include "qdq/analysis.h"
#include "qdq/autocast.h"
#include "qdq/load_inputs.h"
#include "qdq/model_edit.h"
#include "qdq/predict.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace qdq
{

struct FixOptions
{
    std::string output;             //!< FIXED.onnx; empty only with dryRun
    std::vector<std::string> rules; //!< slugs whose edits are applied; empty: every fixable rule
    bool dryRun = false;            //!< write nothing; the report is the same
    bool force = false;             //!< replace an existing output
    BuildModeRequest buildMode;     //!< --trt-version, --strongly-typed, --weakly-typed
    AutocastOptions autocast;       //!< --autocast fp16|bf16, --autocast-io (docs/fix.md#autocast)
    //! --calibration-cache CACHE: the FP32 model is given the Q/DQ of an explicitly quantized build, with the scales
    //! of an implicit build's calibration cache or a dynamic-range file (docs/fix.md#calibration-cache).
    std::string calibrationCache;
};

//! fix --calibration-cache: what the cache held and where its scales went (docs/fix.md#calibration-cache).
struct CalibrationFixSummary
{
    std::string cache;     //!< the file
    std::string header;    //!< "TRT-8401-EntropyCalibration2"; empty for a dynamic-range file
    std::string version;   //!< the TensorRT version the header encodes ("8.4.1")
    std::string algorithm; //!< "EntropyCalibration2", ...
    std::size_t entries = 0;
    std::size_t used = 0;                     //!< entries whose scale a new Q/DQ took
    std::vector<std::string> internalNames;   //!< TensorRT's own tensors ("(Unnamed Layer* 5) [Constant]_output")
    std::vector<std::string> namesNotInModel; //!< other names the model lacks (another export of the network)
    std::size_t quantizedOps = 0;             //!< weighted ops that run INT8 with the new Q/DQ
    std::size_t weightQdq = 0;                //!< Q/DQ pairs on weights (per-channel scales from the weights)
    std::size_t activationQdq = 0;            //!< Q/DQ pairs on activations (scales from the cache)
    //! An op that stays float, and why (no scale in the cache for a tensor it needs, no weights to compute scales
    //! from, a Concat whose inputs' scales are too far apart).
    struct KeptFloat
    {
        std::string node;
        std::string why;
    };
    std::vector<KeptFloat> keptFloat;
    std::int64_t opsetFrom = 0; //!< the model's default-domain opset
    std::int64_t opsetTo = 0;   //!< the output's (13 at least: per-channel weight scales need the axis attribute)
    std::vector<std::string> rewrittenForOpset; //!< nodes rewritten for the raised opset ("Unsqueeze_12: axes input")
    std::string trtexec;                        //!< the trtexec command line that builds the result
    //! With the implicit engine's layer list or log: that file, and each weighted op whose quantization the
    //! predicted explicit engine does not share with it, and why.
    std::string implicitEngine;
    std::size_t implicitLayers = 0;
    std::size_t implicitStandaloneQdq = 0;
    std::size_t implicitConvWithAdd = 0;
    std::size_t implicitConvActPool = 0;
    std::vector<std::string> engineDifferences;
    std::vector<std::string> notes;
};

//! What the implicit engine given beside the cache ran, node by node: fix --calibration-cache quantizes what ran INT8
//! there and keeps float what ran float.
struct ImplicitEngineRuns
{
    std::string source;                             //!< the layer list or build log
    std::map<std::string, std::string> layerOfNode; //!< weighted ONNX node -> the layer that runs it
    std::set<std::string> quantizedNodes;           //!< those whose layer ran INT8 (EngineView::runsQuantized)
    std::size_t layers = 0;
    std::size_t standaloneQdq = 0; //!< layers that run Q/DQ nodes alone
    std::size_t convWithAdd = 0;   //!< layers that run a conv and an Add
    std::size_t convActPool = 0;   //!< layers that run a conv and a MaxPool
};

//! What an edit does to the numbers the model computes, from the scales alone (docs/fix.md#numeric-cost): how much
//! coarser the rounding becomes and how much of the old range the new one leaves out (values there are clamped).
struct NumericCost
{
    std::optional<double> stepGrowth;   //!< new scale / old scale, the largest over the edit's Q/DQ; none: no old step
    std::optional<double> clippedShare; //!< share of an old range outside the new one, the largest; none: unknown
    std::string summary;                //!< printed: "rounding step x2.008, clips nothing of the old range"
};

//! One edit of the plan: what a finding asked for and what it did to the model.
struct PlannedEdit
{
    FixEdit edit;
    std::string rule;                 //!< the slug of the finding that asked for it
    std::string finding;              //!< that finding's message
    std::vector<std::string> rules;   //!< every rule that asked for the same edit (rule first)
    std::vector<std::string> added;   //!< nodes and initializers added
    std::vector<std::string> removed; //!< nodes removed
    std::vector<std::string> changed; //!< nodes whose inputs changed ("Add_36 input 1: a -> b")
    std::string scale;                //!< the scale used, printed ("0.0118365 from Q_15: why"), for inserts
    std::vector<std::string> keys;    //!< identify the findings' edits this one carries out (see planFix)
    std::vector<std::string> touched; //!< nodes of the model whose inputs or producers the edit changes
    //! A finding of severity error asked for it: an edit that removes what TensorRT rejects is never refused for a
    //! warning it brings (fix_run.cpp: refuseEditsNamedByNewWarnings).
    bool removesError = false;
    //! kUnwrapPlugin: the scales the plugin takes over, one per removed DQ (its input) or Q (its output).
    struct PluginScale
    {
        std::string side;   //!< "input" or "output"
        std::string tensor; //!< the plugin's input or output tensor
        std::string from;   //!< the DQ or Q that carried it
        std::optional<double> scale;
        std::optional<double> zeroPoint;
    };
    std::vector<PluginScale> pluginScales;
    //! Set for the edits that change numbers by a scale (symmetric INT8, one scale for a group, an inserted Q/DQ) and
    //! for a float bias (which changes none).
    std::optional<NumericCost> numericCost;
};

//! An edit that was asked for and not applied, and why.
struct SkippedEdit
{
    FixEdit edit;
    std::string rule;
    std::string why;
};

//! A finding that `fix` leaves to the user, and why.
struct UnfixedFinding
{
    std::string rule;
    std::string message;
    std::string why;
};

//! The model before or after the fix, diagnosed from the model alone.
struct FixSide
{
    std::size_t findings = 0;
    std::size_t errors = 0;
    std::size_t warnings = 0;
    std::vector<std::pair<std::string, std::size_t>> bySlug; //!< slug -> findings, sorted by slug
    PredictionSummary predicted;
};

struct FixReport
{
    std::string source; //!< the model
    std::string output; //!< the fixed model ("" in a dry run without -o)
    bool dryRun = false;
    bool written = false;   //!< a file was written
    bool unchanged = false; //!< no edit applied: the output is a byte-identical copy (but for dataFile's locations)
    //! The external data file written beside the output (output + ".data"), or "" when the model has none to copy.
    std::string dataFile;
    std::vector<PlannedEdit> edits;
    std::vector<SkippedEdit> skipped;
    std::vector<UnfixedFinding> unfixed;
    FixSide before;
    FixSide after;
    //! Findings of the fixed model that the original did not have (by slug and message): new warnings.
    std::vector<std::string> newFindings;
    //! The new warnings that only edits removing an error brought, each with that error's rule: kept as the price of
    //! removing the error, since TensorRT rejects or miscompiles the model without those edits.
    std::vector<std::string> priceOfErrorFixes;
    //! With a profile: the measured cost of the findings whose edits were all applied (a layer may count in several
    //! findings).
    std::optional<double> fixedCostMs;
    //! With a profile: what those fixes are expected to save in the given engine, each layer counted once (their
    //! findings' savingMs, docs/savings.md).
    std::optional<double> expectedSavingMs;
    SimulationOptions buildMode;    //!< the build mode both diagnoses assumed (resolveBuildMode)
    std::string checker;            //!< "passed", or the ONNX checker's / shape inference's message
    std::vector<std::string> notes; //!< writer notes (external data), further passes, what was not checked
    //! --autocast: what the float part became and what stayed FP32, and why (of the last candidate autocast changed).
    std::optional<AutocastSummary> autocast;
    std::optional<CalibrationFixSummary> calibration; //!< --calibration-cache
};

//! Told what fix is doing as each of its stages starts ("writing the fixed model", ...), and "" when it is done: on a
//! 500,000-node model the stages after the read take seconds each.
using FixStageCallback = std::function<void(std::string_view stage)>;

//! Reads the inputs (the model plus any engine artifacts), diagnoses them, plans the findings' edits, writes the fixed
//! model (unless dryRun), checks it with the ONNX checker and shape inference, and diagnoses and predicts it again.
//! Throws InputError for bad input (no model, unreadable files, an output that exists without force, is the input,
//! or cannot be written). progress: the reading of the inputs; stage: the stages after it.
FixReport runFix(const InputFiles& files, const FixOptions& options, const Limits& limits,
                 const ProgressCallback& progress = {}, const FixStageCallback& stage = {});

//! The plan alone: the edits of report's findings as changes of graph's model file. Exposed for tests.
struct FixPlan
{
    ModelEdits modelEdits;
    std::vector<PlannedEdit> edits;
    std::vector<SkippedEdit> skipped;
    std::vector<UnfixedFinding> unfixed;
};
//! refused: edits (by PlannedEdit::keys) to leave out, with the reason (an earlier plan's edit that made a new
//! warning).
FixPlan planFix(const Report& report, const OnnxGraph& graph, const FixOptions& options,
                const std::map<std::string, std::string>& refused = {});

//! fix --calibration-cache's plan alone (exposed for tests): the FP32 graph (its weights loaded: OnnxReadOptions::
//! loadWeights) given Q/DQ with the cache's scales where TensorRT needs them to run INT8 and fuse. summary says what
//! was used and what was left float. refused: as for planFix. implicit: the implicit engine to follow. Throws
//! InputError naming the model for a graph whose opset cannot be raised to 13 (an op whose form changed that the plan
//! does not rewrite).
FixPlan planCalibrationFix(const OnnxGraph& graph, const CalibrationCache& cache, CalibrationFixSummary& summary,
                           const std::map<std::string, std::string>& refused = {},
                           const ImplicitEngineRuns* implicit = nullptr);

std::string renderFixText(const FixReport& report);
std::string renderFixJson(const FixReport& report);

} // namespace qdq
