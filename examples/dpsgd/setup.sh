#!/usr/bin/env bash
# Creates a Python virtual environment with JAX Privacy (CPU only) for the DP-SGD adapter
# examples/dpsgd/jax_privacy_adapter.py and its test tests/exec_dpsgd_lib.rs.
#
#   examples/dpsgd/setup.sh [VENV]        # default: $DP_AUDIT_DPSGD_VENV or /tmp/dp-audit-dpsgd-venv
#   DP_AUDIT_PYTHON=VENV/bin/python cargo test --release --test exec_dpsgd_lib -- --ignored --nocapture
#
# Versions are pinned in requirements.txt beside this script (verified together). jaxlib's PyPI
# wheel is CPU-only, so nothing of CUDA is downloaded (about 650 MB installed; see
# docs/seeds/dpsgd-library.md for the measured time and size, and why not Opacus).
# PYTHON names the interpreter that creates the venv (default python3; JAX Privacy 2.0 needs
# Python >= 3.11).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:-${DP_AUDIT_DPSGD_VENV:-/tmp/dp-audit-dpsgd-venv}}"
python="${PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
    echo "setup.sh: $python is $("$python" --version 2>&1); allowed: Python 3.11 or newer (JAX Privacy 2.0 needs it); set PYTHON=..." >&2
    exit 2
fi

start=$(date +%s)
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
# Smoke check: the library imports and its accountant answers (q = 1/10, z = 2, T = 10, δ = 1e-5).
claim=$("$venv/bin/python" "$here/jax_privacy_adapter.py" --noise-multiplier 2 --steps 10 \
    --num-examples 10 --print-claim 2>/dev/null)
echo "setup.sh: $venv ready in $(( $(date +%s) - start )) s, $(du -sh "$venv" | cut -f1) on disk"
echo "setup.sh: JAX Privacy's accountant, q = 1/10, z = 2, T = 10: --claim $claim"
echo "setup.sh: run the test with DP_AUDIT_PYTHON=$venv/bin/python"
