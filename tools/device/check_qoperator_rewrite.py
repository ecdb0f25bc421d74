"""Checks `qdq-doctor fix` on ONNX Runtime QOperator models numerically, on the device machine (not CI).

    python3 tools/device/check_qoperator_rewrite.py export OUT_DIR [NAME...]
        quantizes torchvision networks (random weights, seeded) with ONNX Runtime's quantize_static in QOperator format
        (uint8 activations, int8 per-channel weights, ONNX Runtime's defaults) and writes NAME.onnx with its weights
        inline into OUT_DIR.
    python3 tools/device/check_qoperator_rewrite.py compare OUT_DIR [NAME...]
        for each NAME.onnx in OUT_DIR with NAME.rewrite.onnx (`qdq-doctor fix --rules quantized-op-not-importable`: the
        QOperator ops rewritten as DequantizeLinear -> float op -> QuantizeLinear, nothing else) and NAME.fixed.onnx
        (`qdq-doctor fix`: the rewrite, then every other edit, such as symmetric INT8), runs all three and the float
        network they were quantized from (exported again with the same seeds) on 8 random inputs, graph
        optimizations off, and prints the largest differences.
"""
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort
import torch
import torchvision
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from export_ort_formats import export  # the float export: random batch norms, biases as initializers

SHAPE = (1, 3, 224, 224)
class TinyVit(torch.nn.Module):
    """A two-layer transformer on 16x16 patches: MatMul (QLinearMatMul), Softmax, LayerNorm and GELU in QOperator form."""

    def __init__(self):
        super().__init__()
        self.patches = torch.nn.Conv2d(3, 64, 16, stride=16)
        layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = self.patches(x).flatten(2).transpose(1, 2)
        return self.head(self.encoder(x).mean(1))


NETWORKS = {
    "resnet18": lambda: torchvision.models.resnet18(weights=None),
    "mobilenetv2": lambda: torchvision.models.mobilenet_v2(weights=None),
    # MaxPool on uint8 and QLinearConcat
    "googlenet": lambda: torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True),
    # SiLU and squeeze-excitation (QLinearSigmoid, QLinearMul), HardSwish, and a transformer (QLinearMatMul)
    "efficientnetb0": lambda: torchvision.models.efficientnet_b0(weights=None),
    "mobilenetv3s": lambda: torchvision.models.mobilenet_v3_small(weights=None),
    "tinyvit": TinyVit,
}


class Batches(CalibrationDataReader):
    def __init__(self):
        rng = np.random.default_rng(0)
        self.items = iter([{"input": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self.items, None)


def export_float(name, path):
    torch.manual_seed(0)
    export(NETWORKS[name](), SHAPE, path, 17 if name == "tinyvit" else 13)


def run(path, feeds):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return [session.run(None, feed)[0] for feed in feeds]


def output_step(path):
    """The scale of the DequantizeLinear writing the first network output: one step of the output's quantization."""
    model = onnx.load(path)
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear" and node.output[0] == model.graph.output[0].name:
            return float(inits[node.input[1]].reshape(-1)[0])
    return float("nan")


def largest(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def main():
    mode, out = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(NETWORKS)
    os.makedirs(out, exist_ok=True)
    if mode == "export":
        for name in names:
            if os.path.exists(os.path.join(out, name + ".onnx")):
                continue
            fp32 = os.path.join("/tmp", name + ".fp32.tmp.onnx")
            export_float(name, fp32)
            target = os.path.join(out, name + ".onnx")
            try:
                quantize_static(fp32, target, Batches(), quant_format=QuantFormat.QOperator, per_channel=True,
                                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
            except Exception as error:  # noqa: BLE001 - one network's failure is reported, the others go on
                print("failed", name, repr(error)[:300], flush=True)
                continue
            ops = sorted({n.op_type for n in onnx.load(target).graph.node})
            print("wrote", target, os.path.getsize(target), "bytes", ops, flush=True)
        return
    print("| model | output magnitude | output step | QOperator vs float | rewrite vs QOperator | fixed vs QOperator "
          "| fixed vs float |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        original = os.path.join(out, name + ".onnx")
        rewrite = os.path.join(out, name + ".rewrite.onnx")
        fixed = os.path.join(out, name + ".fixed.onnx")
        if not all(os.path.exists(p) for p in (original, rewrite, fixed)):
            print(f"| {name} | missing files | | | | |")
            continue
        fp32 = os.path.join("/tmp", name + ".fp32.onnx")
        export_float(name, fp32)
        rng = np.random.default_rng(1)
        feeds = [{"input": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(8)]
        f = run(fp32, feeds)
        q = run(original, feeds)
        r = run(rewrite, feeds)
        x = run(fixed, feeds)
        magnitude = max(float(np.max(np.abs(v))) for v in f)
        print(f"| {name} | {magnitude:.4g} | {output_step(original):.4g} | {largest(q, f):.4g} | {largest(r, q):.4g} | {largest(x, q):.4g} "
              f"| {largest(x, f):.4g} |", flush=True)


main()
