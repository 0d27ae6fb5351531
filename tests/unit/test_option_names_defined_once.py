"""Every option name is a constant defined once (docs/architecture.md §2).

The names live in ``source/options.py`` (shared by both sources) and in ``kafka/options.py`` /
``kinesis/options.py`` (one system's own), as module-level ``*_OPTION = "..."`` constants. Every other product
module imports the constant, so a rename cannot miss a place. The test parses every module of
``spark_samza_source`` with ``ast`` and fails when an option name is written as a string literal in more than one
module (the defining module counts as one; docstrings do not count).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import spark_samza_source

ROOT = Path(spark_samza_source.__file__).resolve().parent
DEFINING = ["source/options.py", "kafka/options.py", "kinesis/options.py"]

# The same word meaning something other than the option, where the test cannot tell them apart.
OTHER_MEANINGS = {
    ("tasks", "core/jobmodel.py"): "the job model's JSON field",
    ("tasks", "core/checkpoint.py"): "the checkpoint mirror's JSON field",
    ("tasks", "ops/lag.py"): "the job model's JSON field",
    ("tasks", "ops/cli/commands.py"): "the job model's JSON field",
    ("region", "metadata/dynamodb.py"): "a dynamodb:// URI parameter",
    ("streamName", "kinesis/schema.py"): "the output column",
    ("streamName", "kinesis/lease_table.py"): "a KCL lease-table attribute",
}


def _modules() -> dict[str, ast.Module]:
    return {path.relative_to(ROOT).as_posix(): ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for path in sorted(ROOT.rglob("*.py"))}


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def option_names(modules: dict[str, ast.Module]) -> dict[str, str]:
    """Option name -> the module that defines it, from the ``*_OPTION = "..."`` constants."""
    names: dict[str, str] = {}
    for module in DEFINING:
        for node in modules[module].body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id.endswith("_OPTION") and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)):
                assert node.value.value not in names, f"{node.value.value!r} defined in {names.get(node.value.value)}"
                names[node.value.value] = module
    return names


def literal_uses(modules: dict[str, ast.Module], names: set[str]) -> dict[str, dict[str, list[int]]]:
    """Option name -> module -> lines where the name is a whole string literal (outside docstrings)."""
    uses: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for module, tree in modules.items():
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
                    and id(node) not in docs and (node.value, module) not in OTHER_MEANINGS):
                uses[node.value][module].append(node.lineno)
    return uses


def test_the_shared_and_system_option_names_are_found():
    # Guards the test below against passing vacuously if the constants move or are renamed.
    modules = _modules()
    names = option_names(modules)
    assert [module for _, module in OTHER_MEANINGS if module not in modules] == []  # exceptions name real modules
    for name in ("job.name", "metadata.store", "startpoint.ttl", "startpoint.pollInterval", "job.ownership.ttl",
                 "failOnDataLoss", "endpoint.retryTimeout", "grouper", "task.broadcast.inputs"):
        assert names.get(name) == "source/options.py", name
    assert names.get("maxOffsetsPerTrigger") == "kafka/options.py"
    assert names.get("maxFetchTimePerShard") == "kinesis/options.py"


def test_no_option_name_is_a_literal_in_two_product_modules():
    modules = _modules()
    uses = literal_uses(modules, set(option_names(modules)))
    repeated = [f"{name!r}: " + ", ".join(f"{module}:{lines}" for module, lines in sorted(where.items()))
                for name, where in sorted(uses.items()) if len(where) > 1]
    assert repeated == [], "option names written as literals in several modules (import the constant):\n" + \
        "\n".join(repeated)
