-- Teams: an owner's members and the address keys it sealed to each of them.
-- Leaving, removal and erasure of either account take the grants with them.
CREATE TABLE team_members (
    owner_id    text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    member_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    public_key  bytea NOT NULL CHECK (length(public_key) = 32),
    pin         jsonb NOT NULL,
    joined_at   timestamptz NOT NULL,
    PRIMARY KEY (owner_id, member_id),
    CHECK (owner_id <> member_id)
);
-- `GET /memberships`.
CREATE INDEX team_members_member ON team_members (member_id);

-- One row per address and epoch: the keys sealed to the member. `access` is
-- the same on every epoch of an address (set together).
CREATE TABLE team_grants (
    owner_id    text NOT NULL,
    member_id   text NOT NULL,
    inbox_id    text NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
    epoch       integer NOT NULL CHECK (epoch >= 0),
    access      text NOT NULL CHECK (access IN ('read', 'send')),
    sealed      jsonb NOT NULL,
    granted_at  timestamptz NOT NULL,
    PRIMARY KEY (owner_id, member_id, inbox_id, epoch),
    FOREIGN KEY (owner_id, member_id) REFERENCES team_members (owner_id, member_id) ON DELETE CASCADE
);
-- The member access check on every message request: (member, address).
CREATE INDEX team_grants_member_inbox ON team_grants (member_id, inbox_id);
CREATE INDEX team_grants_inbox ON team_grants (inbox_id);
