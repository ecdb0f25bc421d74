"""Issue 38, item 12: the float-bias edit, autocast and both, at opset 17 and 19, under ONNX Runtime (CPU, default
graph optimizations, falling back to basic where the default refuses the model). Prints one JSON line per model and
opset with the relative L2 error against the float export.
    python3 probe_float_bias_autocast.py QDQ_DOCTOR ZOO_OUT WORK   (ZOO_OUT: tools/zoo/make_zoo.py OUT)
Rerun a written model with graph_optimization_level ORT_DISABLE_ALL to see that the model itself is right.
"""
import json, os, subprocess, sys
import numpy as np, onnx, onnxruntime as ort
from onnx import version_converter
doctor, zoo, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
def run(path, feeds):
    for level in (None, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC):
        o = ort.SessionOptions()
        if level is not None: o.graph_optimization_level = level
        try:
            s = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])
            return [s.run(None, f) for f in feeds]
        except Exception as e:
            err = str(e)[:150]
    return err
def rel(ref, runs):
    if isinstance(runs, str): return runs
    num = sum(float(np.sum((a.astype(np.float64)-b.astype(np.float64))**2)) for ra, rb in zip(ref, runs) for a, b in zip(ra, rb))
    den = sum(float(np.sum(a.astype(np.float64)**2)) for ra in ref for a in ra)
    bad = sum(int(np.sum(~np.isfinite(b))) for rb in runs for b in rb)
    return "%.4f nonfinite=%d" % ((num/den)**0.5, bad)
def fix(src, dst, extra):
    p = subprocess.run([doctor, "fix", src, "-o", dst, "--force", "--format", "json"] + extra, capture_output=True, text=True)
    return p.returncode
for arch in ["mobilenetv3-small-w0.5", "efficientnet-b0-w0.5-d0.5", "yolo-like", "resnet18"]:
    fp32 = os.path.join(zoo, "weights", arch + "-fp32.onnx")
    shape = [d.dim_value or 1 for d in onnx.load(fp32).graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(1)
    feeds = [{"input": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)]
    ref = run(fp32, feeds)
    for opset in (17, 19):
        src = os.path.join(work, f"{arch}-{opset}.onnx")
        m = onnx.load(os.path.join(zoo, "weights", f"{arch}-ort-int8sym.onnx"))
        onnx.save(version_converter.convert_version(m, opset) if opset != 13 else m, src)
        row = {"model": arch, "opset": opset}
        for label, extra in (("bias_autocast", ["--rules", "quantized-bias", "--autocast", "fp16"]),
                             ("bias_only", ["--rules", "quantized-bias"]),
                             ("all_fix", []),
                             ("all_autocast", ["--autocast", "fp16"]),
                             ("autocast_only", ["--rules", "none", "--autocast", "fp16"])):
            dst = os.path.join(work, f"{arch}-{opset}-{label}.onnx")
            rc = fix(src, dst, extra)
            row[label] = rel(ref, run(dst, feeds)) if rc == 0 else f"rc {rc}"
        # autocast of the fixed model, as a second run
        dst = os.path.join(work, f"{arch}-{opset}-fixed-then-autocast.onnx")
        rc = fix(os.path.join(work, f"{arch}-{opset}-all_fix.onnx"), dst, ["--rules", "none", "--autocast", "fp16"])
        row["fixed_then_autocast"] = rel(ref, run(dst, feeds)) if rc == 0 else f"rc {rc}"
        print(json.dumps(row), flush=True)
