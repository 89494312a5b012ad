//! Where a JSON Pointer's member is in the JSON text, so that JSON Schema errors found on
//! the parsed value can name a line and column (serde_json keeps no positions).

/// The byte offset in `source` (valid JSON) of the key (or array element) that `path`
/// leads to: object keys and array indices, outermost first. `None` if it is not there.
pub fn locate(source: &str, path: &[String]) -> Option<usize> {
    let mut s = Scanner {
        b: source.as_bytes(),
        i: 0,
    };
    s.space();
    s.find(path)
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn space(&mut self) {
        while self.b.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.space();
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    /// At a value: descends along `path` and returns where its last member starts.
    fn find(&mut self, path: &[String]) -> Option<usize> {
        let Some((want, rest)) = path.split_first() else {
            return Some(self.i);
        };
        match self.b.get(self.i)? {
            b'{' => {
                self.i += 1;
                loop {
                    self.space();
                    if self.b.get(self.i) == Some(&b'}') {
                        return None;
                    }
                    let at = self.i;
                    let key = self.string()?;
                    self.eat(b':')?;
                    self.space();
                    if &key == want {
                        return if rest.is_empty() {
                            Some(at)
                        } else {
                            self.find(rest)
                        };
                    }
                    self.skip_value()?;
                    self.eat(b',')?;
                }
            }
            b'[' => {
                let index: usize = want.parse().ok()?;
                self.i += 1;
                for _ in 0..index {
                    self.space();
                    self.skip_value()?;
                    self.eat(b',')?;
                }
                self.space();
                if rest.is_empty() {
                    Some(self.i)
                } else {
                    self.find(rest)
                }
            }
            _ => None,
        }
    }

    /// A string at the cursor, its escapes decoded (`\uXXXX` pairs included).
    fn string(&mut self) -> Option<String> {
        let start = self.i;
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        while *self.b.get(self.i)? != b'"' {
            self.i += if self.b[self.i] == b'\\' { 2 } else { 1 };
        }
        self.i += 1;
        serde_json::from_slice(&self.b[start..self.i]).ok()
    }

    /// Skips one value (the text is valid JSON, so only brackets and strings matter).
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    self.string()?;
                    if depth == 0 {
                        return Some(());
                    }
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth == 0 => return Some(()),
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.i += 1;
                        return Some(());
                    }
                }
                b',' if depth == 0 => return Some(()),
                _ => {}
            }
            self.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(src: &str, path: &[&str]) -> Option<usize> {
        let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        locate(src, &path)
    }

    #[test]
    fn finds_keys_and_elements_past_nested_values() {
        let src = r#" {"a": {"x": [1, {"}": "]"}], "b": 2}, "b": [true, {"c\"d": null}] }"#;
        assert_eq!(at(src, &["a"]), src.find(r#""a""#));
        assert_eq!(at(src, &["b"]), src.rfind(r#""b""#));
        assert_eq!(at(src, &["a", "b"]), src.find(r#""b""#));
        assert_eq!(at(src, &["b", "1", "c\"d"]), src.find(r#""c\"d""#));
        assert_eq!(at(src, &["b", "0"]), src.find("true"));
        assert_eq!(at(src, &["b", "2"]), None);
        assert_eq!(at(src, &["zzz"]), None);
        assert_eq!(at(src, &["a", "x", "1", "}"]), src.find(r#""}""#));
        // Escaped key text matches its decoded form.
        assert_eq!(at(r#"{"\u0061": 1}"#, &["a"]), Some(1));
    }
}
