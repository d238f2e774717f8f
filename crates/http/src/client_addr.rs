//! The client's address, as the per-address rate limit sees it (docs/api.md
//! "Hostile load"): the peer itself, unless the peer is one of
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
/// `X-Forwarded-Host`: the host the client asked a proxy for.
const FORWARDED_HOST: &str = "x-forwarded-host";
/// `X-Forwarded-Proto`: the scheme the client spoke to a proxy.
const FORWARDED_PROTO: &str = "x-forwarded-proto";

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

    /// `scheme://host` as a trusted proxy forwarded them, for a request
    /// from `peer` with these headers: `X-Forwarded-Host` (its last value,
    /// the one the nearest proxy wrote), and `X-Forwarded-Proto` (`http`
    /// or `https`; `http` when absent). `None` when `peer` is not a
    /// trusted proxy (a client cannot name the host others' links point
    /// at), or no host was forwarded, or it is not a plain `host[:port]`.
    pub fn forwarded_origin(&self, peer: IpAddr, headers: &HeaderMap) -> Option<String> {
        if !self.trusts(canonical(peer)) {
            return None;
        }
        let last = |name: &str| {
            headers
                .get_all(name)
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(str::trim)
                .next_back()
        };
        let host = last(FORWARDED_HOST).filter(|h| is_authority(h))?;
        let scheme = match last(FORWARDED_PROTO).map(str::to_ascii_lowercase) {
            None => "http",
            Some(p) if p == "http" => "http",
            Some(p) if p == "https" => "https",
            Some(_) => return None,
        };
        Some(format!("{scheme}://{host}"))
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

/// A plain `host[:port]`: a name, an IPv4 address or a bracketed IPv6 one,
/// and digits after the colon; nothing that could add a path, a user or
/// another host to a URL.
fn is_authority(s: &str) -> bool {
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => (h, Some(p)),
        _ => (s, None),
    };
    let host_ok = match host.strip_prefix('[') {
        Some(v6) => v6
            .strip_suffix(']')
            .is_some_and(|a| a.parse::<Ipv6Addr>().is_ok()),
        None => {
            !host.is_empty()
                && host.len() <= 253
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        }
    };
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    host_ok && port_ok
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
    fn forwarded_host_and_scheme_only_from_trusted_proxies() {
        let mut headers = HeaderMap::new();
        let mut add = |name: &'static str, value: &str| {
            headers.append(
                HeaderName::from_static(name),
                HeaderValue::from_str(value).expect("value"),
            );
        };
        add(FORWARDED_HOST, "evil.example, chat.example.com:8443");
        add(FORWARDED_PROTO, "https");
        let trusted = proxies("10.0.0.0/8");
        assert_eq!(
            trusted
                .forwarded_origin(ip("10.1.2.3"), &headers)
                .as_deref(),
            Some("https://chat.example.com:8443")
        );
        // Anyone else's headers are not believed.
        assert_eq!(trusted.forwarded_origin(ip("198.51.100.4"), &headers), None);
        assert_eq!(
            TrustedProxies::default().forwarded_origin(ip("10.1.2.3"), &headers),
            None
        );
        // Mapped IPv4 peers are IPv4.
        assert!(trusted
            .forwarded_origin(ip("::ffff:10.0.0.1"), &headers)
            .is_some());
        let origin = |host: &str, proto: Option<&str>| {
            let mut h = HeaderMap::new();
            h.insert(
                HeaderName::from_static(FORWARDED_HOST),
                HeaderValue::from_str(host).expect("host"),
            );
            if let Some(p) = proto {
                h.insert(
                    HeaderName::from_static(FORWARDED_PROTO),
                    HeaderValue::from_str(p).expect("proto"),
                );
            }
            trusted.forwarded_origin(ip("10.0.0.1"), &h)
        };
        assert_eq!(
            origin("a.example", None).as_deref(),
            Some("http://a.example")
        );
        assert_eq!(
            origin("[2001:db8::1]:443", Some("HTTPS")).as_deref(),
            Some("https://[2001:db8::1]:443")
        );
        assert_eq!(
            origin("192.0.2.7", None).as_deref(),
            Some("http://192.0.2.7")
        );
        for bad in [
            "evil.example/x",
            "user@evil.example",
            "evil.example:80:80",
            "evil.example:",
            "evil.example:123456",
            "[::1",
            "[nope]",
            "a b",
            "",
        ] {
            assert_eq!(origin(bad, None), None, "{bad:?}");
        }
        assert_eq!(origin("a.example", Some("ftp")), None);
        // No host forwarded: nothing.
        assert_eq!(
            trusted.forwarded_origin(ip("10.0.0.1"), &HeaderMap::new()),
            None
        );
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
