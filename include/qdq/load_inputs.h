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

} // namespace qdq
