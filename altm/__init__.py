"""ALTM — autonomous long-term memory for LLM agents, as an asynchronous streaming pipeline.

Public entry points live in the three subpackages:

* :mod:`altm.core` — event, memory and cycle models, codec, SQL migrations;
* :mod:`altm.streams` — the bus (embedded log, Kafka), processors, the writer and the runtimes;
* :mod:`altm.services` — stores, ingestion, statistics and the ``altm`` CLI.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
