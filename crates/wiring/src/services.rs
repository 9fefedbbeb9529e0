//! The services of a Sealpost process, built once from the configuration.

use std::sync::Arc;

use anyhow::Context;
use sealpost_accounts::Accounts;
use sealpost_activity::ActivityLog;
use sealpost_addresses::{Addresses, ReservedNames};
use sealpost_billing::{Billing, PaymentProvider, ProviderId, SandboxProvider};
use sealpost_billing_providers::{BtcpayConfig, BtcpayProvider, StripeConfig, StripeProvider};
use sealpost_blobs_fs::FsBlobStore;
use sealpost_blobs_object::{ObjectBlobStore, S3Location};
use sealpost_config::Config;
use sealpost_devices::Devices;
use sealpost_kernel::Clock;
use sealpost_messages::ingest::Ingest;
use sealpost_messages::mailbox::Mailbox;
use sealpost_messages::recovery::BlobRecovery;
use sealpost_messages::store::BlobStore;
use sealpost_store_pg::{InstanceLock, PgStore};
use sealpost_subscriptions::Subscriptions;
use sealpost_webhooks::Webhooks;

/// Connections in the pool of one process.
const POOL_SIZE: usize = 16;

/// The store, the blob store and every domain service, wired once. Clones
/// share everything, including the ingest instance lock, which is held for
/// as long as any clone lives.
#[derive(Clone)]
pub struct Services {
    pub store: PgStore,
    pub blobs: Arc<dyn BlobStore>,
    pub clock: Arc<dyn Clock>,
    pub accounts: Accounts,
    pub devices: Devices,
    pub addresses: Addresses,
    pub activity: ActivityLog,
    /// `GET /events/stream`.
    pub events: sealpost_activity::EventFeed,
    pub mailbox: Mailbox,
    /// This process's ingest instance: SMTP and `POST /messages`.
    pub ingest: Ingest,
    /// Recovery of pending blobs, sparing this process's own deliveries.
    pub blob_recovery: BlobRecovery,
    pub webhooks: Webhooks,
    pub subscriptions: Subscriptions,
    pub billing: Billing,
    /// Sending through the outbound relay (`POST /messages/send`).
    pub outbox: sealpost_messages::send::Outbox,
    /// Push preferences, address mutes and push tokens.
    pub notifications: sealpost_notifications::Notifications,
    /// Teams: members, grants, memberships.
    pub teams: sealpost_teams::Teams,
    /// In-app support tickets and the staff side.
    pub support: sealpost_support::Support,
    /// Staff tokens, audit log, abuse reports, suspensions, switches.
    pub staff: sealpost_support::Staff,
    /// Own domains: claims, their DNS checks, plan loss.
    pub domains: sealpost_domains::Domains,
    /// Keeps `ingest` alive in the eyes of every process's recovery.
    _instance_lock: Arc<InstanceLock>,
}

/// The server keys (`SEALPOST_SERVER_KEY`), which the API and the jobs
/// cannot run without: sign-in challenges are derived under them and webhook
/// secrets sealed.
///
/// # Errors
/// When `SEALPOST_SERVER_KEY` is unset, with a message that says what to do.
pub fn server_keys(config: &Config) -> anyhow::Result<sealpost_seal::ServerKeys> {
    config.server_keys.clone().context(
        "SEALPOST_SERVER_KEY is unset: set it to 32 random bytes as base64url \
         (for example the output of `openssl rand 32 | basenc --base64url | tr -d =`), \
         keep it outside the database, and give every API and jobs process the same one \
         (docs/configuration.md)",
    )
}

impl Services {
    /// Connects to the database (already migrated) and the blob directory,
    /// builds the services and takes this process's ingest instance lock.
    ///
    /// # Errors
    /// Also when `SEALPOST_SERVER_KEY` is unset ([`server_keys`]).
    pub async fn from_config(config: &Config, clock: Arc<dyn Clock>) -> anyhow::Result<Services> {
        Self::with_http_threads(config, clock, 0).await
    }

    /// [`Services::from_config`] for a process with `http_threads` HTTP
    /// threads: the store's connections are split into a pool per thread
    /// (each binds itself with [`PgStore::bind_this_thread`]) and one for
    /// the rest, when each gets enough ([`PgStore::connect_per_http_thread`]).
    ///
    /// # Errors
    /// As [`Services::from_config`].
    pub async fn with_http_threads(
        config: &Config,
        clock: Arc<dyn Clock>,
        http_threads: usize,
    ) -> anyhow::Result<Services> {
        let keys = server_keys(config)?;
        let store =
            PgStore::connect_per_http_thread(config.database_url.expose(), POOL_SIZE, http_threads)
                .context("connecting to the database")?;
        store.ping().await.context("reaching the database")?;
        let blobs = blob_store(config).await?;
        let ingest = Ingest::new(
            Arc::new(store.clone()),
            blobs.clone(),
            clock.clone(),
            config.domains.clone(),
        )
        .with_own_domains(Arc::new(store.clone()));
        // Held before anything is delivered: other processes' recovery
        // leaves this instance's deliveries in flight alone.
        let instance_lock = store
            .hold_instance_lock(ingest.instance())
            .await
            .context("taking the ingest instance lock")?;
        Ok(Services {
            accounts: Accounts::new(Arc::new(store.clone()), clock.clone(), keys.clone())
                .with_registrations_per_network(config.registrations_per_network),
            devices: Devices::new(Arc::new(store.clone()), clock.clone()),
            addresses: Addresses::new(
                Arc::new(store.clone()),
                clock.clone(),
                config.domains.clone(),
            )
            .with_own_domains(Arc::new(store.clone()))
            .with_reserved_names(ReservedNames::new(config.reserved_names.clone())),
            domains: own_domains(&store, config, &clock)?,
            activity: ActivityLog::new(Arc::new(store.clone()), clock.clone()),
            events: sealpost_activity::EventFeed::new(Arc::new(store.clone())),
            mailbox: Mailbox::new(Arc::new(store.clone()), blobs.clone(), clock.clone()),
            blob_recovery: ingest.recovery(),
            ingest,
            webhooks: Webhooks::new(Arc::new(store.clone()), clock.clone(), keys),
            subscriptions: Subscriptions::new(Arc::new(store.clone()), clock.clone()),
            billing: billing(&store, config, &clock)?,
            outbox: outbox(&store, config, &clock)?,
            notifications: sealpost_notifications::Notifications::new(
                Arc::new(store.clone()),
                clock.clone(),
            ),
            teams: sealpost_teams::Teams::new(Arc::new(store.clone()), clock.clone()),
            support: support(&store, config, &clock)?,
            staff: staff(&store, config, &clock)?,
            store,
            blobs,
            clock,
            _instance_lock: Arc::new(instance_lock),
        })
    }
}

/// The blob store the configuration names: the S3 bucket of
/// `SEALPOST_BLOB_URL` (reached once here, so a wrong bucket or key stops
/// the process at start-up), else the directory `SEALPOST_BLOB_DIR`.
///
/// # Errors
/// When the store cannot be opened or reached.
pub async fn blob_store(config: &Config) -> anyhow::Result<Arc<dyn BlobStore>> {
    let Some(bucket) = &config.blob_bucket else {
        let store = FsBlobStore::open(&config.blob_dir)
            .await
            .with_context(|| format!("opening SEALPOST_BLOB_DIR {}", config.blob_dir.display()))?;
        return Ok(Arc::new(store));
    };
    let location = S3Location {
        bucket: bucket.bucket.clone(),
        prefix: bucket.prefix.clone(),
        endpoint: bucket.endpoint.clone(),
        region: bucket.region.clone(),
        credentials: bucket
            .credentials
            .as_ref()
            .map(|(id, secret)| (id.clone(), secret.expose().to_owned())),
    };
    let named = || format!("SEALPOST_BLOB_URL s3://{}/{}", bucket.bucket, bucket.prefix);
    let store = ObjectBlobStore::s3(&location).with_context(|| format!("opening {}", named()))?;
    store.check().await.with_context(|| {
        format!(
            "reaching {} (check AWS_ENDPOINT_URL, AWS_REGION and the keys)",
            named()
        )
    })?;
    Ok(Arc::new(store))
}

/// Support with `SEALPOST_SUPPORT_KEY` as the key until staff rotate it.
fn support(
    store: &PgStore,
    config: &Config,
    clock: &Arc<dyn Clock>,
) -> anyhow::Result<sealpost_support::Support> {
    let key = config
        .support_key
        .as_deref()
        .map(|text| {
            sealpost_support::PublicKey::parse(text)
                .context("SEALPOST_SUPPORT_KEY must be a 32-byte X25519 public key in base64url")
        })
        .transpose()?;
    Ok(sealpost_support::Support::new(
        Arc::new(store.clone()),
        clock.clone(),
        key,
    ))
}

/// Own domains checked through `SEALPOST_DNS_RESOLVER`, expecting
/// `SEALPOST_DNS_NAMESERVERS` and `SEALPOST_MX_HOST`; a DKIM key is made at
/// each ownership proof when a server key is configured.
fn own_domains(
    store: &PgStore,
    config: &Config,
    clock: &Arc<dyn Clock>,
) -> anyhow::Result<sealpost_domains::Domains> {
    use sealpost_domains::{DomainSettings, Domains};
    let resolver = sealpost_dns_check::DnsResolver::new(config.dns.resolver)
        .map_err(anyhow::Error::msg)
        .context("configuring the DNS resolver (SEALPOST_DNS_RESOLVER)")?;
    let service_domains = config
        .domains
        .iter()
        .chain(&config.dns.nameservers)
        .chain(std::iter::once(&config.dns.mx_host))
        .cloned()
        .chain(config.public_host())
        .collect();
    let domains = Domains::new(
        Arc::new(store.clone()),
        Arc::new(resolver),
        clock.clone(),
        DomainSettings {
            service_domains,
            nameservers: config.dns.nameservers.clone(),
            mx_host: config.dns.mx_host.clone(),
            dkim_selector: config.dkim_selector.clone(),
        },
    );
    Ok(match &config.server_keys {
        Some(keys) => domains.with_dkim(
            Arc::new(sealpost_outbound_mail::RsaDkimKeyMaker),
            keys.clone(),
        ),
        None => domains,
    })
}

/// Sending through `SEALPOST_SMTP_RELAY`, DKIM-signed with
/// `SEALPOST_DKIM_KEY` (mail from an own domain with that domain's key,
/// when a server key opens it); off (503 `feature_disabled`) without a relay.
fn outbox(
    store: &PgStore,
    config: &Config,
    clock: &Arc<dyn Clock>,
) -> anyhow::Result<sealpost_messages::send::Outbox> {
    use sealpost_messages::send::{MailRelay, Outbox};
    use sealpost_outbound_mail::{DkimSettings, SmtpRelay};
    let relay = match &config.smtp_relay {
        None => None,
        Some(url) => {
            let dkim = match &config.dkim_key_file {
                Some(path) => {
                    // Parsed once here; the text is wiped as soon as ring holds the key.
                    let pem = std::fs::read_to_string(path)
                        .map(zeroize::Zeroizing::new)
                        .with_context(|| format!("reading SEALPOST_DKIM_KEY {}", path.display()))?;
                    Some(
                        DkimSettings::from_pem(&config.dkim_selector, &pem).with_context(|| {
                            format!("reading SEALPOST_DKIM_KEY {}", path.display())
                        })?,
                    )
                }
                None => {
                    tracing::warn!("SEALPOST_DKIM_KEY is unset: sent mail is not DKIM-signed");
                    None
                }
            };
            let mut relay = SmtpRelay::new(url.expose(), config.smtp_relay_timeout, dkim)
                .context("configuring the outbound relay")?;
            if let Some(keys) = &config.server_keys {
                relay = relay.with_own_domain_keys(Arc::new(OwnDomainDkim {
                    store: store.clone(),
                    keys: keys.clone(),
                }));
            }
            Some(Arc::new(relay) as Arc<dyn MailRelay>)
        }
    };
    Ok(Outbox::new(Arc::new(store.clone()), relay, clock.clone())
        .with_first_day_sends(config.new_account_sends))
}

/// The staff side: tokens live `SEALPOST_STAFF_TOKEN_DAYS` unless made
/// otherwise; support key rotations are proved under the server key.
fn staff(
    store: &PgStore,
    config: &Config,
    clock: &Arc<dyn Clock>,
) -> anyhow::Result<sealpost_support::Staff> {
    let lifetime = sealpost_support::staff_access::token_lifetime(config.staff_token_days)
        .map_err(|error| anyhow::anyhow!("SEALPOST_STAFF_TOKEN_DAYS: {error}"))?;
    let mut staff = sealpost_support::Staff::new(Arc::new(store.clone()), clock.clone())
        .with_token_lifetime(lifetime);
    if let Some(keys) = &config.server_keys {
        staff = staff.with_rotation_proofs(sealpost_support::RotationProofs::new(keys.clone()));
    }
    Ok(staff)
}

/// Own domains' DKIM keys for the relay: read from the store, opened with
/// the server key they were sealed under at ownership proof.
struct OwnDomainDkim {
    store: PgStore,
    keys: sealpost_seal::ServerKeys,
}

#[async_trait::async_trait]
impl sealpost_outbound_mail::OwnDomainKeys for OwnDomainDkim {
    async fn dkim(
        &self,
        domain: &str,
    ) -> Result<Option<sealpost_outbound_mail::DkimSettings>, String> {
        let Some((account, selector, sealed)) = self
            .store
            .domain_dkim_key(domain)
            .await
            .map_err(|error| error.to_string())?
        else {
            return Ok(None);
        };
        let purpose = sealpost_domains::DKIM_KEY_PURPOSE;
        let row = sealpost_domains::dkim_key_row(&account, domain);
        let pkcs8 = match self.keys.open(purpose, &row, &sealed) {
            // A key sealed before keys were bound to their domain: read in
            // the old form once and sealed again, bound, in its place.
            Err(sealpost_seal::AtRestError::NotBound) => {
                let pkcs8 = self
                    .keys
                    .open_for_reseal(purpose, &row, &sealed)
                    .map_err(|error| error.to_string())?;
                let bound = self.keys.seal(purpose, &row, &pkcs8);
                self.store
                    .replace_domain_dkim_key(&account, domain, &sealed, &bound)
                    .await
                    .map_err(|error| error.to_string())?;
                pkcs8
            }
            opened => opened.map_err(|error| error.to_string())?,
        };
        sealpost_outbound_mail::DkimSettings::from_pkcs8_der(&selector, &pkcs8)
            .map(Some)
            .map_err(|error| error.to_string())
    }
}

/// Billing with the providers `config` configures: those with keys (the
/// sandbox when `SEALPOST_BILLING_SANDBOX` is on); those named in
/// `SEALPOST_BILLING_DISABLED` take no checkouts but still settle notices.
fn billing(store: &PgStore, config: &Config, clock: &Arc<dyn Clock>) -> anyhow::Result<Billing> {
    let switched_off = ProviderId::ALL
        .into_iter()
        .filter(|id| config.billing_disabled.iter().any(|off| off == id.as_str()));
    Ok(Billing::new(
        Arc::new(store.clone()),
        Arc::new(store.clone()),
        payment_providers(config)?,
        clock.clone(),
    )
    .switch_off(switched_off))
}

fn payment_providers(config: &Config) -> anyhow::Result<Vec<Arc<dyn PaymentProvider>>> {
    // Where a provider sends the payer back: a page of ours that says so.
    let back = format!("{}/billing/return", config.public_url);
    let mut providers: Vec<Arc<dyn PaymentProvider>> = Vec::new();
    if let Some(keys) = &config.stripe {
        let stripe = StripeProvider::new(StripeConfig {
            api_base: keys.api_url.clone(),
            ..StripeConfig::new(
                keys.secret_key.as_str(),
                keys.webhook_secret.as_str(),
                &back,
                &back,
            )
        })
        .context("configuring the Stripe provider")?;
        providers.push(Arc::new(stripe));
    }
    if let Some(keys) = &config.btcpay {
        let btcpay = BtcpayProvider::new(BtcpayConfig {
            server_url: keys.server_url.clone(),
            api_key: keys.api_key.clone(),
            store_id: keys.store_id.clone(),
            webhook_secret: keys.webhook_secret.clone(),
            redirect_url: back.clone(),
        })
        .context("configuring the BTCPay provider")?;
        providers.push(Arc::new(btcpay));
    }
    if config.billing_sandbox {
        providers.push(Arc::new(SandboxProvider::new(&config.public_url)));
    }
    Ok(providers)
}
