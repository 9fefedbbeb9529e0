//! Reading the recovery phrase for `sealpost login`.
//!
//! Sources, first match wins: the `SEALPOST_PHRASE` environment variable; a
//! prompt without echo when stdin is a terminal; otherwise stdin, read to its
//! end. The phrase is only ever held in memory.

use std::io::{self, IsTerminal, Read};

use anyhow::{Context, Result, bail};
use sealpost_seal::RecoveryPhrase;

/// The environment variable `login` reads the phrase from.
pub const PHRASE_ENV: &str = "SEALPOST_PHRASE";

/// More than any 12-word phrase with generous whitespace; stops a mistaken
/// pipe from filling memory.
const MAX_STDIN: u64 = 4096;

/// Where the phrase comes from.
pub enum Source<R, P> {
    /// The value of `SEALPOST_PHRASE`.
    Env(String),
    /// Ask on the terminal, without echo.
    Prompt(P),
    /// Read from a non-terminal stdin.
    Reader(R),
}

/// The phrase from the process's environment, terminal or stdin.
pub fn read_from_process() -> Result<RecoveryPhrase> {
    let stdin = io::stdin();
    let source = match std::env::var(PHRASE_ENV) {
        Ok(value) if !value.trim().is_empty() => Source::Env(value),
        _ if stdin.is_terminal() => {
            Source::Prompt(|| rpassword::prompt_password("Recovery phrase (12 words, not shown): "))
        }
        _ => Source::Reader(stdin.lock()),
    };
    read_phrase(source)
}

/// The phrase from `source`, parsed. Error messages never repeat the words.
pub fn read_phrase<R, P>(source: Source<R, P>) -> Result<RecoveryPhrase>
where
    R: Read,
    P: FnOnce() -> io::Result<String>,
{
    let (text, origin) = match source {
        Source::Env(value) => (value, PHRASE_ENV),
        Source::Prompt(prompt) => (prompt().context("cannot read the phrase")?, "the prompt"),
        Source::Reader(reader) => {
            let mut text = String::new();
            reader
                .take(MAX_STDIN)
                .read_to_string(&mut text)
                .context("cannot read the phrase from stdin")?;
            (text, "stdin")
        }
    };
    if text.trim().is_empty() {
        bail!(
            "no recovery phrase given: set {PHRASE_ENV}, type it at the prompt or pipe it to stdin"
        );
    }
    RecoveryPhrase::parse(&text).with_context(|| format!("the phrase from {origin} was refused"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PHRASE: &str = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";

    type NoPrompt = fn() -> io::Result<String>;

    #[test]
    fn env_value_is_used() {
        let phrase = read_phrase::<&[u8], NoPrompt>(Source::Env(format!("  {PHRASE}\n"))).unwrap();
        assert_eq!(phrase.words().as_str(), PHRASE);
    }

    #[test]
    fn stdin_is_read_to_the_end_across_lines() {
        let input = PHRASE.replacen(' ', "\n", 5).to_uppercase() + "\n";
        let phrase = read_phrase::<_, NoPrompt>(Source::Reader(input.as_bytes())).unwrap();
        assert_eq!(phrase.words().as_str(), PHRASE);
    }

    #[test]
    fn prompt_answer_is_used() {
        let phrase = read_phrase::<&[u8], _>(Source::Prompt(|| Ok(PHRASE.to_owned()))).unwrap();
        assert_eq!(phrase.words().as_str(), PHRASE);
    }

    #[test]
    fn empty_input_is_explained() {
        let err = read_phrase::<_, NoPrompt>(Source::Reader(&b"  \n"[..])).unwrap_err();
        assert!(format!("{err:#}").contains(PHRASE_ENV), "{err:#}");
    }

    #[test]
    fn refused_phrase_does_not_echo_words() {
        let wrong = PHRASE.replace("about", "abandon");
        let err = read_phrase::<&[u8], NoPrompt>(Source::Env(wrong)).unwrap_err();
        let shown = format!("{err:#}");
        assert!(shown.contains(PHRASE_ENV), "{shown}");
        assert!(shown.contains("checksum"), "{shown}");
        assert!(!shown.contains("abandon"), "{shown}");
    }

    #[test]
    fn oversized_stdin_is_cut_and_refused() {
        let huge = "abandon ".repeat(10_000);
        assert!(read_phrase::<_, NoPrompt>(Source::Reader(huge.as_bytes())).is_err());
    }
}
