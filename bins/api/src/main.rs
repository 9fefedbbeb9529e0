//! `sealpost-api`: configuration from the environment, then serve (and run
//! the background jobs, or only them) until SIGINT or SIGTERM.

use std::net::TcpListener;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use sealpost_api_server::StartOptions;
use sealpost_config::Config;
use sealpost_kernel::SystemClock;

/// The Sealpost API server. Configuration comes from the SEALPOST_*
/// environment variables; the database is migrated at start-up.
#[derive(Parser)]
#[command(name = "sealpost-api")]
struct Args {
    /// Run only the background jobs (hourly sweeps, the webhook sender), no
    /// HTTP. Any number of processes may run them at once.
    #[arg(long, conflicts_with = "no_jobs")]
    jobs_only: bool,
    /// Serve HTTP only: another process (`--jobs-only`) runs the jobs.
    #[arg(long)]
    no_jobs: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Staff tokens for the staff API and `sealpost staff` (operator only).
    #[command(name = "staff-token", subcommand)]
    StaffToken(StaffToken),
}

#[derive(clap::Subcommand)]
enum StaffToken {
    /// Creates a token for NAME and prints it once; only its hash is stored.
    Create {
        name: String,
        /// Comma list of what it may do: read, reply, moderate, rotate.
        #[arg(long, default_value = "read,reply")]
        roles: String,
        /// Days it lives (1 to 366); SEALPOST_STAFF_TOKEN_DAYS (90) when left out.
        #[arg(long)]
        days: Option<u32>,
    },
    /// Revokes a token by its id (stm_...) or name.
    Revoke { id_or_name: String },
    /// Lists tokens, live and revoked.
    List,
}

/// mimalloc: glibc's malloc and free led the API's own functions in its
/// profile serving pages of mail (docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config = Config::from_env()?;
    sealpost_config::init_tracing(&config);
    if let Some(Command::StaffToken(command)) = args.command {
        use sealpost_api_server::StaffTokenCommand;
        let command = match command {
            StaffToken::Create { name, roles, days } => {
                StaffTokenCommand::Create { name, roles, days }
            }
            StaffToken::Revoke { id_or_name } => StaffTokenCommand::Revoke(id_or_name),
            StaffToken::List => StaffTokenCommand::List,
        };
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        for line in sealpost_api_server::staff_token(&config, command).await? {
            writeln!(out, "{line}").context("writing to stdout")?;
        }
        return Ok(());
    }
    let listener = if args.jobs_only {
        None
    } else {
        Some(
            TcpListener::bind(&config.http_addr)
                .with_context(|| format!("binding SEALPOST_HTTP_ADDR {}", config.http_addr))?,
        )
    };
    let options = StartOptions {
        http_threads: std::thread::available_parallelism().map_or(2, usize::from),
        background_jobs: !args.no_jobs,
    };
    let running =
        sealpost_api_server::start(&config, Arc::new(SystemClock), listener, options).await?;

    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; stopping"),
        _ = terminate.recv() => tracing::info!("terminated; stopping"),
    }
    running.stop().await;
    Ok(())
}
