#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then builds test/consumer and the README's C++
# example against it and runs both.
# usage: install_consumer.sh BUILD_DIR SOURCE_DIR CXX_COMPILER
set -euo pipefail
build=$1 source=$2 cxx=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/hetkern/hetkern.hpp"
cp -r "$source/test/consumer" "$work/src"
awk '/^```cpp$/ {keep = 1; next} /^```$/ {keep = 0} keep' "$source/README.md" > "$work/src/readme_example.cpp"
grep -q "int main" "$work/src/readme_example.cpp"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
"$work/build/readme_example" | grep -q "out of range for a rank-4 tensor"
echo "README example: ok"
