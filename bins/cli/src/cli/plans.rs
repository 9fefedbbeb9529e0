//! Plans (`plan`) and paying for them (`billing`).

use clap::Subcommand;

/// Plans and the account's subscription.
#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Every plan with its price and limits.
    List,
    /// The account's plan, when its paid period ends, and any pause after a
    /// missed payment.
    Show,
    /// Move to a plan priced the same or lower (a dearer one goes through
    /// `sealpost billing checkout`). Moving down while a paid period runs
    /// is scheduled for its end; choosing the current plan again cancels it.
    Change {
        /// free, operator, scale or fleet.
        plan: String,
        /// Accepted for scripts written when a move down asked first; nothing asks now.
        #[arg(long, short)]
        yes: bool,
    },
}

/// Paying for a plan.
#[derive(Debug, Subcommand)]
pub enum BillingCommand {
    /// The payment providers this service takes.
    Providers,
    /// Start paying for one 30-day period of PLAN; prints the checkout url.
    Checkout {
        /// operator, scale or fleet.
        plan: String,
        /// stripe (card), btcpay (crypto), or sandbox (development)
        /// [default: the only provider the service takes]
        #[arg(long)]
        provider: Option<String>,
    },
    /// Show a payment and its status.
    Payment {
        /// The payment id (pay_...).
        id: String,
    },
    /// Open the card provider's billing portal: prints a url (valid for a
    /// few minutes) where renewal is turned off or on and the card and
    /// invoices are kept. Only for accounts that paid by card.
    Portal,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::*;

    #[test]
    fn billing_forms_parse() {
        let cli = Cli::try_parse_from(["sealpost", "plan", "change", "free", "--yes"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Plan(PlanCommand::Change { ref plan, yes: true }) if plan == "free"
        ));
        let cli = Cli::try_parse_from(["sealpost", "plan", "change", "free"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Plan(PlanCommand::Change { yes: false, .. })
        ));
        let cli = Cli::try_parse_from(["sealpost", "billing", "checkout", "scale"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Billing(BillingCommand::Checkout { provider: None, .. })
        ));
        let cli = Cli::try_parse_from(["sealpost", "billing", "portal"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Billing(BillingCommand::Portal)
        ));
        assert_eq!(cli.command.stored_credential(), StoredCredential::Session);
        let cli = Cli::try_parse_from(["sealpost", "domains"]).unwrap();
        assert_eq!(
            cli.command.stored_credential(),
            StoredCredential::SessionElseDevice
        );
    }
}
