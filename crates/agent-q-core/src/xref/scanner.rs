//! The reader: one pass over Emacs Lisp source bytes that tracks, for every list, what its
//! elements mean (code, data, argument lists, pcase patterns...), and records the occurrences of
//! one symbol as calls or references.

use std::sync::atomic::{AtomicBool, Ordering};

use super::forms::{declares_function, Head, PatternHead, FUNCTION_ARGS, VARIABLE_ARGS};
use super::index::symbol_hash;
use super::tokens::{skip_char_literal, skip_string, symbol_end, unescape_into};
use super::Kind;

/// Nesting deeper than this is read without tracking (no hits inside), to bound memory.
const MAX_DEPTH: usize = 10_000;

/// What a list is, which decides what its elements mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// A form to evaluate: element 0 is in function position.
    Code,
    /// Data: nothing inside counts.
    Data,
    /// Every element is an expression (a `cond` clause, a `let` binding `(VAR EXPR)`).
    Exprs,
    /// A `let` binding list: symbols are bound variables, lists are `(VAR EXPR)`.
    Bindings,
    /// A clause `(KEY BODY...)` whose element 0 is data.
    Clause,
    /// A `cl-flet` binding list, of `(NAME ARGS BODY...)` entries.
    FletBindings,
    /// A list of clauses (`defclass` slots): symbols are data, lists are clauses.
    Clauses,
    /// One `cl-flet` entry: element 0 a name, element 1 an argument list.
    FletEntry,
    /// An argument list (`defun`, `lambda`, `cl-defun`...): symbols are parameters; after
    /// `&optional`, `&key` or `&aux` a list is a `(VAR DEFAULT SVAR)` entry, before them a
    /// destructuring argument list, after `&context` an `(EXPR SPECIALIZER)` entry.
    ArgList,
    /// `(VAR DEFAULT SVAR)` after `&optional`/`&key`/`&aux`: DEFAULT is an expression.
    ArgDefault,
    /// `(EXPR SPECIALIZER)` after `cl-defmethod`'s `&context`: EXPR is an expression.
    ArgContext,
    /// A `(menu-item NAME BINDING PROPS...)` list in data (a keymap's menu entry): BINDING is
    /// a command, the values of `:enable`, `:visible`, `:included` and `:selected` are
    /// expressions the menu evaluates, the value of `:filter` a function.
    MenuItem,
    /// A pcase pattern `(HEAD ARGS...)`: what the arguments are depends on HEAD
    /// ([`PatternHead`]); bare symbols are bound variables.
    Pattern,
    /// A backquoted pcase pattern: its structure is data, a `,PAT` in it a pattern.
    QPattern,
    /// The FUN of `(pred FUN)` or `(app FUN PAT)` written as a list: `(not FUN)`, else a code
    /// form `(F ARGS...)` (a lambda, or F called with ARGS and the value), which becomes
    /// [`Ctx::Code`] when its head is read.
    PatternFun,
    /// A `(KEY PAT DEFAULT)` field of a `map`, `cl-struct` or `eieio` pattern: PAT is a
    /// pattern, DEFAULT an expression.
    PatternField,
    /// `(PATTERN BODY...)`: a `pcase` clause, a `pcase-let` binding `(PATTERN EXPR)` or the
    /// `(PATTERN LIST)` of `pcase-dolist`.
    PatternClause,
    /// The binding list of `pcase-let`: its lists are [`Ctx::PatternClause`]s.
    PatternBindings,
    /// The argument list of `pcase-lambda`: its elements are patterns.
    PatternArgs,
    /// One `declare` spec `(NAME ARGS...)`: data, except the function of `compiler-macro`,
    /// `gv-setter`, `gv-expander` and `completion` (a symbol or a lambda).
    DeclareSpec,
    /// `(NAME OPTIONS...)` of a `cl-defstruct`: the options are [`Ctx::StructOption`]s.
    StructName,
    /// One `cl-defstruct` option: data, except the argument list of `(:constructor NAME
    /// ARGLIST)` and the slot descriptions of `(:include PARENT SLOTS...)`.
    StructOption,
    /// A backquoted template that builds data (a custom type after `:type`): its structure is
    /// data, its unquoted parts `,x`/`,@x` are expressions.
    BqData,
}

/// Whether element P of PARENT, read with PREFIX, is a pcase pattern.
fn is_pattern_slot(parent: &Frame<'_>, p: u32, prefix: Option<Prefix>) -> bool {
    match parent.ctx {
        Ctx::PatternClause => p == 0,
        Ctx::PatternArgs => true,
        Ctx::PatternField => p == 1,
        Ctx::QPattern => prefix == Some(Prefix::Comma),
        Ctx::Pattern => match PatternHead::classify(parent.first) {
            PatternHead::App => p == 2,
            PatternHead::Let => p == 1,
            PatternHead::Patterns => p >= 1,
            _ => false,
        },
        Ctx::Code => parent.class == Head::PcaseSetq && p % 2 == 1,
        _ => false,
    }
}

/// Where an [`Ctx::ArgList`] is, which decides what a list in it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArgMode {
    /// Required parameters (or after `&rest`/`&body`): a list is a nested argument list.
    Required,
    /// After `&optional`, `&key` or `&aux`: a list is `(VAR DEFAULT SVAR)`.
    Defaults,
    /// After `&context`: a list is `(EXPR SPECIALIZER)`.
    Context,
}

/// What a symbol at some place means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    None,
    Call,
    Reference,
    DefName,
}

/// A reader prefix waiting for its datum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prefix {
    /// `'`, or a `#` syntax whose datum is data.
    Quote,
    /// `` ` ``.
    Backquote,
    /// `#'`.
    Function,
    /// `,` or `,@`.
    Comma,
    /// `#:` or a `#x`-like number: the following symbol is not the interned symbol.
    Uninterned,
}

struct Frame<'a> {
    ctx: Ctx,
    head: Option<&'a [u8]>,
    class: Head,
    count: u32,
    def_name: Option<&'a [u8]>,
    arglist_seen: bool,
    /// In an argument list, which lambda-list keyword came last.
    arg_mode: ArgMode,
    /// This list is `(NAME OPTIONS...)` of the enclosing `cl-defstruct`: NAME names it.
    names_parent: bool,
    /// In a [`Ctx::MenuItem`], the position of the next property value that is an
    /// expression (0: none).
    expr_at: u32,
    /// In a [`Ctx::MenuItem`], the position of the next property value that is a function.
    function_at: u32,
    /// In a [`Ctx::Code`] or [`Ctx::Clause`], the position of the value after `:type` (0:
    /// none): a type, data in a slot description, and data with expressions in its unquoted
    /// parts when backquoted.
    type_at: u32,
    /// The head symbol of a [`Ctx::Pattern`], [`Ctx::PatternFun`], [`Ctx::DeclareSpec`] or
    /// [`Ctx::StructOption`].
    first: Option<&'a [u8]>,
}

impl<'a> Frame<'a> {
    fn new(ctx: Ctx) -> Self {
        Frame {
            ctx,
            head: None,
            class: Head::Other,
            count: 0,
            def_name: None,
            arglist_seen: false,
            arg_mode: ArgMode::Required,
            expr_at: 0,
            function_at: 0,
            type_at: 0,
            first: None,
            names_parent: false,
        }
    }
}

/// Which element of the frame on top a datum is, and with which prefix.
#[derive(Clone, Copy)]
struct Slot {
    pos: u32,
    prefix: Option<Prefix>,
}

pub(super) struct RawHit<'a> {
    pub(super) offset: usize,
    pub(super) definition: Option<&'a [u8]>,
}

pub(super) struct Scanner<'a> {
    src: &'a [u8],
    name: &'a [u8],
    kind: Kind,
    stack: Vec<Frame<'a>>,
    /// Lists opened beyond [`MAX_DEPTH`] and not yet closed.
    overflow: usize,
    pending: Option<Slot>,
    pub(super) hits: Vec<RawHit<'a>>,
    scratch: Vec<u8>,
    /// When building a [`SymbolIndex`](super::SymbolIndex), the hashes of every symbol token read.
    pub(super) collect: Option<Vec<u64>>,
    /// Set by another thread to stop reading (checked every [`CANCEL_CHECK_BYTES`]).
    pub(super) cancel: Option<&'a AtomicBool>,
    /// The read stopped because of [`Scanner::cancel`].
    pub(super) cancelled: bool,
}

/// How many bytes a scan reads between two checks of its cancel flag.
const CANCEL_CHECK_BYTES: usize = 256 * 1024;
impl<'a> Scanner<'a> {
    pub(super) fn new(src: &'a [u8], name: &'a [u8], kind: Kind) -> Self {
        let mut stack = Vec::with_capacity(64);
        // The root: top-level forms are code, a top-level bare symbol is an expression.
        stack.push(Frame::new(Ctx::Exprs));
        Scanner {
            src,
            name,
            kind,
            stack,
            overflow: 0,
            pending: None,
            hits: Vec::new(),
            scratch: Vec::new(),
            collect: None,
            cancel: None,
            cancelled: false,
        }
    }

    fn top(&mut self) -> &mut Frame<'a> {
        let last = self.stack.len() - 1; // the root is never popped
        &mut self.stack[last]
    }

    /// Start a new element of the current list (or attach it to a pending prefix).
    fn take_slot(&mut self) -> Slot {
        if let Some(slot) = self.pending.take() {
            return slot;
        }
        let top = self.top();
        let pos = top.count;
        top.count = top.count.saturating_add(1);
        Slot { pos, prefix: None }
    }

    fn add_prefix(&mut self, prefix: Prefix) {
        let slot = match self.pending.take() {
            Some(slot) => {
                let combined = match slot.prefix {
                    Some(Prefix::Quote) => Prefix::Quote,
                    Some(Prefix::Uninterned) => Prefix::Uninterned,
                    _ => prefix,
                };
                Slot {
                    pos: slot.pos,
                    prefix: Some(combined),
                }
            }
            None => {
                let mut slot = self.take_slot();
                slot.prefix = Some(prefix);
                slot
            }
        };
        self.pending = Some(slot);
    }

    /// The context of a list at SLOT of the current frame.
    fn list_ctx(&mut self, slot: Slot, vector: bool) -> Ctx {
        if self.overflow > 0 {
            return Ctx::Data;
        }
        if let Some(ctx) = self.pattern_or_spec_ctx(slot, vector) {
            return ctx;
        }
        let parent = self.top();
        let in_data = parent.ctx == Ctx::Data;
        match slot.prefix {
            Some(Prefix::Quote) | Some(Prefix::Uninterned) => return Ctx::Data,
            Some(Prefix::Backquote) | Some(Prefix::Function) | Some(Prefix::Comma) => {
                return if in_data || vector { Ctx::Data } else { Ctx::Code };
            }
            None => {}
        }
        if vector {
            return Ctx::Data;
        }
        let p = slot.pos;
        match parent.ctx {
            // Decided by `pattern_or_spec_ctx`.
            Ctx::Pattern
            | Ctx::QPattern
            | Ctx::PatternFun
            | Ctx::PatternField
            | Ctx::PatternClause
            | Ctx::PatternBindings
            | Ctx::PatternArgs
            | Ctx::DeclareSpec
            | Ctx::StructName
            | Ctx::StructOption
            | Ctx::BqData => Ctx::Data,
            Ctx::Data => Ctx::Data,
            Ctx::Exprs => Ctx::Code,
            Ctx::Bindings => Ctx::Exprs,
            Ctx::Clause => {
                if p == 0 {
                    Ctx::Data
                } else {
                    Ctx::Code
                }
            }
            Ctx::FletBindings => Ctx::FletEntry,
            Ctx::Clauses => Ctx::Clause,
            Ctx::FletEntry => match p {
                0 => Ctx::Data,
                1 => Ctx::ArgList,
                _ => Ctx::Code,
            },
            Ctx::ArgList => match parent.arg_mode {
                ArgMode::Required => Ctx::ArgList,
                ArgMode::Defaults => Ctx::ArgDefault,
                ArgMode::Context => Ctx::ArgContext,
            },
            Ctx::ArgDefault => match p {
                1 => Ctx::Code,
                _ => Ctx::Data,
            },
            Ctx::ArgContext => match p {
                0 => Ctx::Code,
                _ => Ctx::Data,
            },
            Ctx::MenuItem => {
                if p > 0 && p == parent.expr_at {
                    Ctx::Code
                } else {
                    Ctx::Data
                }
            }
            Ctx::Code => {
                if p == 0 {
                    return Ctx::Code;
                }
                match parent.class {
                    Head::Quote | Head::DeclareFunction => Ctx::Data,
                    Head::Declare => Ctx::DeclareSpec,
                    Head::Let if p == 1 => Ctx::Bindings,
                    Head::DoList if p == 1 => Ctx::Exprs,
                    Head::CondCase if p >= 3 => Ctx::Clause,
                    Head::Cond => Ctx::Exprs,
                    Head::Case if p >= 2 => Ctx::Clause,
                    Head::Pcase if p >= 2 => Ctx::PatternClause,
                    Head::PcaseLet if p == 1 => Ctx::PatternBindings,
                    Head::PcaseDolist if p == 1 => Ctx::PatternClause,
                    Head::PcaseLambda if p == 1 => Ctx::PatternArgs,
                    Head::Lambda if p == 1 => Ctx::ArgList,
                    Head::Flet if p == 1 => Ctx::FletBindings,
                    Head::Struct if p == 1 => Ctx::StructName,
                    Head::Struct => Ctx::Clause,
                    Head::Class if p <= 2 => Ctx::Data,
                    Head::Class if p == 3 => Ctx::Clauses,
                    Head::Defun if p == 1 => Ctx::Data,
                    Head::Defun if p == 2 => Ctx::ArgList,
                    Head::DefMethod if p == 1 => Ctx::Data,
                    Head::DefMethod if !parent.arglist_seen => {
                        parent.arglist_seen = true;
                        Ctx::ArgList
                    }
                    _ => Ctx::Code,
                }
            }
        }
    }

    /// The context of a list at SLOT of the current frame when that frame is a pcase pattern,
    /// a `declare` spec, a `cl-defstruct` option, a backquoted data template, or when the list
    /// is a pattern or the value after `:type`; `None` for the other cases.
    fn pattern_or_spec_ctx(&self, slot: Slot, vector: bool) -> Option<Ctx> {
        let parent = &self.stack[self.stack.len() - 1];
        let p = slot.pos;
        if is_pattern_slot(parent, p, slot.prefix) {
            return Some(match slot.prefix {
                None if !vector => Ctx::Pattern,
                // `,PAT` of a backquoted pattern; elsewhere (a pcase form built by a
                // backquote template) `,EXPR` is evaluated.
                Some(Prefix::Comma) if !vector && parent.ctx == Ctx::QPattern => Ctx::Pattern,
                Some(Prefix::Comma) if !vector => Ctx::Code,
                Some(Prefix::Backquote) => Ctx::QPattern,
                Some(Prefix::Function) if !vector => Ctx::Code,
                _ => Ctx::Data,
            });
        }
        // A list at a place that is evaluated.
        let expr = match slot.prefix {
            Some(Prefix::Quote) | Some(Prefix::Uninterned) => Ctx::Data,
            _ if vector => Ctx::Data,
            _ => Ctx::Code,
        };
        let plain = slot.prefix.is_none() && !vector;
        Some(match parent.ctx {
            Ctx::Pattern => match PatternHead::classify(parent.first) {
                PatternHead::Guard if p == 1 => expr,
                PatternHead::Let if p == 2 => expr,
                PatternHead::Pred | PatternHead::App if p == 1 => match slot.prefix {
                    None if !vector => Ctx::PatternFun,
                    Some(Prefix::Function) if !vector => Ctx::Code,
                    _ => Ctx::Data,
                },
                PatternHead::Fields if p >= 1 && plain => Ctx::PatternField,
                _ => Ctx::Data,
            },
            Ctx::QPattern if slot.prefix.is_none() => Ctx::QPattern,
            // Only `(not FUN)` stays a `PatternFun` after its head.
            Ctx::PatternFun if p == 1 && plain => Ctx::PatternFun,
            Ctx::PatternField if p == 2 => expr,
            Ctx::PatternClause if p >= 1 => expr,
            Ctx::PatternBindings if plain => Ctx::PatternClause,
            Ctx::DeclareSpec if p == 1 && declares_function(parent.first) => expr,
            Ctx::StructName if p >= 1 && plain => Ctx::StructOption,
            Ctx::StructOption => match parent.first {
                Some(b":constructor") if p == 2 && plain => Ctx::ArgList,
                Some(b":include") if p >= 2 && plain => Ctx::Clause,
                _ => Ctx::Data,
            },
            Ctx::BqData => match slot.prefix {
                None => Ctx::BqData,
                Some(Prefix::Comma) if !vector => Ctx::Code,
                _ => Ctx::Data,
            },
            Ctx::QPattern
            | Ctx::PatternFun
            | Ctx::PatternField
            | Ctx::PatternClause
            | Ctx::PatternBindings
            | Ctx::PatternArgs
            | Ctx::DeclareSpec
            | Ctx::StructName => Ctx::Data,
            Ctx::Code | Ctx::Clause if p > 0 && p == parent.type_at => match slot.prefix {
                Some(Prefix::Backquote) => Ctx::BqData,
                None if parent.ctx == Ctx::Clause => Ctx::Data,
                _ => return None,
            },
            _ => return None,
        })
    }

    /// The meaning of a symbol at SLOT of the current frame (only asked for matching symbols and
    /// for definition names).
    fn symbol_role(&self, slot: Slot) -> Role {
        if self.overflow > 0 {
            return Role::None;
        }
        let parent = &self.stack[self.stack.len() - 1];
        if parent.ctx == Ctx::Data {
            return Role::None;
        }
        let p = slot.pos;
        match slot.prefix {
            Some(Prefix::Uninterned) => Role::None,
            Some(Prefix::Function) => Role::Call,
            // `,NAME` in a backquoted pattern binds NAME.
            Some(Prefix::Comma) if parent.ctx == Ctx::QPattern => Role::None,
            Some(Prefix::Comma) => Role::Reference,
            Some(Prefix::Quote) | Some(Prefix::Backquote) => {
                if parent.ctx != Ctx::Code || p == 0 {
                    return Role::None;
                }
                if parent.class.is_definition() && p == 1 {
                    return Role::DefName;
                }
                let head = match parent.head {
                    Some(h) => h,
                    None => return Role::None,
                };
                let listed = |table: &[(&str, u32)]| {
                    table
                        .iter()
                        .any(|&(f, at)| f.as_bytes() == head && (at == 0 || at == p))
                };
                match self.kind {
                    Kind::Call if listed(FUNCTION_ARGS) => Role::Call,
                    Kind::Reference if listed(VARIABLE_ARGS) => Role::Reference,
                    _ => Role::None,
                }
            }
            None => match parent.ctx {
                Ctx::Data => Role::None,
                Ctx::Exprs | Ctx::Bindings => Role::Reference,
                Ctx::Clause => {
                    if p == 0 || p == parent.type_at {
                        Role::None
                    } else {
                        Role::Reference
                    }
                }
                Ctx::FletBindings | Ctx::Clauses | Ctx::ArgList => Role::None,
                Ctx::Pattern => match PatternHead::classify(parent.first) {
                    PatternHead::Pred | PatternHead::App if p == 1 => Role::Call,
                    PatternHead::Guard if p == 1 => Role::Reference,
                    PatternHead::Let if p == 2 => Role::Reference,
                    _ => Role::None,
                },
                // The FUN of `(not FUN)`.
                Ctx::PatternFun if p == 1 => Role::Call,
                Ctx::PatternField if p == 2 => Role::Reference,
                Ctx::PatternClause if p >= 1 => Role::Reference,
                Ctx::DeclareSpec if p == 1 && declares_function(parent.first) => Role::Call,
                Ctx::QPattern
                | Ctx::PatternFun
                | Ctx::PatternField
                | Ctx::PatternClause
                | Ctx::PatternBindings
                | Ctx::PatternArgs
                | Ctx::DeclareSpec
                | Ctx::StructName
                | Ctx::StructOption
                | Ctx::BqData => Role::None,
                Ctx::ArgDefault => {
                    if p == 1 {
                        Role::Reference
                    } else {
                        Role::None
                    }
                }
                Ctx::ArgContext => {
                    if p == 0 {
                        Role::Reference
                    } else {
                        Role::None
                    }
                }
                Ctx::MenuItem => {
                    if p > 0 && p == parent.expr_at {
                        Role::Reference
                    } else if p == 2 || (p > 0 && p == parent.function_at) {
                        Role::Call
                    } else {
                        Role::None
                    }
                }
                Ctx::FletEntry => {
                    if p <= 1 {
                        Role::None
                    } else {
                        Role::Reference
                    }
                }
                Ctx::Code => {
                    if p == 0 {
                        return Role::Call;
                    }
                    match parent.class {
                        Head::Quote | Head::Declare => Role::None,
                        // `(function NAME)`; `(function :value NAME)` in a custom type is data.
                        Head::Function if p == 1 => Role::Call,
                        Head::Function => Role::None,
                        Head::DeclareFunction if p == 1 => Role::DefName,
                        Head::DeclareFunction => Role::None,
                        Head::CondCase if p == 1 => Role::None,
                        Head::Lambda if p == 1 => Role::None,
                        Head::Struct | Head::Class if p == 1 => Role::DefName,
                        Head::Struct => Role::None,
                        Head::Class if p <= 3 => Role::None,
                        Head::Flet if p == 1 => Role::None,
                        Head::Defun | Head::Def if p == 1 => Role::DefName,
                        Head::Defun if p == 2 => Role::None,
                        Head::DefMethod if p == 1 => Role::DefName,
                        Head::DefMethod if !parent.arglist_seen => Role::None,
                        _ => Role::Reference,
                    }
                }
            },
        }
    }

    fn symbol(&mut self, start: usize, end: usize, escaped: bool) {
        let token = &self.src[start..end];
        if let Some(collected) = self.collect.as_mut() {
            if escaped {
                unescape_into(token, &mut self.scratch);
                collected.push(symbol_hash(&self.scratch));
            } else {
                collected.push(symbol_hash(token));
            }
        }
        let slot = self.take_slot();
        if self.overflow > 0 {
            return;
        }
        if slot.prefix.is_none() && self.top().ctx == Ctx::Data && slot.pos == 0 && token == b"menu-item" {
            self.top().ctx = Ctx::MenuItem;
            return;
        }
        if slot.pos == 0 && slot.prefix.is_none() {
            let top = self.top();
            match top.ctx {
                // `(F ARGS...)` as a pattern's function is a call of F.
                Ctx::PatternFun if token != b"not" => top.ctx = Ctx::Code,
                Ctx::Pattern | Ctx::PatternFun | Ctx::DeclareSpec | Ctx::StructOption => top.first = Some(token),
                _ => {}
            }
        }
        if slot.prefix.is_none() && token.first() == Some(&b':') {
            let top = self.top();
            match (top.ctx, token) {
                (Ctx::MenuItem, b":enable" | b":visible" | b":included" | b":selected") => top.expr_at = slot.pos + 1,
                (Ctx::MenuItem, b":filter") => top.function_at = slot.pos + 1,
                (Ctx::Code | Ctx::Clause, b":type") if slot.pos > 0 => top.type_at = slot.pos + 1,
                _ => {}
            }
        }
        if token.first() == Some(&b'&') && slot.prefix.is_none() {
            let top = self.top();
            if top.ctx == Ctx::ArgList {
                top.arg_mode = match token {
                    b"&optional" | b"&key" | b"&aux" => ArgMode::Defaults,
                    b"&context" => ArgMode::Context,
                    b"&rest" | b"&body" | b"&whole" | b"&environment" => ArgMode::Required,
                    _ => top.arg_mode,
                };
            }
        }
        let depth = self.stack.len();
        if slot.pos == 0 && self.stack[depth - 1].names_parent && depth >= 3 {
            let parent = &mut self.stack[depth - 2];
            if parent.def_name.is_none() {
                parent.def_name = Some(token);
            }
            return;
        }
        {
            let top = self.top();
            if top.ctx == Ctx::Code && slot.pos == 0 && slot.prefix.is_none() {
                top.head = Some(token);
                top.class = Head::classify(token);
                return self.check_match(token, start, escaped, slot);
            }
        }
        let top = &self.stack[self.stack.len() - 1];
        if slot.pos == 1
            && top.class.is_definition()
            && top.ctx == Ctx::Code
            && top.def_name.is_none()
            && self.symbol_role(slot) == Role::DefName
        {
            self.top().def_name = Some(token);
            return;
        }
        self.check_match(token, start, escaped, slot);
    }

    fn check_match(&mut self, token: &'a [u8], start: usize, escaped: bool, slot: Slot) {
        if self.name.is_empty() {
            return; // only indexing
        }
        let matches = if escaped {
            unescape_into(token, &mut self.scratch);
            self.scratch == self.name
        } else {
            token == self.name
        };
        if !matches {
            return;
        }
        let wanted = match self.kind {
            Kind::Call => Role::Call,
            Kind::Reference => Role::Reference,
        };
        if self.symbol_role(slot) != wanted {
            return;
        }
        // Column of the symbol proper, after `#'` or `'`: `start` already is that.
        let definition = self.definition();
        self.hits.push(RawHit {
            offset: start,
            definition,
        });
    }

    fn definition(&self) -> Option<&'a [u8]> {
        self.stack
            .iter()
            .skip(1)
            .rev()
            .find_map(|f| f.def_name)
            .or_else(|| self.stack.get(1).and_then(|f| f.head))
    }

    fn atom(&mut self) {
        self.take_slot();
    }

    fn open(&mut self, vector: bool) {
        let slot = self.take_slot();
        if self.overflow > 0 || self.stack.len() >= MAX_DEPTH {
            self.overflow += 1;
            return;
        }
        let ctx = self.list_ctx(slot, vector);
        let parent = &self.stack[self.stack.len() - 1];
        let names_parent =
            parent.class == Head::Struct && parent.ctx == Ctx::Code && slot.pos == 1 && slot.prefix.is_none();
        let mut frame = Frame::new(ctx);
        frame.names_parent = names_parent;
        self.stack.push(frame);
    }

    fn close(&mut self) {
        self.pending = None;
        if self.overflow > 0 {
            self.overflow -= 1;
        } else if self.stack.len() > 1 {
            self.stack.pop();
        }
    }

    pub(super) fn run(&mut self) {
        let src = self.src;
        let len = src.len();
        let mut i = 0;
        let mut next_check = CANCEL_CHECK_BYTES;
        while i < len {
            if i >= next_check {
                if self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    self.cancelled = true;
                    return;
                }
                next_check = i.saturating_add(CANCEL_CHECK_BYTES);
            }
            let b = src[i];
            match b {
                _ if b <= b' ' => {
                    i += 1;
                    while src.get(i).is_some_and(|&c| c <= b' ') {
                        i += 1;
                    }
                }
                b';' => {
                    i = match memchr::memchr(b'\n', &src[i..]) {
                        Some(n) => i + n + 1,
                        None => len,
                    };
                }
                b'"' => {
                    self.atom();
                    i = skip_string(src, i + 1);
                }
                b'(' => {
                    self.open(false);
                    i += 1;
                }
                b'[' => {
                    self.open(true);
                    i += 1;
                }
                b')' | b']' => {
                    self.close();
                    i += 1;
                }
                b'\'' => {
                    self.add_prefix(Prefix::Quote);
                    i += 1;
                }
                b'`' => {
                    self.add_prefix(Prefix::Backquote);
                    i += 1;
                }
                b',' => {
                    self.add_prefix(Prefix::Comma);
                    i += 1;
                    if src.get(i) == Some(&b'@') {
                        i += 1;
                    }
                }
                b'?' => {
                    self.atom();
                    i = skip_char_literal(src, i + 1);
                }
                b'#' => i = self.hash(i),
                _ => {
                    let (end, escaped) = symbol_end(src, i);
                    self.symbol(i, end, escaped);
                    i = end;
                }
            }
        }
    }

    /// Read a `#` syntax at I; return where reading continues.
    fn hash(&mut self, i: usize) -> usize {
        let src = self.src;
        match src.get(i + 1).copied() {
            Some(b'\'') => {
                self.add_prefix(Prefix::Function);
                i + 2
            }
            Some(b'(') | Some(b'[') => {
                self.add_prefix(Prefix::Quote);
                i + 1
            }
            Some(b's') if src.get(i + 2) == Some(&b'(') => {
                self.add_prefix(Prefix::Quote);
                i + 2
            }
            Some(b'^') => {
                let mut j = i + 1;
                while src.get(j) == Some(&b'^') {
                    j += 1;
                }
                self.add_prefix(Prefix::Quote);
                j
            }
            Some(b'&') => {
                let mut j = i + 2;
                while src.get(j).is_some_and(|c| c.is_ascii_digit()) {
                    j += 1;
                }
                self.add_prefix(Prefix::Quote);
                j
            }
            Some(b'@') => {
                // `#@NN`: skip NN bytes after the digits (byte-compiled docstrings).
                let mut j = i + 2;
                let mut n: usize = 0;
                while let Some(c) = src.get(j).filter(|c| c.is_ascii_digit()) {
                    n = n.saturating_mul(10).saturating_add(usize::from(c - b'0'));
                    j += 1;
                }
                if n == 0 {
                    src.len()
                } else {
                    j.saturating_add(n).min(src.len())
                }
            }
            Some(b'!') if i == 0 => match memchr::memchr(b'\n', src) {
                Some(n) => n + 1,
                None => src.len(),
            },
            Some(b'#') | Some(b'$') => {
                self.atom();
                i + 2
            }
            Some(c) if c.is_ascii_digit() => {
                let mut j = i + 1;
                while src.get(j).is_some_and(|c| c.is_ascii_digit()) {
                    j += 1;
                }
                match src.get(j).copied() {
                    Some(b'=') => j + 1, // `#1=DATUM`: the datum follows in this slot
                    Some(b'#') => {
                        self.atom();
                        j + 1
                    }
                    _ => {
                        // `#24r1k`: a number in another radix.
                        self.add_prefix(Prefix::Uninterned);
                        j
                    }
                }
            }
            Some(_) => {
                // `#:sym`, `#_sym`, `#x1F`, `#b101`, `#o17`...
                self.add_prefix(Prefix::Uninterned);
                if matches!(src.get(i + 1), Some(b':') | Some(b'_')) {
                    i + 2
                } else {
                    i + 1
                }
            }
            None => i + 1,
        }
    }
}

#[cfg(test)]
mod tests;
