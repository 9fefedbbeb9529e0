//! Plan ids (CONTRACT.md section 7). The limits live in the plans crate.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanId {
    Free,
    Operator,
    Scale,
    Fleet,
    Enterprise,
}

impl PlanId {
    pub const ALL: [PlanId; 5] = [
        PlanId::Free,
        PlanId::Operator,
        PlanId::Scale,
        PlanId::Fleet,
        PlanId::Enterprise,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PlanId::Free => "free",
            PlanId::Operator => "operator",
            PlanId::Scale => "scale",
            PlanId::Fleet => "fleet",
            PlanId::Enterprise => "enterprise",
        }
    }

    pub fn display_name(self) -> &'static str {
        match self {
            PlanId::Free => "Free",
            PlanId::Operator => "Operator",
            PlanId::Scale => "Scale",
            PlanId::Fleet => "Fleet",
            PlanId::Enterprise => "Enterprise",
        }
    }
}

impl fmt::Display for PlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown plan id")]
pub struct UnknownPlan;

impl FromStr for PlanId {
    type Err = UnknownPlan;
    fn from_str(text: &str) -> Result<Self, UnknownPlan> {
        PlanId::ALL
            .into_iter()
            .find(|plan| plan.as_str() == text)
            .ok_or(UnknownPlan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_text() {
        for plan in PlanId::ALL {
            assert_eq!(plan.as_str().parse::<PlanId>().unwrap(), plan);
        }
        assert!("gold".parse::<PlanId>().is_err());
    }
}
