"""The jobs on this node: who owns which GPUs, and each job's token.

The Slurm prolog (root) tells the agent a job started (``job_start``: the job
id, its user, its GPUs) and gets a fresh token back, which it hands to the job
in a file only the job's user can read; the epilog says it ended
(``job_end``), and the agent restores the job's GPUs. The agent keeps only a
hash of each token, in ``jobs.json`` (root, 0600), so a restart after a crash
still knows the jobs.

A request acts on a job's GPUs only with that job's token, from that job's
user, and, where the caller's process sits in a Slurm job cgroup, from that
job's cgroup: a second job of the same user cannot use the first one's token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from greenml.errors import AgentRefused

_CGROUP_JOB = re.compile(r"/job_([0-9A-Za-z_-]+)(?:/|$)")


@dataclass(frozen=True)
class Job:
    """One job: its id, its user, the GPU ordinals it was given, its token's hash."""

    job: str
    uid: int
    gpus: tuple[int, ...]
    token_sha256: str


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class JobTable:
    """The jobs the prolog announced, kept in ``path`` across restarts."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        if path.exists():
            for entry in json.loads(path.read_text()).values():
                job = Job(entry["job"], int(entry["uid"]), tuple(entry["gpus"]),
                          entry["token_sha256"])  # fmt: skip
                self._jobs[job.job] = job

    def start(self, job: str, uid: int, gpus: list[int]) -> str:
        """Register ``job`` (replacing an earlier one of that id); its new token."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            taken = {g: j.job for j in self._jobs.values() if j.job != job for g in j.gpus}
            clash = [g for g in gpus if g in taken]
            if clash:
                raise AgentRefused(f"GPU {clash[0]} already belongs to job {taken[clash[0]]}")
            self._jobs[job] = Job(job, uid, tuple(gpus), _digest(token))
            self._save()
        return token

    def end(self, job: str) -> Job | None:
        """Forget ``job``; the job it was, if any."""
        with self._lock:
            found = self._jobs.pop(job, None)
            self._save()
        return found

    def get(self, job: str) -> Job | None:
        return self._jobs.get(job)

    def all(self) -> list[Job]:
        return list(self._jobs.values())

    def owner_of(self, gpu: int) -> Job | None:
        """The job that holds GPU ``gpu``, if any."""
        return next((j for j in self._jobs.values() if gpu in j.gpus), None)

    def authenticate(self, token: str | None, uid: int, pid: int, proc: Path) -> Job:
        """The job whose token ``token`` is, checked against the caller.

        Raises:
            AgentRefused: No token, an unknown one, another user's, or a process in
                another job's cgroup.
        """
        if not token:
            raise AgentRefused(
                "no job token: only a job's processes may change its GPUs "
                "(GREENML_AGENT_TOKEN or the token file the prolog wrote)"
            )
        digest = _digest(token)
        job = next(
            (j for j in self._jobs.values() if hmac.compare_digest(j.token_sha256, digest)), None
        )
        if job is None:
            raise AgentRefused("unknown job token (the job ended, or the token is not one)")
        if job.uid != uid:
            raise AgentRefused(f"job {job.job}'s token was presented by another user")
        in_job = cgroup_job(proc / str(pid) / "cgroup")
        if in_job is not None and in_job != job.job:
            raise AgentRefused(f"the caller runs in job {in_job}, not in job {job.job}")
        return job

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({j.job: asdict(j) for j in self._jobs.values()}, f)
        os.replace(tmp, self.path)


def cgroup_job(cgroup_file: Path) -> str | None:
    """The Slurm job whose cgroup a process is in (``…/job_123/…``); None outside one."""
    try:
        text = cgroup_file.read_text()
    except OSError:
        return None
    match = _CGROUP_JOB.search(text)
    return match.group(1) if match else None
