"""The exporter under 20 concurrent scrapers, next to the stdlib server it replaced.

Two servers over the same 8 fake GPUs and a CPU, each in its own process:

- ``greenml``: ``Exporter.serve`` (greenml.exporter.endpoint: bounded pool,
  idle connections in a selector, backlog 128, shared renderings);
- ``stdlib``: the server greenml used before, copied below as the peer
  (``ThreadingHTTPServer`` + prometheus_client's ``MetricsHandler``: a thread
  per connection, no timeout, listen backlog 5).

20 scraper threads each open a new connection per scrape (as Prometheus does
against an HTTP/1.0 server), ``--requests`` scrapes per server in all,
alternating between the servers in rounds so both see the same machine load.
Latency: connect to the last byte. Then ``--idle`` connections that send
nothing are opened to each server: its threads and resident memory are read
from /proc. Target: p99 <= 20 ms for greenml. Exit code 0 even when the
target fails: this is a report, not a test.

Usage::

    python benchmarks/exporter_load.py [--requests 2000] [--scrapers 20] [--idle 1000]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET_P99_MS = 20.0
REQUEST = b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"


# ---------------------------------------------------------------- the servers


def serve_stdlib(registry: Any) -> int:
    """greenml's scrape endpoint before this change, verbatim (the peer)."""
    from http.server import ThreadingHTTPServer

    from prometheus_client.exposition import MetricsHandler

    class _Quiet:
        def log_message(self, format: str, *args: Any) -> None:
            """Log nothing."""

    handler = type("_Handler", (_Quiet, MetricsHandler.factory(registry)), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="greenml-exporter", daemon=True).start()
    return int(server.server_address[1])


def server_main(kind: str) -> None:
    """Serve until stdin closes; print the port first."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "src"))
    from tests.exporter.conftest import make_fake_meter

    from greenml.accounting.intensity import ConstantSource
    from greenml.exporter import Exporter

    meter = make_fake_meter()
    exp = Exporter(meter, intensity=ConstantSource.user(350.0), price_usd_per_kwh=0.2, job="b")
    exp.step()
    port = exp.serve("127.0.0.1", 0) if kind == "greenml" else serve_stdlib(exp.registry)
    stop = threading.Event()
    threading.Thread(target=exp.run, args=(stop,), daemon=True).start()  # 1 Hz ticks
    print(port, flush=True)
    sys.stdin.read()
    stop.set()


# ---------------------------------------------------------------- the scrapers


class Server:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", kind],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())
        self.latencies_ms: list[float] = []
        self.errors: list[str] = []

    def status(self) -> dict[str, int]:
        """Threads and resident memory (kB) of the server process."""
        out = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("Threads", "VmRSS"):
                out[key] = int(value.split()[0])
        return out

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def scrape_once(port: int) -> float:
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(REQUEST)
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    elapsed_ms = (time.perf_counter() - start) * 1000
    response = b"".join(chunks)
    if not response.startswith((b"HTTP/1.0 200", b"HTTP/1.1 200")) or len(response) < 1000:
        raise RuntimeError(f"bad answer: {response[:40]!r}")
    return elapsed_ms


def load(server: Server, requests: int, scrapers: int) -> None:
    """``requests`` scrapes by ``scrapers`` threads, each one after the other."""
    lock = threading.Lock()
    left = [requests]

    def scraper() -> None:
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            try:
                ms = scrape_once(server.port)
            except Exception as exc:
                with lock:
                    server.errors.append(type(exc).__name__)
                continue
            with lock:
                server.latencies_ms.append(ms)

    threads = [threading.Thread(target=scraper) for _ in range(scrapers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def idle_cost(server: Server, n: int) -> tuple[int, int]:
    """Threads and kB the server gains while ``n`` connections say nothing (1 s)."""
    before = server.status()
    socks = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(n)]
    time.sleep(1.0)
    during = server.status()
    for sock in socks:
        sock.close()
    return during["Threads"] - before["Threads"], during["VmRSS"] - before["VmRSS"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="scrapes per server")
    parser.add_argument("--scrapers", type=int, default=20)
    parser.add_argument("--idle", type=int, default=1000, help="idle connections per server")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--serve", choices=["greenml", "stdlib"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        server_main(args.serve)
        return 0

    servers = [Server("greenml"), Server("stdlib")]
    try:
        for server in servers:
            scrape_once(server.port)  # warm up
        per_round = [args.requests // args.rounds] * args.rounds
        per_round[-1] += args.requests - sum(per_round)
        for n in per_round:
            for server in servers:
                load(server, n, args.scrapers)
        idle = {s.kind: idle_cost(s, args.idle) for s in servers}
    finally:
        for server in servers:
            server.close()

    print(
        f"exporter, 8 fake GPUs + CPU, {args.scrapers} concurrent scrapers, {args.requests} "
        f"scrapes per server (new connection each), load average {os.getloadavg()[0]:.1f}"
    )
    print(f"  {'server':8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'>1 s':>5} {'errors':>6}  "
          f"{args.idle} idle connections")  # fmt: skip
    for s in servers:
        lat = s.latencies_ms
        slow = sum(ms > 1000 for ms in lat)
        threads, kb = idle[s.kind]
        print(
            f"  {s.kind:8} {percentile(lat, 50):8.2f} {percentile(lat, 99):8.2f} "
            f"{max(lat):8.1f} {slow:5d} {len(s.errors):6d}  +{threads} threads, "
            f"{kb / 1024:+.1f} MB"
        )
    ours, peer = servers[0].latencies_ms, servers[1].latencies_ms
    for q in (50, 99):
        print(f"  p{q} ratio stdlib / greenml: {percentile(peer, q) / percentile(ours, q):.1f}x")
    print(f"  max ratio stdlib / greenml: {max(peer) / max(ours):.1f}x")
    p99 = percentile(ours, 99)
    verdict = "PASS" if p99 <= TARGET_P99_MS and not servers[0].errors else "FAIL"
    print(f"target: greenml p99 <= {TARGET_P99_MS:.0f} ms → {p99:.2f} ms {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
