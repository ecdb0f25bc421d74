#include "tools/onnx_builder.h"

#include "qdq/onnx_guard.h"
#include "qdq/readers.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace qdq::tools
{

struct GraphBuilder::Impl
{
    onnx::ModelProto model;
    onnx::GraphProto* graph = nullptr;

    //! An integer initializer of dims holding 0, 1, 2, ... modulo `modulo`.
    std::string integerConstant(const std::string& name, int dataType, const std::vector<long>& dims, long modulo)
    {
        auto* tensor = graph->add_initializer();
        tensor->set_name(name);
        tensor->set_data_type(dataType);
        long count = 1;
        for (long d : dims)
        {
            tensor->add_dims(d);
            count *= d;
        }
        for (long i = 0; i < count; ++i)
        {
            tensor->add_int32_data(static_cast<int>(i % modulo));
        }
        return name;
    }

    //! The model as written: each graph output without a shape takes the shape ONNX shape inference gives it (the
    //! ONNX checker requires a shape on every graph input and output). Only where an input has a shape (without one,
    //! the model is written as built); an output inference cannot reach (behind a custom op) keeps no shape.
    onnx::ModelProto withOutputShapes() const
    {
        onnx::ModelProto result = model;
        if (std::none_of(graph->input().begin(), graph->input().end(),
                         [](const onnx::ValueInfoProto& input) { return input.type().tensor_type().has_shape(); }))
        {
            return result;
        }
        onnx::ModelProto inferred = model;
        try
        {
            // Guarded (qdq/onnx_guard.h): libonnx's Conv inference dies on some graphs the fuzzers build.
            onnx::shape_inference::InferShapes(inferred, guardedSchemaRegistry());
        }
        catch (const std::exception&)
        {
            return result; // a graph inference rejects as a whole: written as built
        }
        for (auto& output : *result.mutable_graph()->mutable_output())
        {
            if (output.type().tensor_type().has_shape())
            {
                continue;
            }
            for (const auto& candidate : inferred.graph().output())
            {
                if (candidate.name() == output.name() && candidate.type().tensor_type().has_shape())
                {
                    *output.mutable_type()->mutable_tensor_type()->mutable_shape() =
                        candidate.type().tensor_type().shape();
                }
            }
        }
        return result;
    }
};

GraphBuilder::GraphBuilder() : mImpl(std::make_unique<Impl>())
{
    mImpl->model.set_ir_version(8);
    mImpl->model.set_producer_name("qdq-doctor-tests");
    auto* opset = mImpl->model.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    mImpl->graph = mImpl->model.mutable_graph();
    mImpl->graph->set_name("test");
}

GraphBuilder::~GraphBuilder() = default;

namespace
{

//! A float tensor type with the given shape (a negative dim is unknown); no shape when dims is empty.
void setFloatType(onnx::ValueInfoProto& value, const std::vector<long>& dims)
{
    auto* tensor = value.mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    if (dims.empty())
    {
        return;
    }
    auto* shape = tensor->mutable_shape();
    for (long d : dims)
    {
        auto* dim = shape->add_dim();
        if (d >= 0)
        {
            dim->set_dim_value(d);
        }
    }
}

} // namespace

std::string GraphBuilder::input(const std::string& name, const std::vector<long>& dims)
{
    auto* value = mImpl->graph->add_input();
    value->set_name(name);
    setFloatType(*value, dims);
    return name;
}

void GraphBuilder::output(const std::string& tensor, const std::vector<long>& dims)
{
    auto* value = mImpl->graph->add_output();
    value->set_name(tensor);
    setFloatType(*value, dims);
}

std::string GraphBuilder::weight(const std::string& name, std::vector<long> dims, float value)
{
    auto* tensor = mImpl->graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    long count = 1;
    for (long d : dims)
    {
        tensor->add_dims(d);
        count *= d;
    }
    for (long i = 0; i < count; ++i)
    {
        tensor->add_float_data(value);
    }
    return name;
}

std::string GraphBuilder::int32Constant(const std::string& name, std::vector<long> dims)
{
    auto* tensor = mImpl->graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::INT32);
    long count = 1;
    for (long d : dims)
    {
        tensor->add_dims(d);
        count *= d;
    }
    for (long i = 0; i < count; ++i)
    {
        tensor->add_int32_data(static_cast<int>(i));
    }
    return name;
}

std::string GraphBuilder::int8Constant(const std::string& name, std::vector<long> dims)
{
    return mImpl->integerConstant(name, onnx::TensorProto::INT8, dims, 100);
}

std::string GraphBuilder::scale(const std::string& name, float value)
{
    auto* tensor = mImpl->graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_float_data(value);
    return name;
}

std::string GraphBuilder::scaleVector(const std::string& name, std::vector<float> values)
{
    auto* tensor = mImpl->graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_dims(static_cast<long>(values.size()));
    for (float v : values)
    {
        tensor->add_float_data(v);
    }
    return name;
}

std::string GraphBuilder::uint8Constant(const std::string& name, std::vector<long> dims)
{
    return mImpl->integerConstant(name, onnx::TensorProto::UINT8, dims, 200);
}

std::string GraphBuilder::zeroPoint(const std::string& name, bool unsignedType, int value)
{
    auto* tensor = mImpl->graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(unsignedType ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8);
    tensor->add_int32_data(value);
    return name;
}

std::string GraphBuilder::typedZeroPoint(const std::string& name, int dataType)
{
    auto* tensor = mImpl->graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(dataType);
    tensor->set_raw_data(std::string(1, '\0'));
    return name;
}

namespace
{

//! A node with its op type, name, domain and inputs; the caller adds the outputs.
onnx::NodeProto* addNode(onnx::GraphProto& graph, const std::string& opType, const std::string& name,
                         const std::vector<std::string>& inputs, const std::string& domain)
{
    auto* node = graph.add_node();
    node->set_op_type(opType);
    node->set_name(name);
    if (!domain.empty())
    {
        node->set_domain(domain);
    }
    for (const auto& in : inputs)
    {
        node->add_input(in);
    }
    return node;
}

} // namespace

std::string GraphBuilder::node(const std::string& opType, const std::string& name, std::vector<std::string> inputs,
                               std::vector<std::string> outputs, const std::string& domain)
{
    auto* node = addNode(*mImpl->graph, opType, name, inputs, domain);
    if (outputs.empty())
    {
        outputs.push_back(name + "_out");
    }
    for (const auto& out : outputs)
    {
        node->add_output(out);
    }
    return outputs.front();
}

void GraphBuilder::nodeWithoutOutputs(const std::string& opType, const std::string& name,
                                      std::vector<std::string> inputs, const std::string& domain)
{
    addNode(*mImpl->graph, opType, name, inputs, domain);
}

void GraphBuilder::intAttribute(const std::string& nodeName, const std::string& attribute, long value)
{
    for (auto& node : *mImpl->graph->mutable_node())
    {
        if (node.name() == nodeName)
        {
            auto* a = node.add_attribute();
            a->set_name(attribute);
            a->set_type(onnx::AttributeProto::INT);
            a->set_i(value);
        }
    }
}

std::string GraphBuilder::qdq(const std::string& prefix, const std::string& tensor, float scaleValue)
{
    std::string s = scale(prefix + "/scale", scaleValue);
    std::string z = zeroPoint(prefix + "/zero_point");
    std::string q = node("QuantizeLinear", prefix + "/QuantizeLinear", {tensor, s, z});
    return node("DequantizeLinear", prefix + "/DequantizeLinear", {q, s, z});
}

std::string GraphBuilder::quantizedWeight(const std::string& prefix, long outChannels, long inChannels, long kernel)
{
    std::string w = weight(prefix + ".weight", {outChannels, inChannels, kernel, kernel});
    std::string s = scaleVector(prefix + "/w_scale", std::vector<float>(static_cast<std::size_t>(outChannels), 0.01f));
    auto* zp = mImpl->graph->add_initializer();
    zp->set_name(prefix + "/w_zero_point");
    zp->set_data_type(onnx::TensorProto::INT8);
    zp->add_dims(outChannels);
    for (long i = 0; i < outChannels; ++i)
    {
        zp->add_int32_data(0);
    }
    std::string q =
        node("QuantizeLinear", prefix + "/_weight_quantizer/QuantizeLinear", {w, s, prefix + "/w_zero_point"});
    intAttribute(prefix + "/_weight_quantizer/QuantizeLinear", "axis", 0);
    std::string dq =
        node("DequantizeLinear", prefix + "/_weight_quantizer/DequantizeLinear", {q, s, prefix + "/w_zero_point"});
    intAttribute(prefix + "/_weight_quantizer/DequantizeLinear", "axis", 0);
    return dq;
}

std::string GraphBuilder::int8Weight(const std::string& prefix, long outChannels, long inChannels, long kernel)
{
    std::string w = int8Constant(prefix + ".weight_quantized", {outChannels, inChannels, kernel, kernel});
    std::string s = scaleVector(prefix + "/w_scale", std::vector<float>(static_cast<std::size_t>(outChannels), 0.01f));
    std::string dq = node("DequantizeLinear", prefix + "/weight_DequantizeLinear", {w, s});
    intAttribute(prefix + "/weight_DequantizeLinear", "axis", 0);
    return dq;
}

void GraphBuilder::floatAttribute(const std::string& nodeName, const std::string& attribute, float value)
{
    for (auto& node : *mImpl->graph->mutable_node())
    {
        if (node.name() == nodeName)
        {
            auto* a = node.add_attribute();
            a->set_name(attribute);
            a->set_type(onnx::AttributeProto::FLOAT);
            a->set_f(value);
        }
    }
}

void GraphBuilder::stringAttribute(const std::string& nodeName, const std::string& attribute, const std::string& value)
{
    for (auto& node : *mImpl->graph->mutable_node())
    {
        if (node.name() == nodeName)
        {
            auto* a = node.add_attribute();
            a->set_name(attribute);
            a->set_type(onnx::AttributeProto::STRING);
            a->set_s(value);
        }
    }
}

void GraphBuilder::intsAttribute(const std::string& nodeName, const std::string& attribute, std::vector<long> values)
{
    for (auto& node : *mImpl->graph->mutable_node())
    {
        if (node.name() == nodeName)
        {
            auto* a = node.add_attribute();
            a->set_name(attribute);
            a->set_type(onnx::AttributeProto::INTS);
            for (long v : values)
            {
                a->add_ints(v);
            }
        }
    }
}

void GraphBuilder::opset(const std::string& domain, long version)
{
    for (auto& existing : *mImpl->model.mutable_opset_import())
    {
        if (existing.domain() == domain) // one entry per domain: the default domain's 17 is replaced
        {
            existing.set_version(version);
            return;
        }
    }
    auto* entry = mImpl->model.add_opset_import();
    entry->set_domain(domain);
    entry->set_version(version);
}

void GraphBuilder::save(const std::string& path) const
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!mImpl->withOutputShapes().SerializeToOstream(&out))
    {
        throw std::runtime_error("cannot write " + path);
    }
}

std::string GraphBuilder::serialize() const
{
    return mImpl->withOutputShapes().SerializeAsString();
}

OnnxGraph GraphBuilder::build(const std::string& pathForMessages) const
{
    return readOnnxFromBuffer(serialize(), pathForMessages);
}

} // namespace qdq::tools
