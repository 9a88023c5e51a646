-- Each link carries the case's other entities (its peers), so that a countDistinct figure is
-- answered from one index range of the `by` entity, like a sum, instead of one primary-key probe
-- per case in the window (decision 0021, "countDistinct: the peers on the link").

-- An entity type's code, 1 to 63, kept in six bits of a peer. Append only: a code, once written in
-- `peers`, names its type for good. Every type of ENTITY_TYPES has one (a test holds them to it).
CREATE FUNCTION entity_type_code(entity_type text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE entity_type
    WHEN 'customer' THEN 1
    WHEN 'email' THEN 2
    WHEN 'phone' THEN 3
    WHEN 'iban' THEN 4
    WHEN 'account_number' THEN 5
    WHEN 'card_fingerprint' THEN 6
    WHEN 'national_id' THEN 7
    WHEN 'tax_id' THEN 8
    WHEN 'registration_number' THEN 9
    WHEN 'device_id' THEN 10
    WHEN 'ip_address' THEN 11
  END
$$;

-- An entity as a peer: its id with the type's code in the first six bits, and the six bits that
-- were there moved into the version and variant bits, which every entity id has fixed (a version
-- 8 UUID, `entityId`). Nothing of the id is lost: a peer stands for exactly one entity, so counting
-- distinct peers counts distinct entities exactly; and the peers of one type are one range of
-- uuids, from entity_peer(PEER_LOW, type) to entity_peer(PEER_HIGH, type).
CREATE FUNCTION entity_peer(entity_id uuid, entity_type text) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT encode(
    set_byte(set_byte(set_byte(uuid_send(entity_id),
      0, (entity_type_code(entity_type) << 2) | (get_byte(uuid_send(entity_id), 0) & 3)),
      6, (get_byte(uuid_send(entity_id), 0) & 240) | (get_byte(uuid_send(entity_id), 6) & 15)),
      8, ((get_byte(uuid_send(entity_id), 0) & 12) << 4) | (get_byte(uuid_send(entity_id), 8) & 63)),
    'hex')::uuid
$$;

-- The case's other entities as peers, on each of its links; NULL when the case has more than 16
-- keys (up to 15 peers a link, so a case's peers stay a few hundred bytes, not its keys squared):
-- a figure then reads that case's links by primary key, as before, finding them in the partial
-- index case_entities_many_keys, which holds only those.
--
-- Every link gains a column and a wider index entry, so the table is written anew rather than
-- updated in place (an UPDATE would leave every old row version behind, the table twice its size),
-- in the order of the cases' times, as the service writes it: an entity's recent cases stay near
-- each other, and an index-only scan of its window reads few pages of the visibility map.
CREATE TEMP TABLE case_entities_with_peers ON COMMIT DROP AS
SELECT l.*, array_remove(c.peers, entity_peer(l.entity_id, l.entity_type)) AS peers
FROM case_entities l
LEFT JOIN (
  SELECT case_id, array_agg(entity_peer(entity_id, entity_type)) AS peers
  FROM case_entities
  GROUP BY case_id
  HAVING count(*) <= 16
) c ON c.case_id = l.case_id
ORDER BY l.case_time;

TRUNCATE case_entities;
DROP INDEX case_entities_entity_time;
ALTER TABLE case_entities DROP CONSTRAINT case_entities_pkey;
ALTER TABLE case_entities ADD COLUMN peers uuid[];
INSERT INTO case_entities SELECT * FROM case_entities_with_peers;
ALTER TABLE case_entities ADD PRIMARY KEY (case_id, entity_id);

CREATE INDEX case_entities_entity_time ON case_entities (entity_id, case_time DESC, case_id DESC)
  INCLUDE (case_type, currency, amount, accepted_at, peers);

CREATE INDEX case_entities_many_keys ON case_entities (entity_id, case_time DESC) WHERE peers IS NULL;
