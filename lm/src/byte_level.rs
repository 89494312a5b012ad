//! GPT-2's byte-to-unicode mapping, which byte-level BPE vocabularies are written in.
//!
//! Printable bytes (`!`..=`~`, `¡`..=`¬`, `®`..=`ÿ`) stand for themselves; the other 68
//! bytes are given the code points 256, 257, … in byte order (so a space is `Ġ`, U+0120,
//! and a newline `Ċ`, U+010A).

/// The character each byte is written as.
pub fn byte_to_char() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut next = 256u32;
    for (b, slot) in table.iter_mut().enumerate() {
        let printable = matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF);
        let cp = if printable {
            b as u32
        } else {
            next += 1;
            next - 1
        };
        *slot = char::from_u32(cp).unwrap_or('\u{FFFD}');
    }
    table
}

/// Decodes a byte-level token string into its bytes; `None` if a character is outside
/// the mapping (such a token is not byte-level text).
pub fn decode_token(text: &str, inverse: &std::collections::HashMap<char, u8>) -> Option<Vec<u8>> {
    text.chars().map(|c| inverse.get(&c).copied()).collect()
}

/// The inverse of [`byte_to_char`].
pub fn char_to_byte() -> std::collections::HashMap<char, u8> {
    byte_to_char()
        .iter()
        .enumerate()
        .map(|(b, &c)| (c, b as u8))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_characters() {
        let t = byte_to_char();
        assert_eq!(t[b' ' as usize], 'Ġ');
        assert_eq!(t[b'\n' as usize], 'Ċ');
        assert_eq!(t[b'a' as usize], 'a');
        assert_eq!(t[0xAD], 'Ń');
        let inv = char_to_byte();
        assert_eq!(inv.len(), 256);
        assert_eq!(decode_token("ĠhelloĊ", &inv).unwrap(), b" hello\n");
    }
}
