#!/bin/sh
# Installed as lib/hetkern/ptxas. The GPU plugin loader puts this folder first on PATH, so that
# LLVM's offload runtime, which finishes every JIT compilation with `ptxas ... --output-file OUT IN`,
# runs this script: a cubin already made from the same PTX and options is copied from the cache in
# HETKERN_GPU_CACHE_DIR; otherwise the real ptxas (the next one on PATH) makes it, and it is kept.
# When HETKERN_GPU_CACHE_PTX names a file, hetkern's own PTX (the one that defines
# hetkern_gpu_image_marker) is kept there too: later processes hand it to the runtime in place of
# its LLVM compilation (runtime/platform/gpu_jit_cache.cpp). Every file appears whole or not at all.
set -u

self_dir=$(cd "$(dirname "$0")" && pwd -P)

real_ptxas() {
  old_ifs=$IFS
  IFS=:
  for d in $PATH; do
    [ -n "$d" ] && [ -x "$d/ptxas" ] || continue
    [ "$(cd "$d" 2>/dev/null && pwd -P)" = "$self_dir" ] && continue
    IFS=$old_ifs
    printf '%s\n' "$d/ptxas"
    return 0
  done
  IFS=$old_ifs
  return 1
}

run_real() {
  real=$(real_ptxas) || { echo "hetkern: ptxas: CUDA's ptxas is not on PATH (it compiles the GPU kernels)" >&2; exit 127; }
  "$real" "$@"
}

# Copies $1 into the cache as $2, through a temporary name in the same folder.
keep() {
  tmp="$2.tmp.$$"
  if cp "$1" "$tmp" 2>/dev/null && mv -f "$tmp" "$2" 2>/dev/null; then return 0; fi
  rm -f "$tmp" 2>/dev/null
  echo "hetkern: warning: could not write $2 (the GPU kernel cache); later processes compile again" >&2
}

cache=${HETKERN_GPU_CACHE_DIR:-}
[ -n "$cache" ] || { run_real "$@"; exit $?; }

# The options without the two file names make the key with the PTX itself.
out="" in="" options="" expect_out=0
for a in "$@"; do
  if [ $expect_out = 1 ]; then out=$a; expect_out=0; continue; fi
  case $a in
    --output-file|-o) expect_out=1 ;;
    -*) options="$options $a" ;;
    *) options="$options $in"; in=$a ;;
  esac
done
if [ -z "$out" ] || [ -z "$in" ] || [ ! -r "$in" ]; then run_real "$@"; exit $?; fi

if [ -n "${HETKERN_GPU_CACHE_PTX:-}" ] && [ ! -s "$HETKERN_GPU_CACHE_PTX" ] &&
   grep -q hetkern_gpu_image_marker "$in"; then
  keep "$in" "$HETKERN_GPU_CACHE_PTX"
fi

key=$({ printf '%s\n' "$options"; cat "$in"; } | sha256sum | cut -c1-32)
cubin="$cache/$key.cubin"
if [ -s "$cubin" ] && cp "$cubin" "$out" 2>/dev/null; then exit 0; fi
run_real "$@" || exit $?
keep "$out" "$cubin"
exit 0
