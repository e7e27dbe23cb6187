#!/usr/bin/env bash
# Builds and tests the Python package (python/) as CI does: a fresh
# virtual environment, maturin and pytest from the package index, the
# package built from ./python (a release build of the engine and the
# bindings), then pytest over python/tests. The environment lives in a
# temporary directory removed at exit. Python: $PYTHON, else python3.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
start=$SECONDS
venv=$(mktemp -d "${TMPDIR:-/tmp}/batchkv-pytest.XXXXXX")
trap 'rm -rf "$venv"' EXIT

"$PYTHON" -m venv "$venv"
# As if activated: the build backend runs the `maturin` executable by name.
export PATH="$venv/bin:$PATH" VIRTUAL_ENV="$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.9.4,<2" pytest
# --no-build-isolation: build with the maturin installed above instead of
# fetching a second copy into an isolated build environment.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation ./python
echo "python-test: environment and package ready after $((SECONDS - start)) s"

# -p no:cacheprovider: leave no .pytest_cache in the source tree.
"$venv/bin/python" -m pytest -p no:cacheprovider python/tests
echo "python-test: done in $((SECONDS - start)) s"
