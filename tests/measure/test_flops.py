"""Counted FLOPs against hand-derived counts (forward and backward), sampling, MFU, failures."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
nn = torch.nn

from greenml.errors import ConfigError  # noqa: E402
from greenml.measure.flops import (  # noqa: E402
    FlopSampler,
    count_flops,
    flops_block,
    flops_from_tags,
)


def linear_fwd(batch: int, n_in: int, n_out: int) -> int:
    """A (batch × n_in) @ (n_in × n_out) product: one multiply and one add per term."""
    return 2 * batch * n_in * n_out


def forward_backward(model: nn.Module, x: torch.Tensor) -> None:
    model(x).sum().backward()


def test_mlp_forward_and_backward_within_2_percent() -> None:
    torch.manual_seed(0)
    b, d_in, hidden, d_out = 32, 64, 128, 10
    model = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, d_out))
    x = torch.randn(b, d_in, requires_grad=True)
    fwd = linear_fwd(b, d_in, hidden) + linear_fwd(b, hidden, d_out)
    # backward: for each product, the gradient of the input and of the weight, each as
    # costly as the forward product
    assert count_flops(lambda: model(x)) == pytest.approx(fwd, rel=0.02)
    assert count_flops(lambda: forward_backward(model, x)) == pytest.approx(3 * fwd, rel=0.02)


def test_conv_net_forward_and_backward_within_2_percent() -> None:
    b, c_in, c_mid, c_out, size, k = 4, 3, 16, 32, 16, 3
    model = nn.Sequential(
        nn.Conv2d(c_in, c_mid, k, padding=1), nn.ReLU(), nn.Conv2d(c_mid, c_out, k, padding=1)
    )
    x = torch.randn(b, c_in, size, size, requires_grad=True)
    # each output element of a convolution: c_in × k × k multiply-adds
    fwd = 2 * b * size * size * (c_mid * c_in * k * k + c_out * c_mid * k * k)
    assert count_flops(lambda: model(x)) == pytest.approx(fwd, rel=0.02)
    assert count_flops(lambda: forward_backward(model, x)) == pytest.approx(3 * fwd, rel=0.02)


class Block(nn.Module):
    """A pre-norm transformer block: multi-head self-attention and a 4× MLP."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        attn = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, s, d))
        return x + self.down(torch.relu(self.up(self.norm2(x))))


def test_transformer_block_forward_and_backward_within_2_percent() -> None:
    b, s, d, heads = 2, 16, 64, 4
    block = Block(d, heads)
    x = torch.randn(b, s, d, requires_grad=True)
    tokens = b * s
    projections = linear_fwd(tokens, d, 3 * d) + linear_fwd(tokens, d, d)
    mlp = linear_fwd(tokens, d, 4 * d) + linear_fwd(tokens, 4 * d, d)
    attention = 2 * (2 * b * heads * s * s * (d // heads))  # Q·Kᵀ and A·V
    fwd = projections + mlp + attention
    assert count_flops(lambda: block(x)) == pytest.approx(fwd, rel=0.02)
    assert count_flops(lambda: forward_backward(block, x)) == pytest.approx(3 * fwd, rel=0.02)


def test_sampler_counts_only_sampled_steps_and_extrapolates() -> None:
    model = nn.Linear(8, 4)
    x = torch.randn(5, 8)
    sampler = FlopSampler(every=4, precision="fp32")
    counted = []
    for _ in range(10):
        counted.append(sampler.should_count())
        sampler.maybe_count(lambda: model(x), samples=5)
    assert counted == [True, False, False, False, True, False, False, False, True, False]
    totals = sampler.totals()
    assert totals["sampled_steps"] == 3 and totals["steps"] == 10
    assert totals["flops"] == pytest.approx(10 * linear_fwd(5, 8, 4))
    assert totals["samples"] == 50 and totals["spread_rel"] == 0.0
    assert totals["windows"]["step"]["flops_per_step"] == linear_fwd(5, 8, 4)


def test_a_failing_formula_warns_marks_unavailable_and_the_step_still_runs(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch.utils.flop_counter as fc

    def broken(*args: object, **kwargs: object) -> int:
        raise RuntimeError("shape formula broke")

    registry = dict(fc.flop_registry)
    registry[torch.ops.aten.mm] = broken
    monkeypatch.setattr(fc, "flop_registry", registry)
    model = nn.Linear(8, 4, bias=False)
    x = torch.randn(5, 8)
    sampler = FlopSampler(every=1)
    with caplog.at_level(logging.WARNING, logger="greenml"):
        out = sampler.maybe_count(lambda: model(x))
    assert out.shape == (5, 4)  # the step ran
    totals = sampler.totals()
    assert totals["flops"] is None and totals["status"] == "unavailable"
    assert "aten.mm" in totals["reason"] and "FLOPs unavailable" in caplog.text
    block = flops_block(totals, duration_s=1.0, energy_j=10.0, gpus=["A100"])
    assert block["status"] == "unavailable" and block["flops"] is None
    with pytest.raises(ConfigError, match=r"aten\.mm"):
        count_flops(lambda: model(x))


def test_a_failing_step_propagates_and_leaves_no_counter_behind() -> None:
    sampler = FlopSampler(every=1)

    def step() -> None:
        raise ValueError("the user's bug")

    with pytest.raises(ValueError, match="the user's bug"):
        sampler.maybe_count(step)
    assert count_flops(lambda: nn.Linear(2, 2)(torch.randn(1, 2))) == 8  # a fresh counter works


def test_mfu_against_the_dense_peak_with_its_source() -> None:
    counts = {"flops": 3.12e15, "steps": 100, "sampled_steps": 2, "samples": 6400,
              "precision": "bf16", "precision_source": "given"}  # fmt: skip
    block = flops_block(counts, duration_s=100.0, energy_j=4.0e4, gpus=["NVIDIA A100-SXM4-80GB"])
    assert block["flops_per_s"] == pytest.approx(3.12e13)
    assert block["peak_flops_per_s"] == pytest.approx(312e12)
    assert block["mfu"] == pytest.approx(0.1)
    assert "A100" in block["peak_source"] and "dense bf16" in block["peak_source"]
    assert block["flops_per_j"] == pytest.approx(3.12e15 / 4e4)
    assert block["j_per_sample"] == pytest.approx(4e4 / 6400)
    cpu_only = flops_block(counts, duration_s=100.0, energy_j=1.0, gpus=[])
    assert cpu_only["mfu"] is None and "no GPU" in cpu_only["mfu_reason"]


@pytest.mark.parametrize("every", [0, -3, 1.5, True])
def test_bad_sampling_interval(every: object) -> None:
    with pytest.raises(ConfigError, match="every"):
        FlopSampler(every=every)  # type: ignore[arg-type]


@given(
    tags=st.dictionaries(
        st.sampled_from(["flops", "samples", "precision", "other"]),
        st.one_of(st.text(max_size=12), st.floats().map(str), st.integers().map(str)),
        max_size=4,
    ),
    duration=st.floats(0, 1e6),
    energy=st.floats(0, 1e12),
)
def test_tags_give_a_labelled_figure_or_an_unavailable_one(
    tags: dict[str, str], duration: float, energy: float
) -> None:
    counts = flops_from_tags(tags)
    if "flops" not in tags:
        assert counts is None
        return
    assert counts is not None
    block = flops_block(counts, duration_s=duration, energy_j=energy, gpus=["H100"],
                        method="given", source=counts["source"])  # fmt: skip
    if block["status"] == "ok":
        assert block["flops"] >= 0 and block["method"] == "given"
        assert block["mfu"] is None or block["mfu"] >= 0
    else:
        assert block["flops"] is None and block["reason"]


def test_ranks_are_summed_and_a_missing_rank_makes_the_job_unavailable() -> None:
    from greenml.measure.flops import merge_ranks

    rank = {"flops": 1e15, "steps": 10, "sampled_steps": 1, "samples": 320,
            "precision": "bf16", "windows": {"step": {"flops_per_step": 1e14}}}  # fmt: skip
    job = merge_ranks({0: rank, 1: {**rank, "samples": 300}})
    assert job["flops"] == 2e15 and job["samples"] == 620 and "2 ranks" in job["source"]
    assert "windows" not in job
    block = flops_block(job, duration_s=10.0, energy_j=1e6, gpus=["H100", "H100"])
    assert block["peak_flops_per_s"] == pytest.approx(2 * 989.4e12, rel=0.01)
    broken = merge_ranks({0: rank, 3: {**rank, "flops": None}})
    assert broken["flops"] is None and "rank(s) 3" in broken["reason"]
