"""The package around the kernels: docstring examples, Schedule, info, devices, tune, the
command line through python3 -m hetkern."""
import doctest
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import hetkern
from hetkern import _errors, _qmm, _scan, _schedule, _system


@pytest.mark.parametrize("module", [hetkern, _errors, _qmm, _scan, _schedule, _system])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_every_public_function_has_an_example():
    for name in hetkern.__all__:
        assert ">>>" in (getattr(hetkern, name).__doc__ or ""), name


def test_schedule_text_and_equality():
    s = hetkern.Schedule("scan.parallel( threads = 2 , tile = 128 )")
    assert str(s) == "scan.parallel(threads=2, tile=128)"
    assert eval(repr(s), {"hetkern": hetkern}) == s
    assert s.params == {"threads": 2, "tile": 128}
    # Text the library cannot read is its error, as malformed text is, not Python's own.
    for text in ("scan.tiled(", "scan.tiled\0", "scan.tiled(tile=\ud800)"):
        with pytest.raises(hetkern.Error) as e:
            hetkern.Schedule(text)
        assert e.value.code == "invalid_schedule", str(e.value)


def test_info_and_devices():
    d = hetkern.info()
    assert d["version"] and d["default_threads"] >= 1 and isinstance(d["cpu_features"], list)
    kinds = [dev["kind"] for dev in hetkern.devices()]
    assert kinds[0] == "cpu" and (("cuda" in kinds) <= d["offload"])
    assert all(dev["team_memory_bytes"] >= 48 * 1024 for dev in hetkern.devices() if dev["kind"] == "cuda")


def test_tune_writes_the_database(tmp_path, monkeypatch):
    db = tmp_path / "tuning.sqlite"
    monkeypatch.setenv("HETKERN_TUNING_DB", str(db))
    records = hetkern.tune(hetkern.cumsum, (4, 512), budget=0.3)
    assert len(records) == 1 and records[0]["stored"] and db.exists()
    tuned = hetkern.Schedule(records[0]["schedule"])
    assert hetkern.default_schedule(hetkern.cumsum, np.ones((4, 512), np.float32)) == tuned
    x = np.random.default_rng(0).standard_normal((4, 512)).astype(np.float32)
    np.testing.assert_allclose(hetkern.cumsum(x), np.cumsum(x, -1, dtype=np.float64), rtol=1e-5, atol=1e-4)
    monkeypatch.delenv("HETKERN_TUNING_DB")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert hetkern.info()["tuning_db"] == str(tmp_path / "cache" / "hetkern" / "tuning.sqlite")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # invalid by the XDG specification
    assert hetkern.info()["tuning_db"] == str(tmp_path / "home" / ".cache" / "hetkern" / "tuning.sqlite")
    for variable in ("XDG_CACHE_HOME", "HOME"):  # no database at all
        monkeypatch.delenv(variable, raising=False)
    assert hetkern.info()["tuning_db"] == ""
    assert not hetkern.tune("cumprod", [(1, 8)], budget=0.1)[0]["stored"]
    for budget in (float("nan"), float("inf"), 0.0, -1.0, np.float32(-2)):
        with pytest.raises(hetkern.Error, match="budget") as e:
            hetkern.tune(hetkern.cumsum, (4, 16), budget=budget)
        assert e.value.subject == "budget" and e.value.code == "invalid_parameter", str(e.value)
    # Not a number of seconds: a TypeError, as for any argument of the wrong kind (a string that
    # reads as a number, or True, was taken as one).
    for budget in ("1", "x", None, True, np.bool_(True)):
        with pytest.raises(TypeError, match="budget"):
            hetkern.tune(hetkern.cumsum, (4, 16), budget=budget)


def test_python_m_hetkern_runs_the_command_line():
    from hetkern._cli_path import CLI
    beside = os.path.join(os.path.dirname(hetkern.__file__), CLI)
    if not os.access(beside, os.X_OK) and not shutil.which("hetkern"):
        pytest.skip("this build has no command line (HETKERN_BUILD_TOOLS=OFF, e.g. the offload preset)")
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "hetkern", "--help"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "tune" in r.stdout
    r = subprocess.run([sys.executable, "-m", "hetkern", "no-such-command"], capture_output=True, text=True)
    assert r.returncode != 0


@pytest.mark.parametrize("value", ["abc", "", "-1", "2.5", "4,x", "2147483647"])
def test_an_omp_num_threads_that_libomp_aborts_on_is_ignored(value):
    """LLVM's OpenMP runtime fails an assertion and aborts the process on these values; importing
    hetkern removes them first, with a warning unless the value is blank."""
    code = "import numpy as np, hetkern; print(hetkern.cumsum(np.arange(1, 6, dtype=np.int32)).tolist())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, OMP_NUM_THREADS=value))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1, 3, 6, 10, 15]"
    assert "Assertion" not in r.stderr and "OMP: Error" not in r.stderr
    assert ("OMP_NUM_THREADS" in r.stderr) == bool(value.strip()), r.stderr


def test_tune_arguments_as_the_calls_take_them(tmp_path, monkeypatch):
    monkeypatch.setenv("HETKERN_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    # A negative axis counts from the end once: -2 of a rank-2 shape is axis 0, -3 is out of
    # range (it used to be wrapped twice and tuned, and stored, as axis 1).
    assert hetkern.tune("cumsum", (8, 64), budget=0.05, axis=-2)[0]["params"].startswith("axis=0,")
    for axis in (-3, -4, 2, 2**40):
        with pytest.raises(hetkern.Error) as e:
            hetkern.tune("cumsum", (8, 64), budget=0.05, axis=axis)
        assert e.value.subject == "axis" and "out of range" in str(e.value), str(e.value)
    # numpy integers and types, as the operators take them.
    for shape in ((np.int64(8), 64), np.array([8, 64])):
        assert hetkern.tune("cumsum", shape, budget=0.05, dtype=np.float32)[0]["params"].startswith("axis=1,")
    assert len(hetkern.tune("cumsum", np.array([[8, 64], [2, 4]]), budget=0.05)) == 2
    record = hetkern.tune("qlinear_matmul", (4, 8, 64), budget=0.05, dtype=(np.int8, "i1", np.dtype("int8")))[0]
    assert record["schedule"].startswith("qmm.")
    with pytest.raises(TypeError):
        hetkern.tune("cumsum", (8.0, 64), budget=0.05)
