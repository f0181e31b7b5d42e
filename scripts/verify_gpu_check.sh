#!/usr/bin/env bash
# The GPU check of `verify` (issue 8), for a machine with a CUDA device and torch 2.13 installed.
# Verifies fixture projects with --device cuda (report shows the device the tests ran on), then
# shows that --device cpu hides the GPU. About 1-2 minutes. Usage: PYTHON=.venv/bin/python scripts/verify_gpu_check.sh
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
for name in loss_warnings pinned_warning legacy_classifier; do
  [ -d "fixtures/projects/$name" ] || continue
  cp -r "fixtures/projects/$name" "$work/"
  rm -rf "$work/$name/.pytest_cache"
  echo "=== verify $name --device cuda"
  "$PY" -m codemods verify "$work/$name" --device cuda --python "$PY" --rerun 1 --format markdown
  echo "exit $?"
done
echo "=== verify loss_warnings --device cpu (GPU hidden)"
"$PY" -m codemods verify "$work/loss_warnings" --device cpu --python "$PY" --rerun 0 | grep -E "device:|OK|REGRESSIONS"
echo "exit ${PIPESTATUS[0]}"
