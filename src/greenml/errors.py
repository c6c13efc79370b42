"""One exception tree for everything greenml raises on purpose.

Every error class of the package is defined here::

    GreenmlError                     the CLI prints it as one line, exit 2
    ├── ConfigError                  bad user input: an argument, an option, a file
    │   ├── RecordValueError         a value the store cannot hold (too long, NUL, NaN, absurd)
    │   ├── KnobUnavailable          a sweep knob cannot apply here; its config is skipped
    │   └── MissingExtra             a feature needs an optional extra that is not installed
    ├── SensorError                  a sensor could not be read (the Meter records a gap)
    │   └── SensorUnavailable        a sensor cannot be opened on this machine
    ├── WindowError                  a measurement window was misused
    ├── StoreError                   the run store cannot be opened, read or written
    │   ├── RunNotFound              no stored run matches an id or prefix
    │   ├── JobNotFound              no stored run belongs to a job id
    │   ├── RunConflict              a run id is already taken by another project
    │   └── RecordTypeError          a record value has the wrong type (strict reading)
    ├── LedgerError                  the ledger cannot be read, written or exported
    ├── IntensityApiError            a carbon-intensity API failed or answered nonsense
    ├── CheckpointError              a checkpoint could not be written, read or restored
    │   └── ManifestError            a checkpoint's manifest is missing or does not match
    ├── NoticeError                  a cloud metadata service gave no termination notice
    ├── PowerLimitError              a GPU power limit could not be set
    │   ├── PowerLimitPermissionError    no root / CAP_SYS_ADMIN
    │   └── PowerLimitUnsupported        the GPU or driver does not allow it
    ├── ClockLockError               GPU clocks could not be locked or unlocked
    │   ├── ClockPermissionError         no root / CAP_SYS_ADMIN
    │   └── ClockUnsupported             the GPU or driver does not allow it
    ├── CompressError                a compression technique broke the model: variant failed
    │   └── NotApplicable            the technique does not apply: variant skipped
    ├── BatcherClosed                a request met a closed dynamic batcher
    ├── CacheUnavailable             a cache's store is unreachable (the cache fails open)
    ├── PushError                    a run's figures could not be pushed (Pushgateway, OTLP)
    ├── MetricsSourceError           a second source (Prometheus for Kepler) could not be read
    ├── AccessDenied                 a team-server token is missing, unknown or not allowed
    ├── ProjectNotFound              no team-server project has this name
    ├── RequestTooLarge              a request body is over the team server's limit
    ├── AgentError                   the node agent (``greenml agent``) could not be reached
    │   └── AgentRefused                 the agent refused a request (``code`` says why)
    └── TeamServerError              a team server did not do what was asked (``reason`` says why)
        ├── UploadError                  a run could not be sent to a team server (it waits)
        └── ServerReadError              a team server could not be read (unreachable, 4xx, 5xx)

Code that catches one of these names the narrowest class that fits; the CLI
catches :class:`GreenmlError`. Nothing greenml raises on purpose is a bare
``ValueError`` or ``RuntimeError``.
"""

from __future__ import annotations


class GreenmlError(Exception):
    """Base of every error greenml raises; the CLI prints it as one line, exit 2."""


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


class SensorUnavailable(SensorError):
    """A sensor cannot be opened on this machine (no driver, no device, no permission)."""


class WindowError(GreenmlError):
    """A measurement window was misused: begun twice, or ended without a begin."""


class StoreError(GreenmlError):
    """The run store cannot be opened, read or written."""


class RunNotFound(StoreError):
    """No stored run matches the given id or prefix."""


class LedgerError(GreenmlError):
    """The ledger cannot be read, written or exported."""


class IntensityApiError(GreenmlError):
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


class PowerLimitError(GreenmlError):
    """A GPU power limit could not be set."""


class PowerLimitPermissionError(PowerLimitError):
    """NVML refused to set a power limit: the process lacks root / CAP_SYS_ADMIN."""


class PowerLimitUnsupported(PowerLimitError):
    """The GPU or driver does not allow power limits to be set."""


class ClockLockError(GreenmlError):
    """GPU graphics clocks could not be locked or unlocked."""


class ClockPermissionError(ClockLockError):
    """The driver refused to lock clocks: the process lacks root / CAP_SYS_ADMIN."""


class ClockUnsupported(ClockLockError):
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


class JobNotFound(StoreError):
    """No stored run belongs to the given job id."""


class PushError(GreenmlError):
    """A finished run's figures could not be pushed (Pushgateway, OTLP); the run is stored."""


class MetricsSourceError(GreenmlError):
    """A second source of figures (Prometheus, for Kepler's) could not be read."""
class RunConflict(StoreError):
    """A run id is already stored for another project of the team server."""


class AccessDenied(GreenmlError):
    """A team-server token is missing, unknown, revoked, or not allowed to do this.

    Attributes:
        status: The HTTP status the server answers with (401: who are you, 403: not yours).
    """

    def __init__(self, message: str, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


class TeamServerError(GreenmlError):
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


class ProjectNotFound(GreenmlError):
    """No project of the team server has this name."""


class RequestTooLarge(GreenmlError):
    """A request body is larger than the team server accepts."""


class AgentError(GreenmlError):
    """The node agent (``greenml agent``) could not be reached or answered nonsense."""


class AgentRefused(AgentError):
    """The node agent refused a request: outside its policy, malformed, too big, too fast.

    Attributes:
        code: One word: ``bad-request``, ``version``, ``size``, ``rate``, ``policy``,
            ``unavailable`` (the hardware failed) or ``internal``.
    """

    def __init__(self, message: str, code: str = "policy") -> None:
        super().__init__(message)
        self.code = code
