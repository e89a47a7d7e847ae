#!/usr/bin/env bash
# Installs what is missing, builds what the demo needs in build/ (shared with tools/test.sh),
# and runs minidl's main job. Until the trainers land that is tools/examples/fit_line.cpp: a
# linear fit by gradient descent with autograd, which prints the recovered coefficients.
# Runnable from any directory.
set -euo pipefail
# shellcheck source=tools/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "${MINIDL_ROOT}"

bash "${MINIDL_ROOT}/tools/bootstrap.sh"
minidl_configure_main
cmake --build build -j "${MINIDL_JOBS}" --target fit_line
echo "==== fit_line: y = 2x + 5 from 1024 noisy samples ===="
build/tools/fit_line
