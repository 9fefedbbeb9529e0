//! `init`, `login`, sessions and sign-out; a service out of reach.

use sealpost_testkit::TestApp;
use tokio::process::Command;

use crate::support::{Cli, Run, mode, printed_phrase};

#[tokio::test(flavor = "multi_thread")]
async fn account_and_session_lifecycle() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let laptop = Cli::new(&app, &tmp.path().join("laptop"));
    let phone = Cli::new(&app, &tmp.path().join("phone"));

    // Not signed in yet.
    assert!(laptop.fails(&["whoami"]).await.contains("not signed in"));

    // init: phrase shown once, session stored privately, phrase never stored.
    let out = laptop.ok(&["init"]).await;
    let phrase = printed_phrase(&out);
    assert!(out.contains("Write it down"), "{out}");
    let session = laptop.session();
    let account_id = session["accountId"].as_str().unwrap().to_owned();
    assert!(out.contains(&account_id));
    assert_eq!(session["apiUrl"], app.base_url.as_str());
    assert!(session["token"].as_str().is_some_and(|t| !t.is_empty()));
    assert!(session["expiresAt"].as_str().is_some());
    assert_eq!(mode(&laptop.session_file()), 0o600);
    assert_eq!(mode(&laptop.dir), 0o700);
    let stored = std::fs::read_to_string(laptop.session_file()).unwrap();
    let first_word = phrase.split(' ').next().unwrap();
    assert!(!stored.contains(&phrase) && !stored.contains(first_word));
    assert!(laptop.fails(&["init"]).await.contains("already signed in"));

    // whoami.
    let out = laptop.ok(&["whoami"]).await;
    assert!(out.contains(&account_id), "{out}");
    assert!(out.contains("Free"), "{out}");
    assert!(out.contains("expires"), "{out}");

    // logout deletes the session file; the token no longer works.
    let token = session["token"].as_str().unwrap().to_owned();
    assert!(laptop.ok(&["logout"]).await.contains("Signed out"));
    assert!(!laptop.session_file().exists());
    let old = sealpost_client::Client::new(&app.base_url)
        .unwrap()
        .with_token(token);
    assert_eq!(old.me().await.unwrap_err().status(), Some(401));
    assert!(laptop.ok(&["logout"]).await.contains("Not signed in"));

    // login with SEALPOST_PHRASE.
    let out = laptop.login_env(&phrase).await;
    assert!(out.contains(&account_id), "{out}");
    assert_eq!(mode(&laptop.session_file()), 0o600);
    assert_eq!(laptop.session()["accountId"], account_id.as_str());

    // login from a piped stdin, on a second installation.
    let run = phone
        .login_stdin(&format!("{}\n", phrase.to_uppercase()))
        .await;
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(phone.session()["accountId"], account_id.as_str());

    // A wrong phrase is refused, without a `login` hint, and the stored
    // session stays.
    let wrong = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
    let run = phone.login_stdin(wrong).await;
    assert!(!run.ok);
    assert!(run.stderr.contains("(unauthenticated)"), "{}", run.stderr);
    assert!(!run.stderr.contains("hint"), "{}", run.stderr);
    assert!(!run.stderr.contains("abandon"), "{}", run.stderr);
    let run = phone.login_stdin("not a phrase").await;
    assert!(!run.ok && run.stderr.contains("stdin"), "{}", run.stderr);
    phone.ok(&["whoami"]).await;

    // sessions: two, the current one marked.
    let out = laptop.ok(&["sessions"]).await;
    assert_eq!(out.lines().count(), 2, "{out}");
    assert_eq!(out.matches("(current)").count(), 1, "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with('*') && l.contains("(current)"))
    );

    // sessions --others ends the phone's session; the phone is told to log in.
    assert!(
        laptop
            .ok(&["sessions", "--others"])
            .await
            .contains("Revoked 1 other session.")
    );
    let err = phone.fails(&["whoami"]).await;
    assert!(err.contains("(unauthenticated)"), "{err}");
    assert!(err.contains("sealpost login"), "{err}");
    assert!(phone.ok(&["logout"]).await.contains("already ended"));
    assert!(!phone.session_file().exists());

    // sessions revoke ID.
    phone.login_env(&phrase).await;
    let others = laptop.other_session_ids().await;
    assert_eq!(others.len(), 1, "{others:?}");
    let out = laptop.ok(&["sessions", "revoke", &others[0]]).await;
    assert!(out.contains(&others[0]), "{out}");
    assert!(phone.fails(&["sessions"]).await.contains("sealpost login"));
    assert!(laptop.other_session_ids().await.is_empty());
    let err = laptop.fails(&["sessions", "revoke", "nonsense"]).await;
    assert!(err.contains("not a session id"), "{err}");
    let err = laptop.fails(&["sessions", "revoke", &others[0]]).await;
    assert!(err.contains("(not_found)"), "{err}");

    // The token is only ever sent to the service that issued it.
    let err = laptop
        .fails(&["whoami", "--api-url", "http://127.0.0.1:9"])
        .await;
    assert!(err.contains("stored session is for"), "{err}");

    app.stop().await;
}

#[tokio::test]
async fn unreachable_service_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let run: Run = Command::new(env!("CARGO_BIN_EXE_sealpost"))
        .arg("init")
        .env("SEALPOST_API_URL", "http://127.0.0.1:9")
        .env("SEALPOST_CONFIG_DIR", tmp.path())
        .output()
        .await
        .unwrap()
        .into();
    assert!(!run.ok);
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    assert!(run.stderr.contains("(transport)"), "{}", run.stderr);
    // Nothing was registered, so no phrase was shown and nothing stored.
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(!tmp.path().join("session.json").exists());
}
