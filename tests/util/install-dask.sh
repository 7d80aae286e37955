#!/usr/bin/env bash
# Installs Dask's distributed scheduler for the Dask tests (tests/shard_counts.rs) when it is
# missing: `pip install "dask[distributed]"` (about 40 MB from PyPI) into the python3 that runs
# examples/dask/run_audit.py, as tests/util/install-chromium.sh installs the browser for the
# report tests, so a fresh machine needs no set-up step of its own. Prints the Dask version;
# exits non-zero when it cannot install (the tests then skip, printing why).
set -euo pipefail
PY=${PYTHON:-python3}
if ! command -v "$PY" >/dev/null 2>&1; then
  echo "install-dask: $PY not found; install Python 3" >&2
  exit 1
fi
if "$PY" -c "import dask.distributed" >/dev/null 2>&1; then
  "$PY" -c "import dask; print('dask', dask.__version__)"
  exit 0
fi
echo "install-dask: installing dask[distributed] with pip" >&2
if ! "$PY" -m pip install --quiet --disable-pip-version-check "dask[distributed]" >&2; then
  # A system Python managed by the distribution refuses plain installs (PEP 668).
  "$PY" -m pip install --quiet --disable-pip-version-check --user --break-system-packages "dask[distributed]" >&2
fi
"$PY" -c "import dask.distributed, dask; print('dask', dask.__version__)"
