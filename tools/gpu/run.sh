#!/usr/bin/env bash
# Runs one stage of minidl's GPU verdict on a GPU machine, from the repository root, with the
# kit of tools/gpu/pack.sh beside it (docs/gpu.md has the steps):
#
#   tools/gpu/run.sh test  OUTDIR    configure and build for the GPU found, ctest by label,
#                                    compute-sanitizer memcheck and racecheck
#   tools/gpu/run.sh bench OUTDIR    bench_compare.py against PyTorch eager and torch.compile,
#                                    whole-run peak memory, bench --profile
#   tools/gpu/run.sh accuracy OUTDIR time to accuracy of train_lenet and train_cifar10
#                                    (ResNet-18) next to the PyTorch twins; train_gpt on
#                                    Shakespeare (from the kit's archive) next to its twin
#   tools/gpu/run.sh STAGE OUTDIR --rehearse   (or MINIDL_GPU_REHEARSE=1) the same sequence on
#                                    a machine without a GPU: CUDA steps are skipped ("no GPU")
#                                    after their command lines are checked; the rest runs small
#
# Each stage ends within 9 minutes (MINIDL_GPU_STAGE_SECONDS: fewer) (every step under `timeout` with its own budget; a failed
# step does not stop the later ones) and writes OUTDIR/summary-STAGE.json and
# OUTDIR/logs-STAGE.tar.xz. Exits 0 only when no step failed.
#
# This script sets up the environment, as one would by hand; tools/gpu/stages.py runs the steps.
#   MINIDL_GPU_KIT        the kit folder (default .gpu-kit), unpacked once into MINIDL_GPU_WORK
#   MINIDL_GPU_WORK       scratch: unpacked kit, library links, logs (default /tmp/minidl-gpu)
#   MINIDL_GPU_BUILD_DIR  the CUDA build (default build-gpu; reused when it is there)
# and it exports LD_LIBRARY_PATH, MINIDL_DATA and PATH (see below) for every step, and Open MPI's
# relocation (tools/gpu/kit_mpi_env.sh) when the kit holds it.
set -uo pipefail

usage() {
  echo "usage: tools/gpu/run.sh test|bench|accuracy OUTDIR [--rehearse]" >&2
  exit 2
}
(($# >= 2)) || usage
stage=$1
outdir=$2
rehearse=${MINIDL_GPU_REHEARSE:-0}
[[ ${3:-} == --rehearse ]] && rehearse=1
[[ -n ${3:-} && ${3:-} != --rehearse ]] && usage
[[ ${stage} == test || ${stage} == bench || ${stage} == accuracy ]] || usage

repository=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${repository}" || exit 2
kit=$(realpath -m "${MINIDL_GPU_KIT:-${repository}/.gpu-kit}")
work=$(realpath -m "${MINIDL_GPU_WORK:-/tmp/minidl-gpu}")
mkdir -p "${work}" "${outdir}" || exit 2
setup_log=${work}/setup-${stage}.log
setup_start=${SECONDS}
problems=() # what went wrong here; the summary's "setup" step fails on any

note() { echo "$*" | tee -a "${setup_log}"; }
problem() {
  note "PROBLEM: $*"
  problems+=("$*")
}
: >"${setup_log}"

# ---- the kit: Debian packages unpacked once per archive, and the data ----
prefix=${work}/deps/root/usr
if [[ ! -f ${kit}/deps.tar.xz ]]; then
  problem "no kit at ${kit} (deps.tar.xz): run tools/gpu/pack.sh on the build machine and" \
    "copy .gpu-kit beside the tree (device tool: carry [\".gpu-kit\"])"
else
  stamp=$(sed -n 's/^# stamp //p' "${kit}/manifest.txt" 2>/dev/null)
  if [[ -z ${stamp} || $(cat "${work}/deps/.stamp" 2>/dev/null) != "${stamp}" ]]; then
    if rm -rf "${work}/deps" && mkdir -p "${work}/deps" &&
      tar -xJf "${kit}/deps.tar.xz" -C "${work}/deps" &&
      echo "${stamp}" >"${work}/deps/.stamp"; then
      note "kit: unpacked ${kit}/deps.tar.xz into ${work}/deps"
    else
      problem "could not unpack ${kit}/deps.tar.xz into ${work}/deps"
    fi
  else
    note "kit: ${work}/deps is already unpacked (stamp ${stamp:0:12})"
  fi
fi
# The kit's Open MPI, relocated to where it was unpacked (tools/gpu/kit_mpi_env.sh): mpirun first
# on PATH, for the build's FindMPI and the mpi steps; with_kit_mpi_only.sh checks a step uses it.
# shellcheck source=tools/gpu/kit_mpi_env.sh
source "${repository}/tools/gpu/kit_mpi_env.sh"
export MINIDL_GPU_KIT_MPI_ROOT='' MINIDL_GPU_KIT_MPI_PACKAGES=''
if kit_mpi_env "${work}/deps/root"; then
  MINIDL_GPU_KIT_MPI_ROOT=${work}/deps/root
  MINIDL_GPU_KIT_MPI_PACKAGES=$(sed -n 's/^# open mpi packages: //p' "${kit}/manifest.txt")
  note "kit: Open MPI relocated to ${prefix} (OPAL_PREFIX, PMIX_PREFIX, ...): $(command -v mpirun)"
else
  note "kit: no Open MPI in it (packed before it was added: run tools/gpu/pack.sh again); the" \
    "mpi steps need an mpirun of the machine's own"
fi
# CMakeLists.txt finds the cuDNN frontend's headers (the cuDNN attention) in the kit.
if [[ -f ${kit}/cudnn-frontend/include/cudnn_frontend.h ]]; then
  export MINIDL_CUDNN_FRONTEND_DIR=${kit}/cudnn-frontend
else
  unset MINIDL_CUDNN_FRONTEND_DIR
  problem "no cuDNN frontend in the kit (${kit}/cudnn-frontend): run tools/gpu/pack.sh again;" \
    "the build goes on without the cuDNN attention"
fi
# data/readers/data_root.h: the readers look in $MINIDL_DATA/fashion-mnist.
export MINIDL_DATA=${kit}/data
[[ -f ${MINIDL_DATA}/fashion-mnist/train-images-idx3-ubyte.gz ]] ||
  problem "no Fashion-MNIST in ${MINIDL_DATA}/fashion-mnist (pack.sh puts it there)"

# ---- the GPU's own software: CUDA toolkit, and cuDNN and NCCL from PyTorch's packages ----
for folder in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer; do
  [[ -d ${folder} && :${PATH}: != *:${folder}:* ]] && PATH=${PATH}:${folder}
done
export PATH
python=${MINIDL_GPU_PYTHON:-python3}
# The nvidia namespace package of the wheels nvidia-cudnn-cu13, nvidia-nccl-cu13, ...
nvidia=$("${python}" -c 'import nvidia, os
print(next(p for p in nvidia.__path__ if os.path.isdir(os.path.join(p, "cudnn"))))' 2>/dev/null)
libs=${work}/libs # libcudnn.so and libnccl.so, the names CMake's find_library wants
mkdir -p "${libs}"
nvidia_libs=
if [[ -n ${nvidia} ]]; then
  shopt -s nullglob
  cudnn=("${nvidia}"/cudnn/lib/libcudnn.so.*)
  nccl=("${nvidia}"/nccl/lib/libnccl.so.*)
  wheel_libs=("${nvidia}"/*/lib) # cuDNN, NCCL, cuBLAS, the CUDA runtime, CUPTI (bench --profile)
  shopt -u nullglob
  if ((${#cudnn[@]} > 0)); then
    ln -sfn "${cudnn[0]}" "${libs}/libcudnn.so"
  else
    problem "no libcudnn.so.* in ${nvidia}/cudnn/lib"
  fi
  if ((${#nccl[@]} > 0)); then
    ln -sfn "${nccl[0]}" "${libs}/libnccl.so"
  else
    problem "no libnccl.so.* in ${nvidia}/nccl/lib"
  fi
  ((${#wheel_libs[@]} > 0)) && nvidia_libs=$(printf '%s:' "${wheel_libs[@]}")
  note "nvidia packages: ${nvidia} (${cudnn[*]##*/} ${nccl[*]##*/})"
elif ((rehearse)); then
  note "nvidia packages: none (expected without a GPU; the CUDA configure is only checked)"
else
  problem "${python} has no nvidia packages with cuDNN (the wheel nvidia-cudnn-cu13, which" \
    "PyTorch brings); MINIDL_GPU_PYTHON names another Python"
fi
multiarch=${prefix}/lib/x86_64-linux-gnu
kit_libs=${multiarch}:${multiarch}/openblas-pthread
export LD_LIBRARY_PATH=${libs}:${kit_libs}:${nvidia_libs}${LD_LIBRARY_PATH:-}

# ---- the GPU: its compute capability names the architecture to build for ----
arch=
if ((rehearse)); then
  note "GPU: no GPU (rehearsal)"
elif capability=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
  head -n 1) && [[ ${capability} =~ ^[0-9]+\.[0-9]+$ ]]; then
  arch=${capability/./}
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)
  note "GPU: ${gpu}, compute capability ${capability}: sm_${arch}"
else
  problem "no GPU: nvidia-smi found none (on a machine without a GPU, add --rehearse)"
fi

note "LD_LIBRARY_PATH=${LD_LIBRARY_PATH}"
note "MINIDL_DATA=${MINIDL_DATA}"
note "PATH=${PATH}"
note "OPAL_PREFIX=${OPAL_PREFIX:-} OPAL_SYSCONFDIR=${OPAL_SYSCONFDIR:-}" \
  "PMIX_PREFIX=${PMIX_PREFIX:-}"

export MINIDL_GPU_REPOSITORY=${repository} MINIDL_GPU_KIT_DIR=${kit} MINIDL_GPU_WORK_DIR=${work}
export MINIDL_GPU_PREFIX=${prefix} MINIDL_GPU_NVIDIA=${nvidia} MINIDL_GPU_LIBS=${libs}
export MINIDL_GPU_ARCH=${arch} MINIDL_GPU_SETUP_LOG=${setup_log}
export MINIDL_GPU_SETUP_SECONDS=$((SECONDS - setup_start))
MINIDL_GPU_SETUP_PROBLEMS=$(printf '%s\n' "${problems[@]}")
export MINIDL_GPU_SETUP_PROBLEMS
rehearse_flag=()
((rehearse)) && rehearse_flag=(--rehearse)
exec "${python}" "${repository}/tools/gpu/stages.py" "${stage}" "${outdir}" "${rehearse_flag[@]}"
