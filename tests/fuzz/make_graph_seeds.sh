#!/usr/bin/env bash
# Writes the seeds of fuzz_graph_commands (tests/fuzz/seeds-graph/), each a graph program as
# fuzz_graph_commands.cpp reads it: the first byte is the flags (bit 0 a shaped input, bit 1 with the sample engine,
# bit 2 Graphviz pictures, bit 3 fix autocasts (bit 4 bf16, bit 5 --autocast-io, bit 6 opset 19), bits 4-7 predict's
# version and precision), then steps, each a step byte (the Step enum: 0 op, 1 raw Q/DQ, 2 Q/DQ loop, 3 second
# producer, 4 no outputs, 5 many outputs, 6 duplicate constant, 7 graph output, 8 chain, 9 odd node, 10 quantized
# conv, 11 external data, 12 subgraph) and the bytes that step reads.
set -euo pipefail
out=$(dirname "$0")/seeds-graph
mkdir -p "$out"
seed() { printf "$2" >"$out/$1"; }
# The cycle: q: t0x -> t0a, dq: t0a -> t0x, Relu: t0x -> t0; alone and with the sample engine.
seed qdq-cycle '\x00\x02\x00\x00'
seed qdq-cycle-engine '\x02\x02\x00\x00'
# The same loop on a conv's weight path, through an Identity (q: t0x -> t0a, i: t0a -> t0b, dq: t0b -> t0x).
seed weight-cycle-engine '\x02\x02\x28\x00\x00'
# A Relu reading its own output.
seed self-loop '\x00\x00\x01\xa0\x00'
# QuantizeLinear with 0 and 1 inputs, DequantizeLinear without a scale, QuantizeLinear with 4 inputs.
seed qdq-arity '\x00\x01\x01\x00\x00\x01\x03\x00\x00\x00\x01\x04\x00\x07\x00\x00\x01\x09\x00\x00\x00\x00\x00\x00'
# Scales of odd shapes and values: a 2-D scale, an int32 scale, a NaN scale, a float8 zero point.
seed odd-scales '\x00\x01\x05\x00\x03\x25\x02\x00\x00\x01\x05\x00\x04\x05\x00\x00\x01\x05\x00\x38\x02\x00\x00'
# 4,096 Relus in a chain; 1,152 alternating Q and DQ nodes in one cycle; 2,048 residual Adds.
seed deep-chain '\x00\x08\x00\xff\x00\x00'
seed deep-qdq-loop '\x02\x08\x05\xd1\x00'
seed deep-residual '\x01\x08\x02\xdf\x00\x00'
# A second producer of the input, a node without outputs, a Split with an empty and a repeated output name, an
# initializer named like the input, a dangling graph output, an odd node name, a quantized conv on the sample engine.
seed duplicates '\x02\x03\x00\x00\x00\x04\x00\x00\x00\x05\x4b\x00\x06\x00\x01\x07\xe0\x09\x10\x00\x0a\x01\x00\x00'
# A shaped input through a quantized conv, Q/DQ, Relu, MaxPool, a residual Add (ONNX shape inference runs).
seed conv-qdq-shaped '\x13\x0a\x01\x00\x00\x00\x04\x01\x00\x00\x00\x01\x02\x00\x00\x02\x00\x03\x00\x00\x00\x03\x01\x00\x00'
# External data (step 11: kind, location, offset, length, [dims], output, input; kLocations / kRangeValues): a float
# weight of 3 values in w.bin inside the folder, then the same at an absolute path, through a FIFO, named like fix's
# output, with offsets and lengths that are no numbers, and an INT32 bias behind a DQ with no location at all.
seed external-inside '\x00\x0b\x00\x00\x01\x02\x3d\x00\x00'
seed external-absolute '\x00\x0b\x00\x06\x01\x00\x3d\x00\x00'
seed external-fifo '\x00\x0b\x00\x09\x00\x00\x3d\x00\x00'
seed external-like-output '\x00\x0b\x00\x04\x00\x00\x3d\x00\x00'
seed external-bad-numbers '\x00\x0b\x00\x00\x06\x08\x3d\x00\x00'
seed external-int32-bias '\x00\x0b\x03\x80\x00\x00\x3d\x00\x00'
# Subgraphs (step 12: kind, input, output): an If whose branches read the input (a Q/DQ in one), a Loop whose body
# reads it, each followed by a Relu of the If's output.
seed subgraph-if '\x00\x0c\x0c\x00\x00\x00\x00\xff\x00'
seed subgraph-loop '\x00\x0c\x10\x00\x00\x00\x00\xff\x00'
# Autocast (flags bit 3): fp16 of a shaped quantized conv block at opset 19; bf16 with --autocast-io of an
# external-data weight beside an If reading the input.
seed autocast-opset19 '\x49\x0a\x01\x00\x00\x00\x04\x01\x00\x00\x00\x01\x02\x00\x00\x02\x00\x03\x00\x00\x00\x03\x01\x00\x00'
seed autocast-external-subgraph '\x39\x0b\x00\x00\x01\x02\x3d\x00\x00\x0c\x08\x00\x00'
