"""No file of the repository names a document outside it: users and new developers only have the repository.

Every tracked text file is scanned for references to design notes kept outside the repository during its early
development; the project's design document is ``docs/architecture.md``, and README and code cite it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# spelled in pieces, so this file does not match itself
OUTSIDE = ["DESIGN" + ".md", "../" + "shared", "/work/" + "shared", "beside the " + "repo", "shared/" + "reference",
           "seeds" + "/SEP"]


def _tracked_files() -> list[Path]:
    proc = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, timeout=60)
    if proc.returncode == 0 and proc.stdout:
        return [REPO / name for name in proc.stdout.decode().split("\0") if name]
    # not a git checkout (an unpacked source archive): every file but build and virtualenv output
    skip = {".git", ".venv", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache"}
    return [p for p in REPO.rglob("*") if p.is_file() and not skip.intersection(p.relative_to(REPO).parts)]


def test_no_file_names_a_document_outside_the_repository():
    files = _tracked_files()
    assert any(p.name == "README.md" for p in files) and len(files) > 50, len(files)
    hits = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            hits += [f"{path.relative_to(REPO)}:{lineno}: {word!r}" for word in OUTSIDE if word in line]
    assert hits == [], "\n".join(hits)


def test_readme_and_code_cite_the_architecture_document_in_the_repository():
    assert (REPO / "docs" / "architecture.md").is_file()
    assert "docs/architecture.md" in (REPO / "README.md").read_text()
    cited = [p for p in (REPO / "spark_samza_source").rglob("*.py") if "docs/architecture.md" in p.read_text()]
    assert len(cited) >= 5, cited
