// NodeProto and AttributeProto decoded straight from their protobuf bytes, without building protobuf messages:
// on graphs of hundreds of thousands of nodes the message objects and their string copies cost more than the rest
// of the read. Names are views into the given bytes.
#pragma once

#include "qdq/onnx_graph.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qdq::onnx_wire
{

//! Protobuf wire types (the low three bits of a field's tag), shared by the reader and the model writer.
enum WireType : int
{
    kVarint = 0,
    kFixed64 = 1,
    kLengthDelimited = 2,
    kStartGroup = 3,
    kEndGroup = 4,
    kFixed32 = 5,
};

//! The NodeProto fields the reader keeps. Views point into the decoded bytes.
struct NodeFields
{
    std::string_view name;
    std::string_view opType;
    std::string_view domain;
    std::vector<std::string_view> inputs;
    std::vector<std::string_view> outputs;
    std::vector<std::string_view> attributes; //!< each AttributeProto's bytes

    void clear()
    {
        name = opType = domain = {};
        inputs.clear();
        outputs.clear();
        attributes.clear();
    }
};

//! Decodes a NodeProto. Unknown fields, and known fields with another wire type, are skipped as protobuf does.
//! Returns an empty string on success, else what is wrong ("truncated field 5").
std::string decodeNode(std::string_view bytes, NodeFields& node);

//! Decodes an AttributeProto into the reader's form (the type inferred from the fields present when it is left
//! out, as in old models). Returns an empty string on success, else what is wrong.
std::string decodeAttribute(std::string_view bytes, OnnxAttribute& attribute);

} // namespace qdq::onnx_wire
