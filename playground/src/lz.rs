//! lz-string's `compressToEncodedURIComponent` format: compression by the `lz-str` crate,
//! decompression here, bounded, because a permalink is untrusted input.
//!
//! The format (lz-string 1.5, the TypeScript playground's links): an LZW-style code stream
//! over UTF-16 code units, codes written least significant bit first with widths growing
//! from 2 bits, packed six bits per character of the alphabet
//! `A-Z a-z 0-9 + - $`, most significant bit first. Codes 0 and 1 introduce a literal of
//! 8 or 16 bits, code 2 ends the stream; a code one past the dictionary means
//! "the previous entry plus its own first unit".

/// The URI-safe alphabet in value order. lz-string lists 65 characters; `$` (64) is never
/// written (six bits reach 63) and reads as zero bits, as in lz-string.
const ALPHABET: &[u8; 65] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-$";

/// Why a compressed string could not be decompressed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LzError {
    /// A character outside the URI-safe alphabet, at this character index.
    BadCharacter(usize),
    /// The code stream is malformed (ends early, or names an entry that does not exist).
    Corrupt,
    /// The output would exceed the cap (in UTF-16 code units).
    TooLarge(usize),
    /// The output is not valid UTF-16.
    BadUtf16,
}

impl std::fmt::Display for LzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LzError::BadCharacter(i) => {
                write!(f, "character {} is not in the link alphabet", i + 1)
            }
            LzError::Corrupt => f.write_str("the compressed data is corrupt"),
            LzError::TooLarge(cap) => write!(f, "it expands beyond {cap} characters"),
            LzError::BadUtf16 => f.write_str("it decompresses to invalid text"),
        }
    }
}

/// Compresses `text` exactly as lz-string's `compressToEncodedURIComponent`.
pub fn compress_to_encoded_uri_component(text: &str) -> String {
    lz_str::compress_to_encoded_uri_component(text)
}

/// Reads bits, most significant first within each six-bit character.
struct Bits {
    values: Vec<u8>,
    index: usize,
    bit: u8,
}

impl Bits {
    fn next(&mut self) -> Result<u32, LzError> {
        let v = *self.values.get(self.index).ok_or(LzError::Corrupt)?;
        let b = (v >> self.bit) & 1;
        if self.bit == 0 {
            self.bit = 5;
            self.index += 1;
        } else {
            self.bit -= 1;
        }
        Ok(b as u32)
    }

    /// `n` bits, the first read being the least significant.
    fn read(&mut self, n: u32) -> Result<u32, LzError> {
        let mut out = 0;
        for i in 0..n {
            out |= self.next()? << i;
        }
        Ok(out)
    }
}

/// Decompresses lz-string's `compressToEncodedURIComponent` output, refusing output longer
/// than `max_units` UTF-16 code units before producing it. A space reads as `+` (as in
/// lz-string, since form encoding turns `+` into a space); other characters outside the
/// alphabet are an error (lz-string reads them as zeros). The empty string decodes to "".
pub fn decompress_from_encoded_uri_component(
    input: &str,
    max_units: usize,
) -> Result<String, LzError> {
    let mut values = Vec::with_capacity(input.len());
    for (i, c) in input.chars().enumerate() {
        let c = if c == ' ' { '+' } else { c };
        let v = u8::try_from(c)
            .ok()
            .and_then(|b| ALPHABET.iter().position(|&a| a == b))
            .ok_or(LzError::BadCharacter(i))?;
        values.push(v as u8);
    }
    if values.is_empty() {
        return Ok(String::new());
    }
    let mut bits = Bits {
        values,
        index: 0,
        bit: 5,
    };
    // Entries 0, 1, 2 stand for the three control codes.
    let mut dict: Vec<Vec<u16>> = vec![Vec::new(), Vec::new(), Vec::new()];
    let first = match bits.read(2)? {
        0 => bits.read(8)? as u16,
        1 => bits.read(16)? as u16,
        2 => return Ok(String::new()),
        _ => return Err(LzError::Corrupt),
    };
    dict.push(vec![first]);
    let mut w = vec![first];
    let mut out = vec![first];
    let mut width = 3u32;
    let mut enlarge_in = 4u64;
    loop {
        // The dictionary never exceeds the output (plus one entry per code), which the cap
        // bounds, so the width stays far below 32 bits.
        let mut code = bits.read(width)? as usize;
        match code {
            0 | 1 => {
                let unit = bits.read(if code == 0 { 8 } else { 16 })? as u16;
                dict.push(vec![unit]);
                code = dict.len() - 1;
                enlarge_in -= 1;
            }
            2 => break,
            _ => {}
        }
        if enlarge_in == 0 {
            enlarge_in = 1 << width;
            width += 1;
        }
        let entry = if code < dict.len() && code > 2 {
            dict[code].clone()
        } else if code == dict.len() {
            let mut e = w.clone();
            e.push(w[0]);
            e
        } else {
            return Err(LzError::Corrupt);
        };
        if out.len() + entry.len() > max_units {
            return Err(LzError::TooLarge(max_units));
        }
        out.extend_from_slice(&entry);
        let mut added = w;
        added.push(entry[0]);
        dict.push(added);
        enlarge_in -= 1;
        w = entry;
        if enlarge_in == 0 {
            enlarge_in = 1 << width;
            width += 1;
        }
        if width > 24 {
            return Err(LzError::Corrupt);
        }
    }
    String::from_utf16(&out).map_err(|_| LzError::BadUtf16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CAP: usize = 1 << 20;

    /// Outputs of lz-string 1.5.0's `compressToEncodedURIComponent` (npm `lz-string`, run
    /// with node by `tests/data/lz_vectors.js`).
    const VECTORS: &str = include_str!("../tests/data/lz_vectors.json");

    #[test]
    fn known_vectors_both_ways() {
        let vectors: Vec<(String, String)> = serde_json::from_str(VECTORS).unwrap();
        assert!(vectors.len() >= 12);
        for (plain, packed) in &vectors {
            assert_eq!(
                &compress_to_encoded_uri_component(plain),
                packed,
                "{plain:?}"
            );
            assert_eq!(
                &decompress_from_encoded_uri_component(packed, CAP).unwrap(),
                plain
            );
        }
        // The empty string compresses to "Q" (a lone end code).
        assert_eq!(vectors[0], (String::new(), "Q".to_string()));
    }

    /// What lz-string 1.5.0 made of one input: UTF-16 units, null, or a throw.
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Js {
        Units(Vec<u16>),
        Null(()),
        Threw(String),
    }

    /// 1,000 random strings over the alphabet and what lz-string 1.5.0 makes of them
    /// (`tests/data/lz_random_decode.js`). Where we decode, lz-string gives the same text;
    /// where lz-string gives valid text, so do we, except when its last code reads past
    /// the end of the data (lz-string reads zeros there; we call the stream corrupt).
    #[test]
    fn random_strings_decode_as_lz_string_does() {
        let cases: Vec<(String, Js)> =
            serde_json::from_str(include_str!("../tests/data/lz_random_decode.json")).unwrap();
        let (mut texts, mut read_past_end) = (0, 0);
        for (input, js) in &cases {
            let js_text = match js {
                Js::Units(u) => Some(String::from_utf16(u)),
                Js::Null(()) => None,
                Js::Threw(t) => {
                    assert_eq!(t, "throw");
                    None
                }
            };
            match (decompress_from_encoded_uri_component(input, CAP), js_text) {
                (Ok(ours), Some(Ok(theirs))) => {
                    assert_eq!(ours, theirs, "{input:?}");
                    texts += 1;
                }
                (Ok(ours), other) => panic!("{input:?}: ours {ours:?}, lz-string {other:?}"),
                (Err(LzError::BadUtf16), Some(Err(_))) => {}
                (Err(LzError::Corrupt), Some(Ok(t))) if !t.is_empty() => read_past_end += 1,
                (Err(_), _) => {}
            }
        }
        println!("{texts} texts agree with lz-string, {read_past_end} read past the end");
        assert!(
            texts > 200 && read_past_end < 50,
            "{texts} texts, {read_past_end} past the end"
        );
    }

    #[test]
    fn hostile_inputs_are_errors() {
        assert_eq!(
            decompress_from_encoded_uri_component("ab<c", CAP),
            Err(LzError::BadCharacter(2))
        );
        assert_eq!(decompress_from_encoded_uri_component("", CAP).unwrap(), "");
        // A stream that ends before its end code.
        let packed = compress_to_encoded_uri_component("hello hello hello");
        let cut = &packed[..packed.len() / 2];
        assert_eq!(
            decompress_from_encoded_uri_component(cut, CAP),
            Err(LzError::Corrupt)
        );
        // The cap holds before the output is built.
        let big = compress_to_encoded_uri_component(&"ab".repeat(5000));
        assert_eq!(
            decompress_from_encoded_uri_component(&big, 9999),
            Err(LzError::TooLarge(9999))
        );
        assert_eq!(
            decompress_from_encoded_uri_component(&big, 10_000).unwrap(),
            "ab".repeat(5000)
        );
    }

    /// The worst expansion: each code one unit longer than the last (k codes give k²/2
    /// units). The cap stops it.
    #[test]
    fn a_bomb_is_stopped_by_the_cap() {
        let bomb = compress_to_encoded_uri_component(&"a".repeat(200_000));
        assert!(bomb.len() < 2000, "{}", bomb.len());
        assert_eq!(
            decompress_from_encoded_uri_component(&bomb, 100_000),
            Err(LzError::TooLarge(100_000))
        );
    }

    proptest! {
        #[test]
        fn round_trips(s in "\\PC{0,300}") {
            let packed = compress_to_encoded_uri_component(&s);
            prop_assert_eq!(decompress_from_encoded_uri_component(&packed, CAP).unwrap(), s);
        }

        #[test]
        fn never_panics_and_agrees_with_lz_str(s in "[A-Za-z0-9+$ -]{0,200}") {
            let ours = decompress_from_encoded_uri_component(&s, CAP);
            let theirs = lz_str::decompress_from_encoded_uri_component(&s)
                .and_then(|u| String::from_utf16(&u).ok());
            // lz-str fails a stream whose end code ends on the very last bit (it reads
            // ahead); where it succeeds, we agree with it.
            if let Some(text) = theirs {
                prop_assert_eq!(ours, Ok(text));
            }
        }

        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
            let _ = decompress_from_encoded_uri_component(&s, CAP);
        }
    }
}
