//! `cargo xtask seed`: a demo account on a running stack, made through the
//! public API with the SDK exactly as a client would: a recovery phrase,
//! the Scale plan paid through the sandbox provider, labelled addresses, a
//! paired agent holding one address's keys, sealed mail with attachments,
//! and a webhook. Prints the phrase so the CLI can open the account.

use anyhow::{Context, Result, bail};
use sealpost_client::Client;
use sealpost_client::sealing::{self, DeviceProfile, KeyBundle};
use sealpost_client::types::{CreateAddressRequest, DeviceKind, Platform};
use sealpost_kernel::PlanId;
use sealpost_seal::{RecoveryPhrase, SealedBox, context, random_bytes};
use x25519_dalek::{PublicKey, StaticSecret};

/// What was made, for the summary.
pub struct Seeded {
    /// The session the account was registered with.
    pub token: String,
    pub phrase: RecoveryPhrase,
    pub account_id: String,
    pub plan: &'static str,
    pub addresses: Vec<String>,
    pub messages: usize,
    pub agent: String,
    pub webhook: Option<String>,
}

const ADDRESSES: [(&str, &str); 3] = [
    ("signup", "Sign-ups"),
    ("news", "Newsletters"),
    ("receipts", "Receipts"),
];

/// Waits (up to a minute) for the API at `api_url` to answer, seeds it and
/// prints the summary; for `cargo xtask dev --seed`, beside the server.
pub fn when_up(api_url: &str) {
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| {
            runtime.block_on(async {
                let client = Client::new(api_url)?;
                for _ in 0..120 {
                    if client.health().await.is_ok() {
                        return seed(api_url).await;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
                bail!("the API at {api_url} did not answer within a minute")
            })
        });
    match outcome {
        Ok(seeded) => print(&seeded, api_url),
        Err(error) => eprintln!("xtask: seeding failed: {error:#}"),
    }
}

/// The summary a newcomer reads: what exists and how to open it.
pub fn print(seeded: &Seeded, api_url: &str) {
    println!();
    println!(
        "Seeded a demo account {} on the {} plan:",
        seeded.account_id, seeded.plan
    );
    for address in &seeded.addresses {
        println!("  address  {address}");
    }
    println!(
        "  mail     {} sealed messages (one with two attachments)",
        seeded.messages
    );
    println!(
        "  agent    {} (paired, holding the first address's keys)",
        seeded.agent
    );
    if let Some(webhook) = &seeded.webhook {
        println!(
            "  webhook  {webhook} -> https://hooks.example.com/sealpost (will fail: nothing listens there)"
        );
    }
    println!();
    println!("Its recovery phrase (a demo account: fine to share):");
    println!("    {}", seeded.phrase.words().as_str());
    println!("Open it with the CLI (it unlocks the account's keys with the phrase):");
    println!(
        "    export SEALPOST_PHRASE=\"{}\"",
        seeded.phrase.words().as_str()
    );
    println!("    sealpost --api-url {api_url} login");
    println!("    sealpost inbox list");
    println!("    sealpost mail list ADDRESS      # then: sealpost mail read MESSAGE_ID");
}

pub async fn seed(api_url: &str) -> Result<Seeded> {
    let anonymous = Client::new(api_url)?;
    anonymous.health().await.with_context(|| {
        format!("no Sealpost API answers at {api_url}; start it with `cargo xtask dev`")
    })?;
    let phrase = RecoveryPhrase::generate();
    let keys = phrase.keys();
    let signed_in = anonymous.register(&keys).await.context("registering")?;
    let client = anonymous.clone().with_token(signed_in.token.clone());

    // Scale through the sandbox provider, when the deployment offers it:
    // webhooks and exact names need a paid plan.
    let sandbox = client
        .billing_providers()
        .await?
        .iter()
        .any(|provider| provider.id.as_str() == "sandbox");
    let plan = if sandbox {
        let checkout = client.checkout(PlanId::Scale, "sandbox").await?;
        let paid = reqwest::Client::new()
            .post(&checkout.url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("outcome=paid")
            .send()
            .await
            .context("paying on the sandbox page")?;
        if !paid.status().is_success() {
            bail!("the sandbox page answered {}", paid.status());
        }
        "scale"
    } else {
        "free"
    };

    let domain = client
        .domains()
        .await?
        .domains
        .first()
        .map(|offered| offered.domain.clone())
        .context("the service offers no domain")?;
    let mut addresses = Vec::new();
    for (prefix, label) in ADDRESSES {
        let id = sealing::new_address_id();
        let mut request = CreateAddressRequest::new(&id, domain.clone())
            .with_meta(&sealing::seal_label(&keys, &id, label))
            .with_public_key(&keys.address_public_key(id.as_str(), 0));
        request.prefix = Some(prefix.to_owned());
        addresses.push(client.create_address(&request).await?);
    }

    let mut messages = 0;
    for (address, mail) in addresses.iter().zip(demo_mail()) {
        for raw in mail {
            client
                .deliver_raw(
                    &address.id,
                    raw.replace("{to}", &address.email_address).as_bytes(),
                )
                .await?;
            messages += 1;
        }
    }

    // Agents need a paid plan; on Free the machine pairs as a device.
    let kind = if sandbox {
        DeviceKind::Agent
    } else {
        DeviceKind::Device
    };
    let agent = pair_agent(api_url, &client, &keys, &addresses[0].id, kind).await?;

    let webhook = if sandbox {
        Some(create_webhook(&client, &keys).await?)
    } else {
        None
    };

    Ok(Seeded {
        token: signed_in.token.clone(),
        phrase,
        account_id: signed_in.account.id.to_string(),
        plan,
        addresses: addresses
            .iter()
            .map(|address| format!("{} {}", address.id, address.email_address))
            .collect(),
        messages,
        agent,
        webhook,
    })
}

/// Pairs an agent (or a device) the way `sealpost agent pair` and
/// `sealpost device pair` do between them, then gives it the first address
/// and its keys.
async fn pair_agent(
    api_url: &str,
    operator: &Client,
    keys: &sealpost_seal::AccountKeys,
    address: &sealpost_kernel::AddressId,
    kind: DeviceKind,
) -> Result<String> {
    let device = Client::new(api_url)?;
    let secret = StaticSecret::from(random_bytes::<32>());
    let public = PublicKey::from(&secret).to_bytes();
    let opened = device
        .open_pairing_as(kind, Platform::Unknown, "Demo build agent", &public)
        .await?;
    let found = operator.lookup_pairing(&opened.code).await?;
    let id = sealing::new_device_id();
    let profile = DeviceProfile::new("Demo build agent", found.public_key);
    operator
        .claim_device(&found.id, &id, &profile.seal(keys, &id))
        .await?;
    let poll = device.poll_pairing(&opened.token).await?;
    if poll.credential.is_none() {
        bail!("the paired agent was not handed its credential");
    }
    operator.assign_address(&id, address).await?;
    let bundle = KeyBundle::for_addresses(keys, [address]);
    operator
        .set_device_keys(&id, &bundle.seal(&public, &id))
        .await?;
    Ok(id.to_string())
}

async fn create_webhook(client: &Client, keys: &sealpost_seal::AccountKeys) -> Result<String> {
    let id = sealing::new_webhook_id();
    let meta = SealedBox::seal(
        &keys.vault_public_key(),
        &context::webhook_meta(id.as_str()),
        b"Demo receiver",
    );
    client
        .create_webhook(&id, "https://hooks.example.com/sealpost", &["*"], &meta)
        .await?;
    Ok(id.to_string())
}

/// Three addresses' worth of mail: a sign-up code, a newsletter, and a
/// receipt with a CSV and a PNG attached. `{to}` is the address.
fn demo_mail() -> [Vec<String>; 3] {
    let code = "From: Acme Accounts <no-reply@acme.example>\r\nTo: {to}\r\nSubject: Your Acme sign-in code\r\nDate: Mon, 23 Nov 2026 09:00:00 +0000\r\nMessage-ID: <code-1@acme.example>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nYour code is 482913. It expires in 10 minutes.\r\n";
    let welcome = "From: Acme <hello@acme.example>\r\nTo: {to}\r\nSubject: Welcome to Acme\r\nDate: Mon, 23 Nov 2026 09:01:00 +0000\r\nMessage-ID: <welcome-1@acme.example>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n--alt\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nWelcome! Confirm your address: https://acme.example/confirm?t=7f3a\r\n--alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Welcome! <a href=\"https://acme.example/confirm?t=7f3a\">Confirm your address</a></p>\r\n--alt--\r\n";
    let news = "From: The Weekly <news@weekly.example>\r\nTo: {to}\r\nSubject: This week in disposable mail\r\nDate: Sun, 22 Nov 2026 07:00:00 +0000\r\nMessage-ID: <issue-48@weekly.example>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThree stories this week, none of them about your inbox.\r\n";
    let receipt = "From: Shop <orders@shop.example>\r\nTo: {to}\r\nSubject: Receipt for order 1042\r\nDate: Mon, 23 Nov 2026 10:30:00 +0000\r\nMessage-ID: <order-1042@shop.example>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"mix\"\r\n\r\n--mix\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThanks for your order. Your receipt and the label are attached.\r\n--mix\r\nContent-Type: text/csv; name=\"receipt-1042.csv\"\r\nContent-Disposition: attachment; filename=\"receipt-1042.csv\"\r\n\r\nitem,qty,price\r\nMug,2,12.00\r\nTea,1,6.50\r\n--mix\r\nContent-Type: image/png; name=\"label.png\"\r\nContent-Disposition: attachment; filename=\"label.png\"\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==\r\n--mix--\r\n";
    [
        vec![code.to_owned(), welcome.to_owned()],
        vec![news.to_owned()],
        vec![receipt.to_owned()],
    ]
}
