#!/usr/bin/env bash
# Runs one libFuzzer target for a fixed time (called by the fuzz-<target> build targets).
# Usage: run_fuzzer.sh BINARY RUN_DIR SECONDS RSS_LIMIT_MB MAX_LEN SEED_DIR [TIMEOUT_SECONDS, default 10]
# RUN_DIR/corpus keeps what the run finds, RUN_DIR/artifacts gets crash-*/timeout-*/oom-*/leak-* inputs,
# RUN_DIR/fuzz-0.log is libFuzzer's log. Fails when libFuzzer reports a finding.
set -uo pipefail
binary=$1 run=$2 seconds=$3 rss=$4 max_len=$5 seeds=$6 timeout=${7:-10}
mkdir -p "$run/corpus" "$run/artifacts"
# Graphviz (the HTML report's pictures) and the font libraries it loads keep process-lifetime allocations: the
# suppressions CI's sanitizer run uses name those system libraries only.
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$(cd "$(dirname "$0")/../sanitizer" && pwd)/lsan.supp}"
cd "$run" || exit 1
rm -f fuzz-0.log
"$binary" -jobs=1 -workers=1 -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss" -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$run/artifacts/" "$run/corpus" "$seeds" >/dev/null 2>&1
status=$?
# The final coverage line, libFuzzer's statistics, and any report.
grep -E "DONE|stat::|ERROR|SUMMARY|==[0-9]+==" fuzz-0.log | tail -n 40
echo "corpus: $(find "$run/corpus" -type f | wc -l) inputs in $run/corpus"
# slow-unit-* files (inputs slower than libFuzzer's report threshold) are not findings.
findings=$(find "$run/artifacts" -type f \( -name "crash-*" -o -name "timeout-*" -o -name "oom-*" -o -name "leak-*" \) | wc -l)
if [[ $status -ne 0 || $findings -ne 0 ]]; then
    echo "fuzz: $(basename "$binary") found something (exit $status); inputs in $run/artifacts:" >&2
    ls -l "$run/artifacts" >&2
    exit 1
fi
