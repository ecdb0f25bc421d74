// fix removes errors before it minds warnings: an edit that removes an error (what TensorRT's parser rejects) is never
// refused for a warning it brings, and fix on every ONNX Runtime export ends with no error it can remove.
#include "test_support.h"

#include "qdq/fix.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

FixReport fixModel(const std::filesystem::path& model, const std::string& outputName,
                   std::vector<std::string> rules = {})
{
    InputFiles files;
    files.files = {model.string()};
    FixOptions options;
    options.output = (tempDir("fix-errors-first") / outputName).string();
    options.rules = std::move(rules);
    return runFix(files, options, Limits{});
}

std::size_t findingsOf(const FixSide& side, const std::string& slug)
{
    for (const auto& [rule, count] : side.bySlug)
    {
        if (rule == slug)
        {
            return count;
        }
    }
    return 0;
}

bool madeEditChanging(const FixReport& report, const std::string& rule, const std::string& change)
{
    return std::any_of(report.edits.begin(), report.edits.end(),
                       [&](const PlannedEdit& edit)
                       {
                           return edit.rule == rule &&
                                  std::any_of(edit.changed.begin(), edit.changed.end(),
                                              [&](const std::string& line) { return line.rfind(change, 0) == 0; });
                       });
}

bool skippedFor(const FixReport& report, const std::string& rule, const std::string& node, const std::string& why)
{
    return std::any_of(report.skipped.begin(), report.skipped.end(),
                       [&](const SkippedEdit& skipped)
                       {
                           return skipped.rule == rule &&
                                  std::find(skipped.edit.nodes.begin(), skipped.edit.nodes.end(), node) !=
                                      skipped.edit.nodes.end() &&
                                  skipped.why.find(why) != std::string::npos;
                       });
}

} // namespace

// ONNX Runtime's quantize_static export of the YOLOv8-style model (tests/fixtures/export_ort_shared.py): the INT32
// biases of the cv1 convs before each Split were refused because a requantize-before-split warning named those convs;
// that warning came from the Q/DQ removal beside them. The bias edits are now made, the removal is still refused.
TEST(FixErrorsFirst, OrtYoloBiasesBeforeEachSplitAreMadeFloat)
{
    const FixReport report = fixModel(fixture("yolov8lite-ort-qdq.onnx"), "yolo-fixed.onnx");
    EXPECT_EQ(report.before.errors, 1u);
    EXPECT_EQ(findingsOf(report.before, "quantized-bias"), 1u);
    EXPECT_EQ(report.after.errors, 0u);
    EXPECT_EQ(findingsOf(report.after, "quantized-bias"), 0u);
    for (const char* block : {"/b4", "/b6", "/b8", "/n1", "/n2"})
    {
        const std::string conv = std::string(block) + "/cv1/conv/Conv";
        EXPECT_TRUE(madeEditChanging(report, "quantized-bias", conv + " input 2: ")) << conv;
        // The warning's real cause is still refused.
        EXPECT_TRUE(skippedFor(report, "qdq-inside-conv-epilogue", conv + "_output_0_QuantizeLinear",
                               "new requantize-before-split warning"))
            << conv;
    }
    EXPECT_EQ(findingsOf(report.after, "requantize-before-split"), 0u);
    EXPECT_TRUE(report.priceOfErrorFixes.empty());
    EXPECT_EQ(report.checker, "passed");
}

// Near-identical: the same model with the Q/DQ removals and the Concat scales asked for, the bias edits not. No
// error-removing edit is planned, and the removals beside the Splits are refused for the warning they bring, as before.
// (The removals alone bring no warning: the Split's Qs take the Concat's scale only with the scale edits.)
TEST(FixErrorsFirst, OrtYoloEpilogueRemovalsAloneAreStillRefused)
{
    const FixReport report = fixModel(fixture("yolov8lite-ort-qdq.onnx"), "yolo-epilogue-only.onnx",
                                      {"qdq-inside-conv-epilogue", "concat-scale-mismatch"});
    EXPECT_EQ(findingsOf(report.after, "quantized-bias"), 1u);
    EXPECT_EQ(report.after.errors, 1u);
    EXPECT_TRUE(skippedFor(report, "qdq-inside-conv-epilogue", "/n2/cv1/conv/Conv_output_0_QuantizeLinear",
                           "new requantize-before-split warning"));
    EXPECT_FALSE(std::any_of(report.edits.begin(), report.edits.end(),
                             [](const PlannedEdit& edit) { return edit.removesError; }));
    EXPECT_EQ(findingsOf(report.after, "requantize-before-split"), 0u);
}

// Every ONNX Runtime static export at hand, QDQ and QOperator: fix leaves no error. (Dynamic quantization has no
// static scale to write; fix says so, tested in test_fix_quantized_ops.cpp.)
TEST(FixErrorsFirst, EveryOrtStaticExportEndsWithoutErrors)
{
    std::vector<std::filesystem::path> models = {fixture("yolov8lite-ort-qdq.onnx"),
                                                 fixture("unet-convtranspose-ort-qdq.onnx"),
                                                 fixture("ort-qdq-small.onnx"), fixture("ort-qoperator-small.onnx")};
    if (sharedDir())
    {
        models.push_back(sharedModel("resnet18-ort-qdq.onnx"));
        models.push_back(sharedModel("deit-tiny-ort-qdq.onnx"));
    }
    for (const auto& model : models)
    {
        const FixReport report = fixModel(model, model.stem().string() + "-fixed.onnx");
        EXPECT_EQ(report.after.errors, 0u) << model;
        // The errors there were went by edits fix made (ort-qdq-small was exported with float biases: none).
        EXPECT_EQ(report.before.errors > 0, std::any_of(report.edits.begin(), report.edits.end(),
                                                        [](const PlannedEdit& edit) { return edit.removesError; }))
            << model;
    }
}
