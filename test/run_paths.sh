#!/usr/bin/env bash
# Every ELF file below the folders given has a run path of absolute folders and $ORIGIN-relative
# ones only: an empty entry, or a relative one, is searched from the current directory, where a
# planted library would be loaded.
# usage: run_paths.sh DIR...
set -euo pipefail
checked=0 bad=0
while IFS= read -r -d '' file; do
  [ "$(head -c 4 "$file" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || continue
  checked=$((checked + 1))
  path=$(readelf -d "$file" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]$/\2/p')
  [ -n "$path" ] || continue
  IFS=: read -r -a entries <<< "$path:"
  for entry in "${entries[@]}"; do
    case $entry in
      /* | '$ORIGIN' | '$ORIGIN/'*) ;;
      *) echo "$file: run path [$path] has the entry '$entry', searched from the current directory" >&2
         bad=1 ;;
    esac
  done
done < <(find "$@" -type f -print0)
((checked > 0)) || { echo "run_paths.sh: no ELF files below $*" >&2; exit 1; }
((bad == 0)) || exit 1
echo "run paths of $checked ELF files: ok"
