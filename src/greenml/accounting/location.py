"""Where the user's electricity comes from: the intensity source their settings name.

Settings come from three layers, and the first layer that names any location
wins as a whole: explicit arguments (the CLI's ``--zone`` …), then the
environment (``GREENML_ZONE`` …), then the ``[location]`` section of the
config file. Within a layer the most specific setting is used:
``ci`` > ``trace`` > ``zone`` > ``region`` > ``country``; the description
says which others were ignored. Nothing is guessed: with no setting at all
the answer is ``None`` and a hint on how to set one.

Lazy imports: this module is on the path of every ``greenml run``, so the sources it
builds (``static``, ``live``, ``traces``), platformdirs and the TOML parser are imported
inside the functions that need them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from greenml.accounting.intensity import ConstantSource, IntensitySource
from greenml.config.paths import default_config_path as default_config_path  # re-exported
from greenml.errors import ConfigError

KEYS = ("ci", "trace", "zone", "region", "country")  # most specific first
ENV_VARS = {
    "ci": "GREENML_CI",
    "trace": "GREENML_INTENSITY_TRACE",
    "zone": "GREENML_ZONE",
    "region": "GREENML_REGION",
    "country": "GREENML_COUNTRY",
}
_EXAMPLES = "--zone DE, --region us-central1, --country FR, --ci 300 or --trace FILE.csv"
# Who answers for a zone: the packaged yearly means, or a live API.
PROVIDERS = ("static", "electricitymaps", "watttime", "ukci")
PROVIDER_ENV = "GREENML_INTENSITY_PROVIDER"


def resolve_intensity_source(
    *,
    region: str | None = None,
    zone: str | None = None,
    country: str | None = None,
    ci: float | None = None,
    trace: str | Path | None = None,
    config_path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    provider: str | None = None,
    fallback: bool = False,
) -> tuple[IntensitySource | None, str]:
    """The intensity source the user's location settings name, and how it was chosen.

    Args:
        region: A cloud region (``us-central1``, ``aws:eu-west-1``, ``westeurope``).
        zone: An Electricity Maps zone (``DE``, ``US-CAL-CISO``).
        country: An ISO 3166 code or English country name.
        ci: A fixed intensity in gCO2eq/kWh; overrides every location.
        trace: An hourly intensity CSV (see :func:`~greenml.accounting.traces.load_trace`).
        config_path: The TOML config file; the per-user one by default.
        env: Environment variables; ``os.environ`` by default.
        provider: Who answers for a ``zone``: ``static`` (packaged yearly
            means, the default), ``electricitymaps``, ``watttime`` (the zone is
            a WattTime region) or ``ukci`` (the zone is ``GB`` or a postcode).
            Also ``GREENML_INTENSITY_PROVIDER`` or ``provider`` in the config.
        fallback: When a ``trace`` does not cover a span, use the next
            setting of the same layer (zone, region or country) instead of
            failing; the result's provenance says so. Off unless asked for.

    Returns:
        ``(source, description)``, e.g. ``(…, "--zone DE-LU")``, or
        ``(None, hint)`` when no location is set anywhere.

    Raises:
        ConfigError: Unknown region/zone/country (with the closest names), a
            bad ``ci``, an unreadable trace or config file.
    """
    given = {"ci": ci, "trace": trace, "zone": zone, "region": region, "country": country}
    explicit = {k: v for k, v in given.items() if v is not None and str(v).strip()}
    env = os.environ if env is None else env
    path = Path(config_path) if config_path is not None else default_config_path()
    from_file = _read_config(path, required=config_path is not None)
    provider = _provider(provider or env.get(PROVIDER_ENV) or from_file.pop("provider", None))
    if explicit:
        return _choose(explicit, lambda k: f"--{k} {_shown(explicit[k])}", Path.cwd(), provider,
                       fallback)  # fmt: skip
    from_env = {k: env[var] for k, var in ENV_VARS.items() if env.get(var, "").strip()}
    if from_env:
        return _choose(
            from_env, lambda k: f"{ENV_VARS[k]}={from_env[k]}", Path.cwd(), provider, fallback
        )
    if from_file:
        return _choose(
            from_file,
            lambda k: f"config file {path}: {k} = {from_file[k]!r}",
            path.parent,
            provider,
            fallback,
        )
    hint = (
        "carbon unknown: no location set. Give one of "
        f"{_EXAMPLES}; or set {', '.join(ENV_VARS.values())}; "
        f"or add a [location] section to {path}"
    )
    return None, hint


def _provider(name: str | None) -> str:
    chosen = (name or "static").strip().lower()
    if chosen not in PROVIDERS:
        raise ConfigError(f"unknown intensity provider {name!r}; known: {', '.join(PROVIDERS)}")
    return chosen


def _choose(
    settings: Mapping[str, Any],
    label: Callable[[str], str],
    base: Path,
    provider: str,
    fallback: bool = False,
) -> tuple[IntensitySource, str]:
    """Build the source of the one setting given; a trace may name its location too.

    Raises:
        ConfigError: Two settings that contradict each other (two locations,
            or a fixed ``ci`` with a location or a trace): never a silent choice.
    """
    _refuse_conflicts(settings, label)
    key = next(k for k in KEYS if k in settings)
    description = label(key)
    backup = _fallback_key(settings, key) if fallback else None
    source: IntensitySource
    try:
        if backup is not None:
            from greenml.accounting.traces import load_trace

            spare = _build(backup, settings[backup], base, provider)
            source = load_trace(base / Path(str(settings[key])).expanduser(), fallback=spare)
            description += f" (falls back to {label(backup)} where the trace has no data)"
            return source, description
        source = _build(key, settings[key], base, provider)
    except ConfigError as e:
        raise ConfigError(f"{description}: {e}") from e
    others = [label(k) for k in KEYS if k in settings and k != key]
    if others:
        why = "overrides" if key == "ci" else "most specific; ignored:"
        description += f" ({why} {', '.join(others)})"
    if key == "zone" and provider != "static":
        description += f" via {provider}"
    return source, description


def _refuse_conflicts(settings: Mapping[str, Any], label: Callable[[str], str]) -> None:
    """At most one location and one intensity; ``ci`` stands alone."""
    places = [k for k in ("zone", "region", "country") if k in settings]
    direct = [k for k in ("ci", "trace") if k in settings]
    clash = places if len(places) > 1 else []
    if "ci" in settings and len(places) + len(direct) > 1:
        clash = direct + places
    elif len(direct) > 1:
        clash = direct
    if clash:
        named = " and ".join(label(k) for k in clash)
        raise ConfigError(f"conflicting location settings: {named}; give only one")


def _fallback_key(settings: Mapping[str, Any], key: str) -> str | None:
    """The setting a trace falls back to: the next most specific location."""
    if key != "trace":
        raise ConfigError("a fallback applies to an intensity trace: give --trace with it")
    spare = next((k for k in ("zone", "region", "country") if k in settings), None)
    if spare is None:
        raise ConfigError("a trace fallback needs a --zone, --region or --country to fall back to")
    return spare


def live_source(provider: str, zone: str) -> IntensitySource:
    """A live API answering for ``zone`` (credentials from the environment).

    ``provider`` is ``electricitymaps``, ``watttime`` (the zone is a WattTime
    region) or ``ukci`` (``GB`` or an outward postcode).
    """
    from greenml.accounting import live

    if provider == "electricitymaps":
        return live.ElectricityMapsSource(zone)
    if provider == "watttime":
        return live.WattTimeSource(zone)
    national = zone.upper() in ("GB", "UK", "NATIONAL")
    return live.UkCarbonIntensitySource(postcode=None if national else zone)


def _build(key: str, value: Any, base: Path, provider: str = "static") -> IntensitySource:
    from greenml.accounting import static

    if key == "ci":
        try:
            g_per_kwh = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{value!r} is not a number of gCO2eq/kWh") from None
        return ConstantSource.user(g_per_kwh)
    if key == "trace":
        from greenml.accounting.traces import load_trace

        return load_trace(base / Path(str(value)).expanduser())
    text = str(value).strip()
    if key == "zone":
        return static.zone_source(text) if provider == "static" else live_source(provider, text)
    if key == "region":
        return static.cloud_region_source(text)
    return static.country_source(text)


def _read_config(path: Path, *, required: bool) -> dict[str, Any]:
    """The ``[location]`` settings of a TOML file ({} if the file or section is absent)."""
    from greenml.config.toml_file import read_toml

    data = read_toml(path, "config file", missing_ok=not required)
    section = data.get("location", {})
    if not isinstance(section, dict):
        raise ConfigError(f"config file {path}: [location] must be a table")
    unknown = sorted(set(section) - {*KEYS, "provider"})
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown [location] key(s) {', '.join(unknown)}; "
            f"known: {', '.join(KEYS)}, provider"
        )
    settings: dict[str, Any] = {}
    for key, value in section.items():
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not (number if key == "ci" else isinstance(value, str)):
            kind = "a number" if key == "ci" else "a string"
            raise ConfigError(f"config file {path}: [location] {key} must be {kind}")
        if str(value).strip():
            settings[key] = value
    return settings


def _shown(value: Any) -> str:
    """A setting as labels show it: ``400`` whether given as 400 (Python) or 400.0 (the CLI)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    return str(value)
