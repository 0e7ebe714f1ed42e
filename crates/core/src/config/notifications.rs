//! `[notifications]`: where webhooks may be sent and how hard the server
//! tries (docs/api.md, "Notifications"; docs/security.md, "Webhooks").
//!
//! A webhook is a request the server makes on a user's behalf to an address
//! the user chose, so it is a way into the server's own network. Nothing is
//! sent unless the admin's allow-list names the destination: a host name
//! (`hooks.slack.com`, or `*.example.com` for its subdomains) or an address
//! range (`10.1.0.0/16`, `127.0.0.1`). A name that matches must still
//! resolve to public addresses, or to ones a listed range covers, so a name
//! cannot be pointed at loopback, a private range or the cloud metadata
//! address (`169.254.169.254`) later; an address written in the URL must
//! be in a listed range.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::auth::duration;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NotificationsConfig {
    /// The destinations webhooks may go to; empty, none.
    #[serde(deserialize_with = "destinations")]
    pub allow: Vec<Destination>,
    /// How many times one delivery is tried before it counts as failed and
    /// its endpoint is disabled.
    pub attempts: u32,
    /// The wait before the first retry; each later one waits twice the one
    /// before.
    #[serde(deserialize_with = "duration")]
    pub retry_after: Duration,
    /// How long one attempt may take, connecting included.
    #[serde(deserialize_with = "duration")]
    pub timeout: Duration,
    /// `[notifications.email]`: the SMTP server mail goes through; absent,
    /// no email.
    pub email: Option<EmailConfig>,
    /// How often the running jobs that a rule watches are checked for its
    /// condition (idle GPUs, memory near the limit, a log line matching):
    /// the longest a met condition waits to be noticed.
    #[serde(deserialize_with = "duration")]
    pub watch_interval: Duration,
}

/// How the connection to the SMTP server is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpTls {
    /// Plain SMTP, upgraded with STARTTLS, which the server must offer
    /// (port 587 by default).
    #[default]
    Starttls,
    /// TLS from the first byte (port 465 by default).
    Tls,
    /// No TLS: only to this machine (a local relay), so a password or a
    /// message never crosses a network in the clear (port 25 by default).
    None,
}

/// `[notifications.email]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailConfig {
    /// The SMTP server's host name or address.
    pub smtp_server: String,
    /// Its port; absent, the one `tls` implies.
    #[serde(default)]
    pub smtp_port: Option<u16>,
    #[serde(default)]
    pub tls: SmtpTls,
    /// The sender, `jobdeck@example.com` or `Jobdeck <jobdeck@example.com>`.
    pub from: String,
    /// The user name to authenticate as, with `password_file`.
    #[serde(default)]
    pub username: Option<String>,
    /// A file holding the password (kept out of the config, as the
    /// sign-in's client secret is).
    #[serde(default)]
    pub password_file: Option<std::path::PathBuf>,
}

impl EmailConfig {
    pub fn port(&self) -> u16 {
        self.smtp_port.unwrap_or(match self.tls {
            SmtpTls::Starttls => 587,
            SmtpTls::Tls => 465,
            SmtpTls::None => 25,
        })
    }

    fn broken_rule(&self) -> Option<String> {
        let local = matches!(self.smtp_server.as_str(), "localhost" | "127.0.0.1" | "::1" | "[::1]");
        if self.tls == SmtpTls::None && !local {
            return Some(format!(
                "notifications.email.tls = \"none\" is only for a relay on this machine, not '{}': use starttls or tls",
                self.smtp_server
            ));
        }
        if !self.from.contains('@') || self.from.chars().any(char::is_control) {
            return Some(format!("notifications.email.from must be an email address, not '{}'", self.from));
        }
        if self.username.is_some() != self.password_file.is_some() {
            return Some("notifications.email.username and password_file go together".into());
        }
        None
    }
}

impl Default for NotificationsConfig {
    fn default() -> Self {
        // Six attempts 30 s, 1, 2, 4 and 8 minutes apart: an endpoint down
        // for a quarter of an hour loses nothing.
        Self {
            allow: Vec::new(),
            attempts: 6,
            retry_after: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
            email: None,
            watch_interval: Duration::from_secs(2),
        }
    }
}

impl NotificationsConfig {
    /// The rule `[notifications]` must follow, if broken.
    pub fn broken_rule(&self) -> Option<String> {
        if !(1..=20).contains(&self.attempts) {
            return Some("notifications.attempts must be between 1 and 20".into());
        }
        if self.timeout.is_zero() || self.timeout > Duration::from_secs(60) {
            return Some("notifications.timeout must be between 1s and 60s".into());
        }
        if self.watch_interval.is_zero() || self.watch_interval > Duration::from_secs(300) {
            return Some("notifications.watch_interval must be between 1s and 5m".into());
        }
        self.email.as_ref().and_then(EmailConfig::broken_rule)
    }

    /// Whether a URL's host, a name or an address as written, is one the
    /// allow-list names. A name still has to resolve to addresses
    /// [`Self::allows_address`] admits.
    pub fn allows_host(&self, host: &str) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(address) = host.parse::<IpAddr>() {
            return self.in_listed_range(address);
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.allow.iter().any(|entry| match entry {
            Destination::Host(name) => *name == host,
            Destination::Subdomains(domain) => host.len() > domain.len() + 1 && host.ends_with(&format!(".{domain}")),
            Destination::Range { .. } => false,
        })
    }

    /// Whether a name's resolved address may be connected to: a public one,
    /// or one a listed range covers.
    pub fn allows_address(&self, address: IpAddr) -> bool {
        self.in_listed_range(address) || !is_special(address)
    }

    fn in_listed_range(&self, address: IpAddr) -> bool {
        let address = unmapped(address);
        self.allow.iter().any(|entry| match entry {
            Destination::Range { network, prefix } => in_range(address, *network, *prefix),
            _ => false,
        })
    }
}

/// One entry of the allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A host name, lowercase.
    Host(String),
    /// Every subdomain of a domain (`*.example.com`), not the domain itself.
    Subdomains(String),
    /// An address range; a single address is a range of its full length.
    Range { network: IpAddr, prefix: u8 },
}

impl Destination {
    pub fn parse(text: &str) -> Result<Destination, String> {
        let text = text.trim();
        let bad =
            || format!("notifications.allow: '{text}' is neither a host name, '*.domain', an address nor a range");
        if let Some((address, prefix)) = text.split_once('/') {
            let network: IpAddr = address.parse().map_err(|_| bad())?;
            let prefix: u8 = prefix.parse().map_err(|_| bad())?;
            let longest = if network.is_ipv4() { 32 } else { 128 };
            if prefix > longest {
                return Err(bad());
            }
            return Ok(Destination::Range { network: unmapped(network), prefix });
        }
        if let Ok(network) = text.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            let network = unmapped(network);
            return Ok(Destination::Range { network, prefix: if network.is_ipv4() { 32 } else { 128 } });
        }
        let (name, subdomains) = match text.strip_prefix("*.") {
            Some(domain) => (domain, true),
            None => (text, false),
        };
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let label_ok = |label: &str| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
        };
        if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
            return Err(bad());
        }
        Ok(if subdomains { Destination::Subdomains(name) } else { Destination::Host(name) })
    }
}

fn destinations<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Destination>, D::Error> {
    let texts = Vec::<String>::deserialize(deserializer)?;
    texts.iter().map(|t| Destination::parse(t)).collect::<Result<_, _>>().map_err(serde::de::Error::custom)
}

/// An IPv4 address written as IPv6 (`::ffff:127.0.0.1`) is the IPv4 one.
fn unmapped(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

fn in_range(address: IpAddr, network: IpAddr, prefix: u8) -> bool {
    match (address, network) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix)) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(prefix)) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Addresses that are not the public internet's: this machine, private and
/// shared ranges, link-local (the cloud metadata service among them),
/// multicast and the unspecified and broadcast ones.
pub fn is_special(address: IpAddr) -> bool {
    match unmapped(address) {
        IpAddr::V4(v4) => is_special_v4(v4),
        IpAddr::V6(v6) => is_special_v6(v6),
    }
}

fn is_special_v4(a: Ipv4Addr) -> bool {
    let [first, second, ..] = a.octets();
    a.is_loopback()
        || a.is_private()
        || a.is_link_local()
        || a.is_multicast()
        || a.is_broadcast()
        || a.is_unspecified()
        || a.is_documentation()
        || first == 0
        || (first == 100 && (64..128).contains(&second))
        || (first == 192 && second == 0 && a.octets()[2] == 0)
        || (first == 198 && (18..20).contains(&second))
        || first >= 240
}

fn is_special_v6(a: Ipv6Addr) -> bool {
    let first = a.segments()[0];
    a.is_loopback()
        || a.is_unspecified()
        || a.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || first == 0x2001 && a.segments()[1] == 0x0db8
        || (first == 0x0064 && a.segments()[1] == 0xff9b)
        || first == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowing(entries: &[&str]) -> NotificationsConfig {
        let allow = entries.iter().map(|e| Destination::parse(e).unwrap()).collect();
        NotificationsConfig { allow, ..NotificationsConfig::default() }
    }

    #[test]
    fn only_listed_hosts_and_ranges_are_allowed() {
        let config = allowing(&["hooks.slack.com", "*.example.com", "10.1.0.0/16", "127.0.0.1"]);
        let cases = [
            ("hooks.slack.com", true),
            ("HOOKS.slack.com.", true),
            ("evil.hooks.slack.com", false),
            ("ci.example.com", true),
            ("example.com", false),
            ("badexample.com", false),
            ("10.1.200.3", true),
            ("10.2.0.1", false),
            ("127.0.0.1", true),
            ("127.0.0.2", false),
            ("[::ffff:127.0.0.1]", true),
            ("169.254.169.254", false),
            ("8.8.8.8", false),
        ];
        for (host, expected) in cases {
            assert_eq!(config.allows_host(host), expected, "{host}");
        }
        assert!(!NotificationsConfig::default().allows_host("hooks.slack.com"), "an empty list allows nothing");
    }

    #[test]
    fn a_listed_name_must_resolve_to_public_or_listed_addresses() {
        let config = allowing(&["hooks.example.com", "10.1.0.0/16"]);
        let cases = [
            ("203.0.114.9", true),
            ("2606:4700::1", true),
            ("127.0.0.1", false),
            ("::1", false),
            ("::ffff:127.0.0.1", false),
            ("10.0.0.1", false),
            ("10.1.0.1", true),
            ("172.16.5.4", false),
            ("192.168.1.1", false),
            ("169.254.169.254", false),
            ("100.64.0.1", false),
            ("0.0.0.0", false),
            ("fd00::1", false),
            ("fe80::1", false),
            ("224.0.0.1", false),
        ];
        for (address, expected) in cases {
            assert_eq!(config.allows_address(address.parse().unwrap()), expected, "{address}");
        }
    }

    #[test]
    fn email_is_sent_in_the_clear_only_to_this_machine() {
        let read = |text: &str| toml::from_str::<NotificationsConfig>(text).unwrap().broken_rule();
        let base = "[email]\nfrom = 'jobdeck@example.com'\n";
        assert_eq!(read(&format!("{base}smtp_server = 'mail.example.com'")), None);
        assert_eq!(read(&format!("{base}smtp_server = '127.0.0.1'\ntls = 'none'")), None);
        let cases = [
            (format!("{base}smtp_server = 'mail.example.com'\ntls = 'none'"), "only for a relay on this machine"),
            ("[email]\nfrom = 'nobody'\nsmtp_server = 'mail.example.com'".to_string(), "must be an email address"),
            (format!("{base}smtp_server = 'mail.example.com'\nusername = 'jd'"), "go together"),
        ];
        for (text, expected) in cases {
            let rule = read(&text).unwrap_or_default();
            assert!(rule.contains(expected), "{text}: {rule}");
        }
        let config: NotificationsConfig = toml::from_str(&format!("{base}smtp_server = 'm'\ntls = 'tls'")).unwrap();
        assert_eq!(config.email.unwrap().port(), 465);
    }

    #[test]
    fn the_watch_interval_is_read_and_bounded() {
        let read = |text: &str| toml::from_str::<NotificationsConfig>(text).unwrap();
        assert_eq!(read("").watch_interval, Duration::from_secs(2));
        assert_eq!(read("watch_interval = '10s'").watch_interval, Duration::from_secs(10));
        for broken in ["watch_interval = '0s'", "watch_interval = '1h'"] {
            assert!(read(broken).broken_rule().unwrap().contains("watch_interval"), "{broken}");
        }
    }

    #[test]
    fn a_broken_entry_is_named() {
        for text in ["", "10.0.0.0/33", "exa mple.com", "-a.com", "*.", "http://x.com"] {
            let error = Destination::parse(text).unwrap_err();
            assert!(error.contains("notifications.allow"), "{text}: {error}");
        }
        let config: NotificationsConfig = toml::from_str("allow = ['a.example.com', '192.168.0.0/24']").unwrap();
        assert_eq!(config.allow.len(), 2);
        assert!(toml::from_str::<NotificationsConfig>("allow = ['a b']").is_err());
    }
}
