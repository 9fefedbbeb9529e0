//! Text from outside (mail, names and labels others sealed, the service's
//! error messages) made safe to print on a terminal.
//!
//! A terminal acts on control characters: an ESC sequence can move the
//! cursor and rewrite earlier lines, set the window title or write the
//! clipboard (OSC 52), and C1 controls (U+0080 to U+009F) do the same on
//! terminals that take them. Bidi overrides and isolates reorder what
//! follows them, so `evil\u{202e}fdp.exe` reads as `evilexe.pdf`. Each such
//! character is shown as a visible escape instead (`\x1b`, `\u{202e}`), so
//! nothing is hidden and nothing acts; everything else is left as it is.
//! `mail read --raw` prints without this.

use std::borrow::Cow;
use std::fmt::Write as _;

/// A one-line field (a subject, a sender, a name): every control character
/// is escaped, newlines and tabs included.
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// A body: newlines and tabs stay, CRLF becomes LF, every other control
/// character (a lone CR included) is escaped.
pub fn block(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, multiline: bool) -> Cow<'_, str> {
    let kept = |c: char| !acts(c) || (multiline && matches!(c, '\n' | '\t'));
    if text.chars().all(kept) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if multiline && c == '\r' && chars.peek() == Some(&'\n') {
            continue;
        }
        if kept(c) {
            out.push(c);
        } else if u32::from(c) <= 0xff {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
    Cow::Owned(out)
}

/// Whether a terminal would act on `c` rather than show it: C0 controls,
/// DEL, C1 controls, and the bidi embeddings, overrides and isolates.
pub fn acts(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_untouched() {
        for text in ["", "Welcome to Example", "Grüße, 日本語, עברית", "a  b"] {
            assert!(matches!(line(text), Cow::Borrowed(t) if t == text));
            assert!(matches!(block(text), Cow::Borrowed(t) if t == text));
        }
        assert!(matches!(block("a\n\tb\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn escape_sequences_are_shown_not_run() {
        // CSI (clear screen, cursor home), OSC 0 (title), OSC 52
        // (clipboard), BEL.
        assert_eq!(
            line("Hi\u{1b}[2J\u{1b}[H\u{1b}]0;pwned\u{7}\u{1b}]52;c;cm0=\u{7}"),
            "Hi\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07\\x1b]52;c;cm0=\\x07"
        );
        // C1: CSI, OSC and ST as single characters; DEL; NUL.
        assert_eq!(
            line("a\u{9b}31m\u{9d}8;;x\u{9c}\u{7f}\0"),
            "a\\x9b31m\\x9d8;;x\\x9c\\x7f\\x00"
        );
        // Bidi overrides and isolates.
        assert_eq!(
            line("invoice\u{202e}fdp.exe \u{2066}x\u{2069}"),
            "invoice\\u{202e}fdp.exe \\u{2066}x\\u{2069}"
        );
    }

    #[test]
    fn one_line_fields_keep_to_one_line() {
        assert_eq!(line("a\nb\r\nc\td"), "a\\x0ab\\x0d\\x0ac\\x09d");
    }

    #[test]
    fn bodies_keep_newlines_and_tabs_only() {
        assert_eq!(
            block("one\r\ntwo\tcols\n\u{1b}[1Athree\rover"),
            "one\ntwo\tcols\n\\x1b[1Athree\\x0dover"
        );
        let escaped = block("x\u{1b}]52;c;Y\u{7}\u{9b}2J\u{202e}\u{0}\u{7f}\r");
        assert!(
            escaped
                .chars()
                .all(|c| !c.is_control() && !('\u{202a}'..='\u{202e}').contains(&c)),
            "{escaped:?}"
        );
    }
}
