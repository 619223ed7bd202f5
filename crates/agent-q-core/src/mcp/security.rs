//! The security layer around the MCP service: every request is checked here before rmcp serves
//! it, in this order.
//!
//! - `Host` must name the loopback interface and an `Origin` header, when present, a localhost
//!   origin (HTTP 403; a malformed or missing `Host` is HTTP 400). These are rmcp's own checks
//!   (`StreamableHttpServerConfig::with_allowed_hosts` and `with_allowed_origins`, configured in
//!   server.rs): the layer asks the transport about the request's `Host` and `Origin` first (see
//!   [`guard`]), so that a request refused for them learns nothing about its token. A
//!   DNS-rebinding page reaches 127.0.0.1 under its own host name; browsers send `Origin` with
//!   every cross-site request; requests without `Origin` (every terminal client) pass.
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
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use http_body::Body as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::StreamableHttpService;

/// A transport's Host and Origin checks, as a function of a request: rmcp's own, whichever
/// handler the transport serves (the MCP server's, or the IDE companion's).
pub(crate) type HostChecks =
    Arc<dyn Fn(Request) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send>> + Send + Sync>;

/// The Host and Origin checks of TRANSPORT (see [`Policy::new`]).
pub(crate) fn host_checks<S>(transport: StreamableHttpService<S, LocalSessionManager>) -> HostChecks
where
    S: rmcp::ServerHandler + Send + 'static,
{
    Arc::new(move |request: Request| {
        let transport = transport.clone();
        Box::pin(async move { transport.handle(request).await.map(Body::new) })
    })
}

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

/// What the layer checks requests against: the token, and the transport whose Host and Origin
/// checks come first.
pub(crate) struct Policy {
    token: Vec<u8>,
    checks: Option<HostChecks>,
}

impl Policy {
    /// A policy requiring TOKEN, after a transport's Host and Origin CHECKS (none when `None`;
    /// see [`host_checks`]).
    pub(crate) fn new(token: &str, checks: Option<HostChecks>) -> Self {
        Policy {
            token: token.as_bytes().to_vec(),
            checks,
        }
    }

    /// The refusal of rmcp's Host and Origin checks for a request with these HEADERS and URI,
    /// if they refuse it. They run inside the transport, before it looks at anything else, and
    /// are not callable on their own: the transport is handed a copy of the request with only
    /// its `Host` and `Origin` headers, and the method OPTIONS, which it serves with nothing but
    /// those checks and a 405. Only a 400 or 403 counts as a refusal.
    async fn host_and_origin_refusal(&self, headers: &HeaderMap, uri: &axum::http::Uri) -> Option<Response> {
        let checks = self.checks.as_ref()?;
        let mut probe = Request::new(Body::empty());
        *probe.method_mut() = Method::OPTIONS;
        *probe.uri_mut() = uri.clone();
        for name in [header::HOST, header::ORIGIN] {
            for value in headers.get_all(&name) {
                probe.headers_mut().append(name.clone(), value.clone());
            }
        }
        let answer = checks(probe).await;
        let status = answer.status();
        if status != StatusCode::BAD_REQUEST && status != StatusCode::FORBIDDEN {
            return None;
        }
        let mut refusal = answer;
        let headers = refusal.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        Some(refusal)
    }

    /// Check a request's token and declared size; `Ok` lets it through.
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
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

/// The axum middleware: refuse what rmcp's Host and Origin checks refuse, then what
/// [`Policy::check`] refuses; pass the rest on. Host and Origin come first, for every request,
/// so that neither the status nor the connection's fate tells a refused page whether its token
/// was right.
pub(crate) async fn guard(State(policy): State<Arc<Policy>>, request: Request, next: Next) -> Response {
    if let Some(refusal) = policy.host_and_origin_refusal(request.headers(), request.uri()).await {
        return refusal;
    }
    match policy.check(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

/// The most JSON values one request body may hold, counted before it is parsed. Generous
/// for any real message (a call's arguments may hold [`crate::limits::MAX_ARGUMENT_VALUES`]), but
/// it keeps a body of 30 MiB of small numbers from becoming hundreds of megabytes of parsed
/// values in the Emacs process.
pub const MAX_REQUEST_VALUES: usize = 2 * crate::limits::MAX_ARGUMENT_VALUES;

/// The deepest nesting of a request body, checked before it is parsed.
pub const MAX_REQUEST_DEPTH: usize = crate::limits::MAX_ARGUMENT_DEPTH + 8;

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
        Policy::new(TOKEN, None)
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
