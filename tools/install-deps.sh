#!/usr/bin/env bash
# Installs the Debian packages hetkern builds and tests with; silent when all are present.
set -euo pipefail
packages=(
  cmake ninja-build          # build
  clang-19 libomp-19-dev     # compiler, host OpenMP and offload runtime
  clang-tools-19             # clang-linker-wrapper: links the GPU plugin's images (libhetkern_gpu)
  libclang-rt-19-dev         # sanitizer runtimes (make test-asan)
  libcli11-dev               # command line parsing
  libsqlite3-dev             # the tuning database
  libhwloc-dev               # topology, cache sizes and thread pinning
  libhwloc-plugins           # hwloc's XML reader (HWLOC_XMLFILE, the topology tests)
  libgtest-dev               # unit tests
  python3-numpy              # independent oracle in the CLI tests (/usr/bin/python3)
  libdnnl-dev                # oneDNN: the int8 matmul baseline of the benchmarks only, never linked by the library
  ocl-icd-opencl-dev         # OpenCL loader and headers: oneDNN's CMake package asks for them
  libbenchmark-dev           # Google Benchmark: build/release/bin/hetkern-bench
  python3-matplotlib         # the plots of `hetkern bench --sweep` (bench/plot.py)
  python3-dev libdlpack-dev  # the Python package's extension: CPython's stable ABI and DLPack's structs
  python3-pytest             # the Python package's tests (test/python)
  python3-hypothesis         # their property tests
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
sudo=""
((EUID == 0)) || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
