-- Lists: a tenant's named sets of values (a block list of IBANs, allowed countries), read by
-- workflows with inList (contract section 7, "Lists"; decision 0021, "Lists").

-- One row per list. `list_key` is what the values are keyed by: 8 bytes instead of the tenant
-- and the list id in every index entry, and never reused, so a list deleted and made again
-- starts empty. `value_count` is kept by the statement that adds and removes values.
CREATE TABLE lists (
  list_key     bigserial PRIMARY KEY,
  tenant_id    uuid NOT NULL,
  list_id      text NOT NULL,
  description  text NOT NULL DEFAULT '',
  normalize    text NOT NULL DEFAULT 'none',
  value_count  integer NOT NULL DEFAULT 0,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, list_id)
);

-- A lookup is one probe of this primary key. Values compare byte by byte ("C"), so a prefix
-- search is a range of the same index.
CREATE TABLE list_values (
  list_key  bigint NOT NULL,
  value     text COLLATE "C" NOT NULL,
  PRIMARY KEY (list_key, value)
);
