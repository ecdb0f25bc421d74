"""Issue 38, item 12: what the float-bias edit and autocast do to the numbers at opset 19, where autocast writes the
Q/DQ scales in FP16 and lowers the ops that read them.

For each architecture: its complete quantized models (tools/zoo/make_zoo.py OUT/weights) converted to opset 19 by
onnx.version_converter, then `qdq-doctor fix` (every rule), `fix --autocast fp16` and `fix --rules none --autocast
fp16` (autocast alone), each run in ONNX Runtime (CPU; graph optimizations at their default, else basic: see
check_opset19_concat.py) on 8 random inputs; relative L2 error against the float export. One JSON line a model.
    python3 check_opset19_autocast.py QDQ_DOCTOR ZOO_OUT WORK ARCH...
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import version_converter


def run(path, feeds):
    for level in (None, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC):
        options = ort.SessionOptions()
        if level is not None:
            options.graph_optimization_level = level
        try:
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            return [session.run(None, feed) for feed in feeds], ("default" if level is None else "basic")
        except Exception as e:
            error = str(e)[:200]
    return None, error


def rel_l2(reference, runs):
    num = sum(float(np.sum((a.astype(np.float64) - b.astype(np.float64)) ** 2)) for ra, rb in zip(reference, runs)
              for a, b in zip(ra, rb))
    den = sum(float(np.sum(a.astype(np.float64) ** 2)) for ra in reference for a in ra)
    return (num / den) ** 0.5


def main():
    doctor, zoo, work, archs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    os.makedirs(work, exist_ok=True)
    for arch in archs:
        fp32 = os.path.join(zoo, "weights", arch + "-fp32.onnx")
        shape = [d.dim_value or 1 for d in onnx.load(fp32).graph.input[0].type.tensor_type.shape.dim]
        rng = np.random.default_rng(1)
        feeds = [{"input": rng.standard_normal(shape).astype(np.float32)} for _ in range(8)]
        reference, _ = run(fp32, feeds)
        for variant in ("ort-int8sym", "ort-uint8"):
            row = {"model": f"{arch}-{variant}"}
            src = os.path.join(work, f"{arch}-{variant}-opset19.onnx")
            onnx.save(version_converter.convert_version(onnx.load(os.path.join(zoo, "weights",
                                                                              f"{arch}-{variant}.onnx")), 19), src)
            outputs, how = run(src, feeds)
            row["original"] = rel_l2(reference, outputs) if outputs else how
            for label, extra in (("fixed", []), ("fix_autocast", ["--autocast", "fp16"]),
                                 ("autocast_only", ["--rules", "none", "--autocast", "fp16"])):
                dst = os.path.join(work, f"{arch}-{variant}-{label}.onnx")
                proc = subprocess.run([doctor, "fix", src, "-o", dst, "--force", "--format", "json"] + extra,
                                      capture_output=True, text=True, timeout=300)
                if proc.returncode != 0:
                    row[label] = f"fix exit {proc.returncode}: {proc.stderr[-200:]}"
                    continue
                report = json.loads(proc.stdout)
                outputs, how = run(dst, feeds)
                row[label] = rel_l2(reference, outputs) if outputs else how
                row[label + "_ort"] = how
                row[label + "_lowered"] = (report.get("autocast") or {}).get("nodes_lowered")
                row[label + "_errors_after"] = (report.get("after") or {}).get("errors")
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
