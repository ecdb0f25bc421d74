"""Exports Q/DQ ONNX models of architectures the shared models do not cover, for checking qdq-doctor by hand.

Run where torch, torchvision and onnxruntime exist (the device machine), never in CI:
    python3 tools/device/export_zoo.py OUT_DIR [--with-weights] [--dynamo] [NAME...]

Two placements per network:
  - "qat": fake quantizers in the style of pytorch-quantization (a per-tensor quantizer on every Conv/Linear input,
    per-channel weights on axis 0), exported with the TorchScript exporter at opset 13;
  - "ort": ONNX Runtime's quantize_static in QDQ format (its defaults: activations uint8 with a zero point, weights
    int8 per channel), calibrated on two random batches.
Weights are random (no download). Each model is written graph-only: initializers over 4 KiB go to an external data
file, which is deleted unless --with-weights is given (the graph keeps naming it, as the shared models do).
--with-weights also writes NAME-fp32, the float network both placements were quantized from.
--dynamo exports with torch's newer exporter (torch.onnx.export(dynamo=True), opset 18 at least) instead, and names
the models NAME-dynamo-*.
"""
import os
import sys
import traceback

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

OUT = sys.argv[1]
KEEP_WEIGHTS = "--with-weights" in sys.argv
DYNAMO = "--dynamo" in sys.argv
os.makedirs(OUT, exist_ok=True)


class ActQuant(nn.Module):
    """Per-tensor symmetric int8 fake quantizer; its range is the largest magnitude seen while calibrating."""

    def __init__(self):
        super().__init__()
        self.register_buffer("amax", torch.tensor(0.0))
        self.calibrating = True

    def forward(self, x):
        if self.calibrating:
            self.amax = torch.maximum(self.amax, x.detach().abs().max())
            return x
        # a Python float fixed after calibration: the dynamo exporter cannot trace float() of a tensor
        return torch.fake_quantize_per_tensor_affine(x, self.fixed_scale, 0, -128, 127)


def channel_scales(weight):
    amax = weight.detach().abs().flatten(1).max(1).values.clamp(min=1e-6)
    return (amax / 127.0).float(), torch.zeros(weight.shape[0], dtype=torch.int32)


class QuantConv(nn.Module):
    def __init__(self, conv):
        super().__init__()
        self.conv = conv
        self.input_quant = ActQuant()
        scale, zero = channel_scales(conv.weight)
        self.register_buffer("scale", scale)
        self.register_buffer("zero", zero)

    def forward(self, x):
        c = self.conv
        w = torch.fake_quantize_per_channel_affine(c.weight, self.scale, self.zero, 0, -128, 127)
        x = self.input_quant(x)
        if c.padding_mode != "zeros":
            return F.conv2d(F.pad(x, c._reversed_padding_repeated_twice, mode=c.padding_mode), w, c.bias, c.stride, 0,
                            c.dilation, c.groups)
        return F.conv2d(x, w, c.bias, c.stride, c.padding, c.dilation, c.groups)


class QuantLinear(nn.Module):
    def __init__(self, linear):
        super().__init__()
        self.linear = linear
        self.input_quant = ActQuant()
        scale, zero = channel_scales(linear.weight)
        self.register_buffer("scale", scale)
        self.register_buffer("zero", zero)

    def forward(self, x):
        w = torch.fake_quantize_per_channel_affine(self.linear.weight, self.scale, self.zero, 0, -128, 127)
        return F.linear(self.input_quant(x), w, self.linear.bias)


def quantize_modules(module):
    for name, child in module.named_children():
        if isinstance(child, nn.Conv2d):
            setattr(module, name, QuantConv(child))
        elif isinstance(child, nn.Linear):
            setattr(module, name, QuantLinear(child))
        else:
            quantize_modules(child)


def random_batchnorm(model, seed=1):
    generator = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                shape = m.weight.shape
                m.weight.copy_(1 + 0.1 * torch.randn(shape, generator=generator))
                m.bias.copy_(0.1 * torch.randn(shape, generator=generator))
                m.running_mean.copy_(0.1 * torch.randn(shape, generator=generator))
                m.running_var.copy_(1 + 0.1 * torch.rand(shape, generator=generator))


def save_graph_only(model_proto, name):
    full = os.path.join(OUT, name + ".onnx")
    if os.path.exists(full + ".data"):
        os.remove(full + ".data")  # onnx.save appends to an existing data file, which shifts every offset
    onnx.save(model_proto, full, save_as_external_data=True, all_tensors_to_one_file=True,
              location=name + ".onnx.data", size_threshold=4096)
    if not KEEP_WEIGHTS:
        os.remove(os.path.join(OUT, name + ".onnx.data"))
    print("wrote", name, len(model_proto.graph.node), "nodes", flush=True)


def export_torch(model, x, name, opset=13):
    path = os.path.join(OUT, "tmp-" + name + ".onnx")
    torch.onnx.export(model, x, path, opset_version=max(opset, 18) if DYNAMO else opset, input_names=["input"],
                      dynamo=DYNAMO,
                      do_constant_folding=True)
    proto = onnx.load(path)
    os.remove(path)
    if os.path.exists(path + ".data"):
        os.remove(path + ".data")
    return proto


def quantize_with_ort(fp32_proto, name, shape, per_channel=True, symmetric=False, op_types=None):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Batches(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.items = iter([{"input": rng.standard_normal(shape).astype(np.float32)} for _ in range(2)])

        def get_next(self):
            return next(self.items, None)

    src = os.path.join(OUT, "tmp-fp32-" + name + ".onnx")
    dst = os.path.join(OUT, "tmp-q-" + name + ".onnx")
    onnx.save(fp32_proto, src)
    options = dict(quant_format=QuantFormat.QDQ, per_channel=per_channel,
                   activation_type=QuantType.QInt8 if symmetric else QuantType.QUInt8, weight_type=QuantType.QInt8)
    if symmetric:
        options["extra_options"] = {"ActivationSymmetric": True, "WeightSymmetric": True}
    if op_types:
        options["op_types_to_quantize"] = op_types
    quantize_static(src, dst, Batches(), **options)
    proto = onnx.load(dst)
    for path in (src, dst):
        os.remove(path)
    return proto


NETWORKS = [
    # name, constructor, input shape, opset
    ("mobilenetv2", lambda: torchvision.models.mobilenet_v2(weights=None), (1, 3, 224, 224), 13),
    ("mobilenetv3s", lambda: torchvision.models.mobilenet_v3_small(weights=None), (1, 3, 224, 224), 13),
    ("efficientnetb0", lambda: torchvision.models.efficientnet_b0(weights=None), (1, 3, 224, 224), 13),
    ("shufflenetv2", lambda: torchvision.models.shufflenet_v2_x1_0(weights=None), (1, 3, 224, 224), 13),
    ("densenet121", lambda: torchvision.models.densenet121(weights=None), (1, 3, 224, 224), 13),
    ("squeezenet11", lambda: torchvision.models.squeezenet1_1(weights=None), (1, 3, 224, 224), 13),
    ("googlenet", lambda: torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True),
     (1, 3, 224, 224), 13),
    ("regnety400", lambda: torchvision.models.regnet_y_400mf(weights=None), (1, 3, 224, 224), 13),
    ("convnexttiny", lambda: torchvision.models.convnext_tiny(weights=None), (1, 3, 224, 224), 17),
    ("vgg11bn", lambda: torchvision.models.vgg11_bn(weights=None), (1, 3, 224, 224), 13),
    ("deeplabv3mbv3", lambda: torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, aux_loss=False), (1, 3, 256, 256), 13),
    ("vitb16", lambda: torchvision.models.vit_b_16(weights=None), (1, 3, 224, 224), 17),
    # A second batch: grouped convs, HardSwish backbones, Inception's factorized convs, Swin's shifted windows.
    ("mnasnet10", lambda: torchvision.models.mnasnet1_0(weights=None), (1, 3, 224, 224), 13),
    ("mobilenetv3l", lambda: torchvision.models.mobilenet_v3_large(weights=None), (1, 3, 224, 224), 13),
    ("efficientnetv2s", lambda: torchvision.models.efficientnet_v2_s(weights=None), (1, 3, 224, 224), 13),
    ("inceptionv3", lambda: torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=True),
     (1, 3, 299, 299), 13),
    ("resnext50", lambda: torchvision.models.resnext50_32x4d(weights=None), (1, 3, 224, 224), 13),
    ("regnetx400", lambda: torchvision.models.regnet_x_400mf(weights=None), (1, 3, 224, 224), 13),
    ("lrasppmbv3", lambda: torchvision.models.segmentation.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None), (1, 3, 256, 256), 13),
    ("swint", lambda: torchvision.models.swin_t(weights=None), (1, 3, 224, 224), 17),
]

only = [a for a in sys.argv[2:] if not a.startswith("--")]
for name, make, shape, opset in NETWORKS:
    if only and name not in only:
        continue
    torch.manual_seed(0)
    x = torch.randn(*shape)
    try:
        net = make().eval()
        random_batchnorm(net)

        class Wrapped(nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                y = self.inner(x)
                return y["out"] if isinstance(y, dict) else y

        fp32 = export_torch(Wrapped(net), x, name, opset)
        if KEEP_WEIGHTS:
            # the float network both placements were made from: compare_fixed.py's yardstick
            save_graph_only(fp32, name + ("-dynamo" if DYNAMO else "") + "-fp32")
        try:
            save_graph_only(quantize_with_ort(fp32, name, shape), name + ("-dynamo" if DYNAMO else "") + "-ort-qdq")
        except Exception:
            traceback.print_exc()
        qat = Wrapped(net)
        quantize_modules(qat)
        with torch.no_grad():
            qat(x)
        for m in qat.modules():
            if isinstance(m, ActQuant):
                m.calibrating = False
                m.fixed_scale = float(m.amax.clamp(min=1e-6) / 127.0)
        save_graph_only(export_torch(qat, x, name + "-qat", max(opset, 13)),
                        name + ("-dynamo" if DYNAMO else "") + "-qat-convs")
    except Exception:
        traceback.print_exc()
