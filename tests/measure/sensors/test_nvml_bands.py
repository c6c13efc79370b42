"""NVIDIA's sensors as they are (issue 31): per-family cited bands, the counter's update
period in each short window's provenance, the Grace module's scope, memory power."""

from __future__ import annotations

import pytest

from greenml.measure.meter import Meter
from greenml.measure.sensors.nvml import NvmlSensor
from greenml.measure.sensors.nvml_bands import (
    COUNTER_UPDATE_S,
    DEFAULT_BAND,
    MODULE_NOTE,
    band_for,
    short_window_note,
)
from tests.fakes.fake_nvml_domains import DomainFakeNvml
from tests.fakes.fake_pynvml import FakeClock, FakeGpuSpec, FakeNvml, Phase, h100, p100, v100


@pytest.fixture(autouse=True)
def _no_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


@pytest.mark.parametrize(
    ("name", "counter", "integrated", "scope"),
    [
        ("NVIDIA H100 80GB HBM3", 0.05, 0.12, "board"),
        ("NVIDIA A100-SXM4-80GB", 0.05, 0.12, "board"),
        ("NVIDIA GH200 480GB", 0.05, 0.12, "module"),
        ("Tesla V100-PCIE-32GB", 0.05, 0.05, "board"),
        ("NVIDIA L40S", 0.05, 0.05, "board"),
        ("Some Future GPU", 0.05, 0.05, "board"),
    ],
)
def test_each_family_has_its_cited_band(name: str, counter: float, integrated: float,
                                        scope: str) -> None:  # fmt: skip
    band = band_for(name)
    assert (band.counter_rel, band.integrated_rel, band.scope) == (counter, integrated, scope)
    assert band.source
    if integrated == 0.12:
        assert "Part-time Power Measurements" in band.source and "25 %" in band.source
    if scope == "module":
        assert "#172" in band.source
    assert (band is DEFAULT_BAND) == (name == "Some Future GPU")


def test_a_grace_hopper_counter_is_labelled_as_the_whole_module() -> None:
    gh200 = FakeGpuSpec("NVIDIA GH200 480GB", "GPU-gh200")
    sensor = NvmlSensor(nvml=FakeNvml([gh200, h100("GPU-h100")], FakeClock(0.0)))
    module, board = sensor.devices
    assert MODULE_NOTE in module.note and "Grace CPU" in module.note
    assert MODULE_NOTE not in board.note
    assert module.counter_period_s == COUNTER_UPDATE_S
    older = NvmlSensor(nvml=FakeNvml([p100()], FakeClock(0.0))).devices[0]
    assert older.counter_period_s is None  # no counter, no update period


def test_module_and_memory_power_are_read_where_nvml_gives_them() -> None:
    clock = FakeClock(0.0)
    gh200 = FakeGpuSpec("NVIDIA GH200 480GB", "GPU-gh200", trace=(Phase(0.0, 400.0),))
    nvml = DomainFakeNvml([gh200, v100()], clock, module_extra_w=150.0, memory_share=0.1)
    metrics = NvmlSensor(nvml=nvml).read_metrics()
    assert metrics["gpu0"]["module_power_w"] == pytest.approx(550.0)
    assert metrics["gpu0"]["memory_power_w"] == pytest.approx(40.0)
    only_board = DomainFakeNvml([v100()], clock)
    sensor = NvmlSensor(nvml=only_board)
    assert "module_power_w" not in sensor.read_metrics()["gpu0"]
    sensor.read_metrics()
    assert only_board.calls["nvmlDeviceGetFieldValues"] == 1  # NotSupported: not asked again
    plain = NvmlSensor(nvml=FakeNvml([v100()], clock)).read_metrics()["gpu0"]
    assert "memory_power_w" not in plain and "utilization" in plain  # older bindings


def test_windows_shorter_than_the_counter_resolves_say_so() -> None:
    clock = FakeClock(0.0)
    nvml = FakeNvml([h100(trace=(Phase(0.0, 500.0),))], clock)
    meter = Meter(sensors=[NvmlSensor(nvml=nvml)], sample_hz=0, clock=clock)
    widths = {}
    for seconds in (0.05, 0.5, 2.0):
        meter.begin_window("w")
        clock.advance(seconds)
        device = meter.end_window("w").components["gpu"].devices["gpu0"]
        widths[seconds] = (device.uncertainty_rel, device.note)
    rel, note = widths[0.05]
    assert rel > 1.0 and "50 ms is shorter than the energy counter's ~100 ms" in note
    rel, note = widths[0.5]
    assert 0.05 < rel < 0.4 and note == ""  # a few updates: widened, resolved
    assert widths[2.0] == (0.05, "")  # twenty updates and more: the band alone
    assert short_window_note(0.2) == ""
    meter.close()
