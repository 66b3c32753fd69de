//! `shmetrics serve --otlp.*`: OTLP/HTTP metrics export (see
//! docs/exporter.md).

use shmetrics_push::otlp::{
    Config, ConfigError, ResourceAttributes, DEFAULT_INTERVAL_SECS, DEFAULT_QUEUE_BATCHES,
};

/// OTLP/HTTP metrics export, protobuf (see docs/exporter.md).
#[derive(clap::Args, Debug)]
pub struct OtlpArgs {
    /// Also export the store over OTLP/HTTP (protobuf) to this URL
    /// (http:// or https://), e.g. http://127.0.0.1:4318/v1/metrics; a URL
    /// without a path gets /v1/metrics.
    #[arg(long = "otlp.url", value_name = "URL")]
    otlp_url: Option<String>,
    /// Seconds between exports (a fraction is allowed).
    #[arg(long = "otlp.interval", value_name = "SECS", default_value_t = DEFAULT_INTERVAL_SECS)]
    otlp_interval: f64,
    /// Counters and histograms as totals since the series' start
    /// (cumulative) or as what was added since the last export (delta).
    #[arg(
        long = "otlp.temporality",
        value_name = "cumulative|delta",
        default_value = "cumulative",
        value_parser = ["cumulative", "delta"]
    )]
    otlp_temporality: String,
    /// A resource attribute, such as service.name=checkout. Repeatable.
    /// host.name (this machine's host name) is added unless given.
    #[arg(long = "otlp.resource-attribute", value_name = "KEY=VALUE")]
    otlp_resource_attributes: Vec<String>,
    /// Batches (one per export) the queue holds while the receiver is
    /// slow or down; when full, the oldest is dropped and counted.
    #[arg(long = "otlp.queue-batches", value_name = "N", default_value_t = DEFAULT_QUEUE_BATCHES)]
    otlp_queue_batches: usize,
    /// Send histograms with native buckets as OTLP exponential histograms
    /// (scale, zero bucket, positive and negative buckets), not as
    /// explicit-bucket ones.
    #[arg(long = "otlp.native-histograms")]
    otlp_native_histograms: bool,
    /// How request bodies are compressed: gzip (Content-Encoding: gzip,
    /// as the OpenTelemetry Collector's OTLP/HTTP exporter sends) or
    /// none.
    #[arg(
        long = "otlp.compression",
        value_name = "gzip|none",
        default_value = "gzip",
        value_parser = ["gzip", "none"]
    )]
    otlp_compression: String,
    #[command(flatten)]
    security: crate::security::OtlpSecurity,
}

impl OtlpArgs {
    /// The settings, or `None` without a URL.
    pub fn config(&self) -> Result<Option<Config>, ConfigError> {
        // Checked even without a URL, so that a typo does not go
        // unnoticed.
        let resource = ResourceAttributes::parse(&self.otlp_resource_attributes)?;
        let temporality = self.otlp_temporality.parse()?;
        let compression = self.otlp_compression.parse()?;
        let Some(url) = &self.otlp_url else {
            if self.security.any() {
                return Err(ConfigError::Credentials {
                    protocol: shmetrics_push::Protocol::Otlp,
                    reason: "TLS, authentication and header flags need --otlp.url".into(),
                });
            }
            return Ok(None);
        };
        let mut config = Config::new(url)?
            .with_interval_secs(self.otlp_interval)?
            .with_queue_batches(self.otlp_queue_batches)?;
        config.temporality = temporality;
        config.native_histograms = self.otlp_native_histograms;
        config.compression = compression;
        config.resource = resource.with_default_host_name();
        self.security.apply(&mut config.http)?;
        Ok(Some(config))
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use crate::{Cli, Command};
    use shmetrics_push::otlp::{Compression, ConfigError, Temporality};

    fn otlp(args: &[&str]) -> Result<Option<shmetrics_push::otlp::Config>, ConfigError> {
        let cli = Cli::try_parse_from(["shmetrics", "serve", "--store", "/s"].iter().chain(args))
            .unwrap_or_else(|e| panic!("{e}"));
        match cli.command {
            Command::Serve { otlp, .. } => otlp.config(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn flags() {
        Cli::command().debug_assert();
        assert!(otlp(&[]).unwrap().is_none());
        let c = otlp(&[
            "--otlp.url",
            "http://127.0.0.1:4318",
            "--otlp.interval",
            "0.5",
            "--otlp.temporality",
            "delta",
            "--otlp.resource-attribute",
            "service.name=checkout",
            "--otlp.resource-attribute",
            "host.name=web-1",
            "--otlp.queue-batches",
            "3",
            "--otlp.compression",
            "none",
            "--remote-write.interval",
            "7",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.endpoint.as_str(), "http://127.0.0.1:4318/v1/metrics");
        assert_eq!(c.interval.as_millis(), 500);
        assert_eq!(c.temporality, Temporality::Delta);
        assert_eq!(
            c.resource.iter().collect::<Vec<_>>(),
            [("service.name", "checkout"), ("host.name", "web-1")]
        );
        assert_eq!(c.queue_batches, 3);
        assert_eq!(c.compression, Compression::None);
        let c = otlp(&["--otlp.url", "http://h/v1/metrics"])
            .unwrap()
            .unwrap();
        assert_eq!(c.temporality, Temporality::Cumulative);
        assert_eq!(c.interval.as_secs(), 60);
        assert_eq!(c.compression, Compression::Gzip);
        assert!(c.resource.get("host.name").is_some());
        assert!(matches!(
            otlp(&["--otlp.resource-attribute", "nokey"]),
            Err(ConfigError::BadResourceAttribute { .. })
        ));
        assert!(matches!(
            otlp(&["--otlp.url", "http://h", "--otlp.interval", "0"]),
            Err(ConfigError::OutOfRange { .. })
        ));
        assert!(Cli::try_parse_from([
            "shmetrics",
            "serve",
            "--store",
            "/s",
            "--otlp.temporality",
            "sometimes"
        ])
        .is_err());
    }
}
