//! Limits on what new Free accounts can do: how many may be registered from
//! one client network, and how much a new one may send on its first day.

use crate::ConfigError;
use crate::variables::{Variable, Vars};

pub(crate) const REGISTRATIONS_PER_NETWORK: Variable = Variable {
    name: "SEALPOST_REGISTRATIONS_PER_NETWORK",
    default: "20",
    meaning: "Accounts a client network (an IPv4 /24, an IPv6 /48) may register in an hour, counted in the database across every API process; past it `POST /accounts` is 429 `rate_limited` with `Retry-After`. The project's own load, bench and browser stacks set it high, since they register many accounts from loopback.",
};

pub(crate) const NEW_ACCOUNT_SENDS: Variable = Variable {
    name: "SEALPOST_NEW_ACCOUNT_SENDS",
    default: "10",
    meaning: "Sends a day (one per recipient) a Free account may make in its first 24 hours, instead of the plan's daily limit; past it `POST /messages/send` is 429 `rate_limited`.",
};

pub(crate) struct Accounts {
    pub(crate) registrations_per_network: u32,
    pub(crate) new_account_sends: u32,
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Accounts, ConfigError> {
    let registrations = vars.whole(&REGISTRATIONS_PER_NETWORK, 1, u64::from(u32::MAX))?;
    let sends = vars.whole(&NEW_ACCOUNT_SENDS, 0, u64::from(u32::MAX))?;
    Ok(Accounts {
        registrations_per_network: u32::try_from(registrations).unwrap_or(u32::MAX),
        new_account_sends: u32::try_from(sends).unwrap_or(u32::MAX),
    })
}

#[cfg(test)]
mod tests {
    use crate::variables::vars;
    use crate::{Config, ConfigError};

    #[test]
    fn new_account_limits_are_read_and_bounded() {
        let config = Config::from_vars(&vars(&[])).unwrap();
        assert_eq!(config.registrations_per_network, 20);
        assert_eq!(config.new_account_sends, 10);
        let config = Config::from_vars(&vars(&[
            ("SEALPOST_REGISTRATIONS_PER_NETWORK", "100000"),
            ("SEALPOST_NEW_ACCOUNT_SENDS", "0"),
        ]))
        .unwrap();
        assert_eq!(config.registrations_per_network, 100_000);
        assert_eq!(config.new_account_sends, 0);
        let error =
            Config::from_vars(&vars(&[("SEALPOST_REGISTRATIONS_PER_NETWORK", "0")])).unwrap_err();
        assert!(matches!(
            error,
            ConfigError::Invalid {
                name: "SEALPOST_REGISTRATIONS_PER_NETWORK",
                ..
            }
        ));
    }
}
