//! Handing a render's bytes on in pieces as they are written
//! ([`crate::encode_chunked`]), so that a page is never held whole.

/// Where a chunked render hands its bytes once `at` of them are written.
pub(crate) struct Spill<'s> {
    pub(crate) at: usize,
    pub(crate) sink: &'s mut dyn FnMut(&mut Vec<u8>),
}

impl Spill<'_> {
    /// Hands `out` to the sink if it holds a piece's worth.
    #[inline]
    pub(crate) fn check(&mut self, out: &mut Vec<u8>) {
        if out.len() >= self.at {
            (self.sink)(out);
            out.clear();
        }
    }
}
