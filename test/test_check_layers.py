#!/usr/bin/env python3
"""tools/check-layers.py: the source tree obeys the include layers, and each kind of upward include
is caught in a scratch tree."""
import pathlib
import subprocess
import sys
import tempfile

SOURCE = pathlib.Path(sys.argv[1])
SCRIPT = SOURCE / "tools" / "check-layers.py"


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True)


def tree(files):
    root = pathlib.Path(tempfile.mkdtemp())
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


result = run(SOURCE)
assert result.returncode == 0, result.stdout + result.stderr

legal = tree({
    "algorithms/a.cpp": '#include "hetkern/tensor.hpp"\n#include "algorithms/a.hpp"\n',
    "runtime/platform/p.cpp": '#include "runtime/platform/p.hpp"\n#include <vector>\n',
    "schedules/s.cpp": '#include "runtime/platform/p.hpp"\n#include "algorithms/a.hpp"\n',
    "runtime/tuning/t.cpp": '#include "schedules/s.hpp"\n',
    "runtime/api/x.cpp": '#include "runtime/tuning/t.hpp"\n',
})
assert run(legal).returncode == 0

upward = {
    "algorithms/a.cpp": '#include "schedules/s.hpp"\n',
    "runtime/platform/p.cpp": '#include "algorithms/a.hpp"\n',
    "schedules/s.cpp": '#include "runtime/tuning/dispatch.hpp"\n',
    "schedules/t.cpp": '// a comment\n#include "runtime/api/operators.hpp"\n',
    "runtime/tuning/t.cpp": '#include "runtime/api/x.hpp"\n',
    "runtime/stray.cpp": '#include "hetkern/tensor.hpp"\n',
}
for name, text in upward.items():
    result = run(tree({name: text}))
    assert result.returncode == 1, (name, result.stdout)
    assert result.stdout.startswith(name), (name, result.stdout)

assert run(SOURCE / "no-such-folder").returncode == 2
print("ok")
