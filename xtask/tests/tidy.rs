//! Tidy: the layering rules of `docs/architecture.md`, read from `cargo
//! metadata` so that a dependency added against them fails the tests, not
//! only a review.
//!
//! Every workspace package names its layer in its manifest:
//!
//! ```toml
//! [package.metadata.sealpost]
//! layer = "domain"
//! ```
//!
//! - `shared`: pure crates both the server and the SDK use (ids, sealing,
//!   signatures, wire types);
//! - `domain`: pure rules and state machines of the service;
//! - `sdk`: the client library;
//! - `adapter`: I/O (PostgreSQL, HTTP, SMTP, DNS, push, outbound HTTPS) and
//!   the wiring of adapters into the domain;
//! - `binary`: a package that ships a program;
//! - `tool`: test support and developer tasks.

#![allow(clippy::expect_used, reason = "a test fails loudly")]

use std::collections::BTreeMap;
use std::fmt;
use std::process::Command;

use serde_json::Value;

/// Crates a pure crate must never use (outside dev-dependencies): storage,
/// web frameworks, HTTP clients, the async runtime, mail transport, DNS, TLS.
const IO_CRATES: &[&str] = &[
    "diesel",
    "diesel-async",
    "diesel_migrations",
    "deadpool",
    "tokio-postgres",
    "actix-web",
    "actix-http",
    "actix-rt",
    "reqwest",
    "hyper",
    "tokio",
    "lettre",
    "hickory-resolver",
    "hickory-server",
    "hickory-proto",
    "rustls",
    "tokio-rustls",
    "a2",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    Shared,
    Domain,
    Sdk,
    Adapter,
    Binary,
    Tool,
}

impl Layer {
    fn parse(text: &str) -> Option<Layer> {
        Some(match text {
            "shared" => Layer::Shared,
            "domain" => Layer::Domain,
            "sdk" => Layer::Sdk,
            "adapter" => Layer::Adapter,
            "binary" => Layer::Binary,
            "tool" => Layer::Tool,
            _ => return None,
        })
    }

    /// The layers a package of this layer may depend on.
    fn may_use(self, other: Layer) -> bool {
        match self {
            Layer::Shared => other == Layer::Shared,
            Layer::Domain => matches!(other, Layer::Shared | Layer::Domain),
            Layer::Sdk => other == Layer::Shared,
            Layer::Adapter => matches!(other, Layer::Shared | Layer::Domain | Layer::Adapter),
            Layer::Binary => !matches!(other, Layer::Binary | Layer::Tool),
            Layer::Tool => other != Layer::Binary,
        }
    }

    fn is_pure(self) -> bool {
        matches!(self, Layer::Shared | Layer::Domain)
    }
}

struct Package {
    name: String,
    layer: Option<Layer>,
    /// Normal (not dev, not build) dependencies, by package name.
    uses: Vec<String>,
}

#[derive(Debug, PartialEq, Eq)]
struct Breach(String);

impl fmt::Display for Breach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn workspace_packages() -> Vec<Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("running cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    packages_from(&metadata)
}

fn packages_from(metadata: &Value) -> Vec<Package> {
    let empty = Vec::new();
    let packages = metadata["packages"].as_array().unwrap_or(&empty);
    packages
        .iter()
        .map(|package| Package {
            name: package["name"].as_str().unwrap_or_default().to_owned(),
            layer: package["metadata"]["sealpost"]["layer"]
                .as_str()
                .and_then(Layer::parse),
            uses: package["dependencies"]
                .as_array()
                .unwrap_or(&empty)
                .iter()
                .filter(|dependency| dependency["kind"].is_null())
                .filter_map(|dependency| dependency["name"].as_str().map(str::to_owned))
                .collect(),
        })
        .collect()
}

/// Every rule of `docs/architecture.md` ("Architecture invariants") that a
/// manifest can break.
fn breaches(packages: &[Package]) -> Vec<Breach> {
    let layers: BTreeMap<&str, Option<Layer>> = packages
        .iter()
        .map(|package| (package.name.as_str(), package.layer))
        .collect();
    let mut found = Vec::new();
    for package in packages {
        let Some(layer) = package.layer else {
            found.push(Breach(format!(
                "{} names no layer: add [package.metadata.sealpost] layer = \"...\"",
                package.name
            )));
            continue;
        };
        for used in &package.uses {
            match layers.get(used.as_str()) {
                Some(Some(used_layer)) if !layer.may_use(*used_layer) => {
                    found.push(Breach(format!(
                        "{} ({layer:?}) depends on {used} ({used_layer:?})",
                        package.name
                    )));
                }
                Some(_) => {}
                None if layer.is_pure() && IO_CRATES.contains(&used.as_str()) => {
                    found.push(Breach(format!(
                        "{} ({layer:?}) depends on {used}, which does I/O",
                        package.name
                    )));
                }
                None => {}
            }
        }
        if package.name == "sealpost-http-api"
            && package.uses.iter().any(|u| u == "sealpost-store-pg")
        {
            found.push(Breach(
                "sealpost-http-api depends on sealpost-store-pg: handlers reach storage only through domain services"
                    .into(),
            ));
        }
    }
    found
}

#[test]
fn the_workspace_keeps_its_layering() {
    let packages = workspace_packages();
    assert!(
        packages.len() > 10,
        "cargo metadata listed too few packages"
    );
    let found = breaches(&packages);
    assert!(
        found.is_empty(),
        "layering rules broken:\n{}",
        found
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_domain_crates_are_named() {
    // A guard against the rules passing because nothing is marked pure.
    let packages = workspace_packages();
    let domain: Vec<&str> = packages
        .iter()
        .filter(|package| package.layer == Some(Layer::Domain))
        .map(|package| package.name.as_str())
        .collect();
    for expected in [
        "sealpost-accounts",
        "sealpost-devices",
        "sealpost-addresses",
        "sealpost-messages",
        "sealpost-plans",
        "sealpost-webhooks",
        "sealpost-billing",
    ] {
        assert!(
            domain.contains(&expected),
            "{expected} is not marked domain"
        );
    }
}

fn package(name: &str, layer: Option<Layer>, uses: &[&str]) -> Package {
    Package {
        name: name.into(),
        layer,
        uses: uses.iter().map(|used| (*used).to_owned()).collect(),
    }
}

#[test]
fn each_rule_catches_its_breach() {
    let base = || {
        vec![
            package("sealpost-kernel", Some(Layer::Shared), &["serde"]),
            package("sealpost-wire", Some(Layer::Shared), &["sealpost-kernel"]),
            package("sealpost-plans", Some(Layer::Domain), &["sealpost-kernel"]),
            package(
                "sealpost-store-pg",
                Some(Layer::Adapter),
                &["diesel", "sealpost-plans"],
            ),
            package(
                "sealpost-http-api",
                Some(Layer::Adapter),
                &["actix-web", "sealpost-wire"],
            ),
            package(
                "sealpost-client",
                Some(Layer::Sdk),
                &["reqwest", "sealpost-wire"],
            ),
            package("sealpost-api", Some(Layer::Binary), &["sealpost-http-api"]),
            package(
                "sealpost-testkit",
                Some(Layer::Tool),
                &["sealpost-store-pg"],
            ),
        ]
    };
    assert_eq!(breaches(&base()), Vec::new());

    let cases: [(&str, &str, &str); 7] = [
        ("sealpost-plans", "diesel", "does I/O"),
        ("sealpost-plans", "tokio", "does I/O"),
        ("sealpost-kernel", "reqwest", "does I/O"),
        ("sealpost-plans", "sealpost-store-pg", "(Adapter)"),
        (
            "sealpost-http-api",
            "sealpost-store-pg",
            "through domain services",
        ),
        ("sealpost-client", "sealpost-plans", "(Domain)"),
        ("sealpost-testkit", "sealpost-api", "(Binary)"),
    ];
    for (who, dependency, says) in cases {
        let mut packages = base();
        for package in &mut packages {
            if package.name == who {
                package.uses.push(dependency.into());
            }
        }
        let found = breaches(&packages);
        assert!(
            found.iter().any(|breach| breach.0.contains(says)),
            "{who} -> {dependency} was not caught: {found:?}"
        );
    }

    let mut unnamed = base();
    unnamed.push(package("sealpost-new", None, &[]));
    assert!(breaches(&unnamed)[0].0.contains("names no layer"));
}
