//! The zone of a proved own domain, built on each question from its row:
//! SOA, NS (the configured nameservers), MX (the MX host), SPF and DMARC TXT
//! at the apex and `_dmarc`, and the DKIM public key under
//! `<selector>._domainkey`. Every other name under it is NXDOMAIN. The rows
//! come from [`ZoneCache`]: the zone a name falls in is found in memory.

use async_trait::async_trait;
use sealpost_dns_server::proto::rr::rdata::{MX, NS, SOA};
use sealpost_dns_server::proto::rr::{Name, RData, Record, RecordType};
use sealpost_dns_server::{Answer, ZoneSource, fqdn, txt};
use sealpost_store_pg::DomainZone;

use crate::cache::ZoneCache;

const TTL: u32 = 300;
pub const SPF: &str = "v=spf1 mx ~all";
pub const DMARC: &str = "v=DMARC1; p=quarantine; adkim=r; aspf=r";

pub struct Settings {
    pub nameservers: Vec<String>,
    pub mx_host: String,
}

pub struct PgZones {
    pub zones: ZoneCache,
    pub settings: Settings,
}

/// The answer for `name`/`kind` inside `zone` (whose apex is `apex`).
pub fn answer(
    zone: &DomainZone,
    apex: &Name,
    name: &Name,
    kind: RecordType,
    settings: &Settings,
) -> Answer {
    let record = |data: RData| Record::from_rdata(name.clone(), TTL, data);
    let soa = fqdn(&settings.nameservers[0]).ok().and_then(|ns| {
        let hostmaster = fqdn(&format!("hostmaster.{}", zone.name)).ok()?;
        Some(Record::from_rdata(
            apex.clone(),
            TTL,
            RData::SOA(SOA::new(ns, hostmaster, 1, 3600, 600, 604_800, TTL)),
        ))
    });
    let mut present: Vec<(RecordType, RData)> = Vec::new();
    if name == apex {
        if let Some(Record { data, .. }) = soa.clone() {
            present.push((RecordType::SOA, data));
        }
        for ns in &settings.nameservers {
            if let Ok(ns) = fqdn(ns) {
                present.push((RecordType::NS, RData::NS(NS(ns))));
            }
        }
        if let Ok(mx) = fqdn(&settings.mx_host) {
            present.push((RecordType::MX, RData::MX(MX::new(10, mx))));
        }
        present.push((RecordType::TXT, txt(SPF)));
    } else if fqdn(&format!("_dmarc.{}", zone.name)).is_ok_and(|dmarc| &dmarc == name) {
        present.push((RecordType::TXT, txt(DMARC)));
    } else if let Some((selector, algorithm, key)) = &zone.dkim
        && fqdn(&format!("{selector}._domainkey.{}", zone.name)).is_ok_and(|dkim| &dkim == name)
    {
        let value = format!(
            "v=DKIM1; k={algorithm}; p={}",
            data_encoding::BASE64.encode(key)
        );
        present.push((RecordType::TXT, txt(&value)));
    }
    if present.is_empty() {
        return Answer::NoName { soa };
    }
    Answer::Records {
        records: present
            .into_iter()
            .filter(|(found, _)| *found == kind)
            .map(|(_, data)| record(data))
            .collect(),
        soa,
    }
}

#[async_trait]
impl ZoneSource for PgZones {
    async fn answer(&self, name: &Name, kind: RecordType) -> Answer {
        let Some(zones) = self.zones.current().await else {
            return Answer::Refused;
        };
        match zones.zone_of(name) {
            Some((apex, zone)) => answer(zone, apex, name, kind, &self.settings),
            None => Answer::Refused,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    fn settings() -> Settings {
        Settings {
            nameservers: vec!["ns1.sealpost.net".into(), "ns2.sealpost.net".into()],
            mx_host: "mx.sealpost.net".into(),
        }
    }

    fn zone() -> DomainZone {
        DomainZone {
            name: "example.com".into(),
            step: "live".into(),
            dkim: Some(("sealpost".into(), "rsa".into(), vec![1, 2, 3])),
        }
    }

    fn ask(name: &str, kind: RecordType) -> Answer {
        answer(
            &zone(),
            &fqdn("example.com").unwrap(),
            &fqdn(name).unwrap(),
            kind,
            &settings(),
        )
    }

    fn texts(answer: Answer) -> Vec<String> {
        match answer {
            Answer::Records { records, .. } => records
                .iter()
                .map(|record| record.data.to_string())
                .collect(),
            other => panic!("expected records, got {other:?}"),
        }
    }

    #[test]
    fn the_zone_holds_what_a_mail_domain_needs() {
        assert_eq!(texts(ask("example.com", RecordType::NS)).len(), 2);
        assert_eq!(
            texts(ask("example.com", RecordType::MX)),
            vec!["10 mx.sealpost.net."]
        );
        assert_eq!(texts(ask("example.com", RecordType::SOA)).len(), 1);
        assert!(texts(ask("example.com", RecordType::TXT))[0].contains("v=spf1"));
        assert!(texts(ask("_dmarc.example.com", RecordType::TXT))[0].contains("v=DMARC1"));
        assert!(
            texts(ask("sealpost._domainkey.example.com", RecordType::TXT))[0]
                .contains("v=DKIM1; k=rsa; p=AQID")
        );
        assert!(
            texts(ask("example.com", RecordType::A)).is_empty(),
            "no data"
        );
        assert!(matches!(
            ask("www.example.com", RecordType::A),
            Answer::NoName { soa: Some(_) }
        ));
    }
}
