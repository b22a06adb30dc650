"""MCP server (runtime and admin profiles; stdio and streamable HTTP)."""

from altm.interfaces.mcp._server import ADMIN_TOOLS, RUNTIME_TOOLS, Profile, build_server

__all__ = ["ADMIN_TOOLS", "RUNTIME_TOOLS", "Profile", "build_server"]
