from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints

_ID_PATTERN = r"^[A-Za-z0-9._:@+\-]{1,128}$"
_ID_RE = re.compile(_ID_PATTERN)

def _not_only_dots(value: str) -> str:
    if not value.strip("."):
        raise ValueError(f"an id of dots only ({value!r}) reads as a path step: use a letter or digit too")
    return value


ScopeId = Annotated[str, StringConstraints(pattern=_ID_PATTERN), AfterValidator(_not_only_dots)]
"""A tenant, workspace, user, agent or session id: 1-128 characters of ``[A-Za-z0-9._:@+-]``, not dots only.

Slashes are excluded because ids are joined with ``/`` into partition keys and CLI scopes; ``.`` and ``..``
because they read as path steps wherever an id is shown as a path."""


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
        bad = [p for p in parts if not _ID_RE.match(p) or not p.strip(".")]
        if bad:
            raise ValueError(
                f"scope {text!r}: invalid id(s) {bad}; ids are 1-128 chars of [A-Za-z0-9._:@+-], not dots only")
        return cls(tenant_id=parts[0], workspace_id=parts[1], user_id=parts[2], agent_id=parts[3])

    def __str__(self) -> str:
        return self.path
