//! The setup in the URL hash: `v=1&s=<lz-string compressToEncodedURIComponent of JSON>`.
//!
//! Decoding treats the hash as untrusted: its length is capped before decompression, the
//! decompressed text is capped while it is produced, the version must be known (older
//! versions pass through one migration step each), the JSON must have the right types,
//! and the state must pass [`PlaygroundState::validate`]. Strings stay data: nothing in a
//! link is ever run, and error messages quote at most a few escaped characters of it.

use crate::lz;
use crate::state::PlaygroundState;
use serde_json::Value;
use std::fmt;

/// The version [`encode`] writes: one past the last migration.
pub const VERSION: u32 = MIGRATIONS.len() as u32 + 1;

/// Longest hash accepted, in characters (checked before decompression).
pub const MAX_HASH_CHARS: usize = 64 * 1024;

/// Longest decompressed JSON accepted, in UTF-16 code units.
pub const MAX_JSON_UNITS: usize = 256 * 1024;

/// Migration steps: `MIGRATIONS[i]` turns a version `i + 1` state into version `i + 2`.
/// Version 1 is current, so there are none yet; add one per new version.
const MIGRATIONS: &[Migration] = &[];

/// One migration step: the JSON of a state of one version to the next version's.
pub type Migration = fn(Value) -> Result<Value, String>;

/// Why a link could not be read; the page shows it (one line) and opens the default state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PermalinkError {
    /// The hash has no `s=` state.
    Missing,
    /// The hash is longer than [`MAX_HASH_CHARS`].
    TooLong(usize),
    /// `v=` is missing, not a number, or a version this page does not know.
    UnknownVersion {
        /// What the link said (escaped, shortened).
        found: String,
        /// The newest version this page reads.
        newest: u32,
    },
    /// The state is not valid lz-string data (or expands beyond [`MAX_JSON_UNITS`]).
    BadEncoding(String),
    /// The decompressed state is not a JSON object.
    BadJson(String),
    /// A field has the wrong type.
    WrongTypes(String),
    /// A field is out of range.
    Invalid(String),
}

impl fmt::Display for PermalinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("This link could not be opened: ")?;
        match self {
            PermalinkError::Missing => f.write_str("it holds no state (expected #v=1&s=…)"),
            PermalinkError::TooLong(n) => write!(
                f,
                "it is {n} characters long, above the limit of {MAX_HASH_CHARS}"
            ),
            PermalinkError::UnknownVersion { found, newest } => {
                write!(
                    f,
                    "version {found} is not one this page reads (1 to {newest})"
                )
            }
            PermalinkError::BadEncoding(m) => write!(f, "bad encoding: {m}"),
            PermalinkError::BadJson(m) => write!(f, "bad data: {m}"),
            PermalinkError::WrongTypes(m) => write!(f, "a field has the wrong type: {m}"),
            PermalinkError::Invalid(m) => write!(f, "{m}"),
        }?;
        f.write_str(". Showing the default example.")
    }
}

impl std::error::Error for PermalinkError {}

/// The hash body (without `#`) for `state`: `v=1&s=<lz>`.
pub fn encode(state: &PlaygroundState) -> String {
    let json = serde_json::to_string(state).expect("a state always serializes");
    format!(
        "v={VERSION}&s={}",
        lz::compress_to_encoded_uri_component(&json)
    )
}

/// At most `n` characters of untrusted text, escaped, for a message.
pub(crate) fn quote(s: &str, n: usize) -> String {
    let mut q: String = s
        .chars()
        .take(n)
        .collect::<String>()
        .escape_debug()
        .to_string();
    if s.chars().count() > n {
        q.push('…');
    }
    format!("\"{q}\"")
}

/// One line of a (possibly multi-line) message, at most 200 characters.
fn line(s: &str) -> String {
    let l = s.lines().next().unwrap_or_default();
    let mut out: String = l.chars().take(200).collect();
    if l.chars().count() > 200 {
        out.push('…');
    }
    out
}

/// Reads a hash (with or without its leading `#`) back into a validated state.
pub fn decode(hash: &str) -> Result<PlaygroundState, PermalinkError> {
    decode_with(hash, MIGRATIONS)
}

/// [`decode`] with an explicit migration table (`migrations[i]` turns version `i + 1`
/// into `i + 2`; the newest version is `migrations.len() + 1`): a link of any older
/// version passes through each later step in turn.
pub fn decode_with(
    hash: &str,
    migrations: &[Migration],
) -> Result<PlaygroundState, PermalinkError> {
    let newest = migrations.len() as u32 + 1;
    let n = hash.chars().count();
    if n > MAX_HASH_CHARS {
        return Err(PermalinkError::TooLong(n));
    }
    let hash = hash.strip_prefix('#').unwrap_or(hash);
    let mut version: Option<&str> = None;
    let mut packed: Option<&str> = None;
    for part in hash.split('&') {
        match part.split_once('=') {
            Some(("v", v)) => version = Some(v),
            Some(("s", s)) => packed = Some(s),
            _ => {}
        }
    }
    let packed = packed.ok_or(PermalinkError::Missing)?;
    let unknown = |found: String| PermalinkError::UnknownVersion { found, newest };
    let version = version.ok_or_else(|| unknown("(none)".into()))?;
    let v: u32 = version
        .parse()
        .ok()
        .filter(|v| (1..=newest).contains(v))
        .ok_or_else(|| unknown(quote(version, 12)))?;
    let packed = percent_decode(packed)
        .ok_or_else(|| PermalinkError::BadEncoding("a %-escape is not valid".into()))?;
    let json = lz::decompress_from_encoded_uri_component(&packed, MAX_JSON_UNITS)
        .map_err(|e| PermalinkError::BadEncoding(e.to_string()))?;
    let mut value: Value =
        serde_json::from_str(&json).map_err(|e| PermalinkError::BadJson(line(&e.to_string())))?;
    if !value.is_object() {
        return Err(PermalinkError::BadJson(
            "the state is not a JSON object".into(),
        ));
    }
    for step in &migrations[(v - 1) as usize..] {
        value = step(value).map_err(PermalinkError::BadJson)?;
    }
    let state: PlaygroundState = serde_json::from_value(value)
        .map_err(|e| PermalinkError::WrongTypes(line(&e.to_string())))?;
    state
        .validate()
        .map_err(|e| PermalinkError::Invalid(line(&e)))?;
    Ok(state)
}

/// Decodes `%XX` escapes (a link copied through a mail client may carry them); `None` for
/// a malformed escape or one that is not ASCII.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            let b = u8::from_str_radix(hex, 16).ok().filter(u8::is_ascii)?;
            out.push(b as char);
            i += 3;
        } else {
            let c = s[i..].chars().next()?;
            out.push(c);
            i += c.len_utf8();
        }
    }
    Some(out)
}

// Native only: proptest has no wasm32 build here (tests/wasm.rs covers wasm32).
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::detect::GrammarKind;
    use crate::state::{ModelChoice, ToyModel};
    use proptest::prelude::*;

    fn pack(json: &str) -> String {
        format!("v=1&s={}", lz::compress_to_encoded_uri_component(json))
    }

    #[test]
    fn default_round_trips_with_and_without_hash_sign() {
        let s = PlaygroundState::default();
        let h = encode(&s);
        assert!(h.starts_with("v=1&s="), "{h}");
        assert_eq!(decode(&h).unwrap(), s);
        assert_eq!(decode(&format!("#{h}")).unwrap(), s);
        // Parameter order does not matter; unknown parameters are ignored.
        let (v, rest) = h.split_once('&').unwrap();
        assert_eq!(decode(&format!("{rest}&x=1&{v}")).unwrap(), s);
    }

    #[test]
    fn every_example_round_trips() {
        for e in crate::examples::examples() {
            let s = e.state();
            assert_eq!(decode(&encode(&s)).unwrap(), s, "{}", e.id);
        }
    }

    #[test]
    fn hostile_links_give_one_line_errors() {
        let cases: Vec<(String, &str)> = vec![
            (String::new(), "no state"),
            ("v=1".into(), "no state"),
            ("s=abc".into(), "version"),
            ("v=2&s=abc".into(), "version \"2\""),
            ("v=-1&s=abc".into(), "version"),
            ("v=1&s=<script>".into(), "not in the link alphabet"),
            ("v=1&s=%zz".into(), "%-escape"),
            ("v=1&s=NoXQ".into(), "bad"),
            (pack("[1, 2]"), "not a JSON object"),
            (pack("{\"n\": \"ten\"}"), "wrong type"),
            (pack("{\"n\": -3}"), "wrong type"),
            (pack("{\"n\": 0}"), "n must be"),
            (pack("{\"budget\": 0}"), "budget"),
            (pack("{\"seed\": 1.5}"), "wrong type"),
            (pack("{\"compare\": \"lcd\"}"), "wrong type"),
            (pack("{\"model\": {\"gpu\": 1}}"), "wrong type"),
            (pack("{\"method\": \"rm -rf\"}"), "unknown method"),
            (pack("{\"ess_threshold\": 1e400}"), "bad data"),
            (
                pack(&format!("{{\"grammar\": \"{}\"}}", "x".repeat(70_000))),
                "limit",
            ),
            (pack(&"[".repeat(10_000)), "bad data"),
            // Small on the wire, huge once expanded: refused while expanding.
            (
                pack(&format!(
                    "{{\"prompt\": \"{}\"}}",
                    "a".repeat(MAX_JSON_UNITS)
                )),
                "expands beyond",
            ),
            (
                "v=1&s=".to_string() + &"A".repeat(MAX_HASH_CHARS + 1),
                "limit",
            ),
        ];
        for (hash, want) in cases {
            let e = decode(&hash).unwrap_err().to_string();
            assert!(
                e.contains(want),
                "{:?} gave {e:?}",
                &hash[..hash.len().min(40)]
            );
            assert!(!e.contains('\n') && e.len() < 400, "{e}");
        }
    }

    /// A made-up version 2 that renamed `n` to `samples`, and version 3 that made `seed` a
    /// string: links of versions 1 and 2 go through the later steps.
    #[test]
    fn older_versions_pass_through_each_migration_step() {
        fn v1_to_v2(mut v: Value) -> Result<Value, String> {
            let o = v.as_object_mut().ok_or("not an object")?;
            if let Some(n) = o.remove("n") {
                o.insert("samples".into(), n);
            }
            Ok(v)
        }
        fn v2_to_v3(mut v: Value) -> Result<Value, String> {
            let o = v.as_object_mut().ok_or("not an object")?;
            // Version 3 is the current shape here: back to `n`, seed as a number.
            if let Some(n) = o.remove("samples") {
                o.insert("n".into(), n);
            }
            if let Some(Value::String(s)) = o.get("seed").cloned() {
                let seed: u64 = s.parse().map_err(|_| "seed is not a number")?;
                o.insert("seed".into(), seed.into());
            }
            Ok(v)
        }
        let table: &[Migration] = &[v1_to_v2, v2_to_v3];
        let with = |v: u32, json: &str| {
            decode_with(
                &format!("v={v}&s={}", lz::compress_to_encoded_uri_component(json)),
                table,
            )
        };
        let s = with(1, r#"{"n": 5, "seed": 9}"#).unwrap();
        assert_eq!((s.n, s.seed), (5, 9));
        let s = with(2, r#"{"samples": 6, "seed": "10"}"#).unwrap();
        assert_eq!((s.n, s.seed), (6, 10));
        let s = with(3, r#"{"n": 7}"#).unwrap();
        assert_eq!(s.n, 7);
        let e = with(2, r#"{"seed": "x"}"#).unwrap_err();
        assert!(e.to_string().contains("seed is not a number"), "{e}");
        let e = with(4, "{}").unwrap_err();
        assert!(e.to_string().contains("(1 to 3)"), "{e}");
    }

    #[test]
    fn script_in_strings_stays_data() {
        let s = PlaygroundState {
            prompt: "<script>alert(1)</script>\"'&".into(),
            grammar: "</textarea><img src=x onerror=alert(1)>".into(),
            example: Some("\u{202e}<b>".into()),
            ..PlaygroundState::default()
        };
        assert_eq!(decode(&encode(&s)).unwrap(), s);
        // And a message never carries more than a few escaped characters of the link.
        let e = decode("v=<script>alert(1)</script>&s=x")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("</script>"), "{e}");
    }

    #[test]
    fn the_hash_is_url_safe() {
        let s = PlaygroundState {
            prompt: "é ☃ & = # ? / + %".into(),
            ..PlaygroundState::default()
        };
        let h = encode(&s);
        assert!(
            h.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-$=&".contains(c)),
            "{h}"
        );
        assert_eq!(decode(&h).unwrap(), s);
    }

    fn arb_state() -> impl Strategy<Value = PlaygroundState> {
        let methods: Vec<&str> = sampler_core::samplers::Method::ALL
            .iter()
            .map(|m| m.name())
            .collect();
        (
            ("\\PC{0,80}", "\\PC{0,80}", any::<bool>()),
            (
                prop::sample::select(methods.clone()),
                1..=crate::state::caps::N,
            ),
            (
                1..=100usize,
                1..=64usize,
                0..=20u32,
                1..=512usize,
                any::<u64>(),
                1..=crate::state::caps::BUDGET,
                1..=crate::state::caps::BATCH,
            ),
            (
                prop::sample::select(GrammarKind::ALL.to_vec()),
                prop::collection::vec(prop::sample::select(methods), 0..=4),
                prop::option::of("[a-z-]{1,20}"),
                prop_oneof![
                    Just(ModelChoice::Toy(ToyModel::Gsk)),
                    (any::<u64>(), 2..=8u8).prop_map(|(seed, vocab)| ModelChoice::Toy(
                        ToyModel::Random { seed, vocab }
                    )),
                    Just(ModelChoice::Real { url: None }),
                    "[a-z/.]{0,30}".prop_map(|p| ModelChoice::Real {
                        url: Some(format!("https://{p}"))
                    }),
                ],
            ),
        )
            .prop_map(
                |(
                    (grammar, prompt, chat),
                    (method, n),
                    (steps, particles, ess, max_tokens, seed, budget, batch),
                    (grammar_kind, compare, example, model),
                )| PlaygroundState {
                    grammar,
                    grammar_kind,
                    prompt,
                    chat,
                    method: method.to_string(),
                    n,
                    steps,
                    particles,
                    batch,
                    ess_threshold: ess as f64 / 20.0,
                    max_tokens,
                    seed,
                    model,
                    compare: compare.into_iter().map(String::from).collect(),
                    budget,
                    example,
                },
            )
    }

    proptest! {
        #[test]
        fn encode_decode_round_trips(s in arb_state()) {
            prop_assert_eq!(decode(&encode(&s)), Ok(s));
        }

        #[test]
        fn decode_never_panics(h in "\\PC{0,300}") {
            let _ = decode(&h);
        }

        #[test]
        fn decode_never_panics_on_link_shaped_input(s in "[A-Za-z0-9+$-]{0,400}") {
            let _ = decode(&format!("v=1&s={s}"));
        }

        #[test]
        fn decode_never_panics_on_mutated_links(s in arb_state(), i in any::<prop::sample::Index>(), c in "[A-Za-z0-9+$-]") {
            let h = encode(&s);
            let at = 6 + i.index(h.len() - 6);
            let mut m = h.clone();
            m.replace_range(at..at + 1, &c);
            if let Ok(back) = decode(&m) {
                prop_assert!(back.validate().is_ok());
            }
        }
    }
}
