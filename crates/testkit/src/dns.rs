//! "The public DNS" for tests: a real DNS server on loopback (UDP and TCP,
//! hickory-server) over zones held in memory that the test edits while the
//! service looks. Point `SEALPOST_DNS_RESOLVER` (`config.dns.resolver`) at
//! [`PublicDns::addr`].

use std::net::SocketAddr;
use std::sync::Arc;

use sealpost_dns_server::proto::rr::rdata::{MX, NS};
use sealpost_dns_server::proto::rr::{RData, RecordType};
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

    pub async fn stop(mut self) {
        if let Some(server) = self.server.take() {
            server.stop().await;
        }
    }
}
