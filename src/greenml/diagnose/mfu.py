"""Low model FLOPs utilization: the run's counted FLOP/s far below its GPUs' dense peak.

A training run at MFU ``m`` would do the same work in ``m / TARGET_MFU`` of the
time at ``TARGET_MFU``; with energy roughly proportional to time at the same
power, the energy at stake is the GPU energy × (1 − m / ``TARGET_MFU``). This is
an upper bound on what tuning (larger batches, fused kernels, mixed precision,
fewer host stalls) recovers, stated as such.
"""

from __future__ import annotations

from typing import Any

from greenml.diagnose.findings import Finding, severity_of
from greenml.measure.flops import LOW_MFU

TARGET_MFU = 0.40
"""A well-tuned large training run's MFU (PaLM reported 46 %; Chowdhery et al. 2022)."""


def mfu_finding(record: dict[str, Any]) -> Finding | None:
    """A finding when the run's ``flops`` block has an MFU below ``LOW_MFU``, else None."""
    block = record.get("flops") or {}
    mfu = block.get("mfu")
    if block.get("status") != "ok" or not isinstance(mfu, (int, float)) or mfu >= LOW_MFU:
        return None
    gpu = ((record.get("energy") or {}).get("components") or {}).get("gpu") or {}
    gpu_j = float(gpu.get("energy_j") or 0.0)
    share = max(0.0, 1.0 - float(mfu) / TARGET_MFU)
    at_stake = gpu_j * share
    return Finding(
        kind="low-mfu",
        severity=severity_of(share) if gpu_j > 0 else "info",
        title=f"Model FLOPs utilization {mfu:.1%}: most of the GPUs' arithmetic unused",
        evidence=(
            f"{block.get('flops', 0):.3g} FLOPs counted ({block.get('source')}) at "
            f"{block.get('flops_per_s', 0):.3g} FLOP/s against a dense peak of "
            f"{block.get('peak_flops_per_s', 0):.3g} FLOP/s ({block.get('peak_source')}); "
            f"precision {block.get('precision')} ({block.get('precision_source')})"
        ),
        recommendation=(
            "raise the batch size or sequence length, use mixed precision (bf16) and fused "
            "kernels (torch.compile, flash attention), and check the input pipeline; at "
            f"{TARGET_MFU:.0%} MFU the same work takes {float(mfu) / TARGET_MFU:.0%} of the time"
        ),
        energy_at_stake_j=at_stake,
        figures={
            "mfu": mfu, "target_mfu": TARGET_MFU, "gpu_energy_j": gpu_j,
            "share_at_stake": share, "basis": "energy ∝ time at the same power (an upper bound)",
        },
    )  # fmt: skip
