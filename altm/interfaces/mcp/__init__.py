"""MCP server (runtime and admin profiles; stdio and streamable HTTP)."""

from altm.interfaces.mcp._server import ADMIN_TOOLS, RUNTIME_TOOLS, Profile, build_server
from altm.interfaces.mcp._sessions import MAX_SESSIONS_PER_KEY, SESSION_IDLE_S, SessionsPerKey

__all__ = ["ADMIN_TOOLS", "MAX_SESSIONS_PER_KEY", "RUNTIME_TOOLS", "SESSION_IDLE_S", "Profile", "SessionsPerKey",
           "build_server"]
