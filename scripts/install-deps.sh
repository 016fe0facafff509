#!/usr/bin/env bash
# Installs what nsightkit's build, tests, examples and benchmarks need from Debian's packages.
# The CUDA toolkit is not a Debian package here: it is used when found (nvcc on PATH or
# /usr/local/cuda); without it the CUDA parts are skipped and ranges still build from NVTX3's
# headers found elsewhere, e.g. PyPI's nvidia-nvtx (docs/packaging.md, "Getting NVTX3"; the
# packaging checks install it into virtualenvs of their own).
set -euo pipefail
packages=(cmake ninja-build g++ clang libclang-rt-dev clang-format libfmt-dev catch2 libbenchmark-dev pkg-config
  python3 python3-venv binutils doxygen)
packages+=(chromium zlib1g-dev)  # the report's HTML page: its browser tests; gzip
packages+=(libopenmpi-dev openmpi-bin)  # nsightkit::mpi and resnet_training's data-parallel tests (mpirun)
packages+=(nlohmann-json3-dev)  # the nsightkit command reads saved reports with it (never the library)
# A CPU-only torch (1.13) for the Python package's tests (tests/python/): PyPI's torch is the CUDA
# build (a 539 MB wheel that imports only with about 2 GB of CUDA wheels beside it).
packages+=(python3-torch)
packages+=(python3-pandas)  # nsightkit.load(...).to_pandas() (tests/python: its frames)
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "dependencies installed: ${packages[*]}"
