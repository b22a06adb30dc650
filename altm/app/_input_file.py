"""Reading a JSONL input file line by line, and the marker that lets an interrupted ingest resume.

Lines end at ``\\n`` only (a ``\\r`` before it is dropped); bytes that are not UTF-8 are kept as surrogate
escapes so a bad line can be dead-lettered as it was. The reader hashes what it has read, so a marker can
tell whether the file it resumes is still the file it started (the same bytes up to the marker).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ResumePoint:
    """After ``line`` (1-based; 0 = the start), at byte ``offset``, where the bytes before hash to ``sha256``."""

    line: int = 0
    offset: int = 0
    sha256: str = hashlib.sha256(b"").hexdigest()


class InputReader:
    """The non-blank lines of a file as ``(line number, text)``, from a resume point; ``position()`` is the
    point just after the last line read."""

    def __init__(self, path: Path, start: ResumePoint | None = None) -> None:
        self.path = path
        self._fh: BinaryIO = path.open("rb")
        self._hash = hashlib.sha256()
        self._line = 0
        self._offset = 0
        if start is not None and start.offset and self._prefix_matches(start):
            self._line, self._offset = start.line, start.offset
        else:
            self._fh.seek(0)
            self._hash = hashlib.sha256()
        self.resumed_after = self._line
        self._complete = ResumePoint(self._line, self._offset, self._hash.hexdigest())
        """The line this reader resumed after (0 when it started at the top)."""

    def _prefix_matches(self, start: ResumePoint) -> bool:
        left = start.offset
        while left:
            chunk = self._fh.read(min(left, _CHUNK))
            if not chunk:
                return False
            self._hash.update(chunk)
            left -= len(chunk)
        return self._hash.hexdigest() == start.sha256

    def __enter__(self) -> InputReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._fh.close()

    def lines(self) -> Iterator[tuple[int, str]]:
        for raw in self._fh:
            self._hash.update(raw)
            self._line += 1
            self._offset += len(raw)
            if raw.endswith(b"\n"):  # a line still being written is read again on resume
                self._complete = ResumePoint(self._line, self._offset, self._hash.hexdigest())
            text = raw[:-1] if raw.endswith(b"\n") else raw
            text = text[:-1] if text.endswith(b"\r") else text
            # an editor's byte order mark is no part of a line: at the file's start, or a file joined after
            # another (``cat a.jsonl b.jsonl``); a JSON line never starts with U+FEFF
            text = text.removeprefix(_BOM)
            if text.strip():
                yield self._line, text.decode("utf-8", errors="surrogateescape")

    def position(self) -> ResumePoint:
        """Where a resume starts: after the last line read that ends with a newline (one without may be a line
        a writer has not finished: its rest would be read as a line of its own)."""
        return self._complete


_BOM = b"\xef\xbb\xbf"


class IngestMarker:
    """``DATA_DIR/ingest/<key>.json``: how far the ingest of one input file got. Written after each published
    batch and removed when the ingest completes; a re-run of an interrupted ingest resumes after the last
    published line (at most one batch is published twice, and re-sent events are idempotent)."""

    def __init__(self, data_dir: Path, source: Path) -> None:
        key = hashlib.sha256(str(source.resolve()).encode("utf-8", errors="surrogateescape")).hexdigest()[:24]
        self.path = Path(data_dir) / "ingest" / f"{key}.json"
        self.source = source

    def load(self) -> ResumePoint | None:
        try:
            obj = orjson.loads(self.path.read_bytes())
            return ResumePoint(int(obj["line"]), int(obj["offset"]), str(obj["sha256"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # no marker, or one that cannot be read: start at the top

    def save(self, point: ResumePoint) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        # the file's name is for people reading the marker: one that is not UTF-8 is written with escapes
        source = str(self.source).encode("utf-8", errors="backslashreplace").decode("utf-8")
        tmp.write_bytes(orjson.dumps({"source": source, "line": point.line, "offset": point.offset,
                                      "sha256": point.sha256}))
        tmp.replace(self.path)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
