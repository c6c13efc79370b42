#!/usr/bin/env bash
# The GPU validation of issue 36: every part, each in its own process and time budget.
#   bash benchmarks/gpu/run_all.sh OUT_DIR [PART ...] [--cpu-smoke] [--cap SECONDS]
# See run_all.py and benchmarks/gpu/README.md. Never changes a device setting.
set -u
exec python3 "$(dirname "$0")/run_all.py" "$@"
