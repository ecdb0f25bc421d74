// The precision summary of one diagnosed engine: where the time went by precision and by layer kind, how much of it
// ran in tensor-core kernels, and how many of the operations the model quantizes really run in INT8 ("did INT8
// happen at all?"). A plain value computed from a diagnose Report and the Inputs it was made from; the text, JSON
// (docs/report-schema.md, "precision_summary") and HTML reports print it.
//
// Invariants (tested on every real engine with a profile): with timings, the groups of byPrecision, the groups of
// byKind, and tensorCores' yes/no/unknown times each add up to totalMs, which is the profile's total (profile entries
// that match no engine layer form one group of their own, "unmatched profile entries"); the layer counts of each
// grouping add up to layers.
#pragma once

#include "qdq/analysis.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qdq
{

//! Whether a kernel uses tensor cores, read from its name (TacticName, or the build log's tactic choice).
enum class TensorCoreUse
{
    kUnknown, //!< no kernel name, or a name that tells neither way (Myelin generated kernels, reformats)
    kYes,     //!< HMMA/IMMA kernels: xmma "tensor16x8x16", cutlass "tensorop", cuDNN "h16816"/"i8816", ...
    kNo,      //!< CUDA-core kernels: "simt", "ffma", DP4A "int8x4"/"icudnn", FP32 "scudnn", "gemv", sm50/sm60
};
std::string_view tensorCoreUseName(TensorCoreUse use);

struct KernelClass
{
    TensorCoreUse use = TensorCoreUse::kUnknown;
    //! The part of the name that decided, for evidence ("tensor16x8x32", "int8x4", "simt"); empty when unknown.
    std::string marker;
};
//! Classifies a kernel (tactic) name. Deterministic, no I/O.
KernelClass classifyKernel(std::string_view kernelName);

//! The kernel name TensorRT chose for an engine layer: its TacticName, else the build log's tactic choice for a layer
//! of that name (the last one timed). Empty when neither file names it (layer info exported without
//! --profilingVerbosity=detailed, a log without tactic names).
struct KernelName
{
    std::string name;
    std::string source;     //!< "TacticName" or "build log"
    std::string file;       //!< the file that told it
    std::uint64_t line = 0; //!< its line there, 0 when unknown
};
KernelName kernelNameOf(const Inputs& inputs, std::size_t layer);

//! Coarse kind of an engine layer, for grouping: "convolution", "deconvolution", "gemm", "pointwise", "pooling",
//! "normalization", "softmax", "reduce", "resize", "shuffle", "slice", "concatenation", "copy", "reformat",
//! "quantize/dequantize", "myelin", "plugin", "bookkeeping", "other", or "unknown" for a names-only layer list.
//! Builder reformats and copies, and standalone Q/DQ layers, are told by their correlation state.
std::string_view layerKind(const EngineLayer& layer, LayerState state);

//! True for the kinds whose kernels are matrix math that tensor cores accelerate (convolution, deconvolution, gemm).
bool isMatrixKind(std::string_view kind);

//! The precision a layer computes in, as a label: its weights' precision when listed (Weights.Type), else for a
//! reformat, copy or standalone Q/DQ that converts types "FP32->INT8" (input -> output), else the first quantized
//! input's precision, else the first input's, else the first output's; "unknown" when no tensor lists a type.
std::string layerPrecisionLabel(const EngineLayer& layer, LayerState state);

struct PrecisionSummary
{
    struct Group
    {
        std::string name;
        std::size_t layers = 0;
        double ms = 0.0; //!< 0 without timings
    };

    bool hasTimings = false;
    std::size_t layers = 0; //!< engine layers (0 without a layer list)
    double totalMs = 0.0;   //!< the profile's total (sum of averageMs); 0 without timings
    //! By precision label (layerPrecisionLabel) and by layer kind (layerKind); largest time first, then most layers,
    //! then name. With timings, profile entries that match no layer form a last group "unmatched profile entries".
    std::vector<Group> byPrecision;
    std::vector<Group> byKind;

    struct TensorCores
    {
        std::size_t yesLayers = 0, noLayers = 0, unknownLayers = 0;
        double yesMs = 0.0, noMs = 0.0, unknownMs = 0.0; //!< add up to totalMs with timings
        //! Share of the total time in tensor-core kernels; unset without timings or without any kernel name.
        std::optional<double> share;
        std::size_t matrixLayers = 0;   //!< convolution, deconvolution and gemm layers
        std::size_t matrixNoLayers = 0; //!< of those, on CUDA-core kernels
        //! Where kernel names came from, or why there are none ("no kernel names: ...").
        std::string evidence;
    } tensorCores;

    struct Int8
    {
        //! "model": ONNX operations with a DequantizeLinear on an input; "engine": without a model, engine layers
        //! that absorbed a Q/DQ node (fused, or a weight Quantize folded into them); "" when neither can be counted.
        std::string basis;
        std::size_t quantized = 0;   //!< operations (or layers) that the model quantizes
        std::size_t int8 = 0;        //!< of those, running with an INT8 input or INT8 weights
        std::size_t notInt8 = 0;     //!< of those, running in a float precision
        std::size_t unknown = 0;     //!< of those, executed by no listed layer, or by layers without tensor types
        std::optional<double> share; //!< int8 / (int8 + notInt8); unset when both are 0
        std::vector<std::string> notInt8Names; //!< the first few operations that do not run INT8
    } int8;

    //! The model's Q/DQ nodes by quantized type ("INT8", "FP8", "INT4", "FP4", "MXFP8"; Group::layers counts the
    //! nodes, ms is 0), from the model alone (qdq/quantized_types.h); empty without a model or Q/DQ.
    std::vector<Group> quantizedTypes;
    //! The quantized types joined for the int8 line ("INT8", "FP8", "FP8/INT4"): the quantized operations run "in"
    //! them. "INT8" without a model.
    std::string quantizedLabel = "INT8";

    std::vector<std::string> notes;
};

//! The summary of a diagnosed engine (report and the inputs diagnose read). O(layers + model nodes).
PrecisionSummary summarizePrecision(const Report& report, const Inputs& inputs);

} // namespace qdq
