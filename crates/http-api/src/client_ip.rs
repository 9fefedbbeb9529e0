//! The client's address, as the limits and the logs see it. Behind a
//! reverse proxy every connection comes from the proxy, so a forwarding
//! header is read, but only from peers listed in
//! `SEALPOST_TRUSTED_PROXIES`, and only the one header the operator names
//! in `SEALPOST_FORWARDED_HEADER` (`X-Forwarded-For` by default, or
//! `Forwarded`): a proxy adds to one of them and passes the other through
//! as the client wrote it, so reading both would believe the client. The
//! right-most hop that is not a trusted proxy is the client (hops further
//! left were written by the client and prove nothing). IPv6 clients are
//! limited per /64, what one host usually holds.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::HeaderMap;
use actix_web::middleware::Next;
use actix_web::web::Data;
use actix_web::{HttpMessage, HttpRequest};
use ipnet::IpNet;

/// The client of the request being served, resolved once when it arrives
/// ([`resolve_client_ip`], kept in the request's extensions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientIp(pub IpAddr);

impl ClientIp {
    /// From the peer and headers of `request`, trusting the proxies the app
    /// registered (`Data<TrustedProxies>`); the peer itself when none are.
    fn resolve(request: &HttpRequest) -> ClientIp {
        let peer = request
            .peer_addr()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |addr| addr.ip());
        let client = request
            .app_data::<Data<TrustedProxies>>()
            .map_or(peer, |proxies| proxies.client(peer, request.headers()));
        ClientIp(client)
    }

    /// The client of `request`: what [`resolve_client_ip`] found when it
    /// arrived, or, for a request that did not pass it, resolved now. Never
    /// missing, so no limit is ever skipped for want of an address.
    pub fn of(request: &HttpRequest) -> ClientIp {
        let found = request.extensions().get::<ClientIp>().copied();
        found.unwrap_or_else(|| Self::resolve(request))
    }
}

/// The outermost middleware: resolves the client once per request, before
/// the log span is opened, so the logs, the edge limit and the handlers'
/// own limits all see the same address.
pub async fn resolve_client_ip(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let client = ClientIp::resolve(req.request());
    req.extensions_mut().insert(client);
    next.call(req).await
}

/// The one forwarding header the trusted proxies write
/// (`SEALPOST_FORWARDED_HEADER`); the other is the client's own and is
/// never read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For` (nginx's `$proxy_add_x_forwarded_for`, most load
    /// balancers).
    #[default]
    XForwardedFor,
    /// `Forwarded` of RFC 7239, its `for=` parameters.
    Forwarded,
}

/// The proxies whose forwarding header is believed, and which header that is.
#[derive(Clone, Debug, Default)]
pub struct TrustedProxies {
    networks: Vec<IpNet>,
    header: ForwardedHeader,
}

impl TrustedProxies {
    /// Proxies that write `X-Forwarded-For`.
    pub fn new(networks: Vec<IpNet>) -> Self {
        Self {
            networks,
            header: ForwardedHeader::default(),
        }
    }

    /// The same proxies, writing `header` instead.
    pub fn reading(self, header: ForwardedHeader) -> Self {
        Self { header, ..self }
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.networks.iter().any(|network| network.contains(&ip))
    }

    /// The client of a request that came from `peer` with `headers`.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        // Only the header the proxies write; each lists hops left to right,
        // the nearest last.
        let hops = match self.header {
            ForwardedHeader::XForwardedFor => x_forwarded_for(headers),
            ForwardedHeader::Forwarded => forwarded_for(headers),
        };
        // Every hop trusted: the furthest one is where the request began.
        let furthest = hops.first().copied().unwrap_or(peer);
        hops.into_iter()
            .rev()
            .find(|hop| !self.trusts(*hop))
            .unwrap_or(furthest)
    }
}

/// The client network registrations are counted per: an IPv4 /24, an IPv6
/// /48 (what one site is usually given), so that rotating addresses inside
/// one allocation does not multiply the limit.
pub fn registration_network(ip: IpAddr) -> IpNet {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    };
    let prefix = if ip.is_ipv4() { 24 } else { 48 };
    IpNet::new(ip, prefix).map_or(IpNet::from(ip), |network| network.trunc())
}

/// The key per-IP limits count under: the address, or its /64 for IPv6.
pub fn limit_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let segments = v6.segments();
                IpAddr::V6(Ipv6Addr::new(
                    segments[0],
                    segments[1],
                    segments[2],
                    segments[3],
                    0,
                    0,
                    0,
                    0,
                ))
            }
        },
    }
}

fn header_values<'a>(headers: &'a HeaderMap, name: &str) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(name)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
}

fn x_forwarded_for(headers: &HeaderMap) -> Vec<IpAddr> {
    header_values(headers, "x-forwarded-for")
        .filter_map(parse_node)
        .collect()
}

/// The `for=` parameters of `Forwarded`. A hop that is obfuscated or
/// unknown (`for=_hidden`, `for=unknown`) ends the list there: nothing to
/// its left can be trusted either.
fn forwarded_for(headers: &HeaderMap) -> Vec<IpAddr> {
    let mut hops = Vec::new();
    for element in header_values(headers, "forwarded") {
        let node = element.split(';').map(str::trim).find_map(|pair| {
            let (name, value) = pair.split_once('=')?;
            name.trim()
                .eq_ignore_ascii_case("for")
                .then_some(value.trim())
        });
        match node.and_then(parse_node) {
            Some(ip) => hops.push(ip),
            None => hops.clear(),
        }
    }
    hops
}

/// `192.0.2.1`, `192.0.2.1:4711`, `"[2001:db8::1]:4711"`, `2001:db8::1`.
fn parse_node(text: &str) -> Option<IpAddr> {
    let text = text.trim().trim_matches('"');
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = text.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    text.rsplit_once(':')?.0.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};

    #[test]
    fn registrations_count_per_ipv4_24_and_ipv6_48() {
        let network = |ip: &str| registration_network(ip.parse().unwrap()).to_string();
        assert_eq!(network("198.51.100.77"), "198.51.100.0/24");
        assert_eq!(network("198.51.100.200"), network("198.51.100.1"));
        assert_ne!(network("198.51.101.1"), network("198.51.100.1"));
        assert_eq!(network("2001:db8:aa:bb::1"), "2001:db8:aa::/48");
        assert_eq!(network("2001:db8:aa:ffff::9"), "2001:db8:aa::/48");
        assert_eq!(
            network("::ffff:198.51.100.9"),
            "198.51.100.0/24",
            "an IPv4 client over IPv6 counts as IPv4"
        );
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        map
    }

    fn proxies() -> TrustedProxies {
        TrustedProxies::new(vec![
            "10.0.0.0/8".parse().unwrap(),
            "2001:db8:ffff::/48".parse().unwrap(),
        ])
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_claims() {
        let claimed = headers(&[("x-forwarded-for", "192.0.2.9")]);
        assert_eq!(
            proxies().client(ip("198.51.100.7"), &claimed),
            ip("198.51.100.7")
        );
        assert_eq!(
            TrustedProxies::default().client(ip("10.0.0.1"), &claimed),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn the_right_most_untrusted_hop_wins() {
        // The client forged the first entry; our two proxies added the rest.
        let forwarded = headers(&[("x-forwarded-for", "1.2.3.4, 198.51.100.7, 10.0.0.5")]);
        assert_eq!(
            proxies().client(ip("10.0.0.1"), &forwarded),
            ip("198.51.100.7")
        );
        let split = headers(&[
            ("x-forwarded-for", "1.2.3.4"),
            ("x-forwarded-for", "198.51.100.8"),
        ]);
        assert_eq!(proxies().client(ip("10.0.0.1"), &split), ip("198.51.100.8"));
        // Only trusted hops: the furthest one.
        let inside = headers(&[("x-forwarded-for", "10.1.1.1")]);
        assert_eq!(proxies().client(ip("10.0.0.1"), &inside), ip("10.1.1.1"));
        assert_eq!(
            proxies().client(ip("10.0.0.1"), &headers(&[])),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn forwarded_is_read_with_ports_quotes_and_ipv6() {
        let proxies = proxies().reading(ForwardedHeader::Forwarded);
        let forwarded = headers(&[(
            "forwarded",
            "for=1.2.3.4;proto=https, for=\"[2001:db8:1::7]:4711\";by=10.0.0.5, for=10.0.0.5:80",
        )]);
        assert_eq!(
            proxies.client(ip("10.0.0.1"), &forwarded),
            ip("2001:db8:1::7")
        );
        // An obfuscated hop hides everything to its left: the nearest hop
        // that can be named stands for it.
        let hidden = headers(&[("forwarded", "for=192.0.2.1, for=_hidden, for=10.0.0.5")]);
        assert_eq!(proxies.client(ip("10.0.0.1"), &hidden), ip("10.0.0.5"));
    }

    #[test]
    fn only_the_header_the_proxies_write_is_read() {
        // nginx appends to X-Forwarded-For and passes the client's own
        // Forwarded through as it came.
        let both = headers(&[
            ("forwarded", "for=192.0.2.66"),
            ("x-forwarded-for", "198.51.100.7"),
        ]);
        assert_eq!(proxies().client(ip("10.0.0.1"), &both), ip("198.51.100.7"));
        // A proxy that writes Forwarded: the client's X-Forwarded-For is its
        // own claim.
        let forwarded = proxies().reading(ForwardedHeader::Forwarded);
        let both = headers(&[
            ("forwarded", "for=198.51.100.7"),
            ("x-forwarded-for", "192.0.2.66"),
        ]);
        assert_eq!(forwarded.client(ip("10.0.0.1"), &both), ip("198.51.100.7"));
        // Without the named header the proxy itself is the client.
        let other = headers(&[("x-forwarded-for", "192.0.2.66")]);
        assert_eq!(forwarded.client(ip("10.0.0.1"), &other), ip("10.0.0.1"));
        let other = headers(&[("forwarded", "for=192.0.2.66")]);
        assert_eq!(proxies().client(ip("10.0.0.1"), &other), ip("10.0.0.1"));
    }

    #[test]
    fn ipv6_clients_share_a_key_per_64() {
        assert_eq!(limit_key(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(
            limit_key(ip("2001:db8:1:2:bbbb::9")),
            limit_key(ip("2001:db8:1:2:aaaa::1"))
        );
        assert_ne!(
            limit_key(ip("2001:db8:1:3::1")),
            limit_key(ip("2001:db8:1:2::1"))
        );
        assert_eq!(limit_key(ip("192.0.2.1")), ip("192.0.2.1"));
        assert_eq!(limit_key(ip("::ffff:192.0.2.1")), ip("192.0.2.1"));
    }
}
