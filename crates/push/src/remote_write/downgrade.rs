//! A remote write 2.0 request as the 1.0 request of the same series, for
//! a receiver that turned 2.0 down (see
//! [`RemoteWrite2`](super::send::RemoteWrite2)): the labels spelled out
//! from the symbol table, the samples and native histograms as they
//! are. What 1.0 has no place for (metadata, start times, exemplars) is
//! left out, as a 1.0 push leaves it out.

use prost::Message;

use super::encode::{encode_request, Chunk};
use super::proto::{Histogram, Label, Sample, TimeSeries, WriteRequest};
use super::proto2;

/// The 1.0 request with the series, samples and histograms of `chunk`, a
/// 2.0 request this crate encoded.
pub(super) fn to_v1(chunk: &Chunk) -> Chunk {
    // UNWRAP: the body is one `encode_v2` made: snappy over a
    // `proto2::Request`.
    let raw = snap::raw::Decoder::new()
        .decompress_vec(&chunk.body)
        .expect("a body encode_v2 compressed");
    // UNWRAP: as above.
    let proto2::Request {
        symbols,
        timeseries,
    } = proto2::Request::decode(&raw[..]).expect("a request encode_v2 encoded");
    let symbol = |r: u32| symbols.get(r as usize).cloned().unwrap_or_default();
    let timeseries = timeseries
        .into_iter()
        .map(|t| TimeSeries {
            labels: t
                .labels_refs
                .chunks_exact(2)
                .map(|pair| Label {
                    name: symbol(pair[0]),
                    value: symbol(pair[1]),
                })
                .collect(),
            samples: t
                .samples
                .iter()
                .map(|s| Sample {
                    value: s.value,
                    timestamp: s.timestamp,
                })
                .collect(),
            histograms: t
                .histograms
                .into_iter()
                .map(|h| Histogram {
                    start_timestamp: 0,
                    ..h
                })
                .collect(),
        })
        .collect();
    Chunk {
        body: encode_request(&WriteRequest { timeseries }),
        samples: chunk.samples,
        exemplars: 0,
    }
}

#[cfg(test)]
mod tests {
    use shmetrics_core::{FamilyDesc, Kind, Options, Store};

    use super::*;
    use crate::remote_write::{encode, encode_v2, timeseries, ExternalLabels};

    fn decode(chunks: &[Chunk]) -> Vec<TimeSeries> {
        let mut all: Vec<TimeSeries> = chunks
            .iter()
            .flat_map(|c| {
                let raw = snap::raw::Decoder::new().decompress_vec(&c.body).unwrap();
                WriteRequest::decode(&raw[..]).unwrap().timeseries
            })
            .collect();
        all.sort_by(|a, b| {
            let key = |t: &TimeSeries| {
                let labels = t.labels.iter();
                labels
                    .map(|l| (l.name.clone(), l.value.clone()))
                    .collect::<Vec<_>>()
            };
            key(a).cmp(&key(b))
        });
        all
    }

    #[test]
    fn a_2_0_request_becomes_the_1_0_request_of_the_same_series() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store"), &Options::default()).unwrap();
        let jobs = FamilyDesc::new("jobs", Kind::Counter)
            .help("Jobs.")
            .labels(&["queue"]);
        let jobs = store.register(&jobs).unwrap();
        for (q, v) in [("email", 7.0), ("sms", 2.5)] {
            store
                .counter_add(store.series(&jobs, &[q]).unwrap(), v)
                .unwrap();
        }
        let lat = FamilyDesc::new("latency_seconds", Kind::Histogram).buckets(&[0.5, 1.0]);
        let lat = store.register(&lat).unwrap();
        store
            .observe(store.series(&lat, &[]).unwrap(), 0.75)
            .unwrap();
        let snap = store.snapshot().unwrap();
        let ext = ExternalLabels::parse(&["dc=eu"]).unwrap();
        let want = decode(&encode(timeseries(&snap, &ext, 123, false), 3));
        let v2 = encode_v2(&snap, &ext, 123, false, false, 3);
        let v1: Vec<Chunk> = v2.iter().map(to_v1).collect();
        assert_eq!(
            v1.iter().map(|c| c.samples).collect::<Vec<_>>(),
            v2.iter().map(|c| c.samples).collect::<Vec<_>>()
        );
        assert_eq!(want.len(), 7);
        assert_eq!(decode(&v1), want);
    }
}
