"""The monitor's frame and command, on 8 fake GPUs with gauges."""

from __future__ import annotations

import time

import pytest

from greenml.exporter.monitor import frame_text, run_monitor, waste_flags
from greenml.exporter.state import DeviceState, LiveState
from tests.exporter.conftest import make_fake_meter


def test_frame_shows_devices_and_flags() -> None:
    meter = make_fake_meter()
    try:
        state = LiveState(meter)
        time.sleep(0.02)
        meter.sample_now()
        text = frame_text(state.update())
    finally:
        meter.close()
    lines = {
        line.split()[1]: line
        for line in text.splitlines()
        if line.startswith("│ ") and len(line.split()) > 1
    }
    assert "idle, holding memory" in lines["gpu7"]
    assert "low SM activity" in lines["gpu6"]
    assert "flag" not in lines["gpu0"] and "idle" not in lines["gpu0"]
    assert "60%" in lines["gpu0"] and "40.0" in lines["gpu0"]
    assert "cpu0" in lines and "total" in lines


def test_utilization_only_note() -> None:
    device = DeviceState(
        "gpu0", "gpu", "Old GPU", 200.0, 1.0, utilization=0.5, memory_used_bytes=2e9
    )
    assert waste_flags(device) == ["utilization only (no SM activity)"]
    idle = DeviceState("gpu1", "gpu", "Old GPU", 60.0, 1.0, utilization=0.0, memory_used_bytes=4e9)
    assert waste_flags(idle) == ["idle, holding memory", "utilization only (no SM activity)"]
    assert waste_flags(DeviceState("cpu0", "cpu", "CPU", 50.0, 1.0, utilization=0.0)) == []


def test_run_monitor_draws_frames() -> None:
    import io

    from rich.console import Console

    out = io.StringIO()
    meter = make_fake_meter()
    try:
        drawn = run_monitor(meter, 0.01, frames=3, console=Console(file=out, width=140))
    finally:
        meter.close()
    assert drawn == 3
    assert "gpu7" in out.getvalue()


def test_cli_once(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import greenml.cli.app
    import greenml.cli.monitor
    from greenml.cli import main

    monkeypatch.setattr(
        greenml.cli.app,
        "COMMANDS",
        {**greenml.cli.app.COMMANDS, "monitor": "greenml.cli.monitor:monitor"},
    )
    monkeypatch.setattr(greenml.cli.monitor, "make_meter", make_fake_meter)
    assert main(["monitor", "--once"]) == 0
    assert main(["monitor", "--frames", "2", "--sample-hz", "100"]) == 0
    captured = capsys.readouterr()
    assert "gpu7" in captured.out and "idle" in captured.out  # 80 columns wrap the flag
    assert captured.err == ""


def test_cli_old_interval_still_works_and_says_the_new_option(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import greenml.cli.monitor
    import greenml.exporter.monitor
    from greenml.cli import main

    periods: list[float] = []

    def record(meter: object, interval_s: float, frames: int | None) -> int:
        periods.append(interval_s)
        return 0

    monkeypatch.setattr(greenml.cli.monitor, "make_meter", make_fake_meter)
    monkeypatch.setattr(greenml.exporter.monitor, "run_monitor", record)
    assert main(["monitor", "--once", "--interval", "0.25"]) == 0
    assert periods == [0.25]
    assert capsys.readouterr().err == "greenml: --interval S is now --sample-hz HZ (1/S)\n"
    bad_options = (["--interval", "0"], ["--interval", "nan"], ["--sample-hz", "nan"],
                   ["--sample-hz", "0"], ["--sample-hz", "1e6"],
                   ["--interval", "1", "--sample-hz", "2"])  # fmt: skip
    for bad in bad_options:
        assert main(["monitor", "--once", *bad]) == 2, bad
        err = capsys.readouterr().err
        assert err.endswith("\n") and err.splitlines()[-1].startswith("greenml: error: "), err


def test_cli_ctrl_c_exits_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    import greenml.cli.app
    import greenml.cli.monitor
    import greenml.exporter.monitor
    from greenml.cli import main

    def interrupted(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(
        greenml.cli.app,
        "COMMANDS",
        {**greenml.cli.app.COMMANDS, "monitor": "greenml.cli.monitor:monitor"},
    )
    monkeypatch.setattr(greenml.cli.monitor, "make_meter", make_fake_meter)
    monkeypatch.setattr(greenml.exporter.monitor, "run_monitor", interrupted)
    assert main(["monitor"]) == 0
