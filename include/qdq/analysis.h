// The analysis model: what the user handed in, how engine layers map to ONNX nodes (the correlation), and the
// findings the rules produce. Everything here is read-only for rules.
#pragma once

#include "qdq/build_log.h"
#include "qdq/calibration_cache.h"
#include "qdq/engine_plan.h"
#include "qdq/myelin_region.h"
#include "qdq/name_index.h"
#include "qdq/onnx_graph.h"
#include "qdq/profile.h"
#include "qdq/readers.h"
#include "qdq/target_gpu.h"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace qdq
{

//! The artifacts of one engine build, in any combination.
struct Inputs
{
    struct Source
    {
        InputKind kind = InputKind::kUnknown;
        std::string path;
        std::optional<std::string> trtVersion;
    };
    std::vector<Source> sources;

    std::optional<OnnxGraph> onnx;
    std::optional<EnginePlan> layerInfo; //!< from --exportLayerInfo
    std::optional<Profile> profile;      //!< from --exportProfile
    std::optional<BuildLog> buildLog;
    //! An implicit build's calibration cache or a dynamic-range file: the scale of each tensor it names, which
    //! `fix --calibration-cache` writes as Q/DQ (docs/calibration-cache.md).
    std::optional<CalibrationCache> calibration;
    //! When no layer list was given, the layer names of the profile (JSON or log table) stand in for it.
    std::optional<EnginePlan> planFromProfile;
    //! The layer-info JSON and the build log's engine block merged layer by layer, when both are given and
    //! describe one engine (engine_merge.h). Filled by loadInputs.
    std::optional<EnginePlan> mergedEngine;
    //! What the merge took from which file, for the report's notes; empty when nothing was merged.
    std::string engineMergeNote;
    //! What loadInputs read from folders given as input and what it skipped there, for the report's notes.
    std::vector<std::string> inputNotes;

    //! Fills planFromProfile when timings exist but no layer list does. Called by loadInputs.
    void deriveMissingPlan();

    //! The engine layer list to analyze: the merged one when several files describe it, else the layer-info JSON
    //! when given, else the build log's engine block.
    const EnginePlan* engine() const;
    //! Per-layer timings: the profile JSON when given, else the build log's --dumpProfile table.
    const Profile* timings() const;
    //! TensorRT version when any input tells it ("8.5.2"), else empty.
    std::string trtVersion() const;
    //! Major version (8, 10, ...) or 0 when unknown.
    int trtMajor() const;
};

enum class LayerState
{
    kMapped,           //!< executes ONNX nodes of the user's model
    kInsertedQdq,      //!< executes nothing but Q/DQ nodes: a standalone Quantize/Dequantize
    kInsertedReformat, //!< builder-inserted reformat or copy
    kDropped,          //!< executes no ONNX node: NoOp and builder bookkeeping layers
    kUnattributed,     //!< none of the above could be established
};
std::string_view layerStateName(LayerState state);

enum class QdqState
{
    kFused,      //!< executed inside a layer together with other nodes
    kStandalone, //!< executed as its own layer
    kFolded,     //!< folded into constant weights at build time
    kEliminated, //!< removed by the optimizer (cancelled pair, merged duplicate, dangling)
    kUnknown,
};
std::string_view qdqStateName(QdqState state);

//! Which evidence decided a mapping, in order of trust.
enum class MappingEvidence
{
    kMetadata,    //!< layer Metadata [ONNX Layer: ...]
    kBuildLog,    //!< parse-time map or fusion events of the build log
    kNameGrammar, //!< the layer name (" + ", " || ", PWN(), ForeignNode ranges, clones, weights)
    kTensorNames, //!< input/output tensor names
    kNameOnly,    //!< no ONNX model: node names read from the layer name alone
    kNone,
};
std::string_view mappingEvidenceName(MappingEvidence evidence);

//! The correlation names ONNX nodes by views: of the model's node names (the model must outlive the correlation,
//! and stay where it is), or, without a model, of names the correlation keeps in Correlation::ownedNames.
struct LayerMapping
{
    std::size_t layer = 0; //!< index in the engine plan
    LayerState state = LayerState::kUnattributed;
    std::vector<std::string_view> onnxNodes; //!< the ONNX nodes it executes (names), in name order
    MappingEvidence evidence = MappingEvidence::kNone;
    std::optional<std::size_t> reformatTarget; //!< for reformats: the layer it feeds or drains
    std::optional<double> timeMs;              //!< average time from the profile
};

struct QdqNodeState
{
    std::string_view node; //!< ONNX node name (a view, as in LayerMapping)
    bool isQuantize = false;
    QdqState state = QdqState::kUnknown;
    std::optional<std::size_t> layer; //!< the engine layer that executes it (fused or standalone)
    const char* why = "";             //!< short evidence text (static)
};

//! ONNX node name -> the engine layers executing it, in layer order. With a model it is keyed by node index (no
//! name is copied or hashed to build it, and a node's own name is resolved by its address); it then reads names
//! through that model, which must outlive it.
class NodeLayerIndex
{
public:
    //! Keys the index by graph's nodes; call before the first add().
    void useGraph(const OnnxGraph* graph) { mGraph = graph; }
    //! The model it is keyed by, or nullptr.
    const OnnxGraph* graph() const { return mGraph; }
    //! Records that layer executes node (each pair once; layers in increasing order). With a model, names that are
    //! not a node of it are ignored.
    void add(std::string_view node, std::size_t layer);
    //! Records that layer executes node number graphNode of the model given to useGraph().
    void add(std::uint32_t graphNode, std::size_t layer) { mPending.emplace_back(graphNode, layer); }
    //! Groups what was added; call once after the last add(), before find().
    void finish();
    //! The layers executing node; empty when none.
    std::span<const std::size_t> find(std::string_view node) const { return layersOf(idOf(node)); }
    std::span<const std::size_t> find(const std::string& node) const;
    std::span<const std::size_t> find(const char* node) const { return find(std::string_view(node)); }
    //! The layers executing node number graphNode of the model (useGraph()).
    std::span<const std::size_t> findNode(std::uint32_t graphNode) const
    {
        return mGraph != nullptr ? layersOf(graphNode) : std::span<const std::size_t>();
    }
    bool contains(std::string_view node) const { return !find(node).empty(); }
    bool contains(const std::string& node) const { return !find(node).empty(); }
    bool contains(const char* node) const { return !find(node).empty(); }

private:
    std::uint32_t idOf(std::string_view node) const;
    std::span<const std::size_t> layersOf(std::uint32_t id) const
    {
        if (id == NameIndex::kNone || std::size_t(id) + 1 >= mStart.size())
        {
            return {};
        }
        return std::span<const std::size_t>(mLayers).subspan(mStart[id], mStart[id + 1] - mStart[id]);
    }

    const OnnxGraph* mGraph = nullptr;
    std::vector<std::string> mNames; //!< without a model: id -> name
    NameIndex mIndex;
    std::vector<std::pair<std::uint32_t, std::size_t>> mPending; //!< (id, layer) until finish()
    std::vector<std::uint32_t> mStart;                           //!< id -> first entry in mLayers
    std::vector<std::size_t> mLayers;
};

struct Correlation
{
    std::vector<LayerMapping> layers;   //!< one per engine layer, same order
    std::vector<QdqNodeState> qdqNodes; //!< one per Q/DQ node (ONNX, or names seen in the engine without ONNX)
    NodeLayerIndex layersOfNode;        //!< ONNX node -> engine layers executing it
    //! The engine's Myelin regions (findMyelinRegions, include/qdq/myelin_regions.h), found once by correlate() for
    //! the rules and the reporters; empty for an engine without Myelin layers.
    std::vector<MyelinRegion> myelinRegions;
    std::vector<std::string> notes; //!< what could not be established, and why
    //! Names read from the engine when there is no model, which the views above point into (shared by copies).
    std::shared_ptr<std::deque<std::string>> ownedNames = std::make_shared<std::deque<std::string>>();

    struct LayerTotals
    {
        std::size_t total = 0, mapped = 0, insertedQdq = 0, insertedReformat = 0, dropped = 0, unattributed = 0;
    };
    struct QdqTotals
    {
        std::size_t total = 0, fused = 0, standalone = 0, folded = 0, eliminated = 0, unknown = 0;
    };
    LayerTotals layerTotals() const;
    QdqTotals qdqTotals() const;
};

enum class Severity
{
    kInfo,
    kWarning,
    kError,
};
std::string_view severityName(Severity severity);

struct Evidence
{
    std::string file;
    std::uint64_t line = 0; //!< 0 when the evidence is a field, not a line
    std::string field;      //!< e.g. "Layers[12].Origin" or "node Conv_9"
    std::string text;       //!< what was seen
};

//! One graph edit that carries out a finding's fix (`qdq-doctor fix`, docs/fix.md). Edits name nodes and tensors of
//! the model the finding was made on; src/fixes turns them into changes of the model file.
struct FixEdit
{
    enum class Kind
    {
        kInsertQdq,     //!< a QuantizeLinear -> DequantizeLinear pair on `tensor`, read by `consumers`
        kRemoveQdqPair, //!< `nodes` = {Q, DQ}: the DQ's readers read the Q's input instead; both nodes go
        kSetScale,      //!< `nodes` (Q/DQ) take the scale and zero point of `scaleFrom`
        //! `nodes` = {DQ}: the DQ of a constant that is no weight (an INT32 bias, a uint8 operand of an Add) becomes a
        //! float initializer holding what it computes, (q - zero point) x scale
        kFloatBias,
        //! `nodes` = {plugin, DQs before it, Qs after it}: the plugin reads what the DQs dequantize and its outputs
        //! go where the Qs' outputs went (Q -> plugin -> DQ); the plugin must then take INT8 with those scales.
        kUnwrapPlugin,
        //! `nodes` (a Q and its DQs reading one scale and zero point, uint8 or int8 with a non-zero value) take an
        //! int8 zero point 0 and the scale that covers their range symmetrically: scale x max(|qmin - zero point|,
        //! |qmax - zero point|) / 127. `tensor`: the zero-point tensor they read.
        kSymmetricInt8,
        //! `nodes` = {an ONNX Runtime QOperator op: QLinearConv, com.microsoft QLinearAdd, QGemm, ...}: rewritten as
        //! DequantizeLinear on each quantized input -> the float op (same name) -> QuantizeLinear on its output.
        kRewriteQuantizedOp,
    };
    Kind kind = Kind::kInsertQdq;
    std::string tensor;
    //! kInsertQdq: the (node, input index) reads that get the dequantized tensor; empty = every reader.
    std::vector<std::pair<std::string, std::uint32_t>> consumers;
    std::vector<std::string> nodes;
    std::string scaleFrom;   //!< a Q or DQ node whose (per-tensor) scale and zero point the new or changed nodes use
    std::string scaleReason; //!< why that scale: the one TensorRT keeps, the largest, ...
    //! kInsertQdq: the new pair's scale is scaleFrom's times this (a Mul by this positive constant moved from after
    //! a DQ to before the new Q: DQ(Q(x, s)) * c == DQ(Q(x * c, s * c))).
    double scaleFactor = 1.0;
    //! kInsertQdq: when positive, the new pair's scale, with zero point 0 of scaleFrom's quantized type (int8 for a
    //! uint8 one); scaleFrom then gives only the type and the op set (the Softmax output's data-independent scale).
    double fixedScale = 0.0;
};

//! What a finding states about the engine the report shows (the real one when a layer list is given, else the
//! predicted one) or about its own edit. The report's consistency check (src/advice/consistency.cpp) tests every claim
//! against that engine and against the other findings' claims (the issue "One model of TensorRT").
struct EngineClaim
{
    enum class Kind
    {
        kSeparateLayers, //!< nodes[0] and nodes[1] run in different layers
        kStandaloneQdq,  //!< nodes[0], a Q/DQ node, runs as a layer of its own
        kRunsFloat,      //!< every node runs in a float precision, not quantized
        kFuseOnceEdited, //!< the finding's edit lets nodes[0] and nodes[1] run in one layer
        kKeepApart,      //!< the finding advises a Q/DQ between nodes[0] and nodes[1] (two quantized layers)
    } kind = Kind::kSeparateLayers;
    std::vector<std::string> nodes;
};

//! One place where a report contradicts itself: a finding against the engine the report shows, two findings against
//! each other, or the prediction against its own reasons.
struct Contradiction
{
    //! "engine-structure", "precision", "qdq-fate", "advice", "dead-node", "attention"
    std::string kind;
    std::vector<std::size_t> findings; //!< indices in Report::findings (empty for the prediction's own)
    std::string message;
};

//! The result of the consistency check every report runs.
struct ConsistencyCheck
{
    std::size_t claimsChecked = 0;
    bool againstRealEngine = false; //!< the claims were tested against the real engine (else the predicted one)
    std::vector<Contradiction> contradictions;
};

struct Finding
{
    std::string rule; //!< slug
    Severity severity = Severity::kWarning;
    std::string message;
    std::vector<std::string> onnxNodes;
    std::vector<std::string> engineLayers;
    std::vector<Evidence> evidence;
    std::string fix;
    //! The fix as graph edits, when it is one (empty when the fix is a build flag, a re-export, calibration, ...).
    std::vector<FixEdit> edits;
    //! The time of the engine layers the finding touches (the profile's times; a layer may count in several
    //! findings). What fixing it saves is savingMs.
    std::optional<double> costMs;
    //! The time of the engine layers the root-cause step gives this finding (each layer to one finding at most, a
    //! cause's finding also owning the layers of the symptoms it explains): these add up to at most the engine's
    //! time, and savingMs never exceeds them. Set with costMs once root causes are attributed.
    std::optional<double> ownedMs;
    //! What carrying out the fix is expected to save: the counterfactual of the layers this finding's root cause owns
    //! (src/advice, docs/savings.md). Unset where no estimate could be made (no profile, or a fix whose effect on
    //! the kernels no artifact shows); 0 for a symptom counted under its cause or an info finding.
    std::optional<double> savingMs;
    std::string savingBasis; //!< how savingMs was estimated, in words
    //! Index in Report::causes of the root cause this finding belongs to (as one of its causes or a symptom).
    std::optional<std::size_t> rootCause;
    bool symptom = false; //!< explained by a root cause of other findings (listed under it)
    bool likely = false;  //!< rests on observations, not documentation
    //! Set by rules that explain an engine layer only where no other rule does (reformat-conversion,
    //! copy-not-eliminated), on a finding that names one engine layer: diagnose drops it when another finding names
    //! that layer, so that each layer is explained once, and merges the kept ones of one rule with the same group into
    //! one finding ("<count> <group>: <layers>.", their evidence, nodes and cost added up, the fix of the first).
    std::string fallbackGroup;
    //! For a symptom: the engine layer whose root cause explains it (kernel-without-tensor-cores: the standalone
    //! Quantize that writes the CHW4 input it blames). The root-cause step lists the symptom under the group owning
    //! that layer, not under the groups that only name its own layers. Empty: placed by its own layers.
    std::string explainedByLayer;
    //! What the finding says TensorRT does, for the consistency check (EngineClaim).
    std::vector<EngineClaim> claims;
};

//! A layer TensorRT is expected to build, predicted from the model's graph (reference sections 1.8 and 7.1).
//! The prediction names the model's nodes by views of their names in the OnnxGraph it was made from: that graph must
//! outlive it and stay where it is (moving the graph keeps the views valid, copying it does not).
struct PredictedLayer
{
    std::string name; //!< in TensorRT's grammar: "conv1.weight + Conv_9 + Relu_11", "PWN(Sigmoid_3, Mul_4)", ...
    //! TensorRT's engine layer type: CaskConvolution, CaskDeconvolution, ConvActPool, Pooling, PointWise, Shuffle,
    //! NoOp, Reformat, Scale, SoftMax, Myelin, Resize, Concatenation, Slice, Reduce, PluginV2, ...
    std::string kind;
    //! What the layer does for the Q/DQ analysis: "quantized-Conv", "standalone-quantize", "requantize",
    //! "float-MaxPool", "reformat", ...
    std::string role;
    std::vector<std::string_view> onnxNodes; //!< nodes it executes (Q/DQ and weight paths included)
    std::vector<std::uint32_t> nodeIndices;  //!< the same nodes by index in the model's nodes
    std::vector<std::string_view> partOf;    //!< nodes it executes part of (the bias of a Gemm split by the parser)
    std::string inputPrecision;              //!< "INT8", "FP16", "FP32"
    std::string outputPrecision;
    bool int8Input = false;
    bool int8Output = false;
    //! Empty when the layer follows documented behaviour; otherwise why the simulator guesses.
    std::string guess;
};

//! What the simulation expects to happen to one Q/DQ node.
struct PredictedQdq
{
    std::string_view node;
    static constexpr std::uint32_t kNoNode = 0xFFFFFFFFu;
    std::uint32_t nodeIndex = kNoNode; //!< node's index in the model's nodes
    bool isQuantize = false;
    enum class Fate
    {
        kFusedIntoProducer, //!< output quantization absorbed by a quantized producer
        kFusedIntoConsumer, //!< input dequantization absorbed by a quantized consumer
        kFolded,            //!< weight path, folded at build time
        kCancelled,         //!< DQ(s) -> Q(s) with equal scales: erased
        kRequantize,        //!< DQ(s1) -> Q(s2) with different scales: a Scale/Reformat layer
        kStandalone,        //!< nothing to fuse with: its own Quantize/Dequantize layer
    } fate = Fate::kStandalone;
    std::string_view partner;             //!< the node it fuses with, or the other half of a requantize pair
    std::uint32_t partnerIndex = kNoNode; //!< partner's index in the model's nodes, when known

    //! Why, in words. Kept in parts (fixed text and model names, as views) and put together on request: a model
    //! with 300,000 Q/DQ nodes would otherwise hold 300,000 composed sentences nobody reads.
    struct Reason
    {
        std::string_view prefix;
        std::string_view subject; //!< a node or tensor name
        std::string_view suffix;
        std::string composed; //!< the whole text, for the rare wordings that do not fit prefix + subject + suffix
    } why;
    std::string reason() const;
};
std::string_view predictedFateName(PredictedQdq::Fate fate);

//! How TensorRT types the network ("Precision Control" page of the TensorRT docs). Weak typing: the builder picks
//! each layer's precision among those the flags (--fp16, --int8, --best) allow. Strong typing: each tensor has the
//! type the graph gives it (Q/DQ for the quantized parts, the model's float type elsewhere); no flag chooses a
//! precision. Weak typing was deprecated in 10.12 and removed in 11.0, where every network is strongly typed.
enum class Typing
{
    kWeak,
    kStrong,
};
std::string_view typingName(Typing typing); //!< "weakly typed", "strongly typed"

//! What the engine simulator and the rules assume about the build: the build mode. Resolved once per command from
//! the inputs and the command line (resolveBuildMode); every fact says where it came from.
struct SimulationOptions
{
    bool int8 = true; //!< --int8 (Q/DQ regions run INT8 whatever the flags; kept for the report)
    bool fp16 = true; //!< --fp16: float regions run FP16, else FP32 (weak typing only)
    int trtMajor = 0; //!< 0: unknown (the simulator follows 10.x and marks version-dependent layers as guesses)
    int trtMinor = 0;
    bool trtMinorKnown = true;   //!< false when only the major is known (an 11.x form without a version line)
    std::string precisionSource; //!< where the flags came from: "default", "--precision", "build.log:12"
    Typing typing = Typing::kWeak;
    std::string versionSource; //!< the file or option that told the version; empty while it is unknown
    std::string typingSource;  //!< why this typing: the option, the log's command line, the version, or "assumed: ..."
    bool typingAssumed = true; //!< nothing told the typing: the report says which mode it assumed and why
    //! The GPU of the build (--gpu, the log's device lines, kernel names); unset when nothing tells it.
    std::optional<TargetGpu> gpu;

    bool stronglyTyped() const { return typing == Typing::kStrong; }
    //! Whether advice may name the weak-typing precision flags (--fp16, --int8, --best, --bf16): a weakly typed build
    //! of TensorRT 8.x-10.x. A strongly typed build ignores them, and TensorRT 11 removed them.
    bool precisionFlagsApply() const { return typing == Typing::kWeak && trtMajor < 11; }
};

//! The build mode a user states on the command line (--trt-version, --strongly-typed, --weakly-typed).
struct BuildModeRequest
{
    std::string trtVersion;       //!< "11", "10.16": empty when not given
    std::optional<Typing> typing; //!< unset when neither typing option was given
    std::string gpu;              //!< --gpu: "sm89", "H100", ...; empty when not given
};

//! One attention block (qdq/attention_pattern.h) as the simulator expects TensorRT to build it.
struct PredictedAttention
{
    std::string_view scoresMatMul; //!< Q * K^T
    std::string_view softmax;
    std::string_view contextMatMul; //!< probabilities * V
    bool fused = false;             //!< one fused attention expected
    bool quantized = false;         //!< its MatMuls read DequantizeLinear outputs
    std::string reason;             //!< why, with its sources; what no source settles is marked a guess
    //! Why it is not fused, one entry a reason (a documented condition it misses, or the engine around it); empty
    //! exactly when fused.
    std::vector<std::string> notFusedBecause;
};

struct Prediction
{
    SimulationOptions options;
    std::vector<PredictedLayer> layers;
    std::vector<std::string_view> eliminated; //!< nodes no layer executes (Concat elimination, absorbed flattens)
    std::vector<PredictedQdq> qdq;
    std::vector<PredictedAttention> attention; //!< every attention block of the model (src/simulation/myelin_pass.cpp)
    //! MatMul/Gemm nodes inside Myelin regions that read both inputs straight from a DequantizeLinear (they run in
    //! the quantized type), and those that do not (they run in float).
    std::vector<std::string_view> myelinQuantizedMatMuls;
    std::vector<std::string_view> myelinFloatMatMuls;
    const PredictedQdq* find(std::string_view node) const;
};

struct AnalysisOptions
{
    bool predict = true;
    //! Build flags and TensorRT version for the engine simulator; unset: from the inputs and buildMode
    //! (resolveBuildMode).
    std::optional<SimulationOptions> simulation;
    //! What the command line says about the build; checked against the inputs (resolveBuildMode).
    BuildModeRequest buildMode;
};

//! What every rule gets. Read-only.
struct Context
{
    const Inputs& inputs;
    const Correlation& correlation;
    const Prediction& prediction;
    const AnalysisOptions& options;
    //! Set for a rule that reads model values (kReadsModelValues) when the graph was rebuilt from a build log: the
    //! rule sees no graph and judges the engine artifacts alone.
    bool graphHidden = false;

    //! The build mode the diagnosis resolved (Report::buildMode); unset in contexts made by hand: the default mode.
    const SimulationOptions* mode = nullptr;

    const OnnxGraph* graph() const { return inputs.onnx && !graphHidden ? &*inputs.onnx : nullptr; }
    const SimulationOptions& buildMode() const;
    const EnginePlan* engine() const { return inputs.engine(); }
    const Profile* timings() const { return inputs.timings(); }
};

class FindingSink
{
public:
    void add(Finding finding) { mFindings.push_back(std::move(finding)); }
    std::vector<Finding>& findings() { return mFindings; }

private:
    std::vector<Finding> mFindings;
};

//! What a rule needs to judge its pattern.
enum RuleNeeds : unsigned
{
    kNeedsOnnx = 1u << 0,
    kNeedsEngine = 1u << 1,
    kNeedsOnnxOrEngine = 1u << 2,
    //! Reads Context::prediction. Rules without it run while the prediction is still being made and see an empty
    //! one, so a rule that forgets the flag fails its tests instead of racing.
    kReadsPrediction = 1u << 3,
    //! Reads Context::correlation. Rules without it may run before the correlation is made and see an empty one.
    kReadsCorrelation = 1u << 4,
    //! Reads Q/DQ scale or zero-point values or node attributes, which a graph rebuilt from a build log lacks
    //! (OnnxGraph::rebuiltFromLog). On such a graph a rule that needs the model is not run, and one that can also
    //! judge the engine runs on the engine alone (Context::graphHidden); the report's notes say which.
    kReadsModelValues = 1u << 5,
};

struct RuleInfo
{
    std::string slug;
    std::string id; //!< catalogue id, e.g. "R08", or "" for rules added by qdq-doctor
    std::string summary;
    Severity defaultSeverity = Severity::kWarning;
    std::string trtVersions; //!< e.g. "8.0-10.x", "8.x only"
    unsigned needs = kNeedsOnnxOrEngine;
    //! Empty when the rule's findings carry graph edits (`fix` applies them); otherwise why `fix` cannot apply the
    //! rule's advice (a build flag, calibration data, a plugin's code, a re-export).
    std::string notFixable;
};

class Rule
{
public:
    virtual ~Rule() = default;
    virtual const RuleInfo& info() const = 0;
    virtual void check(const Context& context, FindingSink& sink) const = 0;
};

//! A rule that reads the model when there is one, and the engine artifacts otherwise.
class ModelOrEngineRule : public Rule
{
public:
    void check(const Context& context, FindingSink& sink) const final
    {
        if (context.graph() != nullptr)
        {
            checkGraph(context, sink);
        }
        else if (context.engine() != nullptr)
        {
            checkEngine(context, sink);
        }
    }

protected:
    virtual void checkGraph(const Context& context, FindingSink& sink) const = 0;
    virtual void checkEngine(const Context& context, FindingSink& sink) const = 0;
};

//! A rule that reads the model when there is one (given, or rebuilt from a build log), and otherwise the build log's
//! error lines (a parse that failed leaves no graph to rebuild).
class ModelOrBuildLogRule : public Rule
{
public:
    void check(const Context& context, FindingSink& sink) const final
    {
        if (context.graph() != nullptr)
        {
            checkGraph(context, sink);
        }
        else
        {
            checkLog(context, sink);
        }
    }

protected:
    virtual void checkGraph(const Context& context, FindingSink& sink) const = 0;
    virtual void checkLog(const Context& context, FindingSink& sink) const = 0;
};

//! The explicit rule list (rules/registry.cpp), in catalogue order.
const std::vector<std::unique_ptr<Rule>>& allRules();

//! Builds the correlation between engine layers and ONNX nodes.
Correlation correlate(const Inputs& inputs);

//! Predicts the engine TensorRT will build from the model's graph (ONNX, or rebuilt from a build log): the fate of
//! every Q/DQ node and the layer list, with TensorRT's documented fusions.
Prediction predictEngine(const OnnxGraph& graph, const SimulationOptions& options = {});
//! The build mode the inputs tell (build log options and command line, any file's version); a weakly typed
//! --int8 --fp16 build of an unknown version otherwise, marked as assumed.
SimulationOptions simulationOptionsFor(const Inputs& inputs);
//! simulationOptionsFor with the command line's request applied: a version or typing the inputs contradict, a
//! version qdq-doctor does not know, or weak typing with TensorRT 11 throws InputError naming the option and file.
SimulationOptions resolveBuildMode(const Inputs& inputs, const BuildModeRequest& request);
//! The checks of request that need no input (a version's form and known major, a --gpu name, weak typing with
//! TensorRT 11): every command that takes the build-mode options runs them, also where no option is used (diff of two
//! engines). Throws InputError naming the option.
void checkBuildModeRequest(const BuildModeRequest& request);
//! The build mode in one line for reports: "TensorRT 10.16.0 (from build.log), weakly typed --int8 --fp16 (...)".
std::string describeBuildMode(const SimulationOptions& mode);

//! One real engine layer next to the prediction.
struct LayerAgreement
{
    std::size_t layer = 0;                      //!< index in the engine plan
    std::vector<std::string_view> onnxNodes;    //!< nodes the real layer executes (Q/DQ and constants left out)
    std::optional<std::size_t> predictedLayer;  //!< the predicted layer with exactly these nodes
    std::vector<std::size_t> predictedLayersOf; //!< predicted layers holding any of them (when not exact)
};

struct PredictionCheck
{
    //! Real layers that execute ONNX nodes other than Q/DQ, or only Q/DQ (standalone Quantize/Dequantize).
    std::vector<LayerAgreement> layers;
    std::size_t realLayers = 0;      //!< layers above
    std::size_t predictedLayers = 0; //!< predicted layers that execute ONNX nodes
    std::size_t exact = 0;           //!< real layers with a predicted layer executing exactly the same nodes
    std::size_t realStandaloneQdq = 0;
    std::size_t predictedStandaloneQdq = 0;
    //! Where the two disagree, in words ("engine layer X executes A, B; the simulator predicted A in layer P and B
    //! in layer Q"), in engine order.
    std::vector<std::string> disagreements;
};

//! How far a saving estimate can be trusted.
enum class SavingConfidence
{
    kNone,   //!< not estimated
    kLow,    //!< from the bytes the layers stop moving, at the engine's own memory speed
    kMedium, //!< from a layer of the same shape and parameters that already runs the target precision in the engine
    kHigh,   //!< the fix removes layers: their measured time
};
std::string_view savingConfidenceName(SavingConfidence confidence);

//! One root cause: findings that one change to the model fixes, the engine layers whose time it owns (each layer
//! belongs to one root cause), and what fixing it saves. Built by attributeRootCauses (src/advice).
struct RootCause
{
    std::string title;                   //!< the rules of its causes, most fundamental first
    std::vector<std::size_t> findings;   //!< its causes in Report::findings, the lead first
    std::vector<std::size_t> symptoms;   //!< findings it explains (some may own layers of other causes too)
    std::vector<std::size_t> layers;     //!< engine layers whose time it owns, in layer order
    Severity severity = Severity::kInfo; //!< the worst of its causes
    double involvedMs = 0.0;             //!< the time of those layers
    std::optional<double> savingMs;
    std::string basis;
    SavingConfidence confidence = SavingConfidence::kNone;
};

struct Report
{
    std::vector<Inputs::Source> inputs;
    Correlation correlation;
    Prediction prediction;
    //! Grouped by root cause (the causes in the order of Report::causes, each cause's findings then its symptoms).
    std::vector<Finding> findings;
    std::vector<RootCause> causes; //!< worst severity first, then by saving
    std::vector<std::string> notes;
    //! With a model (or a log's graph) and a real engine: where the simulator and TensorRT agree and disagree. Facts,
    //! not findings: the places where TensorRT did what the documentation does not say.
    std::optional<PredictionCheck> predictionCheck;
    //! No finding contradicts the engine the report shows nor another finding (checkConsistency).
    ConsistencyCheck consistency;
    //! The build mode the prediction and the rules assumed (resolveBuildMode), shown in every report.
    SimulationOptions buildMode;
    double totalMs = 0.0;
    double standaloneQdqMs = 0.0;
    double reformatMs = 0.0;
    bool hasTimings = false;
};

//! Work a caller overlaps with the rules (writing the parts of a report that depend only on the correlation):
//! called once, on one of diagnose's two threads, as soon as report.inputs and report.correlation are final, while
//! the rules run on the other thread. Findings, prediction, notes and times are not final yet.
using WhileRulesRun = std::function<void(const Report&)>;

//! Runs correlation, prediction and every rule; findings sorted and de-duplicated.
Report diagnose(const Inputs& inputs, const AnalysisOptions& options = {}, const WhileRulesRun& whileRulesRun = {});

std::string renderReportText(const Report& report, const Inputs& inputs);
std::string renderReportJson(const Report& report, const Inputs& inputs);
//! The same JSON handed to write in pieces of about a megabyte, for reports too large to hold twice.
void writeReportJson(const Report& report, const Inputs& inputs, const std::function<void(std::string_view)>& write);

//! The JSON report in two parts: head() writes what depends only on the inputs and the correlation (inputs,
//! accounting, precision_summary, layers, qdq_nodes), so it can run as diagnose's WhileRulesRun; tail() writes the
//! rest once diagnose has returned. head() then tail() on one report write exactly what writeReportJson writes.
class ReportJsonStream
{
public:
    explicit ReportJsonStream(std::function<void(std::string_view)> write);
    ~ReportJsonStream();
    ReportJsonStream(const ReportJsonStream&) = delete;
    ReportJsonStream& operator=(const ReportJsonStream&) = delete;

    void head(const Report& report, const Inputs& inputs);
    void tail(const Report& report, const Inputs& inputs);

private:
    struct State;
    std::unique_ptr<State> mState;
};

} // namespace qdq
