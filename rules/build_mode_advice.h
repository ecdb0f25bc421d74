// Advice that depends on the build mode (Context::buildMode()): whether it may name the weak-typing precision flags,
// and what replaces them under strong typing.
//
// Sources: TensorRT "Precision Control" page, "Strongly Typed Networks" and "Reduced Precision in Weakly-Typed
// Networks" (https://docs.nvidia.com/deeplearning/tensorrt/11.0.0/inference-library/precision-control.html): a strongly
// typed network takes each tensor's type from the graph and the builder ignores precision flags; "Migrating from
// TensorRT 10.x to 11.x" (https://docs.nvidia.com/deeplearning/tensorrt/latest/api/migration/tensorrt-10x-to-11x.html)
// and its C++ API reference: 11.x removed BuilderFlag::kFP16/kINT8/kBF16 and trtexec's --fp16/--int8/--best/--bf16,
// replaced by FP16 in the graph (ModelOpt AutoCast) and Q/DQ; TensorRT 10.12 release notes: weak typing deprecated.
#pragma once

#include "qdq/analysis.h"

#include <string>

namespace qdq::rules
{

//! Whether advice may name --fp16, --int8, --best, --bf16 or BuilderFlag::kFP16/kINT8: a weakly typed 8.x-10.x build.
inline bool precisionFlagsApply(const Context& context)
{
    return context.buildMode().precisionFlagsApply();
}

//! "" when the inputs or the command line told the typing; otherwise a sentence part that says which mode the advice
//! assumed and how to tell qdq-doctor: " (assumed weakly typed: ...)".
inline std::string assumedTypingNote(const Context& context)
{
    const SimulationOptions& mode = context.buildMode();
    if (!mode.typingAssumed)
    {
        return {};
    }
    return " (assumed " + std::string(typingName(mode.typing)) +
           ": no input tells the typing; pass --strongly-typed, --weakly-typed or --trt-version)";
}

//! How to make float layers that run FP32 run FP16 instead, in the build's own terms. Weak typing: the --fp16 flag
//! (and, on 10.x, the strong-typing alternative since weak typing is deprecated there); strong typing: FP16 in the
//! graph, since no flag picks a precision.
inline std::string fp16Remedy(const Context& context)
{
    const std::string inGraph = "make that part of the graph FP16 (FP16 initializers and Cast nodes: `qdq-doctor fix "
                                "--autocast fp16`, or NVIDIA ModelOpt AutoCast) and keep the Q/DQ";
    const SimulationOptions& mode = context.buildMode();
    if (!mode.precisionFlagsApply())
    {
        return inGraph + " (" + std::string(typingName(mode.typing)) + " build: no flag picks a precision)";
    }
    std::string remedy = "build with FP16 enabled as well (trtexec --int8 --fp16, or BuilderFlag::kFP16)";
    if (mode.trtMajor == 0 || mode.trtMajor >= 10)
    {
        remedy += "; strongly typed (--stronglyTyped, and always in TensorRT 11, which has no --fp16): " + inGraph;
    }
    return remedy + assumedTypingNote(context);
}

//! The float type a layer runs in once its Q/DQ are removed, for advice: "FP16" in a weakly typed build (with --fp16),
//! the graph's float type under strong typing (FP32 in an FP32 model: make that part FP16 in the graph as well).
inline std::string floatTypeWithoutQdq(const Context& context)
{
    if (precisionFlagsApply(context))
    {
        return "FP16" + assumedTypingNote(context);
    }
    return "the graph's float type (strongly typed: FP16 only where the model is FP16, e.g. after `qdq-doctor fix "
           "--autocast fp16`)";
}

} // namespace qdq::rules
