"""Federated learning or centralizing the data: measured client rounds against a central run.

:class:`FederatedMeter` measures, on one machine, each client's work in each
round (a Meter window) and the bytes it received and sent (the model's
arrays). It writes a JSON document (:class:`FederatedRun`) that
``greenml advise federated`` reads.

The comparison (every assumption in the output):

- **federated** = Σ measured client energy + Σ bytes exchanged × the link's
  energy per byte (:mod:`greenml.advise.comms`); the server's aggregation is
  counted when measured (``server`` windows);
- **central** = the clients' data bytes × energy per byte (uploaded once) +
  central training energy: a measured central run, or — labelled — the sum
  of the clients' compute (the same samples and epochs on one machine).

Clients measured on one machine stand for devices elsewhere: their energy is
what *this* machine draws for their work (said in the notes).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from greenml.advise.comms import UNCERTAINTY_REL, Link
from greenml.errors import ConfigError

FORMAT = "greenml-federated/1"


@dataclass(frozen=True)
class ClientRound:
    """One client's work in one round."""

    round: int
    client: str
    energy_j: float
    uncertainty_rel: float
    method: str
    duration_s: float
    bytes_down: float
    bytes_up: float


@dataclass
class FederatedRun:
    """What a federated training measured."""

    rounds: list[ClientRound] = field(default_factory=list)
    server_energy_j: float = 0.0
    data_bytes: dict[str, float] = field(default_factory=dict)
    central_energy_j: float | None = None
    central_method: str | None = None
    notes: list[str] = field(default_factory=list)

    def round_numbers(self) -> list[int]:
        return sorted({r.round for r in self.rounds})

    def clients(self) -> list[str]:
        return sorted({r.client for r in self.rounds})

    def client_energy_j(self) -> float:
        return sum(r.energy_j for r in self.rounds)

    def bytes_exchanged(self) -> float:
        return sum(r.bytes_down + r.bytes_up for r in self.rounds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "rounds": [vars(r) for r in self.rounds],
            "server_energy_j": self.server_energy_j,
            "data_bytes": self.data_bytes,
            "central_energy_j": self.central_energy_j,
            "central_method": self.central_method,
            "notes": self.notes,
        }

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> FederatedRun:
        """Read a document :meth:`write` wrote.

        Raises:
            ConfigError: Unreadable, not this format, malformed, or no rounds.
        """
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ConfigError(f"{path} is not JSON: {exc}") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: Any, where: str = "the federated record") -> FederatedRun:
        """A checked record; ConfigError naming ``where`` for anything malformed."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ConfigError(f"{where} is not a greenml federated record ({FORMAT})")
        rounds = data.get("rounds")
        if not isinstance(rounds, list) or not rounds:
            raise ConfigError(f"{where}: the federated run has no rounds: nothing to compare")
        sizes = data.get("data_bytes") or {}
        if not isinstance(sizes, dict):
            raise ConfigError(f"{where}: data_bytes must map clients to byte counts")
        central = data.get("central_energy_j")
        items = [_client_round(r, f"{where}, round entry {i + 1}") for i, r in enumerate(rounds)]
        return cls(
            rounds=items,
            server_energy_j=_amount(data.get("server_energy_j") or 0.0, "server_energy_j", where),
            data_bytes={str(k): _amount(v, f"data_bytes[{k!r}]", where) for k, v in sizes.items()},
            central_energy_j=(
                None if central is None else _amount(central, "central_energy_j", where)
            ),
            central_method=str(data.get("central_method") or "unknown"),
            notes=[str(n) for n in data.get("notes") or [] if isinstance(n, str)],
        )


def _amount(value: Any, what: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ConfigError(f"{where}: {what} must be a number >= 0, not {value!r}")
    if value == float("inf"):
        raise ConfigError(f"{where}: {what} must be finite")
    return float(value)


def _client_round(item: Any, where: str) -> ClientRound:
    if not isinstance(item, dict):
        raise ConfigError(f"{where}: not an object")
    number = item.get("round")
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise ConfigError(f"{where}: round must be a whole number >= 0, not {number!r}")
    client = item.get("client")
    if not isinstance(client, (str, int)) or isinstance(client, bool) or str(client) == "":
        raise ConfigError(f"{where}: client must be a name, not {client!r}")
    return ClientRound(
        number, str(client), _amount(item.get("energy_j"), "energy_j", where),
        _amount(item.get("uncertainty_rel"), "uncertainty_rel", where),
        str(item.get("method") or "unknown"), _amount(item.get("duration_s"), "duration_s", where),
        _amount(item.get("bytes_down"), "bytes_down", where),
        _amount(item.get("bytes_up"), "bytes_up", where),
    )  # fmt: skip


def _bytes(value: Sequence[Any] | float) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    return array_bytes(value)


def array_bytes(arrays: Sequence[Any]) -> float:
    """Bytes of a list of arrays (``nbytes``; ``len(bytes)`` for raw buffers)."""
    total = 0.0
    for a in arrays:
        size = getattr(a, "nbytes", None)
        total += float(size) if size is not None else float(len(a))
    return total


class FederatedMeter:
    """Measure client rounds (energy, bytes) with a Meter; write a :class:`FederatedRun`.

    Example::

        fm = FederatedMeter()
        with fm.client_round(client="0", round=1, received=global_weights) as done:
            new = train(global_weights)
            done(new)                      # the arrays sent back
        fm.run.write("fl.json")
    """

    def __init__(self, meter: Any = None) -> None:
        if meter is None:
            from greenml.measure.meter import Meter

            meter = Meter(sample_hz=10.0)
        self.meter = meter
        self.run = FederatedRun()

    @contextmanager
    def client_round(
        self, client: str, round: int, received: Sequence[Any] | float
    ) -> Iterator[Any]:
        """Measure one client's round; call the yielded function with what it sends.

        ``received`` and what is sent are arrays, or a number of bytes.
        """
        sent: list[float] = [0.0]

        def done(arrays: Sequence[Any] | float) -> None:
            sent[0] = _bytes(arrays)

        name = f"client={client}/round={round}"
        start = time.monotonic()
        with self.meter.window(name) as handle:
            yield done
        m = handle.measurement
        assert m is not None  # set when the window closes
        self.run.rounds.append(ClientRound(
            round, str(client), m.total_j, m.uncertainty_rel, _method(m),
            time.monotonic() - start, _bytes(received), sent[0],
        ))  # fmt: skip

    @contextmanager
    def server(self, round: int) -> Iterator[None]:
        """Measure the server's aggregation of one round."""
        with self.meter.window(f"server/round={round}") as handle:
            yield
        assert handle.measurement is not None
        self.run.server_energy_j += handle.measurement.total_j

    @contextmanager
    def central(self) -> Iterator[None]:
        """Measure the same training on the pooled data (the comparison's central side)."""
        with self.meter.window("central") as handle:
            yield
        m = handle.measurement
        assert m is not None
        self.run.central_energy_j = m.total_j
        self.run.central_method = _method(m)

    def data(self, client: str, arrays: Sequence[Any]) -> None:
        """Record the bytes of a client's local data set (what centralizing would move)."""
        self.run.data_bytes[str(client)] = array_bytes(arrays)


def _method(m: Any) -> str:
    from greenml.measure.measurement import weakest_method

    methods = [c.method for c in m.components.values()]
    return weakest_method(methods) if methods else "unknown"


@dataclass(frozen=True)
class FederatedAdvice:
    """Both set-ups' energy, the cheaper one, and the break-even conditions."""

    rounds: int
    clients: int
    link: Link
    federated_compute_j: float
    federated_comm_j: float
    server_j: float
    central_transfer_j: float
    central_compute_j: float
    central_source: str
    bytes_exchanged: float
    data_bytes: float
    break_even_kwh_per_gb: float | None
    max_rounds: float | None
    assumptions: tuple[str, ...]

    @property
    def federated_j(self) -> float:
        return self.federated_compute_j + self.federated_comm_j + self.server_j

    @property
    def central_j(self) -> float:
        return self.central_transfer_j + self.central_compute_j

    def decision(self) -> str:
        cheaper = "federated" if self.federated_j < self.central_j else "centralizing the data"
        other = max(self.federated_j, self.central_j)
        saving = 1 - min(self.federated_j, self.central_j) / other if other > 0 else 0.0
        text = f"{cheaper} uses {saving:.0%} less energy over a {self.link.name} link"
        if self.break_even_kwh_per_gb is not None:
            side = "below" if self.bytes_exchanged > self.data_bytes else "above"
            text += (
                f"; federated is the cheaper on links {side} "
                f"{self.break_even_kwh_per_gb:.3g} kWh/GB"
            )
        if self.max_rounds is not None:
            text += f"; federated is cheaper up to {self.max_rounds:.3g} rounds"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision(),
            "rounds": self.rounds,
            "clients": self.clients,
            "link": {
                "name": self.link.name,
                "kwh_per_gb": self.link.kwh_per_gb,
                "source": self.link.source,
            },
            "federated": {
                "energy_j": self.federated_j,
                "client_compute_j": self.federated_compute_j,
                "communication_j": self.federated_comm_j,
                "server_j": self.server_j,
                "bytes_exchanged": self.bytes_exchanged,
            },
            "central": {
                "energy_j": self.central_j,
                "transfer_j": self.central_transfer_j,
                "compute_j": self.central_compute_j,
                "compute_source": self.central_source,
                "data_bytes": self.data_bytes,
            },
            "break_even_kwh_per_gb": self.break_even_kwh_per_gb,
            "max_rounds": self.max_rounds,
            "communication_uncertainty_rel": UNCERTAINTY_REL,
            "assumptions": list(self.assumptions),
        }


def advise_federated(
    run: FederatedRun,
    link: Link,
    *,
    central_energy_j: float | None = None,
    central_source: str | None = None,
    data_bytes: float | None = None,
) -> FederatedAdvice:
    """Compare the measured federated run with centralizing its clients' data.

    Raises:
        ConfigError: No rounds, or no data size to move (neither measured nor given).
    """
    if not run.rounds:
        raise ConfigError("the federated run has no rounds: nothing to compare")
    rounds = run.round_numbers()
    data = data_bytes if data_bytes is not None else sum(run.data_bytes.values())
    if data_bytes is not None and not data_bytes >= 0:
        raise ConfigError(f"--data-bytes must be >= 0, not {data_bytes}")
    if data <= 0:
        raise ConfigError(
            "no client data size recorded: give --data-bytes (what centralizing moves)"
        )
    compute = run.client_energy_j()
    if central_energy_j is not None:
        central, how = central_energy_j, central_source or "given"
    elif run.central_energy_j is not None:
        central = float(run.central_energy_j)
        how = f"measured: the same training on the pooled data ({run.central_method} energy)"
    else:
        central = compute
        how = "assumed: the clients' compute, done on one machine (no central run measured)"
    exchanged = run.bytes_exchanged()
    comm = link.energy_j(exchanged)
    transfer = link.energy_j(data)
    # equal when compute + e·exchanged + server = e·data + central
    slope = exchanged - data
    gap = central - compute - run.server_energy_j
    even = None
    if slope != 0:
        e = gap / slope  # J per byte
        even = e * 1e9 / 3.6e6 if e >= 0 else None
    per_round = (compute + comm + run.server_energy_j) / len(rounds)
    max_rounds = (central + transfer) / per_round if per_round > 0 else None
    assumptions = (
        f"link: {link.name} {link.kwh_per_gb:g} kWh/GB ({link.source}); "
        f"±{UNCERTAINTY_REL:.0%} on communication energy",
        f"federated: {len(rounds)} round(s) × {len(run.clients())} client(s) measured on this "
        "machine; each round's download and upload counted once over the link",
        f"central: data uploaded once ({data / 1e6:.3g} MB) over the same link; training {how}",
        "end devices' radio and idle energy outside the measured windows not counted",
        f"rounds scale linearly: per round {per_round:.4g} J",
    )
    return FederatedAdvice(
        len(rounds), len(run.clients()), link, compute, comm, run.server_energy_j, transfer,
        central, how, exchanged, data, even, max_rounds, assumptions,
    )  # fmt: skip
