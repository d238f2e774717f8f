//! The client's address, as the per-address rate limit sees it (API.md
//! section 9 "Hostile load"): the peer itself, unless the peer is one of
//! the operator's proxies (`CONFAB_TRUSTED_PROXIES`), and then the
//! rightmost `X-Forwarded-For` address that is not one of them (the
//! leftmost entries are whatever the client wrote, so only what the
//! trusted hops appended counts). IPv6 clients are keyed by their /64: one
//! host is handed a whole /64 and can pick any address in it.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;

use actix_web::http::header::HeaderMap;

/// `X-Forwarded-For`.
const FORWARDED_FOR: &str = "x-forwarded-for";

/// An address block, `addr/len` (a bare address is a block of one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    len: u8,
}

/// Why a block could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an address block like 10.0.0.0/8, 192.168.1.7 or fd00::/8")]
pub struct CidrError(String);

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(s: &str) -> Result<Self, CidrError> {
        let error = || CidrError(s.to_owned());
        let (addr, len) = match s.trim().split_once('/') {
            Some((addr, len)) => (addr, Some(len)),
            None => (s.trim(), None),
        };
        let addr = canonical(addr.parse::<IpAddr>().map_err(|_| error())?);
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            Some(len) => len
                .parse::<u8>()
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(error)?,
            None => max,
        };
        Ok(Self {
            network: mask(addr, len),
            len,
        })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.len)
    }
}

impl Cidr {
    /// Whether `ip` lies in the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        ip.is_ipv4() == self.network.is_ipv4() && mask(ip, self.len) == self.network
    }
}

/// An IPv4 address that came as IPv6 (`::ffff:a.b.c.d`, a dual-stack
/// listener's form) is the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// The first `len` bits of `ip`, the rest zero.
fn mask(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let keep = u32::MAX
                .checked_shl(32 - u32::from(len.min(32)))
                .unwrap_or(0);
            IpAddr::V4((bits & keep).into())
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let keep = u128::MAX
                .checked_shl(128 - u32::from(len.min(128)))
                .unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(bits & keep))
        }
    }
}

/// The operator's proxies (`CONFAB_TRUSTED_PROXIES`, comma-separated
/// blocks); empty: no proxy is trusted and `X-Forwarded-For` is ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<Cidr>);

impl FromStr for TrustedProxies {
    type Err = CidrError;

    fn from_str(s: &str) -> Result<Self, CidrError> {
        s.split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(Cidr::from_str)
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
    }
}

impl TrustedProxies {
    /// Whether `ip` is one of the proxies.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|block| block.contains(ip))
    }

    /// The client's address for a request from `peer` with these headers
    /// (see the module docs). A malformed `X-Forwarded-For` entry ends the
    /// walk at the hop that appended it: the last trusted hop is taken as
    /// the client.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let mut client = canonical(peer);
        if self.0.is_empty() || !self.trusts(client) {
            return client;
        }
        let hops = headers
            .get_all(FORWARDED_FOR)
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        for hop in hops.into_iter().rev() {
            let Some(ip) = parse_hop(hop) else {
                return client;
            };
            client = canonical(ip);
            if !self.trusts(client) {
                return client;
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: an address, possibly with a port
/// (`1.2.3.4:5678`, `[2001:db8::1]:443`).
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse() {
        return Some(ip);
    }
    if let Some(rest) = hop.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    hop.rsplit_once(':')?.0.parse().ok()
}

/// The key the per-address limit counts by: the address itself for IPv4,
/// its /64 for IPv6.
pub fn limit_key(ip: IpAddr) -> IpAddr {
    match canonical(ip) {
        v4 @ IpAddr::V4(_) => v4,
        v6 => mask(v6, 64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(
                HeaderName::from_static(FORWARDED_FOR),
                HeaderValue::from_str(v).expect("value"),
            );
        }
        headers
    }

    fn proxies(s: &str) -> TrustedProxies {
        s.parse().expect("proxies")
    }

    #[test]
    fn blocks_parse_and_contain() {
        let block: Cidr = "10.1.2.3/8".parse().expect("block");
        assert_eq!(block.to_string(), "10.0.0.0/8");
        assert!(block.contains(ip("10.200.0.1")));
        assert!(block.contains(ip("::ffff:10.0.0.9")), "mapped IPv4");
        assert!(!block.contains(ip("11.0.0.1")));
        assert!(!block.contains(ip("::a00:1")), "IPv6 never matches IPv4");
        let one: Cidr = "192.168.1.7".parse().expect("one");
        assert!(one.contains(ip("192.168.1.7")) && !one.contains(ip("192.168.1.8")));
        let v6: Cidr = "fd00::/8".parse().expect("v6");
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        let all: Cidr = "0.0.0.0/0".parse().expect("all");
        assert!(all.contains(ip("8.8.8.8")));
        for bad in [
            "",
            "10.0.0.0/33",
            "fd00::/129",
            "10.0.0/8",
            "x",
            "10.0.0.0/-1",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad:?}");
        }
        assert_eq!(proxies(""), TrustedProxies::default());
        assert!(" 10.0.0.0/8 , ::1 ".parse::<TrustedProxies>().is_ok());
        assert!("10.0.0.0/8,nope".parse::<TrustedProxies>().is_err());
    }

    #[test]
    fn without_trusted_proxies_the_header_is_ignored() {
        let headers = forwarded(&["203.0.113.9"]);
        let peer = ip("127.0.0.1");
        assert_eq!(TrustedProxies::default().client(peer, &headers), peer);
        // A peer that is not a trusted proxy cannot speak for others.
        assert_eq!(proxies("10.0.0.0/8").client(peer, &headers), peer);
    }

    #[test]
    fn the_rightmost_untrusted_hop_is_the_client() {
        let trusted = proxies("10.0.0.0/8, 127.0.0.1");
        let peer = ip("127.0.0.1");
        // The client forged the first entry; the proxies appended the rest.
        let headers = forwarded(&["6.6.6.6, 198.51.100.4", "10.0.0.2"]);
        assert_eq!(trusted.client(peer, &headers), ip("198.51.100.4"));
        // Only trusted hops: the leftmost one is as far as we can see.
        let headers = forwarded(&["10.0.0.5, 10.0.0.2"]);
        assert_eq!(trusted.client(peer, &headers), ip("10.0.0.5"));
        // No header: the proxy itself.
        assert_eq!(trusted.client(peer, &HeaderMap::new()), peer);
        // Ports and brackets.
        let headers = forwarded(&["[2001:db8::7]:443"]);
        assert_eq!(trusted.client(peer, &headers), ip("2001:db8::7"));
        let headers = forwarded(&["198.51.100.4:5678"]);
        assert_eq!(trusted.client(peer, &headers), ip("198.51.100.4"));
        // Garbage stops the walk at the last trusted hop.
        let headers = forwarded(&["198.51.100.4, garbage, 10.0.0.3"]);
        assert_eq!(trusted.client(peer, &headers), ip("10.0.0.3"));
    }

    #[test]
    fn ipv6_clients_are_limited_per_64() {
        assert_eq!(limit_key(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(
            limit_key(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")),
            limit_key(ip("2001:db8:1:2::5"))
        );
        assert_ne!(
            limit_key(ip("2001:db8:1:3::1")),
            limit_key(ip("2001:db8:1:2::1"))
        );
        assert_eq!(limit_key(ip("198.51.100.4")), ip("198.51.100.4"));
        assert_eq!(limit_key(ip("::ffff:198.51.100.4")), ip("198.51.100.4"));
    }
}
