// Reading a user's files for diagnose/diff: kinds from content, or from explicit role options.
#pragma once

#include "qdq/analysis.h"

#include <string>
#include <vector>

namespace qdq
{

struct InputFiles
{
    std::vector<std::string> files; //!< kinds detected from content
    std::string onnx;               //!< --onnx
    std::string layers;             //!< --layers
    std::string profile;            //!< --profile
    std::string log;                //!< --log
};

//! Reads every file. Throws InputError for unreadable input and for ambiguous sets (two files of one kind).
Inputs loadInputs(const InputFiles& files, const Limits& limits, const ProgressCallback& progress = {});

//! loadInputs() and diagnose() as one pipeline on two threads: the ONNX model is read and the engine predicted from
//! it while the other files are still being read. The same report as diagnose(loadInputs(...)); inputs holds the
//! files when it returns (it is replaced, and left partly filled when reading throws).
Report loadAndDiagnose(const InputFiles& files, const Limits& limits, const ProgressCallback& progress, Inputs& inputs,
                       const AnalysisOptions& options = {}, const WhileRulesRun& whileRulesRun = {});

} // namespace qdq
