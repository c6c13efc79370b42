"""``greenml run --cap-when-dirty``: the controller of :mod:`dirty_cap` on a run's tick.

Opens the GPUs (:class:`~greenml.optimize.gpu_control.GpuControl`), reads the
intensity from the run's own source (trace, live provider, or ``--ci``), and
has the runner put the ``dirty_cap`` block in the record before it is stored.
A failure inside a tick is logged once and capping stops with the limits
restored: the user's program never pays for it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.optimize.dirty_cap import CapCurve, DirtyCapController, dirty_threshold
from greenml.optimize.gpu_control import GpuControl

if TYPE_CHECKING:
    from greenml.measure.meter import Meter

log = logging.getLogger("greenml")
_LIVE_REFRESH_S = 300.0


@dataclass(frozen=True)
class CapRequest:
    """What ``--cap-when-dirty`` and its options asked for."""

    curve_path: Path
    dirty_above_g_per_kwh: float | None = None
    deadline: str | None = None  # ISO 8601 or +8h: the run must finish by then
    duration: str | None = None  # how long the run takes uncapped (90m)
    gpus: tuple[int, ...] | None = None


def read_curve(path: Path) -> CapCurve:
    """The job's curve: ``greenml optimize``'s summary JSON, or a list of profiles."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from exc
    return CapCurve.from_json(data, f"power-limit curve {path.name}")


def intensity_reader(source: Any, live: bool) -> Callable[[float], float]:
    """Unix time → g/kWh from an IntensitySource; a live provider is asked every 5 min."""
    cache: dict[str, float] = {}

    def at(now_s: float) -> float:
        if live and cache and now_s - cache["asked_s"] < _LIVE_REFRESH_S:
            return cache["value"]
        value = float(source.intensity(now_s, now_s + 1.0).series.value_at(now_s))
        cache.update(asked_s=now_s, value=value)
        return value

    return at


class DirtyCapRun:
    """One run's capping: ``tick`` wraps the runner's tick, ``attach`` adds the block."""

    def __init__(self, controller: DirtyCapController, control: GpuControl) -> None:
        self.controller = controller
        self.control = control
        self.block: dict[str, Any] | None = None
        self.failed: str | None = None

    def tick(self, inner: Callable[[Meter], None] | None) -> Callable[[Meter], None]:
        def tick(meter: Meter) -> None:
            if self.failed is None:
                try:
                    self.controller.tick(time.time(), _gpu_energy(meter))
                except Exception as exc:  # never the user's program's problem
                    self._stop(f"capping stopped: {exc}")
            if inner is not None:
                inner(meter)

        return tick

    def attach(self, options: Any) -> None:
        """Have the runner store the ``dirty_cap`` block with the record."""
        before = options.extra

        def extra() -> dict[str, Any]:
            blocks = before() if before is not None else {}
            return {**blocks, "dirty_cap": self.finish()}

        options.extra = extra

    def finish(self) -> dict[str, Any]:
        """Restore the limits (once) and give the block."""
        if self.block is None:
            self.block = self.controller.finish(time.time())
            if self.failed:
                self.block["note"] = self.failed
            self._restore()
        return self.block

    def _stop(self, why: str) -> None:
        log.warning("greenml: %s; the original power limits are restored", why)
        self.failed = why
        self._restore()

    def _restore(self) -> None:
        try:
            self.control.restore()
        finally:
            self.control.close()


def _gpu_energy(meter: Meter) -> float | None:
    spent = meter.peek_window("run")
    return spent.energy_of("gpu") if "gpu" in spent.components else None


def start_dirty_cap(
    request: CapRequest, accounting: Mapping[str, Any], *, nvml: Any | None = None,
    now_s: float | None = None,
) -> DirtyCapRun:  # fmt: skip
    """Check everything before the command starts: curve, GPUs, intensity, deadline."""
    from greenml.accounting.location import resolve_intensity_source
    from greenml.schedule.timeparse import parse_duration_s, parse_instant

    curve = read_curve(request.curve_path)
    now = time.time() if now_s is None else now_s
    source, said = resolve_intensity_source(
        region=accounting.get("region"), zone=accounting.get("zone"),
        country=accounting.get("country"), ci=accounting.get("ci"),
        trace=accounting.get("intensity_trace"), provider=accounting.get("intensity_provider"),
    )  # fmt: skip
    if source is None:
        raise ConfigError("--cap-when-dirty needs the grid's intensity: pass --intensity-trace, "
                          "--zone/--region with --intensity-provider, or --ci")  # fmt: skip
    slack_s = None
    horizon_s = now + 24 * 3600.0
    if request.deadline is not None:
        if request.duration is None:
            raise ConfigError("--cap-when-dirty --deadline needs --duration (the run uncapped)")
        horizon_s = parse_instant(request.deadline, "--deadline").timestamp()
        slack_s = horizon_s - now - parse_duration_s(request.duration, "--duration")
        if slack_s < 0:
            raise ConfigError("--deadline leaves no time to cap: the run alone takes longer")
    threshold = request.dirty_above_g_per_kwh
    if threshold is None:
        series = source.intensity(now, horizon_s).series
        threshold = dirty_threshold([float(v) for t, v in zip(series.times_s, series.values,
                                     strict=True) if now - 3600 <= t <= horizon_s])  # fmt: skip
    live = accounting.get("intensity_provider") not in (None, "static")
    control = GpuControl(request.gpus, nvml=nvml)
    try:
        control.check_permission()
    except BaseException:
        control.close()
        raise
    controller = DirtyCapController(
        limiter=control, curve=curve, intensity_at=intensity_reader(source, live),
        dirty_above_g_per_kwh=threshold, started_s=now, slack_s=slack_s,
        intensity_source=source.intensity(now, now + 1.0).provenance.source or said,
    )  # fmt: skip
    return DirtyCapRun(controller, control)
