// The steps of loadInputs, shared with the pipelined diagnose (src/diagnose.cpp): which files to read in which
// order, reading one file into Inputs, and completing Inputs once every file is read. Internal to src/.
#pragma once

#include "qdq/load_inputs.h"

#include <optional>
#include <string>
#include <vector>

namespace qdq::input_plan
{

struct PlannedFile
{
    std::string path;
    InputKind kind = InputKind::kUnknown;
    //! A build log read when no model is given: its parser lines are rebuilt into inputs.onnx (log_graph.h).
    bool rebuildGraph = false;
    OnnxReadOptions onnxReading; //!< InputFiles::onnxReading, for an ONNX model
};

struct InputPlan
{
    std::vector<PlannedFile> files; //!< role options first (--onnx, --layers, --profile, --log), then the rest
    //! Index of the ONNX model when it can be read on a second thread: exactly one, and other files beside it.
    std::optional<std::size_t> separateOnnx;
    //! For each folder given: what was read from it and what was skipped (Inputs::inputNotes).
    std::vector<std::string> notes;
};

//! Kinds of every file (from content; role options checked against it) and the reading order; a folder among the
//! files stands for the artifacts in it. Throws InputError for a role whose content is another kind, for a second
//! file of one kind, for a folder without artifacts and for no files at all. Reads only the first bytes of each
//! file.
InputPlan planInputs(const InputFiles& files);

//! Reads one planned file into its member of inputs (and nothing else of inputs, so the ONNX model can be read
//! on another thread while the other files are read).
void readInput(Inputs& inputs, const PlannedFile& file, const Limits& limits, const ProgressCallback& progress);

//! Once every file is read: inputs.sources in plan order, and the plan derived from a profile when there is no
//! layer list. Does not touch inputs.onnx, so it may run while the model is still being read on another thread.
void finishInputs(Inputs& inputs, const InputPlan& plan);

} // namespace qdq::input_plan
