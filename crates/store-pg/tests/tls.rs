//! TLS to PostgreSQL: a private cluster from the local PostgreSQL binaries
//! with `ssl = on` and a certificate made here (rcgen), reached through
//! `sealpost_store_pg::connect` and the pool with each `sslmode`.
//!
//! Skipped (with the reason printed) only where no PostgreSQL binaries exist.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Bool};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use sealpost_store_pg::{PgStore, connect};

/// The newest `/usr/lib/postgresql/<version>/bin` (or `pg_config --bindir`) with initdb and pg_ctl.
fn find_bindir() -> Option<PathBuf> {
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output()
        && output.status.success()
    {
        let bindir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if bindir.join("initdb").is_file() && bindir.join("pg_ctl").is_file() {
            return Some(bindir);
        }
    }
    let mut found: Vec<(Vec<u32>, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry
                .file_name()
                .to_string_lossy()
                .split('.')
                .map(str::parse)
                .collect::<Result<Vec<u32>, _>>()
                .ok()?;
            let bindir = entry.path().join("bin");
            (bindir.join("initdb").is_file() && bindir.join("pg_ctl").is_file())
                .then_some((version, bindir))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bindir)| bindir)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

fn must(output: std::io::Result<Output>, what: &str) {
    let output = output.unwrap_or_else(|error| panic!("cannot run {what}: {error}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A CA and a server certificate it issued for `localhost` only (no IP name).
struct Pki {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

fn ca_params(name: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

fn pki() -> Pki {
    let ca = CertifiedIssuer::self_signed(
        ca_params("Sealpost test DB CA"),
        KeyPair::generate().unwrap(),
    )
    .unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let cert = params.signed_by(&key, &ca).unwrap();
    Pki {
        ca_pem: ca.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

/// A running private cluster with SSL on; stopped and removed on drop.
struct Cluster {
    bindir: PathBuf,
    dir: PathBuf,
    as_root: bool,
    port: u16,
}

impl Cluster {
    fn tool(&self, name: &str) -> Command {
        let program = self.bindir.join(name);
        let mut command = if self.as_root {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        command.current_dir(&self.dir);
        command
    }

    fn start(bindir: PathBuf, pki: &Pki) -> Cluster {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir =
            std::env::temp_dir().join(format!("sealpost-pg-tls-{}-{port}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sock")).unwrap();
        let as_root = is_root();
        let cluster = Cluster {
            bindir,
            dir,
            as_root,
            port,
        };
        let write = |name: &str, text: &str| {
            let path = cluster.dir.join(name);
            fs::write(&path, text).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        };
        write("server.crt", &pki.cert_pem);
        write("server.key", &pki.key_pem);
        if as_root {
            fs::set_permissions(&cluster.dir, fs::Permissions::from_mode(0o755)).unwrap();
            must(
                Command::new("chown")
                    .args(["-R", "postgres:"])
                    .arg(&cluster.dir)
                    .output(),
                "chown",
            );
        }
        let data = cluster.dir.join("data");
        must(
            cluster
                .tool("initdb")
                .arg("-D")
                .arg(&data)
                .args([
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                    "-N",
                ])
                .output(),
            "initdb",
        );
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c ssl=on -c ssl_cert_file={} \
             -c ssl_key_file={} -c fsync=off",
            cluster.dir.join("sock").display(),
            cluster.dir.join("server.crt").display(),
            cluster.dir.join("server.key").display(),
        );
        must(
            cluster
                .tool("pg_ctl")
                .arg("-D")
                .arg(&data)
                .arg("-w")
                .arg("-l")
                .arg(cluster.dir.join("log"))
                .arg("-o")
                .arg(options)
                .arg("start")
                .output(),
            "pg_ctl start",
        );
        cluster
    }

    fn url(&self, host: &str, query: &str) -> String {
        format!("postgres://postgres@{host}:{}/postgres?{query}", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "stop"])
            .output();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

#[derive(QueryableByName)]
struct Ssl {
    #[diesel(sql_type = Bool)]
    ssl: bool,
}

async fn uses_tls(conn: &mut AsyncPgConnection) -> bool {
    diesel::sql_query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .get_result::<Ssl>(conn)
        .await
        .unwrap()
        .ssl
}

#[tokio::test(flavor = "multi_thread")]
async fn sslmode_and_sslrootcert_are_honoured_against_a_server_with_tls() {
    let Some(bindir) = find_bindir() else {
        eprintln!(
            "SKIPPED: no PostgreSQL binaries (neither `pg_config --bindir` nor \
             /usr/lib/postgresql/*/bin holds initdb and pg_ctl)"
        );
        return;
    };
    let pki = pki();
    let cluster = Cluster::start(bindir, &pki);
    let files = tempdir_for_roots(&cluster.dir, &pki);

    // verify-full with the CA that issued the certificate, by its name.
    let good = format!("sslmode=verify-full&sslrootcert={}", files.right.display());
    let mut conn = connect(&cluster.url("localhost", &good)).await.unwrap();
    assert!(uses_tls(&mut conn).await);

    // The pool opens its connections the same way.
    let pooled = cluster.url("localhost", &format!("{good}&application_name=pool-check"));
    let store = PgStore::connect(&pooled, 2).unwrap();
    store.ping().await.unwrap();
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        count: i64,
    }
    let pooled_over_tls = diesel::sql_query(
        "SELECT count(*) AS count FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = 'pool-check' AND s.ssl",
    )
    .get_result::<Count>(&mut conn)
    .await
    .unwrap();
    assert_eq!(pooled_over_tls.count, 1);

    // A CA that did not issue it: refused with a message that says why.
    let wrong = format!("sslmode=verify-full&sslrootcert={}", files.wrong.display());
    let error = connect(&cluster.url("localhost", &wrong))
        .await
        .err()
        .expect("a certificate from another CA must be refused")
        .to_string();
    assert!(error.contains("invalid peer certificate"), "{error}");
    assert!(error.contains("UnknownIssuer"), "{error}");
    assert!(error.contains("sslrootcert"), "{error}");
    assert!(
        PgStore::connect(&cluster.url("localhost", &wrong), 1)
            .unwrap()
            .ping()
            .await
            .is_err()
    );

    // verify-full checks the name (the certificate does not name 127.0.0.1);
    // verify-ca checks only the chain.
    let by_ip = format!("sslmode=verify-full&sslrootcert={}", files.right.display());
    let error = connect(&cluster.url("127.0.0.1", &by_ip))
        .await
        .err()
        .expect("a certificate for another name must be refused by verify-full")
        .to_string();
    assert!(error.contains("not valid for name"), "{error}");
    assert!(error.contains("verify-ca"), "{error}");
    let ca_only = format!("sslmode=verify-ca&sslrootcert={}", files.right.display());
    let mut conn = connect(&cluster.url("127.0.0.1", &ca_only)).await.unwrap();
    assert!(uses_tls(&mut conn).await);
    let ca_wrong = format!("sslmode=verify-ca&sslrootcert={}", files.wrong.display());
    assert!(connect(&cluster.url("127.0.0.1", &ca_wrong)).await.is_err());

    // require encrypts without checking; prefer takes TLS when offered;
    // disable stays plain.
    let mut conn = connect(&cluster.url("127.0.0.1", "sslmode=require"))
        .await
        .unwrap();
    assert!(uses_tls(&mut conn).await);
    let mut conn = connect(&cluster.url("127.0.0.1", "")).await.unwrap();
    assert!(uses_tls(&mut conn).await);
    let mut conn = connect(&cluster.url("127.0.0.1", "sslmode=disable"))
        .await
        .unwrap();
    assert!(!uses_tls(&mut conn).await);

    // Migrations connect through the same function.
    let migrate_url = cluster
        .url("localhost", &good)
        .replace("/postgres?", "/tls_check?");
    assert!(
        sealpost_store_pg::create_database_if_missing(&migrate_url)
            .await
            .unwrap()
    );
}

struct Roots {
    right: PathBuf,
    wrong: PathBuf,
}

fn tempdir_for_roots(dir: &Path, pki: &Pki) -> Roots {
    let other =
        CertifiedIssuer::self_signed(ca_params("Some other CA"), KeyPair::generate().unwrap())
            .unwrap();
    let right = dir.join("root.crt");
    let wrong = dir.join("other-root.crt");
    fs::write(&right, &pki.ca_pem).unwrap();
    fs::write(&wrong, other.pem()).unwrap();
    Roots { right, wrong }
}
