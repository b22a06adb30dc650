"""Browser logins: a person pastes an API key once; the browser then holds an opaque login token in an HttpOnly,
SameSite=Strict cookie. The key itself never goes back to the browser, and the token maps to the key's digest
on the server only, with an idle timeout. Each login also has a CSRF token that every form posts back."""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

from altm.interfaces.access import ApiKey, KeyStore

COOKIE = "altm_login"
IDLE_S = 8 * 3600.0
"""A login unused this long is forgotten (the person logs in again)."""
CAPACITY = 10_000
"""Logins held at once; the least recently used goes first."""
PER_KEY = 16
"""Logins one key holds at once (its oldest goes first), so no key holder can push other people's logins out."""


@dataclass
class Login:
    key_digest: str
    csrf: str
    last_used: float


class Logins:
    """Login tokens of this process (a restart logs everyone out; nothing is written to disk)."""

    def __init__(self, keys: KeyStore, *, idle_s: float = IDLE_S, capacity: int = CAPACITY,
                 per_key: int = PER_KEY) -> None:
        self._keys = keys
        self._idle_s = idle_s
        self._capacity = capacity
        self._per_key = per_key
        self._logins: OrderedDict[str, Login] = OrderedDict()

    def open(self, api_key: str, replacing: str | None = None) -> tuple[str, ApiKey] | None:
        """A new login token for a valid API key (``replacing``: the browser's previous token, closed); None for
        an unknown key."""
        key = self._keys.lookup(api_key)
        if key is None:
            return None
        self.close(replacing)
        same_key = [t for t, login in self._logins.items() if login.key_digest == key.sha256]
        for token in same_key[: max(0, len(same_key) - self._per_key + 1)]:  # oldest use first
            del self._logins[token]
        token = secrets.token_urlsafe(32)
        self._logins[token] = Login(key.sha256, secrets.token_urlsafe(24), time.monotonic())
        while len(self._logins) > self._capacity:
            self._logins.popitem(last=False)
        return token, key

    def find(self, token: str | None) -> tuple[ApiKey, Login] | None:
        """The key and login of a token, if it is live and its key is still in the key store."""
        if not token:
            return None
        login = self._logins.get(token)
        now = time.monotonic()
        if login is None or now - login.last_used > self._idle_s:
            self._logins.pop(token, None)
            return None
        key = self._keys.by_digest(login.key_digest)
        if key is None:
            self._logins.pop(token, None)
            return None
        login.last_used = now
        self._logins.move_to_end(token)
        return key, login

    def close(self, token: str | None) -> None:
        if token:
            self._logins.pop(token, None)

    @staticmethod
    def csrf_ok(login: Login, sent: str | None) -> bool:
        return sent is not None and hmac.compare_digest(login.csrf.encode(), sent.encode())
