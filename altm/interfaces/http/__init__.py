"""HTTP API (FastAPI); API keys are in :mod:`altm.interfaces.access`."""

from altm.interfaces.access import ApiKey, KeyStore
from altm.interfaces.http._app import create_app

__all__ = ["ApiKey", "KeyStore", "create_app"]
