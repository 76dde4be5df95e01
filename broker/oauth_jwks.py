"""Where the keys of signed OAUTHBEARER tokens come from: a JWKS file or a JWKS endpoint, as Kafka reads them.

``sasl.oauthbearer.jwks.endpoint.url`` is a ``file:`` URL or an ``http:`` /
``https:`` one (``oauth_config.py`` checks it and makes the source).

* ``JwksFile`` reads the file when the listener is set up, so a missing or
  bad file stops the start. Before each token is checked the file's
  modification time is looked at, and a changed file is read again (what
  kafka-clients 4.3's resolver does; Kafka's 2024 code read it once). While
  a changed file cannot be read, tokens are refused.
* ``JwksEndpoint`` keeps the keys fetched from the URL. ``load`` fetches
  them before the listeners open; a URL that cannot be read then stops the
  start (a ``ConfigError`` naming the key), as Kafka's broker fails to start.
  ``run`` (a task of the server's nursery) fetches them again every
  ``sasl.oauthbearer.jwks.endpoint.refresh.ms``, and at once when a token
  names a ``kid`` the keys do not have, with Kafka's limits: a kid longer
  than 1000 characters is not looked for, and the same kid at most once a
  minute (the last 16 missing kids are remembered); a refresh asked for
  while one runs is dropped. The token that named the unknown kid is
  refused; the next one is checked with the new keys. A fetch that fails is
  tried again after ``...retry.backoff.ms``, doubling, until
  ``...retry.backoff.max.ms`` have passed since the first try (Kafka's
  retry); a refresh that still fails keeps the keys it had. Fetches run in
  a worker thread (``urllib``, no proxy, 20 s timeouts as jose4j's), never
  on the event loop; a 200 answer with a JWK Set is the only good one.
"""

from __future__ import annotations

import collections
import http.client
import logging
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

import attrs
import trio

from .config import ConfigError
from .oauth_jws import JoseError, Jwk, Jws, parse_jwks, select_key

log = logging.getLogger("minibroker")
FETCH_TIMEOUT_S = 20.0
MISSING_KID_MAX_LENGTH = 1000
MISSING_KID_ENTRIES = 16
MISSING_KID_WAIT_MS = 60_000


class JwksUnavailable(Exception):
    """A JWKS that could not be fetched or read; the message says why."""


def fetch_jwks(url: str, timeout: float = FETCH_TIMEOUT_S) -> tuple[Jwk, ...]:
    """The keys at an http(s) URL (blocking: call it from a worker thread)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(url, headers={"Accept": "application/json"}), timeout=timeout) as r:
            if r.status != 200:
                raise JwksUnavailable(f"status {r.status} from {url}")
            return parse_jwks(r.read())
    except urllib.error.HTTPError as exc:  # an answer other than 2xx: it holds the connection, closed here
        exc.close()
        raise JwksUnavailable(f"HTTPError: {exc}") from None
    except (OSError, http.client.HTTPException, JoseError) as exc:
        raise JwksUnavailable(f"{type(exc).__name__}: {exc}") from None


def read_jwks_file(path: Path) -> tuple[Jwk, ...]:
    try:
        return parse_jwks(path.read_bytes())
    except (OSError, JoseError) as exc:
        raise JwksUnavailable(f"{type(exc).__name__}: {exc}") from None


def _stamp(path: Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


@attrs.define(eq=False)
class JwksFile:
    """The keys of a ``file:`` JWKS, read again when the file changes."""

    key: str  # the config key that names the file
    path: Path
    keys: tuple[Jwk, ...] = ()
    stamp: int | None = None

    def load(self) -> None:
        """Read the file at startup; ``ConfigError`` naming the key if it cannot be read."""
        stamp = _stamp(self.path)
        try:
            self.keys = read_jwks_file(self.path)
        except JwksUnavailable as exc:
            raise ConfigError(f"{self.key}: cannot read the JWKS file {self.path}: {exc}") from None
        self.stamp = stamp

    def resolve(self, jws: Jws) -> Jwk | None:
        stamp = _stamp(self.path)
        if stamp != self.stamp:
            try:
                self.keys = read_jwks_file(self.path)
            except JwksUnavailable as exc:
                raise JoseError(f"the JWKS file {self.path} changed and cannot be read: {exc}") from None
            self.stamp = stamp
            log.info("read the JWKS file %s again: %d keys", self.path, len(self.keys))
        return select_key(jws, self.keys)


def _now_ms() -> float:
    return time.monotonic() * 1000


@attrs.define(eq=False)
class JwksEndpoint:
    """The keys of an http(s) JWKS endpoint, fetched at startup, then refreshed."""

    key: str  # the config key that names the URL
    url: str
    refresh_ms: int
    backoff_ms: int
    backoff_max_ms: int
    fetch: Callable[[str], tuple[Jwk, ...]] = fetch_jwks
    clock: Callable[[], float] = _now_ms
    keys: tuple[Jwk, ...] = ()
    missing: collections.OrderedDict = attrs.Factory(collections.OrderedDict)  # kid -> when it may be asked again
    wanted: trio.Event | None = None  # set when a token named an unknown kid; made by ``run``

    def resolve(self, jws: Jws) -> Jwk | None:
        jwk = select_key(jws, self.keys)
        if jwk is None and jws.kid is not None and self.expedite(jws.kid):
            log.info("no key of the JWKS of %s fits a token with kid %r: refreshing it", self.url, jws.kid[:100])
        return jwk

    def expedite(self, kid: str) -> bool:
        """Ask ``run`` for a refresh because a token named ``kid``; False if Kafka's limits say not now."""
        if len(kid) > MISSING_KID_MAX_LENGTH:
            log.warning("a token's kid is too long to look for (%d characters): %s...", len(kid), kid[:100])
            return False
        now, next_check = self.clock(), self.missing.get(kid)
        if kid in self.missing:
            self.missing.move_to_end(kid)
        if next_check is not None and next_check > now:
            return False
        self.missing[kid] = now + MISSING_KID_WAIT_MS
        if len(self.missing) > MISSING_KID_ENTRIES:
            self.missing.popitem(last=False)
        if self.wanted is not None:
            self.wanted.set()
        return True

    def _replace(self, keys: tuple[Jwk, ...]) -> None:
        for jwk in keys:
            self.missing.pop(jwk.kid, None)
        self.keys = keys

    async def _fetch_with_retry(self) -> tuple[Jwk, ...]:
        """Fetch until it works or ``backoff_max_ms`` have passed, waiting ``backoff_ms`` doubling (Kafka's Retry);
        the first attempt is always made."""
        end, attempt, first_error = self.clock() + self.backoff_max_ms, 0, None
        while attempt == 0 or self.clock() <= end:
            attempt += 1
            try:
                return await trio.to_thread.run_sync(self.fetch, self.url, abandon_on_cancel=True)
            except JwksUnavailable as exc:
                first_error = first_error or exc
                wait_ms = min(self.backoff_ms * 2 ** (attempt - 1), end - self.clock())
                log.warning("fetching the JWKS of %s failed (attempt %d): %s", self.url, attempt, exc)
                if wait_ms <= 0:
                    break
                await trio.sleep(wait_ms / 1000)
        raise first_error  # type: ignore[misc]  # set: the loop ends after a failed attempt

    async def load(self) -> None:
        """The first fetch, before the listeners open; ``ConfigError`` naming the key if it fails."""
        try:
            self._replace(await self._fetch_with_retry())
        except JwksUnavailable as exc:
            raise ConfigError(f"{self.key}: cannot read the JWKS from {self.url} at startup "
                              f"(tried for {self.backoff_max_ms} ms): {exc}") from None  # fmt: skip
        log.info("JWKS of %s: %d keys; refreshed every %d ms", self.url, len(self.keys), self.refresh_ms)

    async def refresh(self) -> bool:
        """Fetch the keys again; on failure keep the ones there are. True if they were replaced."""
        try:
            keys = await self._fetch_with_retry()
        except JwksUnavailable as exc:
            log.warning("refreshing the JWKS of %s failed, its %d keys are kept: %s", self.url, len(self.keys), exc)
            return False
        self._replace(keys)
        log.info("refreshed the JWKS of %s: %d keys", self.url, len(keys))
        return True

    async def run(self) -> None:
        """Refresh every ``refresh_ms`` (fixed rate) and whenever a token names an unknown kid."""
        due = self.clock() + self.refresh_ms
        self.wanted = trio.Event()
        while True:
            with trio.move_on_after(max(0.0, due - self.clock()) / 1000):
                await self.wanted.wait()
            if self.clock() >= due:
                due += self.refresh_ms
            await self.refresh()
            self.wanted = trio.Event()  # a refresh asked for while this one ran is dropped, as in Kafka
