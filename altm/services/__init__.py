"""Services: stores, ingestion, statistics, listing and the ``altm`` CLI."""

from .ingest import IngestSummary, ingest_file, parse_line
from .stats import DataDirError, collect_stats, state_hash

__all__ = ["DataDirError", "IngestSummary", "collect_stats", "ingest_file", "parse_line", "state_hash"]
