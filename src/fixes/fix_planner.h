// Internal to the fix planner (src/fixes/fix_plan*.cpp): the Planner that turns a report's findings into a FixPlan,
// its members defined by what they plan: fix_plan.cpp (collecting the asks, names, claims, the order of the kinds),
// fix_plan_removals.cpp (Q/DQ removals, QOperator rewrites, plugin unwraps), fix_plan_scales.cpp (scale unification,
// symmetric INT8) and fix_plan_insertions.cpp (float biases, Q/DQ insertions).
#pragma once

#include "qdq/fix.h"
#include "qdq/patterns.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qdq::fix_planning
{

std::string formatScale(double scale);

//! base, or base_2, base_3, ...: the first that names no node or tensor of graph and is not in used (then added).
std::string freshModelName(const OnnxGraph& graph, std::set<std::string>& used, const std::string& base);
const RuleInfo* ruleInfo(const std::string& slug);

//! One plan: run() asks each kind of edit in the fixed order of docs/fix.md.
class Planner
{
public:
    Planner(const Report& report, const OnnxGraph& graph, const FixOptions& options,
            const std::map<std::string, std::string>& refused)
        : mReport(report), mGraph(graph), mOptions(options), mRefused(refused)
    {
    }

    FixPlan run();

private:
    //! Initializers whose every reader the plan removes or rewires away (a removed Q/DQ pair's scale and zero point)
    //! are left out too: the fixed model otherwise carried them unread (115 of resnet18-ort-qdq's 243 initializers
    //! once its Q/DQ pairs were removed, 18 of vit-tiny-ort-qdq's 180; ONNX Runtime drops each with a warning). An
    //! initializer the model already left unread stays, as do graph outputs and what a new node or a rewired input
    //! reads. Not done for a model with subgraphs, whose nodes may read a main-graph initializer by name.
    void dropOrphanedInitializers();

    //! Says on the planned edit that removed or rewired the initializer's first reader that the initializer goes too.
    void tellOrphan(const std::string& initializer, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& reads);

    bool hasSubgraphs() const;

    std::unordered_map<std::string, std::size_t> mEditOfNode; //!< node name -> the first planned edit naming it

    struct Asked
    {
        FixEdit edit;
        std::string rule;
        std::string finding;
        std::vector<std::string> rules;
        std::string key;
        std::vector<std::string> extraKeys; //!< the keys of asks merged into this one
        bool removesError = false;          //!< an error finding asked for it (PlannedEdit::removesError)
    };

    bool selected(const std::string& slug) const;

    static std::string editKey(const FixEdit& edit);

    //! Every finding's edits in report order, one entry per distinct edit (the rules that asked for it listed).
    void collect();
    std::map<std::string, std::string> refusedWithTheirFinding() const;

    void skip(const Asked& asked, std::string why);

    std::uint32_t nodeIndex(const std::string& name) const { return mGraph.nodeIndex(name); }

    //! A name not yet used by a node or tensor of the model or of this plan.
    std::string freshName(const std::string& base);

    //! Claims input slot of node for one edit; false when another edit of the plan already changes it.
    bool claim(std::uint32_t node, std::uint32_t slot, const std::string& by);

    std::string claimant(std::uint32_t node, std::uint32_t slot) const;

    //! What stops an edit from changing these reads: one of them is changed by another edit already ("" if none).
    std::string claimedBy(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& reads) const;

    //! Every (node, slot) that reads tensor.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> readers(const std::string& tensor) const;

    bool isGraphOutput(const std::string& tensor) const;

    void planRemoval(const Asked& asked);

    //! A pair whose DQ writes a network output: the output keeps its name, so the tensor the Q read takes it over.
    //! Its producer writes the network output directly (or, where the Q's range started at 0, a Relu reading it does).
    void planRemovalAtNetworkOutput(const Asked& asked, std::uint32_t q, std::uint32_t dq);

    //! kRewriteQuantizedOp: an ONNX Runtime QOperator op becomes DequantizeLinear -> float op -> QuantizeLinear,
    //! inserted where it was (src/fixes/quantized_op_rewrite.cpp). Its readers keep reading its output tensor, which
    //! the new QuantizeLinear writes.
    void planRewriteQuantizedOp(const Asked& asked);

    //! What makes two DequantizeLinear nodes compute the same tensor: their inputs and their INT attributes (axis).
    static std::string dequantizeKey(const std::vector<std::string>& inputs,
                                     const std::vector<std::pair<std::string, std::int64_t>>& attributes);

    //! The model's own DequantizeLinear nodes as DQs a rewrite can share (ONNX Runtime writes one before each float op
    //! between QOperator ops: MobileNetV3's HardSigmoid reads the conv's output through it, and the HardSwish's Mul
    //! must read the same DQ for the conv to take both as its epilogue).
    void seedSharedDequantize();

    //! kUnwrapPlugin: DQ -> plugin -> Q becomes Q -> plugin -> DQ. Only when asked by name (--rules): the plugin
    //! then reads and writes INT8, which its code must support with the scales listed in the report.
    void planUnwrapPlugin(const Asked& asked);
    //! What unwrapping a plugin rewires, removes and reports.
    struct PluginUnwrap
    {
        std::vector<std::uint32_t> wrappers; //!< the DQs before the plugin and the Qs after it
        std::vector<PlannedEdit::PluginScale> scales;
        std::vector<std::string> scaleTexts;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> rewires; //!< (node, slot), with newInputs' input
        std::vector<std::string> newInputs;
        std::vector<std::uint32_t> removals;
    };
    bool collectPluginWrappers(const Asked& asked, PluginUnwrap& unwrap);
    bool planPluginRewires(const Asked& asked, std::uint32_t plugin, PluginUnwrap& unwrap);
    bool pluginOutputScalesAgree(const Asked& asked, const OnnxNode& pluginNode,
                                 const std::vector<PlannedEdit::PluginScale>& scales);

    //! A per-tensor Q or DQ whose scale (and zero point) are constants of the model, or nullptr.
    const QdqParameters* perTensorQdq(std::uint32_t node) const;

    //! Leaves out the value_info of the outputs of the QuantizeLinear nodes among nodes whose zero point is not of
    //! newType, the type the edit gives them.
    void dropDeclaredTypesOfQuantizeOutputs(const std::vector<std::uint32_t>& nodes, OnnxDataType newType);
    std::pair<std::string, std::string> groupScaleTensors(const Asked& asked, std::uint32_t from,
                                                          bool sourceAfterTarget, PlannedEdit& planned);
    static std::string symmetricScaleText(double symmetric, const QdqParameters& old, double qmin, double qmax);

    //! What the group's Q/DQ taking scale newScale with zero point newZero of newType costs the numbers: the largest
    //! rounding-step growth and the largest share of an old range the new one leaves out, over the nodes whose old
    //! scale is a per-tensor 8-bit one (docs/fix.md#numeric-cost).
    NumericCost scaleChangeCost(const std::vector<std::uint32_t>& group, double newScale, double newZero,
                                OnnxDataType newType) const;

    //! A bound on a group, not a limit a real model meets: the Concats of DenseNet-121's 24-layer block share 100 Q/DQ
    //! nodes (measured), so a 48-layer block (DenseNet-201) needs about 200; the old bound of 256 was close.
    static constexpr std::size_t kMostGroupNodes = 4096;

    //! A set-scale edit's group: its named Q/DQ nodes and their pair partners (a DQ's Q and that Q's other DQs, a
    //! Q's DQs), closed, in the order found. Sets problem (and returns what it has) when the group cannot take one
    //! scale: a DQ of a constant or of a network input, a Q read by other nodes than DQs, over kMostGroupNodes nodes.
    std::vector<std::uint32_t> scaleGroupOf(const FixEdit& edit, std::string& problem) const;

    //! Set-scale edits whose groups share a Q/DQ node become one edit with one scale, the largest of their
    //! sources' (no group's range is cut short). Each group's pairs cancel only when all of its scales are equal, so
    //! overlapping groups need one scale between them. In DenseNet every Concat of a dense block reads the block's
    //! earlier features through shared DQs: planned one by one, the first group took its scale, the overlapping
    //! ones were skipped as conflicts, and the Concats of a smaller group got a new mismatch.
    void mergeOverlappingScaleGroups();

    //! kSetScale: the named Q/DQ nodes, each with its partners (a DQ's Q and that Q's other DQs, a Q's DQs), read
    //! the scale and zero point tensors of edit.scaleFrom. A DQ of a constant (a weight) or a Q/DQ that is per-channel
    //! or has its scale computed stops the edit: changing one side of a pair would change the values it carries.
    void planSetScale(const Asked& asked);
    bool scaleGroupSlots(const Asked& asked, const std::vector<std::uint32_t>& group, std::uint32_t from,
                         std::vector<std::pair<std::uint32_t, std::uint32_t>>& slots, bool& sourceAfterTarget);
    std::vector<std::uint32_t> quantizersKeepingTheirClamp(const std::vector<std::uint32_t>& group,
                                                           std::uint32_t from) const;

    //! Why the group must not take one scale, "" when it may: its scales (the source's among them) span more than
    //! patterns::kMostUnifiedScaleRatio. One scale would then take bits the smaller scales' tensors cannot spare (at
    //! 960x, all of them: every value of the smallest one rounds to 0, or saturates if the scale shrinks): they need
    //! a range from calibration data, which the reason names with every Q's scale.
    std::string scaleSpreadProblem(const std::vector<std::uint32_t>& group, std::uint32_t source) const;

    //! Rewires input 1 (scale) and 2 (zero point) of the given Q/DQ slots to new tensors. The old scale and
    //! zero-point tensors go when this takes away their last reader: an initializer is left out, a Constant node
    //! removed.
    void rewireScaleInputs(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& slots,
                           const std::string& scaleName, const std::string& zeroPointName, const std::string& rule,
                           PlannedEdit& planned);

    //! kSymmetricInt8: the group's Q/DQ (one scale and zero point between them) read a new FLOAT scale covering the
    //! same range symmetrically and an INT8 zero point 0. Planned after every other edit: nodes another edit removes
    //! leave the group; a scale another edit rewires is left to fix's next pass, which converts the scale it took.
    void planSymmetricInt8(const Asked& asked);
    bool remainingNodesOf(const Asked& asked, std::vector<std::uint32_t>& group);
    bool sharedScaleSlots(const Asked& asked, const std::vector<std::uint32_t>& group,
                          std::vector<std::pair<std::uint32_t, std::uint32_t>>& slots);
    std::pair<std::string, std::string> addSymmetricInitializers(const std::string& base, double symmetric,
                                                                 PlannedEdit& planned);

    //! Adds a Relu reading input, inserted before node `before`, named base/Relu; returns its output. It keeps the
    //! clamp at 0 of quantizer's range, which the edit takes away (why).
    std::string addClampRelu(const std::string& input, std::uint32_t before, const std::string& base,
                             const std::string& rule, const std::string& quantizer, const std::string& why,
                             PlannedEdit& planned, const std::string& output = {});

    //! Rewires input 0 of Q node q to a Relu of what it reads (addClampRelu).
    void clampQuantizeInput(std::uint32_t q, const std::string& base, const std::string& rule, const std::string& why,
                            PlannedEdit& planned);

    //! Whether a Q whose range starts at 0 needs a Relu to keep its clamp once the range no longer does: yes unless its
    //! input cannot be negative, or is the output of a smooth activation (SiLU or HardSwish as Mul(x, gate(x)),
    //! HardSwish, Gelu) whose small negative tail the calibration did not see. ONNX Runtime removes only Relu and Clip
    //! before such a Q; a Relu after SiLU or HardSwish would clamp a tail of at most 0.28 or 0.375 and cost TensorRT a
    //! layer (MobileNetV3: 38 symmetric conversions refused for lone Q/DQ beside such a Relu).
    bool needsClampKept(const std::string& tensor) const;

    //! True when a per-tensor 8-bit Q or DQ has its zero point at the type's minimum (uint8 0, int8 -128): its range
    //! starts at 0, so a Q clamps negative values to 0 and a DQ gives none.
    bool rangeStartsAtZero(std::uint32_t node) const;

    //! True when tensor cannot hold a negative value: the output of a Relu, of a Clip whose minimum is a constant >= 0,
    //! of a Sigmoid, of a DequantizeLinear whose range starts at 0, or of pooling, data movement, Add, Mul or Concat of
    //! such tensors. (ResNet-18 in QOperator form: the global average pooling of a clamped Add needs no Relu; one
    //! there would run as its own layer beside a lone Q/DQ pair.)
    bool isNonNegative(const std::string& tensor) const;

    //! Each tensor is decided once (a shared input, Add(t, t), is not walked twice; a cycle ends the walk).
    bool isNonNegative(const std::string& tensor, int depth, patterns::TensorMemo& memo) const;

    bool decideNonNegative(const std::string& tensor, int depth, patterns::TensorMemo& memo) const;

    void planFloatBias(const Asked& asked);

    //! Insertions on one tensor with one scale share one Q/DQ pair; the pair goes before the first reader it feeds.
    //! One scale per tensor: insertions that several findings ask for one tensor with different scales take one of
    //! them, the largest (a larger scale rounds more coarsely but clips nothing the others kept), when those scales
    //! and the scales of the Qs already reading the tensor are within patterns::kMostUnifiedScaleRatio of each other.
    //! Further apart, no scale serves them all: each such insertion is refused, with the scales in the reason.
    void reconcileInsertionScales();

    void planInsertions();
    std::string insertionReads(const FixEdit& edit, std::vector<std::pair<std::uint32_t, std::uint32_t>>& reads) const;

    //! The scale and zero point a new pair takes: scaleFrom's (per-tensor), times scaleFactor, or the fixed scale
    //! with zero point 0 of scaleFrom's quantized type (int8 for uint8: TensorRT takes signed INT8 only). nullopt
    //! when scaleFrom has no one per-tensor scale.
    std::optional<QdqParameters> insertionParameters(const FixEdit& edit) const;

    //! New initializers holding a per-tensor Q/DQ's scale (FLOAT) and zero point (INT8/UINT8, when it has one),
    //! named base/scale and base/zero_point; returns their names ("" for no zero point).
    std::pair<std::string, std::string> addScaleInitializers(const QdqParameters& parameters, const std::string& base);

    void planPair(const std::vector<const Asked*>& asked,
                  const std::vector<std::pair<std::uint32_t, std::uint32_t>>& reads, const QdqParameters& parameters);

    PlannedEdit plannedFrom(const Asked& asked) const;

    const Report& mReport;
    const OnnxGraph& mGraph;
    const FixOptions& mOptions;
    const std::map<std::string, std::string>& mRefused;
    FixPlan mPlan;
    std::vector<Asked> mAsked;
    //! Insertions refused by reconcileInsertionScales (index into mAsked -> the reason)
    std::map<std::size_t, std::string> mInsertionRefusals;
    std::set<std::uint32_t> mRemoved;
    std::set<std::uint32_t> mRenamedOutputs;            //!< nodes whose output becomes a network output's name
    std::map<std::string, std::string> mRenamedTensors; //!< tensor -> the network output name it takes
    std::set<std::string> mUsedNames;
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> mClaimed; //!< (node, slot) -> rule changing it
    std::set<std::string> mNewlyRead; //!< existing tensors that an edit makes more nodes read
    //! DequantizeLinear nodes added by QOperator rewrites, by inputs and axis: (output, node inserted before)
    std::map<std::string, std::pair<std::string, std::uint32_t>> mSharedDequantize;
    bool mSharedDequantizeSeeded = false;
    std::set<std::uint32_t> mReadByRewrite; //!< DQs of the model that a rewrite's float op reads: removals keep them
};

} // namespace qdq::fix_planning
