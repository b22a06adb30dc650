"""Errors of the runtime protocol, each with a message a host can show as is."""

from __future__ import annotations


class ProtocolError(Exception):
    """Base class; ``code`` maps to HTTP statuses and MCP error codes."""

    code = "protocol_error"
    status = 400


class UnknownCycle(ProtocolError):
    code = "unknown_cycle"
    status = 404


class CycleStateError(ProtocolError):
    code = "cycle_state"
    status = 409


class IdempotencyConflict(ProtocolError):
    code = "idempotency_conflict"
    status = 409


class CitationError(ProtocolError):
    code = "invalid_citation"
    status = 422


class ScopeDenied(ProtocolError):
    code = "scope_denied"
    status = 403


class BadMarker(ProtocolError):
    code = "bad_marker"
    status = 422


class NotFound(ProtocolError):
    code = "not_found"
    status = 404


class ShuttingDown(ProtocolError):
    """The deployment is closing: the request was not served (a retry reaches it, or its replacement)."""

    code = "shutting_down"
    status = 503
