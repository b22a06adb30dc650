-- Version 23: an atom carries its message's turn id (attributes.turn_id): of two statements said at one time, the
-- later turn is the later version, whatever the host's own message ids. Atoms made before carry none and were
-- ordered by their message's host id beside new ones ordered by turn id (a correction said after the upgrade
-- lost to what it corrects), and a replay of the log, which gives every atom its turn id, hashed otherwise.
-- Each L2 atom takes the turn id of the message it was extracted from: the first of the evidence it was stored
-- with (its insert's audit image; a merge adds evidence since, a forget of the message takes it away), read from
-- the message's row, or from the forget's audit image of it when retention forgot the message and kept the atom.
-- Its attributes are written with sorted keys as the writer writes them (json_with_key, a function the
-- migrating connection has).
CREATE TEMP TABLE atom_source AS
    SELECT m.memory_id, coalesce(
        (SELECT json_extract(json_extract(i.new_value, '$.evidence'), '$[0]') FROM audit_log i
         WHERE i.target_table = 'memories' AND i.target_id = m.memory_id AND i.action = 'insert'
         ORDER BY i.audit_id LIMIT 1),
        json_extract(m.evidence, '$[0]')) AS message_id
    FROM memories m
    WHERE m.layer = 'L2' AND json_extract(m.attributes, '$.turn_id') IS NULL;
UPDATE memories SET attributes = json_with_key(attributes, 'turn_id', (
        SELECT coalesce(
            (SELECT json_extract(l0.attributes, '$.turn_id') FROM memories l0
             WHERE l0.memory_id = s.message_id AND l0.layer = 'L0'),
            (SELECT json_extract(json_extract(a.old_value, '$.attributes'), '$.turn_id') FROM audit_log a
             WHERE a.target_table = 'memories' AND a.target_id = s.message_id AND a.action = 'forget'
             ORDER BY a.audit_id DESC LIMIT 1))
        FROM atom_source s WHERE s.memory_id = memories.memory_id))
    WHERE memory_id IN (SELECT memory_id FROM atom_source);
DROP TABLE atom_source;
