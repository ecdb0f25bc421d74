"""Builds qdq-doctor's own zoo of real exported Q/DQ models (tests/fixtures/zoo/), on a machine with PyTorch, torchvision,
timm, ONNX and ONNX Runtime (the device machine; never in CI).

    python3 tools/zoo/make_zoo.py OUT_DIR [--doctor QDQ_DOCTOR] [--lib DIR] [--jobs N] [--only NAME,...]

Each architecture is built with random weights (no download: weights=None / pretrained=False, torch.manual_seed(0)
before it is constructed, BatchNorm statistics drawn from a seeded generator), at a small input resolution and with a
10-class head so the graphs stay small, then:
  1. exported to ONNX by PyTorch's TorchScript exporter (torch.onnx.export(dynamo=False), constant folding on), opset 13
     for the CNNs and 17 for the networks with LayerNorm or attention (Debian 12's ONNX 1.12 reads opsets up to 17);
  2. quantized twice by ONNX Runtime's quantize_static in QDQ format, every op type it quantizes by default, weights
     INT8 symmetric per channel, calibrated (MinMax) on two seeded random normal batches:
       NAME-ort-int8sym: activations INT8 symmetric (activation_type=QInt8, ActivationSymmetric=True);
       NAME-ort-uint8:   ONNX Runtime's default activations, uint8 asymmetric (activation_type=QUInt8);
  3. saved graph-only in OUT_DIR/graph/: initializers above 4 KiB go to NAME.onnx.data, which the graph keeps naming
     and which is not kept there, so Q/DQ scales, zero points and small biases stay inline. The float export
     (NAME-fp32) is saved graph-only for the architectures in KEEP_FP32.
The complete models (graph + data file) are written to OUT_DIR/weights/. With --doctor, every quantized model with
its weights is also fixed there (`qdq-doctor fix --format json`, --lib: a folder of shared libraries the binary needs)
and the float export, the original and the fixed model run in ONNX Runtime (CPU, default session options) on 8
seeded random normal inputs: the relative L2 error of each against the float export goes to OUT_DIR/numerics.json.
OUT_DIR/MODELS.json lists every graph-only model: architecture, source library and version, variant, input shape,
opset, IR version, node count, operator histogram, file size.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np

KEEP_FP32 = ("mobilenetv3-small-w0.5", "vit-tiny-d2", "detr-like", "yolo-like", "resnet18")
THRESHOLD = 4096  # bytes: initializers above this go to the external data file


# ---------------------------------------------------------------------------------------------------------------------
# The networks. Imports of torch & co. happen inside the functions: the worker processes import them themselves.
# ---------------------------------------------------------------------------------------------------------------------


def custom_yolo_like():
    """A small YOLOv8-style detector: Conv-BN-SiLU, C2f (Split, Bottleneck, Concat), SPPF (MaxPool, Concat), a
    top-down neck (nearest Upsample + Concat) and a bottom-up path (strided conv + Concat), a decoupled head per
    scale (box and class branches: a Conv-BN-SiLU and a 1x1 Conv each, then Concat)."""
    import torch
    import torch.nn as nn

    class CBS(nn.Module):
        def __init__(s, c1, c2, k=1, st=1):
            super().__init__()
            s.conv = nn.Conv2d(c1, c2, k, st, k // 2, bias=False)
            s.bn = nn.BatchNorm2d(c2)
            s.act = nn.SiLU()

        def forward(s, x):
            return s.act(s.bn(s.conv(x)))

    class Bottleneck(nn.Module):
        def __init__(s, c, shortcut=True):
            super().__init__()
            s.cv1, s.cv2, s.add = CBS(c, c, 3), CBS(c, c, 3), shortcut

        def forward(s, x):
            y = s.cv2(s.cv1(x))
            return x + y if s.add else y

    class C2f(nn.Module):
        def __init__(s, c1, c2, n=1, shortcut=True):
            super().__init__()
            s.c = c2 // 2
            s.cv1 = CBS(c1, 2 * s.c)
            s.cv2 = CBS((2 + n) * s.c, c2)
            s.m = nn.ModuleList(Bottleneck(s.c, shortcut) for _ in range(n))

        def forward(s, x):
            y = list(s.cv1(x).split((s.c, s.c), 1))
            y.extend(m(y[-1]) for m in s.m)
            return s.cv2(torch.cat(y, 1))

    class SPPF(nn.Module):
        def __init__(s, c1, c2):
            super().__init__()
            c = c1 // 2
            s.cv1, s.cv2, s.m = CBS(c1, c), CBS(c * 4, c2), nn.MaxPool2d(5, 1, 2)

        def forward(s, x):
            x = s.cv1(x)
            y1 = s.m(x)
            y2 = s.m(y1)
            return s.cv2(torch.cat((x, y1, y2, s.m(y2)), 1))

    class Head(nn.Module):
        def __init__(s, c, classes=4, reg=16):
            super().__init__()
            s.box = nn.Sequential(CBS(c, 32, 3), nn.Conv2d(32, 4 * reg, 1))
            s.cls = nn.Sequential(CBS(c, 32, 3), nn.Conv2d(32, classes, 1))

        def forward(s, x):
            return torch.cat((s.box(x), s.cls(x)), 1)

    class YoloLike(nn.Module):
        def __init__(s):
            super().__init__()
            s.b0, s.b1, s.b2 = CBS(3, 16, 3, 2), CBS(16, 32, 3, 2), C2f(32, 32, 1)
            s.b3, s.b4 = CBS(32, 64, 3, 2), C2f(64, 64, 1)
            s.b5, s.b6 = CBS(64, 96, 3, 2), C2f(96, 96, 1)
            s.b7, s.b8, s.b9 = CBS(96, 128, 3, 2), C2f(128, 128, 1), SPPF(128, 128)
            s.up = nn.Upsample(scale_factor=2, mode="nearest")
            s.n1, s.n2 = C2f(128 + 96, 96, 1, False), C2f(96 + 64, 64, 1, False)
            s.d1, s.n3 = CBS(64, 64, 3, 2), C2f(64 + 96, 96, 1, False)
            s.d2, s.n4 = CBS(96, 96, 3, 2), C2f(96 + 128, 128, 1, False)
            s.h3, s.h4, s.h5 = Head(64), Head(96), Head(128)

        def forward(s, x):
            x = s.b2(s.b1(s.b0(x)))
            p3 = s.b4(s.b3(x))
            p4 = s.b6(s.b5(p3))
            p5 = s.b9(s.b8(s.b7(p4)))
            t4 = s.n1(torch.cat((s.up(p5), p4), 1))
            t3 = s.n2(torch.cat((s.up(t4), p3), 1))
            o4 = s.n3(torch.cat((s.d1(t3), t4), 1))
            o5 = s.n4(torch.cat((s.d2(o4), p5), 1))
            return s.h3(t3), s.h4(o4), s.h5(o5)

    return YoloLike()


def custom_detr_like(image=128, d=64, queries=10, classes=5):
    """A small DETR-like detector: a torchvision ResNet-18 backbone (through layer3, stride 16), a 1x1 projection, a
    learned positional embedding, nn.Transformer (1 encoder and 1 decoder layer) over learned object queries, a class
    head (Linear) and a box head (3-layer MLP, Sigmoid)."""
    import torch
    import torch.nn as nn
    import torchvision

    class DetrLike(nn.Module):
        def __init__(s):
            super().__init__()
            r = torchvision.models.resnet18(weights=None)
            s.backbone = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1, r.layer2, r.layer3)
            s.proj = nn.Conv2d(256, d, 1)
            tokens = (image // 16) ** 2
            s.pos = nn.Parameter(0.02 * torch.randn(1, tokens, d))
            s.query = nn.Parameter(torch.randn(1, queries, d))
            s.transformer = nn.Transformer(d_model=d, nhead=4, num_encoder_layers=1, num_decoder_layers=1,
                                           dim_feedforward=2 * d, dropout=0.0, batch_first=True)
            s.cls = nn.Linear(d, classes + 1)
            s.box = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))

        def forward(s, x):
            f = s.proj(s.backbone(x))
            src = f.flatten(2).transpose(1, 2) + s.pos
            h = s.transformer(src, s.query.expand(x.shape[0], -1, -1))
            return s.cls(h), s.box(h).sigmoid()

    return DetrLike()


def custom_efficientnetv2():
    """torchvision's EfficientNet class with EfficientNetV2 blocks (FusedMBConv stages, then MBConv stages with
    squeeze-excitation), one block a stage: the efficientnet_v2_s design at a fraction of its depth."""
    from functools import partial

    import torch.nn as nn
    from torchvision.models.efficientnet import EfficientNet, FusedMBConvConfig, MBConvConfig

    setting = [FusedMBConvConfig(1, 3, 1, 24, 24, 1), FusedMBConvConfig(4, 3, 2, 24, 48, 1),
               FusedMBConvConfig(4, 3, 2, 48, 64, 1), MBConvConfig(4, 3, 2, 64, 128, 1),
               MBConvConfig(6, 3, 1, 128, 160, 1)]
    return EfficientNet(setting, dropout=0.2, last_channel=640, num_classes=10,
                        norm_layer=partial(nn.BatchNorm2d, eps=1e-3))


def custom_efficientnet_b0_half():
    """torchvision's EfficientNet-B0 table (as torchvision.models.efficientnet_b0 builds it) at width and depth 0.5."""
    from functools import partial

    from torchvision.models.efficientnet import EfficientNet, MBConvConfig

    b = partial(MBConvConfig, width_mult=0.5, depth_mult=0.5)
    setting = [b(1, 3, 1, 32, 16, 1), b(6, 3, 2, 16, 24, 2), b(6, 5, 2, 24, 40, 2), b(6, 3, 2, 40, 80, 3),
               b(6, 5, 1, 80, 112, 3), b(6, 5, 2, 112, 192, 4), b(6, 3, 1, 192, 320, 1)]
    return EfficientNet(setting, dropout=0.2, num_classes=10)


def custom_regnety():
    """torchvision's RegNetY-400MF parameters (w_0 48, w_a 27.89, w_m 2.09, group width 8, SE 0.25) at depth 6."""
    from functools import partial

    import torch.nn as nn
    from torchvision.models.regnet import BlockParams, RegNet

    params = BlockParams.from_init_params(depth=6, w_0=48, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25)
    return RegNet(params, num_classes=10, norm_layer=partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1))


def custom_shufflenet():
    import torchvision

    return torchvision.models.ShuffleNetV2([2, 2, 2], [24, 48, 96, 192, 1024], num_classes=10)


def custom_densenet():
    import torchvision

    return torchvision.models.DenseNet(growth_rate=16, block_config=(2, 2, 2, 2), num_init_features=32, num_classes=10)


def custom_convmixer():
    from timm.models.convmixer import ConvMixer

    return ConvMixer(dim=64, depth=4, kernel_size=5, patch_size=4, num_classes=10)


def custom_poolformer():
    """timm's poolformer_s12 (MetaFormer with Pooling token mixers, GroupNorm1) with one block a stage."""
    import torch.nn as nn
    from timm.layers import GroupNorm1
    from timm.models.metaformer import MetaFormer

    return MetaFormer(depths=(1, 1, 1, 1), dims=(64, 128, 320, 512), downsample_norm=None, mlp_act=nn.GELU,
                      mlp_bias=True, norm_layers=GroupNorm1, layer_scale_init_values=1e-5, res_scale_init_values=None,
                      use_mlp_head=False, num_classes=10)


def custom_mobilevit():
    """timm's mobilevit_xxs configuration with one transformer layer in each MobileViT block (2, 4, 3 in the original)."""
    from timm.models.byobnet import ByobNet, ByoModelCfg
    from timm.models.mobilevit import _inverted_residual_block, _mobilevit_block

    cfg = ByoModelCfg(
        blocks=(_inverted_residual_block(d=1, c=16, s=1, br=2.0), _inverted_residual_block(d=3, c=24, s=2, br=2.0),
                _mobilevit_block(d=1, c=48, s=2, transformer_dim=64, transformer_depth=1, patch_size=2, br=2.0),
                _mobilevit_block(d=1, c=64, s=2, transformer_dim=80, transformer_depth=1, patch_size=2, br=2.0),
                _mobilevit_block(d=1, c=80, s=2, transformer_dim=96, transformer_depth=1, patch_size=2, br=2.0)),
        stem_chs=16, stem_type="3x3", stem_pool="", downsample="", act_layer="silu", num_features=320)
    return ByobNet(cfg, num_classes=10)


def tv(name, **kw):
    def make():
        import torchvision

        return getattr(torchvision.models, name)(weights=None, num_classes=10, **kw)

    make.text = f"torchvision.models.{name}(weights=None, num_classes=10{''.join(f', {k}={v!r}' for k, v in kw.items())})"
    return make


def tm(name, reparameterize=False, **kw):
    def make():
        import timm

        return timm.create_model(name, pretrained=False, num_classes=10, **kw)

    make.text = f"timm.create_model({name!r}, pretrained=False, num_classes=10{''.join(f', {k}={v!r}' for k, v in kw.items())})"
    if reparameterize:
        make.reparameterize = True
        make.text += " then timm.utils.reparameterize_model (the inference form)"
    return make


def custom(fn, text):
    fn.text = text
    return fn


# name, library, constructor, input size (square), opset. Depths and widths are cut where the constructor allows it
# (one block a stage): the zoo is about the patterns each architecture gives ONNX Runtime's quantizer, and repeated
# blocks repeat them; the graph-only files stay small enough to commit.
NETWORKS = [
    ("mobilenetv3-small-w0.5", "torchvision", tv("mobilenet_v3_small", width_mult=0.5), 64, 13),
    ("efficientnet-b0-w0.5-d0.5", "torchvision", custom(custom_efficientnet_b0_half, "torchvision.models.efficientnet.EfficientNet(efficientnet_b0's MBConvConfig table with width_mult=0.5, depth_mult=0.5, num_classes=10)"), 64, 13),
    ("efficientnetv2-mini", "torchvision", custom(custom_efficientnetv2, "torchvision.models.efficientnet.EfficientNet([FusedMBConvConfig(1, 3, 1, 24, 24, 1), FusedMBConvConfig(4, 3, 2, 24, 48, 1), FusedMBConvConfig(4, 3, 2, 48, 64, 1), MBConvConfig(4, 3, 2, 64, 128, 1), MBConvConfig(6, 3, 1, 128, 160, 1)], dropout=0.2, last_channel=640, num_classes=10)"), 64, 13),
    ("regnety-400mf-d6", "torchvision", custom(custom_regnety, "torchvision.models.regnet.RegNet(BlockParams.from_init_params(depth=6, w_0=48, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25), num_classes=10)"), 64, 13),
    ("resnet18", "torchvision", tv("resnet18"), 64, 13),
    ("densenet-mini", "torchvision", custom(custom_densenet, "torchvision.models.DenseNet(growth_rate=16, block_config=(2, 2, 2, 2), num_init_features=32, num_classes=10)"), 64, 13),
    ("shufflenetv2-x0.5-r2", "torchvision", custom(custom_shufflenet, "torchvision.models.ShuffleNetV2([2, 2, 2], [24, 48, 96, 192, 1024], num_classes=10)"), 64, 13),
    ("squeezenet1.1", "torchvision", tv("squeezenet1_1"), 64, 13),
    ("googlenet", "torchvision", tv("googlenet", aux_logits=False, init_weights=True), 64, 13),
    ("mnasnet0.5", "torchvision", tv("mnasnet0_5"), 64, 13),
    ("swin-mini", "timm", tm("swin_tiny_patch4_window7_224", img_size=32, window_size=4, embed_dim=32, depths=(2, 2), num_heads=(1, 2)), 32, 17),
    ("convnext-atto-d1", "timm", tm("convnext_atto", depths=(1, 1, 1, 1)), 64, 17),
    ("vit-tiny-d2", "timm", tm("vit_tiny_patch16_224", img_size=64, depth=2), 64, 17),
    ("deit-tiny-distilled-d2", "timm", tm("deit_tiny_distilled_patch16_224", img_size=64, depth=2), 64, 17),
    ("cait-xxs-d2", "timm", tm("cait_xxs24_224", img_size=64, depth=2, depth_token_only=1), 64, 17),
    ("levit-128s-d1", "timm", tm("levit_128s", img_size=128, depth=(1, 1, 1)), 128, 17),
    ("poolformer-s12-d1", "timm", custom(custom_poolformer, "timm.models.metaformer.MetaFormer(poolformer_s12's arguments with depths=(1, 1, 1, 1), num_classes=10)"), 64, 17),
    ("mobileone-s0", "timm", tm("mobileone_s0", reparameterize=True), 64, 13),
    ("mobilevit-xxs-d1", "timm", custom(custom_mobilevit, "timm.models.byobnet.ByobNet(mobilevit_xxs's ByoModelCfg with transformer_depth=1 in each MobileViT block, num_classes=10)"), 64, 17),
    ("convmixer-mini", "timm", custom(custom_convmixer, "timm.models.convmixer.ConvMixer(dim=64, depth=4, kernel_size=5, patch_size=4, num_classes=10)"), 64, 13),
    ("detr-like", "torch.nn + torchvision", custom(custom_detr_like, "ResNet-18 backbone through layer3 (torchvision) + nn.Transformer(d_model=64, nhead=4, 1 encoder and 1 decoder layer, 10 queries) + class and box heads: tools/zoo/make_zoo.py custom_detr_like"), 128, 17),
    ("yolo-like", "torch.nn", custom(custom_yolo_like, "Conv-BN-SiLU, C2f, SPPF, upsample/Concat top-down and strided-conv bottom-up neck, decoupled heads: tools/zoo/make_zoo.py custom_yolo_like"), 128, 13),
]

VARIANTS = (
    ("ort-int8sym", "ONNX Runtime quantize_static, QDQ, activations QInt8 with ActivationSymmetric, weights QInt8 "
                    "symmetric per channel"),
    ("ort-uint8", "ONNX Runtime quantize_static, QDQ, activations QUInt8 (asymmetric, ONNX Runtime's default), "
                  "weights QInt8 symmetric per channel"),
)


# ---------------------------------------------------------------------------------------------------------------------
# Export, quantization, saving
# ---------------------------------------------------------------------------------------------------------------------


def random_batchnorm(model):
    """Random BatchNorm statistics, as a trained model has (fresh ones are all 0/1 and fold to identical constants)."""
    import torch
    import torch.nn as nn

    generator = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)) and m.weight is not None and m.running_mean is not None:
            with torch.no_grad():
                shape = m.weight.shape
                m.weight.copy_(1 + 0.1 * torch.randn(shape, generator=generator))
                m.bias.copy_(0.1 * torch.randn(shape, generator=generator))
                m.running_mean.copy_(0.1 * torch.randn(shape, generator=generator))
                m.running_var.copy_(1 + 0.1 * torch.rand(shape, generator=generator))


def op_histogram(model):
    ops = {}
    for n in model.graph.node:
        key = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}"
        ops[key] = ops.get(key, 0) + 1
    return dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])))


def save_both(model, name, out, graph_only=True):
    """NAME.onnx + NAME.onnx.data in weights/, and (graph_only) the same graph without its data file in graph/."""
    import onnx

    wdir, gdir = os.path.join(out, "weights"), os.path.join(out, "graph")
    full = os.path.join(wdir, name + ".onnx")
    if os.path.exists(full + ".data"):
        os.remove(full + ".data")  # onnx.save appends to an existing data file
    onnx.save(model, full, save_as_external_data=True, all_tensors_to_one_file=True, location=name + ".onnx.data",
              size_threshold=THRESHOLD)
    if graph_only:
        graph = onnx.load(full, load_external_data=False)
        onnx.save(graph, os.path.join(gdir, name + ".onnx"))
    return full


def export_float(net, x, path, opset):
    import torch

    with torch.no_grad():
        y = net(x)
    count = len(y) if isinstance(y, (tuple, list)) else 1
    outputs = ["output"] if count == 1 else [f"output{i}" for i in range(count)]
    torch.onnx.export(net, x, path, opset_version=opset, input_names=["input"], output_names=outputs, dynamo=False,
                      do_constant_folding=True)


def quantize(fp32_path, q_path, shape, variant):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Batches(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.items = iter([{"input": rng.standard_normal(shape).astype(np.float32)} for _ in range(2)])

        def get_next(self):
            return next(self.items, None)

    if variant == "ort-int8sym":
        options = dict(activation_type=QuantType.QInt8,
                       extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
    else:
        options = dict(activation_type=QuantType.QUInt8, extra_options={"WeightSymmetric": True})
    quantize_static(fp32_path, q_path, Batches(), quant_format=QuantFormat.QDQ, weight_type=QuantType.QInt8,
                    per_channel=True, **options)


def describe(model, name, arch, library, make, variant, shape, out):
    import onnx

    return {"file": name + ".onnx", "architecture": arch, "library": library, "constructor": make.text.strip(),
            "variant": variant, "input_shape": list(shape), "opset": [[o.domain, o.version] for o in model.opset_import],
            "ir_version": model.ir_version, "nodes": len(model.graph.node), "ops": op_histogram(model),
            "bytes": os.path.getsize(os.path.join(out, "graph", name + ".onnx")),
            "onnx": onnx.__version__}


def build_architecture(arch, library, make, size, opset, out):
    """Exports one architecture in every variant; returns (records, errors)."""
    import onnx
    import onnxruntime
    import timm
    import torch
    import torchvision

    torch.set_num_threads(2)
    torch.backends.mha.set_fastpath_enabled(False)  # nn.MultiheadAttention's fused path has no ONNX export
    versions = {"torchvision": torchvision.__version__, "timm": timm.__version__}
    lib_text = library
    for known, version in versions.items():
        lib_text = lib_text.replace(known, f"{known} {version}")
    lib_text += f"; torch {torch.__version__}; onnxruntime {onnxruntime.__version__}"
    torch.manual_seed(0)
    shape = (1, 3, size, size)
    x = torch.randn(*shape)
    net = make().eval()
    random_batchnorm(net)
    if getattr(make, "reparameterize", False):
        from timm.utils import reparameterize_model

        net = reparameterize_model(net).eval()
    tmp = os.path.join(out, "tmp")
    fp32_tmp = os.path.join(tmp, arch + "-fp32.onnx")
    export_float(net, x, fp32_tmp, opset)
    records, errors = [], []
    fp32 = onnx.load(fp32_tmp)
    save_both(fp32, arch + "-fp32", out, graph_only=arch in KEEP_FP32)
    if arch in KEEP_FP32:
        rec = describe(fp32, arch + "-fp32", arch, lib_text, make, "fp32", shape, out)
        rec["exporter"] = f"torch.onnx.export (TorchScript, dynamo=False) torch {torch.__version__}"
        records.append(rec)
    for variant, how in VARIANTS:
        name = f"{arch}-{variant}"
        try:
            q_tmp = os.path.join(tmp, name + ".onnx")
            quantize(fp32_tmp, q_tmp, shape, variant)
            model = onnx.load(q_tmp)
            save_both(model, name, out)
            rec = describe(model, name, arch, lib_text, make, variant, shape, out)
            rec["exporter"] = how
            records.append(rec)
            os.remove(q_tmp)
        except Exception:
            errors.append(f"{name}: {traceback.format_exc()}")
    os.remove(fp32_tmp)
    return records, errors


# ---------------------------------------------------------------------------------------------------------------------
# Numerics: the original and the fixed model against the float export, in ONNX Runtime (CPU, default options)
# ---------------------------------------------------------------------------------------------------------------------


def run_model(path, feeds):
    import onnxruntime as ort

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return [session.run(None, feed) for feed in feeds]


def relative_l2(reference, runs):
    num = sum(float(np.sum((a.astype(np.float64) - b.astype(np.float64)) ** 2)) for ra, rb in zip(reference, runs)
              for a, b in zip(ra, rb))
    den = sum(float(np.sum(a.astype(np.float64) ** 2)) for ra in reference for a in ra)
    return (num / den) ** 0.5 if den > 0 else float("nan")


def fix_and_compare(arch, size, out, doctor, lib):
    """qdq-doctor fix on each quantized model with its weights, then the three models under ONNX Runtime."""
    wdir, fdir = os.path.join(out, "weights"), os.path.join(out, "fixed")
    rng = np.random.default_rng(1)
    feeds = [{"input": rng.standard_normal((1, 3, size, size)).astype(np.float32)} for _ in range(8)]
    results = []
    try:
        reference = run_model(os.path.join(wdir, arch + "-fp32.onnx"), feeds)
    except Exception as e:
        return [{"architecture": arch, "error": f"float export does not run: {e}"}]
    env = dict(os.environ)
    if lib:
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    for variant, _ in VARIANTS:
        name = f"{arch}-{variant}"
        src = os.path.join(wdir, name + ".onnx")
        if not os.path.exists(src):
            continue
        row = {"model": name}
        try:
            row["original_rel_l2"] = relative_l2(reference, run_model(src, feeds))
        except Exception as e:
            row["original_error"] = str(e)[:400]
        # fix (every rule), fix + --autocast fp16, and --autocast fp16 alone (--rules none): the last two tell what
        # the float-bias edit does to autocast (issue 38, item 12).
        for label, extra in (("fixed", []), ("autocast", ["--autocast", "fp16"]),
                             ("autocast_only", ["--rules", "none", "--autocast", "fp16"])):
            run_fix_and_compare(row, label, extra, name, src, fdir, out, doctor, env, reference, feeds)
        results.append(row)
    return results


def run_session(path, feeds, level=None):
    import onnxruntime as ort

    options = ort.SessionOptions()
    if level is not None:
        options.graph_optimization_level = level
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return [session.run(None, feed) for feed in feeds]


def run_fix_and_compare(row, label, extra, name, src, fdir, out, doctor, env, reference, feeds):
    """One `qdq-doctor fix` of src (extra options), its report's counts and its model under ONNX Runtime: with the
    default options, and where that fails, with graph optimizations at basic and off (issue 38, item 13)."""
    import onnxruntime as ort

    dst = os.path.join(fdir, f"{name}-{label}.onnx")
    started = time.time()
    proc = subprocess.run([doctor, "fix", src, "-o", dst, "--format", "json"] + extra, capture_output=True,
                          text=True, env=env, timeout=300)
    row[f"{label}_exit"], row[f"{label}_seconds"] = proc.returncode, round(time.time() - started, 2)
    with open(os.path.join(out, "fixlogs", f"{name}-{label}.json"), "w") as f:
        f.write(proc.stdout)
    with open(os.path.join(out, "fixlogs", f"{name}-{label}.stderr"), "w") as f:
        f.write(proc.stderr)
    try:
        report = json.loads(proc.stdout)
        edits = {}
        for e in report.get("edits", []):
            edits[e.get("kind", "?")] = edits.get(e.get("kind", "?"), 0) + 1
        row[f"{label}_edits"] = edits
        row[f"{label}_skipped"] = len(report.get("skipped", []))
        row[f"{label}_after_errors"] = (report.get("after") or {}).get("errors")
        row[f"{label}_checker"] = report.get("checker")
        if label == "fixed":
            row["edits"], row["skipped"] = edits, row[f"{label}_skipped"]
            row["before"], row["after"], row["checker"] = report.get("before"), report.get("after"), report.get("checker")
            growth = [e["numeric_cost"]["step_growth"] for e in report.get("edits", [])
                      if e.get("numeric_cost") and e["numeric_cost"].get("step_growth") is not None]
            row["largest_step_growth"] = max(growth) if growth else None
    except Exception as e:
        row[f"{label}_report_error"] = f"{e}: {proc.stdout[:200]} {proc.stderr[:400]}"
    if not os.path.exists(dst):
        return
    try:
        runs = run_session(dst, feeds)
        row[f"{label}_rel_l2"] = relative_l2(reference, runs)
    except Exception as e:
        row[f"{label}_ort_error"] = str(e)[:400]
        for level_name, level in (("basic", ort.GraphOptimizationLevel.ORT_ENABLE_BASIC),
                                  ("off", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)):
            try:
                row[f"{label}_rel_l2_optimizations_{level_name}"] = relative_l2(reference,
                                                                               run_session(dst, feeds, level))
            except Exception as e2:
                row[f"{label}_ort_error_optimizations_{level_name}"] = str(e2)[:400]


def work(index, out, doctor, lib):
    arch, library, make, size, opset = NETWORKS[index]
    started = time.time()
    try:
        records, errors = build_architecture(arch, library, make, size, opset, out)
    except Exception:
        return arch, [], [f"{arch}: {traceback.format_exc()}"], [], round(time.time() - started, 1)
    numerics = []
    if doctor:
        try:
            numerics = fix_and_compare(arch, size, out, doctor, lib)
        except Exception:
            errors.append(f"{arch} numerics: {traceback.format_exc()}")
    return arch, records, errors, numerics, round(time.time() - started, 1)


def write_summaries(out, records, numerics, errors, seconds):
    order = {n[0]: i for i, n in enumerate(NETWORKS)}
    variant_order = {"fp32": 0, "ort-int8sym": 1, "ort-uint8": 2}
    records = sorted(records, key=lambda r: (order[r["architecture"]], variant_order[r["variant"]]))
    with open(os.path.join(out, "MODELS.json"), "w") as f:
        json.dump(records, f, indent=1)
    with open(os.path.join(out, "numerics.json"), "w") as f:
        json.dump(sorted(numerics, key=lambda r: r.get("model", r.get("architecture", ""))), f, indent=1)
    with open(os.path.join(out, "errors.txt"), "w") as f:
        f.write("\n".join(errors))
    with open(os.path.join(out, "seconds.json"), "w") as f:
        json.dump(seconds, f, indent=1)
    return records


def pack(work_dir, dest, weights_cap=15 << 20):
    """Tarballs for the way back: graph-only models and summaries; fix reports; complete models of small networks
    (the first architectures of WEIGHTS_ORDER whose files fit under the cap, each architecture whole)."""
    import tarfile

    with tarfile.open(os.path.join(dest, "zoo-graph.tar.gz"), "w:gz") as tar:
        for name in ("graph", "MODELS.json", "numerics.json", "errors.txt", "seconds.json"):
            if os.path.exists(os.path.join(work_dir, name)):
                tar.add(os.path.join(work_dir, name), arcname=name)
    with tarfile.open(os.path.join(dest, "zoo-fixlogs.tar.gz"), "w:gz") as tar:
        tar.add(os.path.join(work_dir, "fixlogs"), arcname="fixlogs")
    wdir = os.path.join(work_dir, "weights")
    total = 0
    with tarfile.open(os.path.join(dest, "zoo-weights.tar.gz"), "w:gz") as tar:
        for arch in WEIGHTS_ORDER:
            files = sorted(f for f in os.listdir(wdir) if f.startswith(arch + "-"))
            size = sum(os.path.getsize(os.path.join(wdir, f)) for f in files)
            if not files or total + size > weights_cap:
                continue
            total += size
            for f in files:
                tar.add(os.path.join(wdir, f), arcname="weights/" + f)
    print("packed; complete models:", total, "bytes before compression", flush=True)


# the complete models to bring back first, smallest networks first
WEIGHTS_ORDER = ("mobilenetv3-small-w0.5", "yolo-like", "squeezenet1.1", "convmixer-mini", "swin-mini", "vit-tiny-d2",
                 "densenet-mini")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--doctor", default="")
    parser.add_argument("--lib", default="")
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--only", default="")
    parser.add_argument("--pack", default="", help="only pack OUT (made earlier) into tarballs in this folder")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    if args.pack:
        pack(out, args.pack)
        return
    for sub in ("graph", "weights", "fixed", "fixlogs", "tmp"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    doctor = os.path.abspath(args.doctor) if args.doctor else ""
    lib = os.path.abspath(args.lib) if args.lib else ""
    only = set(filter(None, args.only.split(",")))
    todo = [i for i, n in enumerate(NETWORKS) if not only or n[0] in only]
    records, errors, numerics, seconds = [], [], [], {}
    # fork: the workers inherit NETWORKS; each seeds torch itself, so the order of the work does not matter
    import multiprocessing

    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs, mp_context=context) as pool:
        futures = [pool.submit(work, i, out, doctor, lib) for i in todo]
        for future in concurrent.futures.as_completed(futures):
            arch, r, e, m, s = future.result()
            records += r
            errors += e
            numerics += m
            seconds[arch] = s
            print(f"{arch}: {len(r)} models, {len(e)} errors, {s} s", flush=True)
            for text in e:
                print(text, flush=True)
            write_summaries(out, records, numerics, errors, seconds)  # kept as it grows: a run cut short keeps it
    records = write_summaries(out, records, numerics, errors, seconds)
    print("graph-only sizes (bytes):")
    for r in records:
        print(f"  {r['file']}: {r['bytes']} bytes, {r['nodes']} nodes, opset {r['opset']}, ir {r['ir_version']}")
    print("total graph-only bytes of the quantized models:",
          sum(r["bytes"] for r in records if r["variant"] != "fp32"), flush=True)
    for row in sorted(numerics, key=lambda r: r.get("model", r.get("architecture", ""))):
        before = (row.get("before") or {}).get("predicted", {})
        after = (row.get("after") or {}).get("predicted", {})
        print(row.get("model", row.get("architecture")), "fix exit", row.get("fix_exit"),
              "rel L2 original %.4g fixed %.4g autocast %.4g autocast-only %.4g" % (
                  row.get("original_rel_l2", float("nan")), row.get("fixed_rel_l2") or float("nan"),
                  row.get("autocast_rel_l2") or float("nan"), row.get("autocast_only_rel_l2") or float("nan")),
              "errors after", row.get("fixed_after_errors"), row.get("autocast_after_errors"),
              "step x", row.get("largest_step_growth"),
              "edits", row.get("edits"), "standalone", before.get("standalone_qdq_layers"), "->",
              after.get("standalone_qdq_layers"),
              {k: v for k, v in row.items() if "error" in k}, flush=True)


if __name__ == "__main__":
    main()
