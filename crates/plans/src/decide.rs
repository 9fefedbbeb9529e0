//! Deciding an action on the plan the account holds when it commits.
//!
//! A service reads the account's plan, decides (limits, capabilities) and
//! asks the store to commit. The store locks the account row and, when the
//! plan found there is not the one decided on (a payment or a downgrade in
//! between), commits nothing and answers the current plan. The action is
//! then decided again on that plan, a bounded number of times.

use sealpost_kernel::{PlanId, StoreError};

/// How many times an action is decided: on the plan read first, then on
/// each plan the store finds under the account's lock.
pub const PLAN_DECISIONS: usize = 3;

/// How one decision ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnPlan<T> {
    /// Committed (or refused for good) on the plan decided on.
    Done(T),
    /// Nothing committed: the locked account holds this plan now.
    Changed(PlanId),
}

/// Runs `decide` on `plan`, and again on the plan the store answers while
/// it keeps changing, at most [`PLAN_DECISIONS`] times; after that the
/// caller is told to retry (`StoreError::Unavailable`, a 503).
pub async fn decide_on_current_plan<T, E>(
    plan: PlanId,
    mut decide: impl AsyncFnMut(PlanId) -> Result<OnPlan<T>, E>,
) -> Result<T, E>
where
    E: From<StoreError>,
{
    let mut plan = plan;
    for _ in 0..PLAN_DECISIONS {
        match decide(plan).await? {
            OnPlan::Done(value) => return Ok(value),
            OnPlan::Changed(current) => plan = current,
        }
    }
    Err(StoreError::Unavailable("the plan kept changing; retry".into()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        // The futures here never wait: one poll finishes them.
        let waker = std::task::Waker::noop();
        let mut context = std::task::Context::from_waker(waker);
        let mut future = std::pin::pin!(future);
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(output) => output,
            std::task::Poll::Pending => panic!("the decision waited"),
        }
    }

    #[test]
    fn a_changed_plan_is_decided_again_on_the_plan_found() {
        let mut seen = Vec::new();
        let outcome: Result<&str, StoreError> =
            block_on(decide_on_current_plan(PlanId::Scale, async |plan| {
                seen.push(plan);
                Ok(if plan == PlanId::Scale {
                    OnPlan::Changed(PlanId::Free)
                } else {
                    OnPlan::Done("decided on free")
                })
            }));
        assert_eq!(outcome.unwrap(), "decided on free");
        assert_eq!(seen, [PlanId::Scale, PlanId::Free]);
    }

    #[test]
    fn a_plan_that_keeps_changing_stops_after_the_bound() {
        let mut decisions = 0;
        let outcome: Result<(), StoreError> =
            block_on(decide_on_current_plan(PlanId::Free, async |_| {
                decisions += 1;
                Ok(OnPlan::Changed(PlanId::Scale))
            }));
        assert!(matches!(outcome, Err(StoreError::Unavailable(_))));
        assert_eq!(decisions, PLAN_DECISIONS);
    }

    #[test]
    fn a_refusal_ends_the_decisions_at_once() {
        let mut decisions = 0;
        let outcome: Result<(), StoreError> =
            block_on(decide_on_current_plan(PlanId::Free, async |_| {
                decisions += 1;
                Err(StoreError::Unavailable("down".into()))
            }));
        assert!(outcome.is_err());
        assert_eq!(decisions, 1);
    }
}
