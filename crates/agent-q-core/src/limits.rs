//! The limits a call's arguments are held to before anything is made of them, whichever layer
//! meets them first: the executor, for arguments a driver hands it already parsed, and the MCP
//! hub, which refuses a call over them before it reaches Emacs.

use serde_json::{Map, Value as Json};

/// The most JSON values (objects, arrays, strings, numbers...) in one call's arguments. Real
/// tool arguments hold a few; every one becomes a Lisp value in Emacs.
pub const MAX_ARGUMENT_VALUES: usize = 100_000;

/// The deepest nesting of one call's arguments (the depth Lisp values are converted to).
pub const MAX_ARGUMENT_DEPTH: usize = crate::sexp::MAX_DEPTH;

/// The default cap on the bytes of one call's arguments as JSON text (the default of
/// `agent-q-max-argument-bytes`).
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 16 << 20;

/// Check ARGUMENTS against the limits: at most [`MAX_ARGUMENT_DEPTH`] deep, at most
/// [`MAX_ARGUMENT_VALUES`] values, at most MAX_BYTES as JSON text. The walk uses its own stack,
/// not recursion. Returns what is wrong, as the end of a sentence ("hold more than N values").
pub fn check_argument_limits(arguments: &Map<String, Json>, max_bytes: usize) -> Result<(), String> {
    let mut stack: Vec<(&Json, usize)> = arguments.values().map(|value| (value, 1)).collect();
    let mut values = stack.len();
    while let Some((value, depth)) = stack.pop() {
        if depth > MAX_ARGUMENT_DEPTH {
            return Err(format!("nest deeper than {MAX_ARGUMENT_DEPTH} levels"));
        }
        let children: Box<dyn Iterator<Item = &Json>> = match value {
            Json::Array(items) => Box::new(items.iter()),
            Json::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        for child in children {
            values += 1;
            if values > MAX_ARGUMENT_VALUES {
                return Err(format!("hold more than {MAX_ARGUMENT_VALUES} values"));
            }
            stack.push((child, depth + 1));
        }
    }
    // Depth and count are bounded now, so serializing cannot recurse deeply; the writer stops
    // it as soon as the limit is passed.
    let mut counter = ByteCounter {
        count: 0,
        limit: max_bytes,
    };
    if serde_json::to_writer(&mut counter, arguments).is_err() || counter.count > max_bytes {
        return Err(format!(
            "are larger than {max_bytes} bytes as JSON (agent-q-max-argument-bytes)"
        ));
    }
    Ok(())
}

/// A writer that counts bytes and fails once they exceed a limit.
struct ByteCounter {
    count: usize,
    limit: usize,
}

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.count = self.count.saturating_add(buf.len());
        if self.count > self.limit {
            return Err(std::io::Error::other("over the limit"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Json) -> Map<String, Json> {
        value.as_object().cloned().unwrap_or_default()
    }

    fn nested(depth: usize) -> Json {
        let mut deep = Json::Null;
        for _ in 0..depth {
            deep = Json::Array(vec![deep]);
        }
        deep
    }

    #[test]
    fn values_are_counted_up_to_the_limit() {
        // The array and its elements: one value more than the limit.
        let many = object(json!({ "xs": vec![0; MAX_ARGUMENT_VALUES] }));
        assert_eq!(
            check_argument_limits(&many, usize::MAX),
            Err(format!("hold more than {MAX_ARGUMENT_VALUES} values"))
        );
        let fits = object(json!({ "xs": vec![0; MAX_ARGUMENT_VALUES - 1] }));
        assert_eq!(check_argument_limits(&fits, usize::MAX), Ok(()));
    }

    #[test]
    fn nesting_is_bounded_without_recursion() {
        // An argument MAX_ARGUMENT_DEPTH levels deep (arrays around a null) fits; one more
        // level does not.
        let fits = object(json!({ "x": nested(MAX_ARGUMENT_DEPTH - 1) }));
        assert_eq!(check_argument_limits(&fits, usize::MAX), Ok(()));
        let deep = object(json!({ "x": nested(MAX_ARGUMENT_DEPTH) }));
        assert_eq!(
            check_argument_limits(&deep, usize::MAX),
            Err("nest deeper than 128 levels".to_string())
        );
    }

    #[test]
    fn bytes_are_measured_as_json_text() {
        let arguments = object(json!({ "content": "x".repeat(900), "n": [1, [2, [3]]] }));
        let size = serde_json::to_string(&arguments).map(|text| text.len()).unwrap_or(0);
        assert_eq!(check_argument_limits(&arguments, size), Ok(()));
        assert_eq!(
            check_argument_limits(&arguments, size - 1),
            Err(format!(
                "are larger than {} bytes as JSON (agent-q-max-argument-bytes)",
                size - 1
            ))
        );
        assert_eq!(check_argument_limits(&Map::new(), 2), Ok(()));
    }
}
