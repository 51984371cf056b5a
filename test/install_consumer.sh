#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, checks its run paths (run_paths.sh), then builds
# test/consumer and the README's C++ example against it and runs both. With the command line
# built, the installed `hetkern` must also start from the prefix, and from the prefix moved
# elsewhere, and report VERSION.
# usage: install_consumer.sh BUILD_DIR SOURCE_DIR CXX_COMPILER VERSION cli|no-cli
set -euo pipefail
build=$1 source=$2 cxx=$3 version=$4 cli=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/hetkern/hetkern.hpp"
"$source/test/run_paths.sh" "$work/prefix"
# The GPU plugin, where it is built, comes with its kernel cache's ptxas beside it.
for plugin in "$work"/prefix/lib*/libhetkern_gpu.so "$work"/prefix/lib/*/libhetkern_gpu.so; do
  [ -e "$plugin" ] || continue
  [ -x "$(dirname "$plugin")/hetkern/ptxas" ] || { echo "no hetkern/ptxas beside $plugin" >&2; exit 1; }
  echo "GPU plugin and its ptxas: ok"
done
cp -r "$source/test/consumer" "$work/src"
awk '/^```cpp$/ {keep = 1; next} /^```$/ {keep = 0} keep' "$source/README.md" > "$work/src/readme_example.cpp"
grep -q "int main" "$work/src/readme_example.cpp"
# No flags beyond the package's location: hetkern::hetkern carries everything a consumer needs.
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
"$work/build/readme_example" | grep -q "out of range for a rank-4 tensor"
echo "README example: ok"

if [ "$cli" = cli ]; then
  # The installed program finds the installed library relative to itself, wherever the prefix is.
  mv "$work/prefix" "$work/moved"
  got=$(env -u LD_LIBRARY_PATH "$work/moved/bin/hetkern" --version)
  if [ "$got" != "hetkern $version" ]; then
    echo "installed hetkern --version printed '$got', expected 'hetkern $version'" >&2
    exit 1
  fi
  env -u LD_LIBRARY_PATH "$work/moved/bin/hetkern" info > "$work/info.txt"
  first=$(head -n 1 "$work/info.txt")
  if [ "$first" != "hetkern $version" ]; then
    echo "installed hetkern info began with '$first', expected 'hetkern $version'" >&2
    exit 1
  fi
  echo "installed hetkern $version: ok"
fi
