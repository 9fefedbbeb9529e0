//! A real S3-compatible server on loopback for the object-storage tests:
//! moto in server mode (`moto_server`), from a Python virtual environment
//! installed once under the target directory (`<target>/moto-venv`, from
//! PyPI; a lock file keeps concurrent tests from installing it twice).
//! Each [`MotoServer`] runs on a free port with one bucket and is killed
//! when dropped.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sealpost_config::{BlobBucket, Config, Secret};

use crate::free_port;

/// The bucket every server starts with.
pub const BUCKET: &str = "sealpost-test";
/// moto accepts any credentials; the service still signs with these.
pub const ACCESS_KEY_ID: &str = "testing";
pub const SECRET_ACCESS_KEY: &str = "testing";
pub const REGION: &str = "us-east-1";

const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Written last by a finished install: a venv without it is redone.
const INSTALLED_MARK: &str = "sealpost-installed";

pub struct MotoServer {
    pub addr: SocketAddr,
    child: Child,
}

impl MotoServer {
    /// Installs moto if needed, starts it and creates [`BUCKET`]. Panics,
    /// saying what failed, when it cannot (pip needs PyPI).
    pub async fn start() -> MotoServer {
        match tokio::task::spawn_blocking(Self::start_blocking).await {
            Ok(server) => server,
            // The install's own message, not a JoinError around it.
            Err(error) => std::panic::resume_unwind(error.into_panic()),
        }
    }

    /// [`MotoServer::start`] for callers outside a runtime.
    pub fn start_blocking() -> MotoServer {
        let program = install();
        // A port found free can be taken before moto binds it: try again.
        for _ in 0..3 {
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
            let child = Command::new(&program)
                .args(["-H", "127.0.0.1", "-p", &addr.port().to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|error| panic!("starting {}: {error}", program.display()));
            let mut server = MotoServer { addr, child };
            if server.wait_until_up() {
                server.create_bucket(BUCKET);
                return server;
            }
        }
        panic!("moto_server did not start on a free loopback port (3 tries)");
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bucket as the service's configuration holds it, `prefix` inside.
    pub fn bucket(&self, prefix: &str) -> BlobBucket {
        BlobBucket {
            bucket: BUCKET.to_owned(),
            prefix: prefix.to_owned(),
            endpoint: Some(self.endpoint()),
            region: Some(REGION.to_owned()),
            credentials: Some((ACCESS_KEY_ID.to_owned(), Secret::new(SECRET_ACCESS_KEY))),
        }
    }

    /// Points `config` at the bucket (under `prefix`).
    pub fn configure(&self, config: &mut Config, prefix: &str) {
        config.blob_bucket = Some(self.bucket(prefix));
    }

    /// The environment of a service process using the bucket (under
    /// `prefix`); `SEALPOST_BLOB_DIR` must not be set beside it.
    pub fn env(&self, prefix: &str) -> Vec<(String, String)> {
        let url = if prefix.is_empty() {
            format!("s3://{BUCKET}")
        } else {
            format!("s3://{BUCKET}/{prefix}")
        };
        [
            ("SEALPOST_BLOB_URL", url),
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_REGION", REGION.to_owned()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY.to_owned()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
    }

    /// Until an HTTP request is answered; false when moto exited.
    fn wait_until_up(&mut self) -> bool {
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if self.request("GET", "/").is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "moto_server did not answer on {} within {START_TIMEOUT:?}",
            self.addr
        );
    }

    fn create_bucket(&self, bucket: &str) {
        let status = self.request("PUT", &format!("/{bucket}"));
        assert_eq!(status, Some(200), "creating the bucket {bucket} on moto");
    }

    /// One unsigned HTTP/1.0 request (moto does not check signatures); its status.
    fn request(&self, method: &str, path: &str) -> Option<u16> {
        let mut stream = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        let request = format!(
            "{method} {path} HTTP/1.0\r\nHost: {}\r\nContent-Length: 0\r\n\r\n",
            self.addr
        );
        stream.write_all(request.as_bytes()).ok()?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).ok()?;
        let line = String::from_utf8_lossy(&answer);
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The target directory this program was built into: the first ancestor of
/// the executable holding cargo's `CACHEDIR.TAG`.
fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("this program's path");
    exe.ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

/// `<target>/moto-venv/bin/moto_server`, installed first if missing.
fn install() -> PathBuf {
    let target = target_dir();
    std::fs::create_dir_all(&target).expect("creating the target directory");
    let venv = target.join("moto-venv");
    let program = venv.join("bin").join("moto_server");
    let lock_path = target.join("moto-venv.lock");
    let lock = File::create(&lock_path)
        .unwrap_or_else(|error| panic!("creating {}: {error}", lock_path.display()));
    // Held while installing: a test waiting here then finds it installed.
    lock.lock()
        .unwrap_or_else(|error| panic!("locking {}: {error}", lock_path.display()));
    if venv.join(INSTALLED_MARK).is_file() && program.is_file() {
        return program;
    }
    let _ = std::fs::remove_dir_all(&venv);
    eprintln!(
        "MotoServer: installing moto[server] from PyPI into {}",
        venv.display()
    );
    run(
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
        "python3 -m venv",
    );
    run(
        Command::new(venv.join("bin").join("pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "moto[server]",
        ]),
        "pip install 'moto[server]'",
    );
    std::fs::write(venv.join(INSTALLED_MARK), b"")
        .unwrap_or_else(|error| panic!("marking {}: {error}", venv.display()));
    program
}

fn run(command: &mut Command, what: &str) {
    let output = command.output().unwrap_or_else(|error| {
        panic!("MotoServer: could not run `{what}`: {error} (is python3 installed?)")
    });
    assert!(
        output.status.success(),
        "MotoServer: `{what}` failed ({}); the object-storage tests need python3 with venv \
         and access to PyPI.\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
}
