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
    //! How the ONNX model is read: `fix` reads the quantized constants it rewrites, whatever their size.
    OnnxReadOptions onnxReading;
};

//! What a folder given as input holds: its files whose kind the content tells (name order, byte-wise), and the
//! entries skipped, each with why. Subfolders are not entered.
struct FolderArtifacts
{
    struct File
    {
        std::string path;
        InputKind kind = InputKind::kUnknown;
    };
    std::vector<File> files;
    std::vector<std::string> skipped; //!< "name (why)"
    //! "read FOLDER: a (onnx), b (layer-info); skipped c (why), d/ (a folder)", for the report's notes.
    std::string note(const std::string& folder) const;
};

//! Lists a folder's artifacts. Throws InputError naming the folder when it cannot be listed.
FolderArtifacts listFolderArtifacts(const std::string& folder);

//! True when path names a folder (following links).
bool isFolder(const std::string& path);

//! Reads every file. A folder among InputFiles::files stands for the artifacts in it (listFolderArtifacts; the
//! files it skipped are named in Inputs::inputNotes), and is refused when it holds none. Throws InputError for
//! unreadable input and for ambiguous sets (two files of one kind).
Inputs loadInputs(const InputFiles& files, const Limits& limits, const ProgressCallback& progress = {});

//! loadInputs() and diagnose() as one pipeline on two threads: the ONNX model is read and the engine predicted from
//! it while the other files are still being read. The same report as diagnose(loadInputs(...)); inputs holds the
//! files when it returns (it is replaced, and left partly filled when reading throws).
Report loadAndDiagnose(const InputFiles& files, const Limits& limits, const ProgressCallback& progress, Inputs& inputs,
                       const AnalysisOptions& options = {}, const WhileRulesRun& whileRulesRun = {});

} // namespace qdq
