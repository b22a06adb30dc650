-- Version 23: an atom carries its message's turn id (attributes.turn_id): of two statements said at one time, the
-- later turn is the later version, whatever the host's own message ids. Atoms made before carry none and were
-- ordered by their message's host id beside new ones ordered by turn id (a correction said after the upgrade
-- lost to what it corrects), and a replay of the log, which gives every atom its turn id, hashed otherwise.
-- Each L2 atom takes the turn id of the message it was extracted from (its evidence), its attributes written
-- with sorted keys as the writer writes them (json_with_key, a function of the migrating connection).
UPDATE memories SET attributes = json_with_key(attributes, 'turn_id', (
        SELECT json_extract(l0.attributes, '$.turn_id') FROM memories l0
        WHERE l0.memory_id = json_extract(memories.evidence, '$[0]') AND l0.layer = 'L0'))
    WHERE layer = 'L2' AND json_extract(attributes, '$.turn_id') IS NULL AND json_valid(evidence)
        AND json_array_length(evidence) = 1;
