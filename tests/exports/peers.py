"""Real output of the peer tools, made by running them (no hand-written files).

CodeCarbon 3.3.2 (offline tracker, country DEU) writes emissions.csv and, through its own
HTTPOutput, POSTs the JSON that its HTTP/API outputs send to a local server here.
Carbontracker 2.4.7 writes its log directory for two short epochs. Each tool runs in a
child process (they start threads and may touch the network, which fails fast here).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

_CODECARBON = """
import time, sys
from codecarbon import OfflineEmissionsTracker
from codecarbon.output_methods.http import HTTPOutput
t = OfflineEmissionsTracker(country_iso_code="DEU", output_dir=sys.argv[1], project_name="digits",
                            experiment_id="exp-7", measure_power_secs=1, log_level="error",
                            save_to_file=True, output_handlers=[HTTPOutput(sys.argv[2])])
t.start(); time.sleep(1.2); t.stop()
"""

_CARBONTRACKER = """
import time, sys
from carbontracker.tracker import CarbonTracker
t = CarbonTracker(epochs=2, log_dir=sys.argv[1], monitor_epochs=-1, update_interval=0.2,
                  verbose=0, components="cpu", epochs_before_pred=0)
for _ in range(2):
    t.epoch_start(); time.sleep(0.6); t.epoch_end()
t.stop()
"""


def _need(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        pytest.fail(f"{module} is not installed (make test installs it)") if _ci() else \
            pytest.skip(f"{module} is not installed")  # fmt: skip


def _ci() -> bool:
    import os

    return os.environ.get("CI") == "true"


def run_codecarbon(out: Path) -> tuple[Path, Path]:
    """(emissions.csv, the JSON CodeCarbon's HTTPOutput sent) of one real tracked run."""
    _need("codecarbon")
    bodies: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(201)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/emissions"
        done = subprocess.run([sys.executable, "-c", _CODECARBON, str(out), url],
                              capture_output=True, text=True, timeout=120, cwd=out)  # fmt: skip
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-2000:]
    assert bodies, "CodeCarbon's HTTPOutput sent nothing"
    posted = out / "codecarbon_http.json"
    posted.write_text(json.dumps([json.loads(b) for b in bodies]), encoding="utf-8")
    return out / "emissions.csv", posted


def run_carbontracker(log_dir: Path) -> Path:
    """Carbontracker's log directory after one real two-epoch run."""
    _need("carbontracker")
    argv = [sys.executable, "-c", _CARBONTRACKER, str(log_dir)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=log_dir.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    return log_dir
