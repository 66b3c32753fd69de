//! The exporter in the test process: `shmetrics_exporter::Server` on its
//! own tokio runtime, in a thread (feature `exporter`).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use shmetrics_exporter::{Config, Renderer, Server};

use crate::http::IO_TIMEOUT;
use crate::wait::wait_for;

/// An exporter running on its own tokio runtime in a thread of the test
/// process. Dropping it asks it to stop and does not wait.
#[derive(Debug)]
pub struct TestServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its renderer, for the statistics.
    pub renderer: Arc<Renderer>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl TestServer {
    /// Binds 127.0.0.1:0 and runs the exporter over `store`, with
    /// `tweak` applied to the default configuration.
    pub fn start(store: &Path, tweak: impl FnOnce(&mut Config)) -> TestServer {
        let mut config = Config::new(store.to_path_buf());
        config.listen = "127.0.0.1:0".parse().unwrap();
        tweak(&mut config);
        let (tx, rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || -> Result<(), String> {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async move {
                let server = match Server::bind(config).await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                        return Ok(());
                    }
                };
                let _ = tx.send(Ok((server.local_addr(), server.renderer())));
                server
                    .run(async move {
                        let _ = stop_rx.await;
                    })
                    .await
                    .map_err(|e| e.to_string())
            })
        });
        let (addr, renderer) = rx
            .recv_timeout(IO_TIMEOUT)
            .expect("the exporter thread did not report")
            .unwrap_or_else(|e| panic!("Server::bind failed: {e}"));
        TestServer {
            addr,
            renderer,
            shutdown: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Stops the server and waits (bounded) for `run` to return; panics
    /// if it failed or did not return.
    pub fn stop(mut self) {
        let _ = self.shutdown.take().unwrap().send(());
        let thread = self.thread.take().unwrap();
        wait_for(
            "the exporter to stop",
            IO_TIMEOUT,
            Duration::from_millis(20),
            || thread.is_finished().then_some(()),
        );
        thread
            .join()
            .expect("the exporter thread panicked")
            .expect("Server::run failed");
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
    }
}
