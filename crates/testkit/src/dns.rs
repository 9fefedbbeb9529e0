//! "The public DNS" for tests: a real DNS server on loopback (UDP and TCP,
//! hickory-server) over zones held in memory that the test edits while the
//! service looks. Point `SEALPOST_DNS_RESOLVER` (`config.dns.resolver`) at
//! [`PublicDns::addr`].

use std::net::SocketAddr;
use std::sync::Arc;

use sealpost_dns_server::proto::rr::rdata::{MX, NS};
use sealpost_dns_server::proto::rr::{Name, RData, RecordType};
use sealpost_dns_server::{DnsServer, MemoryZones, fqdn, txt};

pub struct PublicDns {
    zones: Arc<MemoryZones>,
    server: Option<DnsServer>,
}

impl PublicDns {
    /// Starts serving `zones` (each an apex, e.g. `example.com`), empty.
    pub async fn start(zones: &[&str]) -> PublicDns {
        let memory = MemoryZones::new();
        for zone in zones {
            memory.add_zone(zone).expect("a valid zone name");
        }
        let server = DnsServer::start("127.0.0.1:0".parse().expect("an address"), memory.clone())
            .await
            .expect("starting the public DNS stand-in");
        PublicDns {
            zones: memory,
            server: Some(server),
        }
    }

    /// Where it answers over UDP (TCP on `tcp_addr`).
    pub fn addr(&self) -> SocketAddr {
        self.server.as_ref().expect("running").udp_addr
    }

    pub fn tcp_addr(&self) -> SocketAddr {
        self.server.as_ref().expect("running").tcp_addr
    }

    /// Publishes the TXT record `value` at `name` (replacing others there).
    pub fn publish_txt(&self, name: &str, value: &str) {
        self.zones
            .set(name, RecordType::TXT, vec![txt(value)])
            .expect("a valid name");
    }

    /// Delegates `domain` to `nameservers` (empty: removes the delegation).
    pub fn delegate(&self, domain: &str, nameservers: &[&str]) {
        let data = nameservers
            .iter()
            .map(|host| RData::NS(NS(fqdn(host).expect("a valid host"))))
            .collect();
        self.zones
            .set(domain, RecordType::NS, data)
            .expect("a valid name");
    }

    /// Sets the MX of `domain` to `hosts` (empty: removes it).
    pub fn set_mx(&self, domain: &str, hosts: &[&str]) {
        let data = hosts
            .iter()
            .map(|host| RData::MX(MX::new(10, fqdn(host).expect("a valid host"))))
            .collect();
        self.zones
            .set(domain, RecordType::MX, data)
            .expect("a valid name");
    }

    /// A handle on the records that outlives borrows of `self`: what
    /// `sealpost-stack`'s DNS control port edits.
    pub fn control(&self) -> DnsControl {
        DnsControl {
            zones: Arc::clone(&self.zones),
        }
    }

    pub async fn stop(mut self) {
        if let Some(server) = self.server.take() {
            server.stop().await;
        }
    }
}

/// Edits the public DNS from outside a test's code, one command a line
/// (`sealpost-stack --env` names the port as `SEALPOST_STACK_DNS_CONTROL`):
///
/// - `zone APEX`: answer for names under `APEX` (others are refused);
/// - `txt NAME VALUE`: the TXT record at `NAME` (the rest of the line);
/// - `ns DOMAIN HOST...`: delegates `DOMAIN` to the hosts;
/// - `mx DOMAIN HOST...`: the MX of `DOMAIN`.
///
/// `txt`, `ns` and `mx` without a value remove those records.
#[derive(Clone)]
pub struct DnsControl {
    zones: Arc<MemoryZones>,
}

impl DnsControl {
    pub fn run(&self, line: &str) -> Result<(), String> {
        let mut words = line.split_whitespace();
        let command = words.next().ok_or("an empty command")?;
        let name = words.next().ok_or("the command needs a name")?;
        let rest: Vec<&str> = words.collect();
        let hosts = |make: fn(Name) -> RData| -> Result<Vec<RData>, String> {
            rest.iter().map(|host| fqdn(host).map(make)).collect()
        };
        match command {
            "zone" if rest.is_empty() => self.zones.add_zone(name),
            "txt" if rest.is_empty() => self.zones.set(name, RecordType::TXT, Vec::new()),
            "txt" => self
                .zones
                .set(name, RecordType::TXT, vec![txt(&rest.join(" "))]),
            "ns" => self
                .zones
                .set(name, RecordType::NS, hosts(|host| RData::NS(NS(host)))?),
            "mx" => self.zones.set(
                name,
                RecordType::MX,
                hosts(|host| RData::MX(MX::new(10, host)))?,
            ),
            _ => Err(format!(
                "unknown command {command:?} (zone APEX, txt NAME VALUE, ns DOMAIN HOST..., mx DOMAIN HOST...)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use sealpost_dns_server::{Answer, ZoneSource};

    use super::*;

    async fn records(dns: &PublicDns, name: &str, kind: RecordType) -> Vec<String> {
        match dns.zones.answer(&fqdn(name).unwrap(), kind).await {
            Answer::Records { records, .. } => records.iter().map(|r| r.data.to_string()).collect(),
            _ => vec!["(no answer)".to_owned()],
        }
    }

    #[tokio::test]
    async fn the_control_commands_edit_the_records() {
        let dns = PublicDns::start(&[]).await;
        let control = dns.control();
        control.run("zone example.com").unwrap();
        control
            .run("txt _service-verify.example.com service-verify=abc def")
            .unwrap();
        control.run("ns example.com ns1.test ns2.test").unwrap();
        control.run("mx example.com mx.test").unwrap();
        let found = records(&dns, "_service-verify.example.com", RecordType::TXT).await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("service-verify=abc def"), "{found:?}");
        assert_eq!(
            records(&dns, "example.com", RecordType::NS).await,
            ["ns1.test.", "ns2.test."]
        );
        let found = records(&dns, "example.com", RecordType::MX).await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("mx.test"), "{found:?}");
        control.run("mx example.com").unwrap();
        assert_eq!(
            records(&dns, "example.com", RecordType::MX).await,
            Vec::<String>::new()
        );
        assert!(control.run("cname example.com x.test").is_err());
        assert!(control.run("zone").is_err());
        assert!(control.run("").is_err());
        dns.stop().await;
    }
}
