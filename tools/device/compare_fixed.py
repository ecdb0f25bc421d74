"""Compares graph-only models with their `qdq-doctor fix` output under ONNX Runtime, on the device machine (not CI).

    python3 tools/device/compare_fixed.py ORIG_DIR FIXED_DIR WEIGHTS_DIR

ORIG_DIR holds graph-only models made by export_zoo.py (here, on this machine) and FIXED_DIR what `qdq-doctor fix`
wrote from them; both name NAME.onnx.data, which neither folder has. WEIGHTS_DIR holds a second export with
`--with-weights` made on the device: the same seeds give the same graph, which is checked byte for byte, and its data
file is copied beside both models. Then each model, the fixed one, and a yardstick run on 8 random inputs with graph
optimizations off. The yardstick is the float network the model was quantized from (NAME-fp32.onnx in WEIGHTS_DIR,
which export_zoo.py --with-weights writes), or else the original with every activation Q -> DQ pair taken out. The last
column is the fixed model's difference from that same float yardstick: its own quantization error.
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort

orig_dir, fixed_dir, weights_dir = sys.argv[1:4]


def without_activation_qdq(path, out_path):
    """The model with every Q -> DQ pair on an activation removed (weights keep their Q/DQ)."""
    model = onnx.load(path)
    graph = model.graph
    producer = {o: n for n in graph.node for o in n.output}
    constants = {i.name for i in graph.initializer}
    outputs = {o.name for o in graph.output}
    rewire = {}
    for node in graph.node:
        if node.op_type != "DequantizeLinear" or node.output[0] in outputs:
            continue
        q = producer.get(node.input[0])
        if q is None or q.op_type != "QuantizeLinear" or q.input[0] in constants:
            continue
        source = producer.get(q.input[0])
        if source is not None and source.op_type in ("Constant", "Identity", "DequantizeLinear"):
            continue
        rewire[node.output[0]] = q.input[0]
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name in rewire:
                node.input[k] = rewire[name]
    onnx.save(model, out_path, save_as_external_data=False)
    return True


def run(path, feeds):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return [session.run(None, feed) for feed in feeds]


print("| model | max abs difference fixed vs original | output magnitude | own quantization error | ratio | fixed "
      "model's quantization error |")
print("|---|---|---|---|---|---|")
for name in sorted(os.listdir(fixed_dir)):
    if not name.endswith(".onnx"):
        continue
    stem = name[: -len(".onnx")]
    exported = os.path.join(weights_dir, name)
    original = os.path.join(orig_dir, name)
    if not os.path.exists(exported):
        print(f"| {stem} | not exported on the device | | | |")
        continue
    if open(exported, "rb").read() != open(original, "rb").read():
        print(f"| {stem} | the device's export differs from the graph that was fixed | | | |")
        continue
    for folder in (orig_dir, fixed_dir):
        shutil.copy(os.path.join(weights_dir, stem + ".onnx.data"), os.path.join(folder, stem + ".onnx.data"))
    fixed = os.path.join(fixed_dir, name)
    # The yardstick: the float network the model was quantized from (export_zoo.py --with-weights writes it), else the
    # model with its activation Q -> DQ pairs taken out. The second is no float model for ONNX Runtime's uint8
    # exports: its quantizer removes a Relu before a Q whose range starts at 0 and lets the clamp do the Relu's work.
    network = stem.rsplit("-ort-qdq", 1)[0].rsplit("-qat-", 1)[0]
    plain = os.path.join(weights_dir, network + "-fp32.onnx")
    if os.path.exists(plain):
        has_yardstick = True
    else:
        plain = os.path.join(weights_dir, stem + ".no-activation-qdq.onnx")
        has_yardstick = without_activation_qdq(original, plain)
    session = ort.InferenceSession(original, providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    rng = np.random.default_rng(1)
    feeds = [{i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
              for i in inputs} for _ in range(8)]
    a = run(original, feeds)
    b = run(fixed, feeds)
    diff = max(float(np.max(np.abs(x - y))) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
    magnitude = max(float(np.max(np.abs(x))) for ra in a for x in ra)
    if has_yardstick:
        c = run(plain, feeds)
        own = max(float(np.max(np.abs(x - y))) for ra, rc in zip(a, c) for x, y in zip(ra, rc))
        ratio = f"{diff / own:.2f}" if own > 0 else "-"
        own_text = f"{own:.4g}"
        # The fixed model against the same float yardstick: what the edits cost in accuracy, not only how far they
        # move the output (a symmetric quantizer re-rounds every value it touches).
        fixed_own = max(float(np.max(np.abs(x - y))) for rb, rc in zip(b, c) for x, y in zip(rb, rc))
        fixed_own_text = f"{fixed_own:.4g}"
    else:
        own_text, ratio, fixed_own_text = "-", "-", "-"
    print(f"| {stem} | {diff:.4g} | {magnitude:.4g} | {own_text} | {ratio} | {fixed_own_text} |", flush=True)
