"""HTTP API (FastAPI) and API keys."""

from altm.interfaces.http._app import create_app
from altm.interfaces.http._keys import ApiKey, KeyStore

__all__ = ["ApiKey", "KeyStore", "create_app"]
