//! `shmetrics-testworker MODE STORE ACK [key=value ...]`: a worker process
//! for the multi-process tests. It opens the existing store at `STORE`,
//! updates it as `MODE` says, and acknowledges every update that returned
//! `Ok` in the ack file `ACK` (see `shmetrics_testkit::proto::word`).
//!
//! Modes:
//! - `churn`: counter + histogram over 1,000 series each, forever (until
//!   STOP or SIGKILL).
//! - `observe`: histogram observations over a few series, until STOP.
//! - `incs n=N end=release|exit|hold`: N counter increments, then DONE;
//!   `release` drops the store (releasing the slot) and exits, `exit`
//!   exits without dropping it, `hold` waits for STOP (or SIGKILL).
//! - `gauge value=V [claim=1]`: sets / adds V in a gauge family per gauge
//!   mode (or, with `claim=1`, only claims a slot), then DONE, then waits.
//! - `create id=I [max=M]`: creates series `"I-n"` one after the other
//!   (each creation takes the store lock), acknowledging each.
//! - `create_once`: creates one series and one family, then exits.
//! - `fork n1= n2= n3=`: updates, forks a child that updates and one that
//!   does not, waits for them, updates again, then DONE and waits.
//! - `summary dist=D seed=S n=N`: observes the N latencies
//!   `proto::latencies(D, S, N)` in the summary family, then DONE, and
//!   exits (its slot's observations stay counted).
//! - `native seed=S n=N`: observes the N values `proto::native_values(S,
//!   N)` in the native histogram family, then DONE, and exits.
//! - `exemplars w=W n=N [buckets=B]`: N counter increments and N
//!   observations with exemplars whose trace id is
//!   `proto::exemplar_trace(W, i)`; observation `i` goes in bucket
//!   `i % B` (B of 1 to 3, default 3). Then DONE, and exits.
//! - `ttl`: increments the `proto::ttl_hot` series round-robin, forever
//!   (until STOP or SIGKILL); every `proto::TTL_CHURN_EVERY_MS` it adds a
//!   series `"{id}-{n}"` (a random id per incarnation) to the `proto::ttl_churn` family, observes 3
//!   values in it (HIST, HIST_SUM) and leaves it to expire (CREATED);
//!   `proto::TTL_CHURN_LATE` series later it updates it once more, past
//!   its TTL, which fails as stale (STALE) or, if it was updated by
//!   chance within its TTL, counts (HIST).
//!
//! Exit codes: 0 success, 2 usage, 3 store error, 4 lifetime exceeded,
//! 5 ack file error.

use std::collections::HashMap;
use std::process::exit;
use std::time::{Duration, Instant};

use shmetrics_core::{ErrorKind, GaugeMode, Options, Result, Store};
use shmetrics_testkit::proto::{self, word};
use shmetrics_testkit::rng::Rng;
use shmetrics_testkit::AckFile;

struct Ctx {
    store: Store,
    ack: AckFile,
    args: HashMap<String, String>,
    started: Instant,
    life: Duration,
}

impl Ctx {
    fn arg(&self, k: &str, default: u64) -> u64 {
        match self.args.get(k) {
            None => default,
            Some(v) => v.parse().unwrap_or_else(|_| usage(&format!("bad {k}={v}"))),
        }
    }

    fn stopped(&self) -> bool {
        self.ack.get(word::STOP) != 0
    }

    fn check_life(&self) {
        if self.started.elapsed() > self.life {
            eprintln!("testworker: lifetime of {:?} exceeded", self.life);
            exit(4);
        }
    }

    /// Waits for STOP (the test may SIGKILL the worker instead).
    fn wait_stop(&self) {
        while !self.stopped() {
            self.check_life();
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

fn usage(msg: &str) -> ! {
    eprintln!("testworker: {msg}\nusage: shmetrics-testworker MODE STORE ACK [key=value ...]");
    exit(2)
}

fn main() {
    // Die with the test that spawned us, should it die first.
    // SAFETY: prctl with PR_SET_PDEATHSIG and an integer signal number.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.len() < 3 {
        usage("missing arguments");
    }
    let (mode, store_path, ack_path) = (&argv[0], &argv[1], &argv[2]);
    let mut args = HashMap::new();
    for a in &argv[3..] {
        let (k, v) = a
            .split_once('=')
            .unwrap_or_else(|| usage(&format!("bad argument {a:?}")));
        args.insert(k.to_string(), v.to_string());
    }
    let ack = AckFile::open(ack_path).unwrap_or_else(|e| {
        eprintln!("testworker: ack file {ack_path}: {e}");
        exit(5)
    });
    ack.set(word::PID, std::process::id() as u64);
    let opts = Options {
        create: false,
        ..Options::default()
    };
    let store = Store::open(store_path, &opts).unwrap_or_else(|e| {
        eprintln!("testworker: open: {e}");
        exit(3)
    });
    let life = args.get("life").and_then(|v| v.parse().ok()).unwrap_or(300);
    let ctx = Ctx {
        store,
        ack,
        args,
        started: Instant::now(),
        life: Duration::from_secs(life),
    };
    let r = match mode.as_str() {
        "churn" => churn(ctx),
        "observe" => observe(ctx),
        "incs" => incs(ctx),
        "touch" => touch(ctx),
        "gauge" => gauge(ctx),
        "create" => create(ctx),
        "create_once" => create_once(ctx),
        "fork" => fork(ctx),
        "summary" => summary(ctx),
        "native" => native(ctx),
        "exemplars" => exemplars(ctx),
        "ttl" => ttl(ctx),
        m => usage(&format!("unknown mode {m:?}")),
    };
    if let Err(e) = r {
        eprintln!("testworker {mode} (pid {}): {e}", std::process::id());
        exit(3);
    }
}

/// An observation spread over every bucket (log-uniform), as a multiple
/// of 1 / SUM_SCALE; returns the value and its scaled integer.
fn spread_value(rng: &mut Rng) -> (f64, u64) {
    let e = rng.below(12);
    let raw = rng.below((1u64 << e) * proto::SUM_SCALE as u64);
    (raw as f64 / proto::SUM_SCALE, raw)
}

fn churn(ctx: Ctx) -> Result<()> {
    let store = &ctx.store;
    let cf = store.register(&proto::churn_counter())?;
    let hf = store.register(&proto::churn_hist())?;
    let mut cs = Vec::with_capacity(proto::CHURN_SERIES);
    let mut hs = Vec::with_capacity(proto::CHURN_SERIES);
    for i in 0..proto::CHURN_SERIES {
        let [a, b] = proto::churn_counter_labels(i);
        cs.push(store.series(&cf, &[&a, &b])?);
        hs.push(store.series(&hf, &[&proto::churn_hist_label(i)])?);
    }
    ctx.ack.set(word::READY, 1);
    let mut rng = Rng::from_entropy();
    loop {
        for i in 0..proto::CHURN_SERIES {
            if ctx.stopped() {
                return Ok(());
            }
            store.counter_inc(cs[i])?;
            ctx.ack.add(word::COUNTER, 1);
            let (v, raw) = spread_value(&mut rng);
            store.observe(hs[i], v)?;
            ctx.ack.add(word::HIST_SUM, raw);
            ctx.ack.add(word::HIST, 1);
        }
        ctx.check_life();
    }
}

fn observe(ctx: Ctx) -> Result<()> {
    let store = &ctx.store;
    let f = store.register(&proto::obs_hist())?;
    let series = (0..proto::OBS_SERIES)
        .map(|i| store.series(&f, &[&format!("s{i}")]))
        .collect::<Result<Vec<_>>>()?;
    ctx.ack.set(word::READY, 1);
    let mut rng = Rng::from_entropy();
    let mut n = 0u64;
    while !ctx.stopped() {
        let s = series[rng.below(series.len() as u64) as usize];
        let (v, raw) = spread_value(&mut rng);
        store.observe(s, v)?;
        ctx.ack.add(word::HIST_SUM, raw);
        ctx.ack.add(word::HIST, 1);
        n += 1;
        if n.is_multiple_of(4096) {
            ctx.check_life();
        }
    }
    Ok(())
}

fn summary(ctx: Ctx) -> Result<()> {
    let dist = ctx
        .args
        .get("dist")
        .cloned()
        .unwrap_or_else(|| usage("summary needs dist="));
    let values = proto::latencies(&dist, ctx.arg("seed", 1), ctx.arg("n", 1000) as usize)
        .unwrap_or_else(|| usage(&format!("unknown dist={dist}")));
    let f = ctx.store.register(&proto::summary())?;
    let s = ctx.store.series(&f, &[&dist])?;
    for v in values {
        ctx.store.observe(s, v)?;
        ctx.ack.add(word::HIST, 1);
    }
    ctx.ack.set(word::DONE, 1);
    Ok(())
}

fn native(ctx: Ctx) -> Result<()> {
    let values = proto::native_values(ctx.arg("seed", 1), ctx.arg("n", 1000) as usize);
    let f = ctx.store.register(&proto::native_hist())?;
    let s = ctx.store.series(&f, &[])?;
    for v in values {
        ctx.store.observe(s, v)?;
        ctx.ack.add(word::HIST, 1);
    }
    ctx.ack.set(word::DONE, 1);
    Ok(())
}

fn exemplars(ctx: Ctx) -> Result<()> {
    let (w, n, buckets) = (ctx.arg("w", 1), ctx.arg("n", 100), ctx.arg("buckets", 3));
    let c = ctx.store.register(&proto::exemplar_counter())?;
    let h = ctx.store.register(&proto::exemplar_hist())?;
    let (c, h) = (ctx.store.series(&c, &[])?, ctx.store.series(&h, &[])?);
    for i in 0..n {
        let trace = proto::exemplar_trace(w, i);
        ctx.store
            .counter_add_with_exemplar(c, 1.0, &[("trace_id", &trace)])?;
        ctx.ack.add(word::COUNTER, 1);
        let v = proto::exemplar_value(i % buckets.clamp(1, 3));
        ctx.store
            .observe_with_exemplar(h, v, &[("trace_id", &trace)])?;
        ctx.ack.add(word::HIST, 1);
    }
    ctx.ack.set(word::DONE, 1);
    Ok(())
}

fn ttl(ctx: Ctx) -> Result<()> {
    let store = &ctx.store;
    let hot = store.register(&proto::ttl_hot())?;
    let churn = store.register(&proto::ttl_churn())?;
    let hot = (0..proto::TTL_HOT_SERIES)
        .map(|i| store.series(&hot, &[&format!("k{i}")]))
        .collect::<Result<Vec<_>>>()?;
    ctx.ack.set(word::READY, 1);
    // Labels of this incarnation's own: a random id, not the pid, which
    // the system may give again to a later incarnation.
    let mut rng = Rng::from_entropy();
    let id = rng.below(u64::MAX);
    let every = Duration::from_millis(proto::TTL_CHURN_EVERY_MS);
    let mut next = Instant::now();
    let mut late = std::collections::VecDeque::with_capacity(proto::TTL_CHURN_LATE + 1);
    for n in 0u64.. {
        for &s in &hot {
            if ctx.stopped() {
                return Ok(());
            }
            store.counter_inc(s)?;
            ctx.ack.add(word::COUNTER, 1);
        }
        if Instant::now() >= next {
            next = Instant::now() + every;
            // An overflow is an error here: the family has room enough
            // only if expired series are reused.
            let s = store.series(&churn, &[&format!("{id:016x}-{n}")])?;
            for _ in 0..3 {
                let (v, raw) = spread_value(&mut rng);
                store.observe(s, v)?;
                ctx.ack.add(word::HIST_SUM, raw);
                ctx.ack.add(word::HIST, 1);
            }
            ctx.ack.add(word::CREATED, 1);
            // An update past the TTL: it expires the series first (under
            // the lock) unless a sweep did already, and fails as stale.
            late.push_back(s);
            if late.len() > proto::TTL_CHURN_LATE {
                let old = late.pop_front().expect("not empty");
                match store.observe(old, 1.0) {
                    Ok(()) => {
                        ctx.ack.add(word::HIST_SUM, proto::SUM_SCALE as u64);
                        ctx.ack.add(word::HIST, 1);
                    }
                    Err(e) if e.kind() == ErrorKind::StaleHandle => ctx.ack.add(word::STALE, 1),
                    Err(e) => return Err(e),
                }
            }
            ctx.check_life();
        }
    }
    Ok(())
}

fn incs(ctx: Ctx) -> Result<()> {
    let n = ctx.arg("n", 100);
    let f = ctx.store.register(&proto::reuse_counter())?;
    let s = ctx.store.series(&f, &["x"])?;
    for _ in 0..n {
        ctx.store.counter_inc(s)?;
        ctx.ack.add(word::COUNTER, 1);
    }
    ctx.ack.set(word::DONE, 1);
    match ctx.args.get("end").map(String::as_str) {
        Some("release") | None => {
            drop(ctx);
            Ok(())
        }
        // Exit without running destructors: the slot is not released, and
        // must be found dead by its owner's liveness.
        Some("exit") => exit(0),
        Some("hold") => {
            ctx.wait_stop();
            Ok(())
        }
        Some(e) => usage(&format!("bad end={e}")),
    }
}

/// Increments the series of `series` (label `k`) that `proto::touches`
/// gives writer `writer` at `percent`, creating them as it goes, then
/// releases its slot.
fn touch(ctx: Ctx) -> Result<()> {
    let (series, writer, percent) = (
        ctx.arg("series", 1000),
        ctx.arg("writer", 0),
        ctx.arg("percent", 100),
    );
    let f = ctx.store.register(&proto::touch_counter())?;
    for k in (0..series).filter(|k| proto::touches(writer, *k, percent)) {
        ctx.store
            .counter_inc(ctx.store.series(&f, &[&k.to_string()])?)?;
        ctx.ack.add(word::COUNTER, 1);
    }
    ctx.ack.set(word::DONE, 1);
    ctx.wait_stop();
    Ok(())
}

fn gauge(ctx: Ctx) -> Result<()> {
    let store = &ctx.store;
    if ctx.arg("claim", 0) != 0 {
        let f = store.register(&proto::claim_counter())?;
        store.counter_inc(store.series(&f, &[])?)?;
    } else {
        let v = ctx.arg("value", 1) as f64;
        for mode in GaugeMode::ALL {
            let fs = store.register(&proto::gauge_set_family(mode))?;
            store.gauge_set(store.series(&fs, &["x"])?, v)?;
            let fi = store.register(&proto::gauge_inc_family(mode))?;
            let si = store.series(&fi, &["x"])?;
            store.gauge_add(si, v + 1.0)?;
            store.gauge_add(si, -1.0)?;
        }
    }
    ctx.ack.set(word::DONE, 1);
    ctx.wait_stop();
    Ok(())
}

fn create(ctx: Ctx) -> Result<()> {
    let id = ctx.arg("id", 0);
    let max = ctx.arg("max", 400);
    let store = &ctx.store;
    let f = store.register(&proto::create_counter())?;
    store.register(&proto::create_family(id))?;
    ctx.ack.set(word::FAMILY_DONE, 1);
    ctx.ack.set(word::READY, 1);
    for n in 0..max {
        if ctx.stopped() {
            break;
        }
        let s = store.series(&f, &[&proto::create_label(id, n)])?;
        store.counter_inc(s)?;
        ctx.ack.set(word::CREATED, n + 1);
    }
    ctx.ack.set(word::DONE, 1);
    ctx.wait_stop();
    Ok(())
}

fn create_once(ctx: Ctx) -> Result<()> {
    let store = &ctx.store;
    let f = store.register(&proto::create_counter())?;
    store.counter_inc(store.series(&f, &["final"])?)?;
    store.register(&proto::create_family(u64::MAX))?;
    ctx.ack.set(word::DONE, 1);
    Ok(())
}

fn fork(ctx: Ctx) -> Result<()> {
    let (n1, n2, n3) = (ctx.arg("n1", 100), ctx.arg("n2", 100), ctx.arg("n3", 100));
    let f = ctx.store.register(&proto::fork_counter())?;
    let s = ctx.store.series(&f, &[])?;
    for _ in 0..n1 {
        ctx.store.counter_inc(s)?;
        ctx.ack.add(word::COUNTER, 1);
    }
    // This process is single-threaded, so fork() is safe here.
    // SAFETY: fork in a single-threaded process; the child only uses the
    // store, the ack file and _exit.
    let a = unsafe { libc::fork() };
    if a < 0 {
        eprintln!("testworker: fork: {}", std::io::Error::last_os_error());
        exit(3);
    }
    if a == 0 {
        // Child A: updates through the inherited store; it must claim a
        // slot of its own.
        let code = (|| -> Result<()> {
            for _ in 0..n2 {
                ctx.store.counter_inc(s)?;
                ctx.ack.add(word::CHILD_A_ACKS, 1);
            }
            Ok(())
        })()
        .map_or_else(
            |e| {
                eprintln!("testworker fork child A: {e}");
                3
            },
            |()| 0,
        );
        drop(ctx); // releases the child's own slot, not the parent's
                   // SAFETY: ends the child without running the parent's atexit work.
        unsafe { libc::_exit(code) };
    }
    ctx.ack.set(word::CHILD_A_PID, a as u64);
    let a_status = wait_child(a);
    ctx.ack.set(word::CHILD_A_STATUS, a_status as u64 + 1);
    // SAFETY: as above.
    let b = unsafe { libc::fork() };
    if b < 0 {
        eprintln!("testworker: fork: {}", std::io::Error::last_os_error());
        exit(3);
    }
    if b == 0 {
        // Child B: never updates; dropping its inherited store must not
        // release the parent's slot.
        drop(ctx);
        // SAFETY: as above.
        unsafe { libc::_exit(0) };
    }
    ctx.ack.set(word::CHILD_B_PID, b as u64);
    let b_status = wait_child(b);
    ctx.ack.set(word::CHILD_B_STATUS, b_status as u64 + 1);
    for _ in 0..n3 {
        ctx.store.counter_inc(s)?;
        ctx.ack.add(word::COUNTER, 1);
    }
    ctx.ack.set(word::DONE, 1);
    ctx.wait_stop();
    Ok(())
}

fn wait_child(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: waitpid on our own child with a valid status pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return status;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            eprintln!("testworker: waitpid: {}", std::io::Error::last_os_error());
            exit(3);
        }
    }
}
