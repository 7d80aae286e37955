#!/bin/sh
# Runs the real-world suite (tests/suite/cases.json) through ./target/release/audit with only
# the manifest's flags; see run.py for the options (e.g. --only ID, --extra "--finder corners").
cd "$(dirname "$0")/../.." && exec python3 tests/suite/run.py "$@"
