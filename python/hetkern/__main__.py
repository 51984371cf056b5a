"""python3 -m hetkern ...: the hetkern command line (run, tune, bench, info, demo).

It runs the program built or installed with this package, else the one on PATH.
"""
import os
import shutil
import sys

from ._cli_path import CLI


def main():
    path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), CLI))
    if not os.access(path, os.X_OK):
        path = shutil.which("hetkern")
    if not path:
        print("hetkern: the command line is neither next to this package nor on PATH "
              "(build it with HETKERN_BUILD_TOOLS=ON)", file=sys.stderr)
        sys.exit(2)
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    main()
