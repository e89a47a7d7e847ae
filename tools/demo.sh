#!/usr/bin/env bash
# Installs what is missing, builds train_lenet in build/ (shared with tools/test.sh), and trains
# LeNet-5 on Fashion-MNIST (Debian package dataset-fashion-mnist) with the program's defaults:
# 6 epochs, about 0.90 test accuracy. Checkpoints go to runs/train_lenet/ under the current
# directory; arguments are passed on to train_lenet (tools/demo.sh --epochs 2, say).
# Runnable from any directory.
set -euo pipefail
# shellcheck source=tools/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
demo_directory=$(pwd)
cd "${MINIDL_ROOT}"

bash "${MINIDL_ROOT}/tools/bootstrap.sh"
minidl_configure_main
cmake --build build -j "${MINIDL_JOBS}" --target train_lenet
echo "==== train_lenet: LeNet-5 on Fashion-MNIST ===="
cd "${demo_directory}"
exec "${MINIDL_ROOT}/build/tools/train_lenet" "$@"
