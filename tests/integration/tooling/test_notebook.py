"""notebooks/quickstart.ipynb runs top to bottom on a Jupyter kernel of this interpreter, with no error.

The kernel is ipykernel from this virtualenv, registered under a name of its own in a temp Jupyter data dir
(``python -m ipykernel install --prefix``) and found through ``JUPYTER_PATH``, so no user- or system-wide
``python3`` kernel spec can stand in for it. ``PYSPARK_PYTHON`` is this interpreter in the kernel too.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = [pytest.mark.spark, pytest.mark.slow]

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "quickstart.ipynb"


@pytest.fixture
def kernel_name(tmp_path, monkeypatch) -> str:
    name = "spark-samza-source-test"
    prefix = tmp_path / "jupyter"
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", name,
                    "--env", "PYSPARK_PYTHON", sys.executable, "--env", "PYSPARK_DRIVER_PYTHON", sys.executable],
                   check=True, capture_output=True, timeout=120)
    spec = json.loads((prefix / "share" / "jupyter" / "kernels" / name / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable
    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return name


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def test_quickstart_notebook_runs_top_to_bottom(kernel_name, tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # committed with its outputs (readers see the pictures without running it): every picture is there
    committed = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert len([o for o in committed if "image/png" in o.get("data", {})]) == 3, "commit the executed notebook"
    assert not [o for o in committed if o.get("output_type") == "error"]
    # the kernel it asks for is the one notebooks/README.md tells a reader to install
    installed = re.search(r"ipykernel install --user --name (\S+)", (NOTEBOOK.parent / "README.md").read_text())
    assert installed and notebook.metadata.kernelspec.name == installed.group(1), notebook.metadata.kernelspec
    for cell in notebook.cells:  # executed afresh below
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(notebook, kernel_name=kernel_name, timeout=300, startup_timeout=120,
                            resources={"metadata": {"path": str(tmp_path)}})
    started = time.monotonic()
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on any error
    elapsed = time.monotonic() - started
    nbformat.write(notebook, tmp_path / "quickstart.executed.ipynb")
    print(f"[notebook] executed in {elapsed:.0f} s", flush=True)

    code = [c for c in notebook.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    summaries = [line for c in code for line in _text(c).splitlines() if line.startswith("SUMMARY ")]
    assert len(summaries) == 1, [_text(c)[-500:] for c in code]
    summary = json.loads(summaries[0][len("SUMMARY "):])
    assert summary["distinct"] == summary["produced"] == 2000
    assert summary["replayed"] == summary["expected_replay"] > 0
    assert summary["tasks"] == {"Partition 0": [0, 2], "Partition 1": [1, 3]}
    assert summary["lag_figures"] > 0
    # the CLI ran: the startpoint was stored by `samza-source startpoint set`, then listed as gone
    everything = "\n".join(_text(c) for c in code)
    assert "$ samza-source startpoint set" in everything and "stored startpoint Oldest" in everything
    assert "no startpoints stored" in everything
    images = [o for c in code for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    # throughput and lag, the expansion timeline, the Kinesis split and merge: base64 PNGs
    assert len(images) == 3 and all(len(i["data"]["image/png"]) > 10_000 for i in images)
    kinesis = [line for c in code for line in _text(c).splitlines() if line.startswith("KINESIS ")]
    assert len(kinesis) == 1, kinesis
    assert json.loads(kinesis[0][len("KINESIS "):]) == {"children_after_parent": True,
                                                        "children_in_parent_task": True, "put": 600, "read": 600}
