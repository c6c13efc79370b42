"""``greenml agent``: the node agent (start it as root; ask it as anyone; the prolog's lines).

``start`` runs the daemon in the foreground (systemd, a DaemonSet, a prolog start it);
``status`` shows what it offers to the caller; ``read`` its counters; ``job-start`` and
``job-end`` are for the Slurm prolog and epilog (root).
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import click

from greenml.cli import render
from greenml.cli.options import json_option, parse_gpus
from greenml.errors import ConfigError
from greenml.store.export import json_text

_config_option = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), metavar="TOML",
    default="/etc/greenml/agent.toml", show_default=True, help="The agent's configuration file.",
)  # fmt: skip
_socket_option = click.option(
    "--socket", "socket_path", type=click.Path(dir_okay=False), metavar="PATH",
    help="The agent's socket  [default: $GREENML_AGENT_SOCKET, [agent] socket, or "
    "/run/greenml/agent.sock]",
)  # fmt: skip


@click.group(no_args_is_help=True)
def agent() -> None:
    """The node agent: counters and bounded, audited GPU changes for users who are not root."""


@agent.command("start")
@_config_option
def start(config_path: str) -> None:
    """Run the agent in the foreground (as root) until SIGTERM; every change is undone on exit."""
    from greenml.agent.config import load_config
    from greenml.agent.daemon import start_agent

    if os.geteuid() != 0:
        raise ConfigError("greenml agent start: run it as root (systemd, the Slurm prolog)")
    config = load_config(config_path)
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)  # the agent sees every GPU, by physical ordinal
    os.umask(0o077)  # what it writes is root's alone (the socket's mode is set apart)
    running = start_agent(config)
    click.echo(f"greenml agent: serving on {config.socket} "
               f"({running.service.capabilities})", err=True)  # fmt: skip
    running.serve()


@agent.command("status")
@_socket_option
@json_option()
def status(socket_path: str | None, as_json: bool) -> None:
    """What the agent offers you: its version, your identity and job, its devices, control."""
    from greenml.agent.client import AgentClient

    with AgentClient(socket_path) as client:
        hello = client.request("hello")
    if as_json:
        print(json_text({"socket": str(client.path), **hello}, indent=2))
        return
    console = render.console()
    you = hello["you"]
    job = f", job {you['job']}" if you.get("job") else ", no job token"
    console.print(f"greenml agent {hello['version']} at {client.path} (protocol "
                  f"{hello['protocol']}); you: {you['user']} (uid {you['uid']}){job}",
                  highlight=False, markup=False)  # fmt: skip
    for d in hello["devices"]:
        line = (f"     {d['key']} ({d['component']}) {d['name']}: {d['method']}, "
                f"±{d['uncertainty_rel'] * 100:.0f} %")  # fmt: skip
        console.print(line, highlight=False, markup=False)
    control = hello["control"]
    console.print(f"     power limits: {'yes' if control['power_limits'] else 'no'}; "
                  f"clocks: {'yes' if control['clocks'] else 'no'}", highlight=False)  # fmt: skip


@agent.command("read")
@_socket_option
@json_option()
def read(socket_path: str | None, as_json: bool) -> None:
    """The agent's counters now: joules since it started (RAPL package, DRAM, psys, GPUs)."""
    from greenml.agent.client import AgentClient

    with AgentClient(socket_path) as client:
        result = client.request("read", power=True)
    if as_json:
        print(json_text(result, indent=2))
        return
    for key, joules in sorted(result["energy_j"].items()):
        click.echo(f"{key}: {joules:.3f} J (counter, via greenml agent)")


@agent.command("job-start")
@_socket_option
@click.option("--job", required=True, metavar="ID", help="The job id ($SLURM_JOB_ID).")
@click.option("--user", required=True, help="The job's user ($SLURM_JOB_USER or a uid).")
@click.option("--node-gpus", "gpus", default="", metavar="LIST",
              help="The job's GPUs on this node by NVML index ($SLURM_JOB_GPUS).")  # fmt: skip
@click.option("--token-file", type=click.Path(dir_okay=False), metavar="PATH", required=True,
              help="Where the job's token goes (owned by the job's user, mode 0400).")  # fmt: skip
def job_start(socket_path: str | None, job: str, user: str, gpus: str, token_file: str) -> None:
    """(prolog, root) Tell the agent a job started; write its token for the job's user."""
    from greenml.agent.client import AgentClient

    uid = _uid(user)
    ordinals = parse_gpus(gpus) if gpus.strip() else []
    with AgentClient(socket_path, token="") as client:
        result = client.request("job_start", job=job, uid=uid, gpus=ordinals or [])
    path = Path(token_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o711)  # others may reach a file they know the name of, not list them
    path.unlink(missing_ok=True)  # a fresh file, never through a link planted there
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
    with os.fdopen(fd, "w") as f:
        f.write(result["token"] + "\n")
    os.chown(path, uid, -1)
    os.chmod(path, 0o400)
    click.echo(f"greenml agent: job {job} (uid {uid}) holds GPUs {result['gpus']}; token: {path}")


@agent.command("job-end")
@_socket_option
@click.option("--job", required=True, metavar="ID", help="The job id ($SLURM_JOB_ID).")
@click.option("--token-file", type=click.Path(dir_okay=False), metavar="PATH",
              help="The job's token file, removed.")  # fmt: skip
def job_end(socket_path: str | None, job: str, token_file: str | None) -> None:
    """(epilog, root) Tell the agent a job ended: its GPUs are restored, its token revoked."""
    from greenml.agent.client import AgentClient

    with AgentClient(socket_path, token="") as client:
        result = client.request("job_end", job=job)
    if token_file:
        Path(token_file).unlink(missing_ok=True)
    for u in result["restored"]:
        click.echo(f"GPU {u['gpu']}: {u['what']} restored {u['from']} → {u['to']}")
    click.echo(f"greenml agent: job {job} ended" + ("" if result["known"] else " (not known)"))


def _uid(user: str) -> int:
    if user.isdigit():
        return int(user)
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        raise ConfigError(f"no user {user!r} on this node") from None
