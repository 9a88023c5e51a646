-- The console: tenant users, their sessions, sign-in failures (the rate limit) and the audit log.

-- Email is the sign-in name, stored lower-cased, unique across tenants: signing in names no tenant.
CREATE TABLE console_users (
  id                uuid PRIMARY KEY,
  tenant_id         uuid NOT NULL REFERENCES tenants (id),
  email             text NOT NULL,
  name              text NOT NULL,
  role              text NOT NULL CHECK (role IN ('viewer', 'analyst', 'admin')),
  -- scrypt, self-describing: `scrypt$N$r$p$salt$hash` (base64url). Null until the setup link is used.
  password_hash     text,
  -- The one-time setup link's token, as a SHA-256 hash; cleared when used.
  setup_token_hash  bytea,
  setup_expires_at  timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, id)
);
CREATE UNIQUE INDEX console_users_email ON console_users (email);
CREATE UNIQUE INDEX console_users_setup ON console_users (setup_token_hash) WHERE setup_token_hash IS NOT NULL;
CREATE INDEX console_users_tenant ON console_users (tenant_id, created_at, id);

-- A session is looked up on every console request (no cache), so deleting its row ends it at
-- once on every process. The cookie holds the token; only its SHA-256 hash is stored.
CREATE TABLE console_sessions (
  token_hash    bytea PRIMARY KEY,
  tenant_id     uuid NOT NULL,
  user_id       uuid NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  FOREIGN KEY (tenant_id, user_id) REFERENCES console_users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX console_sessions_user ON console_sessions (user_id);

-- Failed sign-ins, counted per account and per address over a sliding window.
CREATE TABLE console_signin_failures (
  id       bigserial PRIMARY KEY,
  email    text NOT NULL,
  address  text NOT NULL,
  at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX console_signin_failures_email ON console_signin_failures (email, at);
CREATE INDEX console_signin_failures_address ON console_signin_failures (address, at);

-- Every change made in the console: who, when, what, and the state before and after.
CREATE TABLE console_audit (
  id         bigserial PRIMARY KEY,
  tenant_id  uuid NOT NULL REFERENCES tenants (id),
  actor      text NOT NULL,
  action     text NOT NULL,
  target     text NOT NULL,
  before     jsonb,
  after      jsonb,
  at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX console_audit_tenant ON console_audit (tenant_id, id DESC);

-- The review queue (one status at a time, oldest first) is served by cases_tenant_status of 0003,
-- read backwards; it needs no index of its own.
