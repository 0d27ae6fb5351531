"""The guarantees page (docs/guarantees.md, "Guarantees") and the tests behind them stay in sync.

Every test the section names (``path::test_name``) must exist and say in its docstring which guarantee it backs
(it names "Guarantees" or the "README", where the section used to live); every test file it names (``path.py``)
must exist and hold tests; every document it names must exist. Paths are under ``tests/integration/`` unless they
start with ``tests/`` (as the section says).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REFERENCE = re.compile(r"`([\w./-]+\.(?:py|md))(?:::(\w+))?`")


GUARANTEES_PAGE = REPO / "docs" / "guarantees.md"


def guarantees_section(page: str) -> str:
    start = page.index("\n## Guarantees\n")
    end = page.index("\n## ", start + 1)
    return page[start:end]


def references(section: str) -> list[tuple[str, str | None]]:
    """(path relative to the repository, test name or None) for every backticked file reference, in order."""
    out = []
    for path, name in REFERENCE.findall(section):
        if path.endswith(".py") and not path.startswith("tests/"):
            path = "tests/integration/" + path
        out.append((path, name or None))
    return out


def _tests_of(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            found[node.name] = node
    return found


def _cites_the_guarantees(docstring: str) -> bool:
    return "Guarantees" in docstring or "README" in docstring or "guarantees.md" in docstring


def problems(section: str, repo: Path = REPO) -> list[str]:
    """What is wrong with the references of ``section``: missing files, missing tests, tests not citing it."""
    out = []
    for path, name in references(section):
        file = repo / path
        if not file.is_file():
            out.append(f"{path}: no such file")
            continue
        if not path.endswith(".py"):
            continue
        tests = _tests_of(ast.parse(file.read_text(), str(file)))
        if name is None:
            if not tests:
                out.append(f"{path}: holds no test")
        elif name not in tests:
            out.append(f"{path}::{name}: no such test")
        elif not _cites_the_guarantees(ast.get_docstring(tests[name]) or ""):
            out.append(f"{path}::{name}: its docstring does not say which guarantee it backs")
    return out


def test_every_test_the_guarantees_page_names_exists_and_cites_its_line():
    section = guarantees_section(GUARANTEES_PAGE.read_text())
    refs = references(section)
    # the parser itself: the section names a dozen tests and more files; finding none would pass vacuously
    assert sum(1 for _, name in refs if name) >= 8, refs
    assert sum(1 for _, name in refs if name is None) >= 10, refs
    assert problems(section) == []


def test_a_renamed_or_missing_test_is_reported_by_name(tmp_path):
    (tmp_path / "tests" / "integration" / "kafka").mkdir(parents=True)
    (tmp_path / "tests" / "integration" / "kafka" / "test_a.py").write_text(
        'def test_there():\n    """Backs Guarantees: x."""\n\n\ndef test_quiet():\n    pass\n')
    section = ("- x: `kafka/test_a.py::test_there`, `kafka/test_a.py::test_gone`, `kafka/test_b.py`,\n"
               "  `kafka/test_a.py::test_quiet`, `docs/nowhere.md`, `expansion.settleTime`\n")
    assert problems(section, tmp_path) == [
        "tests/integration/kafka/test_a.py::test_gone: no such test",
        "tests/integration/kafka/test_b.py: no such file",
        "tests/integration/kafka/test_a.py::test_quiet: its docstring does not say which guarantee it backs",
        "docs/nowhere.md: no such file",
    ]
