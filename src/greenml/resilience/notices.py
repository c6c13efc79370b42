"""Cloud termination notices, polled on a background thread.

AWS posts a spot interruption two minutes ahead at
``/latest/meta-data/spot/instance-action`` of the instance metadata service
(404 until then; IMDSv2 needs a session token from ``PUT /latest/api/token``).
GCP answers ``TRUE`` at ``/computeMetadata/v1/instance/preempted`` (header
``Metadata-Flavor: Google``) once a preemptible or spot VM is being stopped,
30 s ahead. A notice files the same request as SIGTERM does, with the
provider's budget.

Base URLs come from the argument, else ``GREENML_AWS_METADATA_URL`` /
``GREENML_GCP_METADATA_URL``, else the providers' link-local addresses. The
client uses short timeouts and never a proxy. A metadata service that does not
answer is reported once as a warning (notices will not be seen), never silently.

Lazy imports: httpx (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

from greenml.errors import ConfigError, NoticeError
from greenml.resilience.signals import BUDGET_AWS_S, BUDGET_GCP_S

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("greenml")

AWS_METADATA_URL = "http://169.254.169.254"
GCP_METADATA_URL = "http://metadata.google.internal"
AWS_TOKEN_PATH = "/latest/api/token"
AWS_ACTION_PATH = "/latest/meta-data/spot/instance-action"
GCP_PREEMPTED_PATH = "/computeMetadata/v1/instance/preempted"


@dataclass(frozen=True)
class Notice:
    """A termination notice.

    Attributes:
        provider: ``aws`` or ``gcp``.
        action: ``terminate``, ``stop``, ``hibernate`` (AWS) or ``preempted`` (GCP).
        budget_s: Seconds left for the emergency checkpoint.
        at: When the instance goes away, when the provider says.
    """

    provider: str
    action: str
    budget_s: float
    at: datetime | None = None

    @property
    def reason(self) -> str:
        """How the interruption is named in logs."""
        return f"{self.provider} {self.action} notice"


class NoticeSource(Protocol):
    """One provider's metadata endpoint."""

    provider: str
    base_url: str

    def check(self) -> Notice | None:
        """The notice if one is posted, else None; raises NoticeError when unreachable."""
        ...

    def close(self) -> None:
        """Release the HTTP client."""
        ...


class _HttpSource:
    def __init__(self, base_url: str, timeout_s: float, budget_s: float) -> None:
        if not (timeout_s > 0 and budget_s > 0):
            raise ConfigError("the notice timeout and budget must be > 0 s")
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.budget_s = budget_s
        self._client: httpx.Client | None = None

    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            self._client = httpx.Client(
                base_url=self.base_url, timeout=httpx.Timeout(self.timeout_s), trust_env=False
            )
        return self._client

    def _request(self, method: str, path: str, headers: dict[str, str]) -> httpx.Response:
        import httpx

        try:
            return self._http().request(method, path, headers=headers)
        except httpx.HTTPError as exc:
            cause = " ".join(str(exc).split()) or type(exc).__name__
            raise NoticeError(f"{self.base_url}{path}: {cause}") from exc

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class AwsSpotNotices(_HttpSource):
    """AWS spot ``instance-action`` via IMDSv2."""

    provider = "aws"

    def __init__(
        self, base_url: str | None = None, *, timeout_s: float = 1.0, budget_s: float = BUDGET_AWS_S
    ) -> None:
        url = base_url or os.environ.get("GREENML_AWS_METADATA_URL") or AWS_METADATA_URL
        super().__init__(url, timeout_s, budget_s)
        self._token: str | None = None

    def _fetch_token(self) -> str:
        headers = {"X-aws-ec2-metadata-token-ttl-seconds": "21600"}
        response = self._request("PUT", AWS_TOKEN_PATH, headers)
        if response.status_code != 200:
            raise NoticeError(f"{self.base_url}{AWS_TOKEN_PATH}: HTTP {response.status_code}")
        return response.text.strip()

    def check(self) -> Notice | None:
        for attempt in range(2):
            if self._token is None:
                self._token = self._fetch_token()
            headers = {"X-aws-ec2-metadata-token": self._token}
            response = self._request("GET", AWS_ACTION_PATH, headers)
            if response.status_code == 401 and attempt == 0:
                self._token = None  # expired: fetch a new one and ask again
                continue
            break
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise NoticeError(f"{self.base_url}{AWS_ACTION_PATH}: HTTP {response.status_code}")
        try:
            doc: dict[str, Any] = response.json()
            action = str(doc["action"])
            at = _parse_time(doc.get("time"))
        except (ValueError, KeyError, TypeError) as exc:
            raise NoticeError(f"{self.base_url}{AWS_ACTION_PATH}: unreadable notice {exc}") from exc
        budget = self.budget_s
        if at is not None:
            budget = min(budget, max(0.0, (at - datetime.now(timezone.utc)).total_seconds()))
        return Notice("aws", action, budget, at)


class GcpPreemptionNotices(_HttpSource):
    """GCP ``instance/preempted`` (``TRUE`` once the VM is being preempted)."""

    provider = "gcp"

    def __init__(
        self, base_url: str | None = None, *, timeout_s: float = 1.0, budget_s: float = BUDGET_GCP_S
    ) -> None:
        url = base_url or os.environ.get("GREENML_GCP_METADATA_URL") or GCP_METADATA_URL
        super().__init__(url, timeout_s, budget_s)

    def check(self) -> Notice | None:
        response = self._request("GET", GCP_PREEMPTED_PATH, {"Metadata-Flavor": "Google"})
        if response.status_code != 200:
            raise NoticeError(f"{self.base_url}{GCP_PREEMPTED_PATH}: HTTP {response.status_code}")
        answer = response.text.strip().upper()
        if answer == "TRUE":
            return Notice("gcp", "preempted", self.budget_s)
        if answer == "FALSE":
            return None
        raise NoticeError(f"{self.base_url}{GCP_PREEMPTED_PATH}: unexpected answer {answer[:40]!r}")


def notice_source(provider: str, base_url: str | None = None) -> NoticeSource:
    """The source for ``aws`` or ``gcp``.

    Raises:
        ConfigError: Another provider name.
    """
    name = provider.lower()
    if name == "aws":
        return AwsSpotNotices(base_url)
    if name == "gcp":
        return GcpPreemptionNotices(base_url)
    raise ConfigError(f"no termination notices for provider {provider!r} (known: aws, gcp)")


class NoticePoller:
    """Polls one source on a daemon thread and reports the first notice.

    Args:
        source: Where to look.
        on_notice: Called once, from the poller thread, with the notice.
        interval_s: Seconds between polls (AWS and GCP both suggest about 5).
    """

    def __init__(
        self, source: NoticeSource, on_notice: Callable[[Notice], None], interval_s: float = 5.0
    ) -> None:
        if not interval_s > 0:
            raise ConfigError(f"the poll interval must be > 0 s, not {interval_s}")
        self.source = source
        self.on_notice = on_notice
        self.interval_s = interval_s
        self.polls = 0
        self.failures = 0
        self.notice: Notice | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> Notice | None:
        """Ask once; report a notice; warn at the first failure."""
        self.polls += 1
        try:
            notice = self.source.check()
        except NoticeError as exc:
            self.failures += 1
            if self.failures == 1:
                log.warning(
                    "cannot read %s termination notices (%s); they will not be seen "
                    "while this lasts",
                    self.source.provider.upper(),
                    exc,
                )
            return None
        if notice is not None:
            self.notice = notice
            self.on_notice(notice)
        return notice

    def start(self) -> NoticePoller:
        """Start polling (the first poll is immediate); returns ``self``."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._run, name=f"greenml-{self.source.provider}-notices", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop polling and release the HTTP client."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.source_timeout_s + self.interval_s)
            self._thread = None
        self.source.close()

    @property
    def source_timeout_s(self) -> float:
        return float(getattr(self.source, "timeout_s", 1.0))

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.poll_once() is not None:
                return
            self._stop.wait(self.interval_s)


def _parse_time(value: Any) -> datetime | None:
    if value is None:
        return None
    at = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return at if at.tzinfo else at.replace(tzinfo=timezone.utc)


def start_poller(
    notices: str | NoticeSource | None,
    on_notice: Callable[[Notice], None],
    interval_s: float = 5.0,
) -> NoticePoller | None:
    """Start polling ``aws``/``gcp`` (or a given source); None when ``notices`` is None."""
    if notices is None:
        return None
    source = notice_source(notices) if isinstance(notices, str) else notices
    return NoticePoller(source, on_notice, interval_s).start()
