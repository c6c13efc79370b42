"""What ``greenml run --server URL`` adds to a command's wall time, against a real team server.

Target (issue 35): ≤ 100 ms added (median of pairs ``greenml run -q --server URL -- true``
minus ``greenml run -q -- true``, in turn), the run stored locally and arriving on the
server every time (checked after each run: nothing lost). Printed too, for information:
the same where greenml sends before returning (``CI=true``: a CI job or a Slurm step may
end with greenml, so no detached sender is trusted there), which is what every run paid
before.

A real ``greenml server`` runs on 127.0.0.1 with a SQLite database, from a throw-away
HOME. The exit code is 0 even when a target fails: this is a report, not a test.

Usage::

    python benchmarks/upload_overhead.py [--runs 10]
"""

from __future__ import annotations

import argparse
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_startup import PY, bench_env, settle, timed

TARGET_MS = 100.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(tmp: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str, str]:
    """A real server on a free port, its URL and a write token."""
    db = tmp / "server.db"
    token = subprocess.run(
        [PY, "-c", "import sys; from greenml.store import access, open_store\n"
         f"with open_store({str(db)!r}) as s: print(access.create_token(s, 'team', 'write'))"],
        env=env, capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    port = free_port()
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen([PY, "-m", "greenml", "server", "--port", str(port), "--db", str(db)],
                            env=env, stdout=log, stderr=log)  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}", token
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"server did not start: {(tmp / 'server.log').read_text()[-1000:]}")


def server_count(tmp: Path) -> int:
    with sqlite3.connect(tmp / "server.db") as conn:
        return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])


def wait_for_count(tmp: Path, count: int, limit_s: float = 30.0) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server_count(tmp) >= count:
            return True
        time.sleep(0.05)
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--src", type=Path, default=None, help="greenml sources to time "
                        "(another checkout's src/, for a before/after)")  # fmt: skip
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="greenml-bench-upload-") as name:
        tmp = Path(name)
        env = bench_env(tmp, args.src) if args.src else bench_env(tmp)
        server, url, token = start_server(tmp, env)
        try:
            plain = [PY, "-m", "greenml", "run", "-q", "--", "true"]
            sent = [PY, "-m", "greenml", "run", "-q", "--server", url, "--", "true"]
            with_token = {**env, "GREENML_TOKEN": token}
            waited = {**with_token, "CI": "true"}
            walls: dict[str, list[float]] = {"plain": [], "sent": [], "waited": []}
            expected, lost = 0, 0
            for i in range(args.runs + 1):
                for key, argv_, env_ in (("plain", plain, env), ("sent", sent, with_token),
                                         ("waited", sent, waited)):  # fmt: skip
                    wall, _ = timed(argv_, env_)
                    settle(env)
                    if key != "plain":
                        expected += 1
                        lost += not wait_for_count(tmp, expected)
                    if i:
                        walls[key].append(wall)
        finally:
            server.terminate()
            server.wait(timeout=30)
    added = [1e3 * (s - p) for s, p in zip(walls["sent"], walls["plain"], strict=True)]
    added_waited = [1e3 * (s - p) for s, p in zip(walls["waited"], walls["plain"], strict=True)]
    plain_ms = 1e3 * statistics.median(walls["plain"])
    med = statistics.median(added)
    ratio = statistics.median(s / p for s, p in zip(walls["sent"], walls["plain"], strict=True))
    print(f"greenml run --server: {args.runs} runs of each, in turn; "
          f"`greenml run -q -- true` alone {plain_ms:.0f} ms (median)")
    print(f"  sending before returning (CI=true): adds {statistics.median(added_waited):.0f} ms "
          "(information: what every run paid before)")
    ok = med <= TARGET_MS and lost == 0
    print(f"TARGET greenml run --server adds: {med:.0f} ms (ratio {ratio:.2f}x the run without a "
          f"server), {expected - lost}/{expected} runs on the server -> "
          f"{'PASS' if ok else 'FAIL'} (target <= {TARGET_MS:.0f} ms, none lost)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
