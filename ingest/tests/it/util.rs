use ingest::{Catalog, Format, Ingestor, Limits, Precision, PreparedWrite};

pub(crate) const NOW: i64 = 1_700_000_000_123_456_789;

pub(crate) fn write(cat: &Catalog, body: &str) -> PreparedWrite {
    Ingestor::write(
        cat,
        "db",
        body.as_bytes(),
        Format::LineProtocol,
        Precision::Nanoseconds,
        NOW,
    )
    .expect("write")
}

pub(crate) fn catalog() -> Catalog {
    Catalog::new(Limits::default())
}
