"""The writer: the only code that mutates memory state (DESIGN §1.2, "one door for writes").

* :mod:`._apply`: the transaction envelope of one proposal record (route check, offset, outbox, rejections,
  deferrals) and the change events;
* :mod:`.ops`: one module per op family (memory, graph, trust, governance, erasure, burial, lifecycle, cycles), each op
  a function of the shard transaction, its proposal and an :class:`~.ops.OpContext`;
* :mod:`.guard`: the write guard (tombstones, anti-patterns), evaluated for every memory written; it compares
  canonical terms (:mod:`._terms`) and, given one, meanings (:mod:`._similarity`).
"""

from altm.pipeline.writer._apply import (
           REAPPLIED_HEADER,
           REDERIVED_HEADER,
           WRITER_GROUP,
           WriteOutcome,
           Writer,
           burials_to_find,
           is_reapplied,
           is_rederived,
)
from altm.pipeline.writer._similarity import EmbeddingSimilarity
from altm.pipeline.writer.guard import GuardKeys, TextSimilarity

__all__ = ["REAPPLIED_HEADER", "REDERIVED_HEADER", "WRITER_GROUP", "EmbeddingSimilarity", "GuardKeys",
           "TextSimilarity", "WriteOutcome", "Writer", "burials_to_find", "is_reapplied", "is_rederived"]
