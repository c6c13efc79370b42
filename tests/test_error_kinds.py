"""The error tree is grouped by kind, and the CLI's exit code says the kind (issue 28)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from greenml import errors
from greenml.cli import main
from greenml.errors import (
    AccessDenied,
    ClockPermissionError,
    ClockUnsupported,
    ConfigError,
    DeviceControlError,
    GreenmlError,
    JobNotFound,
    NotFound,
    PermissionDenied,
    PowerLimitError,
    PowerLimitPermissionError,
    PowerLimitUnsupported,
    ProjectNotFound,
    RunNotFound,
    SensorError,
    SensorUnavailable,
    ServerReadError,
    ServiceError,
    StoreError,
    TeamServerError,
    Unsupported,
    exit_code,
)
from greenml.store import open_store

KINDS = {ConfigError: 2, NotFound: 3, PermissionDenied: 4, Unsupported: 5,
         DeviceControlError: 6, ServiceError: 7}  # fmt: skip


def _all_errors() -> list[type[GreenmlError]]:
    return [c for _, c in inspect.getmembers(errors, inspect.isclass)
            if issubclass(c, GreenmlError) and c.__module__ == errors.__name__]  # fmt: skip


@pytest.mark.parametrize("kind, code", KINDS.items())
def test_each_kind_has_its_own_exit_code(kind: type[GreenmlError], code: int) -> None:
    assert exit_code(kind("x")) == code


def test_every_error_exits_with_its_kinds_code_and_the_kinds_codes_differ() -> None:
    assert len(set(KINDS.values())) == len(KINDS)
    for cls in _all_errors():  # the first kind among its ancestors is its kind
        kinds = [k for k in cls.__mro__ if k in KINDS]
        expected = KINDS[kinds[0]] if kinds else 2
        assert cls.exit_code == expected, cls.__name__


def test_a_class_of_two_parents_keeps_its_old_parent_and_takes_its_kinds_code() -> None:
    for cls, old_parent, kind in [
        (RunNotFound, StoreError, NotFound), (JobNotFound, StoreError, NotFound),
        (SensorUnavailable, SensorError, Unsupported),
        (PowerLimitPermissionError, PowerLimitError, PermissionDenied),
        (PowerLimitUnsupported, PowerLimitError, Unsupported),
        (ClockPermissionError, DeviceControlError, PermissionDenied),
        (ClockUnsupported, DeviceControlError, Unsupported),
    ]:  # fmt: skip
        assert issubclass(cls, old_parent) and issubclass(cls, kind)
        assert cls.exit_code == KINDS[kind]
    assert exit_code(ProjectNotFound("p")) == 3 and exit_code(AccessDenied("no")) == 4


@pytest.mark.parametrize("reason, code", [("auth refused", 4), ("not found", 3),
                                          ("server down", 7), ("bad data", 7)])  # fmt: skip
def test_a_team_servers_refusal_exits_by_its_reason(reason: str, code: int) -> None:
    assert exit_code(TeamServerError("no", reason=reason)) == code
    assert exit_code(ServerReadError("no", reason=reason)) == code


def test_the_tree_drawn_in_the_docstring_names_every_class() -> None:
    drawn = errors.__doc__ or ""
    missing = [c.__name__ for c in _all_errors() if c.__name__ not in drawn]
    assert missing == []


def test_the_cli_exits_3_for_a_run_that_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "runs.db")
    with open_store(db):  # an empty store: the run is what is not there
        pass
    assert main(["runs", "show", "ffffffffffff", "--db", db]) == 3
    err = capsys.readouterr().err
    assert err.startswith("greenml: error: ") and err.count("\n") == 1
    assert main(["runs", "list", "--db", db, "--limit", "-1"]) == 2  # bad input stays 2
