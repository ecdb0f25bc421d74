// Large-input generators for the benchmarks (see bench/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace qdq::bench
{

//! A trtexec --verbose style build log of about targetBytes: parse map, fusion events, tactic timing noise, an
//! Engine Layer Information block of `layers` layers and a --dumpProfile table. Returns bytes written.
std::uint64_t generateBuildLog(const std::string& path, std::uint64_t targetBytes, std::size_t layers);

//! A detailed --exportLayerInfo JSON (TensorRT 10 style, with Metadata) of `layers` layers.
std::uint64_t generateLayerInfo(const std::string& path, std::size_t layers);

//! The --exportProfile JSON matching generateLayerInfo's layers.
std::uint64_t generateProfile(const std::string& path, std::size_t layers);

//! A Q/DQ ONNX model (Q/DQ -> Conv -> Relu blocks) with inline float weights, about targetBytes in size.
std::uint64_t generateOnnx(const std::string& path, std::uint64_t targetBytes, std::size_t* nodesWritten = nullptr);

//! The Q/DQ ONNX model matching generateLayerInfo's names (Q -> DQ -> Conv -> Relu per layer, small weights), so
//! that diagnose can correlate the two.
//! With weightBytes, the weights add up to about that many bytes; with epilogueQdqEvery = n, every n-th conv has a
//! Q/DQ pair before its Relu (a qdq-inside-conv-epilogue finding that `fix` removes). With externalData, the weights
//! go to "<path>.data" (location "<file name>.data", one after the other with offset and length, as ONNX's
//! save_model with save_as_external_data lays them out); the returned size is the model file's.
std::uint64_t generateMatchingOnnx(const std::string& path, std::size_t layers, std::uint64_t weightBytes = 0,
                                   std::size_t epilogueQdqEvery = 0, bool externalData = false);

//! A ViT-style Q/DQ transformer (encoder blocks of 10 attention heads quantized as ONNX Runtime quantizes DeiT) of at
//! least targetNodes nodes; blocksWritten gets the number of blocks.
std::uint64_t generateTransformerOnnx(const std::string& path, std::size_t targetNodes,
                                      std::size_t* blocksWritten = nullptr);

//! The engine TensorRT 10 could build from a transformer model with --profilingVerbosity=detailed: one Myelin graph
//! ("myl0") of about `layers` kernel layers, as in ../shared/realdata/ivit-simple-mlp-qdq-trt10-myelin. Each MatMul
//! is a `gemm` kernel (INT8 when both its inputs come from a DequantizeLinear) that also executes those
//! DequantizeLinear nodes; the other nodes, in graph order, fill `kgen` kernels named `__myl_<ops>_myl0_<k>`. Every
//! kernel's Metadata lists its ONNX nodes (U+001F-separated). Writes the layer list and a profile of it.
std::uint64_t generateMyelinEngine(const std::string& modelPath, const std::string& layersPath,
                                   const std::string& profilePath, std::size_t layers);

} // namespace qdq::bench
