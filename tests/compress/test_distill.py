"""The distillation loss, the default student and the training-data shapes."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from greenml.compress import CompressOptions
from greenml.compress.distill import narrower_copy
from greenml.compress.train import batches, kd_loss
from greenml.errors import ConfigError, NotApplicable


def test_kd_loss_mixes_soft_and_hard_terms() -> None:
    torch.manual_seed(0)
    student, teacher = torch.randn(8, 5), torch.randn(8, 5)
    labels = torch.randint(0, 5, (8,))
    ce = nn.functional.cross_entropy(student, labels)
    assert kd_loss(student, teacher, labels, 4.0, 0.0) == pytest.approx(float(ce))
    assert float(kd_loss(teacher, teacher, labels, 4.0, 1.0)) == pytest.approx(0.0, abs=1e-6)
    t = 2.0
    kl = nn.functional.kl_div(
        nn.functional.log_softmax(student / t, dim=-1),
        nn.functional.softmax(teacher / t, dim=-1),
        reduction="batchmean",
    )
    mixed = kd_loss(student, teacher, labels, t, 0.25)
    assert float(mixed) == pytest.approx(0.25 * t * t * float(kl) + 0.75 * float(ce))


def test_the_default_student_is_a_narrower_mlp() -> None:
    teacher = nn.Sequential(nn.Linear(10, 40), nn.BatchNorm1d(40), nn.ReLU(), nn.Linear(40, 30),
                            nn.ReLU(), nn.Dropout(0.1), nn.Linear(30, 3))  # fmt: skip
    student = narrower_copy(teacher, CompressOptions(student_width=0.5))
    widths = [(m.in_features, m.out_features) for m in student if isinstance(m, nn.Linear)]
    assert widths == [(10, 20), (20, 15), (15, 3)]
    assert student[1].num_features == 20
    assert student(torch.randn(4, 10)).shape == (4, 3)


def test_no_default_student_for_other_models() -> None:
    with pytest.raises(NotApplicable, match=r"nn\.Sequential"):
        narrower_copy(nn.Linear(3, 3), CompressOptions())
    with pytest.raises(NotApplicable, match="no hidden layer"):
        narrower_copy(nn.Sequential(nn.Linear(3, 3)), CompressOptions())
    with pytest.raises(NotApplicable, match="Conv1d"):
        narrower_copy(nn.Sequential(nn.Conv1d(1, 1, 1), nn.Linear(3, 3), nn.Linear(3, 2)),
                      CompressOptions())  # fmt: skip


def test_tensor_pairs_are_shuffled_into_mini_batches() -> None:
    x, y = torch.arange(10.0).unsqueeze(1), torch.arange(10)
    got = list(batches((x, y), CompressOptions(batch_size=4), epoch=0))
    assert [len(b[1]) for b in got] == [4, 4, 2]
    seen = torch.cat([b[1] for b in got])
    assert sorted(seen.tolist()) == list(range(10))
    assert all(bool((bx.squeeze(1) == by.float()).all()) for bx, by in got)


def test_an_iterable_of_batches_is_used_as_is() -> None:
    loader = [[torch.zeros(2, 3), torch.zeros(2, dtype=torch.long)]] * 3
    assert len(list(batches(loader, CompressOptions(), epoch=0))) == 3
    with pytest.raises(ConfigError, match="train_data"):
        list(batches(42, CompressOptions(), epoch=0))
    with pytest.raises(ConfigError, match="pair"):
        list(batches([torch.zeros(3)], CompressOptions(), epoch=0))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rounds": 0},
        {"alpha": 1.5},
        {"prune_ratio": 1.0},
        {"temperature": 0.0},
        {"min_window_s": math.inf},
        {"threads": 0},
    ],
)
def test_bad_options_are_config_errors(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        CompressOptions(**kwargs)  # type: ignore[arg-type]
