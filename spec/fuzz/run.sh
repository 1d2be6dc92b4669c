#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time (CTest's fuzz.<name>):
#   run.sh BINARY NAME SPEC_FUZZ_DIR WORK_DIR [LIBFUZZER_FLAG...]
# MOONPORT_FUZZ_SECONDS sets the time (60 by default). Every seed of
# SPEC_FUZZ_DIR/corpus/NAME runs first, then libFuzzer mutates; new inputs
# are kept in WORK_DIR/corpus/NAME, a crashing one in WORK_DIR/artifacts/.
# Exits non-zero on a crash, a leak, a timeout of one input (10 s) or an
# out-of-memory (2 GiB); the final statistics (executions, executions per
# second) end the output.
set -euo pipefail
bin=$1 name=$2 src=$3 work=$4
shift 4
seconds=${MOONPORT_FUZZ_SECONDS:-60}
mkdir -p "$work/corpus/$name" "$work/artifacts"
args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
  -print_final_stats=1 -artifact_prefix="$work/artifacts/$name-")
if [ -f "$src/$name.dict" ]; then args+=(-dict="$src/$name.dict"); fi
args+=("$@")
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$bin" "${args[@]}" "$work/corpus/$name" "$src/corpus/$name"
