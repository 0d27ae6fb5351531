"""Executor modules never import driver modules nor driver modules executor ones, and no system imports another
(docs/architecture.md §2).

A Spark task carries everything it needs in its input partition; the code it runs must not reach the driver's
coordinators, admins, planners or startpoint handling, or executors would pull in (and could call) driver logic.
The roles come from the layout, not from a list kept by hand: each system's ``driver/`` holds what runs only on
the driver, ``executor/`` what Spark's tasks run, and the package root what both import (plus the DataSource glue,
``source.py``, which imports its driver modules lazily). Executor and shared modules must reach no driver module.
The other way round holds too: a driver module reaches no executor module, so what both sides use (the recorded
Kinesis batch ends, say) lives at the system's root and planning never loads the executors' read path.
The test reads the source of each executor module with ``ast`` and follows every import inside
``spark_samza_source`` transitively, module-level and lazy (inside a function) alike, plus the module-level
imports of the packages Python runs on the way; it fails naming the import chain that reaches a driver module.

The same walk keeps the systems apart: nothing in ``kafka/`` reaches ``kinesis/`` or the other way round, and
``core/`` reaches neither, so what both systems share lives in ``core/`` (or ``source/``), never in
one system's package, and a third system can be added beside them.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Callable
from pathlib import Path

import pytest

import spark_samza_source

PACKAGE = spark_samza_source.__name__
ROOT = Path(spark_samza_source.__file__).resolve().parent

SYSTEMS = ["kafka", "kinesis"]
GLUE = "source"  # each system's DataSource glue: Spark loads it on both sides, it imports driver modules lazily


def _path(module: str) -> Path | None:
    parts = module.split(".")[1:]
    if not parts:
        return ROOT / "__init__.py"
    rel = Path(*parts)
    for candidate in (ROOT / rel.with_suffix(".py"), ROOT / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_package(module: str) -> bool:
    path = _path(module)
    return path is not None and path.name == "__init__.py"


def _imports(module: str, *, lazy: bool) -> set[str]:
    """The ``spark_samza_source`` modules ``module`` imports (only its top-level statements unless ``lazy``)."""
    path = _path(module)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    nodes = ast.walk(tree) if lazy else tree.body
    package = module if _is_package(module) else module.rpartition(".")[0]
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)  # `from . import kpl` imports a module
    return {name for name in found if name.split(".")[0] == PACKAGE and _path(name) is not None}


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_chain(start: str, reached: Callable[[str], bool]) -> list[str] | None:
    """The import chain from ``start`` to the first module ``reached`` accepts, or None."""
    came_from: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        if reached(module):
            chain = [module]
            while came_from[chain[-1]] is not None:
                chain.append(came_from[chain[-1]])
            return chain[::-1]
        edges = _imports(module, lazy=True)
        for parent in _parents(module):
            edges |= _imports(parent, lazy=False)  # Python runs a package's __init__ before its modules
        for target in sorted(edges):
            if target not in came_from:
                came_from[target] = module
                queue.append(target)
    return None


def driver_chain(start: str) -> list[str] | None:
    """The import chain from ``start`` to the first driver module it reaches, or None."""
    drivers = {f"{PACKAGE}.{name}" for name in DRIVER}
    return import_chain(start, drivers.__contains__)


def modules_of(package: str) -> list[str]:
    """Every module of ``spark_samza_source.<package>``, the package itself first."""
    root = ROOT / package
    names = [f"{PACKAGE}.{package}"]
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        if rel.name != "__init__":
            names.append(".".join([PACKAGE, package, *rel.parts]))
    return names


def _short(module: str) -> str:
    return module.removeprefix(f"{PACKAGE}.")


def role_modules(system: str, role: str) -> list[str]:
    """The modules in ``<system>/<role>/`` (``driver`` or ``executor``), below the package name."""
    return [f"{system}.{role}.{path.stem}" for path in sorted((ROOT / system / role).glob("*.py"))
            if path.stem != "__init__"]


def shared_modules(system: str) -> list[str]:
    """The modules at a system package's root, which both sides import (the DataSource glue aside)."""
    return [f"{system}.{path.stem}" for path in sorted((ROOT / system).glob("*.py"))
            if path.stem not in {"__init__", GLUE}]


# The roles come from the layout: a module's folder says where it runs. Outside the systems, the shared skeleton
# has a driver side and one executor hook.
DRIVER = [m for system in SYSTEMS for m in role_modules(system, "driver")] + [
    "core.startpoint_manager", "source.job_coordinator"]
EXECUTOR = [m for system in SYSTEMS for m in role_modules(system, "executor")] + ["source.fault_hooks"]
SHARED = [m for system in SYSTEMS for m in shared_modules(system)]


def in_package(package: str) -> Callable[[str], bool]:
    prefix = f"{PACKAGE}.{package}"
    return lambda module: module == prefix or module.startswith(prefix + ".")


def test_the_module_lists_name_existing_modules():
    # Guards the tests below against passing vacuously after a rename or a move.
    missing = [name for name in EXECUTOR + DRIVER if _path(f"{PACKAGE}.{name}") is None]
    assert missing == []
    for system in SYSTEMS:
        assert {f"{system}.driver.coordinator", f"{system}.driver.planner"} <= set(DRIVER)
        assert f"{system}.executor.reader" in EXECUTOR
        assert {f"{system}.options", f"{system}.input_partition"} <= set(SHARED)


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_module_of_a_system_says_its_role_by_its_folder(system):
    # driver/, executor/, or the package root (shared by both, and the glue); no other folder hides a role
    folders = {path.parent.relative_to(ROOT / system).as_posix() for path in (ROOT / system).rglob("*.py")}
    assert folders == {".", "driver", "executor"}


def test_the_walk_follows_relative_and_lazy_imports():
    coordinator = f"{PACKAGE}.kinesis.driver.coordinator"
    assert coordinator in _imports(f"{PACKAGE}.kinesis.source", lazy=True)
    assert f"{PACKAGE}.kinesis.kpl" in _imports(f"{PACKAGE}.kinesis.executor.reader", lazy=False)
    chain = driver_chain(f"{PACKAGE}.kinesis.source")  # the glue imports driver modules (lazily): the walk sees it
    assert chain is not None and chain[0] == f"{PACKAGE}.kinesis.source" and len(chain) == 2
    # the starting strategies, which the option parsers import lazily, are walked too (they travel in the options)
    for system in SYSTEMS:
        chain = import_chain(f"{PACKAGE}.{system}.executor.reader", f"{PACKAGE}.{system}.starting".__eq__)
        assert chain is not None and chain[-2:] == [f"{PACKAGE}.{system}.options", f"{PACKAGE}.{system}.starting"]


@pytest.mark.parametrize("module", EXECUTOR + SHARED)
def test_an_executor_or_shared_module_reaches_no_driver_module(module):
    chain = driver_chain(f"{PACKAGE}.{module}")
    assert chain is None, "executor or shared module imports a driver module: " + " -> ".join(chain)


def executor_chain(start: str) -> list[str] | None:
    """The import chain from ``start`` to the first module of a system's ``executor/`` it reaches, or None."""
    executors = {f"{PACKAGE}.{name}" for system in SYSTEMS for name in role_modules(system, "executor")}
    return import_chain(start, executors.__contains__)


def test_the_driver_walk_would_see_an_executor_module():
    # Guards the test below against passing vacuously: the glue reaches the executors (lazily), and the walk sees it
    for system in SYSTEMS:
        chain = executor_chain(f"{PACKAGE}.{system}.source")
        assert chain is not None and chain[0] == f"{PACKAGE}.{system}.source"


@pytest.mark.parametrize("module", DRIVER)
def test_a_driver_module_reaches_no_executor_module(module):
    # What both sides use lives at the system's root (e.g. kinesis/microbatch_ends.py, the recorded batch ends):
    # planning on the driver never loads the executors' read path.
    chain = executor_chain(f"{PACKAGE}.{module}")
    assert chain is None, "driver module imports an executor module: " + " -> ".join(chain)


def test_the_system_walk_sees_every_module_and_a_crossing():
    # Guards the test below against passing vacuously: it walks real modules, and it would see a crossing.
    assert f"{PACKAGE}.kafka.driver.planner" in modules_of("kafka")
    assert f"{PACKAGE}.kinesis.driver.startpoints" in modules_of("kinesis")
    assert len(modules_of("core")) >= 10
    assert import_chain(f"{PACKAGE}.kafka.driver.coordinator", in_package("core")) is not None


@pytest.mark.parametrize(("package", "other"), [
    *[(system, other) for system in SYSTEMS for other in SYSTEMS if other != system],
    *[("core", system) for system in SYSTEMS],
])
def test_a_system_reaches_no_other_system_and_core_reaches_none(package, other):
    crossings = [" -> ".join(chain) for module in modules_of(package)
                 if (chain := import_chain(module, in_package(other))) is not None]
    assert crossings == [], f"{package}/ reaches {other}/: " + "; ".join(crossings)
