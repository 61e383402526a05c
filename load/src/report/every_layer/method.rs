//! The fixed text of the page: how the numbers were measured, and what they
//! do not show.

/// The "Method" and "Honesty notes" sections.
pub(super) const METHOD: &str = "\n## Method\n\n\
    - `chingest-load gen` pre-encodes the request bodies (50,000 points per request by default, 1,000 hosts × cpu/mem/disk/net, mixed float/integer/bool/string fields, deterministic seed); the client never encodes during a run and shares each body (`bytes::Bytes`) across requests without copying.\n\
    - `chingest-load ramp` (open model): each step offers a constant request rate for a fixed window; request *k* starts at `k / rate` whether or not earlier ones finished. When the in-flight cap is reached at a due time the request is counted as **dropped**, never sent late. 429 and 503 answers are counted as shed, apart from failures; `Retry-After` is recorded and not obeyed, because the server's shedding is part of what is measured.\n\
    - Each request is credited to the step that started it; achieved = points acknowledged with 2xx ÷ step window. Latency is measured from the actual send to the end of the response, in an HDR histogram (µs resolution, 3 significant digits), over successful writes only.\n\
    - **Sustainable** = the highest step with achieved ≥ 99% of offered and p95 ≤ the budget; **peak** = the highest achieved.\n\
    - CPU % per step is user+system time of the server (`/proc/<pid>/stat`) and of the load generator over the step window (100 = one core).\n\
    - Disk bytes per acknowledged point (the **Disk** line under a run) are what the server process caused to be written to storage over the step (`/proc/<pid>/io` `write_bytes`: the WAL, RocksDB's memtable flushes and compactions, the engine's parts and merges) ÷ the points acknowledged in it; merges lag their points, so a short step undercounts and a later one carries earlier steps' merges.\n\
    \n## Honesty notes\n\n\
    - The load generator runs on the same machine as the server and competes for the same cores; its own CPU % is in the table. A separate client machine would raise the end-to-end numbers, not lower them.\n\
    - Traffic is loopback HTTP/1.1; there is no network latency or bandwidth limit.\n\
    - The engine ceiling counts rows of its own bench tables (narrow or 4-field rows); end-to-end counts points (one row of several fields each). The ratio compares rows with points of the payload's shape.\n\
    - Durability is real end to end: a 204 is sent only after the WAL group commit is fsynced. The engine ceiling has no WAL.\n\
    - A short step window favours bursts a server can absorb in queues; latency percentiles show it when that happens.\n";
