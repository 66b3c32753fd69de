//! Standard output without panics: `println!` panics when stdout is a
//! pipe whose reader has gone (`shmetrics inspect | head`). Every command
//! prints through [`outln!`] instead, which returns the write's error; a
//! closed pipe ([`is_broken_pipe`]) then ends the command quietly with
//! status 0, as ripgrep does.

use std::io::{self, Write};

/// Writes formatted text to standard output (locked, so lines are not
/// interleaved with other threads), returning the write's error.
pub(crate) fn print(args: std::fmt::Arguments<'_>) -> io::Result<()> {
    io::stdout().lock().write_fmt(args)
}

/// Writes bytes to standard output and flushes them.
pub(crate) fn write(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// `println!` that returns an `io::Result` instead of panicking.
macro_rules! outln {
    () => {
        $crate::out::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// Whether an error is (or wraps) a write to a closed pipe.
pub(crate) fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(e) = cur {
        if e.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        cur = e.source();
    }
    false
}
