"""Loading Zeus-format traces: the job table, filters, skipped pairs, bad files."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from greenml.errors import ConfigError
from greenml.optimize.zeus_trace import ZEUS_JOBS, load_workload, workloads_in

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "zeus_traces"
TRAIN_HEADER = "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch"
POWER_HEADER = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power"


def write_traces(
    tmp_path: Path,
    paths: dict[int, list[float]],
    epochs: dict[tuple[int, int], tuple[float, float]],
    workload: str = "cifar100/shufflenetv2",
    optimizer: str = "adadelta",
    target: float = 0.6,
) -> tuple[Path, Path]:
    """A train trace (target epoch per run) and a power trace (time, power per pair)."""
    dataset, network = workload.split("/")
    train = [TRAIN_HEADER]
    for size, runs in paths.items():
        for i, epoch in enumerate(runs, start=1):
            train.append(f"{dataset},{network},{size},{optimizer},1e-1,{i},{target},{epoch}")
            # another target metric of the same run: must be ignored
            train.append(f"{dataset},{network},{size},{optimizer},1e-1,{i},0.05,1")
    power = [POWER_HEADER]
    for (size, limit), (time_s, power_w) in epochs.items():
        power.append(f"{dataset},{network},{size},{optimizer},{limit},{time_s},{power_w}")
        # the same pair with another optimizer: must be ignored
        power.append(f"{dataset},{network},{size},adam,{limit},1.0,1.0")
    (tmp_path / "train.csv").write_text("\n".join(train) + "\n")
    (tmp_path / "power.csv").write_text("\n".join(power) + "\n")
    return tmp_path / "train.csv", tmp_path / "power.csv"


def test_keeps_the_jobs_target_optimizer_and_max_epochs(tmp_path: Path) -> None:
    train, power = write_traces(
        tmp_path,
        {512: [40, 42], 1024: [70, math.nan, 120]},
        {(512, 100): (10.0, 90.0), (512, 150): (8.0, 120.0), (1024, 100): (6.0, 95.0)},
    )
    trace = load_workload(train, power, "cifar100/shufflenetv2")
    assert trace.batch_sizes == (512, 1024)
    assert trace.power_limits == (100.0, 150.0)
    # nan and 120 > max_epochs (100) both mean "not reached"
    assert trace.epochs == {512: (40, 42), 1024: (70, None, None)}
    assert trace.profiles[(512, 150)].energy_j == pytest.approx(960.0)
    assert trace.max_power_w == 150.0
    assert trace.limits_for(512) == [150.0, 100.0]
    assert trace.default_batch_size == 1024


def test_missing_pairs_are_skipped_and_reported(tmp_path: Path) -> None:
    train, power = write_traces(
        tmp_path,
        {256: [30], 512: [40], 4096: [math.nan]},
        {(8, 100): (1.0, 50.0), (256, 100): (9.0, 90.0), (512, 100): (7.0, 95.0)}
        | {(512, 150): (6.0, 120.0)},
        workload="cifar100/shufflenetv2",
    )
    trace = load_workload(train, power, "cifar100/shufflenetv2", default_batch_size=512)
    reasons = {(s.batch_size, s.power_limit): s.reason for s in trace.skipped}
    assert reasons == {
        (4096, None): "in the train trace only (no power profile)",
        (8, None): "in the power trace only (no training path)",
        (256, 150.0): "power limit missing from the power trace",
    }
    assert trace.batch_sizes == (256, 512)
    assert (256, 150.0) not in trace.profiles
    assert trace.limits_for(256) == [100.0]


def test_unknown_workload_lists_those_present(tmp_path: Path) -> None:
    train, power = write_traces(tmp_path, {512: [40]}, {(512, 100): (10.0, 90.0)})
    with pytest.raises(ConfigError, match=r"present: cifar100/shufflenetv2$"):
        load_workload(train, power, "imagenet/resnet50")
    assert workloads_in(train, power) == ["cifar100/shufflenetv2"]


def test_a_workload_without_a_job_definition_is_refused(tmp_path: Path) -> None:
    train, power = write_traces(tmp_path, {8: [3]}, {(8, 100): (1.0, 50.0)}, workload="mnist/lenet")
    with pytest.raises(ConfigError, match=r"no job definition .* mnist/lenet"):
        load_workload(train, power, "mnist/lenet")


def test_the_default_batch_size_is_capped_then_must_exist(tmp_path: Path) -> None:
    sizes = {64: [9], 128: [8], 192: [10]}
    profiles = {(b, 100): (10.0, 90.0) for b in sizes}
    train, power = write_traces(tmp_path, sizes, profiles, "librispeech/deepspeech2", "adamw", 40)
    assert load_workload(train, power, "librispeech/deepspeech2").default_batch_size == 192
    with pytest.raises(ConfigError, match=r"default batch size 100 .* 64, 128, 192"):
        load_workload(train, power, "librispeech/deepspeech2", default_batch_size=100)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dataset,network\ncifar100,shufflenetv2\n", "lacks column"),
        (f"{POWER_HEADER}\ncifar100,shufflenetv2,512,adadelta,100,fast,90\n", "line 2: time_per"),
        (f"{POWER_HEADER}\ncifar100,shufflenetv2,512,adadelta,100,0,90\n", "must be positive"),
    ],
)
def test_malformed_power_traces_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    train, power = write_traces(tmp_path, {512: [40]}, {(512, 100): (10.0, 90.0)})
    power.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_workload(train, power, "cifar100/shufflenetv2")


def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    train, _ = write_traces(tmp_path, {512: [40]}, {(512, 100): (10.0, 90.0)})
    with pytest.raises(ConfigError, match="cannot read the power trace"):
        load_workload(train, tmp_path / "absent.csv", "cifar100/shufflenetv2")


@pytest.mark.skipif(not SHARED.exists(), reason="shared Zeus traces not on this machine")
def test_every_job_of_the_shared_traces_loads() -> None:
    train, power = SHARED / "summary_train.csv", SHARED / "summary_power_v100.csv"
    assert workloads_in(train, power) == sorted(ZEUS_JOBS)
    traces = {w: load_workload(train, power, w) for w in ZEUS_JOBS}
    imagenet = traces["imagenet/resnet50"]
    assert imagenet.batch_sizes == (64, 128, 192, 256, 360)
    assert imagenet.epochs[64] == (None, None, None, None)  # never reaches 0.65
    assert {s.batch_size for s in imagenet.skipped} == {8, 16, 32, 512, 1024}
    assert traces["librispeech/deepspeech2"].default_batch_size == 192  # 256 capped by the trace
    for trace in traces.values():
        assert trace.power_limits == (100, 125, 150, 175, 200, 225, 250)
        assert len(trace.profiles) == len(trace.batch_sizes) * 7
