#!/usr/bin/env bash
# Download, on a machine with a package index, the wheels a bare GPU machine (Python 3.12, torch
# preinstalled, no network) needs to run sklearn-icml: put them in .whl/ (ignored by git) and carry
# that folder along; benchmarks/gpu.sh installs them with --no-index.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)
for req in "scikit-learn==1.9.*" "skorch>=1.0" "pot>=0.9.5" "narwhals" "tqdm" "tabulate" "setuptools>=77" "$@"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${plat[@]}" -d .whl "$req"
done
ls -la .whl
