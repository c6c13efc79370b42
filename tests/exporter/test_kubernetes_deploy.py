"""deploy/kubernetes: manifests and the Helm chart's output checked against Kubernetes's schemas.

Built-in kinds are validated with kubernetes-validate (the API server's OpenAPI schemas,
shipped offline, strict: unknown fields fail); the ServiceMonitor (a Prometheus Operator
CRD that package does not carry) is checked for what makes it scrape: its selector
matches the Service and its endpoint names the Service's port. The chart is rendered
with ``helm template`` when helm is installed, else by a renderer of the small subset
of Go templates the chart uses (anything outside it fails the test).
The container arguments are parsed by greenml's own click commands.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

K8S = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
CHART = K8S / "helm" / "greenml-exporter"
K8S_VERSION = "1.30.0"


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _validate(doc: dict[str, Any]) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    if doc["apiVersion"].startswith("monitoring.coreos.com/"):
        return  # a CRD: see _check_service_monitor
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def _check_objects(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    for doc in docs:
        _validate(doc)
    by_kind = {d["kind"]: d for d in docs}
    ds, svc = by_kind["DaemonSet"], by_kind["Service"]
    pod_labels = ds["spec"]["template"]["metadata"]["labels"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostPID"] is True  # NVML's pids are the host's
    (container,) = pod["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert {p["targetPort"] for p in svc["spec"]["ports"]} <= set(ports)
    _parses("exporter", container["args"])
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["GREENML_CONTAINERS_DIR"] in mounts
    if "ServiceMonitor" in by_kind:
        _check_service_monitor(by_kind["ServiceMonitor"], svc)
    return by_kind


def _check_service_monitor(sm: dict[str, Any], svc: dict[str, Any]) -> None:
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(sm["spec"]) <= {"selector", "endpoints", "namespaceSelector", "jobLabel"}
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    names = {p["name"] for p in svc["spec"]["ports"]}
    for endpoint in sm["spec"]["endpoints"]:
        assert endpoint["port"] in names and endpoint["path"] == "/metrics"
        assert re.fullmatch(r"\d+[smh]", endpoint["interval"])


def _parses(command: str, args: list[str]) -> None:
    """The arguments are valid for ``greenml COMMAND`` (click parses them, nothing runs)."""
    from greenml.cli.app import cli

    group_ctx = cli.make_context("greenml", [command], resilient_parsing=True)
    cmd = cli.get_command(group_ctx, command)
    assert cmd is not None
    cmd.make_context(command, list(args))


def test_the_manifests_are_valid_kubernetes() -> None:
    docs = _docs((K8S / "manifests" / "exporter.yaml").read_text())
    docs += _docs((K8S / "manifests" / "servicemonitor.yaml").read_text())
    by_kind = _check_objects(docs)
    assert {"Namespace", "ServiceAccount", "DaemonSet", "Service", "ServiceMonitor"} == set(by_kind)


def test_the_training_job_example_is_valid_and_its_greenml_run_parses() -> None:
    (job,) = _docs((K8S / "manifests" / "training-job.yaml").read_text())
    _validate(job)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[:2] == ["greenml", "run"]
    _parses("run", command[2:])
    env = {e["name"] for e in container["env"]}
    assert {"GREENML_K8S_JOB_NAME", "NODE_NAME", "POD_NAME", "POD_NAMESPACE"} <= env


def test_the_dockerfile_runs_the_exporter_with_valid_arguments() -> None:
    lines = (K8S / "Dockerfile").read_text().splitlines()
    entry = json.loads(next(ln for ln in lines if ln.startswith("ENTRYPOINT"))[len("ENTRYPOINT"):])
    cmd = json.loads(next(ln for ln in lines if ln.startswith("CMD"))[len("CMD"):])
    assert entry == ["greenml", "exporter"]
    _parses("exporter", cmd)
    assert "EXPOSE 9464" in lines and f"--port {9464}" in shlex.join(cmd)


# -- the Helm chart --------------------------------------------------------------------

_EXPR = re.compile(r"\{\{(-?)\s*(.*?)\s*(-?)\}\}")


def _lookup(path: str, scope: dict[str, Any]) -> Any:
    value: Any = scope
    for part in path.lstrip(".").split("."):
        value = value[part]
    return value


def _render(text: str, scope: dict[str, Any]) -> str:
    """The chart's Go-template subset: values, ``quote``, ``toYaml | nindent N``, ``if``/``end``."""
    out: list[str] = []
    skipping = False
    pos = 0
    for m in _EXPR.finditer(text):
        chunk = text[pos : m.start()]
        if m.group(1) == "-":
            chunk = chunk.rstrip()
        if not skipping:
            out.append(chunk)
        pos = m.end()
        expr = m.group(2)
        if expr.startswith("if "):
            skipping = not _lookup(expr[3:], scope)
            continue
        if expr == "end":
            skipping = False
            continue
        if skipping:
            continue
        if (found := re.fullmatch(r"toYaml (\S+) \| nindent (\d+)", expr)) is not None:
            dumped = yaml.safe_dump(_lookup(found[1], scope), default_flow_style=False).rstrip()
            pad = " " * int(found[2])
            out.append("\n" + "\n".join(pad + line for line in dumped.splitlines()))
        elif (found := re.fullmatch(r"(\.[A-Za-z.]+) \| quote", expr)) is not None:
            out.append(json.dumps(str(_lookup(found[1], scope))))
        elif re.fullmatch(r"\.[A-Za-z.]+", expr):
            out.append(str(_lookup(expr, scope)))
        else:
            raise AssertionError(f"template construct outside the tested subset: {expr!r}")
    out.append(text[pos:])
    return "".join(out)


def _chart_output(values: dict[str, Any] | None = None) -> str:
    helm = shutil.which("helm")
    if helm is not None:
        enabled = (values or {}).get("serviceMonitor", {}).get("enabled")
        sets = [] if enabled is None else [f"--set=serviceMonitor.enabled={str(enabled).lower()}"]
        done = subprocess.run([helm, "template", "greenml", str(CHART), "--namespace", "greenml",
                               *sets], capture_output=True, text=True, check=True)  # fmt: skip
        return done.stdout
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    merged = yaml.safe_load((CHART / "values.yaml").read_text())
    for key, value in (values or {}).items():
        merged[key] = {**merged[key], **value} if isinstance(value, dict) else value
    scope = {"Values": merged, "Release": {"Name": "greenml", "Namespace": "greenml"},
             "Chart": {"Name": chart["name"], "AppVersion": chart["appVersion"]}}  # fmt: skip
    return "\n---\n".join(_render(p.read_text(), scope)
                          for p in sorted((CHART / "templates").glob("*.yaml")))  # fmt: skip


def test_the_chart_renders_valid_kubernetes() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "greenml-exporter"
    by_kind = _check_objects(_docs(_chart_output()))
    assert {"ServiceAccount", "DaemonSet", "Service", "ServiceMonitor"} == set(by_kind)
    image = by_kind["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "ghcr.io/greenml/greenml-exporter:0.1.0"


def test_the_chart_without_the_prometheus_operator() -> None:
    kinds = {d["kind"] for d in _docs(_chart_output({"serviceMonitor": {"enabled": False}}))}
    assert "ServiceMonitor" not in kinds and "DaemonSet" in kinds


def test_a_broken_manifest_is_caught() -> None:
    """The validation can fail: an unknown field and a wrong type are both refused."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    (ds,) = [d for d in _docs((K8S / "manifests" / "exporter.yaml").read_text())
             if d["kind"] == "DaemonSet"]  # fmt: skip
    ds["spec"]["template"]["spec"]["hostPid"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, K8S_VERSION, strict=True)
    del ds["spec"]["template"]["spec"]["hostPid"]
    ds["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "metrics"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, K8S_VERSION, strict=True)
