#!/usr/bin/env bash
# Runs the emulator (the built-in demo guest when no disk is given): installs what it
# needs, builds a release binary, and passes all arguments to `aero`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/install-deps.sh run
cargo build --release -q -p aero
exec target/release/aero "${@:-run}"
