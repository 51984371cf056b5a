#!/usr/bin/env python3
"""Checks the library's include layers: a source may include only its own layer and those below.

    include/hetkern  <  algorithms  <  runtime/platform  <  schedules  <  runtime/tuning  <  runtime/api

algorithms/ sees only the public headers, runtime/platform/ nothing of the operators, schedules/
neither the tuning nor the API layer. Every library source under runtime/ lies in one of its three
folders. Prints each violation as `file:line: includes "x" (layer may include: ...)`; exit status 1
when there is one, 2 on bad usage.
"""
import pathlib
import re
import sys

# Each layer with the include prefixes it may use (its own included).
ALLOWED = {
    "algorithms/": ["hetkern/", "algorithms/"],
    "runtime/platform/": ["hetkern/", "runtime/platform/"],
    "schedules/": ["hetkern/", "algorithms/", "runtime/platform/", "schedules/"],
    "runtime/tuning/": ["hetkern/", "algorithms/", "runtime/platform/", "schedules/", "runtime/tuning/"],
    "runtime/api/": ["hetkern/", "algorithms/", "runtime/platform/", "schedules/", "runtime/tuning/",
                     "runtime/api/"],
}
SOURCE_SUFFIXES = {".cpp", ".hpp", ".inc", ".h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(relative):
    for prefix in ALLOWED:
        if relative.startswith(prefix):
            return prefix
    return None


def check(root):
    problems = []
    for layer_dir in ("algorithms", "schedules", "runtime"):
        for path in sorted((root / layer_dir).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES:
                continue
            relative = path.relative_to(root).as_posix()
            layer = layer_of(relative)
            if layer is None:
                problems.append(f"{relative}: not in a layer folder ({', '.join(ALLOWED)})")
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = match.group(1)
                if not any(target.startswith(p) for p in ALLOWED[layer]):
                    problems.append(f'{relative}:{number}: includes "{target}" '
                                    f'({layer} may include: {", ".join(ALLOWED[layer])})')
    return problems


def main(argv):
    if len(argv) != 2 or not pathlib.Path(argv[1]).is_dir():
        print("usage: check-layers.py SOURCE_DIR", file=sys.stderr)
        return 2
    problems = check(pathlib.Path(argv[1]))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
