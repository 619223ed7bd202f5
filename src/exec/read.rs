//! A tool-call plist read for the executor: the usual shape directly from its Lisp values,
//! anything else converted whole and read by [`agent_q_core::executor::parse_call`].

use emacs::{Env, Result, Value};

use crate::convert::lisp::{cons, kw_arguments, kw_client, kw_id, kw_name, string};
use crate::convert::{self, Limits, Used, WalkError};
use agent_q_core::executor::{CallArguments, Options, ToolCall, ToolResult};
use agent_q_core::sexp::Sexp;
use serde_json::{Map, Value as Json};

/// The `:id` of CALL when it is a string (a copy without text properties), never signalling.
pub(super) fn call_id(env: &Env, call: Value<'_>) -> Option<String> {
    env.call("agent-q--call-id", (call,)).ok().and_then(|v| {
        if v.is_not_nil() {
            convert::read_string(v, 4096).ok()
        } else {
            None
        }
    })
}

/// Convert one call for the executor; on failure, the failure result (with the call's id when
/// it can be read).
pub(super) fn call_sexp(env: &Env, call: Value<'_>, opts: &Options) -> Result<std::result::Result<Sexp, ToolResult>> {
    let limits = Limits {
        max_bytes: opts.max_argument_bytes,
        ..Limits::default()
    };
    match convert::to_sexp(env, call, limits) {
        Ok(sx) => Ok(Ok(sx)),
        Err(WalkError::Convert(e)) => Ok(Err(ToolResult::failure(
            call_id(env, call),
            format!("Invalid tool call: cannot convert it: {e}"),
        ))),
        Err(WalkError::Emacs(e)) => Err(e),
    }
}

/// A tool call read from its plist without converting the whole plist, with the Lisp values
/// of its id and name kept to be handed back as they are.
pub(super) struct LispCall<'e> {
    pub(super) id: String,
    pub(super) id_value: Value<'e>,
    pub(super) name: String,
    pub(super) name_value: Value<'e>,
    pub(super) client: Option<String>,
    pub(super) arguments: Option<Sexp>,
    /// The arguments of an MCP client's call, as the server parsed them (see
    /// [`crate::mcp::take_arguments`]); `arguments` is then `None`.
    pub(super) parsed_arguments: Option<Map<String, Json>>,
}

impl LispCall<'_> {
    /// The call for the executor, checked by the rules of [`agent_q_core::executor::parse_call`]
    /// ([`ToolCall::new`]): on failure, the id to echo and the message.
    pub(super) fn checked(&mut self) -> std::result::Result<ToolCall<'_>, (Option<String>, String)> {
        let arguments = match self.parsed_arguments.take() {
            Some(map) => Some(CallArguments::Json(map)),
            None => self.arguments.as_ref().map(CallArguments::Sexp),
        };
        ToolCall::new(
            Some(self.id.clone()),
            Some(self.name.clone()),
            arguments,
            self.client.clone(),
        )
    }
}

/// The most elements of a call plist [`read_call`] takes apart (`:id`, `:name`, `:arguments`
/// and `:client`, each once); anything longer takes the general path.
const READ_CALL_MAX_ELEMENTS: i64 = 8;

/// Take CALL apart without converting the whole plist, for the usual shape only: a plist of
/// `:id` (a string), `:name` (a string), `:arguments` and `:client` (a string), each at most
/// once, keys recognised by identity. The limits are those of the whole call (strings' bytes,
/// elements, depth), as [`call_sexp`] applies them. The parts are checked by the executor
/// ([`LispCall::checked`]), as the general path checks them. Any other shape, or a value the
/// limits refuse, gives `None`: the general path then reads the call and names the problem.
pub(super) fn read_call<'e>(env: &'e Env, call: Value<'e>, opts: &Options) -> Result<Option<LispCall<'e>>> {
    let limits = Limits {
        max_bytes: opts.max_argument_bytes,
        ..Limits::default()
    };
    if !call.is_not_nil() || *cons != env.type_of(call)? {
        return Ok(None);
    }
    let length = env.call(convert::lisp::proper_list_p, (call,))?;
    if !length.is_not_nil() {
        return Ok(None);
    }
    let length = length.into_rust::<i64>()?;
    if length % 2 != 0 || length > READ_CALL_MAX_ELEMENTS {
        return Ok(None);
    }
    let mut used = Used {
        bytes: 0,
        nodes: usize::try_from(length).unwrap_or(usize::MAX),
    };
    if used.nodes > limits.max_nodes {
        return Ok(None);
    }
    // A string value, counted against the limits; `None` when it is not a readable string.
    let text = |v: Value<'e>, used: &mut Used| -> Result<Option<String>> {
        if *string != env.type_of(v)? {
            return Ok(None);
        }
        match convert::read_string(v, limits.max_bytes.saturating_sub(used.bytes)) {
            Ok(s) => {
                used.bytes += s.len();
                Ok(Some(s))
            }
            Err(WalkError::Convert(_)) => Ok(None),
            Err(WalkError::Emacs(e)) => Err(e),
        }
    };
    let mut id = None;
    let mut name = None;
    let mut client = None;
    let mut arguments = None;
    let mut parsed_arguments = None;
    let mut cell = call;
    for _ in 0..length / 2 {
        let key: Value<'e> = cell.car()?;
        cell = cell.cdr()?;
        let value: Value<'e> = cell.car()?;
        cell = cell.cdr()?;
        if *kw_id == key && id.is_none() {
            let Some(s) = text(value, &mut used)? else {
                return Ok(None);
            };
            id = Some((s, value));
        } else if *kw_name == key && name.is_none() {
            let Some(s) = text(value, &mut used)? else {
                return Ok(None);
            };
            name = Some((s, value));
        } else if *kw_client == key && client.is_none() {
            let Some(s) = text(value, &mut used)? else {
                return Ok(None);
            };
            client = Some(s);
        } else if *kw_arguments == key && arguments.is_none() && parsed_arguments.is_none() {
            match convert::to_sexp_part(env, value, limits, 1, &mut used) {
                Ok(sx) => arguments = Some(sx),
                // Not a Lisp value the walk converts: the parsed arguments of an MCP call?
                Err(WalkError::Convert(_)) => match crate::mcp::take_arguments(value) {
                    Some(map) => parsed_arguments = Some(map),
                    None => return Ok(None),
                },
                Err(WalkError::Emacs(e)) => return Err(e),
            }
        } else {
            return Ok(None);
        }
    }
    let (Some((id, id_value)), Some((name, name_value))) = (id, name) else {
        return Ok(None);
    };
    Ok(Some(LispCall {
        id,
        id_value,
        name,
        name_value,
        client,
        arguments,
        parsed_arguments,
    }))
}
