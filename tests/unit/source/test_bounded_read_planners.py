"""The bounded-read planners (``kafka/driver/bounded_read.py``, ``kinesis/driver/bounded_read.py``) plan through
the streaming coordinator's public methods only, so a change inside a coordinator cannot silently change what
``spark.read`` plans (a private the planner reached into, renamed or re-purposed, would)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import spark_samza_source

ROOT = Path(spark_samza_source.__file__).resolve().parent
PLANNERS = [ROOT / system / "driver" / "bounded_read.py" for system in ("kafka", "kinesis")]


def private_uses(path: Path) -> list[str]:
    """``coordinator._name`` attribute uses in ``path``, with their lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [f"{path.name}:{node.lineno}: coordinator.{node.attr}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr.startswith("_")
            and isinstance(node.value, ast.Name) and node.value.id == "coordinator"]


def test_the_check_sees_a_private_use(tmp_path):
    # guards the test below against passing vacuously
    sample = tmp_path / "private_use_sample.py"
    sample.write_text("def plan(coordinator):\n    return coordinator._grouper\n")
    assert private_uses(sample) == ["private_use_sample.py:2: coordinator._grouper"]


@pytest.mark.parametrize("path", PLANNERS, ids=lambda p: p.parts[-3])
def test_a_bounded_read_planner_uses_no_coordinator_private(path):
    assert path.is_file()
    assert private_uses(path) == []
