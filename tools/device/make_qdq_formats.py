"""Writes small Q/DQ models in the newer formats TensorRT 10 accepts, for checking qdq-doctor by hand (not CI).

    python3 tools/device/make_qdq_formats.py OUT_DIR

Needs the onnx package (the device machine has it). Models, each checked with onnx.checker and shape inference:
  - fp8-conv: opset 19, FLOAT8E4M3FN Q/DQ on a conv's input and weight (TensorRT's FP8 recipe);
  - int4-blocked-matmul: opset 21, an INT4 weight dequantized block-wise (axis 0, block_size 32) into a MatMul, the
    activation left float (weight-only quantization of LLMs);
  - fp16-scale-conv: opset 19, an FP16 network whose Q/DQ scales are FLOAT16;
  - int8-output-dtype: opset 21, QuantizeLinear with output_dtype=INT8 and no zero point input.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(0)


def save(model, name):
    onnx.checker.check_model(model)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))
    print("wrote", name)


def scalar(name, value, dtype=TensorProto.FLOAT):
    return helper.make_tensor(name, dtype, [], [value])


# FP8 conv: x -> Q/DQ (fp8) -> Conv(W -> Q/DQ fp8) -> Relu -> Q/DQ (fp8) -> Conv -> y
w1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w1")
w2 = numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32), "w2")
fp8_zero = helper.make_tensor("zp8", TensorProto.FLOAT8E4M3FN, [], [0.0])
nodes = [
    helper.make_node("QuantizeLinear", ["x", "s_in", "zp8"], ["xq"], name="in_q"),
    helper.make_node("DequantizeLinear", ["xq", "s_in", "zp8"], ["xd"], name="in_dq"),
    helper.make_node("QuantizeLinear", ["w1", "s_w", "zp8"], ["w1q"], name="w1_q"),
    helper.make_node("DequantizeLinear", ["w1q", "s_w", "zp8"], ["w1d"], name="w1_dq"),
    helper.make_node("Conv", ["xd", "w1d"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("QuantizeLinear", ["r1", "s_r1", "zp8"], ["r1q"], name="r1_q"),
    helper.make_node("DequantizeLinear", ["r1q", "s_r1", "zp8"], ["r1d"], name="r1_dq"),
    helper.make_node("QuantizeLinear", ["w2", "s_w", "zp8"], ["w2q"], name="w2_q"),
    helper.make_node("DequantizeLinear", ["w2q", "s_w", "zp8"], ["w2d"], name="w2_dq"),
    helper.make_node("Conv", ["r1d", "w2d"], ["y"], name="conv2", pads=[1, 1, 1, 1]),
]
graph = helper.make_graph(nodes, "fp8", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])],
                          [w1, w2, fp8_zero, scalar("s_in", 0.02), scalar("s_w", 0.01), scalar("s_r1", 0.05)])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), "fp8-conv")

# INT4 blocked weight-only MatMul: y = x @ DQ(w_int4, scales[K/32, N], axis 0, block 32)
K, N = 64, 16
w4 = helper.make_tensor("w4", TensorProto.INT4, [K, N], rng.integers(-8, 8, size=K * N).tolist())
scales = numpy_helper.from_array((rng.random((K // 32, N)) * 0.01 + 0.001).astype(np.float32), "w4_scale")
nodes = [
    helper.make_node("DequantizeLinear", ["w4", "w4_scale"], ["wd"], name="w4_dq", axis=0, block_size=32),
    helper.make_node("MatMul", ["x", "wd"], ["y"], name="matmul"),
]
graph = helper.make_graph(nodes, "int4", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, N])], [w4, scales])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), "int4-blocked-matmul")

# FP16 network with FLOAT16 scales
w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float16), "w")
nodes = [
    helper.make_node("QuantizeLinear", ["x", "s16", "zp"], ["xq"], name="in_q"),
    helper.make_node("DequantizeLinear", ["xq", "s16", "zp"], ["xd"], name="in_dq"),
    helper.make_node("QuantizeLinear", ["w", "s16w", "zp"], ["wq"], name="w_q"),
    helper.make_node("DequantizeLinear", ["wq", "s16w", "zp"], ["wd"], name="w_dq"),
    helper.make_node("Conv", ["xd", "wd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["y"], name="relu"),
]
graph = helper.make_graph(nodes, "fp16", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 8, 16, 16])],
                          [w, scalar("s16", 0.02, TensorProto.FLOAT16), scalar("s16w", 0.01, TensorProto.FLOAT16),
                           helper.make_tensor("zp", TensorProto.INT8, [], [0])])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), "fp16-scale-conv")

# Q with output_dtype and no zero point (opset 21)
w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
nodes = [
    helper.make_node("QuantizeLinear", ["x", "s"], ["xq"], name="in_q", output_dtype=TensorProto.INT8),
    helper.make_node("DequantizeLinear", ["xq", "s"], ["xd"], name="in_dq"),
    helper.make_node("QuantizeLinear", ["w", "sw"], ["wq"], name="w_q", output_dtype=TensorProto.INT8),
    helper.make_node("DequantizeLinear", ["wq", "sw"], ["wd"], name="w_dq"),
    helper.make_node("Conv", ["xd", "wd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["r"], name="relu"),
    helper.make_node("QuantizeLinear", ["r", "s2"], ["rq"], name="out_q", output_dtype=TensorProto.INT8),
    helper.make_node("DequantizeLinear", ["rq", "s2"], ["y"], name="out_dq"),
]
graph = helper.make_graph(nodes, "int8dtype", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])],
                          [w, scalar("s", 0.02), scalar("sw", 0.01), scalar("s2", 0.05)])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), "int8-output-dtype")
