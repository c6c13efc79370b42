"""Run a child command the way a shell would, forwarding signals to it.

The signals greenml forwards are blocked in greenml and collected with
``sigtimedwait``, so none is lost and none interrupts greenml's own work. A
signal the terminal sent to the whole foreground process group (Ctrl-C, the
kernel's ``SI_KERNEL`` code) already reached the child, which shares greenml's
process group, and is not sent twice; one sent to greenml alone (``kill``) is
forwarded.

The child stays greenml's plain child (same process group and session), so the
terminal and job control treat the pair as one job, exactly as a shell would.
Its exit is noticed without reaping it (``waitid`` with ``WNOWAIT``): while it
is a zombie its final CPU time is still readable, and the run's last reading
counts the work it did after the sampler's last look.

If greenml itself is killed (``kill -9``, the OOM killer), the command runs on,
unmeasured, like any orphan. ``kill_on_exit`` (``greenml run --kill-on-exit``,
Linux) asks the kernel to send it SIGTERM when greenml dies
(``PR_SET_PDEATHSIG``); only the command itself gets it, not its children.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn

from greenml.errors import ConfigError

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
KILL_ON_EXIT_SIGNAL = signal.SIGTERM

FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
INTERRUPTING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals that stop a run on purpose (Ctrl-C, a scheduler's stop, a closed terminal)."""
_WAITED = {*FORWARDED, signal.SIGCHLD}
_SI_KERNEL = 0x80  # siginfo code of signals the kernel sends, e.g. from the terminal

CLOSED_STANDARD_FDS: set[int] = set()
"""Standard descriptors (0–2) greenml was started without: held on /dev/null for greenml,
closed again in the child (see :func:`guard_standard_fds`)."""


def guard_standard_fds() -> set[int]:
    """Hold each closed standard descriptor on /dev/null; return which were closed.

    Started with ``>&-``, greenml must neither crash on writing (``sys.stdout``
    is ``None``) nor open a file (the run store!) as descriptor 1 that the
    command would then write into. The command still gets them closed, as its
    user asked.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            held = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: fd itself
            if held != fd:
                os.dup2(held, fd)
                os.close(held)
            CLOSED_STANDARD_FDS.add(fd)
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False))  # noqa: SIM115 - lives for the process
    return set(CLOSED_STANDARD_FDS)


class Child:
    """A child process with greenml's stdin, stdout and stderr, untouched."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        kill_on_exit: bool = False,
    ) -> None:
        self.forwarded: list[int] = []
        self.interrupted_by: list[int] = []
        self._prctl = _prctl() if kill_on_exit else None  # loaded before fork, not in the child
        self._parent = os.getpid()
        self._mask_before = signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED)
        try:
            self.proc = subprocess.Popen(list(argv), env=env, preexec_fn=self._in_child)
        except FileNotFoundError:
            self.restore_signals()
            raise ConfigError(f"command not found: {argv[0]}") from None
        except PermissionError:
            self.restore_signals()
            raise ConfigError(f"permission denied: {argv[0]} is not executable") from None
        except OSError as exc:
            self.restore_signals()
            raise ConfigError(f"cannot run {argv[0]}: {exc.strerror}") from None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _in_child(self) -> None:
        """Between fork and exec: greenml's signal mask back, and the death signal if asked."""
        signal.pthread_sigmask(signal.SIG_SETMASK, self._mask_before)
        for fd in CLOSED_STANDARD_FDS:  # closed for greenml's caller: closed for the command too
            os.close(fd)
        if self._prctl is not None:
            self._prctl(_PR_SET_PDEATHSIG, int(KILL_ON_EXIT_SIGNAL), 0, 0, 0)
            if os.getppid() != self._parent:  # greenml died before the prctl took hold
                os.kill(os.getpid(), KILL_ON_EXIT_SIGNAL)

    def wait(self, tick: Callable[[], None], tick_s: float = 1.0) -> int:
        """Wait for the child, forwarding signals and calling ``tick`` about every ``tick_s``.

        Returns the child's return code (negative: killed by that signal).
        """
        self.wait_exit(tick, tick_s)
        return self.reap()

    def wait_exit(self, tick: Callable[[], None], tick_s: float = 1.0) -> None:
        """As :meth:`wait`, but leave the child a zombie: its final CPU time stays readable.

        Call :meth:`reap` afterwards for its return code.
        """
        while not self._exited():
            info = signal.sigtimedwait(_WAITED, tick_s)
            if info is None:
                tick()
                continue
            if info.si_signo in INTERRUPTING:
                self.interrupted_by.append(info.si_signo)  # Ctrl-C from the terminal too
            if info.si_signo != signal.SIGCHLD and info.si_code != _SI_KERNEL:
                self.forwarded.append(info.si_signo)
                self.proc.send_signal(info.si_signo)

    def _exited(self) -> bool:
        if self.proc.returncode is not None:
            return True
        if not hasattr(os, "waitid"):  # no WNOWAIT here (macOS has no waitid in Python)
            return self.proc.poll() is not None
        try:
            found = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped elsewhere
            return self.proc.poll() is not None
        return found is not None

    def reap(self) -> int:
        """Collect the exited child; its return code (negative: killed by that signal)."""
        return self.proc.wait()

    def restore_signals(self) -> None:
        """Give greenml its original signal mask back."""
        signal.pthread_sigmask(signal.SIG_SETMASK, self._mask_before)


def _prctl() -> Callable[..., int]:
    """libc's ``prctl``, for ``PR_SET_PDEATHSIG``.

    Raises:
        ConfigError: Not Linux, or no prctl in libc.
    """
    if not sys.platform.startswith("linux"):
        raise ConfigError("--kill-on-exit needs Linux (PR_SET_PDEATHSIG)")
    import ctypes

    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError) as exc:
        raise ConfigError(f"--kill-on-exit: prctl unavailable: {exc}") from None
    return prctl


def run_status(code: int, interrupted_by: Sequence[int] = ()) -> str:
    """``completed`` (exit 0), ``interrupted`` (stopped by Ctrl-C, SIGTERM or SIGHUP) or ``failed``.

    A command counts as interrupted when it died of one of those signals, exited
    with a shell's code for one (128 + N), or failed after greenml received one.
    """
    if code == 0:
        return "completed"
    died_of = -code if code < 0 else code - 128
    if died_of in INTERRUPTING or interrupted_by:
        return "interrupted"
    return "failed"


def exit_like(code: int) -> NoReturn:
    """End greenml the way the child ended: die of its signal, or exit with its code.

    Called last, after the run is stored: ``os._exit`` skips the interpreter's
    teardown (~0.1 s with SQLAlchemy loaded), which nothing needs any more.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    if code < 0:
        signum = -code
        if signum not in (signal.SIGKILL, signal.SIGSTOP):  # these cannot be handled anyway
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
        code = 128 + signum  # reached only for signals that do not terminate
    os._exit(code)
