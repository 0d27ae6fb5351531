"""Executor modules never import driver modules, and no system imports another (docs/architecture.md §2).

A Spark task carries everything it needs in its input partition; the code it runs must not reach the driver's
coordinators, admins, planners or startpoint handling, or executors would pull in (and could call) driver logic.
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

EXECUTOR = [
    "kafka.reader", "kafka.consumer_cache", "kafka.input_partition", "kinesis.input_partition",
    "kafka.native_reader", "kafka.reader_rules", "kafka.read_settings",
    "kinesis.task", "kinesis.reader", "kinesis.fanout", "kinesis.microbatch_ends", "kinesis.kpl",
    "kinesis.bounded_task", "kinesis.store_reach", "kafka.read_control", "kinesis.shard_reads",
    "source.fault_hooks",
]
DRIVER = [
    "kafka.coordinator", "kafka.admin", "kafka.startpoints",
    "kinesis.coordinator", "kinesis.admin", "kinesis.planner", "kinesis.mapper", "kinesis.lease_table",
    "kinesis.startpoints", "kinesis.consumers",
    "kafka.planner", "core.startpoint_manager", "source.job_coordinator",
]
SYSTEMS = ["kafka", "kinesis"]


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


def in_package(package: str) -> Callable[[str], bool]:
    prefix = f"{PACKAGE}.{package}"
    return lambda module: module == prefix or module.startswith(prefix + ".")


def test_the_module_lists_name_existing_modules():
    # Guards the test below against passing vacuously after a rename.
    missing = [name for name in EXECUTOR + DRIVER if _path(f"{PACKAGE}.{name}") is None]
    assert missing == []


def test_the_walk_follows_relative_and_lazy_imports():
    assert f"{PACKAGE}.kinesis.coordinator" in _imports(f"{PACKAGE}.kinesis.source", lazy=True)
    assert f"{PACKAGE}.kinesis.kpl" in _imports(f"{PACKAGE}.kinesis.reader", lazy=False)
    assert driver_chain(f"{PACKAGE}.kinesis.source") == [f"{PACKAGE}.kinesis.source", f"{PACKAGE}.kinesis.coordinator"]
    # the starting strategies, which the option parsers import lazily, are walked too (they travel in the options)
    for system in SYSTEMS:
        chain = import_chain(f"{PACKAGE}.{system}.reader", f"{PACKAGE}.{system}.starting".__eq__)
        assert chain is not None and chain[-2:] == [f"{PACKAGE}.{system}.options", f"{PACKAGE}.{system}.starting"]


@pytest.mark.parametrize("module", EXECUTOR)
def test_an_executor_module_reaches_no_driver_module(module):
    chain = driver_chain(f"{PACKAGE}.{module}")
    assert chain is None, "executor module imports a driver module: " + " -> ".join(chain)


def test_the_system_walk_sees_every_module_and_a_crossing():
    # Guards the test below against passing vacuously: it walks real modules, and it would see a crossing.
    assert f"{PACKAGE}.kafka.planner" in modules_of("kafka")
    assert f"{PACKAGE}.kinesis.startpoints" in modules_of("kinesis")
    assert len(modules_of("core")) >= 10
    assert import_chain(f"{PACKAGE}.kafka.coordinator", in_package("core")) is not None


@pytest.mark.parametrize(("package", "other"), [
    *[(system, other) for system in SYSTEMS for other in SYSTEMS if other != system],
    *[("core", system) for system in SYSTEMS],
])
def test_a_system_reaches_no_other_system_and_core_reaches_none(package, other):
    crossings = [" -> ".join(chain) for module in modules_of(package)
                 if (chain := import_chain(module, in_package(other))) is not None]
    assert crossings == [], f"{package}/ reaches {other}/: " + "; ".join(crossings)
