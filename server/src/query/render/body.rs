//! The HTTP body of a streamed answer: the renderer (on a blocking thread)
//! writes into a bounded channel, the body sends each piece as it comes.

use std::convert::Infallible;
use std::io::{self, Write};
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Bytes;
use http_body::Frame;
use tokio::sync::mpsc;

/// Sends what the renderer writes to the HTTP body.
pub(super) struct ChannelWriter {
    tx: mpsc::Sender<Bytes>,
}

impl ChannelWriter {
    pub(super) fn new(tx: mpsc::Sender<Bytes>) -> Self {
        ChannelWriter { tx }
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.tx
            .blocking_send(Bytes::copy_from_slice(buf))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        // Every write is sent as it comes: nothing is held here.
        Ok(())
    }
}

/// The HTTP body: the pieces the renderer sends, until it is done.
pub(super) struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl ChannelBody {
    pub(super) fn new(rx: mpsc::Receiver<Bytes>) -> Self {
        ChannelBody { rx }
    }
}

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|piece| piece.map(|bytes| Ok(Frame::data(bytes))))
    }
}
