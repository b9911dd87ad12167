//! The header of an HDR histogram in its V2 serialisation, checked before
//! anything is allocated for it.
//!
//! Histograms arrive from peers (an agent's seconds, a user process's
//! counts) and from files a user names (results.json for `report` and
//! `compare`). hdrhistogram's deserializer trusts the header: it sizes a
//! payload buffer by the header's length field (up to 4 GiB) and a counts
//! array by its bounds and digits (a histogram of 1 to 2^62 at 5 digits is
//! about 50 MB), before a byte of the payload is read. So every decoder
//! reads the header here first, and only a histogram of the shape benchlab
//! writes goes on to the deserializer.

/// What the header says about the histogram it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V2Header {
    /// Significant decimal digits of its values.
    pub significant_digits: u32,
    /// Its lowest discernible value.
    pub lowest: u64,
    /// The highest value it can hold.
    pub highest: u64,
}

/// The cookie of an uncompressed V2 histogram. The compressed form is not
/// accepted: its payload inflates to a size the header does not bound.
const V2_COOKIE: u32 = 0x1c84_9313;

/// Length of the V2 header: cookie, payload length, normalising offset,
/// digits (4 bytes each), lowest, highest and conversion ratio (8 each).
pub const V2_HEADER_BYTES: usize = 40;

/// The most significant digits benchlab's histograms use.
pub const MAX_SIGNIFICANT_DIGITS: u32 = 3;

/// The header of the V2 histogram `bytes`, if it is one benchlab could
/// have written: uncompressed, its payload exactly the bytes after the
/// header, lowest value 1, at most 3 digits, and a highest value of at
/// most `max_highest` (so its counts array is at most a few hundred KiB).
pub fn v2_header(bytes: &[u8], max_highest: u64) -> Result<V2Header, String> {
    let Some(head) = bytes.get(..V2_HEADER_BYTES) else {
        return Err(format!(
            "a histogram of {} bytes, shorter than its {V2_HEADER_BYTES}-byte header",
            bytes.len()
        ));
    };
    let u32_at = |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    let u64_at = |at: usize| (u64::from(u32_at(at)) << 32) | u64::from(u32_at(at + 4));
    if u32_at(0) != V2_COOKIE {
        return Err(format!(
            "not an uncompressed V2 histogram (cookie {:#010x}, expected {V2_COOKIE:#010x})",
            u32_at(0)
        ));
    }
    let payload = u32_at(4) as usize;
    if payload != bytes.len() - V2_HEADER_BYTES {
        return Err(format!(
            "a histogram whose header gives a payload of {payload} bytes, but {} follow it",
            bytes.len() - V2_HEADER_BYTES
        ));
    }
    let h = V2Header {
        significant_digits: u32_at(12),
        lowest: u64_at(16),
        highest: u64_at(24),
    };
    if h.significant_digits > MAX_SIGNIFICANT_DIGITS || h.lowest != 1 || h.highest < 2 || h.highest > max_highest {
        return Err(format!(
            "a histogram of {} to {} at {} digits, expected 1 to at most {max_highest} at ≤ {MAX_SIGNIFICANT_DIGITS}",
            h.lowest, h.highest, h.significant_digits
        ));
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(payload: u32, digits: u32, lowest: u64, highest: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&V2_COOKIE.to_be_bytes());
        b.extend_from_slice(&payload.to_be_bytes());
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&digits.to_be_bytes());
        b.extend_from_slice(&lowest.to_be_bytes());
        b.extend_from_slice(&highest.to_be_bytes());
        b.extend_from_slice(&1f64.to_bits().to_be_bytes());
        b
    }

    #[test]
    fn a_header_of_ours_is_read() {
        let mut b = header(3, 3, 1, 60_000_000);
        b.extend_from_slice(&[1, 2, 3]);
        let h = v2_header(&b, 60_000_000).expect("ours");
        assert_eq!((h.significant_digits, h.lowest, h.highest), (3, 1, 60_000_000));
    }

    #[test]
    fn a_header_that_would_allocate_beyond_its_bytes_is_refused() {
        // A payload length the bytes do not hold: the deserializer would
        // size a 4 GiB buffer by it.
        let e = v2_header(&header(u32::MAX, 3, 1, 1000), 1000).unwrap_err();
        assert!(e.contains("payload of 4294967295 bytes, but 0 follow"), "{e}");
        // Bounds or digits past ours: a counts array of tens of MB.
        assert!(v2_header(&header(0, 5, 1, 1000), 1000).is_err());
        assert!(v2_header(&header(0, 3, 1, 1 << 62), 60_000_000).is_err());
        assert!(v2_header(&header(0, 3, 0, 1000), 1000).is_err());
        // Too short, or compressed.
        assert!(v2_header(&[0x1c, 0x84], 1000).is_err());
        let mut z = header(0, 3, 1, 1000);
        z[3] = 0x14;
        assert!(v2_header(&z, 1000).unwrap_err().contains("not an uncompressed"));
    }
}
