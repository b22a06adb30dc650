"""Services: stores, ingestion, statistics, listing and the ``altm`` CLI.

Submodules are imported on use (``altm.services.store`` is needed by the writer, which the other
services depend on), so importing this package stays cheap and cycle-free.
"""
