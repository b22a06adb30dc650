"""API keys: only their SHA-256 is stored; each key is bound to a scope prefix (and maybe admin rights)."""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import logging
import secrets
from pathlib import Path

import orjson
from pydantic import BaseModel, Field

from altm.bus.sealing import write_owner_only
from altm.core import Scope

log = logging.getLogger("altm.access")


class ApiKey(BaseModel):
    name: str
    sha256: str
    scope_prefix: str = Field(description="TENANT[/WORKSPACE[/USER[/AGENT]]] this key may act on")
    admin: bool = False

    @property
    def prefix(self) -> list[str]:
        return self.scope_prefix.strip("/").split("/")

    @property
    def bound_to_agent(self) -> bool:
        """A key for one agent (TENANT/WORKSPACE/USER/AGENT); shorter prefixes cover whole users."""
        return len(self.prefix) == 4

    def allows(self, scope: Scope) -> bool:
        want = self.prefix
        have = [scope.tenant_id, scope.workspace_id, scope.user_id, scope.agent_id]
        return have[: len(want)] == want


class KeyStore:
    """Keys in ``<data_dir>/api_keys.json``, read again whenever the file changes: a key removed from it stops
    working in a running server (and its browser logins end) at its next request, without a restart. A file that
    does not parse (a hand edit gone wrong) lets no key in until it is mended: a key removed in that edit never
    keeps working. ``create`` adds a key under a lock and replaces the file whole, and refuses a file it cannot
    read rather than write the new key alone over the others."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._keys: list[ApiKey] = []
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the file as last read
        self._fresh()

    def _read(self) -> list[ApiKey]:
        """The keys the file holds; ValueError, with what to do, when it does not parse."""
        try:
            return [ApiKey.model_validate(k) for k in orjson.loads(self.path.read_bytes())]
        except (orjson.JSONDecodeError, ValueError) as exc:
            raise ValueError(f"the key file {self.path} does not parse ({str(exc).splitlines()[0]}): mend it (a JSON "
                             "list of keys) or restore it; nothing was changed") from None

    def _fresh(self) -> list[ApiKey]:
        """The keys as the file holds them now (read again only when its mtime or size changed)."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._keys, self._seen = [], None
            return self._keys
        seen = (stat.st_mtime_ns, stat.st_size)
        if seen != self._seen:
            try:
                self._keys = self._read()
            except ValueError as exc:
                log.error("%s: no API key is accepted until it parses", exc)
                self._keys = []
            self._seen = seen
        return self._keys

    @staticmethod
    def digest(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    def create(self, name: str, scope_prefix: str, *, admin: bool = False) -> str:
        parts = scope_prefix.strip("/").split("/")
        if not 1 <= len(parts) <= 4 or not all(parts):
            raise ValueError("a scope prefix is TENANT[/WORKSPACE[/USER[/AGENT]]]")
        key = "altm_" + secrets.token_urlsafe(32)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.with_name(self.path.name + ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two `altm keys create` at once: each adds its key
            keys = self._read() if self.path.exists() else []
            keys.append(ApiKey(name=name, sha256=self.digest(key), scope_prefix="/".join(parts), admin=admin))
            made = self.path.with_name(f"{self.path.name}.{secrets.token_hex(8)}.new")
            try:
                write_owner_only(made, orjson.dumps([k.model_dump() for k in keys], option=orjson.OPT_INDENT_2))
                made.replace(self.path)  # a reader sees the old file or the new one, never half of it
            finally:
                made.unlink(missing_ok=True)
        self._seen = None  # read again next time (its own write)
        return key

    def lookup(self, key: str) -> ApiKey | None:
        digest = self.digest(key)
        for k in self._fresh():
            if hmac.compare_digest(k.sha256, digest):
                return k
        return None

    def by_digest(self, digest: str) -> ApiKey | None:
        """The key whose SHA-256 is ``digest`` (a browser login holds the digest, never the key)."""
        return next((k for k in self._fresh() if hmac.compare_digest(k.sha256, digest)), None)

    def __len__(self) -> int:
        return len(self._fresh())
