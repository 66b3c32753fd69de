//! The `shmetrics` command.

#![forbid(unsafe_code)]

mod demo;
mod log;
mod otlp;
mod out;
mod security;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use shmetrics_core::{Options, Store};
use shmetrics_expo::Format;

use crate::out::outln;

#[derive(Parser, Debug)]
#[command(
    name = "shmetrics",
    version,
    propagate_version = true,
    about = "Metrics for multi-process servers, in shared memory"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run several worker processes that record web-request metrics into
    /// one store, restart some of them, and show the merged result.
    Demo(demo::DemoArgs),
    /// Serve a store to Prometheus: /metrics, /healthz, /-/healthy,
    /// /-/ready and a landing page with the store's status at /. Maps the store read-only. The store need not exist yet: until
    /// it does, /healthz answers 503 and /metrics has only the exporter's
    /// own metrics.
    Serve {
        /// The store file (it may appear after the exporter starts).
        #[arg(long, env = "SHMETRICS_STORE")]
        store: PathBuf,
        /// The address to listen on (loopback by default). `--listen` is
        /// the old name.
        #[arg(
            long = "web.listen-address",
            visible_alias = "listen",
            value_name = "ADDRESS",
            default_value = shmetrics_exporter::DEFAULT_LISTEN
        )]
        listen: std::net::SocketAddr,
        /// The path under which the metrics are served.
        #[arg(
            long = "web.telemetry-path",
            value_name = "PATH",
            default_value = shmetrics_exporter::DEFAULT_TELEMETRY_PATH,
            value_parser = telemetry_path
        )]
        telemetry_path: String,
        /// Also serve the exporter's own metrics (`shmetrics_*`) on the
        /// telemetry path. Off by default, so that the page holds only the
        /// applications' metrics; they are always on /exporter-metrics.
        #[arg(long = "web.exporter-metrics")]
        exporter_metrics: bool,
        /// Add each family's series count and overflows to the exporter's
        /// own metrics (`shmetrics_family_series{family="..."}`,
        /// `shmetrics_family_overflows_total`): a series per family, and a
        /// read of the store for each request of /exporter-metrics.
        #[arg(long = "web.family-metrics")]
        family_metrics: bool,
        /// Connections open at once. At the limit, the oldest idle
        /// connection (no request head yet) is closed to make room; a new
        /// one is refused only when every place serves a request.
        /// `--max-connections` is the old name.
        #[arg(
            long = "web.max-connections",
            visible_alias = "max-connections",
            value_name = "N",
            default_value_t = shmetrics_exporter::DEFAULT_MAX_CONNECTIONS
        )]
        max_connections: usize,
        /// Seconds a client has to send its request head.
        #[arg(long, default_value_t = 5.0)]
        header_timeout: f64,
        /// Seconds a request may take, from accept to the last byte sent
        /// (each connection serves one request).
        #[arg(long, default_value_t = 30.0)]
        request_timeout: f64,
        /// A web configuration file in Prometheus exporter-toolkit's
        /// format: TLS (tls_server_config), client certificates, basic
        /// auth (basic_auth_users, bcrypt) and http_server_config.headers.
        /// See docs/exporter.md.
        #[arg(long = "web.config.file", value_name = "FILE")]
        web_config_file: Option<PathBuf>,
        #[command(flatten)]
        expect: ExpectArgs,
        /// The exporter's nice value, 0 to 19 (default 10): on a host whose
        /// cores the workers keep busy, the kernel then runs a worker
        /// before a render, so a scrape costs the workers as little
        /// latency as it can. 0 leaves the priority as it is.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(i32).range(0..=19))]
        nice: i32,
        /// The exporter's scheduler slice in microseconds, 100 to 100000
        /// (default 100), on Linux 6.12 and later: once a render runs, a
        /// worker that wakes gets the core back within this time, instead
        /// of the kernel's default slice (0.75 ms and more). 0 leaves the
        /// kernel's default. Older kernels ignore it.
        #[arg(long, default_value_t = 100, value_parser = slice_us)]
        sched_slice_us: u64,
        /// Stop (as on SIGTERM) when the parent process dies: for a parent
        /// that starts the exporter as its child, as `shmetrics demo` does.
        #[arg(long, hide = true)]
        exit_with_parent: bool,
        #[command(flatten)]
        remote_write: Box<RemoteWriteArgs>,
        #[command(flatten)]
        statsd: Box<StatsdArgs>,
        #[command(flatten)]
        otlp: Box<otlp::OtlpArgs>,
        #[command(flatten)]
        log: log::LogArgs,
    },
    /// Print the store's exposition.
    Dump {
        /// The store file.
        #[arg(long, env = "SHMETRICS_STORE")]
        store: PathBuf,
        /// `prometheus` (text 0.0.4), `openmetrics`, or `protobuf`
        /// (binary: length-delimited `io.prometheus.client.MetricFamily`
        /// messages).
        #[arg(long, default_value = "prometheus")]
        format: String,
        #[command(flatten)]
        expect: ExpectArgs,
    },
    /// Print the store's capacity, fill, families and writer slots.
    Inspect {
        /// The store file.
        #[arg(long, env = "SHMETRICS_STORE")]
        store: PathBuf,
        /// List only the N families with the most series, most first, with
        /// the distinct values of each of their labels (the labels that
        /// carry their cardinality).
        #[arg(long, value_name = "N")]
        top: Option<usize>,
        #[command(flatten)]
        expect: ExpectArgs,
    },
    /// A demo worker (started by `demo`).
    #[command(hide = true)]
    DemoWorker(demo::WorkerArgs),
}

/// Whose store `serve`, `dump` and `inspect` expect (see
/// docs/exporter.md, "Security").
#[derive(clap::Args, Debug)]
struct ExpectArgs {
    /// The user (name or id) expected to own the store, when it is not
    /// this process's own user or root; another owner is refused.
    #[arg(long = "store.owner", value_name = "USER", value_parser = shmetrics_core::user_id)]
    store_owner: Option<u32>,
    /// The group (name or id) expected to own the store: a store of this
    /// group is accepted whoever owns it.
    #[arg(long = "store.group", value_name = "GROUP", value_parser = shmetrics_core::group_id)]
    store_group: Option<u32>,
}

/// Prometheus remote_write 1.0 and 2.0 (see docs/exporter.md).
#[derive(clap::Args, Debug)]
struct RemoteWriteArgs {
    /// Also push the store to this remote_write receiver (http:// or
    /// https://), e.g. http://127.0.0.1:9090/api/v1/write. Repeat for
    /// several; each gets its own queue (and the same TLS, credentials
    /// and headers).
    #[arg(long = "remote-write.url", value_name = "URL")]
    urls: Vec<String>,
    /// Seconds between pushes (a fraction is allowed).
    #[arg(long = "remote-write.interval", value_name = "SECS", default_value_t = shmetrics_push::DEFAULT_INTERVAL_SECS)]
    interval: f64,
    /// A label added to every pushed series that lacks it, such as
    /// host=web-1. Repeatable.
    #[arg(long = "remote-write.external-label", value_name = "NAME=VALUE")]
    external_labels: Vec<String>,
    /// Batches (one per push) each URL's queue holds while its receiver
    /// is slow or down; when full, the oldest is dropped and counted.
    #[arg(long = "remote-write.queue-batches", value_name = "N", default_value_t = shmetrics_push::DEFAULT_QUEUE_BATCHES)]
    queue_batches: usize,
    /// Also send histograms with native buckets as native histograms, as
    /// Prometheus's send_native_histograms does (the receiver must accept
    /// them: Prometheus with --enable-feature=native-histograms). A
    /// native-only histogram is then sent only so.
    #[arg(long = "remote-write.native-histograms")]
    native_histograms: bool,
    /// The protocol: 1.0 (every receiver takes it) or 2.0 (interned
    /// strings, each series' type, help and unit, created times and
    /// exemplars; Prometheus 3's receiver takes it).
    #[arg(
        long = "remote-write.protocol",
        value_name = "VERSION",
        default_value = "1.0"
    )]
    protocol: String,
    /// Send histograms without native buckets as custom-bucket native
    /// histograms (one sample with the bounds, as Prometheus's
    /// convert_classic_histograms_to_nhcb stores them) instead of their
    /// _bucket, _sum and _count series (the receiver must accept native
    /// histograms).
    #[arg(long = "remote-write.custom-buckets")]
    custom_buckets: bool,
    #[command(flatten)]
    security: security::RemoteWriteSecurity,
}

impl RemoteWriteArgs {
    /// The settings, or `None` without a URL.
    fn config(&self) -> Result<Option<shmetrics_push::Config>, shmetrics_push::ConfigError> {
        if self.urls.is_empty() {
            if !self.external_labels.is_empty() {
                // Still check them, so that a typo does not go unnoticed.
                shmetrics_push::ExternalLabels::parse(&self.external_labels)?;
            }
            if self.security.any() {
                return Err(shmetrics_push::ConfigError::Credentials {
                    protocol: shmetrics_push::Protocol::RemoteWrite,
                    reason: "TLS, authentication and header flags need --remote-write.url".into(),
                });
            }
            return Ok(None);
        }
        let mut config = shmetrics_push::Config::new(&self.urls)?
            .with_interval_secs(self.interval)?
            .with_queue_batches(self.queue_batches)?;
        config.external_labels = shmetrics_push::ExternalLabels::parse(&self.external_labels)?;
        config.native_histograms = self.native_histograms;
        config.version = self.protocol.parse()?;
        config.custom_buckets = self.custom_buckets;
        self.security.apply(&mut config.http)?;
        Ok(Some(config))
    }
}

/// StatsD and DogStatsD (see docs/exporter.md).
// The doc comments are `--help`'s text, where `[::1]` is an address.
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(clap::Args, Debug)]
struct StatsdArgs {
    /// Also flush the store to a StatsD or DogStatsD agent: HOST:PORT
    /// (UDP; [::1]:8125 for IPv6) or unix:///path (a Unix datagram
    /// socket, as DogStatsD's dogstatsd_socket).
    #[arg(long = "statsd.address", value_name = "ADDRESS")]
    statsd_address: Option<String>,
    /// statsd (labels folded into names; histograms as _count and _sum
    /// counters) or dogstatsd (tags; histograms as distributions).
    /// Default: statsd.
    #[arg(long = "statsd.flavor", value_name = "FLAVOR")]
    statsd_flavor: Option<String>,
    /// Seconds between flushes; must divide 10 (10, 5, 2, 1, 0.5, ...).
    /// Default: 10.
    #[arg(long = "statsd.interval", value_name = "SECS")]
    statsd_interval: Option<f64>,
    /// Most bytes in one datagram. Default: 1432.
    #[arg(long = "statsd.max-datagram", value_name = "BYTES")]
    statsd_max_datagram: Option<usize>,
    /// Put before every metric name (a `.` is added): myapp makes
    /// myapp.http_requests.
    #[arg(long = "statsd.prefix", value_name = "PREFIX")]
    statsd_prefix: Option<String>,
    /// Send a `:` in a metric name as `.` (not `_`): the Ruby StatsD
    /// facade stores `app.requests` as `app:requests`.
    #[arg(long = "statsd.colons-as-dots")]
    statsd_colons_as_dots: bool,
}

impl StatsdArgs {
    /// The settings, or `None` without an address.
    fn config(&self) -> Result<Option<shmetrics_push::statsd::Config>, shmetrics_exporter::Error> {
        use shmetrics_push::statsd::{Address, Config, Flavor};
        let Some(address) = &self.statsd_address else {
            let given = [
                ("--statsd.flavor", self.statsd_flavor.is_some()),
                ("--statsd.interval", self.statsd_interval.is_some()),
                ("--statsd.max-datagram", self.statsd_max_datagram.is_some()),
                ("--statsd.prefix", self.statsd_prefix.is_some()),
                ("--statsd.colons-as-dots", self.statsd_colons_as_dots),
            ];
            if let Some((flag, _)) = given.iter().find(|(_, set)| *set) {
                return Err(shmetrics_exporter::Error::FlagWithout {
                    flag,
                    needs: "--statsd.address",
                });
            }
            return Ok(None);
        };
        let flavor = Flavor::parse(self.statsd_flavor.as_deref().unwrap_or("statsd"))?;
        let mut config = Config::new(Address::parse(address)?, flavor)
            .with_interval_secs(
                self.statsd_interval
                    .unwrap_or(shmetrics_push::statsd::DEFAULT_INTERVAL_SECS),
            )?
            .with_max_datagram(
                self.statsd_max_datagram
                    .unwrap_or(shmetrics_push::statsd::DEFAULT_MAX_DATAGRAM),
            )?;
        if let Some(prefix) = &self.statsd_prefix {
            config = config.with_prefix(prefix)?;
        }
        Ok(Some(config.with_colons_as_dots(self.statsd_colons_as_dots)))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::DemoWorker(args) => demo::worker(args),
        Command::Serve {
            store,
            listen,
            telemetry_path,
            exporter_metrics,
            family_metrics,
            max_connections,
            header_timeout,
            request_timeout,
            web_config_file,
            expect,
            nice,
            sched_slice_us,
            exit_with_parent,
            remote_write,
            statsd,
            otlp,
            log,
        } => match (
            log::init(&log),
            web_config_file
                .map(shmetrics_exporter::WebConfig::load)
                .transpose(),
            remote_write.config(),
            statsd.config(),
            otlp.config(),
        ) {
            // The file names itself in the message.
            ((), Err(e), _, _, _) => Err(shmetrics_exporter::Error::from(e).into()),
            ((), _, Err(e), _, _) | ((), _, _, _, Err(e)) => {
                Err(shmetrics_exporter::Error::from(e).into())
            }
            ((), _, _, Err(e), _) => Err(e.into()),
            ((), Ok(web), Ok(remote_write), Ok(statsd), Ok(otlp)) => {
                if exit_with_parent && !follow_parent() {
                    return ExitCode::SUCCESS;
                }
                share_cpu(nice, sched_slice_us);
                let mut config = shmetrics_exporter::Config::new(store);
                config.web = web.map(std::sync::Arc::new);
                config.remote_write = remote_write;
                config.statsd = statsd;
                config.otlp = otlp;
                config.listen = listen;
                config.telemetry_path = telemetry_path;
                config.exporter_metrics = exporter_metrics;
                config.family_metrics = family_metrics;
                config.store_owner = expect.store_owner;
                config.store_group = expect.store_group;
                config.max_connections = max_connections.max(1);
                config.header_timeout = std::time::Duration::from_secs_f64(header_timeout.max(0.1));
                config.request_timeout =
                    std::time::Duration::from_secs_f64(request_timeout.max(0.1));
                // Flags that cannot be used are printed as usage errors
                // (above); a failure once serving is logged.
                if let Err(e) = shmetrics_exporter::serve(config) {
                    tracing::error!("{e}");
                    return ExitCode::FAILURE;
                }
                Ok(())
            }
        },
        Command::Dump {
            store,
            format,
            expect,
        } => dump(&store, &format, &expect),
        Command::Inspect { store, top, expect } => inspect(&store, top, &expect),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of a pipe has gone (`| head`): not a failure.
        Err(e) if out::is_broken_pipe(&*e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shmetrics: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--web.telemetry-path`, checked.
fn telemetry_path(s: &str) -> Result<String, String> {
    shmetrics_exporter::check_telemetry_path(s)
        .map(|()| s.to_string())
        .map_err(str::to_string)
}

/// Asks for SIGTERM when the parent process dies; `false` if it has died
/// already.
fn follow_parent() -> bool {
    let parent = std::os::unix::process::parent_id();
    let signal = Some(rustix::process::Signal::TERM);
    if let Err(e) = rustix::process::set_parent_process_death_signal(signal) {
        tracing::warn!("cannot follow the parent process: {e}");
    }
    // The parent may have died before the call.
    std::os::unix::process::parent_id() == parent
}

/// Sets the nice value (0 leaves it) and the scheduler slice (0 leaves
/// it). Call before any thread starts: threads inherit both.
fn share_cpu(nice: i32, slice_us: u64) {
    let slice = (slice_us > 0).then(|| std::time::Duration::from_micros(slice_us));
    if let Err(e) = shmetrics_core::share_cpu(nice, slice) {
        tracing::warn!(
            "cannot set the nice value to {nice} and the scheduler slice to {slice_us} µs: {e}"
        );
    }
}

/// `--sched-slice-us`: 0, or what the kernel takes (100 µs to 100 ms).
fn slice_us(s: &str) -> Result<u64, String> {
    let us: u64 = s.parse().map_err(|e| format!("{e}"))?;
    if us == 0 || (100..=100_000).contains(&us) {
        Ok(us)
    } else {
        Err(format!("{us} is not 0 or within 100..=100000"))
    }
}

type AnyResult = Result<(), Box<dyn std::error::Error>>;

/// Opens the store read-only, with the owner and group it may have
/// besides this user's.
fn open_read_only(path: &PathBuf, expect: &ExpectArgs) -> Result<Store, shmetrics_core::Error> {
    let options = Options {
        owner: expect.store_owner,
        group: expect.store_group,
        ..Options::reader()
    };
    Store::open(path, &options)
}

fn dump(path: &PathBuf, format: &str, expect: &ExpectArgs) -> AnyResult {
    let format = Format::parse(format).ok_or_else(|| {
        format!("unknown format {format:?}: use prometheus, openmetrics or protobuf")
    })?;
    let store = open_read_only(path, expect)?;
    let snap = store.snapshot()?;
    let mut out = Vec::new();
    shmetrics_expo::encode(&snap, format, &mut out);
    out::write(&out)?;
    Ok(())
}

/// Every family, in registration order.
fn inspect_families(snap: &shmetrics_core::Snapshot) -> AnyResult {
    outln!(
        "{:<48} {:<10} {:>8} {:>10}",
        "family",
        "type",
        "series",
        "overflows"
    )?;
    for f in snap.families() {
        outln!(
            "{:<48} {:<10} {:>8} {:>10}",
            f.name(),
            f.kind().as_str(),
            f.series().len(),
            f.overflows()
        )?;
    }
    Ok(())
}

/// The `n` largest families, with their labels' distinct values.
fn inspect_top(snap: &shmetrics_core::Snapshot, n: usize) -> AnyResult {
    outln!(
        "{:<48} {:<10} {:>8} {:>10}  labels (distinct values)",
        "family",
        "type",
        "series",
        "overflows"
    )?;
    for f in snap.top_families(n) {
        let labels: Vec<String> = f
            .labels
            .iter()
            .map(|l| format!("{}={}", l.name, l.values))
            .collect();
        outln!(
            "{:<48} {:<10} {:>8} {:>10}  {}",
            f.name,
            f.kind.as_str(),
            f.series,
            f.overflows,
            labels.join(" ")
        )?;
    }
    Ok(())
}

fn inspect(path: &PathBuf, top: Option<usize>, expect: &ExpectArgs) -> AnyResult {
    let store = open_read_only(path, expect)?;
    let snap = store.snapshot()?;
    let st = snap.stats();
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    outln!("store         {}", path.display())?;
    outln!("layout        version {}", st.layout_version)?;
    outln!("file size     {} bytes (sparse)", st.file_size)?;
    outln!("lock          {}", store.lock_state())?;
    outln!(
        "families      {} of {} ({:.1}%)",
        st.families,
        st.families_capacity,
        pct(st.families as u64, st.families_capacity as u64)
    )?;
    outln!(
        "series        {} of {} allocated ({:.1}%), {} exported",
        st.series_allocated,
        st.series_capacity,
        pct(st.series_allocated as u64, st.series_capacity as u64),
        snap.series_count()
    )?;
    outln!(
        "label bytes   {} of {} ({:.1}%)",
        st.label_bytes_used,
        st.label_bytes_capacity,
        pct(st.label_bytes_used, st.label_bytes_capacity)
    )?;
    outln!(
        "value cells   {} of {} per writer ({:.1}%)",
        st.cells_used,
        st.cells_capacity,
        pct(st.cells_used, st.cells_capacity)
    )?;
    outln!(
        "writers       {} live, {} dead, {} slots; {} claims, {} reuses, {} found no free slot",
        st.writers_live,
        st.writers_dead,
        st.writers_capacity,
        st.writer_claims_total,
        st.writer_reuses_total,
        st.writers_exhausted_total
    )?;
    outln!("overflows     {}", st.overflows_total)?;
    outln!("lock repairs  {}", st.lock_recoveries_total)?;
    outln!()?;
    match top {
        Some(n) => inspect_top(&snap, n)?,
        None => inspect_families(&snap)?,
    }
    outln!()?;
    outln!(
        "{:>5} {:>8} {:<5} {:>7} {:>10}",
        "slot",
        "pid",
        "state",
        "claims",
        "cells"
    )?;
    for w in store.writers() {
        outln!(
            "{:>5} {:>8} {:<5} {:>7} {:>10}",
            w.slot,
            w.pid,
            if w.live { "live" } else { "dead" },
            w.claims,
            w.cells_used
        )?;
    }
    Ok(())
}
