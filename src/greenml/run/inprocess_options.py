"""What ``greenml.Run`` reads before and after the training: its settings, its ending.

:func:`run_settings` fills the constructor's unset arguments from the environment
or the config file; :func:`block_ending` turns the exception that ended a ``with``
block into the run's status and exit code.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("greenml")


def block_ending(exc: BaseException | None) -> tuple[str, int | None]:
    """(status, exit code) of a ``with`` block that ended with ``exc``."""
    if exc is None:
        return "completed", 0
    if isinstance(exc, SystemExit):
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if code == 0:
            return "completed", 0
        return ("interrupted" if code == 75 else "failed"), code
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", 130
    return "failed", 1


def run_settings(
    pue: Any, price: Any, db: Any, sample_hz: Any, log_to: Any
) -> tuple[Any, Any, Any, float, list[Any]]:
    """The arguments left unset, from the environment or the config file.

    Every value, a Python argument included, passes the same check as the CLI's
    (:mod:`greenml.quantities.bounds`), and ``GREENML_CPU_TDP_W`` is checked as
    ``greenml run`` checks it: a bad setting is refused before the work starts.

    Raises:
        ConfigError: A setting from any source that the CLI would refuse.
    """
    import os

    from greenml.config.settings import setting
    from greenml.run.preflight import check_tdp_env

    check_tdp_env(os.environ)
    no_sampler = isinstance(sample_hz, (int, float)) and not isinstance(sample_hz, bool) \
        and sample_hz == 0  # Run(sample_hz=0): windows only, as Meter(sample_hz=0)
    given = {"run.pue": pue, "run.price": price, "store.db": db,
             "run.sample_hz": None if no_sampler else sample_hz,
             "run.log_to": None if log_to is None else list(log_to)}  # fmt: skip
    out: dict[str, Any] = {name: setting(name, value) for name, value in given.items()}
    hz = 0.0 if no_sampler else out["run.sample_hz"]
    return (out["run.pue"], out["run.price"], out["store.db"], 1.0 if hz is None else float(hz),
            list(out["run.log_to"] or []))  # fmt: skip
