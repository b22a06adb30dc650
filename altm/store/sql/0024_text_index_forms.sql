-- Version 24: the word and trigram indexes hold each text's index form (index_form, a function every shard
-- connection has: NFKC, casefolded, format characters removed), so an identifier typed fullwidth by an IME
-- ("ＡＢ-１２３４５") is found by its ASCII spelling and "Straße" by the casefolded "strasse" a query asks; and the
-- word index keeps combining marks inside its tokens (a Devanagari or Tamil word, whose vowel signs and viramas
-- are marks, was split into one-letter scraps). The word index is made again with that tokenizer; both indexes
-- are filled again by the migrating process, in the form of its Unicode version (recorded in shard_meta, and
-- indexed again whenever a Python with another one opens the shard for writing). Both tables keep their
-- external content: readers get the message as stored.
DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content, context, scope_terms, content='memories', content_rowid='rowid',
    tokenize="porter unicode61 remove_diacritics 2 categories 'L* N* Co M*'"
);
DELETE FROM shard_meta WHERE key = 'text_index_unicode';
