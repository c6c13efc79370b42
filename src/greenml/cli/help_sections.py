"""``--help`` in sections: a command with many options lists them under headings.

:class:`SectionedCommand` takes ``sections``: (heading, option names) in the
order shown. An option no section names is listed under "Other options", so
no option is ever left out of the help.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

OTHER = "Other options"


class SectionedCommand(click.Command):
    """A click command whose options are shown in named sections."""

    def __init__(self, *args: Any, sections: Sequence[tuple[str, Sequence[str]]] = (),
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(*args, **kwargs)
        self.sections = [(heading, tuple(names)) for heading, names in sections]

    def section_of(self, param: click.Parameter) -> str:
        """The heading an option is shown under (by its first long name)."""
        names = set(getattr(param, "opts", ())) | set(getattr(param, "secondary_opts", ()))
        for heading, members in self.sections:
            if names & set(members):
                return heading
        return OTHER

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            if not isinstance(param, click.Option):
                continue
            record = param.get_help_record(ctx)
            if record is not None:
                rows.setdefault(self.section_of(param), []).append(record)
        for heading in [*(h for h, _ in self.sections), OTHER]:
            if rows.get(heading):
                with formatter.section(heading):
                    formatter.write_dl(rows[heading])
