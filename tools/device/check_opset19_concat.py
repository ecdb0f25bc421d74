"""Issue 38, item 13: does ONNX Runtime load an opset-19 model whose quantized Concat has FP16 scales?

Converts each given complete Q/DQ model to opset 19 (onnx.version_converter), runs `qdq-doctor fix --rules none
--autocast fp16` on it (FP16 Q/DQ scales from opset 19), and loads the result in ONNX Runtime (CPU) with graph
optimizations at their default (all), extended, basic and off. Prints one JSON line per model.
    python3 check_opset19_concat.py QDQ_DOCTOR OUT_DIR MODEL.onnx...
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import version_converter


def main():
    doctor, out, models = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    levels = {"default": None, "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
              "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, "off": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}
    for path in models:
        name = os.path.basename(path)[:-5]
        row = {"model": name}
        model = onnx.load(path)
        converted = version_converter.convert_version(model, 19)
        src = os.path.join(out, name + "-opset19.onnx")
        onnx.save(converted, src)
        dst = os.path.join(out, name + "-opset19-autocast.onnx")
        proc = subprocess.run([doctor, "fix", src, "-o", dst, "--rules", "none", "--autocast", "fp16", "--format",
                               "json", "--force"], capture_output=True, text=True, timeout=300)
        row["fix_exit"] = proc.returncode
        try:
            report = json.loads(proc.stdout)
            row["notes"] = (report.get("autocast") or {}).get("notes")
        except Exception:
            row["fix_stderr"] = proc.stderr[-400:]
        graph = onnx.load(dst).graph if os.path.exists(dst) else None
        if graph is not None:
            row["concats"] = sum(1 for n in graph.node if n.op_type == "Concat")
        shape = [d.dim_value or 1 for d in converted.graph.input[0].type.tensor_type.shape.dim]
        feed = {converted.graph.input[0].name: np.random.default_rng(1).standard_normal(shape).astype(np.float32)}
        for label, level in levels.items():
            for which, file in (("original", src), ("autocast", dst)):
                if not os.path.exists(file):
                    continue
                options = ort.SessionOptions()
                if level is not None:
                    options.graph_optimization_level = level
                try:
                    ort.InferenceSession(file, options, providers=["CPUExecutionProvider"]).run(None, feed)
                    row[f"{which}_{label}"] = "runs"
                except Exception as e:
                    row[f"{which}_{label}"] = str(e)[:300]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
