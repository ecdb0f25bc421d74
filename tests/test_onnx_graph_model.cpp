// The in-memory ONNX graph: nodes decoded from their protobuf bytes (checked against the protobuf classes on
// generated and real models), node tensor lists as views of the tensor table (copies, look-ups by address), consumer
// views, the tensor-name cache, and the node-to-layer index keyed by node index.
#include "test_support.h"

#include "parsers/onnx_node_wire.h"
#include "qdq/analysis.h"
#include "qdq/patterns.h"
#include "qdq/readers.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <random>

namespace
{

using qdq::OnnxAttribute;
using qdq::OnnxGraph;

//! What the protobuf classes make of an attribute, in the reader's terms (the reference for the decoder).
OnnxAttribute referenceAttribute(const onnx::AttributeProto& proto)
{
    OnnxAttribute attribute;
    attribute.name = proto.name();
    int type = proto.type();
    if (type == onnx::AttributeProto::UNDEFINED)
    {
        type = proto.has_f()             ? onnx::AttributeProto::FLOAT
               : proto.has_i()           ? onnx::AttributeProto::INT
               : proto.has_s()           ? onnx::AttributeProto::STRING
               : proto.has_t()           ? onnx::AttributeProto::TENSOR
               : proto.has_g()           ? onnx::AttributeProto::GRAPH
               : proto.floats_size() > 0 ? onnx::AttributeProto::FLOATS
               : proto.ints_size() > 0   ? onnx::AttributeProto::INTS
                                         : onnx::AttributeProto::UNDEFINED;
    }
    switch (type)
    {
    case onnx::AttributeProto::INT:
        attribute.kind = OnnxAttribute::Kind::kInt;
        attribute.i = proto.i();
        break;
    case onnx::AttributeProto::FLOAT:
        attribute.kind = OnnxAttribute::Kind::kFloat;
        attribute.f = proto.f();
        break;
    case onnx::AttributeProto::STRING:
        attribute.kind = OnnxAttribute::Kind::kString;
        attribute.s = proto.s();
        break;
    case onnx::AttributeProto::INTS:
        attribute.kind = OnnxAttribute::Kind::kInts;
        attribute.ints.assign(proto.ints().begin(), proto.ints().end());
        break;
    case onnx::AttributeProto::FLOATS:
        attribute.kind = OnnxAttribute::Kind::kFloats;
        attribute.floats.assign(proto.floats().begin(), proto.floats().end());
        break;
    case onnx::AttributeProto::TENSOR:
        attribute.kind = OnnxAttribute::Kind::kTensor;
        break;
    case onnx::AttributeProto::GRAPH:
    case onnx::AttributeProto::GRAPHS:
        attribute.kind = OnnxAttribute::Kind::kGraph;
        break;
    default:
        attribute.kind = OnnxAttribute::Kind::kOther;
        break;
    }
    return attribute;
}

void expectSameAttribute(const OnnxAttribute& decoded, const OnnxAttribute& expected)
{
    SCOPED_TRACE(expected.name);
    EXPECT_EQ(decoded.name, expected.name);
    EXPECT_EQ(decoded.kind, expected.kind);
    EXPECT_EQ(decoded.i, expected.i);
    EXPECT_EQ(decoded.f, expected.f);
    EXPECT_EQ(decoded.s, expected.s);
    EXPECT_EQ(decoded.ints, expected.ints);
    EXPECT_EQ(decoded.floats, expected.floats);
}

void expectDecodesLikeProtobuf(const onnx::NodeProto& proto)
{
    const std::string bytes = proto.SerializeAsString();
    qdq::onnx_wire::NodeFields fields;
    ASSERT_EQ(qdq::onnx_wire::decodeNode(bytes, fields), "");
    EXPECT_EQ(fields.name, proto.name());
    EXPECT_EQ(fields.opType, proto.op_type());
    EXPECT_EQ(fields.domain, proto.domain());
    ASSERT_EQ(fields.inputs.size(), static_cast<std::size_t>(proto.input_size()));
    for (int i = 0; i < proto.input_size(); ++i)
    {
        EXPECT_EQ(fields.inputs[static_cast<std::size_t>(i)], proto.input(i));
    }
    ASSERT_EQ(fields.outputs.size(), static_cast<std::size_t>(proto.output_size()));
    for (int i = 0; i < proto.output_size(); ++i)
    {
        EXPECT_EQ(fields.outputs[static_cast<std::size_t>(i)], proto.output(i));
    }
    ASSERT_EQ(fields.attributes.size(), static_cast<std::size_t>(proto.attribute_size()));
    for (int i = 0; i < proto.attribute_size(); ++i)
    {
        OnnxAttribute decoded;
        ASSERT_EQ(qdq::onnx_wire::decodeAttribute(fields.attributes[static_cast<std::size_t>(i)], decoded), "");
        expectSameAttribute(decoded, referenceAttribute(proto.attribute(i)));
    }
}

TEST(OnnxNodeWire, DecodesEveryAttributeKindLikeProtobuf)
{
    onnx::NodeProto node;
    node.set_name("conv/Conv");
    node.set_op_type("Conv");
    node.set_domain("ai.onnx");
    node.set_doc_string("skipped: field 6");
    node.add_input("x");
    node.add_input("");
    node.add_input("w");
    node.add_output("y");
    auto* ints = node.add_attribute();
    ints->set_name("pads");
    ints->set_type(onnx::AttributeProto::INTS);
    for (std::int64_t v : std::vector<std::int64_t>{1, -1, 0, 1LL << 40, -(1LL << 62)})
    {
        ints->add_ints(v);
    }
    auto* integer = node.add_attribute();
    integer->set_name("group");
    integer->set_type(onnx::AttributeProto::INT);
    integer->set_i(-7);
    auto* real = node.add_attribute();
    real->set_name("alpha");
    real->set_type(onnx::AttributeProto::FLOAT);
    real->set_f(0.125F);
    auto* floats = node.add_attribute();
    floats->set_name("scales");
    floats->set_type(onnx::AttributeProto::FLOATS);
    floats->add_floats(1.5F);
    floats->add_floats(-2.0F);
    auto* text = node.add_attribute();
    text->set_name("mode");
    text->set_type(onnx::AttributeProto::STRING);
    text->set_s(std::string("nearest\0x", 9));
    auto* tensor = node.add_attribute();
    tensor->set_name("value");
    tensor->set_type(onnx::AttributeProto::TENSOR);
    tensor->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    auto* graph = node.add_attribute();
    graph->set_name("body");
    graph->set_type(onnx::AttributeProto::GRAPH);
    graph->mutable_g()->set_name("inner");
    auto* untyped = node.add_attribute(); // old models leave the type out: inferred from the field present
    untyped->set_name("axis");
    untyped->set_i(3);
    auto* untypedInts = node.add_attribute();
    untypedInts->set_name("perm");
    untypedInts->add_ints(2);
    untypedInts->add_ints(0);
    expectDecodesLikeProtobuf(node);

    // What the reader keeps of it (the fields are views into the bytes, which must outlive them).
    const std::string bytes = node.SerializeAsString();
    qdq::onnx_wire::NodeFields fields;
    ASSERT_EQ(qdq::onnx_wire::decodeNode(bytes, fields), "");
    OnnxAttribute decoded;
    ASSERT_EQ(qdq::onnx_wire::decodeAttribute(fields.attributes[0], decoded), "");
    EXPECT_EQ(decoded.ints, (std::vector<std::int64_t>{1, -1, 0, 1LL << 40, -(1LL << 62)}));
    ASSERT_EQ(qdq::onnx_wire::decodeAttribute(fields.attributes[7], decoded), "");
    EXPECT_EQ(decoded.kind, OnnxAttribute::Kind::kInt);
    EXPECT_EQ(decoded.i, 3);
    ASSERT_EQ(qdq::onnx_wire::decodeAttribute(fields.attributes[8], decoded), "");
    EXPECT_EQ(decoded.kind, OnnxAttribute::Kind::kInts);
}

TEST(OnnxNodeWire, RandomNodesDecodeLikeProtobuf)
{
    std::mt19937 random(20261122);
    auto name = [&](std::size_t length)
    {
        std::string text;
        for (std::size_t i = 0; i < length; ++i)
        {
            text += static_cast<char>(random() % 256);
        }
        return text;
    };
    for (int round = 0; round < 300; ++round)
    {
        SCOPED_TRACE(round);
        onnx::NodeProto node;
        node.set_name(name(random() % 80));
        node.set_op_type(name(random() % 20));
        if (random() % 3 == 0)
        {
            node.set_domain(name(random() % 12));
        }
        for (unsigned i = random() % 5; i > 0; --i)
        {
            node.add_input(name(random() % 70));
        }
        for (unsigned i = random() % 4; i > 0; --i)
        {
            node.add_output(name(random() % 70));
        }
        for (unsigned i = random() % 4; i > 0; --i)
        {
            auto* attribute = node.add_attribute();
            attribute->set_name(name(random() % 10));
            switch (random() % 5)
            {
            case 0:
                attribute->set_type(onnx::AttributeProto::INT);
                attribute->set_i(static_cast<std::int64_t>(random()) - (1LL << 31));
                break;
            case 1:
                attribute->set_type(onnx::AttributeProto::FLOATS);
                for (unsigned k = random() % 6; k > 0; --k)
                {
                    attribute->add_floats(static_cast<float>(random() % 1000) / 7.0F);
                }
                break;
            case 2:
                attribute->set_type(onnx::AttributeProto::INTS);
                for (unsigned k = random() % 6; k > 0; --k)
                {
                    attribute->add_ints(static_cast<std::int64_t>(random() % 2000) - 1000);
                }
                break;
            case 3:
                attribute->set_type(onnx::AttributeProto::STRING);
                attribute->set_s(name(random() % 30));
                break;
            default:
                attribute->set_f(static_cast<float>(random() % 100) / 3.0F); // untyped float
                break;
            }
        }
        expectDecodesLikeProtobuf(node);
    }
}

TEST(OnnxNodeWire, UnpackedRepeatedValuesAndFieldsOfAnotherWireType)
{
    // AttributeProto{name: "k", ints: 5, ints: 6 (unpacked varints), floats: 2.0 (unpacked fixed32), type: INTS}
    const std::string attribute("\x0a\x01k"
                                "\x40\x05\x40\x06"
                                "\x3d\x00\x00\x00\x40"
                                "\xa0\x01\x07",
                                15);
    OnnxAttribute decoded;
    ASSERT_EQ(qdq::onnx_wire::decodeAttribute(attribute, decoded), "");
    EXPECT_EQ(decoded.name, "k");
    EXPECT_EQ(decoded.kind, OnnxAttribute::Kind::kInts);
    EXPECT_EQ(decoded.ints, (std::vector<std::int64_t>{5, 6}));
    // An attribute type this schema does not know stays unset (protobuf keeps it as an unknown field), so the type
    // is inferred from the fields present: here an int.
    ASSERT_EQ(qdq::onnx_wire::decodeAttribute(std::string("\x18\x09\xa0\x01\x63", 5), decoded), "");
    EXPECT_EQ(decoded.kind, OnnxAttribute::Kind::kInt);
    EXPECT_EQ(decoded.i, 9);

    // NodeProto whose name (field 3) arrives as a varint: protobuf skips it as an unknown field, so does the decoder.
    qdq::onnx_wire::NodeFields fields;
    ASSERT_EQ(qdq::onnx_wire::decodeNode(std::string("\x18\x05\x22\x04Relu", 8), fields), "");
    EXPECT_EQ(fields.name, "");
    EXPECT_EQ(fields.opType, "Relu");
}

TEST(OnnxNodeWire, BrokenBytesAreReportedNotRead)
{
    qdq::onnx_wire::NodeFields fields;
    EXPECT_EQ(qdq::onnx_wire::decodeNode(std::string("\x0a\x05"
                                                     "ab",
                                                     4),
                                         fields),
              "truncated field 1");
    EXPECT_EQ(qdq::onnx_wire::decodeNode(std::string("\x00\x01", 2), fields), "malformed tag");
    EXPECT_EQ(qdq::onnx_wire::decodeNode(std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11), fields),
              "truncated field 1");
    EXPECT_EQ(qdq::onnx_wire::decodeNode(std::string("\x0b", 1), fields), "unsupported wire type in field 1");
    EXPECT_EQ(qdq::onnx_wire::decodeNode(std::string("\x45\x01\x02", 3), fields), "truncated field 8");
    OnnxAttribute attribute;
    EXPECT_NE(qdq::onnx_wire::decodeAttribute(std::string("\x42\x02\x80", 3), attribute), ""); // packed ints cut
    EXPECT_NE(qdq::onnx_wire::decodeAttribute(std::string("\x3a\x03\x00\x00\x00", 5), attribute), ""); // 3-byte floats
    EXPECT_NE(qdq::onnx_wire::decodeAttribute(std::string("\x15\x00\x00", 3), attribute), "");         // f cut

    // Inside a model: an InputError naming the node's byte offset, not a crash.
    onnx::ModelProto model;
    model.set_ir_version(8);
    auto* node = model.mutable_graph()->add_node();
    node->set_op_type("Relu");
    auto* attribute2 = node->add_attribute();
    attribute2->set_name("x");
    attribute2->add_ints(1);
    std::string bytes = model.SerializeAsString();
    // Corrupt the packed-ints length inside the attribute (the last bytes of the model are the ints field).
    std::string broken = bytes;
    broken[broken.size() - 2] = '\x05';
    try
    {
        qdq::readOnnxFromBuffer(broken, "broken.onnx");
        ADD_FAILURE() << "no error";
    }
    catch (const qdq::InputError& error)
    {
        EXPECT_NE(std::string(error.what()).find("invalid NodeProto"), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("broken.onnx"), std::string::npos) << error.what();
    }
}

TEST(RealDataOnnx, NodesDecodeLikeProtobuf)
{
    REQUIRE_SHARED();
    for (const char* file : {"resnet18-ort-qdq.onnx", "yolov8lite-qat-outputs.onnx", "deit-tiny-ort-qdq.onnx",
                             "unet-convtranspose-qat.onnx", "resnet50-qat-convs.onnx"})
    {
        SCOPED_TRACE(file);
        const std::string path = qdq::test::sharedModel(file).string();
        onnx::ModelProto model;
        std::string bytes = qdq::test::readFile(path);
        ASSERT_TRUE(model.ParseFromString(bytes));
        OnnxGraph graph = qdq::readOnnx(path);
        ASSERT_EQ(graph.nodes.size(), static_cast<std::size_t>(model.graph().node_size()));
        for (int i = 0; i < model.graph().node_size(); ++i)
        {
            const onnx::NodeProto& proto = model.graph().node(i);
            const qdq::OnnxNode& node = graph.nodes[static_cast<std::size_t>(i)];
            if (!proto.name().empty())
            {
                ASSERT_EQ(node.name, proto.name());
            }
            ASSERT_EQ(node.opType, proto.op_type());
            ASSERT_EQ(node.domain, proto.domain());
            ASSERT_EQ(node.inputs, std::vector<std::string>(proto.input().begin(), proto.input().end()));
            ASSERT_EQ(node.outputs, std::vector<std::string>(proto.output().begin(), proto.output().end()));
            ASSERT_EQ(node.attributes.size(), static_cast<std::size_t>(proto.attribute_size()));
            for (int k = 0; k < proto.attribute_size(); ++k)
            {
                expectSameAttribute(node.attributes[static_cast<std::size_t>(k)],
                                    referenceAttribute(proto.attribute(k)));
            }
        }
    }
}

//! x -> Relu(a) -> y, y -> Relu(b) -> z, y -> Sigmoid(c) -> w
std::string smallModel()
{
    onnx::ModelProto model;
    model.set_ir_version(8);
    auto* graph = model.mutable_graph();
    auto add = [&](const char* name, const char* op, const char* in, const char* out)
    {
        auto* node = graph->add_node();
        node->set_name(name);
        node->set_op_type(op);
        node->add_input(in);
        node->add_output(out);
    };
    add("a", "Relu", "x", "y");
    add("b", "Relu", "y", "z");
    add("c", "Sigmoid", "y", "w");
    graph->add_input()->set_name("x");
    return model.SerializeAsString();
}

TEST(OnnxGraphModel, CopiesPointAtTheirOwnTensorTable)
{
    std::optional<OnnxGraph> original = qdq::readOnnxFromBuffer(smallModel(), "small.onnx");
    OnnxGraph copy = *original;
    OnnxGraph assigned;
    assigned = copy;
    original.reset(); // the copies must not read the original's strings (ASan checks this)
    for (const OnnxGraph* graph : {&copy, &assigned})
    {
        EXPECT_EQ(graph->nodes[1].inputs, std::vector<std::string>{"y"});
        EXPECT_EQ(&graph->nodes[1].inputs[0], &graph->tensors.names[graph->nodes[1].inputs.id(0)]);
        EXPECT_EQ(graph->producer(graph->nodes[1].inputs[0]), &graph->nodes[0]);
        EXPECT_EQ(graph->producer(std::string("y")), &graph->nodes[0]); // a name the table does not own
        EXPECT_EQ(graph->producer("y"), &graph->nodes[0]);
        EXPECT_EQ(graph->producer("nothing"), nullptr);
        EXPECT_EQ(graph->nodeIndex(graph->nodes[2].name), 2U);
        EXPECT_EQ(graph->nodeIndex(std::string("c")), 2U);
    }
    OnnxGraph moved = std::move(copy);
    EXPECT_EQ(moved.producer(moved.nodes[2].inputs[0]), &moved.nodes[0]);
}

TEST(OnnxGraphModel, ConsumerViewsAndTensorIds)
{
    OnnxGraph graph = qdq::readOnnxFromBuffer(smallModel(), "small.onnx");
    qdq::NodeRefs consumers = qdq::patterns::consumersOf(graph, graph.nodes[0].outputs[0]);
    ASSERT_EQ(consumers.size(), 2U);
    EXPECT_EQ(consumers[0]->name, "b");
    EXPECT_EQ(consumers.back()->name, "c");
    std::vector<std::string> reversed;
    for (auto it = consumers.rbegin(); it != consumers.rend(); ++it)
    {
        reversed.push_back((*it)->name);
    }
    EXPECT_EQ(reversed, (std::vector<std::string>{"c", "b"}));
    const std::vector<const qdq::OnnxNode*> asVector = consumers;
    EXPECT_EQ(asVector.size(), 2U);
    EXPECT_TRUE(qdq::patterns::consumersOf(graph, "w").empty());
    EXPECT_TRUE(qdq::patterns::consumersOf(graph, "no such tensor").empty());
    // Ids: one per distinct name, the same whichever node names it.
    EXPECT_EQ(graph.nodes[1].inputs.id(0), graph.nodes[0].outputs.id(0));
    EXPECT_EQ(graph.nodes[2].inputs.id(0), graph.tensors.find("y"));
    EXPECT_EQ(graph.tensors.names.size(), 4U);
}

TEST(OnnxGraphModel, InterningManyRepeatedNamesGivesOneIdPerName)
{
    qdq::OnnxTensorTable table;
    std::map<std::string, std::uint32_t> expected;
    std::mt19937 random(7);
    for (int i = 0; i < 20000; ++i)
    {
        // Recent names come back often, old ones now and then: both paths of the cache.
        const int number = (random() % 4 == 0) ? static_cast<int>(random() % 5000) : i / 2;
        const std::string name = "/model/block" + std::to_string(number) + "/conv/Conv_output_0";
        const std::uint32_t id = table.intern(name);
        auto [it, added] = expected.emplace(name, id);
        ASSERT_EQ(it->second, id) << name;
        ASSERT_EQ(table.names[id], name);
        if (added)
        {
            ASSERT_EQ(id + 1, table.names.size());
        }
    }
    EXPECT_EQ(table.names.size(), expected.size());
    for (const auto& [name, id] : expected)
    {
        EXPECT_EQ(table.find(name), id);
    }
}

TEST(NodeLayerIndex, KeyedByNodeIndexWithAModel)
{
    OnnxGraph graph = qdq::readOnnxFromBuffer(smallModel(), "small.onnx");
    qdq::NodeLayerIndex index;
    index.useGraph(&graph);
    index.add(0U, 0);
    index.add(0U, 3);
    index.add("c", 2);          // by name: resolved through the model
    index.add("not a node", 5); // not in the model: ignored
    index.finish();
    EXPECT_EQ(std::vector<std::size_t>(index.find("a").begin(), index.find("a").end()),
              (std::vector<std::size_t>{0, 3}));
    EXPECT_EQ(std::vector<std::size_t>(index.findNode(2).begin(), index.findNode(2).end()),
              std::vector<std::size_t>{2});
    EXPECT_TRUE(index.contains(graph.nodes[2].name));
    EXPECT_FALSE(index.contains("b"));
    EXPECT_FALSE(index.contains("not a node"));

    qdq::NodeLayerIndex byName; // without a model: names
    byName.add("a", 1);
    byName.add("a", 4);
    byName.finish();
    EXPECT_EQ(byName.find("a").size(), 2U);
    EXPECT_TRUE(byName.findNode(0).empty());
}

} // namespace
