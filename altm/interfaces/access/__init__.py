"""API keys and what each may do (one gate for HTTP and MCP)."""

from altm.interfaces.access._gate import Gate
from altm.interfaces.access._keys import ApiKey, KeyStore

__all__ = ["ApiKey", "Gate", "KeyStore"]
