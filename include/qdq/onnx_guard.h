// ONNX's shape inference (libonnx) trusts the model it reads. In ONNX 1.12 (Debian's libonnx1), the inference of Conv
// and its relatives takes the kernel's spatial dimensions from the weight and then indexes the dilations, strides,
// pads and the input's dimensions, all sized by the input's rank, with them: a weight of higher rank than the input
// reads past the end of those vectors and dies with SIGSEGV (found by tests/fuzz/fuzz_graph_commands; a test in
// tests/test_hostile.cpp). qdq-doctor runs shape inference on models from anywhere, so it runs it through a schema
// registry whose Conv-family schemas first check what the library assumes and refuse the node with an inference error
// (which fix reports like any other) instead.
#pragma once

#include <onnx/defs/schema.h>

namespace qdq
{

//! ONNX's schema registry with the Conv-family inference functions guarded: Conv, ConvInteger, QLinearConv and
//! ConvTranspose infer nothing when an input is missing or untyped, and fail inference when the weight's rank differs
//! from the input's. Pass it to onnx::shape_inference::InferShapes in place of OpSchemaRegistry::Instance().
onnx::ISchemaRegistry* guardedSchemaRegistry();

} // namespace qdq
