//! Which resolved addresses a delivery may connect to (docs/webhooks.md
//! "Registering an endpoint"; docs/configuration.md
//! `SEALPOST_WEBHOOK_RESOLVE`): every delivery whose name resolves to a
//! loopback, private, link-local or multicast address is refused, unless its
//! host is pinned.
//!
//! Only public unicast addresses are allowed. IPv6 forms that carry an IPv4
//! address (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4
//! `2002:aabb:ccdd::`) are judged by the IPv4 address they carry.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use sealpost_kernel::string_enum;

string_enum! {
    /// What kind of address an IP is, as far as delivery cares.
    pub enum AddressClass: "address class" {
        /// Public unicast: the only class a delivery may connect to.
        Public => "public",
        /// `0.0.0.0/8` ("this network"), `::`.
        Unspecified => "unspecified",
        /// `127.0.0.0/8`, `::1`.
        Loopback => "loopback",
        /// `10/8`, `172.16/12`, `192.168/16`, `fc00::/7` (unique local),
        /// `fec0::/10` (old site-local), `64:ff9b:1::/48` (local-use NAT64).
        Private => "private",
        /// `100.64.0.0/10`, carrier-grade NAT.
        SharedAddressSpace => "shared address space",
        /// `169.254/16`, `fe80::/10`.
        LinkLocal => "link-local",
        /// `224/4`, `ff00::/8`.
        Multicast => "multicast",
        /// `255.255.255.255`.
        Broadcast => "broadcast",
        /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`,
        /// `3fff::/20`.
        Documentation => "documentation",
        /// `198.18/15`.
        Benchmarking => "benchmarking",
        /// Anything else that is not public unicast: `240/4`, `192.0.0/24`,
        /// `192.88.99/24`, `::/96` (IPv4-compatible), `100::/64` (discard),
        /// `2001::/23` (IETF protocol assignments, Teredo), and IPv6 outside
        /// `2000::/3`.
        Reserved => "reserved",
    }
}

impl AddressClass {
    /// Whether a delivery may connect to an address of this class.
    #[must_use]
    pub fn is_allowed(self) -> bool {
        self == AddressClass::Public
    }
}

/// The class of `ip`.
#[must_use]
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        (0, _, _) => AddressClass::Unspecified,
        (127, _, _) => AddressClass::Loopback,
        (10, _, _) | (192, 168, _) => AddressClass::Private,
        (172, 16..=31, _) => AddressClass::Private,
        (100, 64..=127, _) => AddressClass::SharedAddressSpace,
        (169, 254, _) => AddressClass::LinkLocal,
        (224..=239, _, _) => AddressClass::Multicast,
        (255, 255, 255) if ip.is_broadcast() => AddressClass::Broadcast,
        (240..=255, _, _) => AddressClass::Reserved,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => AddressClass::Documentation,
        (198, 18..=19, _) => AddressClass::Benchmarking,
        (192, 0, 0) | (192, 88, 99) => AddressClass::Reserved,
        _ => AddressClass::Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    if ip.is_unspecified() {
        return AddressClass::Unspecified;
    }
    if ip.is_loopback() {
        return AddressClass::Loopback;
    }
    let s = ip.segments();
    let [s0, s1, s2, s3, s4, s5, s6, s7] = s;
    let embedded = |high: u16, low: u16| {
        let [a, b] = high.to_be_bytes();
        let [c, d] = low.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if s0 == 0 && s1 == 0 && s2 == 0 && s3 == 0 && s4 == 0 && s5 == 0 {
        // ::/96, deprecated IPv4-compatible addresses.
        return AddressClass::Reserved;
    }
    if s0 == 0x64 && s1 == 0xff9b {
        if s2 == 0 && s3 == 0 && s4 == 0 && s5 == 0 {
            // NAT64 well-known prefix: judged by the IPv4 address inside.
            return classify_v4(embedded(s6, s7));
        }
        if s2 == 1 {
            return AddressClass::Private;
        }
    }
    if s0 & 0xff00 == 0xff00 {
        return AddressClass::Multicast;
    }
    if s0 & 0xfe00 == 0xfc00 || s0 & 0xffc0 == 0xfec0 {
        return AddressClass::Private;
    }
    if s0 & 0xffc0 == 0xfe80 {
        return AddressClass::LinkLocal;
    }
    if (s0 == 0x2001 && s1 == 0x0db8) || (s0 == 0x3fff && s1 & 0xf000 == 0) {
        return AddressClass::Documentation;
    }
    if s0 == 0x2002 {
        // 6to4: judged by the IPv4 address inside.
        return classify_v4(embedded(s1, s2));
    }
    if s0 == 0x2001 && s1 < 0x0200 {
        return AddressClass::Reserved;
    }
    if s0 & 0xe000 != 0x2000 {
        // Outside global unicast 2000::/3 (100::/64 discard-only included).
        return AddressClass::Reserved;
    }
    AddressClass::Public
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    fn class(text: &str) -> AddressClass {
        classify(text.parse::<IpAddr>().unwrap())
    }

    fn check(cases: &[&str], expected: AddressClass) {
        for text in cases {
            assert_eq!(class(text), expected, "{text}");
            assert_eq!(
                class(text).is_allowed(),
                expected == AddressClass::Public,
                "{text}"
            );
        }
    }

    #[test]
    fn v4_public() {
        check(
            &[
                "1.1.1.1",
                "8.8.8.8",
                "9.255.255.255",
                "11.0.0.0",
                "100.63.255.255",
                "100.128.0.0",
                "126.255.255.255",
                "128.0.0.0",
                "169.253.255.255",
                "169.255.0.0",
                "172.15.255.255",
                "172.32.0.0",
                "192.0.1.1",
                "192.0.3.1",
                "192.167.255.255",
                "192.169.0.0",
                "198.17.255.255",
                "198.20.0.0",
                "198.51.99.1",
                "203.0.112.1",
                "223.255.255.255",
            ],
            AddressClass::Public,
        );
    }

    #[test]
    fn v4_unspecified_and_this_network() {
        check(
            &["0.0.0.0", "0.1.2.3", "0.255.255.255"],
            AddressClass::Unspecified,
        );
    }

    #[test]
    fn v4_loopback() {
        check(
            &["127.0.0.1", "127.0.0.0", "127.255.255.255", "127.1.2.3"],
            AddressClass::Loopback,
        );
    }

    #[test]
    fn v4_private() {
        check(
            &[
                "10.0.0.0",
                "10.255.255.255",
                "172.16.0.0",
                "172.20.1.1",
                "172.31.255.255",
                "192.168.0.0",
                "192.168.1.1",
                "192.168.255.255",
            ],
            AddressClass::Private,
        );
    }

    #[test]
    fn v4_cgnat() {
        check(
            &["100.64.0.0", "100.100.100.100", "100.127.255.255"],
            AddressClass::SharedAddressSpace,
        );
    }

    #[test]
    fn v4_link_local() {
        check(
            &["169.254.0.0", "169.254.169.254", "169.254.255.255"],
            AddressClass::LinkLocal,
        );
    }

    #[test]
    fn v4_multicast() {
        check(
            &["224.0.0.0", "224.0.0.251", "239.255.255.255"],
            AddressClass::Multicast,
        );
    }

    #[test]
    fn v4_broadcast_and_reserved() {
        check(&["255.255.255.255"], AddressClass::Broadcast);
        check(
            &[
                "240.0.0.0",
                "250.1.2.3",
                "255.255.255.254",
                "192.0.0.0",
                "192.0.0.170",
                "192.88.99.1",
            ],
            AddressClass::Reserved,
        );
    }

    #[test]
    fn v4_documentation_and_benchmarking() {
        check(
            &["192.0.2.0", "192.0.2.255", "198.51.100.7", "203.0.113.255"],
            AddressClass::Documentation,
        );
        check(
            &["198.18.0.0", "198.19.255.255"],
            AddressClass::Benchmarking,
        );
    }

    #[test]
    fn v6_public() {
        check(
            &[
                "2606:4700:4700::1111",
                "2001:4860:4860::8888",
                "2a00:1450:4001::1",
                "2001:200::1",
                "3ffe::1",
                "3fff:1000::1",
                "64:ff9b::808:808",
                "2002:0808:0808::1",
            ],
            AddressClass::Public,
        );
    }

    #[test]
    fn v6_unspecified_and_loopback() {
        check(&["::"], AddressClass::Unspecified);
        check(&["::1"], AddressClass::Loopback);
    }

    #[test]
    fn v6_unique_local_and_site_local() {
        check(
            &[
                "fc00::",
                "fc00::1",
                "fd12:3456:789a::1",
                "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                "fec0::1",
                "64:ff9b:1::1",
            ],
            AddressClass::Private,
        );
    }

    #[test]
    fn v6_link_local() {
        check(
            &["fe80::", "fe80::1", "febf:ffff::1"],
            AddressClass::LinkLocal,
        );
    }

    #[test]
    fn v6_multicast() {
        check(&["ff00::", "ff02::1", "ff05::1:3"], AddressClass::Multicast);
    }

    #[test]
    fn v6_documentation() {
        check(
            &["2001:db8::", "2001:db8:ffff::1", "3fff::1", "3fff:fff::1"],
            AddressClass::Documentation,
        );
    }

    #[test]
    fn v6_reserved() {
        check(
            &[
                // IPv4-compatible ::/96.
                "::8.8.8.8",
                "::2",
                // Discard-only, Teredo, IETF protocol assignments.
                "100::1",
                "2001::1",
                "2001:0:4136:e378::1",
                "2001:2::1",
                // Outside 2000::/3.
                "4000::1",
                "e000::1",
                "1::1",
            ],
            AddressClass::Reserved,
        );
    }

    #[test]
    fn ipv4_mapped_v6_is_judged_as_v4() {
        check(&["::ffff:127.0.0.1"], AddressClass::Loopback);
        check(
            &["::ffff:10.0.0.1", "::ffff:172.16.0.1", "::ffff:192.168.1.1"],
            AddressClass::Private,
        );
        check(&["::ffff:100.64.0.1"], AddressClass::SharedAddressSpace);
        check(&["::ffff:169.254.169.254"], AddressClass::LinkLocal);
        check(&["::ffff:224.0.0.1"], AddressClass::Multicast);
        check(&["::ffff:0.0.0.0"], AddressClass::Unspecified);
        check(&["::ffff:255.255.255.255"], AddressClass::Broadcast);
        check(&["::ffff:192.0.2.1"], AddressClass::Documentation);
        check(&["::ffff:8.8.8.8"], AddressClass::Public);
    }

    #[test]
    fn nat64_and_6to4_are_judged_by_the_embedded_v4() {
        check(&["64:ff9b::7f00:1"], AddressClass::Loopback);
        check(
            &["64:ff9b::a00:1", "2002:c0a8:101::1"],
            AddressClass::Private,
        );
        check(&["2002:a9fe:a9fe::1"], AddressClass::LinkLocal);
        check(&["2002:7f00:1::"], AddressClass::Loopback);
    }

    #[test]
    fn names() {
        assert_eq!(AddressClass::Loopback.to_string(), "loopback");
        assert_eq!(
            AddressClass::SharedAddressSpace.as_str(),
            "shared address space"
        );
        assert!(AddressClass::Public.is_allowed());
    }
}
