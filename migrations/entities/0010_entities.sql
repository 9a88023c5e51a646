-- Entities: what the tenant already knows of a customer, an IBAN, a device, across cases
-- (contract section 7, decision 0021). An entity's id is derived from (tenant, type, value), so
-- a case is linked to it in the statement that accepts the case, without reading it back.

CREATE TABLE entities (
  id            uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL,
  type          text NOT NULL,
  value         text NOT NULL,
  first_seen_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, type, value)
);

-- One row per case and entity: the role the key had on the case (the first, when it had
-- several), and the case's time (its eventTimestamp, else its creation), by which an entity's
-- cases are listed newest first and history is counted. The case's facts that never change
-- (its type, its transaction's amount and currency, when it was accepted) and the entity's type
-- are copied here when the case is accepted, so that the aggregate node's figures are answered
-- from the (entity_id, case_time) index alone, without reading the cases.
CREATE TABLE case_entities (
  case_id     uuid NOT NULL,
  entity_id   uuid NOT NULL,
  tenant_id   uuid NOT NULL,
  entity_type text NOT NULL,
  role        text NOT NULL,
  case_time   timestamptz NOT NULL,
  accepted_at timestamptz NOT NULL DEFAULT now(),
  case_type   text NOT NULL,
  amount      double precision,
  currency    text,
  PRIMARY KEY (case_id, entity_id)
);

CREATE INDEX case_entities_entity_time ON case_entities (entity_id, case_time DESC, case_id DESC)
  INCLUDE (case_type, currency, amount, accepted_at);
