"""The resilient HTTP layer under the Ollama and OpenAI-compatible embedders.

A timeout on every request; bounded retry with exponential backoff for transient failures
only (connection resets, 5xx, 429 with its Retry-After); a timeout is never retried, since
it is deterministic for that input: EmbedTimeout lets the caller split the batch instead.
"""

from __future__ import annotations

import email.utils
import errno
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from ragraf.embed.errors import (
    ConnectionRefused,
    EmbedTimeout,
    InputRejected,
    MalformedResponse,
    ProviderRejected,
    ProviderUnavailable,
    off_switch,
    refused_message,
)

# 400s whose message says the input is at fault (too long for the model's context), so
# splitting the batch and skipping one text fixes them; any other 4xx stops the run.
_INPUT_HINTS = ("context", "too long", "too large", "maximum", "exceed", "token", "length")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry transient failures."""

    max_attempts: int = 5
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    # A Retry-After longer than this is a quota reset, not a hiccup: fail and say so.
    max_retry_after_s: float = 120.0
    # A call with a time budget (a query's 5 s): once its attempts are spent, a Retry-After that still
    # fits in the budget is waited and the request tried once more, rather than giving up a second early.
    budget_s: float | None = None

    def fits(self, elapsed_s: float, wait_s: float) -> bool:
        """True when waiting wait_s after elapsed_s stays within the budget."""
        return self.budget_s is not None and elapsed_s + wait_s < self.budget_s

    def backoff(self, attempt: int) -> float:
        """Delay after the attempt-th failure (1-based): 1, 2, 4, 8 … capped at max_delay_s."""
        return min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))


def _tls_failed(exc: BaseException) -> bool:
    """True when a connect error comes from the TLS layer (ssl.SSLError anywhere in its causes)."""
    import ssl

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError) or "SSL" in type(seen).__name__ or "[SSL" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP-date; None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _refused(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if (
            isinstance(current, ConnectionRefusedError)
            or getattr(current, "errno", None) == errno.ECONNREFUSED
        ):
            return True
        current = current.__cause__ or current.__context__
    return "connection refused" in str(exc).lower() or "errno 111" in str(exc).lower()


def provider_message(response: httpx.Response) -> str:
    """The provider's own error text: OpenAI's error.message, Ollama's error, or the body's start."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            error = error.get("message") or json.dumps(error)
        if error:
            return str(error)[:300]
    return json.dumps(body)[:300]


class HttpEndpoint:
    """POST JSON to one base URL with the retry and error policy above."""

    def __init__(
        self,
        base_url: str,
        provider: str,
        timeout_s: float,
        headers: dict[str, str] | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        server_name: str = "the embedding server",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.sleep = sleep
        self.server_name = server_name
        self.client = httpx.Client(
            # A short connect timeout: an unreachable host should not cost the full budget.
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            headers=headers or {},
            transport=transport,
        )

    def post_json(self, path: str, payload: dict[str, Any]) -> Any:
        """POST payload to base_url + path and return the decoded JSON answer."""
        url = self.base_url + path
        last = ""
        started = time.monotonic()
        attempt, extra = 0, False
        while True:
            attempt += 1
            delay = self.retry.backoff(attempt)
            try:
                response = self._post_within_deadline(url, payload)
            except httpx.ConnectTimeout:
                last = f"connecting to {self.base_url} timed out"
            except httpx.TimeoutException:
                raise EmbedTimeout(
                    f"{self.provider} at {self.base_url} did not answer within {self.timeout_s:g} s",
                    suggest="raise RAGRAF_EMBED_TIMEOUT_S or lower RAGRAF_EMBED_BATCH_SIZE",
                ) from None
            except httpx.ConnectError as exc:
                if _refused(exc):
                    raise ConnectionRefused(
                        refused_message(self.base_url, self.server_name),
                        suggest=f"start {self.server_name} {off_switch()}",
                    ) from None
                if _tls_failed(exc):
                    # A TLS handshake fails the same way every time (https:// to a plain port, a bad
                    # certificate): retrying only delays the answer.
                    raise ProviderUnavailable(
                        f"TLS handshake with {self.base_url} failed: {exc}",
                        suggest="use http:// if the server does not speak TLS, or fix its certificate",
                    ) from None
                last = f"cannot connect to {self.base_url}: {exc}"
            except httpx.UnsupportedProtocol as exc:
                raise ProviderUnavailable(
                    f"{self.base_url} is not an http(s) URL: {exc}", suggest="fix RAGRAF_EMBED_URL"
                ) from None
            except (httpx.TransportError, httpx.DecodingError) as exc:
                # Resets, truncated bodies, protocol errors: the next attempt may well succeed.
                last = f"connection to {self.base_url} failed: {exc or type(exc).__name__}"
            else:
                if response.is_success:
                    return self._decode(response)
                status = response.status_code
                if status != 429 and status < 500:
                    raise self._rejected(response)
                last = f"HTTP {status}: {provider_message(response)}"
                # 429 usually, and 503 sometimes, say when to come back.
                wait = retry_after_seconds(response.headers.get("retry-after"))
                if wait is not None and wait > self.retry.max_retry_after_s:
                    what = "is rate limited" if status == 429 else "asks to wait"
                    raise ProviderUnavailable(
                        f"{self.provider} at {self.base_url} {what} for {wait:.0f} s ({last})",
                        suggest=f"wait, or use another model or key {off_switch()}",
                    )
                delay = wait if wait is not None else delay
                if (
                    attempt >= self.retry.max_attempts
                    and wait is not None
                    and not extra
                    and self.retry.fits(time.monotonic() - started, wait)
                ):
                    extra = True
                    self.sleep(wait)
                    continue
            if attempt >= self.retry.max_attempts:
                break
            self.sleep(delay)
        raise ProviderUnavailable(
            f"{self.provider} at {self.base_url} failed {attempt} times; last: {last}",
            suggest=f"check that {self.server_name} is healthy, then re-run (work done so far is cached) {off_switch()}",
        )

    def _post_within_deadline(self, url: str, payload: dict[str, Any]) -> httpx.Response:
        """POST and read the whole answer within timeout_s: httpx's timeouts bound each read, so a
        server dribbling its answer a byte at a time would otherwise hold the request forever."""
        deadline = time.monotonic() + self.timeout_s
        request = self.client.build_request("POST", url, json=payload)
        streamed = self.client.send(request, stream=True)
        try:
            body = bytearray()
            for piece in streamed.iter_raw():
                body += piece
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout(
                        f"no complete answer within {self.timeout_s:g} s", request=request
                    )
        finally:
            streamed.close()
        return httpx.Response(
            streamed.status_code, headers=streamed.headers, content=bytes(body), request=request
        )

    def _decode(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            raise MalformedResponse(
                f"{self.provider} at {self.base_url} answered with invalid JSON: {response.text[:120]!r}",
                suggest="check RAGRAF_EMBED_URL points at the embedding API",
            ) from None

    def _rejected(self, response: httpx.Response) -> ProviderRejected:
        status, message = response.status_code, provider_message(response)
        text = f"{self.provider} at {self.base_url} rejected the request (HTTP {status}): {message}"
        if status in (413, 422) or (status == 400 and any(h in message.lower() for h in _INPUT_HINTS)):
            return InputRejected(
                text, suggest="lower RAGRAF_EMBED_BATCH_SIZE or shorten chunks", status=status
            )
        if status in (401, 403):
            return ProviderRejected(
                text, suggest="set RAGRAF_EMBED_API_KEY (or OPENAI_API_KEY)", status=status
            )
        if status == 404:
            return ProviderRejected(
                text,
                suggest="check RAGRAF_EMBED_URL and RAGRAF_EMBED_MODEL (Ollama: ragraf doctor --pull)",
                status=status,
            )
        return ProviderRejected(text, suggest="check RAGRAF_EMBED_MODEL and RAGRAF_EMBED_URL", status=status)

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()
