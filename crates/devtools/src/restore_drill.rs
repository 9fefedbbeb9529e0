//! `cargo xtask restore-drill`: a backup taken from a stack with mail,
//! restored into a fresh database and blob directory, and read again with
//! the recovery phrase through the CLI (docs/operations.md "Backup and
//! restore").
//!
//! 1. A stack (the test kit's launcher) with its blobs in a directory and a
//!    server key of this run; an account registered with a recovery phrase,
//!    an address, and mail with an attachment over SMTP.
//! 2. The backup: `pg_dump --format=custom` of its database, then a copy of
//!    the blob directory, and the server key.
//! 3. That stack stopped (its database dropped).
//! 4. The restore: a fresh database filled by `pg_restore`, the copied
//!    blobs, the same server key; a new stack started on them.
//! 5. The CLI signs in with the phrase, finds the message, reads it and
//!    saves its attachment, which must equal what was sent.
//!
//! Prints each step; exits non-zero at the first failure.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result, bail, ensure};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_client::Client;
use sealpost_client::sealing;
use sealpost_client::types::CreateAddressRequest;
use sealpost_seal::RecoveryPhrase;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

use crate::harness::{
    Launched, Profile, StackOptions, build_stack, command, leftover_of_dead_run, reply, wait_smtp,
};
use crate::postgres;

const SUBJECT: &str = "Restore drill";
const ATTACHMENT: &str = "id,amount\r\n1,42.00\r\n2,7.50";

fn step(text: &str) {
    println!("restore-drill: {text}");
}

pub fn run(runtime: &Runtime) -> Result<ExitCode> {
    let root = postgres::workspace_root();
    let target = sealpost_devprocess::target_dir(&root);
    // The CLI too: the stack's build is the workspace's binaries.
    build_stack(&root, Profile::Debug)?;
    let server = postgres::ensure_server()?;
    let drill_dir = target.join("restore-drill");
    std::fs::create_dir_all(&drill_dir)?;
    for entry in std::fs::read_dir(&drill_dir)?.flatten() {
        if entry.file_name().to_str().is_some_and(leftover_of_dead_run) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let run_dir = drill_dir.join(std::process::id().to_string());
    std::fs::create_dir_all(&run_dir)?;
    let restored = format!("sealpost_drill_{}", std::process::id());
    let outcome = runtime.block_on(drill(&target, &server, &run_dir, &restored));
    // The restored database is this run's own: dropped whatever happened.
    if let Err(error) = runtime.block_on(drop_database(&server, &restored)) {
        eprintln!("restore-drill: dropping {restored}: {error:#}");
    }
    match outcome {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&run_dir);
            step("passed");
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!(
                "restore-drill: FAILED: {error:#} (logs and files in {})",
                run_dir.display()
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

async fn drill(target: &Path, server: &str, run_dir: &Path, restored: &str) -> Result<()> {
    let server_key = sealpost_seal::ServerKeys::generate_text();
    let blobs = run_dir.join("blobs");
    let settings = |blob_dir: &Path| -> Vec<(String, String)> {
        vec![
            ("SEALPOST_DOMAINS".to_owned(), "mail.localhost".to_owned()),
            ("SEALPOST_SERVER_KEY".to_owned(), server_key.clone()),
            (
                "SEALPOST_BLOB_DIR".to_owned(),
                blob_dir.display().to_string(),
            ),
        ]
    };
    let start = |env: Vec<(String, String)>, logs: PathBuf| {
        tokio::task::block_in_place(|| {
            Launched::start(
                target,
                server,
                &StackOptions {
                    launcher_args: &[],
                    profile: Profile::Debug,
                    processes: &["api", "jobs", "smtp"],
                    env,
                    logs,
                    database_query: None,
                },
            )
        })
    };

    step("starting a stack with its blobs in a directory");
    let first = start(settings(&blobs), run_dir.join("logs-before"))?;
    let api = first.api()?.to_owned();
    let phrase = RecoveryPhrase::generate();
    let keys = phrase.keys();
    let anonymous = Client::new(&api)?;
    let signed_in = anonymous.register(&keys).await.context("registering")?;
    let client = anonymous.with_token(signed_in.token);
    let domain = client
        .domains()
        .await?
        .domains
        .into_iter()
        .next()
        .map(|offered| offered.domain)
        .context("the service offers no domain")?;
    let id = sealing::new_address_id();
    let request = CreateAddressRequest::new(&id, domain)
        .with_meta(&sealing::seal_label(&keys, &id, "drill"))
        .with_public_key(&keys.address_public_key(id.as_str(), 0));
    let address = client.create_address(&request).await?;
    wait_smtp(first.smtp()?).await?;
    send(first.smtp()?, &address.email_address).await?;
    step(
        "registered an account with a recovery phrase, made an address, sent it mail with an attachment over SMTP",
    );

    let dump = run_dir.join("database.dump");
    let dumped = Command::new("pg_dump")
        .args(["--format=custom", "--no-owner", "--file"])
        .arg(&dump)
        .arg(first.database_url()?)
        .status()
        .context("running pg_dump")?;
    ensure!(dumped.success(), "pg_dump failed ({dumped})");
    step(&format!(
        "backed up the database with pg_dump ({} bytes)",
        std::fs::metadata(&dump)?.len()
    ));
    let copy = run_dir.join("blobs-copy");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(&blobs)
        .arg(&copy)
        .status()
        .context("running cp")?;
    ensure!(
        copied.success(),
        "copying the blob directory failed ({copied})"
    );
    step(&format!(
        "then copied the blob directory ({} files)",
        count_files(&copy)
    ));
    step("kept the server key (SEALPOST_SERVER_KEY) beside them");
    drop(first);
    std::fs::remove_dir_all(&blobs)?;
    step("stopped the stack; its database dropped and its blob directory removed");

    let restored_url = format!("{}/{restored}", server.trim_end_matches('/'));
    sealpost_store_pg::create_database_if_missing(&restored_url)
        .await
        .with_context(|| format!("creating {restored}"))?;
    let restored_ok = Command::new("pg_restore")
        .args(["--no-owner", "--exit-on-error", "--dbname"])
        .arg(&restored_url)
        .arg(&dump)
        .status()
        .context("running pg_restore")?;
    ensure!(restored_ok.success(), "pg_restore failed ({restored_ok})");
    step(&format!(
        "restored the dump into a fresh database {restored}"
    ));
    let mut env = settings(&copy);
    env.push(("DATABASE_URL".to_owned(), restored_url));
    let second = start(env, run_dir.join("logs-after"))?;
    let api = second.api()?.to_owned();
    step("started a new stack on the restored database, the copied blobs and the same server key");

    let cli = Cli {
        program: target.join("debug").join("sealpost"),
        api,
        config_dir: run_dir.join("cli"),
        phrase: phrase.words().as_str().to_owned(),
    };
    cli.run(&["login"])?;
    step("the CLI signed in with the recovery phrase");
    let listed = cli.run(&["mail", "list", &address.email_address])?;
    let message = listed
        .split_whitespace()
        .find(|word| word.starts_with("msg_"))
        .context("the CLI lists no message")?
        .to_owned();
    let read = cli.run(&["mail", "read", &message])?;
    ensure!(
        read.contains(SUBJECT),
        "`mail read` does not show the subject:\n{read}"
    );
    step(&format!("the CLI read {message}"));
    let saved = run_dir.join("attachment.csv");
    cli.run(&[
        "mail",
        "attachment",
        &message,
        "0",
        "-o",
        &saved.display().to_string(),
    ])?;
    let bytes = std::fs::read(&saved)?;
    ensure!(
        bytes == ATTACHMENT.as_bytes(),
        "the saved attachment differs from the one sent ({} bytes)",
        bytes.len()
    );
    step("the CLI saved the attachment; it equals the one sent");
    drop(second);
    Ok(())
}

/// The CLI against the restored stack, with its own configuration directory.
struct Cli {
    program: PathBuf,
    api: String,
    config_dir: PathBuf,
    phrase: String,
}

impl Cli {
    /// Runs `sealpost <args>`; its standard output.
    fn run(&self, args: &[&str]) -> Result<String> {
        let output = Command::new(&self.program)
            .args(["--api-url", &self.api])
            .arg("--config-dir")
            .arg(&self.config_dir)
            .args(args)
            .env("SEALPOST_PHRASE", &self.phrase)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", self.program.display()))?;
        if !output.status.success() {
            bail!(
                "`sealpost {}` failed ({}): {}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// One message with a CSV attachment, over one SMTP session.
async fn send(smtp: std::net::SocketAddr, recipient: &str) -> Result<()> {
    let raw = format!(
        "From: <drill@example.com>\r\nTo: <{recipient}>\r\nSubject: {SUBJECT}\r\n\
         Date: Fri, 27 Nov 2026 00:00:00 +0000\r\nMessage-ID: <drill@example.com>\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n\
         --b\r\nContent-Type: text/plain\r\n\r\nThe backup must keep this.\r\n\
         --b\r\nContent-Type: text/csv; name=\"drill.csv\"\r\n\
         Content-Disposition: attachment; filename=\"drill.csv\"\r\n\r\n{ATTACHMENT}\r\n--b--\r\n.\r\n"
    );
    let (read, mut write) = TcpStream::connect(smtp).await?.into_split();
    let mut read = BufReader::new(read);
    ensure!(reply(&mut read).await? == 220, "no SMTP greeting");
    for (line, wanted) in [
        ("EHLO drill.example".to_owned(), 250),
        ("MAIL FROM:<drill@example.com>".to_owned(), 250),
        (format!("RCPT TO:<{recipient}>"), 250),
        ("DATA".to_owned(), 354),
    ] {
        let code = command(&mut write, &mut read, &line).await?;
        ensure!(code == wanted, "{line}: {code} (wanted {wanted})");
    }
    write.write_all(raw.as_bytes()).await?;
    let code = reply(&mut read).await?;
    ensure!(code == 250, "end of data: {code} (wanted 250)");
    let _ = command(&mut write, &mut read, "QUIT").await;
    Ok(())
}

fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => count_files(&entry.path()),
            _ => 1,
        })
        .sum()
}

async fn drop_database(server: &str, name: &str) -> Result<()> {
    let admin = format!("{}/postgres", server.trim_end_matches('/'));
    let mut conn = AsyncPgConnection::establish(&admin).await?;
    diesel::sql_query(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .execute(&mut conn)
        .await?;
    Ok(())
}
