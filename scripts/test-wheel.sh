#!/usr/bin/env bash
# Installs the x86_64 wheel from dist/ into a fresh virtual environment with
# no network and runs the Python package's tests against it
# (python/tests/test_installed.py): the console script, compute_score
# against run's rewards, score_file, errors, and the release files.
# Run scripts/build-wheels.sh first. .ci/run runs both.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
python=${PYTHON:-/usr/bin/python3}
wheel=$(ls dist/verl_score-*-manylinux*_x86_64.whl)
venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
"$python" -m venv "$venv"
# No network: a network namespace of its own where the host allows one.
offline=()
if unshare --net true 2>/dev/null; then offline=(unshare --net --); fi
"${offline[@]}" "$venv/bin/pip" install --quiet --no-index --disable-pip-version-check "$wheel"
cd "$(dirname "$venv")"   # away from the source tree, so the wheel's module is imported
VERL_SCORE_REPO=$repo VERL_SCORE_DIST=$repo/dist "${offline[@]}" \
  "$venv/bin/python" "$repo/python/tests/test_installed.py" -v 2>&1 | tee unittest.log
grep -q '^OK' unittest.log
