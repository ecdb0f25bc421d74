"""Runs `predict`, `diagnose` and `fix --dry-run` (JSON) on every model of a zoo folder and lists where qdq-doctor
looks wrong: a finding that contradicts the engine the same model's prediction shows, or a fix that makes the
predicted engine worse. A development check (standard library only), not a test; tests/test_zoo.cpp is the test.

    python3 tools/zoo/check_zoo.py QDQ_DOCTOR tests/fixtures/zoo [--trt-version 10]

Checks, per model:
  - fp32-island: a node it names runs in a layer predict calls quantized (role quantized-*);
  - a finding that says TensorRT runs nodes as separate layers or a Q/DQ as its own layer (qdq-between-conv-and-add,
    int8-op-without-output-q, standalone-qdq) while predict puts all of its nodes in one Myelin layer;
  - depthwise-act-not-fused and qdq-inside-conv-epilogue on the same node (one removes the Q/DQ the other adds);
  - fix: more standalone Q/DQ or more layers predicted after its edits than before, error findings left, new warnings.
"""
import json
import os
import subprocess
import sys

SEPARATE_LAYER_RULES = ("qdq-between-conv-and-add", "int8-op-without-output-q", "standalone-qdq")


def run(doctor, *args):
    proc = subprocess.run([doctor, *args], capture_output=True, text=True)
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        return proc.returncode, {"error": proc.stderr[-400:]}


def findings_of(report):
    return report.get("findings", [])


def check(doctor, path, extra):
    problems = []
    rc_p, predicted = run(doctor, "predict", "--format", "json", *extra, path)
    rc_d, report = run(doctor, "diagnose", "--format", "json", *extra, path)
    rc_f, fix = run(doctor, "fix", "--dry-run", "--format", "json", *extra, path)
    for name, rc in (("predict", rc_p), ("diagnose", rc_d), ("fix", rc_f)):
        if rc != 0:
            problems.append(f"{name} exit {rc}")
    layer_of = {}
    for layer in predicted.get("layers", []):
        for node in layer.get("onnx_nodes", []):
            layer_of.setdefault(node, layer)
    by_node = {}
    for f in findings_of(report):
        rule, nodes = f.get("rule"), f.get("onnx_nodes", [])
        for node in nodes:
            by_node.setdefault(node, set()).add(rule)
        if rule == "fp32-island":
            quantized = [n for n in nodes if layer_of.get(n, {}).get("role", "").startswith("quantized-")]
            if quantized:
                problems.append(f"fp32-island names {len(quantized)} of {len(nodes)} nodes predict runs quantized "
                                f"(first {quantized[0]})")
        if rule in SEPARATE_LAYER_RULES and nodes:
            layers = {id(layer_of[n]) for n in nodes if n in layer_of}
            kinds = {layer_of[n].get("kind") for n in nodes if n in layer_of}
            if len(layers) == 1 and kinds == {"Myelin"} and all(n in layer_of for n in nodes):
                problems.append(f"{rule} says separate layers for nodes predict puts in one Myelin layer "
                                f"(first {nodes[0]})")
    both = [n for n, rules in by_node.items() if {"depthwise-act-not-fused", "qdq-inside-conv-epilogue"} <= rules]
    if both:
        problems.append(f"depthwise-act-not-fused and qdq-inside-conv-epilogue on {len(both)} nodes (first {both[0]})")
    before = fix.get("before", {})
    after = fix.get("after", {})
    pb, pa = before.get("predicted", {}), after.get("predicted", {})
    if pa.get("standalone_qdq_layers", 0) > pb.get("standalone_qdq_layers", 0):
        problems.append(f"fix: standalone Q/DQ {pb.get('standalone_qdq_layers')} -> {pa.get('standalone_qdq_layers')}")
    if pa.get("layers", 0) > pb.get("layers", 0):
        problems.append(f"fix: layers {pb.get('layers')} -> {pa.get('layers')}")
    if after.get("errors", 0):
        problems.append(f"fix: {after.get('errors')} error findings left "
                        f"({', '.join(sorted(k for k in after.get('by_rule', {}) if k in error_rules(report)))})")
    if fix.get("new_warnings"):
        problems.append(f"fix: {len(fix['new_warnings'])} new warnings (first: {fix['new_warnings'][0][:120]})")
    summary = (f"{predicted.get('summary', {}).get('layers')} layers, "
               f"{predicted.get('summary', {}).get('standalone_qdq_layers')} standalone; "
               f"{len(findings_of(report))} findings; fix {len(fix.get('edits', []))} edits, standalone "
               f"{pb.get('standalone_qdq_layers')} -> {pa.get('standalone_qdq_layers')}, errors "
               f"{before.get('errors')} -> {after.get('errors')}")
    return summary, problems


def error_rules(report):
    return {f.get("rule") for f in findings_of(report) if f.get("severity") == "error"}


def main():
    doctor, folder = sys.argv[1], sys.argv[2]
    extra = sys.argv[3:]
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".onnx"):
            continue
        summary, problems = check(doctor, os.path.join(folder, name), extra)
        print(f"{name}: {summary}")
        grouped = {}
        for p in problems:  # one line a kind of problem: how many, and the first
            kind = p.split(" (first ")[0] if " (first " in p else p
            grouped.setdefault(kind, []).append(p)
        for kind, items in grouped.items():
            print(f"    ! {items[0]}" + (f" [and {len(items) - 1} more like it]" if len(items) > 1 else ""))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
