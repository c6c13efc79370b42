"""One exception tree for everything greenml raises on purpose, grouped by kind.

Every error class of the package is defined here. The second level says what kind
of failure it is, and the kind decides the CLI's exit code (one line on stderr,
never a traceback)::

    GreenmlError                     exit 2 unless a kind below says otherwise
    ├── ConfigError                  2  bad user input: an argument, an option, a file
    │   ├── RecordValueError         a value the store cannot hold (too long, NUL, NaN, absurd)
    │   ├── KnobUnavailable          a sweep knob cannot apply here; its config is skipped
    │   └── MissingExtra             a feature needs an optional extra that is not installed
    ├── NotFound                     3  what was asked for is not there
    │   ├── RunNotFound              no stored run matches an id or prefix (a StoreError)
    │   ├── JobNotFound              no stored run belongs to a job id (a StoreError)
    │   └── ProjectNotFound          no team-server project has this name
    ├── PermissionDenied             4  not allowed: a token, or root / CAP_SYS_ADMIN
    │   ├── AccessDenied             a team-server token is missing, unknown or not allowed
    │   ├── PowerLimitPermissionError    setting a power limit needs root (a PowerLimitError)
    │   ├── ClockPermissionError         locking clocks needs root (a ClockLockError)
    │   └── AgentRefused             the node agent refused a request (an AgentError)
    ├── Unsupported                  5  this machine, GPU or driver cannot do it
    │   ├── SensorUnavailable        a sensor cannot be opened here (a SensorError)
    │   ├── PowerLimitUnsupported    the GPU or driver has no power limits (a PowerLimitError)
    │   └── ClockUnsupported         the GPU or driver cannot lock clocks (a ClockLockError)
    ├── DeviceControlError           6  a device setting could not be changed
    │   ├── PowerLimitError          a GPU power limit could not be set
    │   └── ClockLockError           GPU clocks could not be locked or unlocked
    ├── ServiceError                 7  a service greenml talks to failed or answered nonsense
    │   ├── TeamServerError          a team server did not do what was asked (``reason``)
    │   │   ├── UploadError              a run could not be sent to a team server (it waits)
    │   │   └── ServerReadError          a team server could not be read
    │   ├── IntensityApiError        a carbon-intensity API failed or answered nonsense
    │   ├── AgentError               the node agent could not be reached or answered nonsense
    │   ├── PushError                a run's figures could not be pushed (Pushgateway, OTLP)
    │   └── MetricsSourceError       a second source (Prometheus for Kepler) could not be read
    └── (no kind: exit 2)
        ├── SensorError              a sensor could not be read (the Meter records a gap)
        ├── WindowError              a measurement window was misused
        ├── StoreError               the run store cannot be opened, read or written
        │   ├── RunConflict              a run id is already taken by another project
        │   └── RecordTypeError          a record value has the wrong type (strict reading)
        ├── LedgerError              the ledger cannot be read, written or exported
        ├── CheckpointError          a checkpoint could not be written, read or restored
        │   └── ManifestError            a checkpoint's manifest is missing or does not match
        ├── NoticeError              a cloud metadata service gave no termination notice
        ├── CompressError            a compression technique broke the model: variant failed
        │   └── NotApplicable            the technique does not apply: variant skipped
        ├── BatcherClosed            a request met a closed dynamic batcher
        ├── CacheUnavailable         a cache's store is unreachable (the cache fails open)
        └── RequestTooLarge          a request body is over the team server's limit

A class with two parents names its kind first (``class RunNotFound(NotFound,
StoreError)``), so ``except StoreError`` still catches it and its exit code is its
kind's. Code that catches one of these names the narrowest class that fits; the CLI
catches :class:`GreenmlError` and exits with :func:`exit_code`. Nothing greenml raises
on purpose is a bare ``ValueError`` or ``RuntimeError``.
"""

from __future__ import annotations


class GreenmlError(Exception):
    """Base of every error greenml raises; the CLI prints it as one line (see :func:`exit_code`)."""

    exit_code = 2


def exit_code(error: GreenmlError) -> int:
    """The CLI's exit code for ``error``: its kind's (2 bad input, 3 not found, 4 permission,
    5 unsupported, 6 device control, 7 a service), 2 when it has none. A team server's
    refusal is judged by its reason: ``auth refused`` is 4, ``not found`` is 3."""
    reason = getattr(error, "reason", None)
    if isinstance(error, TeamServerError) and reason in _KIND_OF_REASON:
        return _KIND_OF_REASON[reason].exit_code
    return int(error.exit_code)


class NotFound(GreenmlError):
    """What was asked for is not there: a run, a job, a project."""

    exit_code = 3


class PermissionDenied(GreenmlError):
    """Not allowed: a team-server token, or a device setting that needs root."""

    exit_code = 4


class Unsupported(GreenmlError):
    """This machine, GPU or driver cannot do what was asked."""

    exit_code = 5


class DeviceControlError(GreenmlError):
    """A device setting (power limit, clocks) could not be changed."""

    exit_code = 6


class ServiceError(GreenmlError):
    """A service greenml talks to (team server, intensity API, Pushgateway, Prometheus)
    failed, refused, or answered nonsense."""

    exit_code = 7


class ConfigError(GreenmlError):
    """Bad input from the user: an argument, an option, a file."""


class RecordValueError(ConfigError):
    """A run's value the store cannot hold: a text longer than its column or with a NUL, a
    number that is not finite, an energy below zero, a time in an absurd year.

    Raised before anything is written; the team server answers it with 422.
    """


class KnobUnavailable(ConfigError):
    """A sweep knob cannot be applied on this machine or to this step; the config is skipped."""


class MissingExtra(ConfigError, ImportError):
    """A feature needs an optional dependency: the message names ``pip install 'greenml[…]'``.

    Also an ImportError, so ``except ImportError`` around an optional import still works.
    """

    def __init__(self, feature: str, extra: str, cause: BaseException | None = None) -> None:
        self.feature, self.extra = feature, extra
        why = f" ({cause})" if cause is not None else ""
        super().__init__(f"{feature} needs pip install 'greenml[{extra}]'{why}")


class SensorError(GreenmlError):
    """A sensor could not be read. The Meter records a gap; it never crashes the program."""


class SensorUnavailable(Unsupported, SensorError):
    """A sensor cannot be opened on this machine (no driver, no device, no permission)."""


class WindowError(GreenmlError):
    """A measurement window was misused: begun twice, or ended without a begin."""


class StoreError(GreenmlError):
    """The run store cannot be opened, read or written."""


class RunNotFound(NotFound, StoreError):
    """No stored run matches the given id or prefix."""


class LedgerError(GreenmlError):
    """The ledger cannot be read, written or exported."""


class IntensityApiError(ServiceError):
    """A carbon-intensity API could not be reached, refused us, or answered nonsense.

    Attributes:
        provider: Who we asked, e.g. ``"Electricity Maps"``.
        path: The URL path asked for (no query string, no credentials).
        status: The HTTP status, or ``None`` when no response came back.
    """

    def __init__(
        self, provider: str, path: str, cause: str, status: int | None = None, detail: str = ""
    ) -> None:
        self.provider = provider
        self.path = path
        self.status = status
        message = f"{provider}: {cause} on {path}"
        super().__init__(f"{message} — {detail}" if detail else message)


class CheckpointError(GreenmlError):
    """A checkpoint could not be written, read, or restored."""


class ManifestError(CheckpointError):
    """A checkpoint's manifest is missing, unreadable, or does not match its files."""


class NoticeError(GreenmlError):
    """A metadata service did not answer, or answered something unexpected."""


class PowerLimitError(DeviceControlError):
    """A GPU power limit could not be set."""


class PowerLimitPermissionError(PermissionDenied, PowerLimitError):
    """NVML refused to set a power limit: the process lacks root / CAP_SYS_ADMIN."""


class PowerLimitUnsupported(Unsupported, PowerLimitError):
    """The GPU or driver does not allow power limits to be set."""


class ClockLockError(DeviceControlError):
    """GPU graphics clocks could not be locked or unlocked."""


class ClockPermissionError(PermissionDenied, ClockLockError):
    """The driver refused to lock clocks: the process lacks root / CAP_SYS_ADMIN."""


class ClockUnsupported(Unsupported, ClockLockError):
    """The GPU or driver does not allow its clocks to be locked."""


class CompressError(GreenmlError):
    """A compression technique produced a broken model; the report shows the variant failed."""


class NotApplicable(CompressError):
    """The technique does not apply to this model or device; the message says why.

    A builder raises it and ``greenml compress`` reports the variant as ``skipped``
    with the message as the reason.
    """


class BatcherClosed(GreenmlError):
    """A request was submitted to, or left in, a closed dynamic batcher."""


class RecordTypeError(StoreError):
    """A record value does not have the type its key calls for (strict reading)."""


class CacheUnavailable(GreenmlError):
    """The cache store is unreachable (now, or still backing off after a failure)."""


class JobNotFound(NotFound, StoreError):
    """No stored run belongs to the given job id."""


class PushError(ServiceError):
    """A finished run's figures could not be pushed (Pushgateway, OTLP); the run is stored."""


class MetricsSourceError(ServiceError):
    """A second source of figures (Prometheus, for Kepler's) could not be read."""


class RunConflict(StoreError):
    """A run id is already stored for another project of the team server."""


class AccessDenied(PermissionDenied):
    """A team-server token is missing, unknown, revoked, or not allowed to do this.

    Attributes:
        status: The HTTP status the server answers with (401: who are you, 403: not yours).
    """

    def __init__(self, message: str, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


class TeamServerError(ServiceError):
    """A team server did not do what greenml asked of it.

    Attributes:
        reason: Why, in one of four words (:mod:`greenml.client`): ``server down``
            (unreachable, a timeout, a 5xx or 429: worth another try), ``auth refused``
            (no token, 401, 403), ``not found`` (404), ``bad data`` (the request or
            the answer could not be read).
    """

    def __init__(self, message: str, reason: str = "server down") -> None:
        super().__init__(message)
        self.reason = reason


class UploadError(TeamServerError):
    """A run could not be sent to a team server; it waits in the spool for the next try.

    Attributes:
        retry: False when the server refused the run itself (a 4xx): sending it again
            would not help.
    """

    def __init__(self, message: str, retry: bool = True, reason: str | None = None) -> None:
        super().__init__(message, reason or ("server down" if retry else "bad data"))
        self.retry = retry


class ServerReadError(TeamServerError):
    """A team server did not answer a read: unreachable, a refused token, nothing there, a 5xx."""


_KIND_OF_REASON: dict[str, type[GreenmlError]] = {
    "auth refused": PermissionDenied, "not found": NotFound}  # fmt: skip


class ProjectNotFound(NotFound):
    """No project of the team server has this name."""


class RequestTooLarge(GreenmlError):
    """A request body is larger than the team server accepts."""


class AgentError(ServiceError):
    """The node agent (``greenml agent``) could not be reached or answered nonsense."""


class AgentRefused(PermissionDenied, AgentError):
    """The node agent refused a request: outside its policy, malformed, too big, too fast.

    Attributes:
        code: One word: ``bad-request``, ``version``, ``size``, ``rate``, ``policy``,
            ``unavailable`` (the hardware failed) or ``internal``.
    """

    def __init__(self, message: str, code: str = "policy") -> None:
        super().__init__(message)
        self.code = code
