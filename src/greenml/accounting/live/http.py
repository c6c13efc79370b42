"""A small HTTP client shared by the live intensity sources.

One :class:`ApiClient` per source wraps an ``httpx.Client`` with explicit
timeouts, a few retries with exponential backoff (honouring ``Retry-After``)
on connection errors, timeouts, 429 and 5xx, and no retry on other 4xx.
Every failure becomes one :class:`IntensityApiError` whose message is one
line naming the provider, the URL path (never the query, never a secret)
and the cause. httpx is imported only when a client is first used.
"""

from __future__ import annotations

import email.utils
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError, IntensityApiError

if TYPE_CHECKING:
    import httpx

_RETRY_STATUSES = frozenset({429}) | frozenset(range(500, 600))


@dataclass(frozen=True)
class HttpSettings:
    """Timeouts and retry policy.

    Attributes:
        connect_timeout_s: Time allowed to open a connection.
        read_timeout_s: Time allowed between bytes of the answer.
        max_attempts: Tries per request, the first included.
        backoff_base_s: Wait before the 2nd try; doubles for each further one.
        max_wait_s: Longest wait between tries; a longer ``Retry-After`` fails at once.
        sleep: How to wait (tests pass a recorder).
    """

    connect_timeout_s: float = 5.0
    read_timeout_s: float = 10.0
    max_attempts: int = 3
    backoff_base_s: float = 0.5
    max_wait_s: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)


class ApiClient:
    """GET JSON from one provider, with retries and one-line errors.

    Args:
        provider: Name used in error messages.
        base_url: Prefix of every path, e.g. ``https://api.watttime.org``.
        settings: Timeouts and retries (defaults: 5 s connect, 10 s read, 3 tries).
        client: An ``httpx.Client`` to reuse (its transport, proxies); timeouts
            from ``settings`` still apply per request. One is made when omitted.
        hints: Advice appended to errors by HTTP status, e.g. which variable
            holds the token for 401.
        secrets: Strings that must never appear in a message (tokens, passwords).
    """

    def __init__(
        self,
        provider: str,
        base_url: str,
        *,
        settings: HttpSettings | None = None,
        client: httpx.Client | None = None,
        hints: Mapping[int, str] | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.settings = settings or HttpSettings()
        if self.settings.max_attempts < 1:
            raise ConfigError("max_attempts must be at least 1")
        self._client = client
        self._owns_client = client is None
        self._hints = dict(hints or {})
        self._secrets = [s for s in secrets if s]

    def add_secret(self, secret: str) -> None:
        """Redact one more string (a token obtained at run time) from messages."""
        if secret:
            self._secrets.append(secret)

    def close(self) -> None:
        """Close the underlying client if this object made it."""
        if self._client is not None and self._owns_client:
            self._client.close()
            self._client = None

    def get_json(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        hints: Mapping[int, str] | None = None,
    ) -> Any:
        """GET ``base_url + path`` and decode the JSON answer.

        Raises:
            IntensityApiError: Every failure, after retries where they make sense.
        """
        import httpx

        url = self.base_url + path
        shown = httpx.URL(url).path
        timeout = httpx.Timeout(
            self.settings.read_timeout_s,
            connect=self.settings.connect_timeout_s,
            pool=self.settings.connect_timeout_s,
        )
        cfg = self.settings
        headers = {"accept": "application/json", **(headers or {})}
        for attempt in range(1, cfg.max_attempts + 1):
            last = attempt == cfg.max_attempts
            try:
                response = self._http().get(
                    url, params=params, headers=headers, auth=auth, timeout=timeout
                )
            except httpx.TimeoutException as exc:
                if last:
                    raise self._error(shown, self._timeout_cause(exc, attempt)) from None
                cfg.sleep(self._backoff(attempt))
                continue
            except httpx.TransportError as exc:
                if last:
                    cause = f"connection failed ({self._clean(exc)}){_tries(attempt)}"
                    raise self._error(shown, cause) from None
                cfg.sleep(self._backoff(attempt))
                continue
            except httpx.RequestError as exc:  # decoding, redirect loops: not worth a retry
                raise self._error(shown, f"request failed ({self._clean(exc)})") from None
            if response.status_code in _RETRY_STATUSES and not last:
                wait = self._wait_for(response, attempt)
                if wait is not None:
                    cfg.sleep(wait)
                    continue
            if response.status_code >= 400:
                raise self._status_error(shown, response, attempt, hints)
            if response.is_redirect:
                # Not followed: credentials must not travel to wherever it points.
                target = httpx.URL(response.headers.get("location", ""))
                moved = f"{target.host}{target.path}" if target.host else target.path
                raise self._error(
                    shown,
                    f"{response.status_code} redirect",
                    response.status_code,
                    f"moved to {moved}; check base_url",
                )
            try:
                return response.json()
            except (json.JSONDecodeError, UnicodeDecodeError):
                kind = response.headers.get("content-type", "unknown type")
                status = response.status_code
                raise self._error(shown, "answer is not JSON", status, kind) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def bad_response(self, path: str, why: str) -> IntensityApiError:
        """An error for a JSON answer that does not have the documented shape."""
        return self._error(path, "unexpected answer", None, why)

    # -- internals ---------------------------------------------------------

    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            self._client = httpx.Client()
        return self._client

    def _backoff(self, attempt: int) -> float:
        delay = self.settings.backoff_base_s * 2.0 ** (attempt - 1)
        return min(delay, self.settings.max_wait_s)

    def _wait_for(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before retrying; ``None`` when the server asks for too long."""
        after = _retry_after_s(response.headers.get("retry-after"))
        if after is None:
            return self._backoff(attempt)
        return after if after <= self.settings.max_wait_s else None

    def _status_error(
        self,
        path: str,
        response: httpx.Response,
        attempt: int,
        hints: Mapping[int, str] | None,
    ) -> IntensityApiError:
        status = response.status_code
        cause = f"{status} {response.reason_phrase or 'error'}"
        if status in _RETRY_STATUSES:
            after = _retry_after_s(response.headers.get("retry-after"))
            if after is not None and after > self.settings.max_wait_s:
                cause += f" (server asks to retry after {after:.0f} s)"
            cause += _tries(attempt)
        hint = (hints or {}).get(status) or self._hints.get(status)
        return self._error(path, cause, status, hint or _server_message(response))

    def _timeout_cause(self, exc: Exception, attempt: int) -> str:
        import httpx

        if isinstance(exc, httpx.ConnectTimeout):
            limit = f"connect timeout {self.settings.connect_timeout_s:g} s"
        else:
            limit = f"read timeout {self.settings.read_timeout_s:g} s"
        return f"timed out ({limit}){_tries(attempt)}"

    def _error(
        self, path: str, cause: str, status: int | None = None, detail: str = ""
    ) -> IntensityApiError:
        return IntensityApiError(
            self.provider, path, self._redact(cause), status, self._redact(detail)
        )

    def _clean(self, exc: Exception) -> str:
        text = " ".join(str(exc).split()) or type(exc).__name__
        return f"{type(exc).__name__}: {text[:160]}"

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return " ".join(text.split())


def _tries(attempt: int) -> str:
    return f" after {attempt} attempts" if attempt > 1 else ""


def _retry_after_s(value: str | None) -> float | None:
    """``Retry-After`` as seconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return max(seconds, 0.0)


def _server_message(response: httpx.Response) -> str:
    """The provider's own one-line explanation, if its body has one."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ""
    message: Any = None
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or body.get("detail")
        if isinstance(message, dict):
            message = message.get("message") or message.get("code")
    if not isinstance(message, str):
        return ""
    text = " ".join(message.split())
    return text if len(text) <= 160 else text[:157] + "..."
