// Shared by the libFuzzer targets that read their bytes as a small program building an ONNX graph (fuzz_predict,
// fuzz_graph_commands): the byte reader and the ops the simulator and the rules treat specially.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qdq::fuzz
{

//! The ops a program step may add: the ones the engine simulator, the correlator or a rule treats specially, and a
//! custom one (a plugin).
constexpr const char* kGraphOps[] = {"Conv",
                                     "Relu",
                                     "MaxPool",
                                     "Add",
                                     "Q/DQ",
                                     "Concat",
                                     "Reshape",
                                     "Transpose",
                                     "Gemm",
                                     "Softmax",
                                     "ArgMax",
                                     "Sigmoid",
                                     "Mul",
                                     "BatchNormalization",
                                     "GlobalAveragePool",
                                     "Flatten",
                                     "MatMul",
                                     "LayerNormalization",
                                     "Pad",
                                     "Resize",
                                     "Split",
                                     "Identity",
                                     "Clip",
                                     "Gather",
                                     "TopK",
                                     "NonMaxSuppression",
                                     "custom"};
constexpr std::size_t kGraphOpCount = sizeof(kGraphOps) / sizeof(kGraphOps[0]);

//! The fuzz input read one byte at a time; past its end every byte reads 0.
class Bytes
{
public:
    Bytes(const std::uint8_t* data, std::size_t size) : mData(data), mSize(size) {}
    bool empty() const { return mAt >= mSize; }
    std::uint8_t next() { return mAt < mSize ? mData[mAt++] : 0; }

private:
    const std::uint8_t* mData;
    std::size_t mSize;
    std::size_t mAt = 0;
};

} // namespace qdq::fuzz
