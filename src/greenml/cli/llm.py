"""``greenml llm``: the energy-aware OpenAI-compatible proxy, and its per-token statistics."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import click

from greenml.cli.options import db_option, json_option, location_options, sample_hz_option
from greenml.errors import ConfigError

NODE_TOKEN_ENV = "GREENML_NODE_TOKEN"


@click.group()
def llm() -> None:
    """Energy of LLM serving: per request, per token, per tenant."""


def _url(text: str, option: str = "--upstream") -> str:
    if not text.startswith(("http://", "https://")):
        raise ConfigError(f"{option} must be an http:// or https:// URL, got {text!r}")
    return text.rstrip("/")


@llm.command("proxy")
@click.option("--upstream", required=True, metavar="URL", help="The engine's base URL.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8790, show_default=True)
@click.option("--engine-pid", type=click.IntRange(1), metavar="PID",
              help="CPU-only node: measure this process tree (the engine).")  # fmt: skip
@click.option("--engine-cmd", metavar="CMD",
              help="Start the engine with this command and measure its process tree.")  # fmt: skip
@db_option
@sample_hz_option(10.0, "Intervals (and power samples) per second.")
@click.option("--no-energy-in-response", is_flag=True,
              help="Leave responses as the engine sent them (figures still stored).")  # fmt: skip
@click.option("--tenant-header", metavar="NAME",
              help="Header naming the tenant (default: a hash of the API key).")  # fmt: skip
@click.option(
    "--engine-metrics",
    metavar="URL",
    help="The engine's Prometheus page: report traffic that bypassed the proxy.",
)
@click.option("--max-body-mb", type=click.FloatRange(0, min_open=True), default=16.0,
              show_default=True, help="Refuse larger request bodies with 413.")  # fmt: skip
@click.option("--retention-days", type=click.FloatRange(0, min_open=True), metavar="N",
              help="Delete stored request records older than this.")  # fmt: skip
@click.option("--server", "server_url", metavar="URL",
              help="Team server for the project's serving page (default: GREENML_SERVER or "
                   "the config's [server]; the token from GREENML_TOKEN).")  # fmt: skip
@click.option("--server-every", type=click.FloatRange(1, 3600), default=30.0, show_default=True,
              metavar="S", help="Seconds between uploads of per-minute figures.")  # fmt: skip
@click.option("--node", "nodes", multiple=True, metavar="NAME",
              help="Another node of a multi-node engine, reporting with `greenml llm node` "
                   "(repeat; needs GREENML_NODE_TOKEN).")  # fmt: skip
@click.option("--otlp-endpoint", envvar="GREENML_OTLP_ENDPOINT", metavar="URL",
              help="Also export the figures as OTLP metrics (HTTP, …/v1/metrics).")  # fmt: skip
@location_options
def proxy(
    upstream: str,
    host: str,
    port: int,
    engine_pid: int | None,
    engine_cmd: str | None,
    db_url: str | None,
    sample_hz: float,
    no_energy_in_response: bool,
    tenant_header: str | None,
    engine_metrics: str | None,
    max_body_mb: float,
    retention_days: float | None,
    server_url: str | None,
    server_every: float,
    nodes: tuple[str, ...],
    otlp_endpoint: str | None,
    zone: str | None,
    region: str | None,
    country: str | None,
    ci: float | None,
) -> None:
    """Forward OpenAI-compatible requests to UPSTREAM, measuring each one's energy."""
    try:
        import uvicorn
    except ImportError:
        raise ConfigError("the proxy needs the llm extra: pip install 'greenml[llm]'") from None
    from greenml.accounting.location import resolve_intensity_source
    from greenml.llm.carbon import HourlyIntensity
    from greenml.llm.meter_source import open_meter_source
    from greenml.llm.nodes import CompositeSource, RemoteNodes
    from greenml.llm.proxy_app import ProxyApp, ProxyConfig
    from greenml.llm.records import RecordWriter
    from greenml.llm.uplink import ServingUplink
    from greenml.run.server_settings import server_settings
    from greenml.store import open_store

    if engine_pid is not None and engine_cmd is not None:
        raise ConfigError("give --engine-pid or --engine-cmd, not both")
    node_token = os.environ.get(NODE_TOKEN_ENV, "").strip() or None
    if nodes and not node_token:
        raise ConfigError(f"--node needs a shared secret in {NODE_TOKEN_ENV} (the nodes use it)")
    config = ProxyConfig(
        upstream=_url(upstream), energy_in_response=not no_energy_in_response,
        tenant_header=tenant_header, max_body_bytes=int(max_body_mb * 1024 * 1024),
        sample_hz=sample_hz, engine_metrics=engine_metrics, node_token=node_token,
    )  # fmt: skip
    source_ci, how = resolve_intensity_source(zone=zone, region=region, country=country, ci=ci)
    settings = server_settings(server_url)
    if settings is not None and not settings.token:
        raise ConfigError(f"no token for {settings.url}: set GREENML_TOKEN or [server] token")
    engine: subprocess.Popen[bytes] | None = None
    if engine_cmd is not None:
        try:
            engine = subprocess.Popen(shlex.split(engine_cmd))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--engine-cmd could not start: {exc}") from None
        engine_pid = engine.pid
    try:
        local = open_meter_source(engine_pid, sample_hz)
        source: Any = local
        if nodes:
            source = CompositeSource(local, RemoteNodes(list(nodes)))
        writer = RecordWriter(open_store(db_url), retention_days=retention_days)
        uplink = None
        if settings is not None:
            name = f"{socket.gethostname()}:{port}"
            uplink = ServingUplink(settings, name, source.method, source.scope,
                                   every_s=server_every)  # fmt: skip
        otlp = None
        if otlp_endpoint:
            from greenml.llm.otlp import OtlpMetrics

            otlp = OtlpMetrics(_url(otlp_endpoint, "--otlp-endpoint"), source.method, source.scope)
        app = ProxyApp(config, source, writer=writer, carbon=HourlyIntensity(source_ci, how),
                       uplink=uplink, otlp=otlp)  # fmt: skip
        sent = "" if settings is None else f"; per-minute figures to {settings.url}"
        click.echo(
            f"greenml llm proxy: http://{host}:{port} -> {config.upstream}; "
            f"energy of {source.scope} ({source.method}); carbon: {how}{sent}",
            err=True,
        )
        with _stopped_by_signals():
            uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="on")
        source.close()
    finally:
        if engine is not None:
            engine.terminate()
            try:
                engine.wait(timeout=10)
            except subprocess.TimeoutExpired:
                engine.kill()


@contextlib.contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """SIGTERM and SIGINT end the proxy cleanly: uvicorn shuts the app down (the last figures
    stored and sent), then raises the signal again, which lands here instead of killing the
    process before the engine it started is stopped."""
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@llm.command("node")
@click.option("--proxy", "proxy_url", required=True, metavar="URL",
              help="The proxy of the engine (started with --node NAME).")  # fmt: skip
@click.option("--name", required=True, help="This node's name at the proxy.")
@click.option("--engine-pid", type=click.IntRange(1), metavar="PID",
              help="CPU-only node: measure this process tree (the engine's part).")  # fmt: skip
@sample_hz_option(10.0, "Power samples per second.")
@click.option("--every", type=click.FloatRange(0.05, 60), default=0.2, show_default=True,
              metavar="S", help="Seconds between reports.")  # fmt: skip
def node(proxy_url: str, name: str, engine_pid: int | None, sample_hz: float, every: float) -> None:
    """Report this node's energy to the proxy of an engine that spans nodes."""
    from greenml.llm.meter_source import open_meter_source
    from greenml.llm.node_agent import NodeReporter

    token = os.environ.get(NODE_TOKEN_ENV, "").strip()
    if not token:
        raise ConfigError(f"set {NODE_TOKEN_ENV} to the secret the proxy was started with")
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", name):
        raise ConfigError(f"--name must be 1-64 letters, digits, '.', '_' or '-', not {name!r}")
    source = open_meter_source(engine_pid, sample_hz)
    reporter = NodeReporter(source, _url(proxy_url, "--proxy"), name, token, every)
    click.echo(f"greenml llm node {name}: energy of {source.scope} ({source.method}) "
               f"to {proxy_url} every {every:g} s", err=True)  # fmt: skip
    previous = {sig: signal.signal(sig, lambda *_: reporter.stop())
                for sig in (signal.SIGTERM, signal.SIGINT)}  # fmt: skip
    try:
        reporter.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        source.close()
    if reporter.refused:
        raise ConfigError(reporter.refused)


def _since(text: str | None) -> float | None:
    if text is None:
        return None
    from greenml.schedule.timeparse import parse_duration_s, parse_instant

    try:
        return time.time() - parse_duration_s(text, "--since")
    except ConfigError:
        return parse_instant(text, "--since").timestamp()


@llm.command("stats")
@click.option("--model", help="Only this model.")
@click.option("--tenant", metavar="T", help="Only this tenant.")
@click.option("--since", metavar="WHEN", help="A duration back (24h, 7d) or an ISO-8601 time.")
@db_option
@json_option("Print the figures as JSON on stdout.")
def stats(
    model: str | None, tenant: str | None, since: str | None, db_url: str | None, as_json: bool
) -> None:
    """Energy per prompt and output token, per request, idle share and CO2eq of proxied traffic."""
    from greenml.llm.records import read_rows
    from greenml.llm.stats import compute_stats
    from greenml.store import open_store

    since_s = _since(since)
    with open_store(db_url) as store:
        rows, idle = read_rows(store, since_s=since_s)
    doc = compute_stats(rows + idle, model=model, tenant=tenant)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    _print(doc)


def _fmt(value: Any, unit: str = "", digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}g} {unit}".rstrip()


def _print(doc: dict[str, Any]) -> None:
    e = doc["energy_j"]
    ratio = doc["prefill_decode_ratio"]
    lines = [
        f"requests            {doc['requests']}  {doc['statuses']}",
        f"J per prompt token  {_fmt(doc['j_per_prompt_token'], 'J')}",
        f"J per output token  {_fmt(doc['j_per_output_token'], 'J')}",
        f"Wh per 1,000 req.   {_fmt(doc['wh_per_1000_requests'], 'Wh')}",
        f"energy per request  p50 {_fmt(e['p50'], 'J')}  p95 {_fmt(e['p95'], 'J')}  "
        f"p99 {_fmt(e['p99'], 'J')}",
        f"attributed + idle   {_fmt(doc['attributed_j'], 'J')} + {_fmt(doc['idle_j'], 'J')} "
        f"(metered {_fmt(doc['metered_j'], 'J')}; idle share {_fmt(doc['idle_share'])})",
        f"static + dynamic    {_fmt(doc['static_j'], 'J')} + {_fmt(doc['dynamic_j'], 'J')} "
        "(share of the idle floor + what serving added)",
        f"CO2eq               {_fmt(doc['co2eq_g'], 'g')}",
        f"prefill/decode cost {_fmt(ratio['estimate'])} ± {_fmt(ratio['spread'])} per token",
        f"method              {', '.join(doc['method']) or '-'}; tokens: {doc['token_sources']}",
        f"scope               {doc['scope']}",
    ]
    click.echo("\n".join(lines))
