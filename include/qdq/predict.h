// `qdq-doctor predict`: the engine the simulator expects TensorRT to build, as text or JSON
// (docs/predict-schema.md).
#pragma once

#include "qdq/analysis.h"

#include <functional>
#include <string>
#include <string_view>

namespace qdq
{

//! Parses a --precision value (fp32, fp16, int8, best) into the simulator's flags; throws InputError otherwise.
void applyPrecisionFlag(const std::string& precision, SimulationOptions& options);
//! Parses a --trt-version value ("8.4", "10.16.0") into major and minor; throws InputError otherwise.
void applyTrtVersion(const std::string& version, SimulationOptions& options);

//! Counts of a prediction as a user asks for them.
struct PredictionSummary
{
    std::size_t layers = 0;              //!< every predicted layer
    std::size_t computeLayers = 0;       //!< layers that execute ONNX nodes
    std::size_t standaloneQdq = 0;       //!< standalone Quantize/Dequantize layers
    std::size_t requantize = 0;          //!< requantize (Scale) layers
    std::size_t reformats = 0;           //!< reformats and copies that execute no node
    std::size_t guessed = 0;             //!< layers where the simulator guesses
    std::size_t convWithResidualAdd = 0; //!< conv layers that carry a residual Add
    std::size_t convActPool = 0;         //!< Conv + activation + MaxPool layers
};
PredictionSummary summarizePrediction(const Prediction& prediction, const OnnxGraph& graph);

std::string renderPredictionJson(const Prediction& prediction, const OnnxGraph& graph, const std::string& source);
//! The same JSON handed to write a megabyte at a time (what `predict --format json` prints).
void writePredictionJson(const Prediction& prediction, const OnnxGraph& graph, const std::string& source,
                         const std::function<void(std::string_view)>& write);
//! predictEngine and writePredictionJson in one, with the same result and the same text: on a large model, the Q/DQ
//! nodes' part of the JSON is written on a second thread while the layers are built.
Prediction predictEngineWritingJson(const OnnxGraph& graph, const SimulationOptions& options, const std::string& source,
                                    const std::function<void(std::string_view)>& write);
std::string renderPredictionText(const Prediction& prediction, const OnnxGraph& graph, const std::string& source);

} // namespace qdq

namespace qdq
{

//! The prediction as an engine layer list (names, TensorRT types, tensors with precisions, the ONNX nodes each layer
//! executes as Metadata), so that `diff` can hold a model's predicted engine against a real one.
EnginePlan predictedEnginePlan(const Prediction& prediction, const OnnxGraph& graph, const std::string& sourcePath);

//! When inputs hold a model (or a log's graph) but no engine layer list, predicts the engine and stands it in as the
//! layer list; returns whether it did. builtWith: the inputs of the engine it will be compared with, whose build
//! flags and TensorRT version the prediction then assumes.
//! request: the command line's build mode (resolveBuildMode).
bool standInPredictedEngine(Inputs& inputs, const Inputs* builtWith = nullptr, const BuildModeRequest& request = {});

} // namespace qdq
