"""``greenml estimate`` against published training footprints, given each paper's inputs.

Each row names its publication, the inputs the paper gives (hardware, count,
time or FLOPs, power, PUE, intensity, idle energy, lifetime …), the figure it
publishes, and the tolerance the reproduction must meet (2 % unless the row
says why not: the papers round their inputs). ``tests/estimation/
test_published_footprints.py`` asserts every row; this script prints the ratio
greenml / published per row, for the closing note of issue 31.

Rows that need issue 31's inputs say so in ``needs``: P100/TPU v2/TPU v3 in the
hardware table, idle cluster energy, a measured energy total, the share of the
hardware lifetime in use.

Intensities the papers do not state (the Llama model cards) are derived from
the card's own total row and then applied to every other row: the check is that
one intensity reproduces all rows of the card, not that greenml knows Meta's
grid.

Usage::

    PYTHONPATH=src python benchmarks/published_footprints.py
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

LBS_PER_KG = 1 / 0.45359237
STRUBELL_G_PER_KWH = 0.954 / LBS_PER_KG * 1000  # 0.954 lbs CO2e/kWh (EPA 2018, US average)
STRUBELL_PUE = 1.58
LLAMA1_CI = 385.0  # Touvron et al. 2023, Table 15: US national average 0.385 kgCO2eq/kWh
TOL = 0.02


@dataclass(frozen=True)
class Row:
    """One published figure and the inputs that should reproduce it.

    Attributes:
        source: Publication, table or section.
        label: The model / run.
        kwargs: ``greenml.estimation.estimate`` arguments.
        figure: Which output is compared: ``energy_mwh``, ``it_energy_mwh``,
            ``co2_t``, ``embodied_t``, ``total_t`` (location + embodied) or
            ``wall_days``.
        published: The published value in that unit.
        tol: Relative tolerance.
        needs: Inputs added by issue 31 that the row depends on.
        footprint: Footprint arguments (lifetime, lifetime share).
    """

    source: str
    label: str
    kwargs: dict[str, Any]
    figure: str
    published: float
    tol: float = TOL
    needs: tuple[str, ...] = ()
    footprint: dict[str, Any] = field(default_factory=dict)


def _strubell(label: str, gpu: str, count: int, total_w: float, hours: float, kwh: float,
              lbs: float) -> list[Row]:  # fmt: skip
    """Strubell, Ganesh & McCallum, "Energy and Policy Considerations for Deep Learning in
    NLP", ACL 2019, Table 3: measured average power of the whole machine (CPU + DRAM + all
    GPUs), × hours × PUE 1.58; CO2e = 0.954 lbs/kWh. The machine's power is spread over
    its GPUs (``power_w`` per device)."""
    kw = {"gpu": gpu, "count": count, "hours": hours, "power_w": total_w / count,
          "pue": STRUBELL_PUE, "ci": STRUBELL_G_PER_KWH}  # fmt: skip
    src = "Strubell et al., ACL 2019, Table 3"
    needs = ("P100 in the hardware table",) if gpu == "P100" else ()
    energy = Row(src, f"{label} (MWh; kWh·PUE in the paper)", kw, "energy_mwh", kwh / 1000,
                 needs=needs)
    co2 = Row(src, f"{label} (t; lbs CO2e in the paper)", kw, "co2_t", lbs / LBS_PER_KG / 1000,
              needs=needs)
    return [energy, co2]


def _patterson(label: str, chips: int, days: float, watts: float, pue: float, kg_per_kwh: float,
               mwh: float, tco2: float, gpu: str = "TPU v3") -> list[Row]:  # fmt: skip
    """Patterson et al., "Carbon Emissions and Large Neural Network Training",
    arXiv:2104.10350 (2021), Table 4: processors × days × measured average system power
    per processor × PUE; × the data centre's net tCO2e/MWh."""
    kw = {"gpu": gpu, "count": chips, "hours": days * 24, "power_w": watts, "pue": pue,
          "ci": kg_per_kwh * 1000}  # fmt: skip
    src = "Patterson et al. 2021, Table 4"
    needs = ("TPU v3 in the hardware table",) if gpu == "TPU v3" else ()
    return [Row(src, f"{label} (MWh)", kw, "energy_mwh", mwh, needs=needs),
            Row(src, f"{label} (tCO2e)", kw, "co2_t", tco2, needs=needs)]


def _llama1(label: str, gpu_hours: float, mwh: float, tco2: float) -> list[Row]:
    """Touvron et al., "LLaMA: Open and Efficient Foundation Language Models",
    arXiv:2302.13971 (2023), Table 15: GPU-hours × 400 W (A100-80GB) × PUE 1.1, US
    average 0.385 kgCO2eq/kWh. OPT and BLOOM rows are the authors' recomputation."""
    kw = {"gpu": "A100-80GB", "hours": gpu_hours, "pue": 1.1, "ci": LLAMA1_CI}
    src = "Touvron et al. 2023 (LLaMA), Table 15"
    return [Row(src, f"{label} (MWh)", kw, "energy_mwh", mwh),
            Row(src, f"{label} (tCO2eq)", kw, "co2_t", tco2)]


def _card(source: str, rows: list[tuple[str, float, float, float]],
          total: tuple[float, float]) -> list[Row]:  # fmt: skip
    """A Llama model card: GPU-hours, TDP W and tCO2eq (location-based) per model. The card
    states no intensity: the one implied by its total (tCO2eq ÷ Σ hours × W) is used."""
    energy_kwh = sum(h * w / 1000 for _, h, w, _ in rows)
    ci = total[1] * 1e6 / energy_kwh
    assert abs(sum(h for _, h, _, _ in rows) / total[0] - 1) < 0.01, "card rows ≠ total hours"
    return [Row(f"{source} (implied {ci:.1f} g/kWh from the total)", f"{label} (tCO2eq)",
                {"gpu": "H100-80GB" if w == 700 else "A100-80GB", "hours": h, "power_w": w,
                 "ci": ci}, "co2_t", t) for label, h, w, t in rows]  # fmt: skip


BLOOM_SRC = ("Luccioni, Viguier & Ligozat, 'Estimating the Carbon Footprint of BLOOM', "
             "arXiv:2211.02001 (2022), JMLR 24(253) 2023, Tables 2-4")  # fmt: skip
BLOOM_GPU_HOURS = 1_082_990
BLOOM_LIFE = {"lifetime_years": 6.0, "lifetime_use": 0.85}
BLOOM_NEEDS = ("idle cluster energy", "share of lifetime in use")

ROWS: list[Row] = [
    # BLOOM: 1,082,990 A100-hours at 400 W TDP = 433,196 kWh dynamic; 256,646 kWh idle;
    # French grid 57 gCO2eq/kWh; embodied 150 kg per A100 + 2,500 kg per 8-GPU node over
    # 6 years at 85 % use.
    Row(BLOOM_SRC, "BLOOM dynamic energy (MWh)", {"gpu": "A100", "hours": BLOOM_GPU_HOURS},
        "it_energy_mwh", 433.196),
    Row(BLOOM_SRC, "BLOOM dynamic CO2eq (t)", {"gpu": "A100", "hours": BLOOM_GPU_HOURS,
                                              "ci": 57.0}, "co2_t", 24.69),
    Row(BLOOM_SRC, "BLOOM dynamic + idle CO2eq (t)",
        {"gpu": "A100", "hours": BLOOM_GPU_HOURS, "ci": 57.0, "idle_kwh": 256_646},
        "co2_t", 24.69 + 14.6, needs=("idle cluster energy",)),
    Row(BLOOM_SRC, "BLOOM embodied (t)", {"gpu": "A100", "hours": BLOOM_GPU_HOURS},
        "embodied_t", 11.2, needs=("share of lifetime in use",), footprint=BLOOM_LIFE),
    Row(BLOOM_SRC, "BLOOM total (t), device-hours", {"gpu": "A100", "hours": BLOOM_GPU_HOURS,
        "ci": 57.0, "idle_kwh": 256_646}, "total_t", 50.5, needs=BLOOM_NEEDS,
        footprint=BLOOM_LIFE),
    Row(BLOOM_SRC, "BLOOM total (t), measured energy", {"energy_kwh": 433_196, "gpu": "A100",
        "hours": BLOOM_GPU_HOURS, "ci": 57.0, "idle_kwh": 256_646}, "total_t", 50.5,
        needs=("a measured energy total", *BLOOM_NEEDS), footprint=BLOOM_LIFE),
    *_llama1("LLaMA-7B", 82_432, 36, 14),
    *_llama1("LLaMA-13B", 135_168, 59, 23),
    *_llama1("LLaMA-33B", 530_432, 233, 90),
    *_llama1("LLaMA-65B", 1_022_362, 449, 173),
    *_llama1("OPT-175B", 809_472, 356, 137),
    *_llama1("BLOOM-175B", 1_082_880, 475, 183),
    *_strubell("Transformer base", "P100", 8, 1415.78, 12, 27, 26),
    *_strubell("Transformer big", "P100", 8, 1515.43, 84, 201, 192),
    *_strubell("ELMo", "P100", 3, 517.66, 336, 275, 262),
    *_strubell("BERT base", "V100", 64, 12_041.51, 79, 1507, 1438),
    *_strubell("NAS", "P100", 8, 1515.43, 274_120, 656_347, 626_155),
    *_patterson("T5", 512, 20, 310, 1.12, 0.545, 85.7, 46.7),
    *_patterson("Meena", 1024, 30, 289, 1.09, 0.415, 232, 96.4),
    *_patterson("GShard-600B", 1024, 3.1, 288, 1.09, 0.177, 24.1, 4.3),
    *_patterson("Switch Transformer", 1024, 27, 245, 1.10, 0.330, 179, 59.1),
    *_patterson("GPT-3", 10_000, 14.8, 330, 1.10, 0.429, 1287, 552, gpu="V100"),
    # LaMDA (Thoppilan et al., arXiv:2201.08239, 2022, section 10): 3.55e23 FLOPs on 1024
    # TPU v3 chips at 56.5 % of peak → 57.7 days. The time is the row (TPU v3's 123
    # TFLOPS bf16 peak); the paper's energy rests on power figures it does not give.
    Row("Thoppilan et al. 2022 (LaMDA), section 10", "LaMDA pre-training (days)",
        {"gpu": "TPU v3", "count": 1024, "flops": 3.55e23, "mfu": 0.565,
         "precision": "bf16"}, "wall_days", 57.7, needs=("TPU v3 in the hardware table",)),
    *_card("Llama 2 model card / Touvron et al. 2023, Table 2",
           [("Llama 2 7B", 184_320, 400, 31.22), ("Llama 2 13B", 368_640, 400, 62.44),
            ("Llama 2 34B", 1_038_336, 350, 153.90), ("Llama 2 70B", 1_720_320, 400, 291.42)],
           (3_311_616, 539.00)),
    *_card("Llama 3 model card (Meta, 2024)",
           [("Llama 3 8B", 1.3e6, 700, 390), ("Llama 3 70B", 6.4e6, 700, 1900)],
           (7.7e6, 2290)),
    *_card("Llama 3.1 model card (Meta, 2024)",
           [("Llama 3.1 8B", 1.46e6, 700, 420), ("Llama 3.1 70B", 7.0e6, 700, 2040),
            ("Llama 3.1 405B", 30.84e6, 700, 8930)], (39.3e6, 11_390)),
]


def _figure(row: Row) -> float:
    from greenml.accounting.footprint import prepare_footprint
    from greenml.estimation.estimator import estimate

    footprint = prepare_footprint(**row.footprint) if row.footprint else None
    e = estimate(**row.kwargs, footprint=footprint)
    embodied_kg = ((e.footprint or {}).get("embodied") or {}).get("kg")
    pick: dict[str, Callable[[], float | None]] = {
        "energy_mwh": lambda: e.energy_mwh,
        "it_energy_mwh": lambda: e.it_energy_mwh,
        "co2_t": lambda: e.co2_t,
        "embodied_t": lambda: None if embodied_kg is None else embodied_kg / 1000,
        "total_t": lambda: _total(e.co2_t, embodied_kg),
        "wall_days": lambda: e.wall_hours / 24,
    }
    value = pick[row.figure]()
    if value is None:
        raise ValueError(f"{row.label}: greenml gives no {row.figure}")
    return value


def _total(co2_t: float | None, embodied_kg: float | None) -> float | None:
    return None if co2_t is None or embodied_kg is None else co2_t + embodied_kg / 1000


def ratio(row: Row) -> float:
    """greenml's figure ÷ the published one."""
    return _figure(row) / row.published


def main() -> None:
    width = max(len(r.label) for r in ROWS)
    print(f"{'row':<{width}}  {'greenml':>12}  {'published':>12}  ratio   tol  needs / source")
    worst = 0.0
    for row in ROWS:
        value = _figure(row)
        r = value / row.published
        worst = max(worst, abs(r - 1))
        ok = "ok" if abs(r - 1) <= row.tol else "OFF"
        needs = f"[{', '.join(row.needs)}] " if row.needs else ""
        print(f"{row.label:<{width}}  {value:>12.5g}  {row.published:>12.5g}  {r:.4f}  "
              f"{row.tol:.0%} {ok}  {needs}{row.source}")  # fmt: skip
    print(f"{len(ROWS)} rows; largest deviation {worst:.2%}")


if __name__ == "__main__":
    main()
