//! Tools written in Rust: the [`Tool`] trait and a runner that bounds them with a timeout.
//!
//! A native tool's `execute` returns a future that runs on a shared multi-thread tokio runtime,
//! never on the Emacs thread, so a slow or stuck tool cannot hang Emacs: the caller waits at most
//! the tool's timeout (default [`DEFAULT_TIMEOUT`]), and may cancel sooner (a `C-g` in Emacs).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value as Json};
use thiserror::Error;

use crate::spec::ToolSpec;

/// How long a native tool may run unless it says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The future a native tool returns.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<String, NativeError>> + Send + 'static>>;

/// A tool implemented in Rust.
pub trait Tool: Send + Sync {
    /// The tool's specification (name, description, parameters, safety level...).
    fn spec(&self) -> ToolSpec;

    /// How long one execution may take.
    fn timeout(&self) -> Duration {
        DEFAULT_TIMEOUT
    }

    /// Run with ARGS, already validated against the spec's parameters.
    fn execute(&self, args: Map<String, Json>) -> ToolFuture;
}

/// Why a native tool did not return a result.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum NativeError {
    /// The tool's own failure.
    #[error("{0}")]
    Failed(String),
    /// The timeout elapsed.
    #[error("Tool {tool} timed out after {} s", format_secs(*.after))]
    TimedOut {
        /// The tool's name.
        tool: String,
        /// The timeout.
        after: Duration,
    },
    /// The caller cancelled (the user quit).
    #[error("Tool {0} was cancelled")]
    Cancelled(String),
    /// The tool panicked; the panic was contained.
    #[error("Tool {0} panicked")]
    Panicked(String),
    /// The runtime could not be started.
    #[error("cannot start the async runtime: {0}")]
    Runtime(String),
}

fn format_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}", s as u64)
    } else {
        format!("{s:.3}").trim_end_matches('0').to_string()
    }
}

fn runtime() -> Result<&'static tokio::runtime::Runtime, NativeError> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("agent-q-native")
                .enable_time()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| NativeError::Runtime(e.clone()))
}

/// Start TOOL with ARGS on the runtime without waiting, bounded by its timeout; DONE is called
/// with the outcome on a runtime thread (also when the tool panics). Returns a handle that aborts
/// the run (DONE then reports [`NativeError::Cancelled`]).
pub fn spawn(
    tool: Arc<dyn Tool>,
    name: String,
    args: Map<String, Json>,
    done: impl FnOnce(Result<String, NativeError>) + Send + 'static,
) -> Result<tokio::task::AbortHandle, NativeError> {
    let rt = runtime()?;
    let timeout = tool.timeout();
    let future = tool.execute(args);
    let inner = rt.spawn(async move { tokio::time::timeout(timeout, future).await });
    let abort = inner.abort_handle();
    rt.spawn(async move {
        done(match inner.await {
            Ok(Ok(result)) => result,
            Ok(Err(_elapsed)) => Err(NativeError::TimedOut {
                tool: name,
                after: timeout,
            }),
            Err(join) if join.is_panic() => Err(NativeError::Panicked(name)),
            Err(_) => Err(NativeError::Cancelled(name)),
        })
    });
    Ok(abort)
}

/// How often the waiting thread asks whether to cancel.
const POLL: Duration = Duration::from_millis(50);

/// Run TOOL with ARGS on the runtime, waiting at most its timeout. SHOULD_CANCEL is asked every
/// 50 ms; when it answers true the tool is abandoned.
pub fn run(
    tool: &dyn Tool,
    name: &str,
    args: Map<String, Json>,
    mut should_cancel: impl FnMut() -> bool,
) -> Result<String, NativeError> {
    let rt = runtime()?;
    let timeout = tool.timeout();
    let mut handle = rt.spawn(tool.execute(args));
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let now = std::time::Instant::now();
        if now >= deadline {
            handle.abort();
            return Err(NativeError::TimedOut {
                tool: name.to_string(),
                after: timeout,
            });
        }
        let slice = POLL.min(deadline - now);
        match rt.block_on(async { tokio::time::timeout(slice, &mut handle).await }) {
            Ok(Ok(result)) => return result,
            Ok(Err(join)) if join.is_panic() => return Err(NativeError::Panicked(name.to_string())),
            Ok(Err(join)) => return Err(NativeError::Failed(join.to_string())),
            Err(_elapsed) => {
                if should_cancel() {
                    handle.abort();
                    return Err(NativeError::Cancelled(name.to_string()));
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A native tool that waits `ms` milliseconds, then answers `text`.
    pub struct WaitTool {
        /// The tool's name.
        pub name: String,
        /// Its timeout.
        pub timeout: Duration,
    }

    impl Tool for WaitTool {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: self.name.clone(),
                description: "Wait MS milliseconds, then answer TEXT (a native tool for testing timeouts).".into(),
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "ms": {"type": "integer", "minimum": 0, "description": "How long to wait"},
                        "text": {"type": "string", "description": "What to answer"}
                    },
                    "required": ["ms"]
                }),
                safety_level: crate::spec::SafetyLevel::Safe,
                categories: vec!["native".into()],
                version: None,
                tags: vec![],
                output_schema: None,
                hints: Default::default(),
                approval: Default::default(),
            }
        }

        fn timeout(&self) -> Duration {
            self.timeout
        }

        fn execute(&self, args: Map<String, Json>) -> ToolFuture {
            Box::pin(async move {
                let ms = args.get("ms").and_then(Json::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(args.get("text").and_then(Json::as_str).unwrap_or("done").to_string())
            })
        }
    }

    /// The wait tool under the name `sleepy`; `ms` 13 makes it panic.
    pub struct Sleepy {
        pub timeout: Duration,
    }

    impl Tool for Sleepy {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "sleepy".into(),
                ..self.inner().spec()
            }
        }
        fn timeout(&self) -> Duration {
            self.timeout
        }
        fn execute(&self, args: Map<String, Json>) -> ToolFuture {
            if args.get("ms").and_then(Json::as_u64) == Some(13) {
                return Box::pin(async { panic!("unlucky") });
            }
            self.inner().execute(args)
        }
    }

    impl Sleepy {
        fn inner(&self) -> WaitTool {
            WaitTool {
                name: "sleepy".into(),
                timeout: self.timeout,
            }
        }
    }

    fn args(v: Json) -> Map<String, Json> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_fast_tool_returns_its_result() {
        let t = Sleepy {
            timeout: Duration::from_millis(500),
        };
        assert_eq!(
            run(&t, "sleepy", args(json!({"ms": 10, "text": "hi"})), || false),
            Ok("hi".into())
        );
    }

    #[test]
    fn a_slow_tool_times_out_with_the_issue_message() {
        let t = Sleepy {
            timeout: Duration::from_millis(100),
        };
        let err = run(&t, "sleepy", args(json!({"ms": 5_000})), || false).unwrap_err();
        assert_eq!(err.to_string(), "Tool sleepy timed out after 0.1 s");
        let t = Sleepy {
            timeout: Duration::from_secs(1),
        };
        let err = run(&t, "sleepy", args(json!({"ms": 5_000})), || false).unwrap_err();
        assert_eq!(err.to_string(), "Tool sleepy timed out after 1 s");
    }

    #[test]
    fn cancelling_abandons_the_tool() {
        let t = Sleepy {
            timeout: Duration::from_secs(30),
        };
        let mut asked = 0;
        let err = run(&t, "sleepy", args(json!({"ms": 30_000})), || {
            asked += 1;
            asked > 2
        })
        .unwrap_err();
        assert_eq!(err, NativeError::Cancelled("sleepy".into()));
    }

    #[test]
    fn a_spawned_tool_reports_its_outcome_once() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t: Arc<dyn Tool> = Arc::new(Sleepy {
            timeout: Duration::from_millis(200),
        });
        for (ms, expected) in [
            (10, Ok("hi".to_string())),
            (
                5_000,
                Err(NativeError::TimedOut {
                    tool: "sleepy".into(),
                    after: Duration::from_millis(200),
                }),
            ),
            (13, Err(NativeError::Panicked("sleepy".into()))),
        ] {
            let tx = tx.clone();
            spawn(
                t.clone(),
                "sleepy".into(),
                args(json!({"ms": ms, "text": "hi"})),
                move |r| {
                    let _ = tx.send(r);
                },
            )
            .unwrap();
            assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), expected);
        }
        let tx2 = tx.clone();
        let abort = spawn(t, "sleepy".into(), args(json!({"ms": 5_000})), move |r| {
            let _ = tx2.send(r);
        })
        .unwrap();
        abort.abort();
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)).unwrap(),
            Err(NativeError::Cancelled("sleepy".into()))
        );
    }

    #[test]
    fn a_panicking_tool_is_contained() {
        // A generous timeout: on a loaded machine a 1 s budget was seen to run out first.
        let t = Sleepy {
            timeout: Duration::from_secs(30),
        };
        assert_eq!(
            run(&t, "sleepy", args(json!({"ms": 13})), || false),
            Err(NativeError::Panicked("sleepy".into()))
        );
    }
}
