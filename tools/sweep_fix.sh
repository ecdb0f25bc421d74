#!/usr/bin/env bash
# Runs `qdq-doctor fix` on each model given, then `fix --dry-run` on its output, and prints one line per model: the
# exit status, the edits made and skipped, the new warnings, the edits of the second run (must be 0), and the
# predicted layers and standalone Q/DQ layers before -> after (neither should grow). A development check over
# exported models (tools/device/export_zoo.py, ../shared/models), not a test: it writes into OUT_DIR.
#   tools/sweep_fix.sh QDQ_DOCTOR OUT_DIR MODEL.onnx...
set -uo pipefail
doctor=$1 out=$2
shift 2
mkdir -p "$out"
for model in "$@"; do
    name=$(basename "$model" .onnx)
    rm -f "$out/$name.onnx"
    "$doctor" fix "$model" -o "$out/$name.onnx" >"$out/$name.txt" 2>&1
    status=$?
    edits=$(grep -m1 -o "^Edits ([0-9]*)" "$out/$name.txt")
    skipped=$(grep -m1 -o "^Skipped ([0-9]*)" "$out/$name.txt")
    warnings=$(grep -m1 "new warnings:" "$out/$name.txt" | sed 's/.*new warnings: *//')
    layers=$(grep -m1 "predicted layers " "$out/$name.txt" | awk '{print $3 "->" $5}')
    standalone=$(grep -m1 "predicted standalone" "$out/$name.txt" | awk '{print $5 "->" $7}')
    again="-"
    if [[ -f "$out/$name.onnx" ]]; then
        "$doctor" fix "$out/$name.onnx" --dry-run >"$out/$name.again.txt" 2>&1
        again=$(grep -m1 -o "^Edits ([0-9]*)" "$out/$name.again.txt")
    fi
    echo "$name rc=$status [$edits] [$skipped] new=[$warnings] again=[$again] layers=$layers standalone=$standalone"
done
