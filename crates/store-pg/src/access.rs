//! Who may read an address's mail, or (with [`Access::Send`]) change it and
//! send from the address: the one access rule of the store. Every query
//! of mail and the sending address lookup filter with [`may_use`].
//!
//! The rule, over one `addresses` row:
//! - a device credential: the account's own address, assigned to that
//!   device;
//! - a session: the account's own address, or one its owner granted the
//!   account (`team_grants`) with an access that covers the need, while the
//!   owner's plan has teams (`sealpost_teams::plans_with_teams`) and the
//!   owner is not suspended.
//!
//! Written with the query builder so diesel prepares each statement that
//! uses it once per connection (raw `sql_query` text is never cached).

use diesel::dsl::{auto_type, exists};
use diesel::expression::BoxableExpression;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::Bool;
use sealpost_messages::store::Reader;
use sealpost_teams::{Access, plans_with_teams};

use crate::schema::{account_suspensions, accounts, addresses, team_grants};

/// Who asks: an account, through a session (`device: None`) or through
/// one of its devices' credentials.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Caller<'a> {
    pub(crate) account: &'a str,
    pub(crate) device: Option<&'a str>,
}

impl<'a> Caller<'a> {
    pub(crate) fn reader(reader: &'a Reader) -> Self {
        Self {
            account: reader.account.as_str(),
            device: reader.device.as_ref().map(|device| device.as_str()),
        }
    }
}

/// The rule as a boolean expression over the query source `QS`, which
/// holds the `addresses` row the rule is about.
pub(crate) type Rule<'a, QS> = Box<dyn BoxableExpression<QS, Pg, SqlType = Bool> + 'a>;

/// True when `caller` may use the address in the query (`addresses`) as
/// `needed`: [`Access::Read`] to list and read its mail, [`Access::Send`]
/// to change its mail and send from it.
pub(crate) fn may_use<'a, QS>(caller: Caller<'a>, needed: Access) -> Rule<'a, QS>
where
    on_device<'a>: BoxableExpression<QS, Pg, SqlType = Bool> + 'a,
    owned_or_granted<'a>: BoxableExpression<QS, Pg, SqlType = Bool> + 'a,
{
    match caller.device {
        Some(device) => Box::new(on_device(caller.account, device)),
        None => Box::new(owned_or_granted(
            caller.account,
            granting(needed),
            team_plans(),
        )),
    }
}

/// A device reads only the account's addresses assigned to it; it never
/// holds a member's access.
#[auto_type]
pub(crate) fn on_device<'a>(account: &'a str, device: &'a str) -> _ {
    // An unassigned address (`device_id` null) fails the test as `false`
    // would: the rule is only ever a filter.
    addresses::account_id
        .eq(account)
        .and(addresses::device_id.assume_not_null().eq(device))
}

/// A session: the account's own address, or a grant of it to the account
/// from its owner with one of `accesses`, while the owner's plan is one of
/// `plans` and the owner is not suspended (a suspension stops its members
/// too; the owner's own requests are refused before they reach the store).
#[auto_type]
pub(crate) fn owned_or_granted<'a>(
    account: &'a str,
    accesses: Vec<&'static str>,
    plans: Vec<&'static str>,
) -> _ {
    let suspended = account_suspensions::table.select(account_suspensions::account_id);
    let owners_with_teams = accounts::table
        .filter(accounts::plan_id.eq_any(plans))
        .filter(accounts::id.ne_all(suspended))
        .select(accounts::id);
    let grant = team_grants::table
        .filter(team_grants::member_id.eq(account))
        .filter(team_grants::address_id.eq(addresses::id))
        .filter(team_grants::owner_id.eq(addresses::account_id))
        .filter(team_grants::access.eq_any(accesses))
        .filter(team_grants::owner_id.eq_any(owners_with_teams));
    addresses::account_id.eq(account).or(exists(grant))
}

/// The grant accesses that cover `needed`: `send` includes `read`.
fn granting(needed: Access) -> Vec<&'static str> {
    Access::ALL
        .into_iter()
        .filter(|granted| match needed {
            Access::Read => true,
            Access::Send => *granted == Access::Send,
        })
        .map(Access::as_str)
        .collect()
}

/// The plans whose owners' grants give access, as stored.
fn team_plans() -> Vec<&'static str> {
    plans_with_teams()
        .into_iter()
        .map(|plan| plan.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, TimeDelta, Utc};
    use diesel_async::RunQueryDsl;
    use sealpost_kernel::PageRequest;
    use sealpost_kernel::{AccountId, AddressId, DeviceId, MessageId, PlanId, Timestamp};
    use sealpost_messages::folders::{Folder, MessageFilter};
    use sealpost_messages::send::SendRepository;
    use sealpost_messages::store::{MessageRepository, Reader};
    use sealpost_seal::SealedBox;
    use sealpost_teams::{AddOutcome, Grant, NewMember, TeamRepository};

    use super::*;
    use crate::PgStore;
    use crate::records::box_to_stored;
    use crate::schema::{account_suspensions, devices, messages};
    use crate::test_db::{drop_database, fresh_store};

    const OWNER: &str = "acct_accessowner";
    const READER: &str = "acct_accessreader";
    const SENDER: &str = "acct_accesssender";
    const REVOKED: &str = "acct_accessrevoked";
    const STRANGER: &str = "acct_accessstranger";
    /// Assigned to `DEVICE`.
    const ASSIGNED: &str = "ibx_accessassigned";
    /// Assigned to no device.
    const UNASSIGNED: &str = "ibx_accessunassigned";
    /// The stranger's own address.
    const ELSEWHERE: &str = "ibx_accesselsewhere";
    const DEVICE: &str = "wkr_accessdevice";

    fn at(days: i64) -> Timestamp {
        Timestamp::from_datetime(DateTime::<Utc>::UNIX_EPOCH + TimeDelta::days(20_000 + days))
    }

    fn sealed() -> SealedBox {
        SealedBox {
            v: 2,
            epk: vec![1; 32],
            n: vec![2; 12],
            c: vec![3; 10],
            t: vec![4; 16],
        }
    }

    fn email(address: &str) -> String {
        format!("{address}@mail.localhost")
    }

    fn session(account: &str) -> Reader {
        Reader {
            account: AccountId::from_trusted(account.to_owned()),
            device: None,
        }
    }

    fn on_device(account: &str) -> Reader {
        Reader {
            account: AccountId::from_trusted(account.to_owned()),
            device: Some(DeviceId::from_trusted(DEVICE.to_owned())),
        }
    }

    /// The owner (Fleet, a plan with teams) with a device, two addresses
    /// (one assigned to the device) and a message in each, plus held and
    /// expired mail; a stranger with an address and a message; a member
    /// granted `read`, one granted `send`, and one whose grant was revoked.
    async fn fixtures(store: &PgStore) -> Vec<(&'static str, MessageId)> {
        let mut conn = store.conn().await.unwrap();
        for (account, plan) in [
            (OWNER, "fleet"),
            (READER, "free"),
            (SENDER, "free"),
            (REVOKED, "free"),
            (STRANGER, "fleet"),
        ] {
            diesel::insert_into(accounts::table)
                .values((
                    accounts::id.eq(account),
                    accounts::plan_id.eq(plan),
                    accounts::auth_public_key.eq(vec![0_u8; 32]),
                    accounts::auth_verifier_hash.eq(vec![0_u8; 32]),
                    accounts::created_at.eq(at(0).as_datetime()),
                ))
                .execute(&mut conn)
                .await
                .unwrap();
        }
        diesel::insert_into(devices::table)
            .values((
                devices::id.eq(DEVICE),
                devices::account_id.eq(OWNER),
                devices::kind.eq("device"),
                devices::platform.eq("linux"),
                devices::created_at.eq(at(0).as_datetime()),
            ))
            .execute(&mut conn)
            .await
            .unwrap();
        for (address, owner, device) in [
            (ASSIGNED, OWNER, Some(DEVICE)),
            (UNASSIGNED, OWNER, None),
            (ELSEWHERE, STRANGER, None),
        ] {
            diesel::insert_into(addresses::table)
                .values((
                    addresses::id.eq(address),
                    addresses::account_id.eq(owner),
                    addresses::email_address.eq(email(address)),
                    addresses::domain.eq("mail.localhost"),
                    addresses::device_id.eq(device),
                    addresses::retention_days.eq(30_i16),
                    addresses::public_key.eq(Some(vec![7_u8; 32])),
                    addresses::created_at.eq(at(0).as_datetime()),
                ))
                .execute(&mut conn)
                .await
                .unwrap();
        }
        // (label, address, received, held)
        let mut stored = Vec::new();
        for (label, address, owner, received, held) in [
            ("assigned", ASSIGNED, OWNER, at(40), false),
            ("unassigned", UNASSIGNED, OWNER, at(40), false),
            ("elsewhere", ELSEWHERE, STRANGER, at(40), false),
            ("held", ASSIGNED, OWNER, at(40), true),
            // 30 days of retention at `at(45)`: gone.
            ("expired", ASSIGNED, OWNER, at(15), false),
        ] {
            let id = MessageId::generate();
            diesel::insert_into(messages::table)
                .values((
                    messages::id.eq(id.as_str()),
                    messages::account_id.eq(owner),
                    messages::address_id.eq(address),
                    messages::received_at.eq(received.as_datetime()),
                    messages::size_bytes.eq(10_i64),
                    messages::key_epoch.eq(0),
                    messages::content.eq(box_to_stored(&sealed()).unwrap()),
                    messages::held.eq(held),
                    messages::stored_bytes.eq(0_i64),
                ))
                .execute(&mut conn)
                .await
                .unwrap();
            stored.push((label, id));
        }
        drop(conn);
        let owner = AccountId::from_trusted(OWNER.to_owned());
        for (member, access) in [
            (READER, Access::Read),
            (SENDER, Access::Send),
            (REVOKED, Access::Send),
        ] {
            let member = AccountId::from_trusted(member.to_owned());
            let added = store
                .add_member(
                    NewMember {
                        owner: owner.clone(),
                        member: member.clone(),
                        public_key: [5; 32],
                        pin: sealed(),
                        joined_at: at(1),
                    },
                    PlanId::Fleet,
                    10,
                )
                .await
                .unwrap();
            assert_eq!(added, AddOutcome::Added);
            let grant = Grant {
                address: AddressId::from_trusted(ASSIGNED.to_owned()),
                epoch: 0,
                access,
                sealed: sealed(),
                granted_at: at(1),
            };
            assert!(
                store
                    .put_grants(&owner, &member, vec![grant])
                    .await
                    .unwrap()
            );
        }
        let revoked = AccountId::from_trusted(REVOKED.to_owned());
        let assigned = AddressId::from_trusted(ASSIGNED.to_owned());
        assert!(
            store
                .remove_grants(&owner, &revoked, &assigned)
                .await
                .unwrap()
        );
        stored
    }

    /// What `reader` may do with `message` of `address`: (read, send).
    /// Read: the single message, the address's check and page, and the
    /// list across addresses (a device: its own list). Send: starring,
    /// moving and the change lookup, and for a session the sending address
    /// lookup (unless the message is held or expired: the address itself
    /// may then still be usable). Every path must agree.
    async fn uses(
        store: &PgStore,
        reader: &Reader,
        address: &str,
        message: &MessageId,
        address_is_live: bool,
    ) -> (bool, bool) {
        let now = at(45);
        let page = PageRequest {
            limit: 100,
            after: None,
        };
        let address_id = AddressId::from_trusted(address.to_owned());
        let read = store.message(reader, message, now).await.unwrap().is_some();
        let listed = store
            .page_all(reader, &MessageFilter::default(), now, &page)
            .await
            .unwrap()
            .iter()
            .any(|listed| listed.id == *message);
        assert_eq!(read, listed, "the single read and the list disagree");
        let paged = store
            .page(reader, &address_id, now, &page)
            .await
            .unwrap()
            .unwrap_or_default()
            .iter()
            .any(|paged| paged.id == *message);
        assert_eq!(
            read, paged,
            "the single read and the address's page disagree"
        );
        let send = store.set_starred(reader, message, true, now).await.unwrap();
        let changeable = store
            .message_to_change(reader, message, now)
            .await
            .unwrap()
            .is_some();
        assert_eq!(send, changeable, "starring and the change lookup disagree");
        let moved = store
            .set_folder(reader, message, Folder::Inbox, Folder::Inbox, now)
            .await
            .unwrap();
        assert_eq!(send, moved, "starring and moving disagree");
        if reader.device.is_some() {
            let own = store
                .device_messages(reader, now, 100)
                .await
                .unwrap()
                .iter()
                .any(|own| own.id == *message);
            assert_eq!(read, own, "the single read and the device's list disagree");
        } else if address_is_live {
            let sender = store.sender(reader, &email(address)).await.unwrap();
            assert_eq!(
                send,
                sender.is_some(),
                "starring and the sending address lookup disagree"
            );
        }
        (read, send)
    }

    /// The one access rule, run by every read and write path over the same
    /// fixtures: owner, device, members (read, send, after a downgrade),
    /// a revoked grant, a stranger; held and expired mail for nobody.
    #[tokio::test(flavor = "multi_thread")]
    async fn one_rule_decides_every_read_and_change() {
        const DATABASE: &str = "sealpost_store_pg_access_rule";
        let store = fresh_store(DATABASE).await;
        let stored = fixtures(&store).await;
        let message = |label: &str| {
            stored
                .iter()
                .find(|(stored, _)| *stored == label)
                .map(|(_, id)| id.clone())
                .unwrap()
        };
        let (yes, read_only, no) = ((true, true), (true, false), (false, false));
        let cases = [
            ("owner, session", session(OWNER), ASSIGNED, "assigned", yes),
            (
                "owner, unassigned",
                session(OWNER),
                UNASSIGNED,
                "unassigned",
                yes,
            ),
            (
                "device, its address",
                on_device(OWNER),
                ASSIGNED,
                "assigned",
                yes,
            ),
            (
                "device, unassigned address",
                on_device(OWNER),
                UNASSIGNED,
                "unassigned",
                no,
            ),
            (
                "device, another account's",
                on_device(OWNER),
                ELSEWHERE,
                "elsewhere",
                no,
            ),
            ("owner, held mail", session(OWNER), ASSIGNED, "held", no),
            (
                "owner, expired mail",
                session(OWNER),
                ASSIGNED,
                "expired",
                no,
            ),
            (
                "read grant",
                session(READER),
                ASSIGNED,
                "assigned",
                read_only,
            ),
            (
                "read grant, other address",
                session(READER),
                UNASSIGNED,
                "unassigned",
                no,
            ),
            ("send grant", session(SENDER), ASSIGNED, "assigned", yes),
            (
                "send grant, held mail",
                session(SENDER),
                ASSIGNED,
                "held",
                no,
            ),
            ("revoked grant", session(REVOKED), ASSIGNED, "assigned", no),
            ("stranger", session(STRANGER), ASSIGNED, "assigned", no),
            (
                "stranger's device credential",
                on_device(STRANGER),
                ASSIGNED,
                "assigned",
                no,
            ),
        ];
        for (case, reader, address, label, expected) in &cases {
            let live = !matches!(*label, "held" | "expired");
            let got = uses(&store, reader, address, &message(label), live).await;
            assert_eq!(got, *expected, "{case}");
        }
        // The owner is suspended: its members lose the addresses it shared
        // (the owner's own requests are refused before the store).
        let mut conn = store.conn().await.unwrap();
        diesel::insert_into(account_suspensions::table)
            .values((
                account_suspensions::account_id.eq(OWNER),
                account_suspensions::reason.eq("abuse"),
                account_suspensions::since.eq(Utc::now()),
            ))
            .execute(&mut conn)
            .await
            .unwrap();
        drop(conn);
        let while_suspended = [
            ("read grant, owner suspended", session(READER), no),
            ("send grant, owner suspended", session(SENDER), no),
        ];
        for (case, reader, expected) in &while_suspended {
            let got = uses(&store, reader, ASSIGNED, &message("assigned"), true).await;
            assert_eq!(got, *expected, "{case}");
        }
        let mut conn = store.conn().await.unwrap();
        diesel::delete(account_suspensions::table.find(OWNER))
            .execute(&mut conn)
            .await
            .unwrap();
        let got = uses(
            &store,
            &session(SENDER),
            ASSIGNED,
            &message("assigned"),
            true,
        )
        .await;
        assert_eq!(got, yes, "send grant, owner's suspension lifted");

        // The owner moves to a plan without teams: the grants stay, and
        // give nothing.
        diesel::update(accounts::table.find(OWNER))
            .set(accounts::plan_id.eq("scale"))
            .execute(&mut conn)
            .await
            .unwrap();
        drop(conn);
        let after_downgrade = [
            ("owner after the downgrade", session(OWNER), yes),
            ("device after the downgrade", on_device(OWNER), yes),
            ("read grant after the downgrade", session(READER), no),
            ("send grant after the downgrade", session(SENDER), no),
        ];
        for (case, reader, expected) in &after_downgrade {
            let got = uses(&store, reader, ASSIGNED, &message("assigned"), true).await;
            assert_eq!(got, *expected, "{case}");
        }
        drop(store);
        drop_database(DATABASE).await;
    }

    /// The rule names the plans with teams and the accesses that cover a
    /// need: `send` for a change, `read` or `send` for a read.
    #[test]
    fn the_rule_names_the_plans_with_teams_and_the_accesses() {
        assert_eq!(team_plans(), ["fleet", "enterprise"]);
        assert_eq!(granting(Access::Send), ["send"]);
        assert_eq!(granting(Access::Read), ["read", "send"]);
        let sql =
            diesel::debug_query::<Pg, _>(&addresses::table.filter(may_use::<addresses::table>(
                Caller {
                    account: "acct_x",
                    device: None,
                },
                Access::Send,
            )))
            .to_string();
        assert!(sql.contains("team_grants"), "{sql}");
        assert!(sql.contains("[\"fleet\", \"enterprise\"]"), "{sql}");
    }
}
