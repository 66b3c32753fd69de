//! What every pusher is: made from its settings, it shows its counters,
//! and runs until told to stop. [`Pusher`] is that, once, for
//! [`RemoteWriter`](crate::RemoteWriter),
//! [`OtlpExporter`](crate::otlp::OtlpExporter) and
//! [`Flusher`](crate::statsd::Flusher).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::Source;

mod sealed {
    pub trait Sealed {}
}
pub(crate) use sealed::Sealed;

/// A protocol a [`Pusher`] pushes with (implemented in this crate only).
pub trait Push: Sealed + Sized {
    /// Its settings.
    type Config: fmt::Debug;
    /// Its counters.
    type Stats: fmt::Debug;
    /// What it makes from the settings besides the counters (its queues,
    /// or when it started).
    type Parts: fmt::Debug;

    /// The counters and parts for `config`.
    #[doc(hidden)]
    fn prepare(config: &Self::Config) -> (Arc<Self::Stats>, Self::Parts);

    /// Pushes snapshots of `source` until `shutdown` completes.
    #[doc(hidden)]
    fn run(
        pusher: Pusher<Self>,
        source: Arc<dyn Source>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> impl Future<Output = ()> + Send;
}

/// A pusher of protocol `P`: its settings, its counters, and its parts.
pub struct Pusher<P: Push> {
    pub(crate) config: P::Config,
    pub(crate) stats: Arc<P::Stats>,
    pub(crate) parts: P::Parts,
}

impl<P: Push> Pusher<P> {
    /// A pusher for `config`; nothing runs until [`Pusher::run`].
    pub fn new(config: P::Config) -> Pusher<P> {
        let (stats, parts) = P::prepare(&config);
        Pusher {
            config,
            stats,
            parts,
        }
    }

    /// The counters (for the exporter's own metrics).
    pub fn stats(&self) -> Arc<P::Stats> {
        self.stats.clone()
    }

    /// The settings.
    pub fn config(&self) -> &P::Config {
        &self.config
    }

    /// Pushes snapshots of `source` until `shutdown` completes (see the
    /// protocol's type for what happens at the end).
    pub fn run(
        self,
        source: Arc<dyn Source>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> impl Future<Output = ()> + Send {
        P::run(self, source, shutdown)
    }
}

impl<P: Push> fmt::Debug for Pusher<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pusher")
            .field("config", &self.config)
            .field("stats", &self.stats)
            .field("parts", &self.parts)
            .finish()
    }
}
