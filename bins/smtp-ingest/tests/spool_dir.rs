#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

//! The spool directory at start-up, with the built `sealpost-smtp` against
//! a real database: a directory others may enter (mode wider than 0700) or
//! that another user owns stops start-up with a message naming it; one on
//! tmpfs is used, with a warning.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use sealpost_testkit::TestDb;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;

/// A directory of its own for one test, under `parent`.
fn scratch(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(format!(
        "sealpost-spool-startup-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `sealpost-smtp` on a free port with `spool` as its spool directory,
/// its log (warnings and worse) piped.
fn start(db: &TestDb, spool: &Path) -> (Child, std::net::SocketAddr) {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let blobs = std::env::temp_dir().join(format!("sealpost-blobs-spool-{}", std::process::id()));
    let child = Command::new(env!("CARGO_BIN_EXE_sealpost-smtp"))
        .env("DATABASE_URL", &db.url)
        .env("SEALPOST_SMTP_ADDR", addr.to_string())
        .env("SEALPOST_BLOB_DIR", blobs)
        .env("SEALPOST_DOMAINS", "mail.localhost")
        .env("SEALPOST_SMTP_SPOOL_DIR", spool)
        .env("SEALPOST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting sealpost-smtp");
    (child, addr)
}

/// Its exit status once it stopped by itself (within 30 s), and its log.
fn refused(mut child: Child, why: &str) -> (ExitStatus, String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sealpost-smtp still running 30 s after starting with {why}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status, log(&mut child))
}

fn log(child: &mut Child) -> String {
    let mut text = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// True once the ingest greets 220 (within 30 s), false if it exited.
async fn greets(child: &mut Child, addr: std::net::SocketAddr) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        if let Ok(stream) = TcpStream::connect(addr).await {
            let mut line = String::new();
            BufReader::new(stream).read_line(&mut line).await.unwrap();
            return line.starts_with("220");
        }
        assert!(Instant::now() < deadline, "sealpost-smtp never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spool_directory_open_to_others_stops_start_up() {
    let db = TestDb::create().await;
    let dir = scratch(&std::env::temp_dir(), "mode");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();

    let (child, _) = start(&db, &dir);
    let (status, log) = refused(child, "a spool directory of mode 0755");
    assert!(!status.success(), "{status}");
    assert!(log.contains("SEALPOST_SMTP_SPOOL_DIR"), "{log}");
    assert!(log.contains(&dir.display().to_string()), "{log}");
    assert!(log.contains("mode 0755, wider than 0700"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spool_directory_of_another_user_stops_start_up() {
    let db = TestDb::create().await;
    let scratch_dir = scratch(&std::env::temp_dir(), "owner");
    // Root hands a directory of mode 0700 to `nobody`; anyone else finds
    // one root owns.
    let (dir, owner) = if running_as_root() {
        std::fs::create_dir(&scratch_dir).unwrap();
        std::fs::set_permissions(&scratch_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&scratch_dir, Some(65534), None).unwrap();
        (scratch_dir.clone(), 65534)
    } else {
        (PathBuf::from("/root"), 0)
    };

    let (child, _) = start(&db, &dir);
    let (status, log) = refused(child, "another user's spool directory");
    assert!(!status.success(), "{status}");
    assert!(log.contains("SEALPOST_SMTP_SPOOL_DIR"), "{log}");
    assert!(log.contains(&format!("owned by user {owner}")), "{log}");
    let _ = std::fs::remove_dir_all(&scratch_dir);
}

/// The effective user is root when it may hand files to others.
fn running_as_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|meta| std::os::unix::fs::MetadataExt::uid(&meta) == 0)
        .unwrap_or(false)
}

/// `/dev/shm` is tmpfs on Linux.
#[tokio::test(flavor = "multi_thread")]
async fn a_spool_directory_on_tmpfs_is_used_with_a_warning() {
    let db = TestDb::create().await;
    let dir = scratch(Path::new("/dev/shm"), "tmpfs");
    let (mut child, addr) = start(&db, &dir);
    let answered = greets(&mut child, addr).await;
    let _ = child.kill();
    let _ = child.wait();
    let log = log(&mut child);
    assert!(answered, "sealpost-smtp did not start: {log}");
    assert!(log.contains("WARN"), "{log}");
    assert!(log.contains("on tmpfs"), "{log}");
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o700, "created {mode:o}");
    let _ = std::fs::remove_dir_all(&dir);
}
