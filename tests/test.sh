#!/usr/bin/env bash
# Runs every Aero test on a fresh Debian machine: installs the packages the tests need,
# builds the guest images from Debian packages (cached in ~/.cache/aero), then runs the
# whole suite (unit, differential, boot tests) in the optimised `ci` profile.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/install-deps.sh test
if [ -f tests/images/build.sh ]; then
  bash tests/images/build.sh
fi
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --cargo-profile ci --no-fail-fast "$@"
else
  cargo test --workspace --profile ci --no-fail-fast "$@"
fi
