"""Carbon and cost of a measured run: the ``carbon`` and ``cost`` blocks of its record.

:func:`prepare_accounting` turns the options into sources before the command
starts, so bad input (an unknown provider, a malformed price file) stops the
run with one line, exit 2. :meth:`Accounting.account` runs after the command
and never raises a GreenmlError: a source that cannot answer (a trace that does
not cover the run, an API that fails) gives a block with ``status``
``unavailable`` and the reason, and the run is saved all the same. With no
location, carbon is ``unknown`` with a hint, never guessed.

Importing this module is cheap, and so is a run with no location and no price:
the location settings (options, ``GREENML_*``, the config file) are read by
:mod:`greenml.accounting.location`, but numpy and the other accounting modules
(carbon, cost, profile, pue, instances) are imported inside the functions that
use them, once a source, a price or an instance is known.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError, GreenmlError

if TYPE_CHECKING:
    from greenml.accounting.cost import PriceSource
    from greenml.accounting.footprint import Footprint
    from greenml.accounting.instances import InstancePrice
    from greenml.accounting.intensity import IntensitySource
    from greenml.accounting.pue import Pue
    from greenml.measure.measurement import Measurement

log = logging.getLogger("greenml")

Timeline = tuple[Sequence[float], Sequence[float]]
"""(Unix times, watts) of one device."""

NO_LOCATION_HINT = (
    "no location given: pass --region (cloud region), --zone (grid zone), --country, "
    "--intensity-trace CSV or --ci G_PER_KWH"
)
NO_PRICE_HINT = "no price given: pass --price USD_PER_KWH, --price-trace CSV or --instance TYPE"
NO_PUE_SOURCE = "not given: no facility overhead counted (pass --pue VALUE or a provider)"


@dataclass(frozen=True)
class AccountingOptions:
    """What the user said about location, PUE, prices and the instance (all optional)."""

    region: str | None = None
    zone: str | None = None
    country: str | None = None
    ci: float | None = None
    intensity_trace: str | None = None
    intensity_provider: str | None = None
    intensity_fallback: bool = False
    pue: str | None = None
    price: float | None = None
    price_trace: str | None = None
    instance: str | None = None
    spot: bool = False
    instance_prices: str | None = None
    supplier_ci: float | None = None
    certificates: tuple[str, ...] = ()
    market_file: str | None = None
    wue: str | None = None

    def any_given(self) -> bool:
        return any(getattr(self, f.name) not in (None, False, ()) for f in fields(self))


def unknown_carbon(hint: str = NO_LOCATION_HINT) -> dict[str, Any]:
    """The carbon block of a run without a location."""
    return {"kg": None, "status": "unknown", "hint": hint}


def unavailable(key: str, reason: str) -> dict[str, Any]:
    """A block whose source could not answer (``key`` is ``kg`` or ``usd``)."""
    return {key: None, "status": "unavailable", "reason": reason}


class Accounting:
    """The sources for one run, ready before it starts."""

    def __init__(
        self,
        intensity: IntensitySource | None = None,
        hint: str = NO_LOCATION_HINT,
        pue: Pue | None = None,
        price: PriceSource | None = None,
        instance: InstancePrice | None = None,
        location: str | None = None,
        deferred: _Deferred | None = None,
    ) -> None:
        self.intensity = intensity
        self.location = location
        self.hint = hint
        self.pue = pue
        self.price = price
        self.instance = instance
        self.failure: str | None = None  # the settings could not be read
        self._deferred = deferred
        self.footprint: Footprint | None = None  # market, water, embodied (defaults if None)

    @property
    def active(self) -> bool:
        """Whether anything will be computed (numpy is needed)."""
        self._settle()
        return self.intensity is not None or self.price is not None or self.instance is not None

    def _settle(self) -> None:
        """Take the location that the environment or the config file gave, once read."""
        deferred, self._deferred = self._deferred, None
        if deferred is None:
            return
        try:
            source, said, pue = deferred.result()
        except GreenmlError as exc:
            self.failure = str(exc)
            return
        if source is None:
            self.hint = said
        else:
            self.intensity, self.location, self.pue = source, said, pue

    def warm_up(self) -> None:
        """Import numpy and the accounting modules in the background while the command runs."""
        if self.active and "greenml.accounting.cost" not in sys.modules:
            threading.Thread(target=_import_heavy, name="greenml-accounting", daemon=True).start()

    def account(
        self, measurement: Measurement, timelines: Mapping[str, Timeline] | None = None
    ) -> dict[str, Any]:
        """The ``carbon`` and ``cost`` blocks of a run.

        Args:
            measurement: The run's measurement (energy, start, duration).
            timelines: (times, watts) per device; summed for the time profile.
        """
        if self.failure is not None or not self.active:
            carbon = unavailable("kg", self.failure) if self.failure else unknown_carbon(self.hint)
            blocks = {"carbon": carbon, "cost": _unknown_cost()}
        else:
            from greenml.accounting.profile import total_power

            start = measurement.started_at.timestamp()
            span = {"start_s": start, "end_s": start + measurement.duration_s,
                    "energy_uncertainty_rel": measurement.uncertainty_rel}  # fmt: skip
            times, power = total_power((timelines or {}).values())
            args = (times, power, measurement.total_j)
            blocks = {
                "carbon": self._carbon(args, span),
                "cost": self._cost(args, span, measurement.duration_s),
            }
        return {**blocks, **self._footprint(measurement, blocks["carbon"])}

    def _footprint(self, measurement: Measurement, carbon: dict[str, Any]) -> dict[str, Any]:
        """Market-based carbon, water and embodied carbon; a bug here costs only these blocks."""
        try:
            from greenml.accounting.footprint import Footprint
            from greenml.accounting.water import DEFAULT_WUE

            footprint = self.footprint or Footprint(None, DEFAULT_WUE)
            if footprint.place is None and self.intensity is not None:
                start = measurement.started_at.timestamp()
                grid = self.intensity.intensity(start, start + measurement.duration_s)
                footprint = footprint.at(grid.provenance.location)  # GREENML_* or config file
            return footprint.run_blocks(measurement, carbon)
        except Exception as exc:
            log.warning("greenml: market carbon, water and embodied not computed: %r", exc)
            reason = f"footprint accounting failed: {exc!r}"
            return {key: {"status": "unavailable", "reason": reason}
                    for key in ("carbon_market", "water", "embodied")}  # fmt: skip

    def _carbon(self, args: tuple[Any, Any, float], span: dict[str, Any]) -> dict[str, Any]:
        if self.intensity is None:
            return unknown_carbon(self.hint)
        from greenml.accounting.carbon import carbon_of

        try:
            grid = self.intensity.intensity(span["start_s"], span["end_s"])
            block = carbon_of(*args, grid, self._pue(), **span).to_dict()
        except GreenmlError as exc:
            block = unavailable("kg", str(exc))
        if self.location:
            block["location"] = self.location  # which setting chose the source
        return block

    def _cost(
        self, args: tuple[Any, Any, float], span: dict[str, Any], duration_s: float
    ) -> dict[str, Any]:
        block: dict[str, Any] = _unknown_cost()
        if self.price is not None:
            from greenml.accounting.cost import cost_of

            try:
                block = cost_of(*args, self.price, self._pue(), **span).to_dict()
            except GreenmlError as exc:
                block = unavailable("usd", str(exc))
        if self.instance is not None:
            instance = self.instance.to_dict(duration_s)
            if self.price is None:  # the instance's hours are the cost
                block = {"status": "ok", "basis": "instance", "usd": instance["usd"],
                         "source": instance["source"], "method": instance["method"]}  # fmt: skip
            block["instance"] = instance
        return block

    def _pue(self) -> Pue:
        from greenml.accounting.pue import Pue

        return self.pue or Pue(1.0, NO_PUE_SOURCE)


def prepare_accounting(
    options: AccountingOptions | None, env: Mapping[str, str] | None = None
) -> Accounting:
    """Resolve the options into sources; nothing heavy is imported when none is given.

    Raises:
        ConfigError: A bad option (unknown provider or instance, malformed file ...).
    """
    options = options or AccountingOptions()
    env = os.environ if env is None else env
    if not options.any_given():
        if not _settings_elsewhere(env):
            return Accounting()  # the common case stays cheap: no thread, no imports
        return Accounting(deferred=_Deferred(env))  # GREENML_* or the config file name one
    source, said = _intensity_source(options, env)
    if options.price is not None and options.price_trace is not None:
        raise ConfigError("give --price or --price-trace, not both")
    if options.spot and options.instance is None:
        raise ConfigError("--spot needs --instance TYPE")
    price: PriceSource | None = None
    if options.price is not None:
        from greenml.accounting.cost import FlatPrice

        price = FlatPrice(options.price)
    elif options.price_trace is not None:
        from greenml.accounting.cost import PriceTrace

        price = PriceTrace.from_csv(options.price_trace)
    instance = None
    if options.instance is not None:
        from greenml.accounting.instances import instance_price

        instance = instance_price(
            options.instance, spot=options.spot, table=options.instance_prices
        )
    hint, location = (said, None) if source is None else (NO_LOCATION_HINT, said)
    accounting = Accounting(source, hint, parse_pue(options.pue, env), price, instance, location)
    from greenml.accounting.footprint import prepare_footprint

    accounting.footprint = prepare_footprint(
        supplier_ci=options.supplier_ci, certificates=options.certificates,
        market_file=options.market_file, wue=options.wue, zone=options.zone,
        region=options.region, country=options.country,
    )  # fmt: skip
    accounting.warm_up()
    return accounting


def account_run(
    measurement: Measurement,
    timelines: Mapping[str, Timeline] | None,
    options: AccountingOptions | None,
) -> dict[str, Any]:
    """``{"carbon": {...}, "cost": {...}}`` for a measured run (prepare + account)."""
    return prepare_accounting(options).account(measurement, timelines)


def account_safely(
    accounting: Accounting, measurement: Measurement, timelines: Mapping[str, Timeline] | None
) -> dict[str, Any]:
    """:meth:`Accounting.account`, where even a bug gives labelled blocks, never an exception.

    A run's record must survive its accounting: the blocks say ``unavailable`` and why.
    """
    try:
        return accounting.account(measurement, timelines)
    except Exception as exc:
        log.warning("greenml: carbon and cost not computed: %r", exc)
        reason = f"accounting failed: {exc!r}"
        return {"carbon": unavailable("kg", reason), "cost": unavailable("usd", reason)}


def effective_rates(blocks: Mapping[str, Any], kwh: float) -> dict[str, float | None]:
    """The run's own carbon (g) and cost (USD) per measured kWh (PUE, trace, instance included)."""
    kg = (blocks.get("carbon") or {}).get("kg")
    usd = (blocks.get("cost") or {}).get("usd")
    if kwh <= 0:
        return {"g_per_kwh": None, "usd_per_kwh": None}
    return {
        "g_per_kwh": None if kg is None else float(kg) * 1000 / kwh,
        "usd_per_kwh": None if usd is None else float(usd) / kwh,
    }


def parse_pue(text: str | None, env: Mapping[str, str] | None = None) -> Pue | None:
    """``--pue``: a number (≥ 1) or a provider name; ``GREENML_PUE`` when not given."""
    text = text if text is not None else (env or {}).get("GREENML_PUE") or None
    if text is None:
        return None
    from greenml.accounting.pue import pue_for

    try:
        value = float(text)
    except ValueError:
        return pue_for(provider=text.strip())
    return pue_for(value=value)


def _intensity_source(
    options: AccountingOptions, env: Mapping[str, str]
) -> tuple[IntensitySource | None, str]:
    from greenml.accounting.location import resolve_intensity_source

    return resolve_intensity_source(
        region=options.region,
        zone=options.zone,
        country=options.country,
        ci=options.ci,
        trace=options.intensity_trace,
        env=dict(env),
        provider=options.intensity_provider,
        fallback=options.intensity_fallback,
    )


class _Deferred:
    """Location settings read from the environment and the config file in the background.

    Without options nothing needs to stop the run before it starts, so the
    settings are read while the command runs; a bad config file then makes
    carbon ``unavailable`` with the reason, and the run is saved.
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)
        self._result: tuple[IntensitySource | None, str, Pue | None] | None = None
        self._error: GreenmlError | None = None
        self._thread = threading.Thread(target=self._read, name="greenml-location", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            source, said = _intensity_source(AccountingOptions(), self._env)
            pue = parse_pue(None, self._env) if source is not None else None
            self._result = (source, said, pue)
            if source is not None:
                _import_heavy()
        except Exception as exc:  # reported in the carbon block, never raised into the run
            failed = GreenmlError(f"reading the location settings failed: {exc!r}")
            self._error = exc if isinstance(exc, GreenmlError) else failed

    def result(self) -> tuple[IntensitySource | None, str, Pue | None]:
        self._thread.join(timeout=30)
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise GreenmlError("the location settings could not be read in 30 s")
        return self._result


def _settings_elsewhere(env: Mapping[str, str]) -> bool:
    """Whether the environment or a config file may name a location or a PUE."""
    from greenml.accounting.location import ENV_VARS, PROVIDER_ENV, default_config_path

    names = (*ENV_VARS.values(), PROVIDER_ENV, "GREENML_PUE")
    return any(env.get(name, "").strip() for name in names) or default_config_path().exists()


def _unknown_cost() -> dict[str, Any]:
    return {"usd": None, "status": "unknown", "hint": NO_PRICE_HINT}


def _import_heavy() -> None:
    try:
        import greenml.accounting.carbon
        import greenml.accounting.cost  # noqa: F401
    except Exception as exc:  # only a warm-up: the real import reports any problem
        log.debug("accounting warm-up failed: %s", exc)
