"""API keys: only their SHA-256 is stored; each key is bound to a scope prefix (and maybe admin rights)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path

import orjson
from pydantic import BaseModel, Field

from altm.core import Scope


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
    working in a running server (and its browser logins end) at its next request, without a restart."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._keys: list[ApiKey] = []
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the file as last read
        self._fresh()

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
                self._keys = [ApiKey.model_validate(k) for k in orjson.loads(self.path.read_bytes())]
            except (orjson.JSONDecodeError, ValueError):  # being written by `altm keys create`: read it next time
                return self._keys
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
        self._fresh().append(ApiKey(name=name, sha256=self.digest(key), scope_prefix="/".join(parts), admin=admin))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(orjson.dumps([k.model_dump() for k in self._keys], option=orjson.OPT_INDENT_2))
        self.path.chmod(0o600)
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
