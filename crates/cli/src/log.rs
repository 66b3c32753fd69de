//! The one place where the command's logger is set up: the libraries
//! (exporter, push) emit `tracing` events, and this module writes them to
//! standard error as logfmt or JSON lines, as Prometheus exporters do
//! (`--log.level`, `--log.format`).

use std::fmt::{self, Write as _};

use clap::ValueEnum;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The least severe events written.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

/// How each event is written: one line either way.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    /// `ts=… level=info msg="…"`.
    Logfmt,
    /// `{"timestamp":"…","level":"INFO","message":"…",…}`.
    Json,
}

/// `--log.level` and `--log.format`, as Prometheus exporters name them.
#[derive(Debug, Clone, clap::Args)]
pub struct LogArgs {
    /// The least severe messages logged.
    #[arg(
        long = "log.level",
        value_enum,
        default_value = "info",
        value_name = "LEVEL"
    )]
    pub level: LogLevel,
    /// The format of the log lines on standard error.
    #[arg(
        long = "log.format",
        value_enum,
        default_value = "logfmt",
        value_name = "FORMAT"
    )]
    pub format: LogFormat,
}

impl Default for LogArgs {
    fn default() -> LogArgs {
        LogArgs {
            level: LogLevel::Info,
            format: LogFormat::Logfmt,
        }
    }
}

impl LogArgs {
    /// The flags that give a child process the same settings.
    pub fn to_args(&self) -> [String; 4] {
        let name = |v: Option<clap::builder::PossibleValue>| {
            // UNWRAP: no value is skipped (#[value(skip)]).
            v.expect("every value has a name").get_name().to_string()
        };
        [
            "--log.level".into(),
            name(self.level.to_possible_value()),
            "--log.format".into(),
            name(self.format.to_possible_value()),
        ]
    }
}

/// Installs the logger for the rest of the process.
pub fn init(args: &LogArgs) {
    let level = match args.level {
        LogLevel::Debug => Level::DEBUG,
        LogLevel::Info => Level::INFO,
        LogLevel::Warn => Level::WARN,
        LogLevel::Error => Level::ERROR,
    };
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    // Another logger (a second call) keeps the first one: no error.
    let _ = match args.format {
        LogFormat::Logfmt => builder.event_format(Logfmt).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
}

/// Writes an event as one logfmt line: `ts`, `level`, `target`, `msg`,
/// then the event's other fields.
struct Logfmt;

impl<S, N> FormatEvent<S, N> for Logfmt
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        w.write_str("ts=")?;
        SystemTime.format_time(&mut w)?;
        let level = meta.level().as_str().to_ascii_lowercase();
        write!(w, " level={level} target={}", meta.target())?;
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        writeln!(w, "{}", fields.0)
    }
}

/// The event's fields as ` key=value` pairs; the message is `msg`.
struct Fields(String);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        let key = match field.name() {
            "message" => "msg",
            name => name,
        };
        let _ = write!(self.0, " {key}=");
        quote(&mut self.0, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // A message's Debug is its text; other values as they print.
        self.record_str(field, &format!("{value:?}"));
    }
}

/// Appends `value`, in double quotes (with `\"`, `\\` and `\n` escaped)
/// if it is empty or holds a space, a quote, `=` or a control character.
fn quote(out: &mut String, value: &str) {
    let plain = !value.is_empty()
        && !value
            .chars()
            .any(|c| c == ' ' || c == '"' || c == '=' || c == '\\' || c.is_control());
    if plain {
        out.push_str(value);
        return;
    }
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::quote;

    fn quoted(value: &str) -> String {
        let mut out = String::new();
        quote(&mut out, value);
        out
    }

    #[test]
    fn logfmt_values_are_quoted_only_when_needed() {
        assert_eq!(quoted("plain"), "plain");
        assert_eq!(quoted(""), "\"\"");
        assert_eq!(
            quoted("serving http://127.0.0.1:9816/metrics"),
            "\"serving http://127.0.0.1:9816/metrics\""
        );
        assert_eq!(quoted("a=b"), "\"a=b\"");
        assert_eq!(quoted("say \"hi\"\n"), "\"say \\\"hi\\\"\\n\"");
        assert_eq!(quoted("C:\\x"), "\"C:\\\\x\"");
    }
}
