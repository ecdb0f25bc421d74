// Builds small ONNX graphs in code with the onnx protobuf classes. Used by the tests (read back through the real
// ONNX reader) and by tools/make_samples (the samples/ models).
#pragma once

#include "qdq/onnx_graph.h"

#include <memory>
#include <string>
#include <vector>

namespace qdq::tools
{

class GraphBuilder
{
public:
    GraphBuilder();
    ~GraphBuilder();
    GraphBuilder(const GraphBuilder&) = delete;
    GraphBuilder& operator=(const GraphBuilder&) = delete;

    //! A float graph input with the given shape (a negative dim is unknown). Without dims it has no shape, and the
    //! ONNX checker rejects the model ("Field 'shape' of 'type' is required but missing").
    std::string input(const std::string& name, const std::vector<long>& dims = {});
    //! A float graph output with the given shape. Without dims, it is written with the shape ONNX shape inference
    //! gives it where the inputs' shapes reach it (not through a custom op): the ONNX checker requires a shape on
    //! every graph input and output.
    void output(const std::string& tensor, const std::vector<long>& dims = {});
    //! A float initializer with the given dims (values all `value`).
    std::string weight(const std::string& name, std::vector<long> dims, float value = 0.01f);
    //! An INT32 / INT8 initializer.
    std::string int32Constant(const std::string& name, std::vector<long> dims);
    std::string int8Constant(const std::string& name, std::vector<long> dims);
    //! A UINT8 initializer holding 0, 1, 2, ... (modulo 200).
    std::string uint8Constant(const std::string& name, std::vector<long> dims);
    //! A per-tensor float scale initializer.
    std::string scale(const std::string& name, float value);
    std::string scaleVector(const std::string& name, std::vector<float> values);
    //! An INT8 zero point (0) initializer; uint8 when unsignedType.
    std::string zeroPoint(const std::string& name, bool unsignedType = false, int value = 0);
    //! A zero-valued scalar zero point of any ONNX element type (FLOAT8E4M3FN = 17, INT4 = 22, ...), as raw data.
    std::string typedZeroPoint(const std::string& name, int dataType);
    //! An initializer of a one-byte or packed 4-bit ONNX element type (INT8 = 3, FLOAT8E4M3FN = 17, INT4 = 22,
    //! FLOAT4E2M1 = 23, ...) with the given dims, every byte `byte` (4-bit types: two elements per byte), as raw data.
    std::string typedConstant(const std::string& name, int dataType, std::vector<long> dims, unsigned char byte = 0x11);

    //! Adds a node; returns its first output name ("<name>_out" when outputs empty).
    std::string node(const std::string& opType, const std::string& name, std::vector<std::string> inputs,
                     std::vector<std::string> outputs = {}, const std::string& domain = "");
    //! Adds a node that writes no tensor at all (the reader must accept it: nothing in ONNX's wire format forbids it).
    void nodeWithoutOutputs(const std::string& opType, const std::string& name, std::vector<std::string> inputs,
                            const std::string& domain = "");
    void intAttribute(const std::string& nodeName, const std::string& attribute, long value);

    //! x -> Q(scale) -> DQ(scale); returns the DQ output. Node names: <prefix>/QuantizeLinear,
    //! <prefix>/DequantizeLinear.
    std::string qdq(const std::string& prefix, const std::string& tensor, float scaleValue = 0.05f);
    //! A weight initializer with a per-channel Q/DQ (axis 0) for a conv of `outChannels`; returns the DQ output.
    std::string quantizedWeight(const std::string& prefix, long outChannels, long inChannels, long kernel = 3);
    //! DQ(int8 weight initializer) only (TensorRT 10 / ONNX Runtime style).
    std::string int8Weight(const std::string& prefix, long outChannels, long inChannels, long kernel = 3);

    void floatAttribute(const std::string& nodeName, const std::string& attribute, float value);
    void stringAttribute(const std::string& nodeName, const std::string& attribute, const std::string& value);
    void intsAttribute(const std::string& nodeName, const std::string& attribute, std::vector<long> values);
    //! Declares an operator set (e.g. a custom plugin domain), or sets the version of one already declared (the
    //! standard domain "" starts at 17).
    void opset(const std::string& domain, long version);
    //! Writes the serialized model to a file.
    void save(const std::string& path) const;

    //! Serializes and reads back through readOnnxFromBuffer.
    OnnxGraph build(const std::string& pathForMessages = "test.onnx") const;
    std::string serialize() const;

private:
    struct Impl;
    std::unique_ptr<Impl> mImpl;
};

} // namespace qdq::tools
