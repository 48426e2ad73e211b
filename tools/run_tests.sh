#!/usr/bin/env bash
# Runs the suite; an empty run (pytest exit 5) is a failure, not a pass.
set -uo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/python -m pytest -q "$@"
rc=$?
if [ $rc -eq 5 ]; then echo "run_tests: pytest collected no tests" >&2; exit 1; fi
exit $rc
