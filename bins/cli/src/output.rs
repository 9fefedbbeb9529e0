//! Writing the CLI's output without panicking.
//!
//! `println!` panics when stdout is gone (`sealpost mail list ... | head -1`
//! closes it early: "failed printing to stdout: Broken pipe", exit 101).
//! Here a closed pipe is no failure: the reader had what it wanted. Output
//! stops at once, the command still finishes what it started (an `inbox
//! assign` still sends the device its keys, a shown message is still marked
//! read) and `sealpost` exits as it would have, 0 on success. Any other
//! failure to write (a full disk) also stops the output and is reported
//! when the command ends, with exit status 1. Writing to stderr never fails
//! a command.

use std::fmt;
use std::io::{self, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Prints a line to stdout; see the module documentation.
macro_rules! outln {
    () => {
        $crate::output::stdout_fmt(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::stdout_fmt(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Prints a line to stderr, ignoring a stderr that is gone.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::stderr_fmt(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Set once a write to stdout failed: nothing more is written.
static STDOUT_DONE: AtomicBool = AtomicBool::new(false);
/// The first failure other than a closed pipe, for `main` to report.
static FAILURE: Mutex<Option<io::Error>> = Mutex::new(None);

pub fn stdout_fmt(args: fmt::Arguments<'_>) {
    write_stdout(|out| out.write_fmt(args));
}

/// Writes `bytes` to stdout as they are, in one go.
pub fn stdout_bytes(bytes: &[u8]) {
    write_stdout(|out| out.write_all(bytes).and_then(|()| out.flush()));
}

pub fn stderr_fmt(args: fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_fmt(args);
}

/// Whether stdout stopped taking output: commands that page through a list
/// stop fetching.
pub fn stdout_closed() -> bool {
    STDOUT_DONE.load(Ordering::Relaxed)
}

/// Flushes stdout; the first failure to write other than a closed pipe.
pub fn finish() -> Option<io::Error> {
    write_stdout(Write::flush);
    FAILURE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
}

fn write_stdout(write: impl FnOnce(&mut io::StdoutLock<'static>) -> io::Result<()>) {
    if stdout_closed() {
        return;
    }
    if let Err(err) = write(&mut io::stdout().lock()) {
        STDOUT_DONE.store(true, Ordering::Relaxed);
        if err.kind() != io::ErrorKind::BrokenPipe {
            FAILURE
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get_or_insert(err);
        }
    }
}
