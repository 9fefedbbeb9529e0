//! One vocabulary: Rust code says `device` and `address`, the product's
//! words. The wire keeps its older names (`/workers`, `inboxId`, the
//! `inbox_id` columns), and those live only in strings: serde renames, SQL,
//! paths, context strings. So an identifier containing `worker` or `inbox`
//! outside test code is a slip, with these exceptions:
//!
//! - names other crates define: tokio's `worker_threads`, actix-web's
//!   `HttpServer::workers`;
//! - the mailbox folder called `inbox` (`Folder::Inbox`, its counts, the
//!   refusal to move sent mail there);
//! - a diesel `column_name = ...` naming a SQL column of a raw query.
//!
//! The scan works on tokens (proc-macro2's lexer), so comments and strings
//! never count and a name inside a longer word always does.

#![allow(clippy::expect_used, reason = "a test fails loudly")]

use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// Identifiers other crates define, allowed anywhere.
const FOREIGN_NAMES: &[&str] = &["worker_threads"];

/// Where the folder named `inbox` is declared or counted: (file, identifier).
const FOLDER_NAMES: &[(&str, &str)] = &[
    ("crates/kernel/src/folder.rs", "Inbox"),
    ("crates/messages/src/folders.rs", "inbox"),
    ("crates/wire/src/folders.rs", "inbox"),
    ("crates/http-api/src/routes/folders.rs", "inbox"),
];

/// The refusal to move sent mail into the `inbox` folder.
const FOLDER_REFUSAL: &str = "SentToInbox";

#[derive(Debug, PartialEq, Eq)]
struct Slip {
    file: String,
    line: usize,
    name: String,
}

fn is_old_word(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("worker") || lower.contains("inbox")
}

/// Identifiers of `source` that use the old vocabulary outside test code
/// and outside the exceptions above. `file` is relative to the workspace.
fn slips(file: &str, source: &str) -> Vec<Slip> {
    let tokens: TokenStream = source
        .parse()
        .unwrap_or_else(|error| panic!("{file} does not lex: {error:?}"));
    let mut found = Vec::new();
    scan(file, tokens, &mut found);
    found
}

fn scan(file: &str, stream: TokenStream, found: &mut Vec<Slip>) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut index = 0;
    while index < tokens.len() {
        if is_cfg_test(&tokens, index) {
            index = end_of_item(&tokens, index + 2);
            continue;
        }
        match &tokens[index] {
            TokenTree::Group(group) => scan(file, group.stream(), found),
            TokenTree::Ident(ident) => {
                let name = ident.to_string();
                if is_old_word(&name) && !allowed(file, &tokens, index, &name) {
                    found.push(Slip {
                        file: file.to_owned(),
                        line: ident.span().start().line,
                        name,
                    });
                }
            }
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
        index += 1;
    }
}

fn allowed(file: &str, tokens: &[TokenTree], index: usize, name: &str) -> bool {
    let before = |back: usize| index.checked_sub(back).map(|at| &tokens[at]);
    let punct = |token: Option<&TokenTree>, ch: char| matches!(token, Some(TokenTree::Punct(punct)) if punct.as_char() == ch);
    let ident = |token: Option<&TokenTree>, text: &str| matches!(token, Some(TokenTree::Ident(ident)) if *ident == text);
    let method_call = punct(before(1), '.')
        && matches!(tokens.get(index + 1), Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Parenthesis);
    FOREIGN_NAMES.contains(&name)
        || (name == "workers" && method_call)
        || name == FOLDER_REFUSAL
        || (name == "Inbox" && punct(before(1), ':') && ident(before(3), "Folder"))
        || FOLDER_NAMES.contains(&(file, name))
        || (punct(before(1), '=') && ident(before(2), "column_name"))
}

/// `#[cfg(test)]` at `index`.
fn is_cfg_test(tokens: &[TokenTree], index: usize) -> bool {
    matches!(&tokens[index], TokenTree::Punct(punct) if punct.as_char() == '#')
        && matches!(tokens.get(index + 1), Some(TokenTree::Group(group))
            if group.delimiter() == Delimiter::Bracket
                && group.stream().to_string().replace(' ', "") == "cfg(test)")
}

/// The index after the item that starts at `index`: its body or its `;`.
fn end_of_item(tokens: &[TokenTree], mut index: usize) -> usize {
    while index < tokens.len() {
        match &tokens[index] {
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => return index + 1,
            TokenTree::Punct(punct) if punct.as_char() == ';' => return index + 1,
            _ => index += 1,
        }
    }
    index
}

/// Rust files outside test code: not under `tests/` or `benches/`, not a
/// `tests.rs` module, not in `target/`.
fn non_test_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = ["crates", "bins", "xtask", "fuzz"]
        .map(|dir| root.join(dir))
        .to_vec();
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .unwrap_or("");
            if path.is_dir() {
                if !matches!(
                    name,
                    "tests" | "benches" | "target" | "corpus" | "artifacts"
                ) {
                    pending.push(path);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn rust_code_speaks_of_devices_and_addresses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let files = non_test_files(&root);
    assert!(
        files.len() > 100,
        "too few files found under {}",
        root.display()
    );
    let mut found = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(&root).expect("under the root");
        let relative = relative.to_string_lossy().replace('\\', "/");
        let source = std::fs::read_to_string(path).expect("a readable source file");
        found.extend(slips(&relative, &source));
    }
    assert!(
        found.is_empty(),
        "identifiers in the old vocabulary (say device or address; keep `worker`/`inbox` to strings):\n{}",
        found
            .iter()
            .map(|slip| format!("{}:{}: {}", slip.file, slip.line, slip.name))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_rule_catches_a_slip_and_spares_strings_folders_and_tests() {
    let names = |source: &str| -> Vec<String> {
        slips("crates/example/src/lib.rs", source)
            .into_iter()
            .map(|slip| slip.name)
            .collect()
    };
    assert_eq!(
        names("struct Address { worker: DeviceId } fn find_inbox() {}"),
        ["worker", "find_inbox"]
    );
    assert_eq!(
        names("const INBOXES: u8 = 1; let workers = 2;"),
        ["INBOXES", "workers"]
    );
    // Strings, comments and wire renames are the wire's business.
    assert!(
        names(
            r#"
            // the inbox of a worker
            /// `inboxId` on the wire
            struct Message { #[serde(rename = "inboxId")] address_id: AddressId }
            const PATH: &str = "/workers/{id}/inboxes";
            "#
        )
        .is_empty()
    );
    // Foreign names, the folder and raw-query columns.
    assert!(
        names(
            r#"
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a() { HttpServer::new(app).workers(2); }
            fn b(folder: Folder) -> bool { folder == Folder::Inbox }
            struct Row { #[diesel(column_name = inbox_id)] address_id: String }
            "#
        )
        .is_empty()
    );
    assert_eq!(
        names("enum Refusal { SentToInbox } fn c() { let inbox = 1; }"),
        ["inbox"]
    );
    // Test modules may say what they like.
    assert!(names("#[cfg(test)] mod tests { fn inbox_worker() {} }").is_empty());
    assert_eq!(
        names("#[cfg(test)] fn helper() {} fn worker() {}"),
        ["worker"]
    );
}
