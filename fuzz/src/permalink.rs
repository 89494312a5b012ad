//! The playground's permalink decoder: `#v=…&s=…`, lz-string, JSON, migrations.

use crate::util::text;
use playground::permalink::{decode, encode};

/// Decodes the input as a hash; a state that decodes must re-encode to a link that
/// decodes to the same state.
pub fn run(data: &[u8]) {
    let hash = text(data);
    match decode(hash) {
        Ok(state) => {
            let again = decode(&encode(&state)).expect("a re-encoded state decodes");
            assert_eq!(
                again, state,
                "a decoded permalink does not survive re-encoding"
            );
        }
        Err(e) => assert!(
            !e.to_string().is_empty(),
            "a permalink error without a message"
        ),
    }
}
