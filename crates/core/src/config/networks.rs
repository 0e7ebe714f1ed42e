//! Address ranges the config names: networks jobs may not reach, and the
//! pool the runs' own networks are carved from (docs/security.md,
//! "Networks").

use std::net::{IpAddr, Ipv4Addr};

/// Whether `text` is an IPv4 or IPv6 network (`169.254.0.0/16`,
/// `fd00:ec2::254/128`) or a single address.
pub fn is_network(text: &str) -> bool {
    let (address, bits) = match text.split_once('/') {
        Some((address, bits)) => (address, Some(bits)),
        None => (text, None),
    };
    let max = match address.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => 32,
        Ok(IpAddr::V6(_)) => 128,
        Err(_) => return false,
    };
    bits.is_none_or(|bits| bits.parse::<u8>().is_ok_and(|n| n <= max))
}

/// An IPv4 network with a prefix length, such as `10.89.0.0/16`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Network {
    base: u32,
    prefix: u8,
}

impl Ipv4Network {
    /// Reads `a.b.c.d/n`; the address's bits past the prefix are dropped.
    pub fn parse(text: &str) -> Option<Ipv4Network> {
        let (address, bits) = text.split_once('/')?;
        let address: Ipv4Addr = address.parse().ok()?;
        let prefix: u8 = bits.parse().ok().filter(|n| *n <= 32)?;
        let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
        Some(Ipv4Network { base: u32::from(address) & mask, prefix })
    }

    /// Whether the two share an address.
    pub fn overlaps(self, other: Ipv4Network) -> bool {
        let prefix = self.prefix.min(other.prefix);
        let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
        self.base & mask == other.base & mask
    }

    /// The network's `/24` subnets in order (none when it is smaller).
    pub fn subnets_24(self) -> impl Iterator<Item = Ipv4Network> {
        let count = if self.prefix > 24 { 0 } else { 1u64 << (24 - self.prefix) };
        (0..count).map(move |i| Ipv4Network { base: self.base + ((i as u32) << 8), prefix: 24 })
    }
}

impl std::fmt::Display for Ipv4Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.base), self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_networks_are_addresses_with_optional_prefixes() {
        for good in ["169.254.0.0/16", "169.254.169.254", "fd00:ec2::254/128", "10.0.0.0/8"] {
            assert!(is_network(good), "{good}");
        }
        for bad in ["169.254.0.0/33", "metadata", "", "1.2.3.4/", "-1.2.3.4", "1.2.3.4/8 extra"] {
            assert!(!is_network(bad), "{bad}");
        }
    }

    #[test]
    fn a_pool_is_carved_into_its_24_subnets_in_order() {
        let pool = Ipv4Network::parse("10.89.7.9/22").unwrap();
        assert_eq!(pool.to_string(), "10.89.4.0/22", "bits past the prefix are dropped");
        let subnets: Vec<String> = pool.subnets_24().map(|s| s.to_string()).collect();
        assert_eq!(subnets, ["10.89.4.0/24", "10.89.5.0/24", "10.89.6.0/24", "10.89.7.0/24"]);
        assert_eq!(Ipv4Network::parse("10.89.0.0/16").unwrap().subnets_24().count(), 256);
        assert_eq!(Ipv4Network::parse("10.89.0.0/25").unwrap().subnets_24().count(), 0);
        assert_eq!(Ipv4Network::parse("10.89.0.0"), None);
        let net = |text: &str| Ipv4Network::parse(text).unwrap();
        assert!(net("10.89.0.0/16").overlaps(net("10.89.3.0/24")) && net("10.89.3.0/24").overlaps(net("10.89.0.0/16")));
        assert!(!net("10.89.3.0/24").overlaps(net("10.89.4.0/24")));
        assert!(!net("10.88.0.0/16").overlaps(net("10.89.0.0/24")));
    }
}
