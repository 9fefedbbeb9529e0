//! Plan ids (docs/api.md "Plans and usage"). The limits live in the plans
//! crate.

string_enum! {
    #[derive(PartialOrd, Ord)]
    pub enum PlanId: "plan id" {
        Free => "free",
        Operator => "operator",
        Scale => "scale",
        Fleet => "fleet",
        Enterprise => "enterprise",
    }
}
string_enum_serde!(PlanId);

impl PlanId {
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

    #[test]
    fn serde_uses_the_lower_case_names() {
        assert_eq!(serde_json::to_string(&PlanId::Fleet).unwrap(), r#""fleet""#);
        let plan: PlanId = serde_json::from_str(r#""enterprise""#).unwrap();
        assert_eq!(plan, PlanId::Enterprise);
        assert!(serde_json::from_str::<PlanId>(r#""Free""#).is_err());
    }
}
