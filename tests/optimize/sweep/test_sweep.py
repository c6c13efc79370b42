"""The sweep runner: knobs applied, energy per sample from a scripted sensor, failures recorded."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from torch import nn

from greenml.errors import ConfigError
from greenml.measure.measurement import COUNTER
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.optimize.sweep.run import SweepConfig, SweepGrid, TrainStep, sweep

POWER_W = 50.0
STEP_S = 0.01  # each fake step advances the clock this much


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Tiny steps on a loaded 2-core machine: two OpenMP threads spin against each other."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class Clock:
    """A monotonic clock that only moves when a step runs."""

    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


def fake_meter(clock: Clock) -> Meter:
    """A 50 W device with an energy counter, on the fake clock, without a sampler thread."""
    sensor = FakeSensor([FakeDevice("cpu0", [(0.0, POWER_W)], method=COUNTER)], clock=clock)
    return Meter(sensors=[sensor], sample_hz=0, clock=clock, wall_clock=lambda: 1.7e9)


class Net(nn.Module):
    """A tiny MLP that records the dtype its first layer computed in."""

    def __init__(self, record: bool) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)
        self.record = record  # a growing list would make torch.compile recompile every step
        self.inner_dtypes: list[torch.dtype] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.fc1(x)
        if self.record:
            self.inner_dtypes.append(hidden.dtype)
        return self.fc2(torch.relu(hidden))


def torch_factory(
    clock: Clock | None = None, models: list[Net] | None = None, calls: list[str] | None = None
) -> Callable[[SweepConfig], TrainStep]:
    """A real (tiny) training step; the fake clock moves 10 ms per step."""

    def make_step(config: SweepConfig) -> TrainStep:
        model = Net(record=not config.compile)
        if models is not None:
            models.append(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(config.batch_size, 4)
        y = torch.randint(0, 3, (config.batch_size,))

        def step() -> tuple[int, torch.Tensor]:
            if calls is not None:
                calls.append(config.label)
            optimizer.zero_grad()
            out = model(x)
            assert out.dtype == torch.float32  # outputs come back as float32
            loss = nn.functional.cross_entropy(out, y)
            loss.backward()
            optimizer.step()
            if clock is not None:
                clock.now_s += STEP_S
            return len(x), loss.detach()

        return TrainStep(step, model)

    return make_step


def test_energy_per_sample_and_throughput_follow_the_scripted_power() -> None:
    clock = Clock()
    calls: list[str] = []
    with fake_meter(clock) as meter:
        result = sweep(
            torch_factory(clock, calls=calls),
            SweepGrid(batch_sizes=(8, 32)),
            warmup_steps=2,
            measure_steps=10,
            meter=meter,
            max_power_w=100.0,
        )
    small, large = result.results
    assert calls.count(small.config.label) == 12  # 2 warm-up + 10 measured
    for r, batch in ((small, 8), (large, 32)):
        assert r.ok and r.steps == 10 and r.samples == 10 * batch
        assert r.duration_s == pytest.approx(10 * STEP_S)
        assert r.energy_j == pytest.approx(POWER_W * 10 * STEP_S)
        assert r.energy_per_sample_j == pytest.approx(POWER_W * STEP_S / batch)
        assert r.samples_per_s == pytest.approx(batch / STEP_S)
        assert r.method == "counter" and r.uncertainty_rel == pytest.approx(0.05)
        assert r.components_j == {"cpu": pytest.approx(POWER_W * 10 * STEP_S)}
        assert len(r.losses) == 10
    assert result.max_power_w == 100.0 and result.max_power_source == "given"
    # same time per step: the bigger batch wins on energy and on time
    assert result.recommend(0.0).result is large  # type: ignore[union-attr]
    assert result.recommend(1.0).result is large  # type: ignore[union-attr]


def test_bf16_autocasts_the_forward_and_tf32_is_skipped_on_cpu() -> None:
    clock = Clock()
    models: list[Net] = []
    with fake_meter(clock) as meter:
        result = sweep(
            torch_factory(clock, models),
            SweepGrid(precisions=("fp32", "tf32", "bf16")),
            warmup_steps=1,
            measure_steps=3,
            meter=meter,
        )
    fp32, tf32, bf16 = result.results
    assert (fp32.status, tf32.status, bf16.status) == ("ok", "skipped", "ok")
    assert "CPU has none" in tf32.reason
    assert models[0].inner_dtypes == [torch.float32] * 4
    assert models[1].inner_dtypes == [torch.bfloat16] * 4  # tf32 built no model
    assert bf16.autocast == "forward" and fp32.autocast == ""
    # Same seed: both start from the same weights and batch, bf16 loss is close to fp32's.
    assert bf16.losses[0] == pytest.approx(fp32.losses[0], rel=0.02)
    assert result.loss_checks["bf16 b32 eager w0"].status == "ok"
    assert torch.get_float32_matmul_precision() == "highest"  # restored


def test_fp32_is_strict_tf32_is_tf32_and_the_user_setting_comes_back() -> None:
    from greenml.optimize.sweep.knobs import float32_mode

    matmul = torch.backends.cuda.matmul
    if not hasattr(matmul, "fp32_precision"):
        pytest.skip("torch < 2.9 has no per-backend fp32_precision")
    before = matmul.fp32_precision
    matmul.fp32_precision = "tf32"  # what a user who enabled TF32 globally has
    try:
        with float32_mode("fp32", "cuda"):
            assert matmul.fp32_precision == "ieee"
            assert torch.backends.cudnn.conv.fp32_precision == "ieee"
        with float32_mode("tf32", "cuda"):
            assert torch.backends.cudnn.conv.fp32_precision == "tf32"
        with float32_mode("fp32", "cpu"):
            assert torch.backends.mkldnn.matmul.fp32_precision == "ieee"
        assert matmul.fp32_precision == "tf32"
    finally:
        matmul.fp32_precision = before


def test_fp16_autocast_exists_on_cpu_in_this_torch() -> None:
    with fake_meter(Clock()) as meter:
        result = sweep(torch_factory(), [SweepConfig("fp16", 4)], measure_steps=2, meter=meter)
    assert result.results[0].status == "ok", result.results[0].reason


def test_a_step_without_model_runs_whole_under_autocast_and_cannot_compile() -> None:
    seen: list[bool] = []

    def make_step(config: SweepConfig) -> Callable[[], int]:
        def step() -> int:
            seen.append(torch.is_autocast_enabled("cpu"))
            return config.batch_size

        return step

    with fake_meter(Clock()) as meter:
        result = sweep(
            make_step,
            [SweepConfig("bf16", 4), SweepConfig("fp32", 4, compile=True)],
            warmup_steps=0,
            measure_steps=2,
            meter=meter,
        )
    bf16, compiled = result.results
    assert bf16.ok and bf16.autocast == "step" and seen == [True, True]
    assert "whole step" in bf16.notes[0]
    assert compiled.status == "skipped" and "TrainStep(step, model)" in compiled.reason
    assert bf16.loss is None


def test_a_failing_configuration_is_recorded_and_the_sweep_goes_on() -> None:
    base = torch_factory()

    def make_step(config: SweepConfig) -> Any:
        if config.batch_size == 64:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        if config.batch_size == 16:
            return lambda: "sixteen"
        return base(config)

    with fake_meter(Clock()) as meter:
        result = sweep(
            make_step, SweepGrid(batch_sizes=(8, 16, 64, 4)), measure_steps=2, meter=meter
        )
    statuses = [(r.config.batch_size, r.status) for r in result.results]
    assert statuses == [(8, "ok"), (16, "failed"), (64, "failed"), (4, "ok")]
    assert result.results[1].reason.startswith("ConfigError: the step returned 'sixteen'")
    assert result.results[2].reason == (
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    )
    assert {p.result.config.batch_size for p in result.recommendations()} <= {8, 4}


def test_compile_happens_in_the_warm_up_and_a_compile_error_fails_only_its_config() -> None:
    steps_run: list[int] = []
    compiled_at: list[int] = []

    def counting_backend(gm: Any, example_inputs: Any) -> Any:
        compiled_at.append(len(steps_run))
        return gm.forward

    def failing_backend(gm: Any, example_inputs: Any) -> Any:
        raise RuntimeError("no C++ compiler found")

    base = torch_factory()

    def make_step(config: SweepConfig) -> TrainStep:
        inner = base(config)

        def step() -> Any:
            out = inner()
            steps_run.append(1)
            return out

        return TrainStep(step, inner.model)

    grid = [SweepConfig(compile=True), SweepConfig(compile=False)]
    with fake_meter(Clock()) as meter:
        good = sweep(make_step, grid, warmup_steps=0, measure_steps=3, meter=meter,
                     compile_options={"backend": counting_backend})  # fmt: skip
        bad = sweep(make_step, grid, warmup_steps=2, measure_steps=3, meter=meter,
                    compile_options={"backend": failing_backend})  # fmt: skip
    compiled = good.results[0]
    assert compiled.ok and compiled.warmup_steps == 1  # one warm-up added for compilation
    assert compiled_at == [0]  # compiled during the first (warm-up) step, before measuring
    assert "warm-up step added" in compiled.notes[0]
    assert bad.results[0].status == "failed" and "no C++ compiler found" in bad.results[0].reason
    assert bad.results[1].ok


NO_COMPILER = shutil.which("g++") is None and shutil.which("c++") is None


@pytest.mark.skipif(NO_COMPILER, reason="torch.compile's inductor needs a C++ compiler on CPUs")
def test_inductor_compiles_one_tiny_configuration() -> None:
    models: list[Net] = []
    with fake_meter(Clock()) as meter:
        result = sweep(torch_factory(models=models), [SweepConfig(batch_size=4, compile=True)],
                       warmup_steps=1, measure_steps=2, meter=meter)  # fmt: skip
    assert result.results[0].ok, result.results[0].reason
    assert getattr(models[0], "_compiled_call_impl", None) is not None


def test_measure_seconds_runs_at_least_that_long() -> None:
    def make_step(config: SweepConfig) -> Callable[[], int]:
        return lambda: 1

    meter = Meter(sensors=[FakeSensor([FakeDevice("cpu0", [(0.0, 10.0)])])], sample_hz=0)
    with meter:
        result = sweep(make_step, [SweepConfig()], measure_steps=1, measure_s=0.05, meter=meter)
    r = result.results[0]
    assert r.duration_s >= 0.05 and r.steps > 1
    assert r.energy_j == pytest.approx(10.0 * r.duration_s, rel=0.01)
    assert meter.end_window is not None and meter.current_power_w() >= 0  # still usable


def test_the_default_meter_measures_this_machine_and_labels_its_method() -> None:
    result = sweep(torch_factory(), [SweepConfig(batch_size=4)], warmup_steps=0, measure_steps=2)
    r = result.results[0]
    assert r.ok and r.method in {"counter", "power-integrated", "estimated"}
    assert r.energy_j >= 0 and 0 <= r.uncertainty_rel <= 1
    assert result.max_power_w > 0 and result.max_power_source


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"warmup_steps": -1}, "warm-up steps must be >= 0"),
        ({"measure_steps": 0}, "measured steps must be at least 1"),
        ({"measure_steps": None}, "give the measured steps"),
        ({"measure_s": float("nan")}, "measured seconds"),
        ({"device": "tpu"}, "device must be 'cpu' or 'cuda'"),
        ({"loss_tolerance_rel": -0.1}, "loss tolerance"),
    ],
)
def test_bad_arguments_raise_config_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        sweep(torch_factory(), [SweepConfig()], **kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error of a machine without CUDA")
def test_cuda_without_a_gpu_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="sees no GPU"):
        sweep(torch_factory(), [SweepConfig()], device="cuda")


def test_an_empty_grid_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="empty"):
        sweep(torch_factory(), [])


def test_throughput_spread_is_zero_when_steady_and_shows_a_slow_quarter() -> None:
    from greenml.optimize.sweep.measure import _spread

    steady = [(i * 0.1, i * 32) for i in range(9)]
    assert _spread(steady) == pytest.approx(0.0)
    # the third quarter runs at half speed: rates 320, 320, 160, 320 samples/s
    times = [0.0, 0.1, 0.2, 0.3, 0.4, 0.6, 0.8, 0.9, 1.0]
    slow = [(t, i * 32) for i, t in enumerate(times)]
    rates = [320.0, 320.0, 160.0, 320.0]
    mean = sum(rates) / 4
    expected = (sum((r - mean) ** 2 for r in rates) / 4) ** 0.5 / mean
    assert _spread(slow) == pytest.approx(expected)
    assert _spread(steady[:8]) is None  # under 8 steps: no figure
