"""The ``greenml`` command: thin commands that parse, call the API and render.

Every user error ends as one line on stderr and an exit code by its kind, no traceback:
2 bad input, 3 not found, 4 permission, 5 unsupported here, 6 device control, 7 a
service failed (:func:`greenml.errors.exit_code`).
Output to a closed pipe (``greenml runs list | head -0``) ends quietly with the
status a command killed by SIGPIPE has (141), as coreutils do; output to a full
disk (``> /dev/full``) ends with one line and exit 1.
"""

from __future__ import annotations

import errno
import os
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``greenml`` console script."""
    import click

    from greenml.cli.app import cli
    from greenml.errors import GreenmlError, exit_code
    from greenml.run.process import guard_standard_fds

    guard_standard_fds()

    try:
        result = cli.main(args=argv, prog_name="greenml", standalone_mode=False)
        sys.stdout.flush()  # buffered output fails here, not in the interpreter's exit
    except SystemExit as exc:
        # click and rich meet EPIPE, quiet stdout and exit 1; coreutils' status is 141
        cause = exc.__context__
        pacified = type(sys.stdout).__name__.endswith("PacifyFlushWrapper")
        if pacified or (isinstance(cause, OSError) and cause.errno == errno.EPIPE):
            _silence_stdout()
            return 141
        raise
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            _silence_stdout()
            return 141
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EBADF):
            _silence_stdout()
            _fail(f"cannot write: {exc.strerror or exc}")
            return 1
        raise
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
        return exit_code(exc)
    except KeyboardInterrupt:
        return 130
    return result if isinstance(result, int) else 0


def _silence_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered for it is dropped, not re-raised."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass


def _fail(message: str) -> None:
    first_line = " ".join(str(message).split())
    print(f"greenml: error: {first_line}", file=sys.stderr)
