// The fix report: every edit with the findings that asked for it, what was skipped and left to the user, and the
// model before and after (findings, predicted layers). Text for people, JSON for scripts (docs/fix-schema.md).
#include "qdq/fix.h"
#include "src/reporters/build_mode_json.h"
#include "src/reporters/json_writer.h"
#include "src/reporters/text_layout.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace qdq
{

namespace
{

std::string editTitle(const FixEdit& edit)
{
    switch (edit.kind)
    {
    case FixEdit::Kind::kInsertQdq:
        return "insert QuantizeLinear -> DequantizeLinear on " + edit.tensor;
    case FixEdit::Kind::kRemoveQdqPair:
        return "remove " + (edit.nodes.size() == 2 ? edit.nodes[0] + " -> " + edit.nodes[1] : std::string("Q/DQ"));
    case FixEdit::Kind::kSetScale:
        return "set the scale of " + std::to_string(edit.nodes.size()) + " Q/DQ node(s) from " + edit.scaleFrom;
    case FixEdit::Kind::kFloatBias:
        return "replace the quantized constant behind " + (edit.nodes.empty() ? std::string("its DQ") : edit.nodes[0]) +
               " with a float initializer";
    case FixEdit::Kind::kUnwrapPlugin:
        return "take " + (edit.nodes.empty() ? std::string("the plugin") : edit.nodes[0]) +
               " out of its DQ/Q wrapping (Q -> plugin -> DQ)";
    case FixEdit::Kind::kSymmetricInt8:
        return "make " + std::to_string(edit.nodes.size()) + " Q/DQ node(s) reading zero point " + edit.tensor +
               " symmetric INT8";
    case FixEdit::Kind::kRewriteQuantizedOp:
        return "rewrite " + (edit.nodes.empty() ? std::string("the quantized op") : edit.nodes[0]) +
               " as DequantizeLinear -> float op -> QuantizeLinear";
    }
    return "edit";
}

std::string_view editKindName(FixEdit::Kind kind)
{
    switch (kind)
    {
    case FixEdit::Kind::kInsertQdq:
        return "insert-qdq";
    case FixEdit::Kind::kRemoveQdqPair:
        return "remove-qdq-pair";
    case FixEdit::Kind::kSetScale:
        return "set-scale";
    case FixEdit::Kind::kFloatBias:
        return "float-bias";
    case FixEdit::Kind::kUnwrapPlugin:
        return "unwrap-plugin";
    case FixEdit::Kind::kSymmetricInt8:
        return "symmetric-int8";
    case FixEdit::Kind::kRewriteQuantizedOp:
        return "rewrite-quantized-op";
    }
    return "edit";
}

std::string joined(const std::vector<std::string>& items, const std::string& separator = ", ")
{
    std::string out;
    for (const auto& item : items)
    {
        out += (out.empty() ? "" : separator) + item;
    }
    return out;
}

//! Items (skipped edits, findings left to the user) grouped by rule and reason, in first-seen order: each group is
//! its items' indices in `items`.
template <typename Item>
std::vector<std::vector<std::size_t>> groupedByRuleAndReason(const std::vector<Item>& items)
{
    std::vector<std::vector<std::size_t>> groups;
    std::map<std::pair<std::string_view, std::string_view>, std::size_t> index;
    for (std::size_t i = 0; i < items.size(); ++i)
    {
        auto [it, inserted] = index.emplace(
            std::make_pair(std::string_view(items[i].rule), std::string_view(items[i].why)), groups.size());
        if (inserted)
        {
            groups.emplace_back();
        }
        groups[it->second].push_back(i);
    }
    return groups;
}

std::string padded(const std::string& text, std::size_t width)
{
    return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

} // namespace

namespace
{

//! The --autocast section: what became the low type, and each node kept in FP32 under its reason (printed once).
std::string renderAutocastText(const AutocastSummary& autocast)
{
    std::string out = "\nAutocast (" + autocast.target + (autocast.castIo ? ", graph inputs and outputs too" : "") +
                      ", opset " + std::to_string(autocast.opset) + "):\n";
    if (!autocast.changed)
    {
        out += "  nothing to convert: no float node or constant the target type can take\n";
    }
    out += "  " + std::to_string(autocast.nodesLowered) + " float node(s) now " + autocast.target + ", " +
           std::to_string(autocast.initializersConverted) + " constant(s) converted (" +
           std::to_string(autocast.bytesBefore) + " -> " + std::to_string(autocast.bytesAfter) + " bytes), " +
           std::to_string(autocast.castsInserted) + " Cast(s) inserted, " + std::to_string(autocast.constantCopies) +
           " constant(s) copied for readers of both types\n";
    out += "  Q/DQ scales: " +
           std::string(autocast.qdqScalesLowered ? autocast.target + " (opset >= 19)" : "FP32 (opset < 19)") +
           (autocast.qdqKeptFp32 > 0 ? "; " + std::to_string(autocast.qdqKeptFp32) + " Q/DQ node(s) keep FP32 scales"
                                     : std::string()) +
           "\n";
    std::size_t keptNodes = 0;
    for (const auto& group : autocast.kept)
    {
        keptNodes += group.nodes.size();
    }
    out += "  kept in FP32 (" + std::to_string(keptNodes) + " node(s)):\n";
    // By reason, its sentence once; the first names of a long group (the JSON lists every node).
    constexpr std::size_t kMostNamesPerReason = 12;
    for (const auto& group : autocast.kept)
    {
        std::string nodes;
        for (std::size_t i = 0; i < group.nodes.size() && i < kMostNamesPerReason; ++i)
        {
            nodes += (i == 0 ? "" : ", ") + group.nodes[i];
        }
        if (group.nodes.size() > kMostNamesPerReason)
        {
            nodes += " and " + std::to_string(group.nodes.size() - kMostNamesPerReason) +
                     " more (--format json lists them all)";
        }
        out += "    [" + group.reason + "] " + std::to_string(group.nodes.size()) + ": " + group.why + ":\n      " +
               nodes + "\n";
    }
    for (const auto& note : autocast.notes)
    {
        out += "  note: " + note + "\n";
    }
    return out;
}

void writeAutocastJson(JsonWriter& json, const AutocastSummary& autocast)
{
    json.beginObject();
    json.member("target", autocast.target);
    json.member("cast_io", autocast.castIo);
    json.member("opset", static_cast<std::uint64_t>(autocast.opset < 0 ? 0 : autocast.opset));
    json.member("changed", autocast.changed);
    json.member("qdq_scales_lowered", autocast.qdqScalesLowered);
    json.member("qdq_kept_fp32", static_cast<std::uint64_t>(autocast.qdqKeptFp32));
    json.member("nodes_lowered", static_cast<std::uint64_t>(autocast.nodesLowered));
    json.member("initializers_converted", static_cast<std::uint64_t>(autocast.initializersConverted));
    json.member("bytes_before", autocast.bytesBefore);
    json.member("bytes_after", autocast.bytesAfter);
    json.member("casts_inserted", static_cast<std::uint64_t>(autocast.castsInserted));
    json.member("constant_copies", static_cast<std::uint64_t>(autocast.constantCopies));
    json.member("external_inlined", static_cast<std::uint64_t>(autocast.externalInlined));
    json.member("underflow_values", static_cast<std::uint64_t>(autocast.underflowValues));
    json.key("kept_fp32").beginArray();
    for (const auto& group : autocast.kept)
    {
        json.beginObject().member("reason", group.reason).member("why", group.why).member("nodes", group.nodes);
        json.endObject();
    }
    json.endArray();
    json.member("notes", autocast.notes);
    json.endObject();
}

//! Names, the first `most` of them, and how many more.
std::string firstNames(const std::vector<std::string>& names, std::size_t most)
{
    std::string text;
    for (std::size_t i = 0; i < names.size() && i < most; ++i)
    {
        text += (i == 0 ? "" : ", ") + names[i];
    }
    if (names.size() > most)
    {
        text += " and " + std::to_string(names.size() - most) + " more (--format json lists them all)";
    }
    return text;
}

//! With the implicit engine: its layers against the predicted explicit engine's, as "What it buys" counts them.
void writeImplicitAgainstExplicit(std::string& out, const FixReport& report)
{
    const CalibrationFixSummary& calibration = *report.calibration;
    const PredictionSummary& predicted = report.after.predicted;
    out += "  implicit engine -> predicted explicit engine: " + std::to_string(calibration.implicitLayers) + " -> " +
           std::to_string(predicted.layers) + " layers, standalone Q/DQ " +
           std::to_string(calibration.implicitStandaloneQdq) + " -> " + std::to_string(predicted.standaloneQdq) +
           ", conv layers with an Add " + std::to_string(calibration.implicitConvWithAdd) + " -> " +
           std::to_string(predicted.convWithResidualAdd) + ", ConvActPool " +
           std::to_string(calibration.implicitConvActPool) + " -> " + std::to_string(predicted.convActPool) + "\n";
}

//! The --calibration-cache section: what the cache held, what took its scales, what stayed float, and the trtexec
//! command for the result.
std::string renderCalibrationText(const FixReport& report)
{
    const CalibrationFixSummary& calibration = *report.calibration;
    std::string out = "\nCalibration cache: " + calibration.cache;
    out += calibration.header.empty()
               ? " (dynamic ranges)\n"
               : " (" + calibration.header + ": TensorRT " + calibration.version + ", " + calibration.algorithm + ")\n";
    out += "  " + std::to_string(calibration.entries) + " scale(s), " + std::to_string(calibration.used) +
           " taken by the new Q/DQ\n";
    if (!calibration.internalNames.empty())
    {
        out +=
            "  " + std::to_string(calibration.internalNames.size()) +
            " name(s) TensorRT made itself, in no ONNX model (not used): " + firstNames(calibration.internalNames, 3) +
            "\n";
    }
    if (!calibration.namesNotInModel.empty())
    {
        out += "  " + std::to_string(calibration.namesNotInModel.size()) +
               " name(s) the model lacks (the cache may come from another export; not used): " +
               firstNames(calibration.namesNotInModel, 6) + "\n";
    }
    out += "  " + std::to_string(calibration.quantizedOps) +
           " weighted op(s) run INT8: " + std::to_string(calibration.weightQdq) +
           " Q/DQ on weights (per-channel scales from the weights), " + std::to_string(calibration.activationQdq) +
           " on activations (scales from the cache)\n";
    if (calibration.opsetTo != calibration.opsetFrom)
    {
        out += "  opset " + std::to_string(calibration.opsetFrom) + " -> " + std::to_string(calibration.opsetTo) +
               " (per-channel Q/DQ needs 13)" +
               (calibration.rewrittenForOpset.empty()
                    ? std::string()
                    : "; rewritten for it: " + firstNames(calibration.rewrittenForOpset, 4)) +
               "\n";
    }
    if (!calibration.keptFloat.empty())
    {
        out += "  left float (" + std::to_string(calibration.keptFloat.size()) + "):\n";
        for (const auto& kept : calibration.keptFloat)
        {
            out += "    " + kept.node + ": " + kept.why + "\n";
        }
    }
    if (!calibration.implicitEngine.empty())
    {
        out += "  followed the implicit engine " + calibration.implicitEngine + " (" +
               std::to_string(calibration.implicitLayers) + " layers): " +
               (calibration.engineDifferences.empty()
                    ? std::string("every weighted op runs as it ran there (INT8 or float)\n")
                    : std::to_string(calibration.engineDifferences.size()) + " weighted op(s) differ:\n");
        for (const auto& difference : calibration.engineDifferences)
        {
            out += "    " + difference + "\n";
        }
        writeImplicitAgainstExplicit(out, report);
    }
    for (const auto& note : calibration.notes)
    {
        out += "  note: " + note + "\n";
    }
    if (!calibration.trtexec.empty())
    {
        out += "  build it with: " + calibration.trtexec + "\n";
    }
    return out;
}

void writeCalibrationJson(JsonWriter& json, const CalibrationFixSummary& calibration)
{
    json.beginObject();
    json.member("cache", calibration.cache);
    json.member("header", calibration.header);
    json.member("tensorrt_version", calibration.version);
    json.member("algorithm", calibration.algorithm);
    json.member("entries", static_cast<std::uint64_t>(calibration.entries));
    json.member("used", static_cast<std::uint64_t>(calibration.used));
    json.member("internal_names", calibration.internalNames);
    json.member("names_not_in_model", calibration.namesNotInModel);
    json.member("quantized_ops", static_cast<std::uint64_t>(calibration.quantizedOps));
    json.member("weight_qdq", static_cast<std::uint64_t>(calibration.weightQdq));
    json.member("activation_qdq", static_cast<std::uint64_t>(calibration.activationQdq));
    json.key("kept_float").beginArray();
    for (const auto& kept : calibration.keptFloat)
    {
        json.beginObject();
        json.member("node", kept.node);
        json.member("why", kept.why);
        json.endObject();
    }
    json.endArray();
    json.member("opset_from", static_cast<std::uint64_t>(std::max<std::int64_t>(0, calibration.opsetFrom)));
    json.member("opset_to", static_cast<std::uint64_t>(std::max<std::int64_t>(0, calibration.opsetTo)));
    json.member("rewritten_for_opset", calibration.rewrittenForOpset);
    json.member("trtexec", calibration.trtexec);
    json.member("implicit_engine", calibration.implicitEngine);
    json.member("implicit_layers", static_cast<std::uint64_t>(calibration.implicitLayers));
    json.member("engine_differences", calibration.engineDifferences);
    json.key("implicit_engine_counts").beginObject();
    json.member("layers", static_cast<std::uint64_t>(calibration.implicitLayers));
    json.member("standalone_qdq", static_cast<std::uint64_t>(calibration.implicitStandaloneQdq));
    json.member("conv_with_add", static_cast<std::uint64_t>(calibration.implicitConvWithAdd));
    json.member("conv_act_pool", static_cast<std::uint64_t>(calibration.implicitConvActPool));
    json.endObject();
    json.member("notes", calibration.notes);
    json.endObject();
}

//! The model, the output, the checker's verdict, the build mode and what autocast did.
void writeFixHeader(std::string& out, const FixReport& report)
{
    out += "qdq-doctor fix\n";
    out += "  model:   " + report.source + "\n";
    if (report.dryRun)
    {
        out += "  output:  " + (report.output.empty() ? std::string("none") : report.output) +
               " (dry run: nothing written)\n";
    }
    else
    {
        const std::string weights = report.dataFile.empty() ? "" : "its weights in " + report.dataFile;
        out += "  output:  " + report.output +
               (report.unchanged && weights.empty() ? " (no edit: a byte-identical copy)"
                : report.unchanged                  ? " (no edit: the same model, " + weights + ")"
                : weights.empty()                   ? ""
                                                    : " (" + weights + ")") +
               "\n";
    }
    out += "  ONNX checker and shape inference: " + report.checker + "\n";
    out += "  build mode: " + describeBuildMode(report.buildMode) + "\n";
    if (report.calibration)
    {
        // Prose and long tensor names: wrapped at the report's width.
        std::string section = renderCalibrationText(report);
        out += text_layout::wrapLines(section, text_layout::kDefaultWidth);
        if (!out.empty() && out.back() != '\n')
        {
            out += "\n";
        }
    }
    if (report.autocast)
    {
        out += renderAutocastText(*report.autocast);
    }
}

//! Whether the edit's numeric cost is worth a line: it changes numbers (a float bias, exact, prints none).
bool changesNumbers(const PlannedEdit& edit)
{
    return edit.numericCost &&
           !(edit.numericCost->stepGrowth == 1.0 && edit.numericCost->clippedShare.value_or(1.0) == 0.0);
}

//! A rounding step 1.5 times the old one or more, or a clamp on more than 1% of an old range: worth measuring.
constexpr double kNotableStepGrowth = 1.5;
constexpr double kNotableClippedShare = 0.01;

//! One line after the edits when some of them make the numbers notably coarser: how many, the worst, what to do.
void writeNumericCostSummary(std::string& out, const FixReport& report)
{
    std::size_t coarser = 0;
    std::size_t clipping = 0;
    double worstGrowth = 0;
    double worstShare = 0;
    for (const auto& edit : report.edits)
    {
        if (!edit.numericCost)
        {
            continue;
        }
        const double growth = edit.numericCost->stepGrowth.value_or(0.0);
        const double share = edit.numericCost->clippedShare.value_or(0.0);
        coarser += growth >= kNotableStepGrowth ? 1 : 0;
        clipping += share > kNotableClippedShare ? 1 : 0;
        worstGrowth = std::max(worstGrowth, growth);
        worstShare = std::max(worstShare, share);
    }
    if (coarser == 0 && clipping == 0)
    {
        return;
    }
    char line[256];
    std::string parts;
    if (coarser > 0)
    {
        std::snprintf(line, sizeof(line), "%zu %s the rounding step %.1f times coarser or more (largest x%.2f)",
                      coarser, coarser == 1 ? "makes" : "make", kNotableStepGrowth, worstGrowth);
        parts += line;
    }
    if (clipping > 0)
    {
        std::snprintf(line, sizeof(line), "%s%zu %s part of an old range (largest %.1f%%)", parts.empty() ? "" : "; ",
                      clipping, clipping == 1 ? "clamps" : "clamp", 100.0 * worstShare);
        parts += line;
    }
    // Wrapped at the report's width: the line is prose, unlike the edits' names above it.
    out += text_layout::wrapLines("  Numbers: of these edits, " + parts +
                                      ". TensorRT needs them, but they change the outputs: compare the fixed model's "
                                      "accuracy with the original's on your data (docs/fix.md, \"Numeric cost\").",
                                  text_layout::kDefaultWidth) +
           "\n";
}

//! Each edit made, with the rules that asked for it and what it added, removed and changed.
void writeEdits(std::string& out, const FixReport& report)
{
    out += "\nEdits (" + std::to_string(report.edits.size()) + "):\n";
    if (report.edits.empty())
    {
        out += report.calibration ? "  none: every op stays float (the Calibration cache section says why)\n"
                                  : "  none: no finding asks for a graph edit that fix can make\n";
    }
    std::size_t index = 0;
    for (const auto& edit : report.edits)
    {
        out += "  " + std::to_string(++index) + ". " + editTitle(edit.edit) + "\n";
        if (edit.rule == "calibration-cache")
        {
            // One pair of many, each a scale and its readers: the long form would be six lines each.
            out += "     for:      " + edit.finding + "\n     scale:    " + edit.scale + "\n";
            continue;
        }
        out += "     asked by: " + joined(edit.rules) + "\n";
        if (!edit.scale.empty())
        {
            out += "     scale:    " + edit.scale + "\n";
        }
        if (changesNumbers(edit))
        {
            out += "     numbers:  " + edit.numericCost->summary + "\n";
        }
        if (!edit.added.empty())
        {
            out += "     added:    " + joined(edit.added) + "\n";
        }
        if (!edit.removed.empty())
        {
            out += "     removed:  " + joined(edit.removed) + "\n";
        }
        for (const auto& change : edit.changed)
        {
            out += "     changed:  " + change + "\n";
        }
    }
    writeNumericCostSummary(out, report);
}

//! The edits not made, grouped by rule and reason.
void writeSkipped(std::string& out, const FixReport& report)
{
    if (!report.skipped.empty())
    {
        out += "\nSkipped (" + std::to_string(report.skipped.size()) + "):\n";
        // Edits skipped for one reason are listed under it, so a refusal that quotes a long new warning is printed
        // once, not once per edit (EfficientNet-B0 with Q/DQ on its conv inputs: 16 refusals of 1,500 characters).
        for (const auto& group : groupedByRuleAndReason(report.skipped))
        {
            const SkippedEdit& first = report.skipped[group.front()];
            if (group.size() == 1)
            {
                out += "  - " + editTitle(first.edit) + " (" + first.rule + "): " + first.why + "\n";
                continue;
            }
            out += "  - " + std::to_string(group.size()) + " edits (" + first.rule + "): " + first.why + "\n";
            for (const std::size_t member : group)
            {
                out += "      " + editTitle(report.skipped[member].edit) + "\n";
            }
        }
    }
}

//! The findings fix cannot fix, grouped by rule and reason.
void writeUnfixed(std::string& out, const FixReport& report)
{
    if (!report.unfixed.empty())
    {
        out += "\nLeft to you (" + std::to_string(report.unfixed.size()) + " finding(s)):\n";
        for (const auto& group : groupedByRuleAndReason(report.unfixed))
        {
            const UnfixedFinding& first = report.unfixed[group.front()];
            const std::size_t count = group.size();
            out += "  - " + first.rule + (count > 1 ? " (" + std::to_string(count) + ")" : std::string()) + ": " +
                   first.why + "\n";
        }
    }
}

//! Before -> after counts of the model alone: findings by severity and by rule, and the predicted engine.
void writeCounts(std::string& out, const FixReport& report)
{
    out += "\nWhat it buys (the model alone, before -> after):\n";
    const auto row = [&out](const std::string& what, std::size_t before, std::size_t after)
    { out += "  " + padded(what, 34) + padded(std::to_string(before), 6) + "-> " + std::to_string(after) + "\n"; };
    row("warnings and errors", report.before.warnings + report.before.errors,
        report.after.warnings + report.after.errors);
    std::map<std::string, std::pair<std::size_t, std::size_t>> bySlug;
    for (const auto& [slug, count] : report.before.bySlug)
    {
        bySlug[slug].first = count;
    }
    for (const auto& [slug, count] : report.after.bySlug)
    {
        bySlug[slug].second = count;
    }
    // The rows by rule count every finding, info included, so they say so: under "warnings and errors 11 -> 0" alone,
    // "standalone-qdq 2 -> 1" (an info left) read as a warning left.
    bool byRuleHeader = false;
    for (const auto& [slug, counts] : bySlug)
    {
        if (counts.first != counts.second)
        {
            if (!byRuleHeader)
            {
                out += "  findings of each rule, info included:\n";
                byRuleHeader = true;
            }
            row("  " + slug, counts.first, counts.second);
        }
    }
    row("predicted layers", report.before.predicted.layers, report.after.predicted.layers);
    row("predicted standalone Q/DQ layers", report.before.predicted.standaloneQdq,
        report.after.predicted.standaloneQdq);
    row("predicted conv layers with an Add", report.before.predicted.convWithResidualAdd,
        report.after.predicted.convWithResidualAdd);
    row("predicted ConvActPool layers", report.before.predicted.convActPool, report.after.predicted.convActPool);
}

//! The saving (or the time touched) of the applied fixes in the given engine.
void writeSaving(std::string& out, const FixReport& report)
{
    if (report.expectedSavingMs)
    {
        char buffer[64];
        std::snprintf(buffer, sizeof(buffer), "%.3f ms", *report.expectedSavingMs);
        out += "  expected saving of the applied fixes in the given engine: " + std::string(buffer) +
               " (each layer counted once; docs/savings.md)\n";
    }
    else if (report.fixedCostMs)
    {
        char buffer[64];
        std::snprintf(buffer, sizeof(buffer), "%.3f ms", *report.fixedCostMs);
        out += "  time of the layers the fixed findings touch in the given engine: " + std::string(buffer) + "\n";
    }
}

//! The new warnings of the fixed model, and those kept as the price of removing an error.
void writeNewWarnings(std::string& out, const FixReport& report)
{
    out += "  new warnings: " + (report.newFindings.empty() ? std::string("none") : "") + "\n";
    for (const auto& finding : report.newFindings)
    {
        out += "    - " + finding + "\n";
    }
    if (!report.priceOfErrorFixes.empty())
    {
        out += "  kept as the price of removing an error (TensorRT rejects the model without those edits):\n";
        for (const auto& price : report.priceOfErrorFixes)
        {
            out += "    - " + price + "\n";
        }
    }
}

//! The notes of the run.
void writeNotes(std::string& out, const FixReport& report)
{
    if (!report.notes.empty())
    {
        out += "\nNotes:\n";
        for (const auto& note : report.notes)
        {
            out += "  - " + note + "\n";
        }
    }
}

} // namespace

std::string renderFixText(const FixReport& report)
{
    std::string out;
    writeFixHeader(out, report);
    writeEdits(out, report);
    writeSkipped(out, report);
    writeUnfixed(out, report);
    writeCounts(out, report);
    writeSaving(out, report);
    writeNewWarnings(out, report);
    writeNotes(out, report);
    return out;
}

namespace
{

void writeSide(JsonWriter& json, const FixSide& side)
{
    json.beginObject();
    json.member("findings", static_cast<std::uint64_t>(side.findings));
    json.member("errors", static_cast<std::uint64_t>(side.errors));
    json.member("warnings", static_cast<std::uint64_t>(side.warnings));
    json.key("by_rule").beginObject();
    for (const auto& [slug, count] : side.bySlug)
    {
        json.member(slug, static_cast<std::uint64_t>(count));
    }
    json.endObject();
    json.key("predicted").beginObject();
    json.member("layers", static_cast<std::uint64_t>(side.predicted.layers));
    json.member("standalone_qdq_layers", static_cast<std::uint64_t>(side.predicted.standaloneQdq));
    json.member("conv_layers_with_residual_add", static_cast<std::uint64_t>(side.predicted.convWithResidualAdd));
    json.member("conv_act_pool_layers", static_cast<std::uint64_t>(side.predicted.convActPool));
    json.member("reformat_layers", static_cast<std::uint64_t>(side.predicted.reformats));
    json.endObject();
    json.endObject();
}

void writeEdit(JsonWriter& json, const FixEdit& edit)
{
    json.member("kind", editKindName(edit.kind));
    if (!edit.tensor.empty())
    {
        json.member("tensor", edit.tensor);
    }
    if (!edit.nodes.empty())
    {
        json.member("nodes", edit.nodes);
    }
    if (!edit.consumers.empty())
    {
        json.key("consumers").beginArray();
        for (const auto& [node, slot] : edit.consumers)
        {
            json.beginObject().member("node", node).member("input", static_cast<std::uint64_t>(slot)).endObject();
        }
        json.endArray();
    }
    if (!edit.scaleFrom.empty())
    {
        json.member("scale_from", edit.scaleFrom);
        json.member("scale_reason", edit.scaleReason);
    }
}

//! The edits made, each with its rules, scale, numeric cost and what it added, removed and changed.
void writeEditsJson(JsonWriter& json, const std::vector<PlannedEdit>& edits)
{
    json.key("edits").beginArray();
    for (const auto& edit : edits)
    {
        json.beginObject();
        writeEdit(json, edit.edit);
        json.member("rule", edit.rule);
        json.member("rules", edit.rules);
        json.member("finding", edit.finding);
        if (!edit.scale.empty())
        {
            json.member("scale", edit.scale);
        }
        if (edit.numericCost)
        {
            json.key("numeric_cost").beginObject();
            json.member("step_growth", edit.numericCost->stepGrowth);
            json.member("clipped_share", edit.numericCost->clippedShare);
            json.member("summary", edit.numericCost->summary);
            json.endObject();
        }
        if (!edit.pluginScales.empty())
        {
            json.key("plugin_scales").beginArray();
            for (const auto& entry : edit.pluginScales)
            {
                json.beginObject();
                json.member("side", entry.side);
                json.member("tensor", entry.tensor);
                json.member("from", entry.from);
                json.member("scale", entry.scale); // null when not a constant per-tensor scale
                json.member("zero_point", entry.zeroPoint);
                json.endObject();
            }
            json.endArray();
        }
        json.member("added", edit.added);
        json.member("removed", edit.removed);
        json.member("changed", edit.changed);
        json.endObject();
    }
    json.endArray();
}

} // namespace

std::string renderFixJson(const FixReport& report)
{
    std::string out;
    JsonWriter json(out);
    json.beginObject();
    json.member("schema", "qdq-doctor/fix/1");
    json.member("model", report.source);
    json.member("output", report.output);
    json.member("dry_run", report.dryRun);
    json.member("written", report.written);
    json.member("unchanged", report.unchanged);
    json.member("data_file", report.dataFile);
    json.member("checker", report.checker);
    json.key("build_mode");
    writeBuildModeJson(json, report.buildMode);
    if (report.calibration)
    {
        json.key("calibration");
        writeCalibrationJson(json, *report.calibration);
    }
    if (report.autocast)
    {
        json.key("autocast");
        writeAutocastJson(json, *report.autocast);
    }
    writeEditsJson(json, report.edits);
    json.key("skipped").beginArray();
    for (const auto& skipped : report.skipped)
    {
        json.beginObject();
        writeEdit(json, skipped.edit);
        json.member("rule", skipped.rule);
        json.member("why", skipped.why);
        json.endObject();
    }
    json.endArray();
    json.key("not_fixed").beginArray();
    for (const auto& unfixed : report.unfixed)
    {
        json.beginObject();
        json.member("rule", unfixed.rule).member("message", unfixed.message).member("why", unfixed.why);
        json.endObject();
    }
    json.endArray();
    json.key("before");
    writeSide(json, report.before);
    json.key("after");
    writeSide(json, report.after);
    json.member("new_warnings", report.newFindings);
    json.member("price_of_error_fixes", report.priceOfErrorFixes);
    if (report.expectedSavingMs)
    {
        json.member("expected_saving_ms", roundMs(*report.expectedSavingMs));
    }
    if (report.fixedCostMs)
    {
        json.member("fixed_cost_ms", roundMs(*report.fixedCostMs));
    }
    json.member("notes", report.notes);
    json.endObject();
    return out;
}

} // namespace qdq
