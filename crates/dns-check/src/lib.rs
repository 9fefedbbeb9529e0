//! The public DNS as the own-domain checks see it: TXT, NS and MX lookups on
//! hickory-resolver, sent to one configured resolver (`SEALPOST_DNS_RESOLVER`)
//! or the system's. Nothing is cached: a check after the owner changed a
//! record sees the change as soon as the resolver does.

use std::net::SocketAddr;
use std::time::Duration;

use async_trait::async_trait;
use hickory_resolver::config::{
    ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::net::NetError;
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::{Name, RData};
use hickory_resolver::{Resolver, TokioResolver};
use sealpost_domains::{DnsLookup, LookupError};

/// Lookups through one resolver.
pub struct DnsResolver {
    resolver: TokioResolver,
}

impl DnsResolver {
    /// A resolver that asks `server` (UDP, then TCP for long answers), or
    /// the system's resolvers (`/etc/resolv.conf`) when `None`.
    pub fn new(server: Option<SocketAddr>) -> Result<DnsResolver, String> {
        let provider = TokioRuntimeProvider::default();
        let mut builder = match server {
            Some(addr) => {
                let connection = |mut config: ConnectionConfig| {
                    config.port = addr.port();
                    config
                };
                let name_server = NameServerConfig::new(
                    addr.ip(),
                    true,
                    vec![
                        connection(ConnectionConfig::udp()),
                        connection(ConnectionConfig::tcp()),
                    ],
                );
                let config = ResolverConfig::from_name_servers(vec![name_server]);
                Resolver::builder_with_config(config, provider)
            }
            None => Resolver::builder(provider)
                .map_err(|error| format!("reading the system's resolver configuration: {error}"))?,
        };
        let options: &mut ResolverOpts = builder.options_mut();
        options.cache_size = 0;
        options.timeout = Duration::from_secs(5);
        options.attempts = 2;
        options.use_hosts_file = ResolveHosts::Never;
        options.ndots = 0;
        let resolver = builder
            .build()
            .map_err(|error| format!("building the DNS resolver: {error}"))?;
        Ok(DnsResolver { resolver })
    }

    async fn records(
        &self,
        name: &str,
        lookup: impl AsyncFnOnce(
            &TokioResolver,
            Name,
        ) -> Result<hickory_resolver::lookup::Lookup, NetError>,
    ) -> Result<Vec<RData>, LookupError> {
        let fqdn = Name::from_ascii(format!("{}.", name.trim_end_matches('.')))
            .map_err(|error| LookupError(format!("not a DNS name: {error}")))?;
        match lookup(&self.resolver, fqdn).await {
            Ok(found) => Ok(found
                .answers()
                .iter()
                .map(|record| record.data.clone())
                .collect()),
            // No such name, or no records of the type: an empty answer.
            Err(error) if error.is_no_records_found() || error.is_nx_domain() => Ok(Vec::new()),
            Err(error) => Err(LookupError(error.to_string())),
        }
    }
}

fn host(name: &Name) -> String {
    name.to_ascii().trim_end_matches('.').to_ascii_lowercase()
}

#[async_trait]
impl DnsLookup for DnsResolver {
    async fn txt(&self, name: &str) -> Result<Vec<String>, LookupError> {
        let records = self
            .records(name, async |resolver, name| resolver.txt_lookup(name).await)
            .await?;
        Ok(records
            .iter()
            .filter_map(|data| match data {
                RData::TXT(txt) => Some(
                    txt.txt_data
                        .iter()
                        .map(|part| String::from_utf8_lossy(part).into_owned())
                        .collect::<String>(),
                ),
                _ => None,
            })
            .collect())
    }

    async fn ns(&self, name: &str) -> Result<Vec<String>, LookupError> {
        let records = self
            .records(name, async |resolver, name| resolver.ns_lookup(name).await)
            .await?;
        Ok(records
            .iter()
            .filter_map(|data| match data {
                RData::NS(ns) => Some(host(&ns.0)),
                _ => None,
            })
            .collect())
    }

    async fn mx(&self, name: &str) -> Result<Vec<String>, LookupError> {
        let records = self
            .records(name, async |resolver, name| resolver.mx_lookup(name).await)
            .await?;
        Ok(records
            .iter()
            .filter_map(|data| match data {
                RData::MX(mx) => Some(host(&mx.exchange)),
                _ => None,
            })
            .collect())
    }
}
