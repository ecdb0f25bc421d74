"""Exports ONNX Runtime's other quantized formats, which TensorRT's ONNX parser does not import, for checking by hand
what qdq-doctor says about them (not CI).

    python3 tools/device/export_ort_formats.py OUT_DIR

check_qoperator_rewrite.py imports its float export.

Needs torch, torchvision, onnx and onnxruntime (the device machine has them). Models, graph only (weights dropped):
  - resnet18-ort-qoperator: quantize_static in QOperator format (QLinearConv, QLinearAdd, QLinearGlobalAveragePool,
    QuantizeLinear/DequantizeLinear only at the ends);
  - resnet18-ort-dynamic: quantize_dynamic (DynamicQuantizeLinear, ConvInteger, MatMulInteger);
  - vitb16-ort-dynamic: quantize_dynamic of a transformer (MatMulInteger with DynamicQuantizeLinear);
  - resnet18-ort-qdq-partial: quantize_static in QDQ format with only Conv quantized (a mixed model TensorRT imports).
"""
import os
import sys
import traceback

import numpy as np
import onnx
import torch
import torchvision
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

class Batches(CalibrationDataReader):
    def __init__(self, shape):
        rng = np.random.default_rng(0)
        self.items = iter([{"input": rng.standard_normal(shape).astype(np.float32)} for _ in range(2)])

    def get_next(self):
        return next(self.items, None)


def export(model, shape, path, opset):
    # Untrained batch norms fold into equal zero biases, which torch's export shares between convs; ONNX Runtime's
    # QOperator quantizer then fails on the second conv of a shared bias. Random statistics keep them apart.
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                shape_c = m.running_mean.shape
                m.weight.copy_(1 + 0.1 * torch.randn(shape_c, generator=generator))
                m.bias.copy_(0.1 * torch.randn(shape_c, generator=generator))
                m.running_mean.copy_(0.1 * torch.randn(shape_c, generator=generator))
                m.running_var.copy_(1 + 0.1 * torch.rand(shape_c, generator=generator))
    torch.onnx.export(model.eval(), torch.randn(*shape), path, opset_version=opset, input_names=["input"],
                      dynamo=False, do_constant_folding=True)
    # torch writes folded conv biases as Constant nodes; ONNX Runtime's QOperator quantizer wants initializers
    proto = onnx.load(path)
    keep = []
    for node in proto.graph.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            tensor = onnx.TensorProto()
            tensor.CopyFrom(node.attribute[0].t)
            tensor.name = node.output[0]
            proto.graph.initializer.append(tensor)
        else:
            keep.append(node)
    # Identity nodes over initializers (torch shares equal parameters so) become copies: the quantizer wants each
    # bias as an initializer of its own (EfficientNet-B0, SqueezeNet).
    inits = {i.name: i for i in proto.graph.initializer}
    kept = []
    for node in keep:
        if node.op_type == "Identity" and node.input[0] in inits:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(inits[node.input[0]])
            tensor.name = node.output[0]
            proto.graph.initializer.append(tensor)
        else:
            kept.append(node)
    del proto.graph.node[:]
    proto.graph.node.extend(kept)
    onnx.save(proto, path)


def save_graph_only(src, out, name):
    proto = onnx.load(src)
    for init in proto.graph.initializer:
        if len(init.raw_data) > 4096:
            # keep dims and type; the data is not needed for the graph's structure
            init.ClearField("raw_data")
            init.data_location = onnx.TensorProto.EXTERNAL
            entry = init.external_data.add()
            entry.key, entry.value = "location", name + ".onnx.data"
    onnx.save(proto, os.path.join(out, name + ".onnx"))
    print("wrote", name, len(proto.graph.node), "nodes", sorted({n.op_type for n in proto.graph.node}), flush=True)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    shape = (1, 3, 224, 224)
    fp32 = os.path.join(out, "tmp-resnet18.onnx")
    export(torchvision.models.resnet18(weights=None), shape, fp32, 13)

    dst = os.path.join(out, "tmp-q.onnx")

    def attempt(name, quantize):
        try:
            quantize()
            save_graph_only(dst, out, name)
        except Exception:
            traceback.print_exc()

    attempt("resnet18-ort-qoperator", lambda: quantize_static(
        fp32, dst, Batches(shape), quant_format=QuantFormat.QOperator, per_channel=True,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8))
    attempt("resnet18-ort-dynamic", lambda: quantize_dynamic(
        fp32, dst, weight_type=QuantType.QInt8, op_types_to_quantize=["Conv", "MatMul", "Gemm"]))
    attempt("resnet18-ort-qdq-partial", lambda: quantize_static(
        fp32, dst, Batches(shape), quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8, op_types_to_quantize=["Conv"],
        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True}))
    vit = os.path.join(out, "tmp-vit.onnx")
    export(torchvision.models.vit_b_16(weights=None), shape, vit, 17)
    attempt("vitb16-ort-dynamic", lambda: quantize_dynamic(vit, dst, weight_type=QuantType.QInt8))

    for path in (fp32, vit, dst):
        for p in (path, path + ".data"):
            if os.path.exists(p):
                os.remove(p)


if __name__ == "__main__":
    main()
