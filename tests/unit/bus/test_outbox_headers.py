"""The host SDK's outbox keeps records' headers now (a control event's turns end is set from one at delivery);
an outbox file written before that opens and delivers what it held, without headers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from altm.bus import OutgoingRecord
from altm.bus.embedded import LocalOutbox


def test_an_outbox_of_the_version_before_opens_and_new_records_keep_their_headers(tmp_path: Path) -> None:
    path = tmp_path / "outbox.db"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, key TEXT, "
                "value BLOB NOT NULL)")
    old.execute("INSERT INTO outbox (topic, key, value) VALUES ('altm.turns', 't/w/u', x'7b7d')")
    old.commit()
    old.close()
    outbox = LocalOutbox(path)
    again = LocalOutbox(path)  # a second opener finds the column there
    try:
        outbox.add([OutgoingRecord("altm.control", b"{}", key="t/w/u", headers=(("altm-turns-end", b""),))])
        (_, first), (_, second) = outbox.oldest(10)
        assert (first.topic, first.headers) == ("altm.turns", ())
        assert (second.topic, second.headers) == ("altm.control", (("altm-turns-end", b""),))
    finally:
        outbox.close()
        again.close()
