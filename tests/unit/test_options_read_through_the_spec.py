"""What the option spec cannot enforce by itself: that the product reads an option through its entry (or the
entry's name), never by a name typed again (docs/architecture.md §2).

The spec declares each name once and refuses a name declared twice; but a module could still call
``opts.string("maxOffsetsPerTrigger")`` and read it with a default of its own, and a rename of the entry would leave
that read silently empty. The test parses every product module outside ``options/`` and fails on a call of one of the
option readers (``Options.string`` ... ``Options.choice``, ``raw``, ``has``) whose name argument is a string literal.
"""

from __future__ import annotations

import ast
from pathlib import Path

import spark_samza_source

ROOT = Path(spark_samza_source.__file__).resolve().parent
READERS = {"string", "boolean", "integer", "duration_ms", "choice", "raw", "has", "prefixed"}


def literal_reads(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, name) of every option read whose name is written as a literal."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in READERS
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return found


def test_a_literal_read_is_found():
    # Guards the test below against passing vacuously.
    planted = ast.parse("def f(opts):\n    return opts.integer('maxOffsetsPerTrigger', None), opts.has(NAME)\n")
    assert literal_reads(planted) == [(2, "maxOffsetsPerTrigger")]


def test_no_product_module_reads_an_option_by_a_literal_name():
    found = [f"{path.relative_to(ROOT)}:{line}: {name!r}"
             for path in sorted(ROOT.rglob("*.py")) if path.relative_to(ROOT).parts[0] != "options"
             for line, name in literal_reads(ast.parse(path.read_text(encoding="utf-8"), str(path)))]
    assert found == [], "options read by a literal name (read the spec entry, e.g. MAX_OFFSETS_PER_TRIGGER" \
        ".read(opts), or pass its entry's .name):\n" + "\n".join(found)
