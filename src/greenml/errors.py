"""One exception tree for everything greenml raises on purpose."""

from __future__ import annotations


class GreenmlError(Exception):
    """Base of every error greenml raises; the CLI prints it as one line, exit 2."""


class ConfigError(GreenmlError):
    """Bad input from the user: an argument, an option, a file."""


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


class CheckpointError(GreenmlError):
    """A checkpoint could not be written, read, or restored."""


class PowerLimitError(GreenmlError):
    """A GPU power limit could not be set."""


class PowerLimitPermissionError(PowerLimitError):
    """NVML refused to set a power limit: the process lacks root / CAP_SYS_ADMIN."""


class PowerLimitUnsupported(PowerLimitError):
    """The GPU or driver does not allow power limits to be set."""
