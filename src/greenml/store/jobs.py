"""Every query by job: the runs of a job, the jobs stored, the earlier jobs of a name.

A run's job is its record's ``job`` block (:class:`~greenml.record.blocks.JobBlock`),
kept in the run's extra blocks rather than a column of its own, so that the
tables need no migration. Every lookup by job lives here: the day the job id
gets an indexed column, only this module changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Protocol

from greenml.errors import JobNotFound
from greenml.record.run_record import RunRecord


class Store(Protocol):
    """What the job queries read: the run store, or its SQLite reader
    (:class:`~greenml.store.sqlite_reads.SqliteReader`)."""

    def records_containing(
        self, fragment: str, project_id: int | None = None
    ) -> list[RunRecord]: ...

_ANY_JOB = '"job": {'


def job_runs(store: Store, job_id: str, project_id: int | None = None) -> list[RunRecord]:
    """The runs of job ``job_id`` (exactly), oldest first.

    A Slurm array is found by its array job id (``6``: every task's runs) and a
    task by ``ARRAY_TASK`` (``6_0``) as well as by the task's own job id.

    ``project_id``: only the runs of that team-server project (None: every run), so
    that the same job id in two projects stays two jobs.

    Raises:
        JobNotFound: No stored run belongs to the job.
    """
    array, _, task = job_id.partition("_")
    if task and array and _ARRAY_PART.match(array) and _ARRAY_PART.match(task):
        fragment = f'"array_job_id": {json.dumps(array)}'
        found = [r for r in store.records_containing(fragment, project_id)
                 if r.job and (r.job.array_job_id, r.job.array_task_id) == (array, task)]
    else:
        found = []
    if not found:
        found = _by_id_or_array(store, job_id, project_id)
    if not found:
        raise JobNotFound(f"no run belongs to job {job_id!r} (see `greenml jobs list`)")
    return found


_ARRAY_PART = re.compile(r"^[0-9]+$")


def _by_id_or_array(store: Store, job_id: str, project_id: int | None) -> list[RunRecord]:
    own = f'"job_id": {json.dumps(job_id, ensure_ascii=False)}'
    array = f'"array_job_id": {json.dumps(job_id, ensure_ascii=False)}'
    seen: dict[str, RunRecord] = {}
    for fragment in (own, array):
        for r in store.records_containing(fragment, project_id):
            if r.job and job_id in (r.job.job_id, r.job.array_job_id):
                seen[r.id] = r
    return sorted(seen.values(), key=lambda r: r.started_at)


def all_jobs(store: Store, project_id: int | None = None) -> dict[str, list[RunRecord]]:
    """Every job stored, newest first (by its latest run), with its runs oldest first.

    ``project_id``: only the jobs of that team-server project (None: every run's).
    """
    return _grouped(store.records_containing(_ANY_JOB, project_id))


def jobs_named(
    store: Store, job_name: str, project_id: int | None = None
) -> dict[str, list[RunRecord]]:
    """The jobs whose runs carry ``job_name`` (the same job at other sizes, for scaling);
    ``project_id``: only that team-server project's."""
    fragment = f'"job_name": {json.dumps(job_name, ensure_ascii=False)}'
    return _grouped(r for r in store.records_containing(fragment, project_id)
                    if r.job and r.job.job_name == job_name)  # fmt: skip


def _grouped(records: Iterable[RunRecord]) -> dict[str, list[RunRecord]]:
    out: dict[str, list[RunRecord]] = {}
    for record in records:
        if record.job is not None and record.job.job_id:
            out.setdefault(record.job.job_id, []).append(record)
    return dict(sorted(out.items(), key=lambda kv: kv[1][-1].started_at, reverse=True))
