//! Dictionary-compressed brotli, `Content-Encoding: dcb` (RFC 9842,
//! Compression Dictionary Transport).
//!
//! Every console page downloads the core module first, then a pack of its
//! page's modules. The pack's code is built from the same crates as the
//! core, so compressed against the core's bytes as a dictionary it is about
//! a tenth smaller than brotli alone (docs/measurements.md). A browser that
//! holds the core as a dictionary (the server marks it with
//! `Use-As-Dictionary`) says so with `Available-Dictionary: :<SHA-256>:`
//! and may then be sent a pack in this encoding: the four bytes
//! `FF 44 43 42`, the dictionary's SHA-256, then a brotli stream whose
//! window starts with the dictionary.
//!
//! The console's build writes each pack's dcb body next to it (`FILE.dcb`,
//! the `jobdeck-precompress` binary); the server only reads them.

use std::io;

use brotli::enc::{BrotliEncoderParams, StandardAlloc};
use brotli::interface::{PredictionModeContextMap, StaticCommand};
use brotli::{InputPair, InputReferenceMut, IoReaderWrapper, IoWriterWrapper};
use sha2::{Digest, Sha256};

/// The first four bytes of every dcb body.
pub const MAGIC: [u8; 4] = [0xff, 0x44, 0x43, 0x42];

/// The length of a dcb body's header: the magic and the dictionary's hash.
pub const HEADER_LEN: usize = MAGIC.len() + 32;

/// The SHA-256 a dictionary is named by.
pub fn dictionary_hash(dictionary: &[u8]) -> [u8; 32] {
    Sha256::digest(dictionary).into()
}

/// The hash of the dictionary a dcb body was compressed with, or `None`
/// when `body` is not a dcb body.
pub fn hash_in(body: &[u8]) -> Option<[u8; 32]> {
    let header = body.get(..HEADER_LEN)?;
    (header[..4] == MAGIC).then(|| header[4..].try_into().expect("32 bytes"))
}

/// `data` as a dcb body against `dictionary`, at brotli `quality` (0–11).
pub fn encode(dictionary: &[u8], data: &[u8], quality: i32) -> io::Result<Vec<u8>> {
    // The window must reach back over the data and the whole dictionary:
    // 2^24 bytes, brotli's largest standard window, holds both.
    if dictionary.len() + data.len() > (1 << 24) - 16 {
        return Err(io::Error::other("dictionary and data are over brotli's 16 MiB window"));
    }
    let params = BrotliEncoderParams { quality, lgwin: 24, ..Default::default() };
    let mut body = Vec::with_capacity(HEADER_LEN + data.len() / 3);
    body.extend_from_slice(&MAGIC);
    body.extend_from_slice(&dictionary_hash(dictionary));
    let (mut input_buffer, mut output_buffer) = ([0u8; 4096], [0u8; 4096]);
    brotli::BrotliCompressCustomIoCustomDict(
        &mut IoReaderWrapper(&mut &data[..]),
        &mut IoWriterWrapper(&mut body),
        &mut input_buffer,
        &mut output_buffer,
        &params,
        StandardAlloc::default(),
        &mut no_metablock_callback,
        dictionary,
        io::Error::from(io::ErrorKind::UnexpectedEof),
    )?;
    Ok(body)
}

/// A dcb body back into its data, given its dictionary (what a browser
/// does; the tests use it).
pub fn decode(dictionary: &[u8], body: &[u8]) -> io::Result<Vec<u8>> {
    match hash_in(body) {
        Some(hash) if hash == dictionary_hash(dictionary) => {}
        Some(_) => return Err(io::Error::other("compressed against another dictionary")),
        None => return Err(io::Error::other("not a dcb body")),
    }
    let mut data = Vec::new();
    let (mut input_buffer, mut output_buffer) = ([0u8; 4096], [0u8; 4096]);
    brotli::BrotliDecompressCustomIoCustomDict(
        &mut IoReaderWrapper(&mut &body[HEADER_LEN..]),
        &mut IoWriterWrapper(&mut data),
        &mut input_buffer,
        &mut output_buffer,
        brotli::HeapAlloc::<u8>::default(),
        brotli::HeapAlloc::<u32>::default(),
        brotli::HeapAlloc::<brotli::HuffmanCode>::default(),
        dictionary.to_vec().into(),
        io::Error::from(io::ErrorKind::UnexpectedEof),
    )?;
    Ok(data)
}

fn no_metablock_callback(
    _: &mut PredictionModeContextMap<InputReferenceMut>,
    _: &mut [StaticCommand],
    _: InputPair,
    _: &mut StandardAlloc,
) {
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Data that shares long runs with the dictionary, as a pack shares code
    /// with the core.
    fn sample() -> (Vec<u8>, Vec<u8>) {
        let dictionary: Vec<u8> = (0..20_000u32).flat_map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes()).collect();
        let mut data = dictionary[10_000..30_000].to_vec();
        data.extend_from_slice(b"something the dictionary does not hold");
        data.extend_from_slice(&dictionary[50_000..60_000]);
        (dictionary, data)
    }

    #[test]
    fn a_body_decodes_to_its_data_with_its_dictionary_only() {
        let (dictionary, data) = sample();
        let body = encode(&dictionary, &data, 5).unwrap();
        assert_eq!(hash_in(&body), Some(dictionary_hash(&dictionary)));
        assert_eq!(decode(&dictionary, &body).unwrap(), data);
        assert!(decode(b"another dictionary", &body).is_err());
        assert_eq!(hash_in(b"short"), None);
        assert_eq!(hash_in(&[0u8; HEADER_LEN]), None);
    }

    #[test]
    fn the_dictionary_is_what_makes_the_body_small() {
        let (dictionary, data) = sample();
        let with = encode(&dictionary, &data, 5).unwrap();
        let without = encode(b"", &data, 5).unwrap();
        assert!(with.len() * 4 < without.len(), "{} bytes with the dictionary, {} without", with.len(), without.len());
    }
}
