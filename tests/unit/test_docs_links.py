"""Every link between the README and the docs/ pages, and every repository file and test they name, exists.

A page moved or a heading renamed would otherwise leave a newcomer at a dead link; a test renamed would leave a
claim citing nothing. Checked: relative Markdown links ``[text](path#anchor)`` (the file, and the anchor against
the target's headings, slugged as GitHub does), and backticked repository paths (``spark_samza_source/...``,
``tests/...::test_name`` ...), whose file must exist and, with ``::name``, hold that test or function.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
REPO_PATH = re.compile(r"`((?:spark_samza_source|pyspark_samza_kafka|pyspark_samza_kinesis|devkit|tests|benchmarks|"
                       r"examples|conf|docs|notebooks)/[\w./-]*\w)(?:::(\w+))?`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (``-`` and ``_`` kept), spaces to ``-``."""
    text = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    found: set[str] = set()
    for line in text.splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            base = slug(match.group(1))
            name, n = base, 1
            while name in found:           # GitHub numbers repeated headings: x, x-1, x-2
                name, n = f"{base}-{n}", n + 1
            found.add(name)
    return found


def link_problems(page: Path) -> list[str]:
    out = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"[a-z]+:", target):   # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(REPO)} -> {target}"
        if not file.exists():
            out.append(f"{where}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            out.append(f"{where}: no heading with that anchor")
    return out


def _names_in(file: Path) -> set[str]:
    tree = ast.parse(file.read_text(), str(file))
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def path_problems(page: Path) -> list[str]:
    out = []
    for path, name in REPO_PATH.findall(page.read_text()):
        file = REPO / path
        where = f"{page.relative_to(REPO)}: `{path}{'::' + name if name else ''}`"
        if not file.exists():
            out.append(f"{where}: no such file or directory")
        elif name and file.suffix == ".py" and name not in _names_in(file):
            out.append(f"{where}: no such test or function")
    return out


def test_every_intra_doc_link_reaches_a_file_and_heading():
    problems = [p for page in PAGES for p in link_problems(page)]
    assert problems == []
    # the checker itself: the README links to the pages and to anchors in them
    assert sum(len(LINK.findall(p.read_text())) for p in PAGES) >= 40


def test_every_repository_file_and_test_the_docs_name_exists():
    assert [p for page in PAGES for p in path_problems(page)] == []
    assert sum(len(REPO_PATH.findall(p.read_text())) for p in PAGES) >= 20


def test_the_checks_report_a_dead_link_a_missing_anchor_and_a_renamed_test(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other page\n\n## Choosing a `file:` store, or S3's\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_there():\n    pass\n")
    page.write_text("[a](other.md#choosing-a-file-store-or-s3s) [b](gone.md) [c](other.md#nowhere) "
                    "[d](https://example.com/x)\n\n`tests/test_x.py::test_there` `tests/test_x.py::test_gone` "
                    "`tests/test_y.py`\n")
    globals()["REPO"] = tmp_path
    try:
        assert link_problems(page) == ["page.md -> gone.md: no such file",
                                       "page.md -> other.md#nowhere: no heading with that anchor"]
        assert path_problems(page) == ["page.md: `tests/test_x.py::test_gone`: no such test or function",
                                       "page.md: `tests/test_y.py`: no such file or directory"]
    finally:
        globals()["REPO"] = REPO_REAL


REPO_REAL = REPO
