//! Parsing source lines into statements.

use super::expr::{Cursor, Expr};
use super::lex::{self, Tok, Token};
use super::{AsmError, AsmErrorKind};
use crate::regs::db::GpuFamily;

/// Bare words that set header flags of a packet.
pub(crate) const FLAG_WORDS: [&str; 5] = ["predicate", "compute", "shader_type", "cam", "reset_filter_cam"];

/// Keys whose value is a comma-separated list.
const LIST_KEYS: [&str; 1] = ["data"];

/// One `key=value` (or a bare flag word) of a statement's operands.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Keyed {
    /// Lowercased key.
    pub key: String,
    pub values: Vec<Expr>,
    pub col: usize,
}

/// A statement's operands: positional values and keyed ones, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Items {
    pub positional: Vec<Expr>,
    pub keyed: Vec<Keyed>,
}

/// An item of `.db`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ByteItem {
    Value(Expr),
    Bytes(Vec<u8>),
}

/// Statements that put bytes into a block.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Data {
    Dw(Vec<Expr>),
    Dq(Vec<Expr>),
    Db(Vec<ByteItem>),
    Fill {
        count: Expr,
        value: Option<Expr>,
    },
    Align(Expr),
    Space(Expr),
    /// A packet or a macro.
    Op {
        mnemonic: String,
        items: Items,
    },
}

/// A queue operand of `.submit`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum QueueSpec {
    Index(u32),
    Expr(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stmt {
    Info { key: String, value: String },
    Gpu(GpuFamily),
    Equ { name: String, expr: Expr },
    Mem(Option<Expr>),
    Write(Expr),
    Ancillary([u8; 4]),
    End,
    Zero { address: Expr, len: Expr },
    Submit { queue: QueueSpec, address: Expr, size: Option<Expr> },
    Shader { header: Expr, code: Expr, relocated: bool },
    Note(String),
    Data(Data),
}

/// One source line: its labels and its statement.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Line {
    pub number: usize,
    pub labels: Vec<(String, usize)>,
    pub stmt: Option<Stmt>,
    /// Column of the statement's first token.
    pub col: usize,
}

fn err(line: usize, col: usize, kind: AsmErrorKind) -> AsmError {
    AsmError::new(line, col, kind)
}

/// Parses the whole source.
pub(crate) fn parse(source: &str) -> Result<Vec<Line>, AsmError> {
    let mut lines = Vec::new();
    for (i, text) in source.split('\n').enumerate() {
        let text = text.strip_suffix('\r').unwrap_or(text);
        let chars: Vec<char> = text.chars().collect();
        if let Some(line) = parse_line(&chars, i + 1)? {
            lines.push(line);
        }
    }
    Ok(lines)
}

/// The directive word at `chars[start..]` and where its operand text starts.
fn leading_word(chars: &[char], start: usize) -> (String, usize) {
    let mut i = start;
    while chars.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    let word_start = i;
    while chars.get(i).is_some_and(|c| !c.is_whitespace()) {
        i += 1;
    }
    (chars.get(word_start..i).unwrap_or(&[]).iter().collect(), i)
}

pub(crate) fn parse_line(chars: &[char], number: usize) -> Result<Option<Line>, AsmError> {
    // `.info` and `.note` take the rest of the line verbatim (no comments).
    let (word, after) = leading_word(chars, 0);
    let lower = word.to_ascii_lowercase();
    if lower == ".info" || lower == ".note" {
        let col = chars.iter().position(|c| !c.is_whitespace()).map_or(1, |p| p + 1);
        let rest = chars.get(after..).unwrap_or(&[]);
        let stmt = if lower == ".info" { info(rest, after, number)? } else { note(rest, after, number)? };
        return Ok(Some(Line { number, labels: Vec::new(), stmt: Some(stmt), col }));
    }
    let tokens = lex::tokenize(chars, number)?;
    let end_col = lex::comment_start(chars) + 1;
    let mut cur = Cursor::new(&tokens, number, end_col);
    let mut labels = Vec::new();
    while let (Some(Token { tok: Tok::Ident(name), col }), Some(Token { tok: Tok::Punct(":"), .. })) =
        (cur.peek(), cur.peek_at(1))
    {
        if name.starts_with('.') {
            return Err(err(number, *col, AsmErrorKind::InvalidLabel(name.clone())));
        }
        labels.push((name.clone(), *col));
        cur.pos += 2;
    }
    let Some(first) = cur.peek() else {
        if labels.is_empty() {
            return Ok(None);
        }
        return Ok(Some(Line { number, labels, stmt: None, col: end_col }));
    };
    let col = first.col;
    let Tok::Ident(word) = &first.tok else {
        return Err(cur.error(AsmErrorKind::ExpectedStatement));
    };
    cur.pos += 1;
    // `name = expr` defines a constant.
    if !word.starts_with('.') && cur.eat_punct("=") {
        let expr = cur.expr()?;
        expect_end(&cur)?;
        return Ok(Some(Line { number, labels, stmt: Some(Stmt::Equ { name: word.clone(), expr }), col }));
    }
    let stmt = if word.starts_with('.') {
        directive(&word.to_ascii_lowercase(), &mut cur, col)?
    } else {
        Stmt::Data(Data::Op { mnemonic: word.clone(), items: items(&mut cur)? })
    };
    Ok(Some(Line { number, labels, stmt: Some(stmt), col }))
}

fn expect_end(cur: &Cursor<'_>) -> Result<(), AsmError> {
    if cur.at_end() {
        Ok(())
    } else {
        Err(cur.error(AsmErrorKind::TextAfterStatement))
    }
}

/// Comma- (or space-) separated expressions up to the end of the line.
fn expr_list(cur: &mut Cursor<'_>) -> Result<Vec<Expr>, AsmError> {
    let mut out = Vec::new();
    while !cur.at_end() {
        if cur.eat_punct(",") {
            continue;
        }
        out.push(cur.expr()?);
    }
    Ok(out)
}

/// Exactly `n` expressions (commas optional).
fn exprs(cur: &mut Cursor<'_>, n: usize, what: &str) -> Result<Vec<Expr>, AsmError> {
    let list = expr_list(cur)?;
    if list.len() != n {
        return Err(err(cur.line, cur.end_col, AsmErrorKind::OperandCount { directive: what.to_owned(), count: n }));
    }
    Ok(list)
}

fn string_operand(cur: &mut Cursor<'_>, what: &str) -> Result<Vec<u8>, AsmError> {
    match cur.next() {
        Some(Token { tok: Tok::Str(bytes), .. }) => Ok(bytes.clone()),
        _ => Err(err(cur.line, cur.col(), AsmErrorKind::ExpectedString { directive: what.to_owned() })),
    }
}

fn directive(word: &str, cur: &mut Cursor<'_>, col: usize) -> Result<Stmt, AsmError> {
    let line = cur.line;
    let stmt = match word {
        ".gpu" => {
            let Some(Token { tok: Tok::Ident(name), col }) = cur.next() else {
                return Err(cur.error(AsmErrorKind::GpuExpected));
            };
            let family = name.parse::<GpuFamily>().map_err(|e| err(line, *col, AsmErrorKind::UnknownGpu(e)))?;
            Stmt::Gpu(family)
        }
        ".equ" | ".set" => {
            let Some(Token { tok: Tok::Ident(name), .. }) = cur.next() else {
                return Err(cur.error(AsmErrorKind::NameAndValue { directive: word.to_owned() }));
            };
            cur.eat_punct(",");
            cur.eat_punct("=");
            Stmt::Equ { name: name.clone(), expr: cur.expr()? }
        }
        ".mem" => {
            let mut list = expr_list(cur)?;
            if list.len() > 1 {
                return Err(err(line, col, AsmErrorKind::MemOperands));
            }
            Stmt::Mem(list.pop())
        }
        ".write" => Stmt::Write(take_one(exprs(cur, 1, ".write")?, line, col)?),
        ".ancillary" => {
            let bytes = string_operand(cur, ".ancillary")?;
            let tag: [u8; 4] = bytes.as_slice().try_into().map_err(|_| err(line, col, AsmErrorKind::AncillaryTag))?;
            Stmt::Ancillary(tag)
        }
        ".end" => Stmt::End,
        ".zero" => {
            let mut list = exprs(cur, 2, ".zero")?.into_iter();
            match (list.next(), list.next()) {
                (Some(address), Some(len)) => Stmt::Zero { address, len },
                _ => return Err(err(line, col, AsmErrorKind::ZeroOperands)),
            }
        }
        ".submit" => submit(cur, col)?,
        ".shader" => {
            let mut relocated = false;
            let mut list = Vec::new();
            while !cur.at_end() {
                if cur.eat_punct(",") {
                    continue;
                }
                if matches!(cur.peek(), Some(Token { tok: Tok::Ident(w), .. }) if w.eq_ignore_ascii_case("relocated")) {
                    cur.pos += 1;
                    relocated = true;
                    continue;
                }
                list.push(cur.expr()?);
            }
            let mut list = list.into_iter();
            match (list.next(), list.next(), list.next()) {
                (Some(header), Some(code), None) => Stmt::Shader { header, code, relocated },
                _ => return Err(err(line, col, AsmErrorKind::ShaderOperands)),
            }
        }
        ".dw" | ".dword" | ".long" => Stmt::Data(Data::Dw(expr_list(cur)?)),
        ".dq" | ".qword" | ".quad" => Stmt::Data(Data::Dq(expr_list(cur)?)),
        ".db" | ".byte" => {
            let mut list = Vec::new();
            while !cur.at_end() {
                if cur.eat_punct(",") {
                    continue;
                }
                if let Some(Token { tok: Tok::Str(bytes), .. }) = cur.peek() {
                    cur.pos += 1;
                    list.push(ByteItem::Bytes(bytes.clone()));
                } else {
                    list.push(ByteItem::Value(cur.expr()?));
                }
            }
            Stmt::Data(Data::Db(list))
        }
        ".ascii" | ".asciz" => {
            let mut bytes = string_operand(cur, word)?;
            if word == ".asciz" {
                bytes.push(0);
            }
            Stmt::Data(Data::Db(vec![ByteItem::Bytes(bytes)]))
        }
        ".fill" => {
            let mut list = expr_list(cur)?.into_iter();
            match (list.next(), list.next(), list.next()) {
                (Some(count), value, None) => Stmt::Data(Data::Fill { count, value }),
                _ => return Err(err(line, col, AsmErrorKind::FillOperands)),
            }
        }
        ".align" => Stmt::Data(Data::Align(take_one(exprs(cur, 1, ".align")?, line, col)?)),
        ".space" | ".skip" => Stmt::Data(Data::Space(take_one(exprs(cur, 1, word)?, line, col)?)),
        other => return Err(err(line, col, AsmErrorKind::UnknownDirective(other.to_owned()))),
    };
    expect_end(cur)?;
    Ok(stmt)
}

fn take_one(list: Vec<Expr>, line: usize, col: usize) -> Result<Expr, AsmError> {
    list.into_iter().next().ok_or_else(|| err(line, col, AsmErrorKind::MissingOperand))
}

fn submit(cur: &mut Cursor<'_>, col: usize) -> Result<Stmt, AsmError> {
    let line = cur.line;
    let queue = match cur.peek() {
        Some(Token { tok: Tok::Ident(name), .. }) if queue_index(name).is_some() => {
            cur.pos += 1;
            QueueSpec::Index(queue_index(name).unwrap_or(0))
        }
        // `compP.Q` out of range: no label has a dot in its name.
        Some(Token { tok: Tok::Ident(name), col: at, .. })
            if name.contains('.') && name.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("comp")) =>
        {
            let e = crate::backend::ParseQueueError(name.clone());
            return Err(err(line, *at, AsmErrorKind::BadQueue(e)));
        }
        Some(_) => QueueSpec::Expr(cur.expr()?),
        None => return Err(err(line, col, AsmErrorKind::SubmitOperands)),
    };
    let mut list = expr_list(cur)?.into_iter();
    match (list.next(), list.next(), list.next()) {
        (Some(address), size, None) => Ok(Stmt::Submit { queue, address, size }),
        _ => Err(err(line, col, AsmErrorKind::SubmitOperands)),
    }
}

/// `gfx` = 0; `comp`/`compute` = 1; `compP.Q` = 1 + P * 8 + Q.
pub(crate) fn queue_index(name: &str) -> Option<u32> {
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    name.parse::<crate::backend::QueueId>().ok().map(|q| q.0)
}

/// The operands of a packet or macro: positional values, `key=value`
/// (lists for `data=`) and bare flag words.
fn items(cur: &mut Cursor<'_>) -> Result<Items, AsmError> {
    let mut out = Items::default();
    while let Some(token) = cur.peek() {
        if cur.eat_punct(",") {
            continue;
        }
        if cur.at_key() {
            let Tok::Ident(name) = &token.tok else { break };
            let key = name.to_ascii_lowercase();
            let col = token.col;
            cur.pos += 2;
            let mut values = vec![cur.expr()?];
            if LIST_KEYS.contains(&key.as_str()) {
                while cur.is_punct(",") && !next_starts_item(cur) {
                    cur.pos += 1;
                    values.push(cur.expr()?);
                }
            }
            out.keyed.push(Keyed { key, values, col });
            continue;
        }
        if let Tok::Ident(name) = &token.tok {
            let lower = name.to_ascii_lowercase();
            if FLAG_WORDS.contains(&lower.as_str()) {
                out.keyed.push(Keyed { key: lower, values: Vec::new(), col: token.col });
                cur.pos += 1;
                continue;
            }
        }
        out.positional.push(cur.expr()?);
    }
    Ok(out)
}

/// After a `,`: true when a new `key=` item or a flag word follows.
fn next_starts_item(cur: &Cursor<'_>) -> bool {
    match (cur.peek_at(1), cur.peek_at(2)) {
        (None, _) => true,
        (Some(Token { tok: Tok::Ident(name), .. }), next) => {
            matches!(next, Some(Token { tok: Tok::Punct("="), .. }))
                || (FLAG_WORDS.contains(&name.to_ascii_lowercase().as_str())
                    && !matches!(next, Some(Token { tok: Tok::Punct(p), .. }) if *p != ","))
        }
        _ => false,
    }
}

/// `.info key=value` (verbatim) or `.info "key" "value"` (quoted, optional
/// `=` or `,` between).
fn info(rest: &[char], offset: usize, line: usize) -> Result<Stmt, AsmError> {
    let start = rest.iter().position(|c| !c.is_whitespace()).unwrap_or(rest.len());
    let col = offset + start + 1;
    if rest.get(start) == Some(&'"') {
        let (key, mut i) = lex::string(rest, start, line).map_err(|e| shift(e, offset))?;
        while rest.get(i).is_some_and(|c| c.is_whitespace() || *c == '=' || *c == ',') {
            i += 1;
        }
        if rest.get(i) != Some(&'"') {
            return Err(err(line, offset + i + 1, AsmErrorKind::InfoQuotedValue));
        }
        let (value, j) = lex::string(rest, i, line).map_err(|e| shift(e, offset))?;
        trailing_comment_only(rest, j, offset, line)?;
        let key = utf8(key, line, col)?;
        let value = utf8(value, line, col)?;
        return Ok(Stmt::Info { key, value });
    }
    let text: String = rest.get(start..).unwrap_or(&[]).iter().collect();
    let Some((key, value)) = text.split_once('=') else {
        return Err(err(line, col, AsmErrorKind::InfoForm));
    };
    let key = key.trim_end();
    if key.is_empty() {
        return Err(err(line, col, AsmErrorKind::InfoKey));
    }
    Ok(Stmt::Info { key: key.to_owned(), value: value.to_owned() })
}

/// `.note text` (verbatim) or `.note "quoted"`.
fn note(rest: &[char], offset: usize, line: usize) -> Result<Stmt, AsmError> {
    let start = rest.iter().position(|c| !c.is_whitespace()).unwrap_or(rest.len());
    if rest.get(start) == Some(&'"') {
        let (bytes, j) = lex::string(rest, start, line).map_err(|e| shift(e, offset))?;
        trailing_comment_only(rest, j, offset, line)?;
        return Ok(Stmt::Note(utf8(bytes, line, offset + start + 1)?));
    }
    Ok(Stmt::Note(rest.get(start..).unwrap_or(&[]).iter().collect()))
}

fn trailing_comment_only(rest: &[char], from: usize, offset: usize, line: usize) -> Result<(), AsmError> {
    let tail = rest.get(from..).unwrap_or(&[]);
    let cut = lex::comment_start(tail);
    match tail.get(..cut).unwrap_or(&[]).iter().position(|c| !c.is_whitespace()) {
        Some(p) => Err(err(line, offset + from + p + 1, AsmErrorKind::TextAfterString)),
        None => Ok(()),
    }
}

fn shift(mut e: AsmError, offset: usize) -> AsmError {
    e.column += offset;
    e
}

fn utf8(bytes: Vec<u8>, line: usize, col: usize) -> Result<String, AsmError> {
    String::from_utf8(bytes).map_err(|_| err(line, col, AsmErrorKind::NotUtf8))
}
