#!/bin/sh
# Installed as lib/hetkern/ptxas. The GPU plugin loader puts this folder first on PATH, so that
# LLVM's offload runtime, which finishes every JIT compilation with `ptxas ... --output-file OUT IN`,
# runs this script: a cubin already made from the same PTX and options is copied from the cache in
# HETKERN_GPU_CACHE_DIR; otherwise the real ptxas (the next one on PATH) makes it, and it is kept.
# When HETKERN_GPU_CACHE_PTX names a file, hetkern's own PTX (the one that defines
# hetkern_gpu_image_marker) is kept there too, once its cubin is in the cache: later processes hand
# it to the runtime in place of its LLVM compilation, and need no CUDA ptxas of their own
# (runtime/platform/gpu_jit_cache.cpp). Every file appears whole or not at all.
# PTX for sm_90 that uses Hopper's warpgroup MMA (wgmma) is built for sm_90a, the only target that
# has it, with or without a cache: the runtime asks for sm_90, the GPU's plain architecture.
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
  return 1
}

# Keeps hetkern's PTX where HETKERN_GPU_CACHE_PTX asks, unless one is kept there already.
keep_ptx() {
  if [ -n "${HETKERN_GPU_CACHE_PTX:-}" ] && [ ! -s "$HETKERN_GPU_CACHE_PTX" ] &&
     grep -q hetkern_gpu_image_marker "$in"; then
    keep "$in" "$HETKERN_GPU_CACHE_PTX"
  fi
}

# Sets out and in, the two file names, and options, the rest: with the PTX itself the cache key.
parse() {
  out="" in="" options="" expect_out=0
  for a in "$@"; do
    if [ $expect_out = 1 ]; then out=$a; expect_out=0; continue; fi
    case $a in
      --output-file|-o) expect_out=1 ;;
      -*) options="$options $a" ;;
      *) options="$options $in"; in=$a ;;
    esac
  done
}
parse "$@"

case " $options " in *" sm_90 "*|*"=sm_90 "*) plain_hopper=1 ;; *) plain_hopper=0 ;; esac
if [ $plain_hopper = 1 ] && [ -n "$in" ] && [ -r "$in" ] && grep -q 'wgmma\.' "$in"; then
  hopper=$(mktemp "${TMPDIR:-/tmp}/hetkern-sm_90a.XXXXXX") || exit 1
  trap 'rm -f "$hopper"' EXIT
  # wgmma of mixed signedness (u8 x s8) needs PTX ISA 8.4.
  sed -e 's/^\.target sm_90\([^0-9a-z]\|$\)/.target sm_90a\1/' \
      -e 's/^\.version \([0-7]\.[0-9]*\|8\.[0-3]\)$/.version 8.4/' \
    "$in" > "$hopper" || exit 1
  count=$# previous=""
  for a in "$@"; do
    original=$a
    case $previous in
      --gpu-name|-arch) [ "$a" = sm_90 ] && a=sm_90a ;;
      --output-file|-o) ;;
      *) [ "$a" = "$in" ] && a=$hopper ;;
    esac
    [ "$a" = -arch=sm_90 ] && a=-arch=sm_90a
    set -- "$@" "$a"
    previous=$original
  done
  shift "$count"
  parse "$@"
fi

cache=${HETKERN_GPU_CACHE_DIR:-}
[ -n "$cache" ] || { run_real "$@"; exit $?; }
if [ -z "$out" ] || [ -z "$in" ] || [ ! -r "$in" ]; then run_real "$@"; exit $?; fi

key=$({ printf '%s\n' "$options"; cat "$in"; } | sha256sum | cut -c1-32)
cubin="$cache/$key.cubin"
if [ -s "$cubin" ] && cp "$cubin" "$out" 2>/dev/null; then
  keep_ptx
  exit 0
fi
run_real "$@" || exit $?
keep "$out" "$cubin" && keep_ptx
exit 0
