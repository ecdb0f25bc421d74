// `qdq-doctor diff`: where the time went between two builds of one network (implicit vs explicit INT8, QAT vs PTQ,
// TensorRT 8 vs 10). Layers are aligned through the ONNX nodes they execute; the unit of comparison is a region, the
// smallest set of layers on each side that covers the same ONNX nodes.
#pragma once

#include "qdq/analysis.h"

#include <optional>
#include <string>
#include <vector>

namespace qdq
{

struct DiffRegion
{
    std::vector<std::size_t> baselineLayers;  //!< indices into the baseline engine plan
    std::vector<std::size_t> candidateLayers; //!< indices into the candidate engine plan
    std::vector<std::string> onnxNodes;       //!< node names the region covers (either side's names)
    double baselineMs = 0.0;
    double candidateMs = 0.0;
    double deltaMs = 0.0; //!< candidate - baseline
    bool hasTimes = false;

    //! What differs, in words ("lost fusion Conv+MaxPool", "2 standalone Q/DQ layers", "precision FP16 -> INT8").
    std::vector<std::string> differences;
    //! Candidate-side findings whose engine layers fall in this region.
    std::vector<Finding> findings;
    bool explained = false;
    std::string alignment; //!< "onnx-names", "structure", "neighbour", "unmatched"
};

//! A root cause of the candidate (src/advice) and the part of the difference that falls in its regions.
struct DiffCause
{
    std::string title;
    Severity severity = Severity::kInfo;
    std::optional<double> savingMs; //!< what fixing it saves in the candidate (docs/savings.md)
    //! The deltas of the regions whose candidate time it owns most of (each region counts for one cause).
    double deltaMs = 0.0;
    std::size_t regions = 0;
};

struct DiffReport
{
    std::vector<Inputs::Source> baselineInputs;
    std::vector<Inputs::Source> candidateInputs;
    std::optional<double> baselineMs; //!< total: sum of the profile, or the log's GPU Compute Time mean
    std::optional<double> candidateMs;
    std::string baselineTotalSource; //!< "profile", "GPU Compute Time", "none"
    std::string candidateTotalSource;
    double deltaMs = 0.0;
    double explainedMs = 0.0;
    double unexplainedMs = 0.0;
    bool perLayerTimes = false;      //!< both sides have per-layer times, so regions carry deltas
    std::vector<DiffRegion> regions; //!< ranked by |delta|, largest change first
    //! The candidate's root causes, in its report's order (largest saving first), for the headline.
    std::vector<DiffCause> causes;
    std::vector<std::string> notes;
};

DiffReport diffEngines(const Inputs& baseline, const Inputs& candidate);

std::string renderDiffText(const DiffReport& report, const Inputs& baseline, const Inputs& candidate,
                           std::size_t maxRegions = 20);
std::string renderDiffJson(const DiffReport& report, const Inputs& baseline, const Inputs& candidate);

} // namespace qdq
