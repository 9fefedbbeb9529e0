//! What `mail read` and `mail wait` take out of a decrypted message: the
//! text of an HTML body, one-time codes and links (`--codes`).
//!
//! Heuristics, on purpose simple:
//! - HTML becomes text by dropping comments, `script`, `style` and `head`,
//!   turning block ends and `<br>` into line breaks, removing the remaining
//!   tags and decoding entities.
//! - A code is a 4 to 8 digit number (or two groups of three digits, printed
//!   joined) that is not part of a date, time, decimal, amount, phone
//!   number, order number (`#1234`) or link, or an upper-case code of letters
//!   and digits (`AB12CD`, `X7K9-P2Q4`, `G-123456`) close to a word such as
//!   "code", "verification", "OTP" or "one-time". Codes close to such a word
//!   come first; a lone 4-digit year (1900 to 2099) far from one is skipped.
//! - A link is an `http`/`https` URL in the text, an `<a href>` of the HTML,
//!   or a URL in its text.
//!
//! Subject, text body and HTML body are searched in that order; everything
//! is listed once, in the order found.

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// Compiles one of this module's constant patterns; the tests compile each.
#[allow(
    clippy::expect_used,
    reason = "constant patterns, every one compiled by the tests"
)]
fn pattern(text: &str) -> Regex {
    Regex::new(text).expect("a valid constant pattern")
}

static COMMENT: LazyLock<Regex> = LazyLock::new(|| pattern(r"(?s)<!--.*?-->"));
static HIDDEN: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"(?is)<(?:script|style|head)\b[^>]*>.*?</(?:script|style|head)\s*>"));
static BREAK: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"(?i)<br\b[^>]*>|</?(?:p|div|tr|li|ul|ol|table|h[1-6]|blockquote|section|article|header|footer|hr)\b[^>]*>",
    )
});
static CELL_END: LazyLock<Regex> = LazyLock::new(|| pattern(r"(?i)</t[dh]\s*>"));
static TAG: LazyLock<Regex> = LazyLock::new(|| pattern(r"(?s)<[^>]*>"));
static ENTITY: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});"));
static SPACES: LazyLock<Regex> = LazyLock::new(|| pattern(r"[ \t\u{a0}]+"));
static BLANK_LINES: LazyLock<Regex> = LazyLock::new(|| pattern(r"\n{3,}"));

// A link ends at a space, a control character or a character URLs escape.
static URL: LazyLock<Regex> =
    LazyLock::new(|| pattern(r#"(?i)\bhttps?://[^\s\p{Cc}<>"'`{}|\\^\[\]]+"#));
static HREF: LazyLock<Regex> =
    LazyLock::new(|| pattern(r#"(?is)<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))"#));

static KEYWORD: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"(?i)\b(?:codes?|passcodes?|verification|verify|otp|one[- ]?time|pin|2fa|two[- ]factor|authentication|confirmation|confirm|security)\b",
    )
});
static NUMBER: LazyLock<Regex> = LazyLock::new(|| pattern(r"\b(?:\d{4,8}|\d{3}[- ]\d{3})\b"));
static ALPHANUMERIC: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"\b[A-Z0-9]{1,8}(?:-[A-Z0-9]{1,8}){0,3}\b"));

/// How far (in bytes) a code may follow a keyword, or precede one, to count
/// as close to it.
const AFTER_KEYWORD: usize = 80;
const BEFORE_KEYWORD: usize = 40;

/// The readable text of an HTML body.
pub fn html_to_text(html: &str) -> String {
    let text = COMMENT.replace_all(html, "");
    let text = HIDDEN.replace_all(&text, "");
    let text = BREAK.replace_all(&text, "\n");
    let text = CELL_END.replace_all(&text, " ");
    let text = TAG.replace_all(&text, "");
    let text = decode_entities(&text);
    let text = SPACES.replace_all(&text, " ");
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    BLANK_LINES
        .replace_all(&lines.join("\n"), "\n\n")
        .trim()
        .to_owned()
}

/// Decodes numeric entities and the named ones mail commonly uses; others
/// stay as they are.
fn decode_entities(text: &str) -> String {
    ENTITY
        .replace_all(text, |caps: &Captures<'_>| {
            let name = &caps[1];
            let decoded =
                if let Some(hex) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
                    u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
                } else if let Some(decimal) = name.strip_prefix('#') {
                    decimal.parse::<u32>().ok().and_then(char::from_u32)
                } else {
                    match name {
                        "amp" => Some('&'),
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "quot" => Some('"'),
                        "apos" => Some('\''),
                        "nbsp" => Some(' '),
                        "ndash" => Some('–'),
                        "mdash" => Some('—'),
                        "hellip" => Some('…'),
                        "rsquo" => Some('’'),
                        "lsquo" => Some('‘'),
                        "rdquo" => Some('”'),
                        "ldquo" => Some('“'),
                        "copy" => Some('©'),
                        _ => None,
                    }
                };
            decoded.map_or_else(|| caps[0].to_owned(), String::from)
        })
        .into_owned()
}

/// The one-time codes and links of a message.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Codes close to a keyword first, then the others.
    pub codes: Vec<String>,
    pub links: Vec<String>,
}

/// Searches the subject, the text body and the HTML body.
pub fn codes_and_links(subject: Option<&str>, text: Option<&str>, html: Option<&str>) -> Found {
    let html_text = html.map(html_to_text);
    let sources: Vec<&str> = [subject, text, html_text.as_deref()]
        .into_iter()
        .flatten()
        .collect();

    let mut close = Vec::new();
    let mut far = Vec::new();
    for source in &sources {
        for (code, near) in codes_in(source) {
            if near {
                close.push(code);
            } else {
                far.push(code);
            }
        }
    }
    let mut codes = Vec::new();
    for code in close.into_iter().chain(far) {
        push_once(&mut codes, code);
    }

    let mut links = Vec::new();
    for link in text.into_iter().flat_map(urls_in) {
        push_once(&mut links, link);
    }
    for link in html.into_iter().flat_map(hrefs_in) {
        push_once(&mut links, link);
    }
    for link in html_text.as_deref().into_iter().flat_map(urls_in) {
        push_once(&mut links, link);
    }
    Found { codes, links }
}

fn push_once(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// Every URL in `text`, without the punctuation that ends a sentence.
fn urls_in(text: &str) -> Vec<String> {
    URL.find_iter(text)
        .map(|m| trim_url(m.as_str()).to_owned())
        .filter(|url| url.len() > "https://".len())
        .collect()
}

/// Drops trailing sentence punctuation, and a closing parenthesis the URL
/// did not open.
fn trim_url(mut url: &str) -> &str {
    loop {
        let trimmed = url.trim_end_matches(['.', ',', ';', ':', '!', '?', '*']);
        let trimmed = match trimmed.strip_suffix(')') {
            Some(inner) if inner.matches('(').count() < inner.matches(')').count() + 1 => inner,
            _ => trimmed,
        };
        if trimmed.len() == url.len() {
            return url;
        }
        url = trimmed;
    }
}

/// The `http`/`https` targets of the HTML's links.
fn hrefs_in(html: &str) -> Vec<String> {
    HREF.captures_iter(html)
        .filter_map(|caps| caps.get(1).or(caps.get(2)).or(caps.get(3)))
        .map(|m| decode_entities(m.as_str().trim()))
        .filter(|url| {
            let lower = url.to_ascii_lowercase();
            (lower.starts_with("http://") || lower.starts_with("https://"))
                && url.len() > "https://".len()
        })
        .collect()
}

/// The codes in one text, each with whether it is close to a keyword.
fn codes_in(source: &str) -> Vec<(String, bool)> {
    // Links hold numbers too (ids, tracking); blank them out, keeping the
    // offsets.
    let text = URL.replace_all(source, |caps: &Captures<'_>| " ".repeat(caps[0].len()));
    let keywords: Vec<(usize, usize)> = KEYWORD
        .find_iter(&text)
        .map(|m| (m.start(), m.end()))
        .collect();
    let near = |start: usize, end: usize| {
        keywords.iter().any(|&(k_start, k_end)| {
            (start >= k_end && start - k_end <= AFTER_KEYWORD)
                || (k_start >= end && k_start - end <= BEFORE_KEYWORD)
        })
    };

    let mut found: Vec<(usize, String, bool)> = Vec::new();
    for m in NUMBER.find_iter(&text) {
        if !stands_alone(&text, m.start(), m.end()) {
            continue;
        }
        let close = near(m.start(), m.end());
        let digits: String = m.as_str().chars().filter(char::is_ascii_digit).collect();
        if !close && is_year(&digits) {
            continue;
        }
        found.push((m.start(), digits, close));
    }
    for m in ALPHANUMERIC.find_iter(&text) {
        let code = m.as_str();
        let letters = code.chars().filter(char::is_ascii_uppercase).count();
        let digits = code.chars().filter(char::is_ascii_digit).count();
        let plain = code.chars().filter(char::is_ascii_alphanumeric).count();
        if letters == 0 || digits == 0 || !(4..=16).contains(&plain) {
            continue;
        }
        if !stands_alone(&text, m.start(), m.end()) || !near(m.start(), m.end()) {
            continue;
        }
        found.push((m.start(), code.to_owned(), true));
    }
    found.sort_by_key(|(at, _, _)| *at);
    found
        .into_iter()
        .map(|(_, code, close)| (code, close))
        .collect()
}

/// A 4-digit number from 1900 to 2099.
fn is_year(digits: &str) -> bool {
    digits.len() == 4 && (digits.starts_with("19") || digits.starts_with("20"))
}

/// Whether `text[start..end]` is a value of its own: not continued by
/// another number through `-`, `/`, `.`, `:` or `,` (dates, times,
/// decimals, phone numbers), not an amount, percentage or `#` number.
fn stands_alone(text: &str, start: usize, end: usize) -> bool {
    let mut before = text[..start].chars().rev();
    let mut after = text[end..].chars();
    let joins = |c: Option<char>| matches!(c, Some('-' | '/' | '.' | ':' | ',' | '_'));
    let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
    let (prev, prev2) = (before.next(), before.next());
    let (next, next2) = (after.next(), after.next());
    if (joins(prev) && digit(prev2)) || (joins(next) && digit(next2)) {
        return false;
    }
    let marks = |c: Option<char>| matches!(c, Some('$' | '€' | '£' | '¥' | '#' | '+' | '%'));
    // "-123456" after a word is part of it (`ORDER-123456`), after a space a
    // list dash.
    let word_before = matches!(prev, Some('-' | '_')) && prev2.is_some_and(char::is_alphanumeric);
    !(marks(prev) || marks(next) || word_before)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(text: &str) -> Vec<String> {
        codes_and_links(None, Some(text), None).codes
    }

    #[test]
    fn every_pattern_compiles() {
        for re in [
            &COMMENT,
            &HIDDEN,
            &BREAK,
            &CELL_END,
            &TAG,
            &ENTITY,
            &SPACES,
            &BLANK_LINES,
            &URL,
            &HREF,
            &KEYWORD,
            &NUMBER,
            &ALPHANUMERIC,
        ] {
            LazyLock::force(re);
        }
    }

    #[test]
    fn html_becomes_readable_text() {
        let html = "<html><head><title>T</title><style>p{color:red}</style></head><body>\
                    <!-- hidden --><p>Hello&nbsp;<b>there</b>,</p><p>Your code:<br>482913</p>\
                    <script>var x = 1;</script><table><tr><td>a</td><td>b</td></tr></table>\
                    <p>&lt;ok&gt; &amp; &#8364;5 &#x41; &unknown;</p></body></html>";
        assert_eq!(
            html_to_text(html),
            "Hello there,\n\nYour code:\n482913\n\na b\n\n<ok> & €5 A &unknown;"
        );
    }

    #[test]
    fn numeric_codes_are_found_and_ordered_by_closeness() {
        assert_eq!(codes("Your code is 482913."), vec!["482913"]);
        assert_eq!(codes("482913 is your verification code"), vec!["482913"]);
        assert_eq!(codes("Use 1234 to log in"), vec!["1234"]);
        assert_eq!(codes("Your code: 123-456"), vec!["123456"]);
        assert_eq!(codes("Code:99887766"), vec!["99887766"]);
        // Order 55555 is far from the keyword; the code comes first.
        let text = format!(
            "Thanks for order 55555.{}\nYour one-time passcode is 7391.",
            " ".repeat(100)
        );
        assert_eq!(codes(&text), vec!["7391", "55555"]);
    }

    #[test]
    fn numbers_that_are_not_codes_are_skipped() {
        for text in [
            "Sent on 2026-11-22 at 12:30:15",
            "Total $1234 or 1234€ or 15,000.00 or 99.5%",
            "Call +1 555-123-4567 or 555.123.4567",
            "Order #123456 shipped",
            "Copyright 2026 Example Inc.",
            "Version 1.2345",
            "Visit https://example.com/verify?code=482913 now",
            "12345678901",
            "ORDER-123456",
        ] {
            assert_eq!(codes(text), Vec::<String>::new(), "{text}");
        }
        // A year-like number close to a keyword may be a code.
        assert_eq!(codes("Your PIN is 2019"), vec!["2019"]);
    }

    #[test]
    fn alphanumeric_codes_need_a_keyword_nearby() {
        assert_eq!(codes("Your verification code: AB12CD"), vec!["AB12CD"]);
        assert_eq!(codes("OTP X7K9-P2Q4 expires soon"), vec!["X7K9-P2Q4"]);
        assert_eq!(
            codes("G-482913 is your Google verification code"),
            vec!["G-482913"]
        );
        assert_eq!(codes("Flight AB12CD departs"), Vec::<String>::new());
        // Words without digits, or lower case, are not codes.
        assert_eq!(codes("Your CODE is READY"), Vec::<String>::new());
        assert_eq!(codes("Enter code abc123"), Vec::<String>::new());
    }

    #[test]
    fn links_come_from_text_hrefs_and_html_text_once_each() {
        let text =
            "Confirm at https://example.com/confirm?t=abc&u=1. Or (see https://example.com/help).";
        let html = "<p><a href=\"https://example.com/confirm?t=abc&amp;u=1\">Confirm</a> \
                    <a href='http://example.com/x'>x</a> <a href=mailto:a@b.c>mail</a> \
                    <a href=https://example.com/bare>b</a> <img src=\"https://track.example.com/p.gif\">\
                    Plain https://example.com/plain, end</p>";
        let found = codes_and_links(None, Some(text), Some(html));
        assert_eq!(
            found.links,
            vec![
                "https://example.com/confirm?t=abc&u=1",
                "https://example.com/help",
                "http://example.com/x",
                "https://example.com/bare",
                "https://example.com/plain",
            ]
        );
        assert_eq!(
            urls_in("see https://example.com/x\u{1b}[8m and https://example.com/\u{9b}y"),
            vec!["https://example.com/x", "https://example.com/"]
        );
        assert_eq!(
            trim_url("https://en.wikipedia.org/wiki/Rust_(programming_language)"),
            "https://en.wikipedia.org/wiki/Rust_(programming_language)"
        );
    }

    #[test]
    fn subject_and_html_are_searched_and_duplicates_dropped() {
        let found = codes_and_links(
            Some("482913 is your code"),
            None,
            Some("<p>Your code is <b>482913</b></p><p>Ref 7777</p>"),
        );
        assert_eq!(found.codes, vec!["482913", "7777"]);
        assert!(found.links.is_empty());
        assert_eq!(codes_and_links(None, None, None), Found::default());
    }

    /// The cases of `tests/data/codes.json`, which the TypeScript SDK's port
    /// (`web/packages/sdk/src/mailtext.ts`) checks too: both must find the
    /// same codes and links. This module is the reference.
    #[test]
    fn shared_codes_fixture_matches() {
        let file: serde_json::Value =
            serde_json::from_str(include_str!("../tests/data/codes.json")).unwrap();
        let cases = file.as_array().unwrap();
        assert!(cases.len() >= 30, "the fixture has {} cases", cases.len());
        let list = |value: &serde_json::Value| -> Vec<String> {
            value
                .as_array()
                .unwrap()
                .iter()
                .map(|item| item.as_str().unwrap().to_owned())
                .collect()
        };
        for case in cases {
            let name = case["name"].as_str().unwrap();
            let found = codes_and_links(
                case["subject"].as_str(),
                case["text"].as_str(),
                case["html"].as_str(),
            );
            assert_eq!(found.codes, list(&case["codes"]), "codes of {name}");
            assert_eq!(found.links, list(&case["links"]), "links of {name}");
        }
    }
}
