from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

_ID_PATTERN = r"^[A-Za-z0-9._:@+\-]{1,128}$"
_ID_RE = re.compile(_ID_PATTERN)

ScopeId = Annotated[str, StringConstraints(pattern=_ID_PATTERN)]
"""A tenant, workspace, user, agent or session id: 1-128 characters of ``[A-Za-z0-9._:@+-]``.

Slashes are excluded because ids are joined with ``/`` into partition keys and CLI scopes."""


class Scope(BaseModel):
    """Who a memory belongs to. ``home`` (tenant/workspace/user) is the partition key everywhere."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: ScopeId
    workspace_id: ScopeId
    user_id: ScopeId
    agent_id: ScopeId

    @property
    def home(self) -> str:
        """The partition key: every topic is keyed by ``tenant/workspace/user``."""
        return f"{self.tenant_id}/{self.workspace_id}/{self.user_id}"

    @property
    def path(self) -> str:
        return f"{self.home}/{self.agent_id}"

    @classmethod
    def parse(cls, text: str) -> Scope:
        """Parse the CLI form ``TENANT/WORKSPACE/USER/AGENT``."""
        parts = text.split("/")
        if len(parts) != 4:
            raise ValueError(
                f"scope {text!r} must be written TENANT/WORKSPACE/USER/AGENT (four ids separated by '/')"
            )
        bad = [p for p in parts if not _ID_RE.match(p)]
        if bad:
            raise ValueError(f"scope {text!r}: invalid id(s) {bad}; ids are 1-128 chars of [A-Za-z0-9._:@+-]")
        return cls(tenant_id=parts[0], workspace_id=parts[1], user_id=parts[2], agent_id=parts[3])

    def __str__(self) -> str:
        return self.path
