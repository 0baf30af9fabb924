//! Errors of the language, each tied to a place in the source, printed as
//! bpftrace prints them: `stdin:LINE:COL-COL: ERROR: what`, then the
//! source line and a `~~~` underline of the place.
//!
//! Spans are byte offsets into the source; line and column (1-based) are
//! computed only when the error is printed, so the parser carries two
//! integers per node and nothing else.

/// A byte range of the source, `start..end`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Span {
    pub(crate) fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The span covering both.
    pub(crate) fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// What went wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct LangError {
    pub(crate) span: Span,
    pub(crate) message: String,
}

impl LangError {
    pub(crate) fn new(span: Span, message: impl Into<String>) -> LangError {
        LangError {
            span,
            message: message.into(),
        }
    }

    /// The three lines bpftrace prints: place and message, the source
    /// line, the underline. `origin` is `stdin` or the file's name.
    pub(crate) fn render(&self, origin: &str, source: &str) -> String {
        self.render_as("ERROR", origin, source)
    }

    /// The same three lines as a `WARNING` (what bpftrace prints for an
    /// attach point of several the kernel lacks).
    pub(crate) fn render_warning(&self, origin: &str, source: &str) -> String {
        self.render_as("WARNING", origin, source)
    }

    fn render_as(&self, level: &str, origin: &str, source: &str) -> String {
        let start = self.span.start.min(source.len());
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[start..]
            .find('\n')
            .map_or(source.len(), |i| start + i);
        let line_no = source[..start].matches('\n').count() + 1;
        let col = source[line_start..start].chars().count() + 1;
        let end = self.span.end.clamp(start, line_end);
        let width = source[start..end].chars().count().max(1);
        let text = &source[line_start..line_end];
        let pad: String = source[line_start..start]
            .chars()
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        format!(
            "{origin}:{line_no}:{col}-{}: {level}: {}\n{text}\n{pad}{}",
            col + width,
            self.message,
            "~".repeat(width)
        )
    }

    /// 1-based line of the error's start.
    #[cfg(test)]
    pub(crate) fn line(&self, source: &str) -> usize {
        let start = self.span.start.min(source.len());
        source[..start].matches('\n').count() + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_bpftrace() {
        let src = "BEGIN { @x = 1 +; }";
        let err = LangError::new(Span::new(15, 17), "syntax error, unexpected ;");
        assert_eq!(
            err.render("stdin", src),
            "stdin:1:16-18: ERROR: syntax error, unexpected ;\nBEGIN { @x = 1 +; }\n               ~~"
        );
    }

    #[test]
    fn second_line() {
        let src = "BEGIN {\n  @y = $z; }";
        let err = LangError::new(Span::new(15, 17), "Undefined or undeclared variable: $z");
        let text = err.render("stdin", src);
        assert!(text.starts_with("stdin:2:8-10: ERROR: Undefined"), "{text}");
        assert!(text.ends_with("  @y = $z; }\n       ~~"), "{text}");
        assert_eq!(err.line(src), 2);
    }
}
