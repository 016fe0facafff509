# Sourced by nsightkit's packaging tests: hides the CUDA toolkit (and every NVTX3 header that came
# with it) from CMake and from the C++ compiler, to test what a machine without CUDA sees.
#   source hide_cuda.sh <c++ compiler>
# Sets:
#   NOCUDA_PATH        PATH without the directories that hold nvcc
#   NOCUDA_HIDDEN      include directories that hold CUDA or NVTX3 headers (';'-separated)
#   NOCUDA_CXXFLAGS    compiler flags: when one of the compiler's own include directories is hidden
#                      (some machines link the toolkit's headers into /usr/local/include),
#                      -nostdinc plus -isystem for each remaining one, in the compiler's order
#   NOCUDA_CMAKE_ARGS  (array) -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON, -DCMAKE_IGNORE_PATH,
#                      -DCMAKE_CXX_FLAGS (building nsightkit itself: add -DNSIGHTKIT_CUDA=OFF)
# and checks the result: the compiler must no longer find <cuda_runtime_api.h> or
# <nvtx3/nvToolsExt.h> with these flags (nocuda_check prints why not and returns 1).
# shellcheck shell=bash
# Its own variables are named _nocuda_* or NOCUDA_*: the scripts that source it keep theirs.
nocuda_cxx=$1

_nocuda_has_cuda() {  # directory: does it hold CUDA runtime or NVTX3 headers?
  [ -e "$1/cuda_runtime_api.h" ] || [ -e "$1/nvtx3" ]
}

NOCUDA_PATH=""
IFS=: read -r -a _nocuda_path_dirs <<<"$PATH"
for _nocuda_d in "${_nocuda_path_dirs[@]}"; do
  [ -x "$_nocuda_d/nvcc" ] && continue
  NOCUDA_PATH=${NOCUDA_PATH:+$NOCUDA_PATH:}$_nocuda_d
done

# Include directories CMake would search: the compiler's own, <prefix>/include of the usual
# prefixes and of every PATH entry's parent, and the toolkit's usual places.
_nocuda_implicit=()
while IFS= read -r _nocuda_d; do
  _nocuda_implicit+=("$(cd "$_nocuda_d" 2>/dev/null && pwd || echo "$_nocuda_d")")
done < <(echo | "$nocuda_cxx" -xc++ -E -v - 2>&1 |
  sed -n '/#include <...> search starts here:/,/End of search list./p' | grep '^ ' | sed 's/^ *//')
_nocuda_candidates=("${_nocuda_implicit[@]}" /usr/include /usr/local/include /opt/cuda/include)
for _nocuda_d in "${_nocuda_path_dirs[@]}"; do _nocuda_candidates+=("$(dirname "$_nocuda_d")/include"); done
for _nocuda_root in /usr/local/cuda /usr/local/cuda-* /opt/cuda "${CUDA_HOME:-}" "${CUDA_PATH:-}"; do
  [ -n "$_nocuda_root" ] || continue
  _nocuda_candidates+=("$_nocuda_root/include")
  for _nocuda_d in "$_nocuda_root"/targets/*/include; do _nocuda_candidates+=("$_nocuda_d"); done
done
NOCUDA_HIDDEN=""
for _nocuda_d in "${_nocuda_candidates[@]}"; do
  [ -d "$_nocuda_d" ] && _nocuda_has_cuda "$_nocuda_d" || continue
  for _nocuda_form in "$_nocuda_d" "$(cd "$_nocuda_d" && pwd -P)"; do
    case ";$NOCUDA_HIDDEN;" in
      *";$_nocuda_form;"*) ;;
      *) NOCUDA_HIDDEN=${NOCUDA_HIDDEN:+$NOCUDA_HIDDEN;}$_nocuda_form ;;
    esac
  done
done

NOCUDA_CXXFLAGS=""
_nocuda_drop=0
for _nocuda_d in "${_nocuda_implicit[@]}"; do _nocuda_has_cuda "$_nocuda_d" && _nocuda_drop=1; done
if [ $_nocuda_drop = 1 ]; then
  NOCUDA_CXXFLAGS="-nostdinc"
  for _nocuda_d in "${_nocuda_implicit[@]}"; do
    _nocuda_has_cuda "$_nocuda_d" || NOCUDA_CXXFLAGS+=" -isystem $_nocuda_d"
  done
fi
NOCUDA_CMAKE_ARGS=(-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON "-DCMAKE_IGNORE_PATH=$NOCUDA_HIDDEN"
  "-DCMAKE_CXX_FLAGS=$NOCUDA_CXXFLAGS")

nocuda_check() {
  local h
  for h in cuda_runtime_api.h nvtx3/nvToolsExt.h; do
    # shellcheck disable=SC2086
    if printf '#include <%s>\n' "$h" | PATH=$NOCUDA_PATH "$nocuda_cxx" $NOCUDA_CXXFLAGS -xc++ -fsyntax-only - 2>/dev/null; then
      echo "hide_cuda: <$h> is still reachable with: $nocuda_cxx $NOCUDA_CXXFLAGS" >&2
      return 1
    fi
  done
  if PATH=$NOCUDA_PATH command -v nvcc >/dev/null; then
    echo "hide_cuda: nvcc is still on PATH" >&2
    return 1
  fi
}
