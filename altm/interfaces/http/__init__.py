"""HTTP API (FastAPI); API keys are in :mod:`altm.interfaces.access`."""

from altm.interfaces.access import ApiKey, KeyStore
from altm.interfaces.http._app import create_app
from altm.interfaces.http._limits import BodyLimit

__all__ = ["ApiKey", "BodyLimit", "KeyStore", "create_app"]
