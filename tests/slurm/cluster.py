"""A real four-node Slurm 22.05 cluster for the tests, in one temporary directory.

munged (its own key and socket), slurmdbd (on the local MariaDB, a database of
its own), slurmctld and four ``slurmd -N nodeX`` on free loopback ports, from a
generated ``slurm.conf`` that ``SLURM_CONF`` points at: nothing of the host's
``/etc/slurm`` or ``/etc/munge`` is read or written. Every daemon is started
here and stopped by its PID at :meth:`Cluster.stop`; the database is dropped.

Energy: the slurmds run in a private mount namespace with a tmpfs on
``/dev/cpu`` where a test harness (``fake_rapl.py``) writes a RAPL counter that
Slurm's ``acct_gather_energy/rapl`` reads as 20 W package + 2 W DRAM per node.
Those are **test figures**, never a measurement; the host's ``/dev/cpu`` is untouched.

The prolog and epilog are small wrappers that run ``deploy/slurm``'s scripts
only while :attr:`Cluster.prolog_on` exists, with ``GREENML_PROLOG_ENV_FILE``
pointing at the cluster's settings file (slurmd's own environment never
reaches a prolog).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
NODES = ("node0", "node1", "node2", "node3")
DAEMONS = ("munged", "slurmdbd", "slurmctld", "slurmd")
MARIADB = ("mysql", "-h", "127.0.0.1", "-P", "3306", "-u", "root")


def missing_tools() -> list[str]:
    """The programs the cluster needs that are not installed."""
    return [t for t in (*DAEMONS, "mungekey", "sacctmgr", "sbatch", "mysql", "unshare")
            if shutil.which(t) is None and not Path("/usr/sbin", t).exists()]  # fmt: skip


def _free_ports(count: int) -> list[int]:
    socks, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _consecutive_free(first: int, count: int) -> bool:
    for port in range(first, first + count):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


class Cluster:
    """The cluster's files, daemons and client environment (see the module docstring)."""

    def __init__(self, root: Path, db_url: str | None = None) -> None:
        self.root = root
        root.chmod(0o755)  # munged wants its socket reachable by every user
        self.db_name = f"greenml_slurm_test_{os.getpid()}"
        self.pids: dict[str, int] = {}
        for sub in ("state", "spool", "log", "run", "greenml", "node-state", "home"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        self.conf = root / "slurm.conf"
        self.env_file = root / "greenml.env"  # the nodes' /etc/default/greenml
        self.prolog_on = root / "prolog-on"
        # the store every node writes to (a real cluster's is PostgreSQL, as here in the tests)
        self.db_url = db_url or f"sqlite:///{root / 'greenml' / 'cluster.db'}"

    # -- client side ------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        """The environment of a command run against this cluster (sbatch, sacct, greenml)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GREENML_"))}
        env.update(SLURM_CONF=str(self.conf), PYTHONPATH=str(REPO / "src"),
                   GREENML_LEDGER=str(self.root / "ledger.jsonl"), HOME=str(self.root / "home"),
                   GREENML_SPOOL_DIR=str(self.root / "spool-greenml"),
                   XDG_CONFIG_HOME=str(self.root / "home" / ".config"))  # fmt: skip
        return env

    def run(self, *args: str, timeout: float = 60, check: bool = True) -> str:
        """A Slurm client command's stdout (``check``: a failure raises with its stderr)."""
        done = subprocess.run(list(args), env=self.env(), capture_output=True, text=True,
                              timeout=timeout, check=False)  # fmt: skip
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def sbatch(self, script: str, *options: str) -> str:
        """Submit ``script`` (its text) and return the job id."""
        path = self.root / f"job-{time.monotonic_ns()}.sh"
        path.write_text(script)
        out = self.run("sbatch", "--parsable", f"--chdir={self.root}",
                       f"--output={self.root}/slurm-%j.out", *options, str(path))  # fmt: skip
        return out.strip().split(";")[0]

    def wait_done(self, job_id: str, timeout: float = 90) -> None:
        """Wait until no part of job ``job_id`` (or array) is pending, running or completing."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.run("squeue", "-h", "-j", job_id, "-o", "%T", check=False)
            # the prolog's epilog ends by removing the job's state folder on each node
            if not out.strip() and not list((self.root / "node-state").glob(f"*/{job_id}")):
                return
            time.sleep(0.3)
        raise TimeoutError(f"job {job_id} still in squeue after {timeout} s")

    def wait_sacct(self, slurm_id: str, timeout: float = 30) -> str:
        """sacct's rows for ``slurm_id`` once the job's line has an end (accounting lags)."""
        deadline = time.monotonic() + timeout
        out = ""
        while time.monotonic() < deadline:
            out = self.run("sacct", "-j", slurm_id, "-n", "-P", "-o", "JobID,State,End",
                           check=False)  # fmt: skip
            rows = [r.split("|") for r in out.splitlines() if r]
            if rows and all(r[2] not in ("", "Unknown") for r in rows):
                return out
            time.sleep(0.5)
        return out

    def greenml(self, *args: str) -> str:
        """``greenml ARGS`` against the cluster's store (``--db``), its stdout."""
        done = subprocess.run([sys.executable, "-m", "greenml", *args], env=self.env(),
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"greenml {' '.join(args)}: exit {done.returncode}: {done.stderr}")
        return done.stdout

    def job_json(self, job_id: str, *options: str) -> dict[str, Any]:
        """``greenml jobs show JOB --json`` from the cluster's store."""
        return json.loads(self.greenml("jobs", "show", job_id, "--db", self.db_url, "--json",
                                       *options))  # fmt: skip

    # -- start / stop ------------------------------------------------------------------------
    def start(self, timeout: float = 60) -> None:
        """Start every daemon and wait until ``sinfo`` shows the four nodes idle."""
        for _ in range(50):  # the four slurmd ports must be consecutive and free
            ports = _free_ports(7)
            if _consecutive_free(ports[1], 4):
                break
        self._write_configs(ports)
        self._start_munge()
        self._start_dbd()
        self.run("sacctmgr", "-i", "add", "cluster", "greentest", timeout=30)
        self.run("sacctmgr", "-i", "add", "account", "greenml", "Cluster=greentest", timeout=30)
        self.run("sacctmgr", "-i", "add", "user", "root", "Account=greenml", timeout=30)
        self._daemon("slurmctld", ["slurmctld", "-f", str(self.conf)], self.root / "run/ctld.pid")
        self._start_slurmds()
        self._wait_idle(timeout)

    def stop(self) -> None:
        """Stop every daemon started here, by PID (slurmds first), and drop the database."""
        order = [k for k in self.pids if k.startswith(("slurmd-", "fake_rapl"))]
        order += [k for k in ("slurmctld", "slurmdbd", "munged") if k in self.pids]
        for key in order:
            _kill(self.pids[key])
        for key in order:
            _reap(self.pids[key])
        self.pids.clear()
        subprocess.run([*MARIADB, "-e", f"DROP DATABASE IF EXISTS {self.db_name}"],
                       capture_output=True, timeout=30, check=False)  # fmt: skip

    def _write_configs(self, ports: list[int]) -> None:
        r = self.root
        host = socket.gethostname()
        ctld, slurmd0, dbd = ports[0], ports[1], ports[6]
        self.munge_socket = r / "run" / "munge.socket"
        auth = f"AuthInfo=socket={self.munge_socket}"
        (r / "slurmdbd.conf").write_text("\n".join([
            "AuthType=auth/munge", auth, "DbdAddr=127.0.0.1", "DbdHost=localhost",
            f"DbdPort={dbd}", "SlurmUser=root", "DebugLevel=info",
            f"LogFile={r}/log/slurmdbd.log", f"PidFile={r}/run/slurmdbd.pid",
            "StorageType=accounting_storage/mysql", "StorageHost=127.0.0.1",
            "StoragePort=3306", "StorageUser=root", f"StorageLoc={self.db_name}", "",
        ]))  # fmt: skip
        (r / "slurmdbd.conf").chmod(0o600)
        for name in ("prolog", "epilog"):
            wrapper = r / f"{name}.sh"
            wrapper.write_text(
                "#!/bin/sh\n# test harness: the shipped script, only while prolog-on exists\n"
                f"[ -e {self.prolog_on} ] || exit 0\n"
                f"export GREENML_PROLOG_ENV_FILE={self.env_file}\n"
                f"exec /bin/sh {REPO / 'deploy' / 'slurm' / f'greenml-{name}.sh'}\n"
            )
            wrapper.chmod(0o755)
        self.conf.write_text("\n".join([
            "ClusterName=greentest", f"SlurmctldHost={host}(127.0.0.1)",
            "SlurmUser=root", "SlurmdUser=root", f"SlurmctldPort={ctld}",
            "AuthType=auth/munge", "CredType=cred/munge", auth,
            f"StateSaveLocation={r}/state", f"SlurmdSpoolDir={r}/spool/%n",
            f"SlurmctldPidFile={r}/run/ctld.pid", f"SlurmdPidFile={r}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log", f"SlurmdLogFile={r}/log/slurmd-%n.log",
            "SlurmctldDebug=info", "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SwitchType=switch/none", "MpiDefault=none", "ReturnToService=2",
            "SchedulerType=sched/backfill", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core", "JobCompType=jobcomp/none",
            "JobAcctGatherType=jobacct_gather/linux", "JobAcctGatherFrequency=task=1,energy=1",
            "AcctGatherEnergyType=acct_gather_energy/rapl", "AcctGatherNodeFreq=1",
            "AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStorageHost=127.0.0.1", f"AccountingStoragePort={dbd}",
            f"AccountingStoragePass={self.munge_socket}",  # the munge socket, for slurmdbd
            "InactiveLimit=0", "KillWait=2", "MinJobAge=300", "SlurmctldTimeout=60",
            "SlurmdTimeout=120", "Waittime=0", "MessageTimeout=20",
            "SchedulerParameters=sched_interval=1", "PrologEpilogTimeout=60",
            f"NodeName=node[0-3] NodeHostname={host} NodeAddr=127.0.0.1 "
            f"Port={slurmd0}-{slurmd0 + 3} CPUs=2 Boards=1 SocketsPerBoard=1 "
            "CoresPerSocket=2 ThreadsPerCore=1 RealMemory=2000 State=UNKNOWN",
            "PartitionName=debug Nodes=node[0-3] Default=YES MaxTime=INFINITE State=UP "
            "OverSubscribe=FORCE:4",
            f"Prolog={r}/prolog.sh", f"Epilog={r}/epilog.sh", "PrologFlags=Alloc", "",
        ]))  # fmt: skip
        self._write_settings()

    @contextlib.contextmanager
    def settings(self, *, export: bool = False, **more: str) -> Iterator[None]:
        """The nodes' settings file with ``more`` lines (``export``: each line exported)."""
        self._write_settings(export=export, **more)
        try:
            yield
        finally:
            self._write_settings()

    def prolog_log(self) -> str:
        """Every node's prolog and epilog log lines, node by node."""
        return "".join(p.read_text() for p in sorted((self.root / "log").glob("greenml-prolog-*")))

    def _write_settings(self, *, export: bool = False, **more: str) -> None:
        """The nodes' greenml settings file (no ``export``: read as settings all the same)."""
        lines = self._settings_lines() + [f"{k}={v}" for k, v in more.items()]
        prefix = "export " if export else ""
        self.env_file.write_text("".join(
            f"{prefix}{line}\n" if "=" in line and not line.startswith("#") else f"{line}\n"
            for line in lines))  # fmt: skip

    def _settings_lines(self) -> list[str]:
        return [
            "# the nodes' /etc/default/greenml, written by the test harness",
            f"GREENML_DB='{self.db_url}'",
            f"GREENML_BIN='{sys.executable} -m greenml'",
            f"PYTHONPATH={REPO / 'src'}",
            f"GREENML_LEDGER={self.root / 'ledger.jsonl'}",
            f"HOME={self.root / 'home'}",
            f"GREENML_SPOOL_DIR={self.root / 'spool-greenml'}",
            "GREENML_RUN_OPTIONS='--gpus none --sample-hz 5'",
            f"GREENML_STATE_DIR={self.root / 'node-state'}/$SLURMD_NODENAME",
            f"GREENML_PROLOG_LOG={self.root / 'log'}/greenml-prolog-$SLURMD_NODENAME.log",
        ]

    def _start_munge(self) -> None:
        key = self.root / "munge.key"
        subprocess.run(["mungekey", "-c", "-k", str(key)], check=True, capture_output=True)
        key.chmod(0o600)
        pid_file = self.root / "run" / "munged.pid"
        self._daemon("munged", [
            "munged", "--force", f"--key-file={key}", f"--socket={self.munge_socket}",
            f"--pid-file={pid_file}", f"--log-file={self.root}/log/munged.log",
            f"--seed-file={self.root}/run/munged.seed",
        ], pid_file)  # fmt: skip

    def _start_dbd(self) -> None:
        subprocess.run([*MARIADB, "-e", f"DROP DATABASE IF EXISTS {self.db_name}"],
                       check=True, capture_output=True, timeout=30)  # fmt: skip
        env = {**self.env(), "SLURM_CONF": str(self.conf)}
        pid_file = self.root / "run" / "slurmdbd.pid"
        subprocess.run(["slurmdbd"], env={**env, "SLURMDBD_CONF": str(self.root / "slurmdbd.conf")},
                       check=True, capture_output=True, timeout=30)  # fmt: skip
        self.pids["slurmdbd"] = _pid_from(pid_file, 30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # slurmdbd answers once its tables exist
            if subprocess.run(["sacctmgr", "-n", "list", "cluster"], env=env,
                              capture_output=True, timeout=30).returncode == 0:  # fmt: skip
                return
            time.sleep(0.3)
        raise RuntimeError(f"slurmdbd did not answer: {_tail(self.root / 'log/slurmdbd.log')}")

    def _start_slurmds(self) -> None:
        """The four slurmds inside a private mount namespace with the fake RAPL counter."""
        script = self.root / "start-slurmds.sh"
        fake = REPO / "tests" / "slurm" / "fake_rapl.py"
        run = self.root / "run"
        script.write_text("\n".join([
            "#!/bin/sh",
            "# test harness: a tmpfs on /dev/cpu in this mount namespace only, a fake RAPL",
            "mount -t tmpfs -o mode=755 greenml-test-fake-msr /dev/cpu || exit 1",
            "mkdir -p /dev/cpu/0 /dev/cpu/1",
            f"setsid {sys.executable} {fake} </dev/null >{self.root}/log/fake_rapl.log 2>&1 &",
            f"echo $! >{run}/fake_rapl.pid",
            "while [ ! -s /dev/cpu/0/msr ]; do sleep 0.05; done",
            *[f"/usr/sbin/slurmd -f {self.conf} -N {n}" for n in NODES], "",
        ]))  # fmt: skip
        subprocess.run(["unshare", "-m", "--propagation", "private", "sh", str(script)],
                       env=self.env(), check=True, capture_output=True, timeout=60)  # fmt: skip
        self.pids["fake_rapl"] = _pid_from(run / "fake_rapl.pid", 10)
        for node in NODES:
            self.pids[f"slurmd-{node}"] = _pid_from(run / f"slurmd-{node}.pid", 30)

    def _daemon(self, name: str, argv: list[str], pid_file: Path) -> None:
        subprocess.run(argv, env=self.env(), check=True, capture_output=True, timeout=30)
        self.pids[name] = _pid_from(pid_file, 30)

    def _wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        out = ""
        while time.monotonic() < deadline:
            out = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
            states = dict(line.split() for line in out.splitlines() if line.strip())
            if sorted(states) == list(NODES) and set(states.values()) == {"idle"}:
                return
            time.sleep(0.3)
        raise RuntimeError(f"nodes not idle after {timeout} s: {out!r}; "
                           f"{_tail(self.root / 'log/slurmctld.log')}")  # fmt: skip


def _pid_from(path: Path, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            text = path.read_text().strip()
        except OSError:
            text = ""
        if text:
            return int(text.split()[0])
        time.sleep(0.05)
    raise RuntimeError(f"no pid in {path} after {timeout} s")


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)


def _reap(pid: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path})"
