"""Acting on a passed budget during a run: one warning, or SIGTERM to this process.

:func:`greenml.run.budget.check_budget` judges the projection against the budget;
:func:`act_on_verdict` does what the budget's ``on_budget`` asks once it is passed.
"""

from __future__ import annotations

import logging
import os
import signal

from greenml.run.budget import Verdict

log = logging.getLogger("greenml")


def act_on_verdict(verdict: Verdict, notes: list[str]) -> None:
    """Note the passed budget in ``notes``; warn, or stop the program with SIGTERM."""
    notes.append(verdict.message().removeprefix("greenml: "))
    if verdict.budget.on_budget == "stop":
        log.warning("%s; stopping the program (SIGTERM)", verdict.message())
        os.kill(os.getpid(), signal.SIGTERM)
    else:
        log.warning("%s", verdict.message())
