//! The setup steps of an own domain and how one round of DNS observations
//! moves it (docs/domains.md has the table).

use chrono::TimeDelta;
use sealpost_kernel::{Timestamp, string_enum};

string_enum! {
    /// The setup step shown on `GET /domains/custom`.
    pub enum Step: "domain step" {
        /// The ownership TXT record has not been seen yet.
        VerifyOwnership => "verify_ownership",
        /// Ownership is proved; the nameserver check has not answered yet.
        AwaitingSetup => "awaiting_setup",
        /// Ownership is proved; the domain is not yet delegated to the
        /// service's nameservers.
        ChangeNameservers => "change_nameservers",
        /// Delegated to the service's nameservers; the MX record has not
        /// shown in DNS yet.
        SettingUp => "setting_up",
        /// Delegated and the MX record shows: addresses can be created.
        Live => "live",
        /// A live domain whose delegation or MX record went away, or a claim
        /// another account proved first.
        Attention => "attention",
    }
}

/// One round of DNS answers. `None`: not looked up, or the lookup failed
/// (a timeout or server failure is no evidence either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// The `service-verify=<token>` TXT record is published.
    pub txt: Option<bool>,
    /// The delegation names exactly the service's nameservers.
    pub delegated: Option<bool>,
    /// An MX record points at the service's MX host.
    pub mx: Option<bool>,
}

/// What a round decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub step: Step,
    /// Ownership is proved in this round (the store must still win the race).
    pub proves: bool,
}

/// The next step of a domain at `current`, `proved` or not, after `seen`.
pub fn next_step(current: Step, proved: bool, seen: Observed) -> Decision {
    if !proved {
        if seen.txt != Some(true) {
            return Decision {
                step: current,
                proves: false,
            };
        }
        return Decision {
            step: after_proof(Step::AwaitingSetup, seen),
            proves: true,
        };
    }
    Decision {
        step: after_proof(current, seen),
        proves: false,
    }
}

fn after_proof(current: Step, seen: Observed) -> Step {
    let was_live = matches!(current, Step::Live | Step::Attention);
    match (seen.delegated, seen.mx) {
        (None, _) if current == Step::VerifyOwnership => Step::AwaitingSetup,
        (None, _) => current,
        (Some(false), _) if was_live => Step::Attention,
        (Some(false), _) => Step::ChangeNameservers,
        (Some(true), Some(true)) => Step::Live,
        (Some(true), Some(false)) if was_live => Step::Attention,
        (Some(true), Some(false)) => Step::SettingUp,
        (Some(true), None) if was_live => current,
        (Some(true), None) => Step::SettingUp,
    }
}

/// Checks of a live domain.
pub const LIVE_INTERVAL: TimeDelta = TimeDelta::hours(1);
/// The longest wait between checks while a domain is being set up.
pub const SETUP_INTERVAL_MAX: TimeDelta = TimeDelta::minutes(15);

/// When to look again: hourly when live (and for a claim another account
/// won); while setting up 1, 2, 4, 8 then every 15 minutes, counting the
/// checks already made in the same step.
pub fn next_check(step: Step, proved: bool, checks_in_step: u32, now: Timestamp) -> Timestamp {
    if step == Step::Live || (step == Step::Attention && !proved) {
        return now + LIVE_INTERVAL;
    }
    let minutes = 1i64 << checks_in_step.min(4);
    now + TimeDelta::minutes(minutes).min(SETUP_INTERVAL_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(txt: Option<bool>, delegated: Option<bool>, mx: Option<bool>) -> Observed {
        Observed { txt, delegated, mx }
    }

    #[test]
    fn nothing_moves_before_the_txt_record_shows() {
        for txt in [None, Some(false)] {
            let decision = next_step(Step::VerifyOwnership, false, seen(txt, None, None));
            assert_eq!(decision.step, Step::VerifyOwnership);
            assert!(!decision.proves);
        }
        let lost = next_step(Step::Attention, false, seen(Some(false), None, None));
        assert_eq!(
            lost.step,
            Step::Attention,
            "a lost claim stays in attention"
        );
    }

    #[test]
    fn proof_then_nameservers_then_mx() {
        let proved = next_step(Step::VerifyOwnership, false, seen(Some(true), None, None));
        assert_eq!(
            proved,
            Decision {
                step: Step::AwaitingSetup,
                proves: true
            }
        );
        let not_delegated = next_step(
            Step::VerifyOwnership,
            false,
            seen(Some(true), Some(false), None),
        );
        assert_eq!(not_delegated.step, Step::ChangeNameservers);
        assert_eq!(
            next_step(
                Step::ChangeNameservers,
                true,
                seen(None, Some(true), Some(false))
            )
            .step,
            Step::SettingUp
        );
        assert_eq!(
            next_step(Step::SettingUp, true, seen(None, Some(true), None)).step,
            Step::SettingUp
        );
        assert_eq!(
            next_step(Step::SettingUp, true, seen(None, Some(true), Some(true))).step,
            Step::Live
        );
        assert_eq!(
            next_step(Step::AwaitingSetup, true, seen(None, None, None)).step,
            Step::AwaitingSetup
        );
    }

    #[test]
    fn a_live_domain_needs_attention_when_delegation_or_mx_go_and_recovers() {
        assert_eq!(
            next_step(Step::Live, true, seen(None, Some(false), None)).step,
            Step::Attention
        );
        assert_eq!(
            next_step(Step::Live, true, seen(None, Some(true), Some(false))).step,
            Step::Attention
        );
        assert_eq!(
            next_step(Step::Live, true, seen(None, None, None)).step,
            Step::Live,
            "a failed lookup is no evidence"
        );
        assert_eq!(
            next_step(Step::Live, true, seen(None, Some(true), None)).step,
            Step::Live
        );
        assert_eq!(
            next_step(Step::Attention, true, seen(None, Some(true), Some(true))).step,
            Step::Live
        );
        assert_eq!(
            next_step(Step::Attention, true, seen(None, Some(false), Some(true))).step,
            Step::Attention
        );
    }

    #[test]
    fn back_off_is_minutes_while_setting_up_and_hourly_when_live() {
        let now = Timestamp::parse("2026-11-25T10:00:00Z").unwrap();
        let minutes = |step, proved, n| (next_check(step, proved, n, now) - now).num_minutes();
        assert_eq!(minutes(Step::VerifyOwnership, false, 0), 1);
        assert_eq!(minutes(Step::VerifyOwnership, false, 1), 2);
        assert_eq!(minutes(Step::SettingUp, true, 3), 8);
        assert_eq!(minutes(Step::SettingUp, true, 4), 15);
        assert_eq!(minutes(Step::ChangeNameservers, true, 400), 15);
        assert_eq!(minutes(Step::Attention, true, 0), 1);
        assert_eq!(minutes(Step::Live, true, 0), 60);
        assert_eq!(minutes(Step::Attention, false, 0), 60);
    }
}
