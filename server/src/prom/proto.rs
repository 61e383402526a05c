//! The Prometheus remote storage messages (`prompb`: `remote.proto`, `types.proto`), the
//! fields chingest reads and writes. Fields it does not know (exemplars, native histograms,
//! metadata, hints) are skipped by the decoder, as protobuf does.

/// `prometheus.WriteRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// The series and their samples.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Labels, `__name__` the metric name.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Samples, in time order.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// `prometheus.ReadRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadRequest {
    /// The queries (InfluxDB 1.x, and chingest, answer one per request).
    #[prost(message, repeated, tag = "1")]
    pub queries: Vec<Query>,
    /// Response types the client accepts (`SAMPLES` = 0, `STREAMED_XOR_CHUNKS` = 1); the
    /// answer is always `SAMPLES`, which every client accepts.
    #[prost(int32, repeated, tag = "2")]
    pub accepted_response_types: Vec<i32>,
}

/// `prometheus.Query`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Query {
    /// Start, ms since the epoch (inclusive).
    #[prost(int64, tag = "1")]
    pub start_timestamp_ms: i64,
    /// End, ms since the epoch (inclusive).
    #[prost(int64, tag = "2")]
    pub end_timestamp_ms: i64,
    /// Label matchers, all of which a series must match.
    #[prost(message, repeated, tag = "3")]
    pub matchers: Vec<LabelMatcher>,
}

/// `prometheus.LabelMatcher`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelMatcher {
    /// `EQ` = 0, `NEQ` = 1, `RE` = 2, `NRE` = 3.
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    /// Label name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Value or regex (anchored at both ends, RE2 syntax).
    #[prost(string, tag = "3")]
    pub value: String,
}

/// `prometheus.ReadResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadResponse {
    /// One result per query.
    #[prost(message, repeated, tag = "1")]
    pub results: Vec<QueryResult>,
}

/// `prometheus.QueryResult`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct QueryResult {
    /// The matching series with their samples in the range.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}
