"""The runtime wheel is the product only: installing it changes nothing in someone else's test suite.

The wheel is built from this checkout (``pip wheel --no-deps``), installed with ``--no-deps`` next to pytest in a
fresh virtualenv, and an unrelated project's trivial test is run there with pytest: it passes, no fixture or plugin
of ours appears, and the wheel's file list holds no development broker, fixture, harness or demo (they live in
``devkit/``, a distribution of its own that the wheel never installs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
#: file names that belong to the development kit, never to the runtime wheel
DEVKIT_MARKERS = ("kafka_broker", "samza_devkit", "testing/", "fixtures", "conftest", "pytest_plugin",
                  "moto_server", "kinesis_helpers", "kafka_helpers", "query_harness", "fault_driver", "demo.py")


def _env() -> dict[str, str]:
    """A user's shell: nothing of this test run (virtualenv, PYTHONPATH, pytest's own switches) leaks in."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def _run(cmd: list, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


#: what a source distribution of the runtime package holds (the wheel is built from a copy of just that, so no
#: stale build/ directory of the checkout and no devkit/ can leak into it)
SDIST_PARTS = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "spark_samza_source", "pyspark_samza_kafka",
               "pyspark_samza_kinesis")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tree, out = tmp_path_factory.mktemp("tree"), tmp_path_factory.mktemp("wheel")
    for part in SDIST_PARTS:
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, tree / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
        else:
            shutil.copy2(source, tree / part)
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", out, tree], cwd=tree)
    wheels = sorted(out.glob("spark_samza_source-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_the_wheel_holds_no_development_broker_and_no_test_fixtures(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = archive.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "spark_samza_source/kafka/source.py" in names and "pyspark_samza_kafka/__init__.py" in names
    assert "spark_samza_source/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert [n for n in names if any(marker in n for marker in DEVKIT_MARKERS)] == []
    assert "pytest11" not in entry_points and "samza-source = spark_samza_source.ops.cli:main" in entry_points


def test_an_unrelated_project_s_pytest_passes_next_to_the_wheel_installed_without_dependencies(wheel, tmp_path):
    venv = tmp_path / "venv"
    _run([sys._base_executable, "-m", "venv", venv], cwd=tmp_path)
    python = venv / "bin" / "python"
    _run([python, "-m", "pip", "install", "--quiet", "pytest"], cwd=tmp_path)
    _run([python, "-m", "pip", "install", "--quiet", "--no-deps", wheel], cwd=tmp_path)

    project = tmp_path / "someone-elses-project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_arithmetic.py").write_text("def test_addition():\n    assert 1 + 1 == 2\n")
    proc = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project, timeout=300)
    assert "1 passed" in proc.stdout, proc.stdout
    assert "error" not in proc.stdout.lower(), proc.stdout

    # no plugin of ours was loaded, and none of our fixtures is offered to that project
    fixtures = _run([python, "-m", "pytest", "--fixtures", "-p", "no:cacheprovider", "tests"], cwd=project,
                    timeout=300).stdout
    for name in ("kafka_broker", "moto_server", "spark", "dynamodb_store_uri"):
        assert f"\n{name}" not in fixtures and not fixtures.startswith(name), (name, fixtures[-2000:])
    probe = _run([python, "-c",
                  "import importlib.metadata as m, importlib.util as u, spark_samza_source as s; "
                  "print(s.__version__, sorted(e.value for e in m.entry_points(group='pytest11')), "
                  "u.find_spec('samza_devkit'), u.find_spec('kafka'))"], cwd=project)
    version = _run([sys.executable, "-c", "import spark_samza_source as s; print(s.__version__)"], cwd=tmp_path)
    assert probe.stdout.split() == [version.stdout.strip(), "[]", "None", "None"], probe.stdout


def test_the_wheel_is_a_platform_wheel_holding_the_native_kafka_reader(wheel):
    """Built where a C compiler and the Python headers exist (as here), the wheel carries the compiled native
    reader (setup.py) and is tagged for this platform; without them it would be a pure wheel (Python read path)."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert [n for n in names if n.startswith("spark_samza_source/kafka/executor/_native_reader.") and n.endswith(".so")]
    assert "none-any" not in wheel.name


def test_make_wheel_without_a_c_compiler_builds_the_pure_wheel(tmp_path):
    """Where no C compiler exists, `make wheel` builds the pure py3-none-any wheel (the Python read path), not a
    wheel named after this platform that lacks the reader. No compiler is simulated by CC naming a missing one;
    the build runs in a copy of the tree, so no other test's build directory is touched."""
    tree, out = tmp_path / "tree", tmp_path / "dist"
    for part in (*SDIST_PARTS, "Makefile"):
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, tree / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
        else:
            tree.mkdir(exist_ok=True)
            shutil.copy2(source, tree / part)
    venv = Path(sys.prefix)
    proc = subprocess.run(["make", "-C", str(tree), "-o", str(venv / ".installed"), f"VENV={venv}", f"DIST={out}",
                           "wheel"], capture_output=True, text=True, timeout=600,
                          env={**_env(), "CC": str(tmp_path / "no-such-compiler")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "no C compiler or Python headers: a pure py3-none-any wheel" in proc.stdout, proc.stdout
    wheels = sorted(p.name for p in out.glob("*.whl"))
    assert len(wheels) == 1 and wheels[0].endswith("-py3-none-any.whl"), wheels
    with zipfile.ZipFile(out / wheels[0]) as archive:
        assert not [n for n in archive.namelist() if n.endswith(".so")]
