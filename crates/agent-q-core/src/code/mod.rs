//! The pure parts of the code-intelligence tools (`find_definition`, `find_references`,
//! `file_outline`, `workspace_symbols`, `diagnostics`, `type_at`, `rename_symbol`): what the
//! Emacs side gathers from a language server (eglot), Flymake, Flycheck, imenu, an xref backend or
//! a text search is worded here, once, for every tool.
//!
//! - [`columns`]: LSP's UTF-16 columns ↔ Emacs's character columns;
//! - [`lines`]: the text of the lines a location names, read from the files (bounded);
//! - [`format`]: the answers: one location per line as `FILE:LINE:COLUMN: TEXT`, paths relative
//!   to the project root, outlines nested by indentation, severities as words, cuts that say so;
//! - [`rename`]: `rename_symbol`'s new name checked, the server's `WorkspaceEdit` read and applied,
//!   and the answer naming the hunks applied and rejected.

pub mod columns;
pub mod format;
pub mod input;
pub mod lines;
pub mod rename;

#[cfg(test)]
mod rename_tests;
#[cfg(test)]
mod tests;
