"""`fix --calibration-cache` under ONNX Runtime, on the device machine (not CI): each FP32 model against the explicit
Q/DQ model qdq-doctor wrote from it and a calibration cache.

    python3 tools/device/check_calibration_fix.py DOCTOR MODELS_DIR WORK_DIR

DOCTOR runs qdq-doctor; MODELS_DIR holds copies of the real sets of ../shared/calibration (CNN_Depthwise.1b5dae4.onnx
with g5.cache, my_model.onnx with unet.cache) and the graph-only ../shared/models/resnet18-fp32.onnx. For ResNet-18,
whose shared model has no weights, the script draws them (He-normal convs, seed 0) and makes the cache an implicit
MinMax calibration would store: every tensor's max |x| / 127 over 16 random inputs, written in TensorRT's cache format
(TRT-100800-MinMaxCalibration). The real sets keep their real caches, which were calibrated on data we do not have:
their inputs here are random draws inside the range the cache gives the network input.

The real sets are then converted again with a MinMax cache made here from random inputs of the same range, which
separates what the placement costs from how far the real cache is from random data.

Each pair runs on the same 8 inputs with graph optimizations off (the float ops as written) and at ORT's default
level (which runs Q -> DQ -> Conv as an INT8 QLinearConv on the CPU). Printed per model: the relative L2 error of the
explicit model's outputs against the FP32 model's, and the largest absolute difference.
"""
import os
import struct
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

doctor, models_dir, work_dir = sys.argv[1:4]
os.makedirs(work_dir, exist_ok=True)


def session(path, level):
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def resnet_with_weights(graph_only, out_path):
    model = onnx.load(graph_only, load_external_data=False)
    rng = np.random.default_rng(0)
    for tensor in model.graph.initializer:
        dims = list(tensor.dims)
        if len(dims) == 4:
            fan_in = dims[1] * dims[2] * dims[3]
            values = rng.normal(0.0, np.sqrt(2.0 / fan_in), dims)
        elif len(dims) == 2:
            values = rng.normal(0.0, np.sqrt(1.0 / dims[1]), dims)
        else:
            values = rng.normal(0.0, 0.05, dims)
        new = numpy_helper.from_array(values.astype(np.float32), tensor.name)
        tensor.CopyFrom(new)
    onnx.save(model, out_path, save_as_external_data=True, location=os.path.basename(out_path) + ".data")


def feeds_for(sess, rng, shapes, low, high):
    feeds = {}
    for inp in sess.get_inputs():
        shape = shapes.get(inp.name) or [d if isinstance(d, int) else 1 for d in inp.shape]
        feeds[inp.name] = rng.uniform(low, high, shape).astype(np.float32)
    return feeds


def minmax_cache(model_path, cache_path, shapes, low, high):
    model = onnx.shape_inference.infer_shapes(onnx.load(model_path))
    typed = {info.name: info for info in model.graph.value_info}
    existing = {o.name for o in model.graph.output}
    tensors = [i.name for i in model.graph.input]
    for node in model.graph.node:
        for out in node.output:
            tensors.append(out)
            if out not in existing and out in typed:
                model.graph.output.append(typed[out])
    probe = os.path.join(work_dir, "probe.onnx")
    onnx.save(model, probe, save_as_external_data=True, location="probe.onnx.data")
    sess = session(probe, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    names = [o.name for o in sess.get_outputs()]
    amax = {}
    rng = np.random.default_rng(1)
    for _ in range(16):
        feeds = feeds_for(sess, rng, shapes, low, high)
        for name, value in feeds.items():
            amax[name] = max(amax.get(name, 0.0), float(np.abs(value).max()))
        for name, value in zip(names, sess.run(names, feeds)):
            if value.dtype == np.float32 and value.size > 0:
                amax[name] = max(amax.get(name, 0.0), float(np.abs(value).max()))
    with open(cache_path, "w") as cache:
        cache.write("TRT-100800-MinMaxCalibration\n")
        for name in tensors:
            if amax.get(name, 0.0) > 0.0:
                bits = struct.unpack(">I", struct.pack(">f", amax[name] / 127.0))[0]
                cache.write("%s: %08x\n" % (name, bits))


def fix(model, cache, out):
    result = subprocess.run([doctor, "fix", model, "--calibration-cache", cache, "-o", out, "--force"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("qdq-doctor fix failed on %s: %s" % (model, result.stderr))
    summary = [line for line in result.stdout.splitlines() if "weighted op(s) run INT8" in line or "checker" in line]
    return summary


def compare(name, fp32, explicit, shapes, low, high):
    for level_name, level in (("no graph optimizations", ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
                              ("ORT default optimizations", ort.GraphOptimizationLevel.ORT_ENABLE_ALL)):
        a = session(fp32, level)
        b = session(explicit, level)
        rng = np.random.default_rng(2)
        errors, biggest = [], 0.0
        for _ in range(8):
            feeds = feeds_for(a, rng, shapes, low, high)
            for x, y in zip(a.run(None, feeds), b.run(None, feeds)):
                errors.append(float(np.linalg.norm(x - y) / max(np.linalg.norm(x), 1e-12)))
                biggest = max(biggest, float(np.abs(x - y).max()))
        print("%-42s %-27s rel L2 error mean %.4f max %.4f, max |diff| %.4g" %
              (name, level_name, np.mean(errors), np.max(errors), biggest))


resnet = os.path.join(work_dir, "resnet18-fp32.onnx")
resnet_with_weights(os.path.join(models_dir, "resnet18-fp32.onnx"), resnet)
resnet_cache = os.path.join(work_dir, "resnet18-minmax.cache")
minmax_cache(resnet, resnet_cache, {"input": [1, 3, 224, 224]}, -2.0, 2.0)

sets = [
    ("resnet18 (random weights)", resnet, resnet_cache, {"input": [1, 3, 224, 224]}, -2.0, 2.0),
    ("g5-cnn-depthwise-trt841", os.path.join(models_dir, "CNN_Depthwise.1b5dae4.onnx"),
     os.path.join(models_dir, "g5.cache"), {"input": [1, 612, 14, 1]}, -6.8, 6.8),
    ("lannyyip-unet-instnorm-trt801", os.path.join(models_dir, "my_model.onnx"),
     os.path.join(models_dir, "unet.cache"), {"input0": [1, 1, 1024, 500]}, -1.0, 1.0),
]
# The real sets again with a MinMax cache of the very inputs they are compared on: what the placement and the
# conversion cost when the scales fit the data, apart from how well the real cache fits random inputs.
for name, model, cache, shapes, low, high in list(sets[1:]):
    own = os.path.join(work_dir, os.path.basename(model).replace(".onnx", "-minmax.cache"))
    minmax_cache(model, own, shapes, low, high)
    sets.append((name + " (MinMax here)", model, own, shapes, low, high))
for name, model, cache, shapes, low, high in sets:
    out = os.path.join(work_dir, os.path.basename(cache).replace(".cache", "") + "-explicit.onnx")
    for line in fix(model, cache, out):
        print("%-42s %s" % (name, line.strip()))
    onnx.checker.check_model(out)
    compare(name, model, out, shapes, low, high)
