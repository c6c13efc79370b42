"""The agent's operations: one method per operation of the protocol, policy checked first.

The server (:mod:`greenml.agent.server`) hands every checked request here with
the caller the kernel named; the answer is a dict, a refusal an
:class:`~greenml.errors.AgentRefused`. root-only operations (``job_start``,
``job_end``) are the prolog's and epilog's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from greenml.__version__ import __version__
from greenml.agent.audit import AuditLog, Peer
from greenml.agent.config import AgentConfig
from greenml.agent.desk import CLOCKS, POWER, GpuDesk, Holding
from greenml.agent.jobs import JobTable
from greenml.agent.policy import Grant, check_clock, check_power_limit, grant, read_view
from greenml.agent.protocol import OPS, VERSION, Request
from greenml.agent.readers import ALL, NodeReader
from greenml.errors import AgentRefused, GreenmlError


class AgentService:
    """Answers requests: reads for anyone, changes within policy, jobs for root."""

    def __init__(
        self, config: AgentConfig, reader: NodeReader, desk: GpuDesk | None, jobs: JobTable,
        audit: AuditLog, proc: Path = Path("/proc"), capabilities: str = "",
    ) -> None:  # fmt: skip
        self.config, self.reader, self.desk = config, reader, desk
        self.jobs, self.audit = jobs, audit
        self._proc = proc
        self.capabilities = capabilities
        self._components = {str(d["key"]): str(d["component"]) for d in reader.devices}

    def handle(self, peer: Peer, connection: int, request: Request) -> dict[str, Any]:
        """The result of ``request`` from ``peer`` on ``connection``.

        Raises:
            AgentRefused: Outside policy, or the hardware failed (the reason says which).
        """
        method = getattr(self, f"op_{request.op}")
        result: dict[str, Any] = method(peer, connection, request)
        return result

    # -- for anyone -----------------------------------------------------------

    def op_hello(self, peer: Peer, connection: int, request: Request) -> dict[str, Any]:
        job = None
        if request.token:
            try:
                job = self._grant(peer, request.token).job
            except AgentRefused:
                job = None
        return {
            "agent": "greenml", "version": __version__, "protocol": VERSION, "ops": list(OPS),
            "you": {"uid": peer.uid, "user": peer.user, "pid": peer.pid,
                    "job": job.job if job else None},
            "devices": self._devices(self._view(peer, request.token)),
            "control": {"power_limits": self.config.power_limits and self.desk is not None,
                        "clocks": self.config.clocks and self.desk is not None},
            "notes": self.reader.notes, "capabilities": self.capabilities,
        }  # fmt: skip

    def op_read(self, peer: Peer, connection: int, request: Request) -> dict[str, Any]:
        wanted = frozenset(request.args.get("components", ())) or ALL
        energy = self.reader.energy_j(wanted)
        power = self.reader.power_w() if request.args.get("power") and "gpu" in wanted else {}
        if "gpu" in wanted:  # the caller's GPUs, in its own numbering
            view = self._view(peer, request.token)
            rename = {f"gpu{phys}": f"gpu{local}" for local, phys in enumerate(view)}
        else:
            rename = {}
        out_e: dict[str, float] = {}
        out_p: dict[str, float] = {}
        for key, comp in self._components.items():
            if comp not in wanted:
                continue
            name = rename.get(key) if comp == "gpu" else key
            if name is None:
                continue
            if key in energy:
                out_e[name] = energy[key]
            if key in power:
                out_p[name] = power[key]
        return {"energy_j": out_e, "power_w": out_p}

    # -- changes --------------------------------------------------------------

    def op_gpus(self, peer: Peer, connection: int, request: Request) -> dict[str, Any]:
        desk = self._desk()
        g = self._grant_change(peer, request, "gpus")
        gpus = []
        for local, phys in enumerate(g.gpus):
            info = desk.describe(phys)
            bounds = self.config.bounds_for(str(info.get("name", ""))).to_dict()
            gpus.append({"key": f"gpu{local}", "index": local, **info, "bounds": bounds})
        return {"job": g.job.job if g.job else None, "gpus": gpus,
                "power_limits": self.config.power_limits, "clocks": self.config.clocks}  # fmt: skip

    def op_set_power_limit(self, peer: Peer, connection: int, request: Request) -> dict[str, Any]:
        desk, args = self._desk(), request.args
        g = self._grant_change(peer, request, POWER)
        phys = self._physical(g, args["gpu"], peer, POWER, args)
        limits = desk.power(phys).get(f"gpu{phys}")
        self._checked(peer, g, POWER, phys, args, lambda: check_power_limit(
            self.config, limits.name, args["watts"], limits.min_w, limits.max_w))  # fmt: skip
        holding = self._holding(g, peer, connection, args)
        before, after = desk.set_power(phys, args["watts"], holding, peer, args.get("why", ""))
        return {"gpu": f"gpu{args['gpu']}", "uuid": limits.uuid, "from_w": before, "to_w": after}

    def op_lock_clocks(self, peer: Peer, connection: int, request: Request) -> dict[str, Any]:
        desk, args = self._desk(), request.args
        g = self._grant_change(peer, request, CLOCKS)
        phys = self._physical(g, args["gpu"], peer, CLOCKS, args)
        clocks = desk.clocks(phys).get(f"gpu{phys}")
        self._checked(peer, g, CLOCKS, phys, args, lambda: check_clock(
            self.config, clocks.name, args["mhz"], clocks.min_mhz, clocks.max_mhz))  # fmt: skip
        holding = self._holding(g, peer, connection, args)
        before, locked = desk.lock_clocks(phys, args["mhz"], holding, peer, args.get("why", ""))
        return {"gpu": f"gpu{args['gpu']}", "uuid": clocks.uuid, "from_mhz": before,
                "to_mhz": locked}  # fmt: skip

    def op_restore(self, peer: Peer, connection: int, request: Request) -> dict[str, Any]:
        desk = self._desk()
        g = self._grant_change(peer, request, "restore")
        wanted = request.args.get("gpus")
        mine = set(g.gpus) if wanted is None else {g.physical(i) for i in wanted}
        why = request.args.get("why") or "restore asked"
        undone = desk.release(lambda gpu, h: gpu in mine and _owns(h, g, peer), peer, why)
        local = {phys: i for i, phys in enumerate(g.gpus)}
        return {"restored": [{**u, "gpu": f"gpu{local[u['gpu']]}"} for u in undone]}

    def release_connection(self, peer: Peer, connection: int) -> None:
        """Undo the changes a closed connection held."""
        if self.desk is not None:
            holder = f"conn:{connection}"
            self.desk.release(lambda _g, h: h.holder == holder, peer, "client disconnected")

    # -- root only ------------------------------------------------------------

    def op_job_start(self, peer: Peer, connection: int, request: Request) -> dict[str, Any]:
        self._root_only(peer, request)
        args = request.args
        count = self.reader.gpu_count
        gpus = args.get("gpus", [])
        if any(g >= count for g in gpus):
            raise AgentRefused(f"this node has {count} GPU(s)", "bad-request")
        token = self.jobs.start(args["job"], args["uid"], gpus)
        self.audit.write(peer, "job_start", None, "done", job=args["job"], after=gpus,
                         why=f"uid {args['uid']}")  # fmt: skip
        return {"job": args["job"], "token": token, "gpus": gpus}

    def op_job_end(self, peer: Peer, connection: int, request: Request) -> dict[str, Any]:
        self._root_only(peer, request)
        job = request.args["job"]
        undone = []
        if self.desk is not None:
            undone = self.desk.release(lambda _g, h: h.job == job, peer, "job ended")
        found = self.jobs.end(job)
        self.audit.write(peer, "job_end", None, "done" if found else "unknown job", job=job)
        return {"job": job, "known": found is not None, "restored": undone}

    # -- plumbing -------------------------------------------------------------

    def _desk(self) -> GpuDesk:
        if self.desk is None:
            raise AgentRefused("this agent controls no GPU (no GPU library here)", "unavailable")
        return self.desk

    def _grant(self, peer: Peer, token: str | None) -> Grant:
        return grant(self.config, self.jobs, peer, token, self.reader.gpu_count, self._proc)

    def _grant_change(self, peer: Peer, request: Request, what: str) -> Grant:
        """:meth:`_grant` for a change: a refusal goes into the audit log (who tried what)."""
        try:
            return self._grant(peer, request.token)
        except AgentRefused as exc:
            args = request.args
            value = args.get("watts", args.get("mhz"))
            gpu = {"index": args["gpu"]} if "gpu" in args else None
            self.audit.write(peer, what, gpu, f"refused: {exc}", after=value,
                             why=args.get("why", ""))  # fmt: skip
            raise

    def _view(self, peer: Peer, token: str | None) -> tuple[int, ...]:
        return read_view(self.config, self.jobs, peer, token, self.reader.gpu_count, self._proc)

    def _devices(self, view: tuple[int, ...]) -> list[dict[str, Any]]:
        rename = {f"gpu{phys}": f"gpu{local}" for local, phys in enumerate(view)}
        return [{**d, "key": rename[d["key"]]} if d["component"] == "gpu" else dict(d)
                for d in self.reader.devices
                if d["component"] != "gpu" or d["key"] in rename]  # fmt: skip

    def _physical(self, g: Grant, local: int, peer: Peer, what: str, args: dict[str, Any]) -> int:
        try:
            return g.physical(local)
        except AgentRefused as exc:
            self._refused(peer, g, what, {"index": local}, args, exc)
            raise

    def _checked(self, peer: Peer, g: Grant, what: str, phys: int, args: dict[str, Any],
                 check: Any) -> None:  # fmt: skip
        try:
            check()
        except AgentRefused as exc:
            self._refused(peer, g, what, {"index": phys}, args, exc)
            raise

    def _refused(self, peer: Peer, g: Grant, what: str, gpu: dict[str, Any],
                 args: dict[str, Any], exc: GreenmlError) -> None:  # fmt: skip
        job = g.job.job if g.job else None
        value = args.get("watts", args.get("mhz"))
        self.audit.write(peer, what, gpu, f"refused: {exc}", job=job, after=value,
                         why=args.get("why", ""))  # fmt: skip

    def _holding(self, g: Grant, peer: Peer, connection: int, args: dict[str, Any]) -> Holding:
        hold = args.get("hold", "connection")
        if hold == "connection":
            holder = f"conn:{connection}"
        else:  # beyond the connection: until the job ends (without a job: until a restore)
            holder = f"job:{g.job.job}" if g.job else f"user:{peer.uid}"
        return Holding(holder, g.job.job if g.job else None, peer.uid)

    def _root_only(self, peer: Peer, request: Request) -> None:
        if peer.uid != 0:
            self.audit.write(peer, request.op, None, "refused: root only",
                             job=request.args.get("job"))  # fmt: skip
            raise AgentRefused(f"{request.op} is for the node's prolog and epilog (root) only")


def _owns(h: Holding, g: Grant, peer: Peer) -> bool:
    if g.job is not None:
        return h.job == g.job.job
    return peer.uid == 0 or h.uid == peer.uid


def agent_pid_file(state_dir: Path) -> Path:
    return state_dir / "agent.pid"


def write_pid(state_dir: Path) -> None:
    agent_pid_file(state_dir).write_text(f"{os.getpid()}\n")
