// One engine from several descriptions: the layer-info JSON, the build log's engine block and the profile of one
// build name the same layers, and each tells different facts about them (a names-only JSON tells names; the log's
// `Layer(...)` lines tell types, tactics and tensor formats; a detailed JSON adds Metadata; the profile tells times).
// The layer lists are merged layer by layer, each fact from the file that tells most of it, and every fact remembers
// its file so evidence cites where it was read.
#pragma once

#include "qdq/analysis.h"

#include <cstddef>
#include <string_view>
#include <vector>

namespace qdq
{

//! How many layer names two lists share (names compared without a trailing " [profile N]").
struct NameOverlap
{
    std::size_t first = 0;  //!< distinct names in the first list
    std::size_t second = 0; //!< distinct names in the second list
    std::size_t common = 0; //!< names in both
    //! True when the lists can describe one engine: either is empty, or they share at least half of the names of
    //! the shorter one.
    bool sameEngine() const;
};
NameOverlap layerNameOverlap(const std::vector<std::string_view>& first, const std::vector<std::string_view>& second);

//! Merges two layer lists of one engine. Layers are matched by name (full name, then without " [profile N]"); the
//! result keeps first's order, with second's unmatched layers after the layer they follow in second. Per layer, the
//! record (type, origin, weights, per-type keys), the tensors, the tactic and the Metadata are each taken from the
//! file that tells more of them (empty fields of the record filled from the other), and recorded in
//! EngineLayer::factSources against EnginePlan::mergedFrom = {first.sourcePath, second.sourcePath}.
EnginePlan mergeEnginePlans(const EnginePlan& first, const EnginePlan& second);

//! Called once when the inputs are read (loadInputs, loadAndDiagnose). Throws InputError naming both files when two
//! descriptions of the engine (layer-info JSON, the build log's engine block, the profile JSON) share too few layer
//! names to describe one engine. When the layer-info JSON and the build log's engine block are both given, merges them
//! into inputs.mergedEngine and says from which files in inputs.engineMergeNote.
void mergeEngineDescriptions(Inputs& inputs);

} // namespace qdq
