"""The ``greenml`` command: thin commands that parse, call the API and render.

Every user error ends as one line on stderr and exit code 2, no traceback.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``greenml`` console script."""
    import click

    from greenml.cli.app import cli
    from greenml.errors import GreenmlError
    from greenml.run.process import guard_standard_fds

    guard_standard_fds()

    try:
        result = cli.main(args=argv, prog_name="greenml", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return 2
    except click.ClickException as exc:
        _fail(exc.format_message())
        return 2
    except click.exceptions.Abort:
        _fail("aborted")
        return 130
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except GreenmlError as exc:
        _fail(str(exc))
        return 2
    except KeyboardInterrupt:
        return 130
    return result if isinstance(result, int) else 0


def _fail(message: str) -> None:
    first_line = " ".join(str(message).split())
    print(f"greenml: error: {first_line}", file=sys.stderr)
