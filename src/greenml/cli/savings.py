"""``greenml savings``: plan (rank every advisor's changes), apply with consent, undo, verify."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import db_option, output_option, server_read_option
from greenml.errors import ConfigError

_EPILOG = """\b
Examples:
  greenml savings plan --project llm            rank the changes, save the plan
  greenml savings plan --format md -o plan.md   the same as a report
  greenml savings apply gpu-power-nvidia-a100   a policy in the config file (asks first)
  greenml savings apply idle-gpu --yes --out-dir deploy/   files for review (KEDA …)
  greenml savings verify                        before against after, verified → ledger
  greenml savings undo gpu-power-nvidia-a100
"""


@click.group(epilog=_EPILOG)
def savings() -> None:
    """What to change first across a project's runs; change it; prove it saved."""


def _tags(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for text in values:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise ConfigError(f"--tag {text!r}: write KEY=VALUE")
        out[key] = value
    return out


def _since(text: str | None) -> float | None:
    if text is None:
        return None
    from datetime import datetime, timezone

    from greenml.schedule.timeparse import parse_duration_s, parse_instant

    if text[:1].isdigit() and not any(c in text for c in "-:T"):
        return datetime.now(timezone.utc).timestamp() - parse_duration_s(text, "--since")
    return parse_instant(text, "--since").timestamp()


def _select(records: list[dict[str, Any]], since: float | None) -> list[dict[str, Any]]:
    if since is None:
        return records
    from datetime import datetime

    return [r for r in records
            if datetime.fromisoformat(str(r["started_at"]).replace("Z", "+00:00")).timestamp()
            >= since]  # fmt: skip


@savings.command(epilog=_EPILOG)
@db_option
@server_read_option
@click.option("--project", metavar="NAME", help="Runs tagged project=NAME, or named NAME.")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Runs with this tag.")
@click.option("--since", metavar="WHEN", help="Runs started since (ISO 8601, or 30d for the "
              "last 30 days).")  # fmt: skip
@click.option("--limit", type=click.IntRange(min=1), default=500, show_default=True,
              help="Newest runs looked at.")  # fmt: skip
@click.option("--period-days", type=click.FloatRange(min=1.0), default=None,
              help="The period the runs stand for (default: their own span, at least a day).")
@click.option("--deadline", default="+12h", show_default=True, metavar="TIME",
              help="Green hours: a job must finish by then, counted from its own start "
              "(+DURATION).")
@click.option("--instance-prices", type=click.Path(dir_okay=False, path_type=Path),
              metavar="CSV", help="Your instance price table (CSV) or a provider's export "
              "(AWS spot price history JSON), searched before the packaged prices.")
@click.option("--price-escalation", default="0%", show_default=True, metavar="PERCENT",
              help="Yearly change of prices, for the money over --years years (e.g. 3%).")
@click.option("--years", type=click.FloatRange(1, 30), default=3.0, show_default=True,
              help="Years the money over several years covers.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md", "html"]),
              default="table", show_default=True)  # fmt: skip
@output_option()
def plan(
    db_url: str | None, server_url: str | None, project: str | None, tags: tuple[str, ...],
    since: str | None, limit: int, period_days: float | None, deadline: str,
    instance_prices: Path | None, price_escalation: str, years: float, fmt: str,
    output: Path | None,
) -> None:  # fmt: skip
    """Rank the changes that would save most per year: kWh, CO2eq, $, with evidence."""
    from greenml.cli.read_from import read_server
    from greenml.savings.document import plan_document
    from greenml.savings.plan import plan_savings
    from greenml.schedule.timeparse import parse_duration_s

    wanted = _tags(tags) | ({"project": project} if project else {})
    if not deadline.strip().startswith("+"):
        raise ConfigError(f"--deadline {deadline!r}: a plan counts from each job's own start: "
                          "write +DURATION, like +12h")  # fmt: skip
    deadline_s = parse_duration_s(deadline.strip()[1:], "--deadline")
    period_s = None if period_days is None else period_days * 86400.0
    when = _since(since)
    money: dict[str, Any] = {"instance_prices": instance_prices,
                             "escalation": _rate(price_escalation),
             "years": years}  # fmt: skip
    if instance_prices is not None:
        from greenml.accounting.instances import load_table

        load_table(instance_prices)  # a bad table is one line before anything is read
    server = read_server(db_url, server_url)
    if server is not None:
        from greenml.jobs.remote import server_run, server_runs

        rows = server_runs(server, limit, None, wanted)
        records = _select([server_run(server, r["id"])["record"] for r in rows], when)
        result = plan_savings(records, lambda _id: [], scope=_scope(project, wanted, server.url),
                              period_s=period_s, deadline_s=deadline_s, **money)  # fmt: skip
        from dataclasses import replace

        why = ("read from the team server: records only (no samples: the sample-based "
               "findings are left out); the plan is not saved: apply reads a plan made with --db")
        result = replace(result, notes=(*result.notes, why))
        verified: dict[str, Any] = {}
        failed: dict[str, Any] = {}
    else:
        from greenml.cli.runs import open_ingested
        from greenml.diagnose import diagnose_run
        from greenml.report.audit import gate_verdicts
        from greenml.report.runset import RunSet
        from greenml.savings import state

        with open_ingested(db_url) as store:
            rows = store.list_runs(limit=limit, tag=wanted or None)
            if project and not rows:
                rows = store.list_runs(limit=limit, name=project)
            if (project or wanted) and not rows:
                raise ConfigError(f"no run matches {_scope(project, wanted, None)}")
            records = _select([store.get_record(r["id"]) for r in rows], when)
            runs = RunSet(records, store) if records else None
            result = plan_savings(
                records, store.samples, verdicts=gate_verdicts(runs) if runs else [],
                scope=_scope(project, wanted, None), period_s=period_s, deadline_s=deadline_s,
                diagnose=lambda run_id: diagnose_run(store, run_id), state=store.get_state,
                **money,
            )  # fmt: skip
            state.save_plan(store, result.to_dict())
            verified = state.verified(store)
            failed = {k: v for k, v in state.applied(store).items()
                      if (v.get("last_verify") or {}).get("status") == "not-saved"}
    if fmt == "table":
        _print_table(result)
        return
    if fmt == "json":
        from greenml.store.export import json_text

        data = plan_document(result, verified, failed).data
        render.write_output(json_text(data, ensure_ascii=False), output)
        return
    from greenml.cli.audit import render_document

    document = plan_document(result, verified, failed)
    render.write_output(render_document(document, fmt), output)


def _rate(text: str) -> float:
    from greenml.cli.options import yearly_rate

    return yearly_rate(text)


def _scope(project: str | None, tags: dict[str, str], server: str | None) -> str:
    where = f" on {server}" if server else ""
    if tags:
        return ", ".join(f"{k}={v}" for k, v in tags.items()) + where
    return (f"project {project}" if project else "all runs") + where


def _print_table(result: Any) -> None:
    from rich.table import Table

    from greenml.savings.document import COLUMNS, rows, totals_line

    table = Table(title=f"Savings plan: {result.scope}", title_justify="left")
    for column in COLUMNS:
        table.add_column(column, overflow="fold", no_wrap=column in ("item", "kWh/yr"))
    for row in rows(result):
        table.add_row(*(render.safe(c) for c in row))
    console = render.console()
    console.print(table)
    click.echo(totals_line(result))
    for note in result.notes:
        click.echo(f"note: {note}")
    if result.items:
        click.echo("Apply one: greenml savings apply ITEM (it asks first); JSON: --format json")


def _consent(what: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise ConfigError(f"{what}: not applied without consent; pass --yes to confirm")
    if not click.confirm(f"{what}?", default=False):
        raise ConfigError(f"{what}: not applied (declined)")


@savings.command()
@click.argument("item")
@db_option
@click.option("--yes", is_flag=True, help="Apply without asking (consent given here).")
@click.option("--out-dir", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("greenml-savings"), show_default=True, metavar="DIR",
              help="Where files for changes outside greenml are written.")  # fmt: skip
def apply(item: str, db_url: str | None, yes: bool, out_dir: Path) -> None:
    """Apply one plan ITEM: a policy in the config file, or files for review."""
    from greenml.cli.runs import open_ingested
    from greenml.config.settings import config_path
    from greenml.savings import state
    from greenml.savings.apply import apply_item, artifact_texts, policy_settings

    config = config_path()
    with open_ingested(db_url) as store:
        found = state.plan_item(store, item)
        settings = policy_settings(found)
        parts = []
        if settings:
            shown = ", ".join(f"{k}={v}" for k, v in settings.items())
            parts.append(f"write [policy.{item}] ({shown}) to {config}")
        names = list(artifact_texts(found))
        if names:
            parts.append(f"write {', '.join(names)} to {out_dir}/")
        if not parts:
            raise ConfigError(f"{item} is advice only ({found.get('title')}): nothing to apply")
        _consent(f"{found.get('title')}: " + " and ".join(parts), yes)
        done = apply_item(store, item, config, out_dir)
    if done.policy:
        click.echo(f"greenml: [policy.{item}] written to {done.config}; greenml run and "
                   "greenml.Run record it in each run's policy block")  # fmt: skip
    for path in done.files:
        click.echo(f"greenml: wrote {path} (for review; greenml does not apply it)")


@savings.command()
@click.argument("item")
@db_option
def undo(item: str, db_url: str | None) -> None:
    """Remove an applied ITEM's policy from the config file."""
    from greenml.cli.runs import open_ingested
    from greenml.config.settings import config_path
    from greenml.savings.apply import undo_item

    with open_ingested(db_url) as store:
        if not undo_item(store, item, config_path()):
            raise ConfigError(f"{item} is not applied: nothing to undo")
    click.echo(f"greenml: [policy.{item}] removed; files written for it stay for you to delete")


@savings.command()
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the outcomes as JSON.")
def verify(db_url: str | None, as_json: bool) -> None:
    """Before against after for every applied item; verified savings go to the ledger."""
    from greenml.cli.runs import open_ingested
    from greenml.savings.verify import verify_all

    with open_ingested(db_url) as store:
        outcomes = verify_all(store)
    if as_json:
        import json

        click.echo(json.dumps([o.__dict__ for o in outcomes], indent=2))
        return
    if not outcomes:
        click.echo("greenml: no applied item to verify (greenml savings apply ITEM first)")
    for o in outcomes:
        click.echo(_outcome_line(o))


def _outcome_line(o: Any) -> str:
    import greenml.quantities as q

    runs = f"{len(o.before)} run(s) before, {len(o.after)} after"
    what = "CO2eq per kWh" if o.metric == "carbon" else "energy per unit of work"
    if o.status == "waiting":
        return (f"{o.item_id}: waiting: {runs}; {o.needed} after needed (the gate's power "
                "calculation for the saving the plan expected); runs under a policy count "
                f"themselves, others: --tag savings={o.item_id}")  # fmt: skip
    if o.status == "no-baseline":
        return f"{o.item_id}: no run before the change in the store: nothing to compare"
    figure = q.percent_pm(o.saving_rel, o.uncertainty_rel)
    if o.status == "verified":
        where = f"; ledger seq {o.ledger_seq}" if o.ledger_seq else ""
        return f"{o.item_id}: VERIFIED {what} −({figure}) ({runs}){where}"
    return (f"{o.item_id}: NOT SAVED: {what} saved {figure}, not beyond its uncertainty "
            f"({runs}); undo it: greenml savings undo {o.item_id}")
