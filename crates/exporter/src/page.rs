//! A rendered page as a list of pieces, and the response body that sends
//! them: a large page is never one allocation, and a gzip scrape never
//! holds the uncompressed page (see [`PageWriter`]).

use std::convert::Infallible;
use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

/// The size of a piece: large enough that a page of a million series is
/// a few hundred pieces, small enough that the render's buffer and the
/// compressor's input stay in the cache.
pub(crate) const PIECE: usize = 64 << 10;

/// A page's bytes, in pieces. Cloning it is cheap (a reference count).
#[derive(Clone, Debug, Default)]
pub struct Page {
    pieces: Arc<[Bytes]>,
    len: usize,
}

impl Page {
    /// The page's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the page is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The page's bytes in one buffer (a copy; for tests and small pages).
    pub fn to_vec(&self) -> Vec<u8> {
        self.pieces.iter().flat_map(|p| p.iter().copied()).collect()
    }
}

/// A page held only while a response is sending it (see
/// [`Page::downgrade`]).
#[derive(Clone, Debug)]
pub(crate) struct WeakPage {
    pieces: Weak<[Bytes]>,
    len: usize,
}

impl Page {
    /// A reference to the page that does not keep it: the page is freed
    /// once the responses that send it are done.
    pub(crate) fn downgrade(&self) -> WeakPage {
        WeakPage {
            pieces: Arc::downgrade(&self.pieces),
            len: self.len,
        }
    }
}

impl WeakPage {
    /// The page, if a response still holds it.
    pub(crate) fn upgrade(&self) -> Option<Page> {
        Some(Page {
            pieces: self.pieces.upgrade()?,
            len: self.len,
        })
    }
}

impl From<Bytes> for Page {
    fn from(b: Bytes) -> Page {
        Page {
            len: b.len(),
            pieces: Arc::from([b]),
        }
    }
}

/// Collects a render's pieces, compressing them as they come if asked.
pub(crate) enum PageWriter {
    Plain(Pieces),
    Gzip(flate2::write::GzEncoder<Pieces>),
}

impl PageWriter {
    pub(crate) fn new(gzip: bool) -> PageWriter {
        if gzip {
            // Level 1: scrape bodies compress well at the fastest level,
            // and a slower level would add tens of milliseconds to a
            // large scrape.
            PageWriter::Gzip(flate2::write::GzEncoder::new(
                Pieces::default(),
                flate2::Compression::fast(),
            ))
        } else {
            PageWriter::Plain(Pieces::default())
        }
    }

    /// Takes a piece of the render (see [`shmetrics_expo::encode_chunked`]).
    pub(crate) fn take(&mut self, buf: &mut Vec<u8>) {
        match self {
            // The render's buffer becomes a piece as it is, without a copy.
            PageWriter::Plain(p) => {
                p.push(std::mem::replace(buf, Vec::with_capacity(buf.capacity())))
            }
            // UNWRAP: `Pieces` never fails a write.
            PageWriter::Gzip(z) => z.write_all(buf).expect("writing to memory"),
        }
    }

    pub(crate) fn finish(self) -> Page {
        let pieces = match self {
            PageWriter::Plain(p) => p,
            // UNWRAP: as above.
            PageWriter::Gzip(z) => z.finish().expect("writing to memory"),
        };
        pieces.into_page()
    }
}

/// Pieces written so far, and the one being filled by a compressor.
#[derive(Default)]
pub(crate) struct Pieces {
    done: Vec<Bytes>,
    len: usize,
    filling: Vec<u8>,
}

impl Pieces {
    fn push(&mut self, piece: Vec<u8>) {
        if !piece.is_empty() {
            self.len += piece.len();
            self.done.push(Bytes::from(piece));
        }
    }

    fn into_page(mut self) -> Page {
        let last = std::mem::take(&mut self.filling);
        self.push(last);
        Page {
            pieces: self.done.into(),
            len: self.len,
        }
    }
}

impl Write for Pieces {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.filling.capacity() == 0 {
            self.filling.reserve_exact(PIECE);
        }
        let n = buf.len().min(PIECE - self.filling.len());
        self.filling.extend_from_slice(&buf[..n]);
        if self.filling.len() == PIECE {
            let full = std::mem::take(&mut self.filling);
            self.push(full);
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A response body that sends a [`Page`]'s pieces one by one, with its
/// exact length (so the response has a `Content-Length`).
#[derive(Debug)]
pub struct PageBody {
    page: Page,
    next: usize,
    left: usize,
}

impl From<Page> for PageBody {
    fn from(page: Page) -> PageBody {
        PageBody {
            left: page.len,
            page,
            next: 0,
        }
    }
}

impl From<Bytes> for PageBody {
    fn from(b: Bytes) -> PageBody {
        PageBody::from(Page::from(b))
    }
}

impl Body for PageBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let Some(piece) = self.page.pieces.get(self.next).cloned() else {
            return Poll::Ready(None);
        };
        self.next += 1;
        self.left -= piece.len();
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn render(gzip: bool, input: &[u8], chunk: usize) -> Page {
        let mut w = PageWriter::new(gzip);
        for part in input.chunks(chunk) {
            let mut buf = part.to_vec();
            w.take(&mut buf);
        }
        w.finish()
    }

    #[test]
    fn a_plain_page_is_the_pieces_as_rendered() {
        let input: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let page = render(false, &input, 70_000);
        assert_eq!(page.len(), input.len());
        assert_eq!(page.pieces.len(), 5);
        assert_eq!(page.to_vec(), input);
    }

    #[test]
    fn a_gzip_page_decompresses_to_the_render_in_pieces_of_at_most_piece() {
        let input: Vec<u8> = (0..2_000_000u32)
            .flat_map(|i| format!("m{{k=\"{}\"}} {}\n", i % 977, i).into_bytes())
            .collect();
        let page = render(true, &input, 10_000);
        assert!(page.pieces.len() > 1);
        assert!(page
            .pieces
            .iter()
            .all(|p| p.len() <= PIECE && !p.is_empty()));
        assert_eq!(
            page.len(),
            page.pieces.iter().map(Bytes::len).sum::<usize>()
        );
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&page.to_vec()[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, input);
    }

    #[test]
    fn an_empty_render_is_an_empty_page_and_body() {
        let page = render(false, b"", 1);
        assert!(page.is_empty());
        let body = PageBody::from(page);
        assert!(body.is_end_stream());
        assert_eq!(body.size_hint().exact(), Some(0));
    }
}
