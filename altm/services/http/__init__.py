"""HTTP API (FastAPI) and API keys."""

from ._app import create_app
from ._keys import ApiKey, KeyStore

__all__ = ["ApiKey", "KeyStore", "create_app"]
