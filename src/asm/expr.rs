//! Expressions: parsing from tokens and evaluation against the symbols.

use std::collections::HashMap;

use super::lex::{Tok, Token};
use super::{AsmError, AsmErrorKind};
use crate::regs::db::{self, GpuFamily};

/// Deepest nesting of parentheses and unary operators in one expression.
const MAX_NESTING: u32 = 64;

/// Most operators in one expression (bounds the depth of its tree).
const MAX_OPERATORS: usize = 256;

/// Deepest evaluation: tree levels plus constant references.
const MAX_EVAL_DEPTH: u32 = 512;

/// An expression node and the column it starts at.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Expr {
    pub kind: ExprKind,
    pub col: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ExprKind {
    Num(u64),
    Float(f32),
    Sym(String),
    /// `$`: the address of the current statement.
    Here,
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Or,
    Xor,
    And,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl Expr {
    /// The name, when the expression is a bare name.
    pub fn ident(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::Sym(name) => Some(name),
            _ => None,
        }
    }
}

/// A cursor over one line's tokens.
pub(crate) struct Cursor<'t> {
    pub tokens: &'t [Token],
    pub pos: usize,
    pub line: usize,
    /// Column just past the line, for errors at its end.
    pub end_col: usize,
    operators: usize,
}

impl<'t> Cursor<'t> {
    pub fn new(tokens: &'t [Token], line: usize, end_col: usize) -> Self {
        Cursor { tokens, pos: 0, line, end_col, operators: 0 }
    }

    pub fn peek(&self) -> Option<&'t Token> {
        self.tokens.get(self.pos)
    }

    pub fn peek_at(&self, ahead: usize) -> Option<&'t Token> {
        self.tokens.get(self.pos + ahead)
    }

    pub fn next(&mut self) -> Option<&'t Token> {
        let t = self.tokens.get(self.pos);
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.tokens.len()
    }

    pub fn col(&self) -> usize {
        self.peek().map_or(self.end_col, |t| t.col)
    }

    pub fn error(&self, kind: AsmErrorKind) -> AsmError {
        AsmError::new(self.line, self.col(), kind)
    }

    pub fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Punct(q), .. }) if *q == p)
    }

    pub fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// True when the next tokens are `name =`.
    pub fn at_key(&self) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Ident(_), .. }))
            && matches!(self.peek_at(1), Some(Token { tok: Tok::Punct("="), .. }))
    }

    /// Parses one expression.
    pub fn expr(&mut self) -> Result<Expr, AsmError> {
        self.operators = 0;
        self.binary(0, 0)
    }

    fn count_operator(&mut self) -> Result<(), AsmError> {
        self.operators += 1;
        if self.operators > MAX_OPERATORS {
            return Err(self.error(AsmErrorKind::TooManyOperators { max: MAX_OPERATORS }));
        }
        Ok(())
    }

    fn binary(&mut self, level: usize, depth: u32) -> Result<Expr, AsmError> {
        const LEVELS: [&[(&str, BinOp)]; 6] = [
            &[("|", BinOp::Or)],
            &[("^", BinOp::Xor)],
            &[("&", BinOp::And)],
            &[("<<", BinOp::Shl), (">>", BinOp::Shr)],
            &[("+", BinOp::Add), ("-", BinOp::Sub)],
            &[("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Rem)],
        ];
        let Some(ops) = LEVELS.get(level) else {
            return self.unary(depth);
        };
        let mut left = self.binary(level + 1, depth)?;
        while let Some(Token { tok: Tok::Punct(p), col }) = self.peek() {
            let Some(&(_, op)) = ops.iter().find(|(s, _)| s == p) else { break };
            let col = *col;
            self.count_operator()?;
            self.pos += 1;
            let right = self.binary(level + 1, depth)?;
            left = Expr { kind: ExprKind::Bin(op, Box::new(left), Box::new(right)), col };
        }
        Ok(left)
    }

    fn unary(&mut self, depth: u32) -> Result<Expr, AsmError> {
        if depth > MAX_NESTING {
            return Err(self.error(AsmErrorKind::NestedTooDeeply));
        }
        let col = self.col();
        if self.is_punct("-") || self.is_punct("~") || self.is_punct("+") {
            self.count_operator()?;
        }
        if self.eat_punct("-") {
            let inner = self.unary(depth + 1)?;
            if let ExprKind::Float(v) = inner.kind {
                return Ok(Expr { kind: ExprKind::Float(-v), col });
            }
            return Ok(Expr { kind: ExprKind::Neg(Box::new(inner)), col });
        }
        if self.eat_punct("~") {
            let inner = self.unary(depth + 1)?;
            return Ok(Expr { kind: ExprKind::Not(Box::new(inner)), col });
        }
        if self.eat_punct("+") {
            return self.unary(depth + 1);
        }
        self.primary(depth)
    }

    fn primary(&mut self, depth: u32) -> Result<Expr, AsmError> {
        let Some(token) = self.peek() else {
            return Err(self.error(AsmErrorKind::ExpectedValue));
        };
        let col = token.col;
        let kind = match &token.tok {
            Tok::Num(v) => {
                self.pos += 1;
                ExprKind::Num(*v)
            }
            Tok::Float(v) => {
                self.pos += 1;
                ExprKind::Float(*v)
            }
            Tok::Punct("$") => {
                self.pos += 1;
                ExprKind::Here
            }
            Tok::Punct("(") => {
                self.pos += 1;
                let inner = self.binary(0, depth + 1)?;
                if !self.eat_punct(")") {
                    return Err(self.error(AsmErrorKind::ExpectedCloseParen));
                }
                return Ok(inner);
            }
            Tok::Ident(name) => {
                self.pos += 1;
                if self.eat_punct("(") {
                    let mut args = Vec::new();
                    if !self.eat_punct(")") {
                        loop {
                            args.push(self.binary(0, depth + 1)?);
                            if self.eat_punct(")") {
                                break;
                            }
                            if !self.eat_punct(",") {
                                return Err(self.error(AsmErrorKind::ExpectedCommaOrCloseParen));
                            }
                        }
                    }
                    ExprKind::Call(name.to_ascii_lowercase(), args)
                } else {
                    ExprKind::Sym(name.clone())
                }
            }
            Tok::Str(_) => return Err(self.error(AsmErrorKind::StringNotValue)),
            Tok::Punct(p) => return Err(self.error(AsmErrorKind::ExpectedValueFound(p))),
        };
        Ok(Expr { kind, col })
    }
}

/// A label: its address and (after the first pass) its size in bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Label {
    pub address: u64,
    pub size: Option<u64>,
}

/// Every name the source defines.
#[derive(Debug, Default)]
pub(crate) struct Symbols {
    pub labels: HashMap<String, Label>,
    pub consts: HashMap<String, (Expr, usize)>,
}

impl Symbols {
    pub fn defines(&self, name: &str) -> bool {
        self.labels.contains_key(name) || self.consts.contains_key(name)
    }
}

/// Evaluates expressions. A lenient evaluator (the first pass, which only
/// needs sizes) reads unknown names, `$` and sizes as 0.
pub(crate) struct Eval<'s> {
    pub symbols: &'s Symbols,
    pub family: GpuFamily,
    pub here: Option<u64>,
    pub lenient: bool,
    pub line: usize,
}

impl Eval<'_> {
    fn err(&self, col: usize, kind: AsmErrorKind) -> AsmError {
        AsmError::new(self.line, col, kind)
    }

    /// The register a bare name names, unless the source defines the name.
    pub fn register(&self, e: &Expr) -> Option<&'static db::RegisterInfo> {
        let name = e.ident()?;
        if self.symbols.defines(name) {
            return None;
        }
        super::names::register(self.family, name)
    }

    pub fn eval(&self, e: &Expr) -> Result<u64, AsmError> {
        self.eval_at(e, 0)
    }

    /// A value that must fit in 32 bits (high half all zeros, or all ones
    /// for a negative number).
    pub fn dword(&self, e: &Expr) -> Result<u32, AsmError> {
        let v = self.eval(e)?;
        let hi = v >> 32;
        if hi == 0 || hi == 0xFFFF_FFFF {
            Ok(v as u32)
        } else {
            Err(self.err(e.col, AsmErrorKind::DwordOverflow(v)))
        }
    }

    fn eval_at(&self, e: &Expr, depth: u32) -> Result<u64, AsmError> {
        if depth > MAX_EVAL_DEPTH {
            return Err(self.err(e.col, AsmErrorKind::RecursiveDefinition));
        }
        Ok(match &e.kind {
            ExprKind::Num(v) => *v,
            ExprKind::Float(v) => u64::from(v.to_bits()),
            ExprKind::Sym(name) => self.symbol(name, e.col, depth)?,
            ExprKind::Here => match self.here {
                Some(h) => h,
                None if self.lenient => 0,
                None => return Err(self.err(e.col, AsmErrorKind::DollarOutsideBlock)),
            },
            ExprKind::Neg(inner) => self.eval_at(inner, depth + 1)?.wrapping_neg(),
            ExprKind::Not(inner) => !self.eval_at(inner, depth + 1)?,
            ExprKind::Bin(op, a, b) => {
                let a = self.eval_at(a, depth + 1)?;
                let b = self.eval_at(b, depth + 1)?;
                match op {
                    BinOp::Or => a | b,
                    BinOp::Xor => a ^ b,
                    BinOp::And => a & b,
                    BinOp::Shl => a.checked_shl(u32::try_from(b).unwrap_or(u32::MAX)).unwrap_or(0),
                    BinOp::Shr => a.checked_shr(u32::try_from(b).unwrap_or(u32::MAX)).unwrap_or(0),
                    BinOp::Add => a.wrapping_add(b),
                    BinOp::Sub => a.wrapping_sub(b),
                    BinOp::Mul => a.wrapping_mul(b),
                    BinOp::Div | BinOp::Rem => {
                        if b == 0 {
                            if self.lenient {
                                0
                            } else {
                                return Err(self.err(e.col, AsmErrorKind::DivisionByZero));
                            }
                        } else if *op == BinOp::Div {
                            a / b
                        } else {
                            a % b
                        }
                    }
                }
            }
            ExprKind::Call(name, args) => self.call(name, args, e.col, depth)?,
        })
    }

    fn symbol(&self, name: &str, col: usize, depth: u32) -> Result<u64, AsmError> {
        if let Some(label) = self.symbols.labels.get(name) {
            return Ok(label.address);
        }
        if let Some((expr, _)) = self.symbols.consts.get(name) {
            let inner = Eval { here: None, ..*self };
            return inner.eval_at(expr, depth + 1);
        }
        if let Some(reg) = super::names::register(self.family, name) {
            return Ok(u64::from(reg.offset));
        }
        if self.lenient {
            return Ok(0);
        }
        match super::names::nearest_register(self.family, name) {
            Some(register) => {
                Err(self.err(col, AsmErrorKind::UndefinedNameNearRegister { name: name.to_owned(), register }))
            }
            None => Err(self.err(col, AsmErrorKind::UndefinedName(name.to_owned()))),
        }
    }

    fn size_of(&self, arg: &Expr) -> Result<u64, AsmError> {
        let size = arg.ident().and_then(|name| self.symbols.labels.get(name)).and_then(|l| l.size);
        match size {
            Some(s) => Ok(s),
            None if self.lenient => Ok(0),
            None => Err(self.err(arg.col, AsmErrorKind::NoSize)),
        }
    }

    fn call(&self, name: &str, args: &[Expr], col: usize, depth: u32) -> Result<u64, AsmError> {
        let arity = |n: usize| -> Result<(), AsmError> {
            if args.len() == n {
                Ok(())
            } else {
                Err(self.err(col, AsmErrorKind::FunctionArity { function: name.to_owned(), count: n }))
            }
        };
        let arg = |i: usize| -> Result<u64, AsmError> {
            match args.get(i) {
                Some(a) => self.eval_at(a, depth + 1),
                None => Err(self.err(col, AsmErrorKind::FunctionMissingArgument { function: name.to_owned() })),
            }
        };
        match name {
            "lo" => {
                arity(1)?;
                Ok(arg(0)? & 0xFFFF_FFFF)
            }
            "hi" => {
                arity(1)?;
                Ok(arg(0)? >> 32)
            }
            "pgm_lo" => {
                arity(1)?;
                Ok((arg(0)? >> 8) & 0xFFFF_FFFF)
            }
            "pgm_hi" => {
                arity(1)?;
                Ok((arg(0)? >> 40) & 0xFF)
            }
            "sizeof" => {
                arity(1)?;
                args.first().map_or(Ok(0), |a| self.size_of(a))
            }
            "dwords" => match args {
                [one] => Ok(self.size_of(one)? / 4),
                [a, b] => {
                    let (a, b) = (self.eval_at(a, depth + 1)?, self.eval_at(b, depth + 1)?);
                    if b < a && !self.lenient {
                        return Err(self.err(col, AsmErrorKind::DwordsEndBelowStart { start: a, end: b }));
                    }
                    Ok(b.wrapping_sub(a) / 4)
                }
                _ => Err(self.err(col, AsmErrorKind::DwordsArguments)),
            },
            other => Err(self.err(col, AsmErrorKind::UnknownFunction(other.to_owned()))),
        }
    }
}
