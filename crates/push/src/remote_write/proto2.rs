//! The remote write 2.0 messages (`io.prometheus.write.v2`, as
//! Prometheus's `prompb/io/prometheus/write/v2/types.proto` defines them),
//! derived with prost. Strings are interned: a request's `symbols` hold
//! every label name and value, help text and unit once, the empty string
//! first, and series refer to them by index. The native histogram message
//! is remote write 1.0's ([`super::proto::Histogram`]), whose fields are
//! the same, with its start timestamp.

pub use super::proto::{BucketSpan, Histogram};

/// `io.prometheus.write.v2.Request`. Fields 1 to 3 are reserved (1.0's).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Request {
    /// The interned strings; `symbols[0]` is `""`.
    #[prost(string, repeated, tag = "4")]
    pub symbols: Vec<String>,
    /// The series.
    #[prost(message, repeated, tag = "5")]
    pub timeseries: Vec<TimeSeries>,
}

/// `io.prometheus.write.v2.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Pairs of symbol references, name then value, sorted by name,
    /// `__name__` included.
    #[prost(uint32, repeated, tag = "1")]
    pub labels_refs: Vec<u32>,
    /// Samples in timestamp order.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    /// Native histogram samples (a series has these or `samples`).
    #[prost(message, repeated, tag = "3")]
    pub histograms: Vec<Histogram>,
    /// Exemplars.
    #[prost(message, repeated, tag = "4")]
    pub exemplars: Vec<Exemplar>,
    /// The metric's type, help and unit.
    #[prost(message, optional, tag = "5")]
    pub metadata: Option<Metadata>,
}

/// `io.prometheus.write.v2.Sample`, whose fields are written value,
/// start timestamp, timestamp (its `Message` is written out here, as
/// protobuf lets fields come in any order and prost's derive orders them
/// by tag). A series' bytes that differ from its neighbour's (its last
/// label's value, its value, its start time's low bytes) then sit
/// together, and snappy copies the rest (the timestamp, the metadata, the
/// next series' first labels) from the series before in one go.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// The value.
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// When the series (a counter, a histogram's or a summary's) was
    /// created, milliseconds since the Unix epoch; 0 is unknown.
    pub start_timestamp: i64,
}

impl prost::Message for Sample {
    fn encode_raw(&self, buf: &mut impl prost::bytes::BufMut) {
        use prost::encoding::{double, int64};
        // As prost's derive, fields at their default are not written.
        if self.value != 0.0 {
            double::encode(1, &self.value, buf);
        }
        if self.start_timestamp != 0 {
            int64::encode(3, &self.start_timestamp, buf);
        }
        if self.timestamp != 0 {
            int64::encode(2, &self.timestamp, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl prost::bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        use prost::encoding::{double, int64, skip_field};
        match tag {
            1 => double::merge(wire_type, &mut self.value, buf, ctx),
            2 => int64::merge(wire_type, &mut self.timestamp, buf, ctx),
            3 => int64::merge(wire_type, &mut self.start_timestamp, buf, ctx),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        use prost::encoding::{double, int64};
        (if self.value != 0.0 {
            double::encoded_len(1, &self.value)
        } else {
            0
        }) + (if self.start_timestamp != 0 {
            int64::encoded_len(3, &self.start_timestamp)
        } else {
            0
        }) + (if self.timestamp != 0 {
            int64::encoded_len(2, &self.timestamp)
        } else {
            0
        })
    }

    fn clear(&mut self) {
        *self = Sample::default();
    }
}

/// `io.prometheus.write.v2.Exemplar`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Exemplar {
    /// Pairs of symbol references, as [`TimeSeries::labels_refs`].
    #[prost(uint32, repeated, tag = "1")]
    pub labels_refs: Vec<u32>,
    /// The observed value.
    #[prost(double, tag = "2")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "3")]
    pub timestamp: i64,
}

/// `io.prometheus.write.v2.Metadata`.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Metadata {
    /// A [`MetricType`].
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    /// The help text's symbol.
    #[prost(uint32, tag = "3")]
    pub help_ref: u32,
    /// The unit's symbol.
    #[prost(uint32, tag = "4")]
    pub unit_ref: u32,
}

/// `io.prometheus.write.v2.Metadata.MetricType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum MetricType {
    /// Unknown.
    Unspecified = 0,
    /// A counter.
    Counter = 1,
    /// A gauge.
    Gauge = 2,
    /// A histogram (classic series or native).
    Histogram = 3,
    /// A summary.
    Summary = 5,
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_sample_is_written_value_start_timestamp_then_timestamp_and_read_back() {
        let s = Sample {
            value: 1.5,
            timestamp: 300,
            start_timestamp: 2,
        };
        let bytes = s.encode_to_vec();
        // Tag 1 (fixed64), tag 3 (varint), tag 2 (varint).
        let mut want = vec![0x09];
        want.extend(1.5f64.to_le_bytes());
        want.extend([0x18, 2, 0x10, 0xac, 0x02]);
        assert_eq!(bytes, want);
        assert_eq!(bytes.len(), s.encoded_len());
        assert_eq!(Sample::decode(&bytes[..]).unwrap(), s);
        // Defaults are left out, as prost's derive leaves them out.
        assert!(Sample::default().encode_to_vec().is_empty());
    }
}
