//! Just enough of a C preprocessor and parser to fingerprint kernel headers: comments, line
//! continuations and conditionals (against a fixed set of x86_64 configuration symbols),
//! `#define`s (object-like and function-like), enums, typedefs and top-level function
//! declarations. Formatting and
//! comments never change a fingerprint.

use std::collections::BTreeMap;

/// Configuration symbols taken as set when evaluating `#if`s: an x86_64 kernel with DMA. Anything
/// else is unset. The fingerprint is of this configuration, the same on both sides of a comparison.
const CONFIG_SET: &[&str] = &[
    "CONFIG_64BIT",
    "CONFIG_X86",
    "CONFIG_X86_64",
    "CONFIG_HAS_DMA",
    "CONFIG_ARCH_DMA_ADDR_T_64BIT",
    "CONFIG_PHYS_ADDR_T_64BIT",
    "CONFIG_MMU",
    "CONFIG_NEED_DMA_MAP_STATE",
    "CONFIG_DMA_NEED_SYNC",
];

/// A preprocessed header.
#[derive(Debug, Default)]
pub struct Header {
    /// Object-like macros: name → replacement text (whitespace-normalised).
    pub defines: BTreeMap<String, String>,
    /// Function-like macros: name → parameter list and replacement text (whitespace-normalised).
    pub macros: BTreeMap<String, String>,
    /// The code that survives preprocessing, without directives or comments.
    pub code: String,
}

/// Removes comments and joins continued lines, keeping string literals intact.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |e| i + 2 + e + 2);
                out.push(' ');
                i = end;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' | b'\'' => {
                let quote = bytes[i];
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(bytes.len());
                out.push_str(&text[start..i]);
            }
            b'\\' if bytes.get(i + 1) == Some(&b'\n') => i += 2,
            _ => {
                let ch = text[i..].chars().next().expect("in bounds");
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    out
}

/// Collapses runs of whitespace to one space and trims.
pub fn normalize_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Evaluates a `#if` condition: `defined(X)`, `defined X`, `IS_ENABLED(X)`, `!`, `&&`, `||`, `0`,
/// `1`. Anything it cannot read counts as false.
fn eval_condition(cond: &str) -> bool {
    let cond = cond.replace("defined", " defined ");
    let tokens: Vec<String> = tokenize(&cond);
    let mut pos = 0;
    or_expr(&tokens, &mut pos)
}

fn or_expr(t: &[String], p: &mut usize) -> bool {
    let mut v = and_expr(t, p);
    while t.get(*p).map(String::as_str) == Some("||") {
        *p += 1;
        v |= and_expr(t, p);
    }
    v
}

fn and_expr(t: &[String], p: &mut usize) -> bool {
    let mut v = unary(t, p);
    while t.get(*p).map(String::as_str) == Some("&&") {
        *p += 1;
        v &= unary(t, p);
    }
    v
}

fn unary(t: &[String], p: &mut usize) -> bool {
    let Some(tok) = t.get(*p).cloned() else {
        return false;
    };
    *p += 1;
    match tok.as_str() {
        "!" => !unary(t, p),
        "(" => {
            let v = or_expr(t, p);
            if t.get(*p).map(String::as_str) == Some(")") {
                *p += 1;
            }
            v
        }
        "defined" | "IS_ENABLED" | "IS_BUILTIN" => {
            let paren = t.get(*p).map(String::as_str) == Some("(");
            if paren {
                *p += 1;
            }
            let name = t.get(*p).cloned().unwrap_or_default();
            *p += 1;
            if paren && t.get(*p).map(String::as_str) == Some(")") {
                *p += 1;
            }
            CONFIG_SET.contains(&name.as_str())
        }
        "1" => true,
        name => CONFIG_SET.contains(&name),
    }
}

/// Splits C text into identifiers, numbers and punctuation (two-character operators kept together).
pub fn tokenize(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            if ["<<", ">>", "&&", "||", "==", "!=", "<=", ">=", "->"].contains(&two.as_str()) {
                out.push(two);
                i += 2;
            } else {
                out.push(c.to_string());
                i += 1;
            }
        }
    }
    out
}

/// Preprocesses `text`: comments out, conditionals resolved, `#define`s collected, other directives
/// dropped.
pub fn preprocess(text: &str) -> Header {
    let text = strip_comments(text);
    let mut header = Header::default();
    // Each level: (this branch active, some branch of this #if already taken, parent active).
    let mut stack: Vec<(bool, bool, bool)> = Vec::new();
    let active = |stack: &Vec<(bool, bool, bool)>| stack.last().is_none_or(|s| s.0);
    for line in text.lines() {
        let trimmed = line.trim_start();
        let Some(directive) = trimmed.strip_prefix('#') else {
            if active(&stack) {
                header.code.push_str(line);
                header.code.push('\n');
            }
            continue;
        };
        let directive = directive.trim_start();
        let (word, rest) = directive
            .split_once(char::is_whitespace)
            .unwrap_or((directive, ""));
        let parent = active(&stack);
        match word {
            "if" => {
                let v = parent && eval_condition(rest);
                stack.push((v, v, parent));
            }
            "ifdef" => {
                let v = parent && CONFIG_SET.contains(&rest.trim());
                stack.push((v, v, parent));
            }
            "ifndef" => {
                let name = rest.trim();
                let v = parent
                    && !CONFIG_SET.contains(&name)
                    && !header.defines.contains_key(name)
                    && !header.macros.contains_key(name);
                stack.push((v, v, parent));
            }
            "elif" => {
                if let Some(top) = stack.last_mut() {
                    let v = top.2 && !top.1 && eval_condition(rest);
                    top.0 = v;
                    top.1 |= v;
                }
            }
            "else" => {
                if let Some(top) = stack.last_mut() {
                    top.0 = top.2 && !top.1;
                    top.1 = true;
                }
            }
            "endif" => {
                stack.pop();
            }
            "define" if parent => {
                let rest = rest.trim_start();
                let name_end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let name = &rest[..name_end];
                // Function-like macros are not constants.
                let text = normalize_ws(&rest[name_end..]);
                if rest[name_end..].starts_with('(') {
                    header.macros.insert(name.to_string(), text);
                } else {
                    header.defines.insert(name.to_string(), text);
                }
            }
            _ => {}
        }
    }
    header
}

/// A top-level statement of preprocessed code: the text before its body or `;`, and whether it had
/// a body.
fn statements(code: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    let mut body = String::new();
    for c in code.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth > 1 {
                    body.push(c);
                }
            }
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    out.push((normalize_ws(&current), Some(normalize_ws(&body))));
                    current.clear();
                    body.clear();
                } else {
                    body.push(c);
                }
            }
            ';' if depth == 0 => {
                let s = normalize_ws(&current);
                // `struct x { ... } name;` and `};` end the previous statement.
                if !s.is_empty() {
                    out.push((s, None));
                }
                current.clear();
            }
            _ if depth > 0 => body.push(c),
            _ => current.push(c),
        }
    }
    out
}

/// Keywords and annotations that do not change a declaration's type.
const NOISE: &[&str] = &[
    "extern",
    "static",
    "inline",
    "__always_inline",
    "__inline",
    "__must_check",
    "__malloc",
    "__cold",
    "notrace",
    "__init",
    "__exit",
    "__bitwise",
    "__force",
];

/// Words that name a type, so that a parameter ending in one of them has no name to drop.
const TYPE_WORDS: &[&str] = &[
    "void", "char", "short", "int", "long", "unsigned", "signed", "float", "double", "bool",
];

/// Removes `__attribute__((...))` groups from a token list.
fn drop_attributes(tokens: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == "__attribute__" || tokens[i] == "__printf" || tokens[i] == "__alloc_size" {
            i += 1;
            let mut depth = 0;
            while i < tokens.len() {
                if tokens[i] == "(" {
                    depth += 1;
                } else if tokens[i] == ")" {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                i += 1;
            }
        } else {
            out.push(tokens[i].clone());
            i += 1;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// One parameter's type, without its name: `const char *name` → `const char *`.
fn parameter_type(tokens: &[String]) -> String {
    let tokens: Vec<&String> = tokens
        .iter()
        .filter(|t| !NOISE.contains(&t.as_str()))
        .collect();
    let mut keep = tokens.len();
    if tokens.len() > 1 {
        let last = tokens[tokens.len() - 1].as_str();
        if is_ident(last) && !TYPE_WORDS.contains(&last) {
            keep -= 1;
        }
    }
    join_tokens(tokens[..keep].iter().map(|s| s.as_str()))
}

/// Joins tokens with single spaces, but none before `*`, `,` or `)` or after `(` and `*`.
fn join_tokens<'a>(tokens: impl Iterator<Item = &'a str>) -> String {
    let mut s = String::new();
    for t in tokens {
        if !s.is_empty() && !s.ends_with('(') && !matches!(t, "," | ")" | "[" | "]") {
            s.push(' ');
        }
        s.push_str(t);
    }
    s
}

/// Every top-level function declared or defined in `header`: name → normalised prototype
/// (`ret name(type, type)`), parameter names, comments and layout left out.
pub fn functions(header: &Header) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (decl, _body) in statements(&header.code) {
        let tokens = drop_attributes(&tokenize(&decl));
        if tokens.iter().any(|t| t == "typedef" || t == "=")
            || tokens
                .first()
                .is_some_and(|t| t == "struct" && tokens.len() <= 2)
        {
            continue;
        }
        let Some(open) = tokens.iter().position(|t| t == "(") else {
            continue;
        };
        if open == 0 || !is_ident(&tokens[open - 1]) || tokens[open - 1] == "sizeof" {
            continue;
        }
        // A function pointer declaration `ret (*name)(...)` or a macro call is not a function.
        let name = tokens[open - 1].clone();
        let ret: Vec<&str> = tokens[..open - 1]
            .iter()
            .map(String::as_str)
            .filter(|t| !NOISE.contains(t))
            .collect();
        if ret.is_empty() {
            continue;
        }
        let Some(close) = matching_paren(&tokens, open) else {
            continue;
        };
        let params: Vec<String> = split_top_level(&tokens[open + 1..close])
            .iter()
            .map(|p| parameter_type(p))
            .collect();
        let proto = format!(
            "{} {name}({})",
            join_tokens(ret.into_iter()),
            params.join(", ")
        );
        out.insert(name, proto.replace("* ", "*"));
    }
    out
}

fn matching_paren(tokens: &[String], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, t) in tokens.iter().enumerate().skip(open) {
        if t == "(" {
            depth += 1;
        } else if t == ")" {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

fn split_top_level(tokens: &[String]) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    let mut depth = 0;
    for t in tokens {
        match t.as_str() {
            "(" => depth += 1,
            ")" => depth -= 1,
            "," if depth == 0 => {
                out.push(Vec::new());
                continue;
            }
            _ => {}
        }
        out.last_mut().expect("never empty").push(t.clone());
    }
    out.retain(|p| !p.is_empty());
    out
}

/// Every enumerator of every enum in `header`, with its value; and each named enum as
/// `name → "A=0, B=1"`.
pub fn enums(
    header: &Header,
    known: &BTreeMap<String, String>,
) -> (BTreeMap<String, i128>, BTreeMap<String, String>) {
    let mut values = BTreeMap::new();
    let mut named = BTreeMap::new();
    for (decl, body) in statements(&header.code) {
        let Some(body) = body else { continue };
        let tokens = tokenize(&decl);
        // Only an enum's own definition: `enum name { ... }` or `enum { ... }`, not a function
        // taking one.
        let name = match tokens.as_slice() {
            [.., e] if e == "enum" => None,
            [.., e, n] if e == "enum" => Some(n.clone()),
            _ => continue,
        };
        let mut next: i128 = 0;
        let mut listed = Vec::new();
        for item in body.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (ident, value) = match item.split_once('=') {
                Some((i, v)) => (i.trim(), {
                    let mut scope = known.clone();
                    scope.extend(
                        values
                            .iter()
                            .map(|(k, v): (&String, &i128)| (k.clone(), v.to_string())),
                    );
                    evaluate(v, &scope).unwrap_or(next)
                }),
                None => (item, next),
            };
            values.insert(ident.to_string(), value);
            listed.push(format!("{ident}={value}"));
            next = value + 1;
        }
        if let Some(name) = name {
            named.insert(name, listed.join(", "));
        }
    }
    (values, named)
}

/// Every `typedef` in `header`: name → the normalised type.
pub fn typedefs(header: &Header) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (decl, body) in statements(&header.code) {
        if body.is_some() {
            continue;
        }
        let tokens: Vec<String> = tokenize(&decl)
            .into_iter()
            .filter(|t| !NOISE.contains(&t.as_str()))
            .collect();
        if tokens.first().map(String::as_str) != Some("typedef") || tokens.iter().any(|t| t == "(")
        {
            continue;
        }
        if let Some(name) = tokens.last() {
            out.insert(
                name.clone(),
                join_tokens(tokens[1..tokens.len() - 1].iter().map(String::as_str)),
            );
        }
    }
    out
}

/// Width in bits of a C integer type as the kernel spells it on x86_64, if known.
pub fn width_of(ty: &str) -> Option<u32> {
    Some(match ty {
        "u8" | "__u8" | "unsigned char" | "char" => 8,
        "u16" | "__u16" | "unsigned short" | "short" => 16,
        "u32" | "__u32" | "unsigned int" | "int" | "unsigned" => 32,
        "u64" | "__u64" | "unsigned long" | "long" | "unsigned long long" | "long long" => 64,
        _ => return None,
    })
}

/// Evaluates a constant expression, looking names up in `scope` (macro text or enumerator values).
/// Knows the kernel's `BIT()`, `BIT_ULL()`, `_BITUL()`, `_AC()` and casts such as
/// `(__force gfp_t)`.
pub fn evaluate(expr: &str, scope: &BTreeMap<String, String>) -> Option<i128> {
    let tokens = tokenize(expr);
    let mut p = Parser {
        t: &tokens,
        p: 0,
        scope,
        depth: 0,
    };
    let v = p.bit_or()?;
    (p.p == tokens.len()).then_some(v)
}

struct Parser<'a> {
    t: &'a [String],
    p: usize,
    scope: &'a BTreeMap<String, String>,
    depth: u32,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.t.get(self.p).map(String::as_str)
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.peek() == Some(s) {
            self.p += 1;
            true
        } else {
            false
        }
    }

    fn binary(&mut self, ops: &[&str], next: fn(&mut Self) -> Option<i128>) -> Option<i128> {
        let mut v = next(self)?;
        while let Some(op) = self.peek().filter(|o| ops.contains(o)).map(str::to_string) {
            self.p += 1;
            let r = next(self)?;
            v = match op.as_str() {
                "|" => v | r,
                "^" => v ^ r,
                "&" => v & r,
                "<<" => v.checked_shl(u32::try_from(r).ok()?)?,
                ">>" => v.checked_shr(u32::try_from(r).ok()?)?,
                "+" => v.checked_add(r)?,
                "-" => v.checked_sub(r)?,
                "*" => v.checked_mul(r)?,
                "/" => v.checked_div(r)?,
                _ => return None,
            };
        }
        Some(v)
    }

    fn bit_or(&mut self) -> Option<i128> {
        self.binary(&["|"], Self::bit_xor)
    }
    fn bit_xor(&mut self) -> Option<i128> {
        self.binary(&["^"], Self::bit_and)
    }
    fn bit_and(&mut self) -> Option<i128> {
        self.binary(&["&"], Self::shift)
    }
    fn shift(&mut self) -> Option<i128> {
        self.binary(&["<<", ">>"], Self::additive)
    }
    fn additive(&mut self) -> Option<i128> {
        self.binary(&["+", "-"], Self::multiplicative)
    }
    fn multiplicative(&mut self) -> Option<i128> {
        self.binary(&["*", "/"], Self::unary)
    }

    fn unary(&mut self) -> Option<i128> {
        if self.eat("~") {
            return Some(!self.unary()?);
        }
        if self.eat("-") {
            return Some(-self.unary()?);
        }
        if self.eat("!") {
            return Some(i128::from(self.unary()? == 0));
        }
        self.primary()
    }

    fn primary(&mut self) -> Option<i128> {
        let tok = self.peek()?.to_string();
        self.p += 1;
        if tok == "(" {
            // A cast: `(type)` or `(__force type)` followed by an operand.
            let start = self.p;
            let mut words = 0;
            while let Some(t) = self.peek() {
                if t == ")" {
                    break;
                }
                if !(is_ident(t) || t == "*") || self.scope.contains_key(t) {
                    words = 0;
                    break;
                }
                words += 1;
                self.p += 1;
            }
            if words > 0 && self.eat(")") && self.peek().is_some_and(|t| t != ")" && !is_binary(t))
            {
                return self.unary();
            }
            self.p = start;
            let v = self.bit_or()?;
            return self.eat(")").then_some(v);
        }
        if let Some(v) = parse_number(&tok) {
            return Some(v);
        }
        if matches!(tok.as_str(), "BIT" | "BIT_ULL" | "_BITUL" | "_BITULL") {
            if !self.eat("(") {
                return None;
            }
            let n = self.bit_or()?;
            self.eat(")").then_some(())?;
            return 1i128.checked_shl(u32::try_from(n).ok()?);
        }
        if matches!(tok.as_str(), "_AC" | "UL" | "ULL" | "_UL" | "_ULL") {
            if !self.eat("(") {
                return None;
            }
            let v = self.bit_or()?;
            if self.eat(",") {
                self.p += 1;
            }
            return self.eat(")").then_some(v);
        }
        let text = self.scope.get(&tok)?;
        if self.depth > 32 {
            return None;
        }
        let tokens = tokenize(text);
        let mut inner = Parser {
            t: &tokens,
            p: 0,
            scope: self.scope,
            depth: self.depth + 1,
        };
        let v = inner.bit_or()?;
        (inner.p == tokens.len()).then_some(v)
    }
}

fn is_binary(t: &str) -> bool {
    matches!(t, "|" | "^" | "&" | "<<" | ">>" | "+" | "*" | "/" | ",")
}

fn parse_number(tok: &str) -> Option<i128> {
    let t = tok.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i128::from_str_radix(hex, 16).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        i128::from_str_radix(&t[1..], 8).ok()
    } else if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() {
        t.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditionals_follow_the_fixed_configuration() {
        let h = preprocess(
            "#ifdef CONFIG_ARCH_DMA_ADDR_T_64BIT\ntypedef u64 dma_addr_t;\n#else\ntypedef u32 dma_addr_t;\n#endif\n\
             #if defined(CONFIG_FOO) || IS_ENABLED(CONFIG_HAS_DMA)\nint a(void);\n#else\nint b(void);\n#endif\n",
        );
        assert_eq!(typedefs(&h)["dma_addr_t"], "u64");
        let f = functions(&h);
        assert!(f.contains_key("a") && !f.contains_key("b"), "{f:?}");
    }

    #[test]
    fn function_like_macros_are_kept_apart_and_the_first_definition_wins() {
        let h = preprocess(
            "#define sg_dma_len(sg)\t((sg)->dma_length)\n#ifndef dma_rmb\n#define dma_rmb() rmb()\n#endif\n\
             #ifndef dma_rmb\n#define dma_rmb() other()\n#endif\n#define DMA_X 1\n",
        );
        assert_eq!(h.macros["sg_dma_len"], "(sg) ((sg)->dma_length)");
        assert_eq!(h.macros["dma_rmb"], "() rmb()");
        assert!(!h.defines.contains_key("dma_rmb") && h.defines["DMA_X"] == "1");
    }

    #[test]
    fn prototypes_ignore_names_comments_and_layout() {
        let a = preprocess("void *dma_alloc_attrs(struct device *dev, size_t size,\n dma_addr_t *dma_handle, gfp_t flag, unsigned long attrs);");
        let b = preprocess("void * dma_alloc_attrs ( struct device * d, /* bytes */ size_t n, dma_addr_t *h,\n\n gfp_t gfp, unsigned long a ) ;");
        assert_eq!(functions(&a), functions(&b));
        assert_eq!(
            functions(&a)["dma_alloc_attrs"],
            "void *dma_alloc_attrs(struct device *, size_t, dma_addr_t *, gfp_t, unsigned long)"
        );
    }

    #[test]
    fn static_inline_definitions_are_prototypes() {
        let h = preprocess("static inline int dma_mapping_error(struct device *dev, dma_addr_t dma_addr)\n{\n\treturn 0;\n}\n");
        assert_eq!(
            functions(&h)["dma_mapping_error"],
            "int dma_mapping_error(struct device *, dma_addr_t)"
        );
    }

    #[test]
    fn constants_evaluate_through_macros_enums_and_casts() {
        let h = preprocess(
            "enum { ___A_BIT, ___B_BIT, ___C_BIT = 5 };\n#define ___A BIT(___A_BIT)\n#define ___C BIT(___C_BIT)\n\
             #define __A ((__force gfp_t)___A)\n#define __C ((__force gfp_t)___C)\n#define K (__A | __C)\n\
             #define DMA_ATTR_X (1UL << 13)\n",
        );
        let (values, _) = enums(&h, &h.defines);
        let mut scope = h.defines.clone();
        scope.extend(values.iter().map(|(k, v)| (k.clone(), v.to_string())));
        assert_eq!(evaluate(&h.defines["K"], &scope), Some(0x21));
        assert_eq!(evaluate(&h.defines["DMA_ATTR_X"], &scope), Some(0x2000));
    }
}
