//! The security layer around the MCP service: every request is checked here before rmcp sees it.
//!
//! - `Host` must name the loopback interface (`localhost`, `127.0.0.1`, `[::1]`, any port):
//!   a DNS-rebinding page reaches 127.0.0.1 under its own host name (HTTP 403).
//! - An `Origin` header, when present, must be a localhost origin (`http` or `https`, any
//!   port): browsers send it with every cross-site request, and the specification requires
//!   refusing foreign ones with HTTP 403. Requests without `Origin` (every terminal client)
//!   pass this check.
//! - `Authorization: Bearer TOKEN` must carry the server's token, compared in constant time
//!   (HTTP 401 with `WWW-Authenticate: Bearer` otherwise). Any process of any user on the machine
//!   can connect to 127.0.0.1, so the token is what keeps them out.
//! - A declared body larger than [`MAX_REQUEST_BODY_BYTES`] is refused at once (HTTP 413); rmcp
//!   enforces the same limit while it reads a body of undeclared length.
//!
//! No response ever carries CORS headers: a browser page cannot read anything from the server.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use http_body::Body as _;

/// The largest request body accepted, in bytes. Tool arguments are small except for file
/// contents (write_file, propose_file_edit), which agent-q caps well below this elsewhere.
pub const MAX_REQUEST_BODY_BYTES: usize = 32 * 1024 * 1024;

/// Why a request is refused, with its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) message: &'static str,
}

impl Refusal {
    fn new(status: StatusCode, message: &'static str) -> Self {
        Refusal { status, message }
    }

    fn into_response(self) -> Response {
        let mut response = Response::new(Body::from(format!("{}\n", self.message)));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        // A refused client gets no second try on the same connection: it frees its place.
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"agent-q\""),
            );
        }
        response
    }
}

/// What the layer checks requests against.
#[derive(Debug)]
pub(crate) struct Policy {
    token: Vec<u8>,
}

impl Policy {
    pub(crate) fn new(token: &str) -> Self {
        Policy {
            token: token.as_bytes().to_vec(),
        }
    }

    /// Check a request's headers; `Ok` lets it through.
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers.get(header::HOST).and_then(|value| value.to_str().ok());
        match host {
            None => {
                return Err(Refusal::new(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: missing Host header",
                ))
            }
            Some(host) if !loopback_authority(host) => {
                return Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    "Forbidden: Host is not a loopback address",
                ))
            }
            Some(_) => {}
        }
        for origin in headers.get_all(header::ORIGIN) {
            if !origin.to_str().is_ok_and(localhost_origin) {
                return Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    "Forbidden: Origin is not a localhost origin",
                ));
            }
        }
        let mut authorizations = headers.get_all(header::AUTHORIZATION).iter();
        let presented = match (authorizations.next(), authorizations.next()) {
            (Some(value), None) => bearer_token(value.as_bytes()),
            _ => None,
        };
        if !presented.is_some_and(|token| constant_time_eq(token, &self.token)) {
            return Err(Refusal::new(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send Authorization: Bearer TOKEN with the token of the connection file",
            ));
        }
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok());
        if declared.is_some_and(|length| length > MAX_REQUEST_BODY_BYTES as u64) {
            return Err(Refusal::new(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large"));
        }
        Ok(())
    }
}

/// The axum middleware: refuse what [`Policy::check`] refuses, pass the rest on.
pub(crate) async fn guard(State(policy): State<Arc<Policy>>, request: Request, next: Next) -> Response {
    match policy.check(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

/// The most JSON values one request body may hold, counted before it is parsed. Generous
/// for any real message (a call's arguments may hold [`super::hub::MAX_ARGUMENT_VALUES`]), but
/// it keeps a body of 30 MiB of small numbers from becoming hundreds of megabytes of parsed
/// values in the Emacs process.
pub const MAX_REQUEST_VALUES: usize = 2 * super::hub::MAX_ARGUMENT_VALUES;

/// The deepest nesting of a request body, checked before it is parsed.
pub const MAX_REQUEST_DEPTH: usize = super::hub::MAX_ARGUMENT_DEPTH + 8;

/// The middleware, inside the token check, that reads a request's body (at most
/// [`MAX_REQUEST_BODY_BYTES`]) and refuses it (HTTP 413) as soon as its JSON holds more than
/// [`MAX_REQUEST_VALUES`] values or nests deeper than [`MAX_REQUEST_DEPTH`]: the body is scanned
/// as it arrives, so a refused one is never held whole, and nothing parses it.
pub(crate) async fn shape_guard(request: Request, next: Next) -> Response {
    let (parts, mut body) = request.into_parts();
    let mut shape = Shape::default();
    let mut bytes: Vec<u8> = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
        let Ok(frame) = frame else {
            return Refusal::new(
                StatusCode::BAD_REQUEST,
                "Bad Request: the request body could not be read",
            )
            .into_response();
        };
        let Ok(data) = frame.into_data() else { continue };
        if bytes.len().saturating_add(data.len()) > MAX_REQUEST_BODY_BYTES {
            return Refusal::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Payload Too Large: the request body is larger than the server accepts",
            )
            .into_response();
        }
        if let Err(message) = shape.feed(&data) {
            // Read the rest without keeping it, so that the client, still sending, reads the
            // answer rather than a reset connection.
            let mut read = bytes.len() + data.len();
            drop(bytes);
            while let Some(Ok(frame)) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
                read += frame.data_ref().map_or(0, |data| data.len());
                if read > MAX_REQUEST_BODY_BYTES {
                    break;
                }
            }
            return Refusal::new(StatusCode::PAYLOAD_TOO_LARGE, message).into_response();
        }
        bytes.extend_from_slice(&data);
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// Counts the values and the nesting of JSON text fed in pieces, without parsing it: commas and
/// opening brackets outside strings. Text that is not JSON passes, for the parser to refuse.
#[derive(Debug, Default)]
pub(crate) struct Shape {
    values: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl Shape {
    /// Go on with BYTES; an error says what limit the text passed.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<(), &'static str> {
        for &byte in bytes {
            if self.in_string {
                match (self.escaped, byte) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'[' | b'{' => {
                    self.depth += 1;
                    self.values += 1;
                    if self.depth > MAX_REQUEST_DEPTH {
                        return Err("Payload Too Large: the request's JSON nests too deeply");
                    }
                }
                b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                b',' => self.values += 1,
                _ => {}
            }
            if self.values > MAX_REQUEST_VALUES {
                return Err("Payload Too Large: the request's JSON holds too many values");
            }
        }
        Ok(())
    }
}

/// Check the whole JSON text BYTES as [`Shape`] does.
#[cfg(test)]
pub(crate) fn check_shape(bytes: &[u8]) -> Result<(), &'static str> {
    Shape::default().feed(bytes)
}

/// The token of an `Authorization: Bearer TOKEN` value (scheme case-insensitive).
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let scheme = value.get(..7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = value[7..].trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Compare A and B in time that depends only on their lengths (the token's length is public).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference) == 0
}

/// Whether HOST (a host name or address without port or brackets) is the loopback interface.
fn loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "::1"
}

/// The host of an authority `HOST[:PORT]` or `[V6][:PORT]`, if its port is well-formed.
fn authority_host(authority: &str) -> Option<&str> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = if after.is_empty() {
            None
        } else {
            Some(after.strip_prefix(':')?)
        };
        (host, port)
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if let Some(port) = port {
        if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
    }
    Some(host)
}

/// Whether a `Host` header value names the loopback interface.
fn loopback_authority(authority: &str) -> bool {
    authority_host(authority.trim()).is_some_and(loopback_host)
}

/// Whether an `Origin` header value is `http(s)://` a loopback host, with any port.
fn localhost_origin(origin: &str) -> bool {
    let origin = origin.trim();
    let rest = if origin.len() > 8 && origin[..8].eq_ignore_ascii_case("https://") {
        &origin[8..]
    } else if origin.len() > 7 && origin[..7].eq_ignore_ascii_case("http://") {
        &origin[7..]
    } else {
        return false;
    };
    // An origin has no path, but tolerate a trailing slash.
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    !authority.contains(['/', '@', '?', '#']) && loopback_authority(authority)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    const TOKEN: &str = "0123456789abcdef";

    fn status(pairs: &[(&str, &str)]) -> Option<StatusCode> {
        Policy::new(TOKEN)
            .check(&headers(pairs))
            .err()
            .map(|refusal| refusal.status)
    }

    #[test]
    fn the_token_is_required_and_compared_exactly() {
        let host = ("host", "127.0.0.1:8080");
        assert_eq!(status(&[host, ("authorization", "Bearer 0123456789abcdef")]), None);
        assert_eq!(status(&[host, ("authorization", "bearer  0123456789abcdef ")]), None);
        assert_eq!(status(&[host]), Some(StatusCode::UNAUTHORIZED));
        assert_eq!(
            status(&[host, ("authorization", "Bearer 0123456789abcdeF")]),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            status(&[host, ("authorization", "Bearer 0123456789abcde")]),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            status(&[host, ("authorization", "Basic 0123456789abcdef")]),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            status(&[host, ("authorization", "Bearer ")]),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            status(&[
                host,
                ("authorization", "Bearer 0123456789abcdef"),
                ("authorization", "Bearer 0123456789abcdef")
            ]),
            Some(StatusCode::UNAUTHORIZED)
        );
    }

    #[test]
    fn only_localhost_origins_pass() {
        let ok = [("host", "localhost:1"), ("authorization", "Bearer 0123456789abcdef")];
        for origin in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8443",
            "http://[::1]:9",
            "HTTP://LOCALHOST",
            "http://localhost/",
        ] {
            let mut pairs = ok.to_vec();
            pairs.push(("origin", origin));
            assert_eq!(status(&pairs), None, "{origin}");
        }
        for origin in [
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example:80",
            "http://evil.example@localhost",
            "null",
            "file://",
            "http://localhost:http",
            "chrome-extension://abc",
            "",
        ] {
            let mut pairs = ok.to_vec();
            pairs.push(("origin", origin));
            assert_eq!(status(&pairs), Some(StatusCode::FORBIDDEN), "{origin}");
        }
    }

    #[test]
    fn the_host_must_be_loopback() {
        let auth = ("authorization", "Bearer 0123456789abcdef");
        for host in ["localhost", "127.0.0.1:5", "[::1]:5", "[::1]", "LocalHost:80"] {
            assert_eq!(status(&[("host", host), auth]), None, "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:80",
            "127.0.0.2",
            "0.0.0.0:1",
            "[::2]:1",
            "localhost:x",
        ] {
            assert_eq!(status(&[("host", host), auth]), Some(StatusCode::FORBIDDEN), "{host}");
        }
        assert_eq!(status(&[auth]), Some(StatusCode::BAD_REQUEST));
    }

    #[test]
    fn bodies_with_too_many_values_or_too_deep_are_refused_unparsed() {
        let numbers = |n: usize| format!("{{\"a\":[{}]}}", vec!["1"; n].join(","));
        assert_eq!(check_shape(numbers(MAX_REQUEST_VALUES - 10).as_bytes()), Ok(()));
        assert!(check_shape(numbers(MAX_REQUEST_VALUES + 10).as_bytes())
            .unwrap_err()
            .contains("too many values"));
        let deep = "[".repeat(MAX_REQUEST_DEPTH + 1);
        assert!(check_shape(deep.as_bytes()).unwrap_err().contains("nests too deeply"));
        // Commas and brackets inside strings, escaped quotes included, are text, not values.
        let text = format!("{{\"s\":\"\\\"{}\"}}", ",[".repeat(MAX_REQUEST_VALUES));
        assert_eq!(check_shape(text.as_bytes()), Ok(()));
        // Fed in pieces, split anywhere (inside an escape too), it counts the same.
        let mut shape = Shape::default();
        for piece in text.as_bytes().chunks(3) {
            assert_eq!(shape.feed(piece), Ok(()));
        }
        let numbers = numbers(MAX_REQUEST_VALUES + 10);
        let mut shape = Shape::default();
        let refused = numbers
            .as_bytes()
            .chunks(1000)
            .map(|piece| shape.feed(piece))
            .find(Result::is_err);
        assert!(refused.is_some());
    }

    #[test]
    fn a_declared_oversized_body_is_refused() {
        let base = [("host", "localhost"), ("authorization", "Bearer 0123456789abcdef")];
        let mut pairs = base.to_vec();
        let too_big = (MAX_REQUEST_BODY_BYTES + 1).to_string();
        pairs.push(("content-length", &too_big));
        assert_eq!(status(&pairs), Some(StatusCode::PAYLOAD_TOO_LARGE));
        let mut pairs = base.to_vec();
        pairs.push(("content-length", "100"));
        assert_eq!(status(&pairs), None);
    }
}
