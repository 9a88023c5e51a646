-- Screening review (decision 0026): an analyst's verdict on each hit a screening provider raised,
-- and the results of the actions run on a case's providers after their node.

-- One row per verdict, never changed: the newest verdict on a hit for an entity is the one that
-- holds. A hit marked "not a match" for the entity of a case's subject (its customer, else its
-- first identifier) is not raised again for that entity: `unreviewedHits` leaves it out.
CREATE TABLE screening_reviews (
  id          bigserial PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id),
  case_id     uuid NOT NULL,
  -- The entity the verdict is remembered for; null when the case's subject has no key (the
  -- verdict then holds for this case alone).
  entity_id   uuid,
  broker_id   text NOT NULL,
  -- The vendor's id of the hit (an OpenSanctions entity id).
  hit_id      text NOT NULL,
  verdict     text NOT NULL CHECK (verdict IN ('match', 'not_a_match')),
  reason      text NOT NULL,
  -- `analyst:<userId>`.
  actor       text NOT NULL,
  -- The hit as the analyst saw it: name, birth dates, nationalities, datasets, score.
  hit         jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX screening_reviews_entity ON screening_reviews (tenant_id, entity_id, broker_id)
  WHERE entity_id IS NOT NULL;
CREATE INDEX screening_reviews_case ON screening_reviews (tenant_id, case_id);

-- Each pending or durable action run on a case (from the console or the partner API), with its
-- outcome. The output is kept only for actions whose output holds no secret (a rescreen's hits,
-- which the screening review then shows); never tokens or links.
CREATE TABLE provider_actions (
  id          bigserial PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id),
  case_id     uuid NOT NULL,
  broker_id   text NOT NULL,
  run_id      uuid,
  kind        text NOT NULL CHECK (kind IN ('pending', 'durable')),
  action      text NOT NULL,
  -- `analyst:<userId>` or `apikey:<keyId>`.
  actor       text NOT NULL,
  outcome     text NOT NULL CHECK (outcome IN ('ok', 'failed')),
  output      jsonb,
  error       text,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_actions_case ON provider_actions (tenant_id, case_id, id);
