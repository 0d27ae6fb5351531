"""Every mutant of ``benchmarks/mutation_check.py`` still applies to the code: the report's "all killed" can only be
re-measured while each mutant finds the exact text of the rule it breaks (a moved file or a rewritten rule makes
the tool refuse to run, naming the mutant)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _mutation_check():
    spec = importlib.util.spec_from_file_location("mutation_check", ROOT / "benchmarks" / "mutation_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_every_mutant_applies_to_the_current_code_exactly_once():
    tool = _mutation_check()
    assert len(tool.MUTANTS) >= 30
    assert tool.stale_mutants(ROOT) == []


def test_a_moved_file_or_a_rewritten_rule_is_named(tmp_path):
    tool = _mutation_check()
    mutant = tool.MUTANTS[0]
    path, old, _ = mutant.edits()[0]
    assert tool.stale_mutants(tmp_path, [mutant]) == [f"{mutant.name}: {path} does not exist"]
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).write_text("the rule rewritten")
    assert tool.stale_mutants(tmp_path, [mutant])[0].startswith(f"{mutant.name}: its text is found 0 times in {path}")
