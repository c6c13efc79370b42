"""What NVIDIA's sensors really give, per architecture: cited uncertainty bands and scopes.

One flat "NVML ±5 %" hid three things this table states per GPU family:

- **the power reading's coverage.** On A100 and H100 boards ``nvmlDeviceGetPowerUsage``
  averages only part of the time: about 25 % of the runtime is covered (Yang, Adamek &
  Armour, "Part-time Power Measurements: nvidia-smi's Lack of Attention", SC'24), so
  power *integrated* from those readings misses bursts. greenml measured 10-12 % for
  1-s windows on an H100 against its counter (docs/validation.md): ±12 % for those
  families when no counter is read. Other families keep the documented accuracy of
  the reading (nvidia-smi: "accurate to within ±5 W", about ±5 % at training loads);
- **the energy counter's update period.** ``nvmlDeviceGetTotalEnergyConsumption``
  moves about every 100 ms (Zeus documentation; greenml measured a median of 100.2 ms
  on an H100), so a window shorter than about ten updates carries the counter's steps
  as extra uncertainty and one shorter than a single update says so in its note;
- **the counter's scope.** On Grace Hopper and Grace Blackwell superchips (GH200, GB200)
  the energy counter covers the whole module — the Grace CPU and its memory too
  (ml-energy/zeus issue #172): a GPU figure there is the module's, and the CPU must not
  be counted again beside it.

The counter accumulates the same sensor as the power reading, so its band is the
reading's accuracy (±5 %), on every family that has one (Volta and newer).
"""

from __future__ import annotations

from dataclasses import dataclass

COUNTER_UPDATE_S = 0.1
"""How often an NVIDIA energy counter moves (Zeus; median 100.2 ms measured on an H100)."""

YANG_SC24 = (
    "Yang, Adamek & Armour, 'Part-time Power Measurements: nvidia-smi's Lack of Attention', "
    "SC'24: the power reading covers ~25 % of the runtime on A100/H100"
)
NVIDIA_SMI = "nvidia-smi documentation: power draw accurate to within ±5 W (≈ ±5 % at load)"
ZEUS_172 = "ml-energy/zeus #172: the GH200 energy counter covers the whole module"
MODULE_NOTE = ("Grace superchip: the energy counter covers the whole module (Grace CPU, its "
               "memory and the GPU); do not add the CPU beside it")  # fmt: skip


@dataclass(frozen=True)
class Band:
    """The uncertainty and scope of NVML's energy for one GPU family.

    Attributes:
        families: Name fragments that select the row (upper case, first match wins).
        counter_rel: Band of the energy counter.
        integrated_rel: Band of power sampled and integrated (no counter read).
        scope: ``board`` or ``module`` (the counter covers CPU and memory too).
        source: Where the figures come from.
    """

    families: tuple[str, ...]
    counter_rel: float
    integrated_rel: float
    scope: str
    source: str


BANDS: tuple[Band, ...] = (
    Band(("GH200", "GB200", "GRACE"), 0.05, 0.12, "module",
         f"{ZEUS_172}; {YANG_SC24}; {NVIDIA_SMI}"),
    Band(("A100", "A800", "A30", "H100", "H800", "H200", "H20", "B200", "B100"), 0.05, 0.12,
         "board", f"{YANG_SC24}; greenml H100 counter vs 10 Hz integration: 10-12 % for 1-s "
         f"windows (docs/validation.md); {NVIDIA_SMI}"),
    Band(("V100", "T4", "TITAN V", "RTX 20", "QUADRO RTX", "A10", "A40", "L4", "L40",
          "RTX 30", "RTX 40", "RTX 50", "RTX A"), 0.05, 0.05, "board",
         f"{NVIDIA_SMI}; not measured part-time by Yang et al. SC'24"),
)  # fmt: skip

DEFAULT_BAND = Band((), 0.05, 0.05, "board", f"{NVIDIA_SMI} (family not in greenml's table)")


def band_for(name: str) -> Band:
    """The band of the GPU named ``name`` (NVML's name, e.g. ``NVIDIA H100 80GB HBM3``)."""
    upper = name.upper()
    return next((b for b in BANDS if any(f in upper for f in b.families)), DEFAULT_BAND)


def short_window_note(duration_s: float, period_s: float = COUNTER_UPDATE_S) -> str:
    """A window's note when it is shorter than one counter update; empty otherwise."""
    if duration_s >= period_s:
        return ""
    return (
        f"window {duration_s * 1000:.0f} ms is shorter than the energy counter's "
        f"~{period_s * 1000:.0f} ms update period: below what the counter resolves"
    )
