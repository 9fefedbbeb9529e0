// The teams area, as the CLI's `team` and `membership` commands do it
// (docs/cli.md "Teams"): this account's join code and its six words; on a
// plan with teams, the members (added from their join code once the six
// words match), the addresses shared with each (sealed here to the member's
// key as pinned in the vault, at every key epoch) and taking them back; and
// the teams this account is in, with the shared addresses' mail opened here
// with the keys granted.
import {
  ApiError,
  b64decodeN,
  formatJoinCode,
  joinCodeFor,
  parseJoinCode,
  pinnedKey,
  sharedSecrets,
  teamKeyFingerprint,
  type Address,
  type GrantAccess,
  type JoinCode,
  type Membership,
  type Message,
  type Plan,
  type SharedAddress,
  type Team,
  type TeamMember,
} from '@sealpost/sdk';
import { useMemo, useState } from 'preact/hooks';

import { MessageList, Reader, useOpened } from '../mail';
import type { Unlocked } from '../session';
import { describe } from '../util';
import { Feedback, useArea } from './shared';

const day = (at: string): string => new Date(at).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });

const ACCESS_WORDS: Record<GrantAccess, string> = {
  read: 'read',
  send: 'read and send',
};

/** The six words of a member's key as the service shows it. */
function wordsOf(publicKey: string): string {
  try {
    return teamKeyFingerprint(b64decodeN(publicKey, 32));
  } catch {
    return '(malformed key)';
  }
}

export function Teams({ session }: { session: Unlocked }) {
  const { client, keys } = session;
  const [team, setTeam] = useState<Team | null>(null);
  /** Set when the plan has no teams (402 from GET /team). */
  const [noTeams, setNoTeams] = useState(false);
  const [plans, setPlans] = useState<Plan[]>([]);
  const [addresses, setAddresses] = useState<Address[]>([]);
  const [memberships, setMemberships] = useState<Membership[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [reading, setReading] = useState<{ ownerId: string; address: SharedAddress } | null>(null);

  const { error, setError, notice, setNotice, busy, act } = useArea(async () => {
    const [list, mine] = await Promise.all([client.memberships(), client.listAddresses()]);
    setMemberships(list);
    setAddresses(mine);
    try {
      setTeam(await client.team());
      setNoTeams(false);
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 'plan_capability_required')) throw e;
      setTeam(null);
      setNoTeams(true);
      setPlans(await client.plans());
    }
    setLoaded(true);
  }, client);

  const own = joinCodeFor(keys);
  const ownCode = formatJoinCode(own);
  const secrets = useMemo(() => sharedSecrets(keys, memberships), [keys, memberships]);

  return (
    <main class="area teams">
      <h1>Teams</h1>
      <p class="muted">
        An account on a plan with teams shares some of its addresses with other accounts. The addresses' keys are sealed here to the member's key: the
        service never holds a key that opens mail.
      </p>
      <Feedback error={error} notice={notice} />

      <section aria-labelledby="join-title">
        <h2 id="join-title">Your join code</h2>
        <p>To join someone's team, give them this code. Both of you compare the six words before they add you.</p>
        <div class="row">
          <code class="secret-value" data-testid="join-code">
            {ownCode}
          </code>
          <button type="button" onClick={() => void navigator.clipboard?.writeText(ownCode).then(() => setNotice('Join code copied.'))}>
            Copy
          </button>
        </div>
        <p>
          Fingerprint: <strong data-testid="join-fingerprint">{teamKeyFingerprint(own.publicKey)}</strong>
        </p>
      </section>

      <section aria-labelledby="team-title">
        <h2 id="team-title">Your team</h2>
        {noTeams && <NoTeams plans={plans} />}
        {team !== null && (
          <>
            <p data-testid="team-count">
              {team.members.length} of {team.limit} members
            </p>
            <AddMember
              busy={busy}
              full={team.members.length >= team.limit}
              onAdd={(code) =>
                act(async () => {
                  const member = await client.addTeamMember(code, keys);
                  return `Added ${member.memberId} to the team.`;
                })
              }
              onError={setError}
            />
            {team.members.length === 0 ? (
              <p class="muted">No members yet.</p>
            ) : (
              <ul class="webhook-list">
                {team.members.map((m) => (
                  <MemberItem
                    key={m.memberId}
                    member={m}
                    addresses={addresses}
                    busy={busy}
                    pinOk={pinState(session, m)}
                    onShare={(address, access) =>
                      act(async () => {
                        await client.shareAddress(m, address, access, keys);
                        return `${m.memberId} now has ${address.email} (${ACCESS_WORDS[access]}).`;
                      })
                    }
                    onRevoke={(id, email) =>
                      act(async () => {
                        await client.revokeGrant(m.memberId, id);
                        return `${m.memberId} no longer has ${email}.`;
                      })
                    }
                    onRemove={() => {
                      if (!window.confirm(`Remove ${m.memberId} from the team? Everything shared with it is taken back.`)) return;
                      void act(async () => {
                        await client.removeTeamMember(m.memberId);
                        return `Removed ${m.memberId} and every address shared with it.`;
                      });
                    }}
                  />
                ))}
              </ul>
            )}
          </>
        )}
      </section>

      <section aria-labelledby="memberships-title">
        <h2 id="memberships-title">Teams you are in</h2>
        {loaded && memberships.length === 0 && <p class="muted">You are in no team.</p>}
        <ul class="webhook-list">
          {memberships.map((ms) => (
            <li key={ms.ownerId} class="webhook" data-testid={`membership-${ms.ownerId}`}>
              <div class="device-head">
                <span class="device-name">
                  Team of <code>{ms.ownerId}</code>
                </span>
                <span class={`status ${ms.active ? 'online' : 'disabled'}`}>{ms.active ? 'active' : "inactive: the owner's plan has no teams"}</span>
              </div>
              <p class="muted small">Joined {day(ms.joinedAt)}</p>
              {ms.addresses.length === 0 ? (
                <p class="muted">Nothing shared with you yet.</p>
              ) : (
                <ul>
                  {ms.addresses.map((a) => (
                    <li key={a.addressId} data-testid={`shared-${a.addressId}`}>
                      <span class="email">{a.email}</span> <span class="muted small">({ACCESS_WORDS[a.access]})</span>{' '}
                      <button type="button" class="small" disabled={!ms.active} onClick={() => setReading({ ownerId: ms.ownerId, address: a })}>
                        Open mail
                      </button>
                    </li>
                  ))}
                </ul>
              )}
              <button
                type="button"
                class="small danger"
                disabled={busy}
                onClick={() => {
                  if (!window.confirm(`Leave the team of ${ms.ownerId}? You lose every address it shared with you.`)) return;
                  void act(async () => {
                    await client.leaveTeam(ms.ownerId);
                    if (reading?.ownerId === ms.ownerId) setReading(null);
                    return `You left the team of ${ms.ownerId}.`;
                  });
                }}
              >
                Leave this team
              </button>
            </li>
          ))}
        </ul>
        {reading !== null && (
          <SharedMail key={reading.address.addressId} session={session} address={reading.address} secrets={secrets} onClose={() => setReading(null)} />
        )}
      </section>
    </main>
  );
}

/** Whether the key the service shows for `m` is the one pinned in the vault. */
function pinState(session: Unlocked, m: TeamMember): boolean {
  try {
    pinnedKey(session.keys, m);
    return true;
  } catch {
    return false;
  }
}

function NoTeams({ plans }: { plans: Plan[] }) {
  const withTeams = plans.filter((p) => p.limits.teamMembers > 0);
  return (
    <div class="pause" role="note" data-testid="no-teams">
      <p>Your plan has no teams.</p>
      <p>
        {withTeams.length > 0
          ? `Teams come with ${withTeams.map((p) => `${p.name} (${p.limits.teamMembers} members)`).join(' and ')}. `
          : 'Teams come with the Fleet and Enterprise plans. '}
        Change the plan in <a href="#billing">Plan and billing</a> to add members. Joining someone else's team works on every plan: give them your join code above.
      </p>
    </div>
  );
}

/** The join code form: parsed and its six words shown before anything is sent. */
function AddMember({ busy, full, onAdd, onError }: { busy: boolean; full: boolean; onAdd: (code: JoinCode) => Promise<void>; onError: (text: string) => void }) {
  const [text, setText] = useState('');
  const [match, setMatch] = useState(false);
  let code: JoinCode | null = null;
  let problem = '';
  if (text.trim() !== '') {
    try {
      code = parseJoinCode(text);
    } catch (e) {
      problem = `This is not a join code: ${describe(e)}`;
    }
  }
  return (
    <form
      class="approve"
      onSubmit={(e) => {
        e.preventDefault();
        if (code === null) {
          onError(problem || 'Paste the join code of the person joining.');
          return;
        }
        void onAdd(code).then(() => {
          setText('');
          setMatch(false);
        });
      }}
    >
      <h3>Add a member</h3>
      <label>
        Their join code (<code>service-team-1.…</code>)
        <input
          data-testid="add-join-code"
          value={text}
          spellcheck={false}
          autocomplete="off"
          onInput={(e) => {
            setText((e.target as HTMLInputElement).value);
            setMatch(false);
          }}
        />
      </label>
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
      {code !== null && (
        <>
          <p>
            Fingerprint: <strong data-testid="add-fingerprint">{teamKeyFingerprint(code.publicKey)}</strong>
          </p>
          <label class="check">
            <input type="checkbox" checked={match} onChange={(e) => setMatch((e.target as HTMLInputElement).checked)} /> These six words match the ones{' '}
            <code>{code.accountId}</code> sees
          </label>
        </>
      )}
      <button type="submit" class="primary" disabled={busy || full || code === null || !match}>
        Add to the team
      </button>
      {full && <p class="muted small">The team is full for this plan.</p>}
    </form>
  );
}

function MemberItem({
  member,
  addresses,
  busy,
  pinOk,
  onShare,
  onRevoke,
  onRemove,
}: {
  member: TeamMember;
  addresses: Address[];
  busy: boolean;
  pinOk: boolean;
  onShare: (address: Address, access: GrantAccess) => Promise<void>;
  onRevoke: (addressId: string, email: string) => Promise<void>;
  onRemove: () => void;
}) {
  const [chosen, setChosen] = useState('');
  const [access, setAccess] = useState<GrantAccess>('read');
  // One line per address shared: its access and how many key epochs.
  const shared = new Map<string, { access: GrantAccess; epochs: number }>();
  for (const g of member.grants) {
    const had = shared.get(g.addressId);
    shared.set(g.addressId, { access: g.access, epochs: (had?.epochs ?? 0) + 1 });
  }
  const emailOf = (id: string) => addresses.find((a) => a.id === id)?.email ?? id;
  const address = addresses.find((a) => a.id === chosen) ?? null;
  return (
    <li class="webhook" data-testid={`member-${member.memberId}`}>
      <div class="device-head">
        <span class="device-name">
          <code>{member.memberId}</code>
        </span>
        <span class="muted small">joined {day(member.joinedAt)}</span>
      </div>
      <p>
        Fingerprint: <strong data-testid="member-fingerprint">{wordsOf(member.publicKey)}</strong>
      </p>
      {!pinOk && (
        <p class="error" role="alert">
          The key the service shows for this member is not the key you added: nothing can be shared with it. Remove the member and add it again from its
          join code.
        </p>
      )}
      {shared.size === 0 ? (
        <p class="muted">No address shared.</p>
      ) : (
        <ul>
          {[...shared].map(([id, s]) => (
            <li key={id} data-testid={`grant-${id}`}>
              {emailOf(id)} <span class="muted small">({ACCESS_WORDS[s.access]}, {s.epochs} key epoch{s.epochs === 1 ? '' : 's'})</span>{' '}
              <button
                type="button"
                class="small"
                disabled={busy}
                onClick={() => void onRevoke(id, emailOf(id))}
              >
                Take back
              </button>
            </li>
          ))}
        </ul>
      )}
      <form
        class="row tight"
        onSubmit={(e) => {
          e.preventDefault();
          if (address !== null) void onShare(address, access);
        }}
      >
        <label class="inline">
          Share an address
          <select data-testid="share-address" value={chosen} onChange={(e) => setChosen((e.target as HTMLSelectElement).value)}>
            <option value="">Choose…</option>
            {addresses.map((a) => (
              <option key={a.id} value={a.id}>
                {a.email}
              </option>
            ))}
          </select>
        </label>
        <label class="inline">
          Access
          <select data-testid="share-access" value={access} onChange={(e) => setAccess((e.target as HTMLSelectElement).value as GrantAccess)}>
            <option value="read">read</option>
            <option value="send">read and send (also move, star, delete)</option>
          </select>
        </label>
        <button type="submit" class="primary" disabled={busy || !pinOk || address === null}>
          Share
        </button>
      </form>
      <button type="button" class="small danger" disabled={busy} onClick={onRemove}>
        Remove from the team
      </button>
    </li>
  );
}

/** A shared address's mail, opened with the keys its owner granted. */
function SharedMail({
  session,
  address,
  secrets,
  onClose,
}: {
  session: Unlocked;
  address: SharedAddress;
  secrets: ReturnType<typeof sharedSecrets>;
  onClose: () => void;
}) {
  const { client } = session;
  const [messages, setMessages] = useState<Message[]>([]);
  const [openId, setOpenId] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const { error, act } = useArea(async () => {
    const page = await client.listMessages(address.addressId, { limit: 50 });
    setMessages(page.messages.filter((m) => m.folder !== 'trash'));
    setLoaded(true);
  }, client);
  const opened = useOpened(messages, secrets, null);
  const current = messages.find((m) => m.id === openId) ?? null;
  return (
    <div class="shared-mail" data-testid="shared-mail">
      <div class="device-head">
        <h3>Mail of {address.email}</h3>
        <button type="button" class="small" onClick={onClose}>
          Close
        </button>
      </div>
      <Feedback error={error} notice="" />
      {loaded && messages.length === 0 ? (
        <p class="muted">No mail.</p>
      ) : (
        <MessageList messages={messages} opened={opened} openId={openId} onOpen={(m) => setOpenId(m.id)} />
      )}
      {current !== null && (
        <Reader
          message={current}
          opened={opened.get(current.id)}
          onRead={(read) =>
            act(async () => {
              await client.markRead(current.id, read);
              return '';
            })
          }
        />
      )}
    </div>
  );
}
