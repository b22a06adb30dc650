-- Version 17: the review items an erasure removed (a rejection, by the id a review decision names it with,
-- ``rej_<proposal>``; a held action, by its id). A review decision that names one is void, not refused: in the
-- source it came after the erasure, or, in a replay from the log's start (which carries these rows), before it,
-- about an item the replay never made (the erased content's records no longer open).
CREATE TABLE erased_items (item_id TEXT PRIMARY KEY, home TEXT NOT NULL, erasure_id TEXT NOT NULL);
