"""The Grafana dashboard and Prometheus rules in deploy/ use only exported metrics."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from greenml.exporter import EXPOSED_NAMES

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "greenml-rules.yml"
DASHBOARD = DEPLOY / "grafana" / "greenml.json"
METRIC = re.compile(r"\bgreenml_[a-z_]+\b")
PROMQL_LABELS = {"greenml_job"}  # label names that share the prefix


def metric_names(expr: str) -> set[str]:
    return set(METRIC.findall(expr)) - PROMQL_LABELS


def test_dashboard_panels_query_exported_metrics() -> None:
    dash = json.loads(DASHBOARD.read_text())
    variables = {v["name"] for v in dash["templating"]["list"]}
    assert {"datasource", "host", "job"} <= variables
    panels = dash["panels"]
    assert len(panels) >= 7
    used: set[str] = set()
    for panel in panels:
        assert panel["datasource"]["uid"] == "${datasource}"
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = metric_names(target["expr"])
            assert names, target["expr"]
            assert names <= EXPOSED_NAMES, names - EXPOSED_NAMES
            used |= names
    for wanted in (
        "greenml_device_power_watts",
        "greenml_device_energy_joules_total",
        "greenml_device_sm_activity_ratio",
        "greenml_emissions_grams_total",
        "greenml_cost_usd_total",
        "greenml_grid_intensity_grams_per_kwh",
    ):
        assert wanted in used


def _rules_structure(text: str) -> list[dict[str, Any]]:
    """The alert rules, parsed with PyYAML if installed, else by a strict line reader."""
    try:
        import yaml
    except ImportError:
        return _read_rules(text)
    data = yaml.safe_load(text)
    assert set(data) == {"groups"}
    rules = []
    for group in data["groups"]:
        assert set(group) == {"name", "rules"}
        rules.extend(group["rules"])
    return rules


def _read_rules(text: str) -> list[dict[str, Any]]:
    """Rules of the file's fixed layout: groups → rules → alert/expr/for/labels/annotations."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert lines[0] == "groups:"
    rules: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    block: str | None = None
    for line in lines[1:]:
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        if indent == 2:
            assert stripped.startswith("- name: "), line
        elif indent == 4:
            assert stripped == "rules:", line
        elif indent == 6:
            assert stripped.startswith("- alert: "), line
            current = {"alert": stripped.split(": ", 1)[1]}
            rules.append(current)
        elif indent == 8:
            assert current is not None
            key, _, value = stripped.partition(":")
            assert key in {"expr", "for", "labels", "annotations"}, line
            block = key
            current[key] = {} if key in ("labels", "annotations") else value.strip()
            if value.strip() == "|":
                current[key] = ""
        else:
            assert current is not None and block is not None and indent >= 10, line
            if isinstance(current[block], dict):
                key, _, value = stripped.partition(": ")
                current[block][key] = value.strip('"')
            else:
                current[block] += stripped + " "
    return rules


def test_rules_structure_and_metrics() -> None:
    rules = _rules_structure(RULES.read_text())
    by_name = {r["alert"]: r for r in rules}
    assert set(by_name) == {
        "GreenmlGpuIdleHoldingMemory",
        "GreenmlLowSmActivity",
        "GreenmlRunningDuringHighIntensity",
    }
    for rule in rules:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}
        assert rule["labels"]["severity"]
        assert rule["annotations"]["summary"]
        assert metric_names(rule["expr"]) <= EXPOSED_NAMES
    idle = by_name["GreenmlGpuIdleHoldingMemory"]
    assert idle["for"] == "30m" and "1073741824" in idle["expr"]
    assert by_name["GreenmlLowSmActivity"]["for"] == "1h"
    assert "< 0.15" in by_name["GreenmlLowSmActivity"]["expr"]


def test_strict_reader_agrees_on_the_rules_file() -> None:
    rules = _read_rules(RULES.read_text())
    assert rules[0]["alert"] == "GreenmlGpuIdleHoldingMemory"
    assert len(rules) == 3


def test_promtool_checks_the_rules() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian: apt-get install prometheus)")
    result = subprocess.run(
        [promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 3 rules found" in result.stdout


def test_promtool_unit_idle_alert(tmp_path: Path) -> None:
    """The idle alert fires after 30 min of zero activity with 20 GiB held, not before."""
    promtool = shutil.which("promtool")
    if promtool is None:
        ci = " (not required under CI)" if os.environ.get("CI") else ""
        pytest.skip(f"promtool not installed{ci}")
    labels = 'component="gpu",device="gpu7",host="n1",greenml_job="t",model="m"'
    idle_description = _read_rules(RULES.read_text())[0]["annotations"]["description"]
    test = f"""
rule_files: [{RULES}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'greenml_device_sm_activity_ratio{{{labels}}}'
        values: '0x50'
      - series: 'greenml_device_utilization_ratio{{{labels}}}'
        values: '0x50'
      - series: 'greenml_device_memory_used_bytes{{{labels}}}'
        values: '21474836480x50'
    alert_rule_test:
      - eval_time: 20m
        alertname: GreenmlGpuIdleHoldingMemory
        exp_alerts: []
      - eval_time: 40m
        alertname: GreenmlGpuIdleHoldingMemory
        exp_alerts:
          - exp_labels: {{severity: warning, host: n1, device: gpu7, greenml_job: t}}
            exp_annotations:
              summary: "GPU gpu7 on n1 idle for 30 min while holding memory"
              description: "{idle_description}"
"""
    path = tmp_path / "test.yml"
    path.write_text(test)
    result = subprocess.run(
        [promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
