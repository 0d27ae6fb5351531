"""The product's modules import in one direction, and in no circle (docs/architecture.md §2).

Layers, lowest first: ``options/`` (the option spec and store namespaces: a leaf), ``core/``, ``metadata/``,
``source/``, the systems (``kafka/``, ``kinesis/``), then the glue and tools (each system's ``source.py``, the
package's ``__init__``, ``samza_config/``, ``ops/``). A module may import its own layer or a lower one, never a
higher one, and a system never another system.

Every import counts, at module level or inside a function alike, so a function-level import cannot hide a
cycle: the graph of all of them must have none. Imports under ``if TYPE_CHECKING:`` never run and are left out of
the cycle check, but not of the layers: a type a lower layer names must live in its layer or below (the
``MetadataStore`` interface is in ``core/store.py`` for that reason, its backends in ``metadata/``).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import spark_samza_source

PACKAGE = spark_samza_source.__name__
ROOT = Path(spark_samza_source.__file__).resolve().parent

LAYERS = {"options": 0, "_version": 0, "core": 1, "metadata": 2, "source": 3, "kafka": 4, "kinesis": 4,
          "samza_config": 5, "ops": 5}
GLUE = 5
SYSTEMS = ("kafka", "kinesis")


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join((PACKAGE, *parts))] = path
    return found


def layer(module: str) -> int:
    parts = module.split(".")[1:]
    if not parts:
        return GLUE  # the package's __init__ registers the sources
    if parts[0] in SYSTEMS and parts[-1] == "source":
        return GLUE  # the DataSource glue
    return LAYERS[parts[0]]


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return skipped


def imports_of(module: str, tree: ast.Module, known: set[str], *, is_package: bool,
               typing_too: bool = False) -> set[str]:
    """The product modules ``module`` imports anywhere in ``tree`` (a submodule when one is named, else the
    package), outside ``if TYPE_CHECKING:`` unless ``typing_too``."""
    skipped = set() if typing_too else _type_checking_only(tree)
    here = module.split(".") if is_package else module.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t in known and t != module)
    return found


@functools.cache
def graph(typing_too: bool = False) -> dict[str, set[str]]:
    """Every product module's imports; with ``typing_too``, those under ``if TYPE_CHECKING:`` as well."""
    found = modules()
    known = set(found)
    return {module: imports_of(module, ast.parse(path.read_text(encoding="utf-8"), str(path)), known,
                               is_package=path.name == "__init__.py", typing_too=typing_too)
            for module, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Each import of a higher layer, or of another system, as 'importer -> imported'."""
    bad = []
    for module, targets in sorted(edges.items()):
        for target in sorted(targets):
            other_system = (layer(module) == layer(target) == LAYERS["kafka"]
                            and module.split(".")[1] != target.split(".")[1])
            if layer(target) > layer(module) or other_system:
                bad.append(f"{module} (layer {layer(module)}) -> {target} (layer {layer(target)})")
    return bad


def test_the_graph_holds_module_level_and_function_level_imports():
    # Guards the tests below against passing on an empty or partial graph.
    edges = graph()
    assert f"{PACKAGE}.kafka.starting" in edges[f"{PACKAGE}.kafka.options"]
    assert f"{PACKAGE}.options.common" in edges[f"{PACKAGE}.kafka.errors"]
    assert f"{PACKAGE}.kafka.driver.coordinator" in edges[f"{PACKAGE}.kafka.source"]  # inside a function
    assert f"{PACKAGE}.metadata.dynamodb" in edges[f"{PACKAGE}.metadata"]  # loaded when its URI is opened
    assert f"{PACKAGE}.core.store" in edges[f"{PACKAGE}.core.checkpoint"]
    planted = ast.parse("def f():\n    from .options import X\n")
    known = {f"{PACKAGE}.kafka.options", f"{PACKAGE}.kafka.starting"}
    assert imports_of(f"{PACKAGE}.kafka.starting", planted, known, is_package=False) == {f"{PACKAGE}.kafka.options"}


def test_the_cycle_finder_finds_a_planted_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_cycle_between_product_modules():
    found = cycles(graph())
    assert found == [], "modules importing each other (at module level or inside a function); move what both " \
        "need to a lower module:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_a_type_checking_import_counts_for_the_layers():
    planted = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..metadata import lease\n")
    known = {f"{PACKAGE}.metadata.lease"}
    assert imports_of(f"{PACKAGE}.core.model", planted, known, is_package=False) == set()
    assert imports_of(f"{PACKAGE}.core.model", planted, known, is_package=False, typing_too=True) == known


def test_no_module_imports_a_higher_layer_or_another_system():
    bad = upward(graph(typing_too=True))  # a type named in an annotation is an arrow between layers too
    assert bad == [], "imports of a higher layer (spec -> core -> metadata -> source -> systems -> glue):\n" + \
        "\n".join(bad)


def test_the_option_spec_is_a_leaf():
    edges = graph()
    spec = [m for m in edges if m.startswith(f"{PACKAGE}.options")]
    assert len(spec) >= 6
    assert {t for m in spec for t in edges[m] if not t.startswith(f"{PACKAGE}.options")} == set()
