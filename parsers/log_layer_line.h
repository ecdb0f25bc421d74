// Parsing of one engine layer as a TensorRT build log prints it. Internal to parsers/.
//
//   Layer(<Type>): <name>, Tactic: <id>, <inputs> -> <outputs>
//       8.0-8.4 tensors: `name[Type(d0,d1,...)]`; 8.5+ tensors: `name (Type[d0,d1:V,...])`; lists may be empty.
//   Name: <name>, LayerType: <type>, Inputs: [ { Name: .., Location: .., Dimensions: [..], Format/Datatype: .. }],
//       Outputs: [...], ParameterType: .., ..., TacticValue: 0x.., StreamId: 0, Metadata: [ONNX Layer: ..]
//       (the single-line records of the 10.x `Layers:` block, IEngineInspector ONELINE and --dumpLayerInfo)
#pragma once

#include "qdq/engine_plan.h"

#include <string>
#include <string_view>
#include <vector>

namespace qdq
{

//! Parses a `Layer(Type): name, Tactic: id, in -> out` line (without logger prefix). On failure returns false and
//! says why; layer is then unspecified.
bool parseLogLayerLine(std::string_view text, EngineLayer& layer, std::string& why);

//! Parses a single-line `Name: ..., LayerType: ..., ...` record. On failure returns false and says why.
bool parseLayerInfoRecord(std::string_view text, EngineLayer& layer, std::string& why);

//! Parses one line of TensorRT 11's `I/O Tensors:` block (FORMATS-trt11.md T3): `Name: x, IOMode: Input, DataType:
//! Float, Dimensions: [..], Location: Device, IsShapeInferenceIO: false, ProfileInfo: [ { MinShape: .., Format: .. }]`.
//! On failure returns false and says why.
bool parseIoTensorRecord(std::string_view text, IoTensor& tensor, std::string& why);

//! Parses a dims list "1,64:32,56,56" (vectorized "C:V" gives C and vectorWidth V). False on anything else.
bool parseDimensions(std::string_view text, std::vector<std::int64_t>& dims, int& vectorWidth);

} // namespace qdq
