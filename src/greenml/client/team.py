"""A team server's HTTP API as greenml asks it: auth, timeouts and reasons in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from greenml.errors import ServerReadError, TeamServerError, UploadError

if TYPE_CHECKING:
    import httpx

    from greenml.run.server_settings import ServerSettings

TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 3.0
SERVER_DOWN = "server down"
AUTH_REFUSED = "auth refused"
NOT_FOUND = "not found"
BAD_DATA = "bad data"


def reason_for(status: int | None) -> str:
    """The reason a request failed, from the HTTP status (None: no answer at all)."""
    if status is None or status >= 500 or status in (408, 429):
        return SERVER_DOWN
    if status in (401, 403):
        return AUTH_REFUSED
    if status == 404:
        return NOT_FOUND
    return BAD_DATA


class TeamClient:
    """Requests to one team server with its token.

    Args:
        settings: The server's URL and token (:func:`greenml.run.server_settings.server_settings`).
        error: The error class failures are raised as: :class:`ServerReadError` for a
            read, :class:`UploadError` for an upload (``retry`` set from the reason).
    """

    def __init__(
        self, settings: ServerSettings, error: type[TeamServerError] = ServerReadError
    ) -> None:
        self.url = settings.url
        self._token = settings.token
        self._error = error
        self.reads = not issubclass(error, UploadError)

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """``GET path`` answered 200 with a JSON object.

        Raises:
            TeamServerError: As ``error``, with the reason (see :mod:`greenml.client`).
        """
        import httpx

        response = self._send(httpx.get, path, params=params or {},
                              headers={"Accept": "application/json"})  # fmt: skip
        if response.status_code != 200:
            raise self._refused(response)
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise self.fail(f"{self.url} answered something that is not a JSON object", BAD_DATA)
        return body

    def post_json(self, path: str, body: bytes) -> int:
        """``POST path`` with a JSON body; the status when the server took it (200, 201).

        Raises:
            TeamServerError: As ``error``, with the reason (see :mod:`greenml.client`).
        """
        import httpx

        response = self._send(httpx.post, path, content=body,
                              headers={"Content-Type": "application/json"})  # fmt: skip
        if response.status_code in (200, 201):
            return response.status_code
        raise self._refused(response)

    def fail(self, message: str, reason: str) -> TeamServerError:
        """The error to raise for ``message`` (one line) with ``reason``."""
        if issubclass(self._error, UploadError):
            return self._error(message, retry=reason == SERVER_DOWN, reason=reason)
        return self._error(message, reason)

    def _send(
        self, method: Any, path: str, *, headers: dict[str, str], **kw: Any
    ) -> httpx.Response:
        import httpx

        if not self._token:
            raise self.fail(f"no token for {self.url}: set GREENML_TOKEN or [server] token",
                            AUTH_REFUSED)  # fmt: skip
        try:
            response: httpx.Response = method(
                f"{self.url}{path}", headers={"Authorization": f"Bearer {self._token}", **headers},
                timeout=httpx.Timeout(TIMEOUT_S, connect=CONNECT_TIMEOUT_S), **kw,
            )  # fmt: skip
        except httpx.HTTPError as exc:
            raise self.fail(f"{self.url} unreachable: {type(exc).__name__}: {exc}",
                            SERVER_DOWN) from exc  # fmt: skip
        return response

    def _refused(self, response: httpx.Response) -> TeamServerError:
        status = response.status_code
        return self.fail(f"{self.url} answered {status}: {_said(response)}", reason_for(status))


def _said(response: httpx.Response) -> str:
    """The server's own words (its ``error`` field, else the body), on one line."""
    try:
        message = response.json().get("error")
    except (ValueError, AttributeError):
        message = None
    text = str(message) if message else response.text or response.reason_phrase
    return " ".join(text.split())[:300]
