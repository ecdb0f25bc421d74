#!/usr/bin/env python3
"""Numerics of qdq-doctor's attention fix edits, measured with ONNX Runtime (device machine; not part of CI).

For a model and its fixed version this prints, per output, the largest absolute difference between the two under
ONNX Runtime (graph optimizations off, CPU) on random normal inputs, beside the model's own quantization error: the
difference between the model and the same model with every activation Q -> DQ pair taken out (weights keep theirs).
An edit that keeps the numerics gives a difference far below that error (moving a Transpose or a scaling Mul across a
pair: only float rounding); the Softmax-output pair adds one rounding of the probabilities, of the order of a fraction
of the model's own error.

Usage:
  compare_fixed_attention.py generate OUT_DIR
      writes the hand-built attentions of tests/test_rules_attention.cpp, with calibrated scales, as ONNX:
      int8-key-transpose.onnx (K Transpose after its DQ, scaling Mul after Q's DQ, Softmax output float) and
      fp8-key-transpose.onnx (the same in FP8 E4M3, opset 19).
  compare_fixed_attention.py compare ORIGINAL.onnx FIXED.onnx [--inputs N] [--seed S]
  compare_fixed_attention.py all OUT_DIR --qdq-doctor PATH
      generate, run `PATH fix MODEL -o MODEL.fixed.onnx --force` on each, compare each.

Needs numpy, onnx and onnxruntime (>= 1.16 for FP8 Q/DQ).
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCH, HEADS, SEQ, HEAD = 1, 4, 64, 32


def _scale(amax, qmax):
    return np.float32(max(float(amax), 1e-8) / qmax)


def _qdq(nodes, inits, prefix, tensor, scale, fp8):
    zp_type = TensorProto.FLOAT8E4M3FN if fp8 else TensorProto.INT8
    inits.append(numpy_helper.from_array(np.array(scale, dtype=np.float32), prefix + "/scale"))
    inits.append(helper.make_tensor(prefix + "/zero_point", zp_type, [], [0]))
    nodes.append(helper.make_node("QuantizeLinear", [tensor, prefix + "/scale", prefix + "/zero_point"],
                                  [prefix + "/q"], name=prefix + "/QuantizeLinear"))
    nodes.append(helper.make_node("DequantizeLinear", [prefix + "/q", prefix + "/scale", prefix + "/zero_point"],
                                  [prefix + "/dq"], name=prefix + "/DequantizeLinear"))
    return prefix + "/dq"


def attention_model(fp8, calibration):
    """q, k, v -> softmax((DQ(Q(q)) * c) x Transpose(DQ(Q(k)))) x DQ(Q(v)); the Softmax output float."""
    qmax = 448.0 if fp8 else 127.0
    c = np.float32(1.0 / np.sqrt(HEAD))
    nodes, inits = [], [numpy_helper.from_array(np.array(c, dtype=np.float32), "/attn/scale_value")]
    shape = [BATCH, HEADS, SEQ, HEAD]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("q", "k", "v")]
    query = _qdq(nodes, inits, "/attn/q_q", "q", _scale(np.abs(calibration["q"]).max(), qmax), fp8)
    nodes.append(helper.make_node("Mul", [query, "/attn/scale_value"], ["/attn/Mul_q_out"], name="/attn/Mul_q"))
    key = _qdq(nodes, inits, "/attn/k_q", "k", _scale(np.abs(calibration["k"]).max(), qmax), fp8)
    nodes.append(helper.make_node("Transpose", [key], ["/attn/Transpose_k_out"], name="/attn/Transpose_k",
                                  perm=[0, 1, 3, 2]))
    nodes.append(helper.make_node("MatMul", ["/attn/Mul_q_out", "/attn/Transpose_k_out"], ["/attn/scores"],
                                  name="/attn/MatMul"))
    nodes.append(helper.make_node("Softmax", ["/attn/scores"], ["/attn/probs"], name="/attn/Softmax", axis=-1))
    value = _qdq(nodes, inits, "/attn/v_q", "v", _scale(np.abs(calibration["v"]).max(), qmax), fp8)
    nodes.append(helper.make_node("MatMul", ["/attn/probs", value], ["out"], name="/attn/MatMul_1"))
    graph = helper.make_graph(nodes, "attention", inputs,
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19 if fp8 else 17)],
                              producer_name="qdq-doctor bench/compare_fixed_attention.py")
    model.ir_version = 9 if fp8 else 8
    onnx.checker.check_model(model)
    return model


def random_inputs(model_path, count, seed):
    model = onnx.load(model_path)
    initializers = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = []
    for _ in range(count):
        feed = {}
        for value in model.graph.input:
            if value.name in initializers:
                continue
            dims = [d.dim_value if d.dim_value > 0 else 1 for d in value.type.tensor_type.shape.dim]
            feed[value.name] = rng.standard_normal(dims).astype(np.float32)
        feeds.append(feed)
    return feeds


def without_activation_qdq(model):
    """The model with every Q -> DQ pair on an activation taken out (its float yardstick)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    constants = {i.name for i in graph.initializer} | {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    producer = {o: n for n in graph.node for o in n.output}
    rename, drop = {}, set()
    for node in graph.node:
        if node.op_type != "DequantizeLinear":
            continue
        q = producer.get(node.input[0])
        if q is None or q.op_type != "QuantizeLinear" or q.input[0] in constants:
            continue
        rename[node.output[0]] = q.input[0]
        drop.update({id(node), id(q)})

    def resolve(name):
        while name in rename:
            name = rename[name]
        return name

    kept = [n for n in graph.node if id(n) not in drop]
    for node in kept:
        for i, name in enumerate(node.input):
            node.input[i] = resolve(name)
    outputs = {o.name for o in graph.output}
    for name in list(rename):
        if name in outputs:
            kept.append(helper.make_node("Identity", [resolve(name)], [name]))
    del graph.node[:]
    graph.node.extend(kept)
    return model


def run(model, feeds):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return names, [session.run(names, feed) for feed in feeds]


def compare(original_path, fixed_path, count=8, seed=0):
    feeds = random_inputs(original_path, count, seed)
    names, original = run(original_path, feeds)
    fixed_names, fixed = run(fixed_path, feeds)
    _, yardstick = run(without_activation_qdq(onnx.load(original_path)), feeds)
    print(f"{os.path.basename(original_path)} vs {os.path.basename(fixed_path)} ({count} random normal inputs)")
    print("output | max abs diff fixed vs original | output magnitude | model's own quantization error | ratio")
    for index, name in enumerate(names):
        fixed_index = fixed_names.index(name)
        diff = max(float(np.abs(o[index] - f[fixed_index]).max()) for o, f in zip(original, fixed))
        own = max(float(np.abs(o[index] - y[index]).max()) for o, y in zip(original, yardstick))
        magnitude = max(float(np.abs(o[index]).max()) for o in original)
        ratio = diff / own if own > 0 else float("nan")
        print(f"{name} | {diff:.6g} | {magnitude:.6g} | {own:.6g} | {ratio:.3g}")


def generate(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(1234)
    calibration = {n: rng.standard_normal([BATCH, HEADS, SEQ, HEAD]).astype(np.float32) for n in ("q", "k", "v")}
    paths = []
    for fp8 in (False, True):
        path = os.path.join(out_dir, ("fp8" if fp8 else "int8") + "-key-transpose.onnx")
        onnx.save(attention_model(fp8, calibration), path)
        paths.append(path)
        print("wrote", path)
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("out_dir")
    c = sub.add_parser("compare")
    c.add_argument("original")
    c.add_argument("fixed")
    c.add_argument("--inputs", type=int, default=8)
    c.add_argument("--seed", type=int, default=0)
    a = sub.add_parser("all")
    a.add_argument("out_dir")
    a.add_argument("--qdq-doctor", required=True)
    args = parser.parse_args()
    if args.command == "generate":
        generate(args.out_dir)
    elif args.command == "compare":
        compare(args.original, args.fixed, args.inputs, args.seed)
    else:
        for path in generate(args.out_dir):
            fixed = path[: -len(".onnx")] + ".fixed.onnx"
            subprocess.run([args.qdq_doctor, "fix", path, "-o", fixed, "--force"], check=False)
            if os.path.exists(fixed):
                compare(path, fixed)
            else:
                print("no fixed model for", path, file=sys.stderr)


if __name__ == "__main__":
    main()
