"""The example notebook runs offline, and runs, measurements and reports render as HTML."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import greenml
from greenml.measure.sensors.fake import FakeDevice, FakeSensor

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "run_api.ipynb"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_the_example_notebook_runs_and_shows_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("pandas")
    monkeypatch.setenv("GREENML_DB", str(tmp_path / "runs.db"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("GREENML_EVENTS", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()  # fmt: skip
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<caption" in h and "epoch" in h for h in html)  # the window's measurement
    assert any("Carbon Impact Statement" in h and "CO2eq" in h for h in html)  # the run
    assert any("notebook-demo" in h and "energy_kwh" in h for h in html)  # the DataFrame
    printed = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "kWh" in printed and "kg CO2eq" in printed and "USD" in printed


def test_a_run_renders_while_running_and_once_stored(tmp_path: Path) -> None:
    sensor = FakeSensor([FakeDevice("gpu0", [(0, 100.0)])])
    run = greenml.Run("html", ci=200, sensors=[sensor], db=str(tmp_path / "r.db")).start()
    time.sleep(0.01)
    live = run._repr_html_()
    assert "running" in live and "gpu0" in live
    run.stop()
    done = run._repr_html_()
    assert "CO2eq" in done and "<iframe" in done and "Carbon Impact Statement" in done
    assert run.record is not None and run.record.carbon is not None
    stored = run.record._repr_html_()  # the record alone, as the store gives it
    assert "gpu0" in stored and f"{run.record.carbon.kg:.4g} kg" in stored
    assert run.measurement is not None and "<caption" in run.measurement._repr_html_()
