"""Slurm in the cluster's zone, and every piece of a plan handed over (Slurm and SkyPilot)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from greenml.cli import main
from greenml.errors import ConfigError
from greenml.schedule.emit import ClusterZone, Piece, slurm_header, slurm_script

UTC = timezone.utc
TRACE = Path(__file__).parents[2].parent / "shared/data/carbon_intensity/DE-LU_2023_hourly.csv"


def _sbatch(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"#SBATCH --{name}="))


@pytest.mark.parametrize(
    ("zone", "before", "after"),
    [
        # 2026-03-08: New York moves from EST (UTC-5) to EDT (UTC-4); UTC does not move.
        ("UTC", "2026-03-07T12:00:00", "2026-03-09T12:00:00"),
        ("America/New_York", "2026-03-07T07:00:00", "2026-03-09T08:00:00"),
    ],
)
def test_begin_is_the_cluster_local_time_on_both_sides_of_dst(
    zone: str, before: str, after: str
) -> None:
    cluster = ClusterZone.named(zone)
    for day, expected in ((7, before), (9, after)):
        begin = datetime(2026, 3, day, 12, 0, tzinfo=UTC)
        text = slurm_header(job_name="j", begin=begin, duration_s=3600, zone=cluster)
        assert _sbatch(text, "begin") == f"#SBATCH --begin={expected}"
        assert f"2026-03-{day:02d}T12:00Z" in text.splitlines()[1]
        assert f"in {zone} (the cluster's zone, from --cluster-tz)" in text


def test_the_deadline_follows_the_zone_too() -> None:
    begin = datetime(2026, 3, 7, 12, 0, tzinfo=UTC)
    zone = ClusterZone.named("America/New_York")
    deadline = begin + timedelta(days=2)
    text = slurm_header(job_name="j", begin=begin, duration_s=3600, deadline=deadline, zone=zone)
    assert _sbatch(text, "deadline") == "#SBATCH --deadline=2026-03-09T08:00:00"


def test_a_wall_time_that_happens_twice_is_flagged() -> None:
    # 2026-11-01 01:30 happens twice in New York (EDT, then EST): 05:30Z and 06:30Z.
    zone = ClusterZone.named("America/New_York")
    for hour in (5, 6):
        text = slurm_header(job_name="j", begin=datetime(2026, 11, 1, hour, 30, tzinfo=UTC),
                            duration_s=60, zone=zone)  # fmt: skip
        assert _sbatch(text, "begin") == "#SBATCH --begin=2026-11-01T01:30:00"
        assert "happens twice" in text
    plain = slurm_header(job_name="j", begin=datetime(2026, 11, 1, 8, 30, tzinfo=UTC),
                         duration_s=60, zone=zone)  # fmt: skip
    assert "happens twice" not in plain


def test_default_zone_is_this_machine_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    text = slurm_header(job_name="j", begin=datetime(2026, 1, 1, 0, 0, tzinfo=UTC), duration_s=60)
    assert _sbatch(text, "begin") == "#SBATCH --begin=2026-01-01T09:00:00"
    assert "Asia/Tokyo (this machine's zone; give --cluster-tz" in text


def test_an_unknown_zone_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a time zone name"):
        ClusterZone.named("Mars/Olympus_Mons")


PIECES = [
    Piece(datetime(2026, 3, 7, 22, 0, tzinfo=UTC), 4 * 3600.0),
    Piece(datetime(2026, 3, 9, 1, 30, tzinfo=UTC), 90 * 60.0),
    Piece(datetime(2026, 3, 10, 12, 0, tzinfo=UTC), 26 * 3600.0 + 60),
]
EXPECTED = [  # America/New_York: the first piece is in EST, the others in EDT
    ("2026-03-07T17:00:00", "0-04:00:00"),
    ("2026-03-08T21:30:00", "0-01:30:00"),
    ("2026-03-10T08:00:00", "1-02:01:00"),
]


def _fake_sbatch(folder: Path) -> Path:
    """An ``sbatch`` that records its arguments and script and prints a job id."""
    log = folder / "calls"
    log.mkdir()
    script = folder / "sbatch"
    script.write_text(
        "#!/bin/bash\n"
        f"n=$(ls {log}/*.args 2>/dev/null | wc -l); n=$((n + 1))\n"
        f'printf "%s\\n" "$@" > {log}/$n.args\n'
        f"cat > {log}/$n.script\n"
        'echo "$((1000 + n));cluster0"\n',
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return log


def test_several_pieces_submit_one_chained_job_each(tmp_path: Path) -> None:
    text = slurm_script(job_name="train", run="python train.py --resume", pieces=PIECES[::-1],
                        zone=ClusterZone.named("America/New_York"))  # fmt: skip
    path = tmp_path / "submit.sh"
    path.write_text(text)
    log = _fake_sbatch(tmp_path)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(path)], env=env, capture_output=True, text=True, check=True)
    assert "piece 3/3: job 1003" in done.stdout
    for index, (begin, limit) in enumerate(EXPECTED, 1):
        args = (log / f"{index}.args").read_text().split()
        dependency = [] if index == 1 else [f"--dependency=afterany:{1000 + index - 1}"]
        assert args == ["--parsable", *dependency]
        script = (log / f"{index}.script").read_text()
        assert script.startswith("#!/bin/bash\n")
        assert _sbatch(script, "begin") == f"#SBATCH --begin={begin}"
        assert _sbatch(script, "time") == f"#SBATCH --time={limit}"
        assert f"export GREENML_PIECE={index} GREENML_PIECES=3" in script
        assert script.rstrip().endswith("python train.py --resume")
    assert not (log / "4.args").exists()


def test_one_piece_stays_a_plain_sbatch_script() -> None:
    text = slurm_script(job_name="j", run="python t.py", pieces=PIECES[:1],
                        zone=ClusterZone.named("UTC"), note="hello")  # fmt: skip
    assert "sbatch" not in text.split("#SBATCH")[0]
    assert text.splitlines()[1] == "# hello"
    assert _sbatch(text, "begin") == "#SBATCH --begin=2026-03-07T22:00:00"


def _cli_plan(tmp_path: Path, *extra: str) -> tuple[int, Path]:
    if not TRACE.exists():
        pytest.skip(f"no shared data at {TRACE}")
    out = tmp_path / "out"
    code = main(["plan", "job", "--duration", "6h", "--earliest-start", "2023-03-01T00:00Z",
                 "--deadline", "2023-03-03T12:00Z", "--power-w", "300", "--interruptible",
                 "--min-chunk", "1h", "--trace-as-forecast", "--json", "-o", str(out),
                 *extra])  # fmt: skip
    return code, out


def test_plan_job_emits_every_piece_to_slurm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _cli_plan(tmp_path, "--zone", "DE-LU", "--intensity-trace", f"DE-LU={TRACE}",
                          "--emit", "slurm", "--cluster-tz", "Europe/Berlin")  # fmt: skip
    assert code == 0
    chunks = json.loads(capsys.readouterr().out)["chunks"]
    assert len(chunks) >= 2
    text = out.read_text()
    begins = re.findall(r"^#SBATCH --begin=(\S+)$", text, re.M)
    limits = re.findall(r"^#SBATCH --time=(\S+)$", text, re.M)
    berlin = ClusterZone.named("Europe/Berlin")
    starts = [datetime.fromisoformat(c["start"].replace("Z", "+00:00")) for c in chunks]
    minutes = [int(c["duration_s"]) // 60 for c in chunks]
    assert begins == [f"{berlin.at(s):%Y-%m-%dT%H:%M:%S}" for s in starts]
    assert limits == [f"0-{m // 60:02d}:{m % 60:02d}:00" for m in minutes]
    assert text.count("sbatch --parsable") == 2  # the submit function, called once per piece
    assert text.count("prev=$(submit <<") == len(chunks)


def test_plan_job_tells_skypilot_users_every_piece(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    region = "gcp:europe-west3"
    code, out = _cli_plan(tmp_path, "--region", region, "--intensity-trace", f"{region}={TRACE}",
                          "--emit", "skypilot")  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()
    chunks = json.loads(captured.out)["chunks"]
    text = out.read_text()
    assert yaml.safe_load(text)["resources"]["infra"] == "gcp/europe-west3"
    assert "has no start time or time limit" in text
    for index, chunk in enumerate(chunks, 1):
        assert f"# piece {index}/{len(chunks)}: {chunk['start'][:16]}" in text
    assert f"one task for {len(chunks)} pieces" in captured.err


def test_cluster_tz_is_refused_for_skypilot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    region = "gcp:europe-west3"
    code, _ = _cli_plan(tmp_path, "--region", region, "--intensity-trace", f"{region}={TRACE}",
                        "--emit", "skypilot", "--cluster-tz", "UTC")  # fmt: skip
    assert code == 2
    assert "--cluster-tz is for --emit slurm" in capsys.readouterr().err
