"""The order ``make test`` starts the test modules in: the longest first, each module's tests together and in order."""

from __future__ import annotations

from dataclasses import dataclass

from samza_devkit.cpu_accounting import module_times
from samza_devkit.module_order import longest_first, read_module_times


@dataclass
class _Item:
    nodeid: str


def _ids(items):
    return [item.nodeid for item in items]


def test_longest_module_first_and_each_module_kept_whole_in_its_order():
    items = [_Item(n) for n in ("a.py::t1", "a.py::t2", "b.py::t1", "c.py::t1", "c.py::t2", "d.py::t1")]
    ordered = longest_first(items, {"a.py": 5.0, "b.py": 600.0, "c.py": 40.0})
    # d.py is unknown: it counts as a middling module (30 s), between c.py (40 s) and a.py (5 s)
    assert _ids(ordered) == ["b.py::t1", "c.py::t1", "c.py::t2", "d.py::t1", "a.py::t1", "a.py::t2"]


def test_equal_times_keep_the_collection_order():
    items = [_Item(n) for n in ("x.py::t", "y.py::t", "z.py::t")]
    assert _ids(longest_first(items, {})) == ["x.py::t", "y.py::t", "z.py::t"]


def test_times_file_round_trips_from_a_cpu_report(tmp_path):
    report = tmp_path / "cpu.tsv"
    report.write_text("a.py\t10.0\t4.0\nb.py\t100.4\t50.0\na.py\t2.0\t1.0\n")  # a module may appear twice
    times = tmp_path / "module_times.tsv"
    times.write_text(module_times(str(report)))
    assert read_module_times(times) == {"b.py": 100.0, "a.py": 12.0}
    assert read_module_times(tmp_path / "absent.tsv") == {}


def test_the_repository_times_file_parses_and_starts_with_the_cluster_modules(pytestconfig):
    times = read_module_times(pytestconfig.rootpath / "tests" / "module_times.tsv")
    longest = max(times, key=times.get)
    # the modules that start clusters of their own (Spark's standalone one, three Kafka nodes) are the longest
    own_clusters = ("tests/integration/cluster/", "tests/integration/kafka_cluster/")
    assert len(times) > 100 and longest.startswith(own_clusters), longest
