// `fix --autocast fp16|bf16`: the model's float part written in FP16 (or BF16) for a strongly typed TensorRT build,
// with what overflows or loses accuracy in the low type kept in FP32 and named with the reason (docs/fix.md#autocast).
#pragma once

#include "qdq/limits.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace onnx
{
class ModelProto;
}

namespace qdq
{

struct AutocastOptions
{
    enum class Target
    {
        kNone, //!< no autocast
        kFp16,
        kBf16,
    };
    Target target = Target::kNone;
    //! --autocast-io: float graph inputs and outputs take the low type too (no Cast at the boundary).
    bool castIo = false;

    bool enabled() const { return target != Target::kNone; }
};

//! "fp16" or "bf16" ("" for kNone).
std::string autocastTargetName(AutocastOptions::Target target);

//! The float nodes left in FP32 for one of the documented reasons (docs/fix.md#autocast).
struct AutocastKeptGroup
{
    std::string reason; //!< a short key: "reduction", "overflow-op", "layernorm-pattern", ...
    std::string why;    //!< the sentence the report prints
    std::vector<std::string> nodes;
};

struct AutocastSummary
{
    std::string target; //!< "fp16" / "bf16"
    bool castIo = false;
    std::int64_t opset = 0;        //!< the default domain's opset
    bool qdqScalesLowered = false; //!< opset >= 19: Q/DQ scales written in the low type
    std::size_t nodesLowered = 0;  //!< float nodes now computing in the low type
    std::size_t initializersConverted = 0;
    std::uint64_t bytesBefore = 0; //!< bytes of the converted initializers before and after
    std::uint64_t bytesAfter = 0;
    std::size_t castsInserted = 0;
    std::size_t constantCopies = 0;  //!< constants copied in the other type for readers of both types
    std::size_t externalInlined = 0; //!< external-data initializers converted and written inline
    std::size_t qdqKeptFp32 = 0;     //!< Q/DQ nodes whose scales stay FP32
    std::size_t underflowValues = 0; //!< non-zero initializer values below the low type's smallest subnormal (become 0)
    std::vector<AutocastKeptGroup> kept; //!< by reason, in the order reasons first apply in node order
    std::vector<std::string> notes;
    bool changed = false;
};

//! Where the external data of a tensor autocast converts is read from. fix converts a candidate written to a
//! temporary folder: the tensors the writer moved to the candidate's own data file (ownLocation, in ownFolder) are
//! read there; every other location is the model's own and is resolved against the model's folder, never the
//! candidate's (a file there named like the location would be read as the model's weights).
struct AutocastDataSource
{
    std::string modelPath;   //!< the model the user gave: named in errors; its folder holds its data files
    std::string ownLocation; //!< the location of the candidate's own data file ("" when there is none)
    std::string ownFolder;   //!< the folder that file lies in
};

//! Converts the model in place (the graph's own initializers, Constant nodes, Casts, value infos, graph I/O with
//! castIo). Subgraphs are not entered: an op with a subgraph is kept in FP32, and a model whose subgraph reads a
//! tensor of the graph that would change type is refused. An external-data tensor it converts (an initializer, a
//! Constant's or a ConstantOfShape's value) is read through checkExternalData (parsers/external_data_ref.h) and
//! written inline. Throws InputError naming data.modelPath for a model it cannot convert (such a data file missing,
//! outside the model's folder or cut short; a float tensor whose data does not match its dims).
AutocastSummary autocastModel(onnx::ModelProto& model, const AutocastOptions& options, const AutocastDataSource& data);

//! Reads the model at path, converts it and writes it back to path (through a temporary file beside it, renamed onto
//! it). A model with nothing to convert is left untouched (summary.changed false). Memory: the model is held whole
//! (protobuf), about the file's size twice; see docs/fix.md#autocast. parsedModel, when given, receives that memory
//! instead of it being freed before the call returns, for the caller to free where it costs no wall time (about 0.2 s
//! for the 500 MB bench model).
AutocastSummary autocastModelFile(const std::string& path, const AutocastOptions& options, const Limits& limits,
                                  const AutocastDataSource& data, std::shared_ptr<void>* parsedModel = nullptr);

} // namespace qdq
