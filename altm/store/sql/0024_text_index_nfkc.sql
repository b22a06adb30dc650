-- Version 24: the word and trigram indexes hold the content's NFKC form (index_form, a function every shard
-- connection has), so an identifier typed fullwidth by an IME ("ＡＢ-１２３４５") is found by its ASCII spelling and
-- the other way round. The queue (version 21) is applied through the same function from now on; here every row is
-- indexed again in that form. Both tables keep their external content: readers get the message as stored.
INSERT INTO memories_fts (memories_fts) VALUES ('delete-all');
INSERT INTO memories_fts (rowid, content, context, scope_terms)
    SELECT rowid, index_form(content), index_form(context), scope_terms FROM memories;
INSERT INTO memories_fts_tri (memories_fts_tri) VALUES ('delete-all');
INSERT INTO memories_fts_tri (rowid, content) SELECT rowid, index_form(content) FROM memories;
