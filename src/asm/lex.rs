//! Splitting one source line into tokens.

use super::{AsmError, AsmErrorKind};

/// A token's kind.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// A name: letters, digits, `_` and `.`, not starting with a digit
    /// (directives such as `.mem` are names too).
    Ident(String),
    /// An integer literal.
    Num(u64),
    /// A float literal (`1.5f`): its f32 bits when used as a value.
    Float(f32),
    /// A string literal's bytes.
    Str(Vec<u8>),
    /// Punctuation or an operator: `, = ( ) + - * / % & | ^ ~ << >> : $`.
    Punct(&'static str),
}

/// A token and the 1-based column (in characters) where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub col: usize,
}

fn err(line: usize, col: usize, kind: AsmErrorKind) -> AsmError {
    AsmError::new(line, col, kind)
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '.'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// Where a line's comment starts (`;` or `//` outside a string), in chars.
pub(crate) fn comment_start(chars: &[char]) -> usize {
    let mut in_string = false;
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if in_string {
            if c == '\\' {
                i += 1;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if c == ';' || (c == '/' && chars.get(i + 1) == Some(&'/')) {
            return i;
        }
        i += 1;
    }
    chars.len()
}

/// Tokenizes `chars` (one line, comment included) of line `line`.
pub(crate) fn tokenize(chars: &[char], line: usize) -> Result<Vec<Token>, AsmError> {
    let end = comment_start(chars);
    let chars = chars.get(..end).unwrap_or(chars);
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let col = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if is_ident_start(c) {
            let start = i;
            while chars.get(i).is_some_and(|&c| is_ident_char(c)) {
                i += 1;
            }
            let name: String = chars.get(start..i).unwrap_or(&[]).iter().collect();
            tokens.push(Token { tok: Tok::Ident(name), col });
            continue;
        }
        if c.is_ascii_digit() {
            let (tok, next) = number(chars, i, line)?;
            tokens.push(Token { tok, col });
            i = next;
            continue;
        }
        if c == '"' {
            let (bytes, next) = string(chars, i, line)?;
            tokens.push(Token { tok: Tok::Str(bytes), col });
            i = next;
            continue;
        }
        let two: String = chars.get(i..i + 2).unwrap_or(&[]).iter().collect();
        if two == "<<" || two == ">>" {
            tokens.push(Token { tok: Tok::Punct(if two == "<<" { "<<" } else { ">>" }), col });
            i += 2;
            continue;
        }
        let p = match c {
            ',' => ",",
            '=' => "=",
            '(' => "(",
            ')' => ")",
            '+' => "+",
            '-' => "-",
            '*' => "*",
            '/' => "/",
            '%' => "%",
            '&' => "&",
            '|' => "|",
            '^' => "^",
            '~' => "~",
            ':' => ":",
            '$' => "$",
            other => return Err(err(line, col, AsmErrorKind::UnexpectedCharacter(other))),
        };
        tokens.push(Token { tok: Tok::Punct(p), col });
        i += 1;
    }
    Ok(tokens)
}

/// An integer (`123`, `0x7f`, `0b101`, `_` separators allowed) or a float
/// with an `f` suffix (`1.5f`, `2e3f`, `1f`).
fn number(chars: &[char], start: usize, line: usize) -> Result<(Tok, usize), AsmError> {
    let col = start + 1;
    let mut i = start;
    while chars.get(i).is_some_and(|&c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
        // An exponent sign belongs to the literal (`1e-3f`).
        i += 1;
        if matches!(chars.get(i), Some('+') | Some('-'))
            && matches!(chars.get(i - 1), Some('e') | Some('E'))
            && !chars.get(start..i).unwrap_or(&[]).iter().any(|c| matches!(c, 'x' | 'X'))
        {
            i += 1;
        }
    }
    let text: String = chars.get(start..i).unwrap_or(&[]).iter().filter(|&&c| c != '_').collect();
    let lower = text.to_ascii_lowercase();
    let bad = || err(line, col, AsmErrorKind::BadNumber(text.clone()));
    let value = if let Some(hex) = lower.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).map_err(|_| bad())?
    } else if let Some(bin) = lower.strip_prefix("0b") {
        u64::from_str_radix(bin, 2).map_err(|_| bad())?
    } else if let Some(float) = lower.strip_suffix('f') {
        let v: f32 = float.parse().map_err(|_| bad())?;
        return Ok((Tok::Float(v), i));
    } else {
        lower.parse::<u64>().map_err(|_| bad())?
    };
    Ok((Tok::Num(value), i))
}

/// A string literal starting at the `"` at `start`: escapes `\\ \" \n \r
/// \t \0 \xNN`.
pub(crate) fn string(chars: &[char], start: usize, line: usize) -> Result<(Vec<u8>, usize), AsmError> {
    let mut out = Vec::new();
    let mut i = start + 1;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(err(line, start + 1, AsmErrorKind::UnterminatedString));
        };
        i += 1;
        match c {
            '"' => return Ok((out, i)),
            '\\' => {
                let Some(&e) = chars.get(i) else {
                    return Err(err(line, i, AsmErrorKind::UnterminatedString));
                };
                i += 1;
                match e {
                    '\\' => out.push(b'\\'),
                    '"' => out.push(b'"'),
                    'n' => out.push(b'\n'),
                    'r' => out.push(b'\r'),
                    't' => out.push(b'\t'),
                    '0' => out.push(0),
                    'x' => {
                        let hex: String = chars.get(i..i + 2).unwrap_or(&[]).iter().collect();
                        let v = u8::from_str_radix(&hex, 16)
                            .ok()
                            .filter(|_| hex.len() == 2)
                            .ok_or_else(|| err(line, i - 1, AsmErrorKind::HexEscapeDigits))?;
                        out.push(v);
                        i += 2;
                    }
                    other => return Err(err(line, i - 1, AsmErrorKind::UnknownEscape(other))),
                }
            }
            other => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(other.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

/// Quotes `bytes` as a string literal the lexer reads back exactly.
pub(crate) fn quote(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    s.push('"');
    let text = String::from_utf8_lossy(bytes);
    let exact = matches!(text, std::borrow::Cow::Borrowed(_));
    if exact {
        for c in text.chars() {
            push_escaped(&mut s, c);
        }
    } else {
        for &b in bytes {
            if b.is_ascii() {
                push_escaped(&mut s, char::from(b));
            } else {
                s.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    s.push('"');
    s
}

fn push_escaped(s: &mut String, c: char) {
    match c {
        '\\' => s.push_str("\\\\"),
        '"' => s.push_str("\\\""),
        '\n' => s.push_str("\\n"),
        '\r' => s.push_str("\\r"),
        '\t' => s.push_str("\\t"),
        '\0' => s.push_str("\\0"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => s.push_str(&format!("\\x{:02x}", c as u32)),
        c => s.push(c),
    }
}
