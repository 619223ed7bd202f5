//! Domain rules for the agents' fetches (`WebFetch`, `web_fetch`), and the host of a URL read by
//! hand, strictly.
//!
//! A rule is a host name: `example.com` covers that host only; `*.example.com` covers its
//! subdomains (`docs.example.com`, `a.b.example.com`) but not `example.com` itself (list both
//! for both). An IPv4 address (`127.0.0.1`) or a bracketed IPv6 address (`[::1]`, compared as
//! written, lower-cased) covers that address. Rules are case-insensitive and a trailing dot is
//! dropped.
//!
//! A URL's host is read only from `http://` and `https://` URLs, after the userinfo
//! (`user@`) and before the port. A URL the reader is not sure of is covered by no rule: any
//! character that is not printable ASCII (so no non-ASCII or IDN host: write the punycode
//! `xn--` form in both), a backslash (which browsers read as `/` and others as part of the
//! userinfo), a `%` in the host, an empty label, a bad port.
//!
//! ```
//! use agent_q_core::command::domain::{host_of, DomainRule};
//! let rule = DomainRule::parse("example.com").unwrap();
//! assert!(rule.matches(&host_of("https://EXAMPLE.com./a?b").unwrap()));
//! assert!(!rule.matches(&host_of("https://example.com.evil.org/").unwrap()));
//! assert!(!rule.matches(&host_of("https://example.com@evil.org/").unwrap()));
//! assert!(DomainRule::parse("*.example.com").unwrap().matches(&host_of("http://a.example.com:8080").unwrap()));
//! ```

use std::fmt;

use crate::error::{DomainRuleError, UrlError};

/// The longest URL read, in bytes.
pub const MAX_URL_BYTES: usize = 8 * 1024;

/// A URL's host: lower-case, without a trailing dot; an IPv6 address keeps its brackets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host(String);

impl Host {
    /// The host as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A parsed domain rule (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainRule {
    text: String,
    host: String,
    subdomains: bool,
}

impl DomainRule {
    /// Parse TEXT: `example.com`, `*.example.com`, `127.0.0.1` or `[::1]`.
    pub fn parse(text: &str) -> Result<DomainRule, DomainRuleError> {
        let error = |problem: &str| DomainRuleError {
            rule: text.into(),
            problem: problem.into(),
        };
        let trimmed = text.trim();
        let (subdomains, name) = match trimmed.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, trimmed),
        };
        let host = normalize(name).map_err(|e| error(&e.0))?;
        if subdomains && host.starts_with('[') {
            return Err(error("`*.` goes only before a host name"));
        }
        Ok(DomainRule {
            text: trimmed.to_string(),
            host,
            subdomains,
        })
    }

    /// The rule as written (blanks around it removed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the rule covers HOST.
    pub fn matches(&self, host: &Host) -> bool {
        let host = host.as_str();
        if !self.subdomains {
            return host == self.host;
        }
        host.strip_suffix(self.host.as_str())
            .and_then(|sub| sub.strip_suffix('.'))
            .is_some_and(|sub| !sub.is_empty())
    }
}

/// The host of URL, an `http` or `https` URL (see the module documentation).
pub fn host_of(url: &str) -> Result<Host, UrlError> {
    let error = |problem: &str| UrlError(problem.into());
    if url.len() > MAX_URL_BYTES {
        return Err(error("the URL is too long"));
    }
    if let Some(c) = url.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(UrlError(format!(
            "it holds U+{:04X}, which is not printable ASCII",
            c as u32
        )));
    }
    if url.contains('\\') {
        return Err(error("it holds a backslash"));
    }
    let scheme_end = url.find("://").ok_or_else(|| error("it has no scheme"))?;
    let scheme = url[..scheme_end].to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(error("only http and https URLs have a host here"));
    }
    let rest = &url[scheme_end + 3..];
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let host = strip_port(host_port)?;
    normalize(host).map(Host)
}

/// HOST_PORT without its `:PORT`.
fn strip_port(host_port: &str) -> Result<&str, UrlError> {
    let (host, port) = if host_port.starts_with('[') {
        let end = host_port
            .find(']')
            .ok_or_else(|| UrlError("an IPv6 address is not closed".into()))?;
        let (host, after) = host_port.split_at(end + 1);
        match after {
            "" => (host, None),
            _ => (
                host,
                Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| UrlError("something stands between the IPv6 address and the port".into()))?,
                ),
            ),
        }
    } else {
        match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    let port_ok = port.is_none_or(|p| {
        p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u32>().map_or(p.is_empty(), |n| n <= 65535)
    });
    if !port_ok {
        return Err(UrlError("the port is not a number up to 65535".into()));
    }
    Ok(host)
}

/// HOST lower-cased, its trailing dot dropped, checked: labels of letters, digits, `-` and `_`,
/// or a bracketed IPv6 address of hex digits, `:` and `.`.
fn normalize(host: &str) -> Result<String, UrlError> {
    let error = |problem: &str| Err(UrlError(problem.into()));
    let host = host.to_ascii_lowercase();
    if let Some(inner) = host.strip_prefix('[') {
        let Some(address) = inner.strip_suffix(']') else {
            return error("an IPv6 address is not closed");
        };
        if address.is_empty() || !address.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.') {
            return error("the IPv6 address holds other characters than hex digits, : and .");
        }
        return Ok(host);
    }
    let host = host.strip_suffix('.').unwrap_or(&host);
    if host.is_empty() {
        return error("the host is empty");
    }
    if host.len() > 253 {
        return error("the host is longer than 253 characters");
    }
    for label in host.split('.') {
        if label.is_empty() {
            return error("the host has an empty label");
        }
        if label.len() > 63 {
            return error("a label of the host is longer than 63 characters");
        }
        if !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return error("the host holds other characters than letters, digits, - and _");
        }
    }
    Ok(host.to_string())
}
