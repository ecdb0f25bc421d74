// Walks of the engine's tensors through the layers the builder inserted (reformats and copies: "Reformatting
// CopyNode for Input Tensor 0 to X", "X copy", Origin REFORMAT). Those layers change a tensor's format or type but
// not its data, and no user can edit them: a rule that reasons about where a tensor comes from or who reads it, and
// so names a layer in its advice, looks through them to the layers that run the model's nodes.
#pragma once

#include "qdq/analysis.h"

#include <optional>
#include <string>
#include <vector>

namespace qdq::patterns
{

//! True for a layer the builder inserted to convert a tensor: the correlation's kInsertedReformat, or (without a
//! correlation for it) a "Reformatting CopyNode ..." or "... copy" name.
bool isBuilderInserted(const Context& context, std::size_t layer);

//! A tensor followed back through the builder's reformats to the tensor a layer of the model (or the network's input)
//! writes.
struct ReformatSource
{
    std::string tensor;                  //!< the tensor before the first reformat (the asked one when none)
    std::optional<std::size_t> producer; //!< the layer that writes it; unset for a network input
    std::vector<std::size_t> reformats;  //!< the builder layers passed, nearest to the asked tensor first
    //! The name the model gives this data: of the tensors from the source to the asked one, the first whose name the
    //! builder did not make ("Reformatted Output Tensor 0 to X" names X's own output before the reformat that writes
    //! the model's tensor); `tensor` when all of them are builder names.
    std::string modelTensor;
};
ReformatSource sourceThroughReformats(const Context& context, const std::string& tensor);

//! One reader of a tensor, directly or through builder reformats.
struct ReformatReader
{
    std::size_t layer = 0;              //!< the reading layer (never a builder-inserted one)
    std::size_t input = 0;              //!< which of its inputs
    std::string tensor;                 //!< the tensor it reads: the asked one or a reformatted copy of it
    std::vector<std::size_t> reformats; //!< the builder layers between the asked tensor and the reader
};
//! The layers that read `tensor`, directly or through builder reformats, in layer order of discovery.
std::vector<ReformatReader> readersThroughReformats(const Context& context, const std::string& tensor);

} // namespace qdq::patterns
