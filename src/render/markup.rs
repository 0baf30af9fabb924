//! Escaping text for SVG and HTML pages (flame graphs, heat maps), as
//! quick-xml escapes text and attribute values: inferno writes its flame
//! graphs with quick-xml, and `flame_svg` must match them byte for byte.

/// `text` with `<`, `>`, `&`, `'` and `"` escaped.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&apos;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_the_five_markup_characters() {
        assert_eq!(
            super::escape(r#"a<b>&'c'"d""#),
            "a&lt;b&gt;&amp;&apos;c&apos;&quot;d&quot;"
        );
        assert_eq!(super::escape("plain ünïcode"), "plain ünïcode");
    }
}
