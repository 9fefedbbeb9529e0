//! Billing: the sandbox provider, providers switched off, and the keys
//! that enable Stripe and BTCPay (kept out of `Debug` and wiped on drop).

use crate::ConfigError;
use crate::variables::{Variable, Vars};
use zeroize::Zeroizing;

pub(crate) const BILLING_SANDBOX: Variable = Variable {
    name: "SEALPOST_BILLING_SANDBOX",
    default: "false",
    meaning: "`true` enables the sandbox payment provider, whose checkout page the API serves itself (development and tests only).",
};

pub(crate) const BILLING_DISABLED: Variable = Variable {
    name: "SEALPOST_BILLING_DISABLED",
    default: "(none)",
    meaning: "Comma list of payment providers (`stripe`, `btcpay`, `sandbox`) that take no new checkouts; notices of checkouts already started are still settled.",
};

pub(crate) const STRIPE_SECRET_KEY: Variable = Variable {
    name: "SEALPOST_STRIPE_SECRET_KEY",
    default: "(unset: card payments off)",
    meaning: "Stripe secret API key; set together with `SEALPOST_STRIPE_WEBHOOK_SECRET`.",
};

pub(crate) const STRIPE_WEBHOOK_SECRET: Variable = Variable {
    name: "SEALPOST_STRIPE_WEBHOOK_SECRET",
    default: "(unset)",
    meaning: "Stripe's signing secret for payment notices.",
};

pub(crate) const STRIPE_API_URL: Variable = Variable {
    name: "SEALPOST_STRIPE_API_URL",
    default: "https://api.stripe.com",
    meaning: "Stripe's API base; changed only to point at a test double. https, or plain http to this machine only.",
};

pub(crate) const BTCPAY_URL: Variable = Variable {
    name: "SEALPOST_BTCPAY_URL",
    default: "(unset: crypto payments off)",
    meaning: "BTCPay Server base URL (https, or plain http to this machine only); set together with the three variables below.",
};

pub(crate) const BTCPAY_API_KEY: Variable = Variable {
    name: "SEALPOST_BTCPAY_API_KEY",
    default: "(unset)",
    meaning: "BTCPay Greenfield API key.",
};

pub(crate) const BTCPAY_STORE_ID: Variable = Variable {
    name: "SEALPOST_BTCPAY_STORE_ID",
    default: "(unset)",
    meaning: "BTCPay store id.",
};

pub(crate) const BTCPAY_WEBHOOK_SECRET: Variable = Variable {
    name: "SEALPOST_BTCPAY_WEBHOOK_SECRET",
    default: "(unset)",
    meaning: "BTCPay's signing secret for payment notices.",
};

/// The providers `SEALPOST_BILLING_DISABLED` may name.
const PROVIDERS: [&str; 3] = ["stripe", "btcpay", "sandbox"];

/// `SEALPOST_STRIPE_SECRET_KEY` and `SEALPOST_STRIPE_WEBHOOK_SECRET` (both or
/// neither); `SEALPOST_STRIPE_API_URL` only to point at a test double.
#[derive(Clone, PartialEq, Eq)]
pub struct StripeKeys {
    pub secret_key: Zeroizing<String>,
    pub webhook_secret: Zeroizing<String>,
    pub api_url: String,
}

/// `SEALPOST_BTCPAY_URL`, `SEALPOST_BTCPAY_API_KEY`, `SEALPOST_BTCPAY_STORE_ID`
/// and `SEALPOST_BTCPAY_WEBHOOK_SECRET` (all or none).
#[derive(Clone, PartialEq, Eq)]
pub struct BtcpayKeys {
    pub server_url: String,
    pub api_key: Zeroizing<String>,
    pub store_id: String,
    pub webhook_secret: Zeroizing<String>,
}

// Keys never reach a log line through `{:?}`; they are held in `Zeroizing`
// so the copies the configuration owns are wiped when dropped.
impl std::fmt::Debug for StripeKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeKeys")
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for BtcpayKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BtcpayKeys")
            .field("server_url", &self.server_url)
            .field("store_id", &self.store_id)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Billing {
    pub(crate) billing_sandbox: bool,
    pub(crate) billing_disabled: Vec<String>,
    pub(crate) stripe: Option<StripeKeys>,
    pub(crate) btcpay: Option<BtcpayKeys>,
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Billing, ConfigError> {
    let stripe = vars
        .all_or_none([&STRIPE_SECRET_KEY, &STRIPE_WEBHOOK_SECRET])?
        .map(|[secret_key, webhook_secret]| StripeKeys {
            secret_key: secret_key.into(),
            webhook_secret: webhook_secret.into(),
            api_url: vars.text(&STRIPE_API_URL).trim_end_matches('/').to_owned(),
        });
    if let Some(stripe) = &stripe {
        provider_url(STRIPE_API_URL.name, &stripe.api_url)?;
    }
    let btcpay = vars
        .all_or_none([
            &BTCPAY_URL,
            &BTCPAY_API_KEY,
            &BTCPAY_STORE_ID,
            &BTCPAY_WEBHOOK_SECRET,
        ])?
        .map(|keys| {
            provider_url(BTCPAY_URL.name, &keys[0])?;
            Ok::<_, ConfigError>(keys)
        })
        .transpose()?
        .map(
            |[server_url, api_key, store_id, webhook_secret]| BtcpayKeys {
                server_url: server_url.trim_end_matches('/').to_owned(),
                api_key: api_key.into(),
                store_id,
                webhook_secret: webhook_secret.into(),
            },
        );
    let billing_disabled: Vec<String> = vars
        .list(&BILLING_DISABLED)
        .map(str::to_ascii_lowercase)
        .collect();
    if let Some(unknown) = billing_disabled
        .iter()
        .find(|name| !PROVIDERS.contains(&name.as_str()))
    {
        return Err(ConfigError::Invalid {
            name: BILLING_DISABLED.name,
            reason: format!("unknown provider {unknown:?}; expected stripe, btcpay or sandbox"),
        });
    }
    Ok(Billing {
        billing_sandbox: vars.flag(&BILLING_SANDBOX)?,
        billing_disabled,
        stripe,
        btcpay,
    })
}

/// A payment provider's API address: https, or plain http to this machine
/// only (a test double); keys never travel in the clear to another host.
fn provider_url(name: &'static str, text: &str) -> Result<(), ConfigError> {
    let invalid = |reason: &str| ConfigError::Invalid {
        name,
        reason: reason.to_owned(),
    };
    let parsed = url::Url::parse(text).map_err(|error| invalid(&error.to_string()))?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(host)) => host == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(invalid("the URL names no host")),
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(invalid(
            "must be an https URL (plain http only to a test double on this machine)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::variables::vars;
    use crate::{Config, ConfigError};
    use std::collections::HashMap;

    #[test]
    fn provider_urls_are_https_outside_this_machine() {
        let with_stripe = |url: &str| {
            Config::from_vars(&vars(&[
                ("SEALPOST_STRIPE_SECRET_KEY", "sk_test_1"),
                ("SEALPOST_STRIPE_WEBHOOK_SECRET", "whsec_1"),
                ("SEALPOST_STRIPE_API_URL", url),
            ]))
        };
        assert!(with_stripe("https://api.stripe.com").is_ok());
        assert!(with_stripe("http://127.0.0.1:9999").is_ok());
        assert!(with_stripe("http://localhost:9999").is_ok());
        let refused = with_stripe("http://api.stripe.example").unwrap_err();
        assert!(matches!(
            refused,
            ConfigError::Invalid {
                name: "SEALPOST_STRIPE_API_URL",
                ..
            }
        ));
        let btcpay = |url: &str| {
            Config::from_vars(&vars(&[
                ("SEALPOST_BTCPAY_URL", url),
                ("SEALPOST_BTCPAY_API_KEY", "k"),
                ("SEALPOST_BTCPAY_STORE_ID", "s"),
                ("SEALPOST_BTCPAY_WEBHOOK_SECRET", "w"),
            ]))
        };
        assert!(btcpay("https://pay.example").is_ok());
        assert!(btcpay("http://pay.example").is_err());
        assert!(btcpay("not a url").is_err());
    }

    #[test]
    fn payment_providers_are_enabled_by_their_keys_all_or_none() {
        let config = Config::from_vars(&HashMap::new()).unwrap();
        assert_eq!(config.public_host().as_deref(), Some("127.0.0.1"));
        assert_eq!((config.stripe, config.btcpay), (None, None));
        assert_eq!(config.public_url, "http://127.0.0.1:8080");

        let config = Config::from_vars(&vars(&[
            ("SEALPOST_STRIPE_SECRET_KEY", "sk_test_1"),
            ("SEALPOST_STRIPE_WEBHOOK_SECRET", "whsec_1"),
            ("SEALPOST_PUBLIC_URL", "https://sealpost.example/"),
            ("SEALPOST_BILLING_DISABLED", "btcpay, Sandbox"),
        ]))
        .unwrap();
        assert_eq!(config.public_host().as_deref(), Some("sealpost.example"));
        let stripe = config.stripe.unwrap();
        assert_eq!(stripe.api_url, "https://api.stripe.com");
        assert_eq!(stripe.secret_key.as_str(), "sk_test_1");
        assert!(
            !format!("{stripe:?}").contains("sk_test_1"),
            "keys stay out of logs"
        );
        assert_eq!(config.public_url, "https://sealpost.example");
        assert_eq!(config.billing_disabled, vec!["btcpay", "sandbox"]);

        let half = Config::from_vars(&vars(&[
            ("SEALPOST_BTCPAY_URL", "https://pay.example"),
            ("SEALPOST_BTCPAY_API_KEY", "k"),
        ]));
        assert!(matches!(
            half,
            Err(ConfigError::Invalid {
                name: "SEALPOST_BTCPAY_STORE_ID",
                ..
            })
        ));
        assert!(Config::from_vars(&vars(&[("SEALPOST_BILLING_DISABLED", "paypal")])).is_err());
    }

    #[test]
    fn debug_output_never_holds_provider_secrets() {
        let config = Config::from_vars(&vars(&[
            ("SEALPOST_STRIPE_SECRET_KEY", "sk_live_stripe_secret"),
            ("SEALPOST_STRIPE_WEBHOOK_SECRET", "whsec_stripe_hook"),
            ("SEALPOST_BTCPAY_URL", "https://pay.example"),
            ("SEALPOST_BTCPAY_API_KEY", "btcpay_api_secret"),
            ("SEALPOST_BTCPAY_STORE_ID", "store1"),
            ("SEALPOST_BTCPAY_WEBHOOK_SECRET", "btcpay_hook_secret"),
        ]))
        .unwrap();
        let printed = format!("{config:?} {config:#?}");
        for secret in [
            "sk_live_stripe_secret",
            "whsec_stripe_hook",
            "btcpay_api_secret",
            "btcpay_hook_secret",
        ] {
            assert!(!printed.contains(secret), "{secret} in {printed}");
        }
        assert!(printed.contains("https://pay.example"), "{printed}");
        let btcpay = config.btcpay.unwrap();
        assert_eq!(btcpay.api_key.as_str(), "btcpay_api_secret");
        assert_eq!(btcpay.webhook_secret.as_str(), "btcpay_hook_secret");
    }
}
